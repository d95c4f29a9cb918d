"""Everything computed once per vocabulary, shared by every grammar compiled against it.

A :class:`PreparedVocab` (``Vocabulary.prepared()``, one per ``Vocabulary``
object) holds named *parts*.  A part is a dict of read-only NumPy arrays plus a
small JSON-able ``meta`` dict, produced by a registered builder::

    @register_part("my_part", version=1, requires=("trie",), check=_check_my_part)
    def _build_my_part(prep):
        trie = prep.trie
        ...
        return {"n": 3}, {"values": array}

where ``_check_my_part(prep, meta, arrays)`` says whether a disk-cache entry
holds arrays the runtime can use safely (see :func:`register_part`).

Parts are built lazily, on the first ``prep.part(name)``, at most once per
``PreparedVocab`` (a lock makes concurrent first calls build once).  A
persisted part is looked up in the disk cache first (``cfgmask.cache``) under
a key made of

* the vocabulary's fingerprint (token bytes, EOS ids, ``vocab_size``),
* the part's name and version, and the keys of the parts it requires,
* a hash of the source of the builder's module (plus ``modules=``), so a code
  change never reuses arrays built by older code,
* the container format version;

and stored there after a build.  A cached file that fails any check (see
``cfgmask.cache``), the part's own ``check`` of dtypes, shapes and value
ranges included, is rebuilt, never trusted.  Builders must be
deterministic: a cache hit must give exactly the arrays a fresh build gives
(tests/test_cache.py checks it for every registered part).

Registered here:

=================  =======  ==================================================
part               persist  arrays
=================  =======  ==================================================
``tokens``         no       ``flat`` uint8 (all token bytes back to back),
                            ``offsets`` int64[n_tokens + 1], ``special``
                            uint8[n_tokens] (1: ``None``).  Computed with
                            the fingerprint, which needs them anyway.
``trie``           yes      the :class:`~cfgmask.engine.trie.TokTrie` arrays
``subtree_bytes``  yes      ``node_set`` int32[n_nodes]: index into
                            ``set_table`` uint64[k, 4] of the set of bytes on
                            the edges strictly below the node (byte ``b`` is
                            bit ``b & 63`` of word ``b >> 6``); row 0 is the
                            empty set (every leaf), rows sorted as integers
=================  =======  ==================================================

Why an index into a table of distinct sets rather than 4 uint64 per node:
tekken's 266,313 nodes have only 36,978 distinct sets (SmolLM2: 10,893 of
100,298), so the index form takes 2.25 MB instead of 8.5 MB, and a runtime
question that depends only on (lexer state, byte set) -- "does this state loop
on every byte of the set?" for whole-subtree accept -- can be cached per set
id, 7x fewer entries than per node.
"""

import threading
import time

import numpy as np

from cfgmask import cache
from cfgmask.engine.trie import TokTrie, check_arrays
from cfgmask.errors import ConfigurationError

__all__ = ["PreparedVocab", "Part", "register_part", "registered_parts"]

#: bump when the meaning of a key or of the part registry changes
PREPARED_FORMAT = 1


class Part:
    """One prepared part: ``meta`` (dict) and ``arrays`` (dict of read-only arrays).

    ``source`` says where it came from (``"built"`` or ``"disk"``) and
    ``seconds`` how long that took.
    """

    __slots__ = ("name", "meta", "arrays", "source", "seconds")

    def __init__(self, name, meta, arrays, source, seconds):
        self.name = name
        self.meta = dict(meta)
        self.arrays = {k: _read_only(v) for k, v in arrays.items()}
        self.source = source
        self.seconds = seconds

    def __getitem__(self, key):
        return self.arrays[key]

    def __repr__(self):
        return f"<Part {self.name} {sorted(self.arrays)} from {self.source} in {1e3 * self.seconds:.1f} ms>"


class _Builder:
    __slots__ = ("name", "version", "build", "requires", "persist", "modules", "check")

    def __init__(self, name, version, build, requires, persist, modules, check):
        self.name, self.version, self.build = name, int(version), build
        self.requires, self.persist = tuple(requires), bool(persist)
        self.modules = tuple(sorted({build.__module__, *modules}))
        self.check = check


_BUILDERS = {}


def register_part(name, version, *, requires=(), persist=True, modules=(), check=None):
    """Decorator: register ``build(prep) -> (meta, arrays)`` as part ``name``.

    ``version`` is part of the cache key (bump it when the output changes
    meaning); ``requires`` names the parts the builder reads (their keys become
    part of this one's); ``persist=False`` keeps the part in memory only (for
    parts cheaper to rebuild than to load); ``modules`` lists further modules
    whose source the output depends on.  ``check(prep, meta, arrays)`` validates
    an entry read from the disk cache (required for a persisted part): true if
    the runtime can use it safely (dtypes, shapes, value ranges), else the entry
    is rebuilt; the parts in ``requires`` are already made when it runs.
    """
    def deco(build):
        for r in requires:
            if r not in _BUILDERS:
                raise ValueError(f"part {name} requires unknown part {r}")
        if persist and check is None:
            raise ValueError(f"part {name} is persisted but has no check")
        _BUILDERS[name] = _Builder(name, version, build, requires, persist, modules, check)
        return build
    return deco


def registered_parts():
    """Names of the registered parts, in registration order."""
    return list(_BUILDERS)


class PreparedVocab:
    """The per-vocabulary parts (see the module docstring); get one with
    ``Vocabulary.prepared()``."""

    def __init__(self, vocab):
        self.vocab = vocab
        self._parts = {}
        self._keys = {}
        self._lock = threading.RLock()
        self._trie = None
        self._standard_slices = None
        self._standard_lock = threading.Lock()

    # ---- parts -----------------------------------------------------------
    def part(self, name):
        """The :class:`Part` ``name``, loaded from the disk cache or built on first use."""
        p = self._parts.get(name)
        if p is not None:
            return p
        with self._lock:
            p = self._parts.get(name)
            if p is None:
                p = self._parts[name] = self._make(name)
            return p

    def key(self, name):
        """The cache key of part ``name`` (a dict)."""
        k = self._keys.get(name)
        if k is None:
            b = _builder(name)
            k = {"format": PREPARED_FORMAT, "part": b.name, "version": b.version,
                 "code": cache.code_fingerprint(*b.modules), "vocab": self.vocab.fingerprint(),
                 "requires": {r: cache.key_digest(self.key(r)) for r in b.requires}}
            self._keys[name] = k
        return k

    def _make(self, name):
        b = _builder(name)
        for r in b.requires:
            self.part(r)
        t0 = time.perf_counter()
        if b.persist:
            got = cache.load("vocab", self.key(name), validate=lambda m, a: b.check(self, m, a))
            if got is not None:
                return Part(name, got[0], got[1], "disk", time.perf_counter() - t0)
        meta, arrays = b.build(self)
        part = Part(name, meta, arrays, "built", time.perf_counter() - t0)
        if b.persist:
            cache.store("vocab", self.key(name), part.meta, part.arrays)
        return part

    def loaded(self):
        """``{name: (source, seconds)}`` for the parts made so far."""
        return {n: (p.source, p.seconds) for n, p in self._parts.items()}

    # ---- convenient views ------------------------------------------------
    @property
    def trie(self):
        """The :class:`~cfgmask.engine.trie.TokTrie` (from the ``trie`` part, no copy)."""
        if self._trie is None:
            with self._lock:
                if self._trie is None:
                    self._trie = TokTrie.from_arrays(self.part("trie").arrays)
        return self._trie

    def first_byte_sets(self):
        """The trie's tokens grouped by first byte (:meth:`TokTrie.first_byte_sets`),
        from the ``first_bytes`` part, so a fresh process reads them instead of
        sorting every token id."""
        t = self.trie
        if t._first_byte_sets is None:
            part = self.part("first_bytes")
            t._first_byte_sets = (part["offsets"], part["words"], part["bits"])
        return t._first_byte_sets

    def standard_slices(self):
        """The slices many grammars share (the bodies of JSON strings and of
        Lark's ``common.ESCAPED_STRING``), prepared once: their token sets and
        tables are computed (or read from the disk cache) and memoised here, so
        that a grammar keeping them lays out no trie of its own
        (:func:`cfgmask.engine.slices.prepare_standard`).  Returns a list with
        the :class:`~cfgmask.engine.slices.SliceTables` of each class, None
        where the vocabulary is too small for any.  Idempotent."""
        if self._standard_slices is None:
            with self._standard_lock:
                if self._standard_slices is None:
                    from cfgmask.engine import slices
                    self._standard_slices = slices.prepare_standard(self)
        return self._standard_slices

    def standard_slices_if_prepared(self):
        """:meth:`standard_slices` if they are already prepared, else None (a
        compile never pays for them: ~22 ms on SmolLM2)."""
        return self._standard_slices

    @property
    def token_bytes_flat(self):
        return self.part("tokens")["flat"]

    @property
    def token_offsets(self):
        return self.part("tokens")["offsets"]

    @property
    def token_special(self):
        return self.part("tokens")["special"]

    def __repr__(self):
        return f"<PreparedVocab {self.vocab!r} parts={self.loaded()}>"


def _builder(name):
    b = _BUILDERS.get(name)
    if b is None:
        raise ConfigurationError(f"no prepared part {name!r}; registered: {', '.join(_BUILDERS)}")
    return b


def _read_only(a):
    a = np.asarray(a)
    if a.flags.writeable:
        a = a.copy() if a.base is not None else a
        a.flags.writeable = False
    return a


# ---------------------------------------------------------------------------
# The parts every compile needs
# ---------------------------------------------------------------------------

@register_part("tokens", version=1, persist=False, modules=("cfgmask.engine.vocab",))
def _build_tokens(prep):
    flat, offsets, special = prep.vocab.token_arrays()
    return {}, {"flat": flat, "offsets": offsets, "special": special}


_TRIE_ARRAYS = ("node_byte", "node_depth", "node_token", "node_subtree_end", "node_first_child",
                "token_same_next", "token_node")


def _check_trie(prep, meta, arrays):
    """:func:`cfgmask.engine.trie.check_arrays` for this vocabulary's ``vocab_size``."""
    return meta == {"n_nodes": len(arrays.get("node_byte", ()))} and check_arrays(arrays, prep.vocab.vocab_size)


@register_part("trie", version=1, modules=("cfgmask.engine.trie",), check=_check_trie)
def _build_trie(prep):
    t = TokTrie.build(prep.vocab)
    return {"n_nodes": t.n_nodes}, {a: getattr(t, a) for a in _TRIE_ARRAYS}


def _check_first_bytes(prep, meta, arrays):
    """``offsets`` int64[257] (0 first, ``len(words)`` last, non-decreasing),
    ``words`` int32 and ``bits`` uint32 of one length; within a byte's group the
    words strictly increase and are below ``ceil(vocab_size / 32)`` (the runtime
    writes ``mask[words[k]]`` unchecked), and no bit stands for an id past the
    vocabulary."""
    if set(arrays) != {"offsets", "words", "bits"} or meta != {}:
        return False
    off, words, bits = arrays["offsets"], arrays["words"], arrays["bits"]
    if not (off.dtype == np.int64 and off.shape == (257,) and words.dtype == np.int32
            and bits.dtype == np.uint32 and words.ndim == 1 and bits.shape == words.shape):
        return False
    V = prep.vocab.vocab_size
    W = (V + 31) // 32
    m = len(words)
    if off[0] != 0 or off[-1] != m or int(np.diff(off).min()) < 0:
        return False
    if m == 0:
        return True
    if int(words.min()) < 0 or int(words.max()) >= W:
        return False
    starts = np.zeros(m, dtype=np.bool_)
    starts[off[:-1][off[:-1] < m]] = True
    if ((np.diff(words) <= 0) & ~starts[1:]).any():
        return False
    return not (V % 32 and (bits[words == W - 1] >> np.uint32(V % 32)).any())


@register_part("first_bytes", version=1, requires=("trie",), modules=("cfgmask.engine.trie",),
               check=_check_first_bytes)
def _build_first_bytes(prep):
    offsets, words, bits = TokTrie.first_byte_sets(prep.trie)
    return {}, {"offsets": offsets, "words": words, "bits": bits}


def _check_subtree_bytes(prep, meta, arrays):
    """``node_set`` int32[n_nodes] indexing ``set_table`` uint64[k, 4], ``k`` the
    meta's ``n_sets``, row 0 the empty set."""
    if set(arrays) != {"node_set", "set_table"}:
        return False
    ns, table = arrays["node_set"], arrays["set_table"]
    k = meta.get("n_sets")
    return bool(ns.dtype == np.int32 and ns.shape == (prep.trie.n_nodes,) and table.dtype == np.uint64
                and type(k) is int and k >= 1 and table.shape == (k, 4) and not table[0].any()
                and int(ns.min()) >= 0 and int(ns.max()) < k)


@register_part("subtree_bytes", version=1, requires=("trie",), check=_check_subtree_bytes)
def _build_subtree_bytes(prep):
    node_set, table = subtree_byte_sets(prep.trie)
    return {"n_sets": int(table.shape[0])}, {"node_set": node_set, "set_table": table}


def subtree_byte_sets(trie):
    """``(node_set int32[n], set_table uint64[k, 4])``: for each node, the index of
    the set of bytes on the edges strictly below it (see the module docstring).

    One reverse pre-order pass (children come after their parent, so a node's
    set is final when the pass reaches it) with Python ints as 256-bit sets:
    linear in the number of nodes (0.1-0.4 s for tekken's 266k, 0.3-0.4 s per
    million nodes; ``benchmarks/run_ttfm.py``), and cached on disk.
    """
    n = trie.n_nodes
    byte = trie.node_byte.tolist()
    depth = trie.node_depth.tolist()
    parent = [0] * n
    path = [0] * (trie.max_depth + 2)   # path[d]: the latest node at depth d
    for i in range(1, n):
        d = depth[i]
        parent[i] = path[d - 1]
        path[d] = i
    below = [0] * n
    for i in range(n - 1, 0, -1):
        below[parent[i]] |= below[i] | (1 << byte[i])
    distinct = sorted(set(below))        # 0 (the empty set) sorts first
    index = {s: k for k, s in enumerate(distinct)}
    node_set = np.fromiter(map(index.__getitem__, below), dtype=np.int32, count=n)
    table = np.frombuffer(b"".join(s.to_bytes(32, "little") for s in distinct),
                          dtype="<u8").astype(np.uint64).reshape(len(distinct), 4)
    return node_set, table
