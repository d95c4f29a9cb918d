"""Lexeme slices: token sets the mask path can add in bulk instead of walking.

A *slice* is a byte language ``L`` with its token set ``{t : t is a prefix of
some string of L}`` (a token may end in the middle of a character or of a
lexeme: every token that "never dies" in the slice automaton).  If, from a
lexer state ``q``, every string of ``L`` keeps the pending lexeme alive
(``L ⊆ Live(q)``, checked once per ``(q, slice)`` by the runtime), then every
token of the slice is allowed by ``q`` alone and its bitmask is ORed in
without visiting one trie node.  Slices come from the grammar's own
terminals:

* **prefix slices** ``P_T``: the prefixes of terminal ``T`` (an identifier,
  a number, a string).  A lexeme start that allows ``T`` contains ``P_T``.
* **run slices** ``X+`` / ``X{1,k}``: repetitions of one character class
  inside a terminal (identifier tails, string and comment bodies, digit and
  whitespace runs), with bounded variants (``k`` = 4, 8, 16 and the bound
  itself) so that bounded repetitions (``{0,30}``) benefit too.
* **cross slices** ``c·P_T``: one byte ``c`` that is a whole ``%ignore``
  lexeme (a space, a newline) followed by a prefix of ``T``.  With a 128k
  vocabulary about a third of all tokens are a space and a word; they cross a
  lexeme boundary, so no lexer state contains them, but after the space ends
  the parser is unchanged and the next lexeme starts fresh, so the runtime
  settles all of them with one containment check of ``P_T`` at that start.

The candidates and their automata come from
:mod:`cfgmask.engine.slice_candidates`; this module chooses among them
(:func:`choose`), lays the chosen ones out and caches all three steps.

Layout (what :func:`layout` returns, what ``_fast/_runtime.pyx`` reads):

* the slices form a **containment tree** by token set (a child's tokens are a
  subset of its parent's; siblings are disjoint, overlaps are cut off the later
  one, which only shrinks its token set, never its language); cross slices are
  leaves;
* every tree node has its own **filtered trie** holding its tokens minus its
  children's; one more trie holds the tokens in no slice ("rest").  The tries
  are laid end to end in one **forest** (each with its own root of depth 0) in
  the same flat pre-order layout as :class:`~cfgmask.engine.trie.TokTrie`;
* ``bits[i]``: the bitmask (int32 words) of all tokens of slice ``i``,
  children included.

Invariant the runtime relies on: the forest holds every token of the trie
exactly once, so walking the rest trie and the tries of the slices not
contained visits every token whose fate is not already settled.
"""

import hashlib

import numpy as np

from cfgmask import cache
from cfgmask.automata import CODE_MODULES, ByteDFA, class_regex
from cfgmask.cache import BoundedMemo
from cfgmask.engine import slice_candidates
from cfgmask.engine.slice_candidates import BOUNDED_RUNS, Slice, derive, run_slice
from cfgmask.engine.slice_walk import partition_forest, trie_membership
from cfgmask.engine.trie import check_forest

MIN_SLICE_TOKENS = 256        # smaller slices do not pay for their trie and check
MIN_SLICE_FRACTION = 0.004    # ... nor below this share of the vocabulary
MAX_SLICES = 24


# ---------------------------------------------------------------- tree and forest

class SliceTables:
    """Everything the runtime needs about a grammar's slices (see module doc)."""

    def __init__(self, slices, parent, tok, forest, trie_lo, trie_hi, rest_lo, rest_hi, words):
        self.slices = slices
        self.parent = parent          # parent index per slice, -1 for roots
        self.tokens = tok             # bool [n_slices, V]: all tokens of the slice
        self.forest = forest          # dict of flat arrays
        self.trie_lo = trie_lo        # per slice: first node of its own trie (its root)
        self.trie_hi = trie_hi
        self.rest_lo = rest_lo
        self.rest_hi = rest_hi
        self.words = words
        self._bits = None

    @property
    def n(self):
        return len(self.slices)

    def bits(self):
        """int32 [n_slices, words] bitmasks (all tokens of each slice); computed once
        (the tables are shared by every compile that keeps these slices)."""
        if self._bits is None:
            V = self.tokens.shape[1]
            out = np.zeros((self.n, self.words * 32), dtype=np.bool_)
            out[:, :V] = self.tokens
            bits = np.packbits(out, axis=1, bitorder="little").view(np.int32).reshape(self.n, self.words)
            bits.flags.writeable = False
            self._bits = bits
        return self._bits

    def warm(self):
        """Compute now what every runtime keeping these tables reads and what does
        not depend on the lexer: the bitmasks and each automaton's columns
        (:meth:`Slice.warm`).  For the prepared standard tables this is
        per-vocabulary work, done once with them; it was 0.4-0.6 ms of each
        first compile that kept them (json.lark, a small JSON schema)."""
        self.bits()
        for s in self.slices:
            s.warm()
        return self

    def describe(self):
        return [(s.name, int(self.tokens[i].sum()), int(self.parent[i])) for i, s in enumerate(self.slices)]


def _membership(s, trie, special, V, memo):
    """Bool [V]: the tokens of slice ``s`` (see :func:`_packed_membership`)."""
    return np.unpackbits(_packed_membership(s, trie, special, V, memo), bitorder="little",
                         count=V).astype(np.bool_)


if hasattr(np, "bitwise_count"):       # numpy >= 2
    def _count_bits(packed):
        """The number of set bits in a packed uint8 array (a popcount per byte:
        7 us on SmolLM2's 6 KB sets, where a table lookup took 24 us, and sql.lark
        counts 76 of them)."""
        return int(np.bitwise_count(packed).sum(dtype=np.int64))
else:                                  # numpy 1.26, which we allow
    def _count_bits(packed):
        """The number of set bits in a packed uint8 array."""
        return int(np.count_nonzero(np.unpackbits(packed)))


def _packed_membership(s, trie, special, V, memo):
    """The tokens of slice ``s`` as packed bits (little bit order, ``ceil(V / 8)``
    bytes, zero padding), memoised in ``memo`` (a :class:`~cfgmask.cache.BoundedMemo`)
    by the slice's digest (6-16 KB each) so that grammars sharing terminals share
    the work."""
    k = s.key()
    if memo is not None:
        got = memo.get(k)
        if got is not None:
            return got
    if s.run_of is not None:
        # a bounded run: the unbounded run's tokens of at most that many characters
        # (one walk of the vocabulary for a class's four variants)
        plus, bound = s.run_of
        counts = trie.char_counts()
        short = np.zeros(V, dtype=np.bool_)
        short[:min(V, len(counts))] = counts[:V] <= bound
        packed = _packed_membership(plus, trie, special, V, memo) & np.packbits(short, bitorder="little")
    else:
        m = np.zeros(V, dtype=np.bool_)
        got = trie_membership(s.dfa, trie, special, s.lead)
        m[:min(V, len(got))] = got[:V]
        packed = np.packbits(m, bitorder="little")
    if memo is not None:
        memo.put(k, packed)
    return packed


def _threshold(n_tok, min_tokens=MIN_SLICE_TOKENS, min_fraction=MIN_SLICE_FRACTION):
    """The fewest tokens a kept slice has of its own."""
    return max(1, min_tokens, int(min_fraction * max(1, n_tok)))


def _first_bytes(s):
    """The bytes that can start a token of candidate ``s``, as 32 packed bytes."""
    return np.packbits(s.first_bytes(), bitorder="little").tobytes()


def choose(candidates, trie, special, vocab_size, *, min_tokens=MIN_SLICE_TOKENS,
           min_fraction=MIN_SLICE_FRACTION, max_slices=MAX_SLICES, memberships=None):
    """Keep the candidate slices with enough tokens and give each token to the
    first kept slice (in priority order) that contains it.

    Returns ``(indices into candidates, own token sets)``, in priority order.
    Priority: prefix slices (largest first: identifiers and strings are what
    most lexer states can continue), then cross slices (a space and a word:
    the largest family of tokens that cross a lexeme boundary), then run
    slices (bounded variants before unbounded ones, so each length range gets
    its own trie).  A slice that gets too few tokens of its own is dropped.
    ``memberships``: a :class:`~cfgmask.cache.BoundedMemo` memoising each
    candidate's token set.
    """
    V = vocab_size
    threshold = _threshold(len(special), min_tokens, min_fraction)
    max_slices = min(int(max_slices), 32)
    # an upper bound per candidate from the tokens' first bytes alone: most run
    # candidates (digits, one punctuation class) cannot reach the threshold, and
    # skipping them changes nothing but the time (the bound is never below the count)
    first_count = trie.first_byte_counts()     # trie tokens per first byte
    # token sets stay packed (8 tokens a byte) until the few kept ones are returned
    scored = []
    for i, s in enumerate(candidates):
        if int(first_count[s.first_bytes()].sum()) < threshold:
            continue
        m = _packed_membership(s, trie, special, V, memberships)
        c = _count_bits(m)
        if c >= threshold:
            kind = 1 if s.lead is not None else (0 if s.name.startswith("P[") else 2)
            scored.append(((kind, c if kind == 2 else -c, i), i, m))
    scored.sort(key=lambda x: x[0])
    chosen, own = [], []
    taken = np.zeros((V + 7) // 8, dtype=np.uint8)
    for _key, i, m in scored:
        if len(chosen) >= max_slices:
            break
        mine = m & ~taken
        if _count_bits(mine) < threshold:
            continue
        chosen.append(i)
        own.append(mine)
        taken |= mine
    own = [np.unpackbits(m, bitorder="little", count=V).astype(np.bool_) for m in own]
    return chosen, own


def _own_sets(slices, trie, special, V, memberships):
    """The own token sets of already chosen ``slices`` (in their priority order)."""
    own = []
    taken = np.zeros(V, dtype=np.bool_)
    for s in slices:
        m = _membership(s, trie, special, V, memberships)
        own.append(m & ~taken)
        taken |= m
    return own


def layout(slices, own, trie, vocab_size):
    """The forest of filtered tries (one per slice with its own tokens, then the
    rest) and the containment tree: a :class:`SliceTables`."""
    V = vocab_size
    # each token's trie: its slice's own, else the rest (index len(slices)); own
    # sets are disjoint, so the rest is what no slice took
    part_of_token = np.full(V, len(slices), dtype=np.uint8)
    for j, mine in enumerate(own):
        part_of_token[mine] = j
    node_byte, node_depth, node_token, subtree_end, lo, hi = partition_forest(
        trie, part_of_token, len(slices) + 1)
    rest_lo, rest_hi = int(lo[-1]), int(hi[-1])
    lo, hi = lo[:-1].astype(np.int32), hi[:-1].astype(np.int32)
    forest = {"node_byte": node_byte, "node_depth": node_depth, "node_token": node_token,
              "node_subtree_end": subtree_end}
    words = (V + 31) // 32
    tokens = np.array(own, dtype=np.bool_).reshape(len(own), V)
    return SliceTables(slices, _implied_by(slices, tokens), tokens, forest,
                       np.array(lo, dtype=np.int32), np.array(hi, dtype=np.int32),
                       rest_lo, rest_hi, words)


def _implied_by(slices, tokens):
    """``parent[i]``: a kept slice whose language is a subset of slice ``i``'s, or -1.

    This is the containment tree the runtime uses to skip checks: if the
    smaller language is not contained in a lexer state's live strings, the
    larger one cannot be either.  Only the bounded/unbounded variants of one
    run are related this way (``X{1,4} ⊂ X{1,8} ⊂ X+``), read off the names
    derive() gives them.
    """
    parent = np.full(len(slices), -1, dtype=np.int32)
    by_name = {s.name: i for i, s in enumerate(slices)}
    for i, s in enumerate(slices):
        if not s.name.startswith("run["):
            continue
        stem, _, bound = s.name.rpartition("]")
        stem += "]"
        best = None
        for j, t in enumerate(slices):
            if j == i or not t.name.startswith(stem) or t.name.rpartition("]")[0] + "]" != stem:
                continue
            tb = t.name.rpartition("]")[2]
            if _bound(tb) < _bound(bound) and (best is None or _bound(tb) > _bound(slices[best].name.rpartition("]")[2])):
                best = j
        if best is not None:
            parent[i] = best
    del by_name
    return parent


def _bound(suffix):
    if suffix == "+":
        return float("inf")
    return int(suffix.strip("{}").split(",")[1])


# ---------------------------------------------------------------- derivation cache

DERIVE_FORMAT = 5     # 3: each candidate's first bytes next to its digest; 4: cross slices named by lead and tail;
                      # 5: a tail by P_T's digest and first row
_DERIVED = BoundedMemo(32, order="fifo")            # digest -> candidate slices
# digest -> (the candidates' digests, their first bytes): the disk entry
_CANDIDATE_KEYS = BoundedMemo(256, order="fifo")


def _terminals_key(grammar):
    # one string hashed once (an update per part was a third of this step's time)
    parts = []
    for name, pattern, flags, ignore in zip(grammar.terminal_names, grammar.terminal_patterns,
                                            grammar.terminal_flags, grammar.terminal_is_ignore.tolist()):
        parts += (name, pattern, ",".join(sorted(flags)), "i" if ignore else "-")
    text = "\0".join(parts) + "\0" if parts else ""
    return {"format": DERIVE_FORMAT, "code": cache.code_fingerprint(__name__, slice_candidates.__name__, *CODE_MODULES),
            "terminals": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()}


def derived(grammar, lexer_spec, memo_key=None):
    """:func:`derive`, memoised in memory by the terminals (name, pattern, flags,
    ``%ignore``; ``memo_key``: the ``"terminals"`` hash of :func:`_terminals_key`,
    when the caller has it; the code is the same for a whole process)."""
    if memo_key is None:
        memo_key = _terminals_key(grammar)["terminals"]
    # a JSON Schema grammar's prefix slices stay unmade until read (derive's lazy)
    lazy = bool(grammar.terminal_automata_prebuilt)
    hit = _DERIVED.get((memo_key, lazy))
    if hit is None:
        hit = derive(grammar, lexer_spec, lazy=lazy)
        _DERIVED.put((memo_key, lazy), hit)
    return hit


class _StaleCandidates(Exception):
    """The candidate list read from the disk cache does not match the derivation."""


def _derived_as_listed(grammar, lexer_spec, memo_key, n_keys):
    """:func:`derived`, checked against the number of candidate digests the caller
    indexes with (they may come from a ``slice-candidates`` entry that a valid
    checksum does not prove right)."""
    got = derived(grammar, lexer_spec, memo_key)
    if len(got) != n_keys:
        raise _StaleCandidates()
    return got


def _candidate_keys(grammar, lexer_spec, key=None, rederive=False):
    """``(digests, first bytes)`` of the grammar's candidate slices, without their
    automata when possible: from memory, then from the disk cache (kind
    ``slice-candidates``, a few KB), else by deriving them.  Deriving reads
    every pattern with Python's regex parser, 30-45 ms for the SQL and
    JavaScript grammars (their generated identifier patterns are long); the
    automata themselves (up to tens of MB for those identifiers) are only
    needed to build a new choice or new tables.  The first bytes (32 packed
    bytes a candidate) bound a candidate's token count on any vocabulary
    (:func:`for_grammar` leaves the hopeless ones out of the choice key).

    A grammar whose builder handed its automata over (a JSON Schema grammar:
    ``terminal_automata_prebuilt``) skips the disk: its builder runs again in
    any process, and a lookup that almost always misses cost more than most
    such grammars' derivation.  Its digests come as a :class:`_LazyKeys`,
    taken when indexed (only the viable candidates' ever are)."""
    if key is None:
        key = _terminals_key(grammar)
    memo_key = key["terminals"]     # the rest of the key is this process's code
    prebuilt = bool(grammar.terminal_automata_prebuilt)
    got = None if rederive else _CANDIDATE_KEYS.get((memo_key, prebuilt))
    if got is not None:
        return (got[0] if prebuilt else list(got[0])), list(got[1])
    if prebuilt:
        # no disk entry (above), and each digest taken when first indexed: the
        # choice reads only the viable candidates' (derive's lazy)
        candidates = derived(grammar, lexer_spec, memo_key)
        keys, firsts = _LazyKeys(candidates), [_first_bytes(c) for c in candidates]
        _CANDIDATE_KEYS.put((memo_key, prebuilt), (keys, tuple(firsts)))
        return keys, firsts
    disk_key = key
    hit = _DERIVED.get((memo_key, False))
    if hit is not None or rederive:
        candidates = hit if hit is not None else derived(grammar, lexer_spec, memo_key)
        keys, firsts = _keys_and_first_bytes(candidates)
        if rederive and disk_key is not None:    # overwrite the stale entry
            cache.store("slice-candidates", key, _candidates_meta(keys, firsts), {})
    else:
        built = []

        def build():
            built[:] = _keys_and_first_bytes(derived(grammar, lexer_spec, memo_key))
            return _candidates_meta(*built), {}
        meta, _arrays, source = cache.cached_build(
            "slice-candidates", disk_key, build, validate=_check_candidates,
            persist=lambda build_s: build_s > cache.PERSIST_ABOVE_S)
        if source == "built":
            keys, firsts = built
        else:
            keys, firsts = meta["keys"], [bytes.fromhex(f) for f in meta["first_bytes"]]
    _CANDIDATE_KEYS.put((memo_key, prebuilt), (tuple(keys), tuple(firsts)))
    return list(keys), list(firsts)


class _LazyKeys:
    """The digests of a list of candidates (:meth:`Slice.key`), each taken on
    first indexing and kept."""

    def __init__(self, candidates):
        self._candidates = candidates
        self._keys = [None] * len(candidates)

    def __len__(self):
        return len(self._keys)

    def __getitem__(self, i):
        k = self._keys[i]
        if k is None:
            k = self._keys[i] = self._candidates[i].key()
        return k

    def __iter__(self):
        return (self[i] for i in range(len(self._keys)))


def _keys_and_first_bytes(candidates):
    return [c.key() for c in candidates], [_first_bytes(c) for c in candidates]


def _candidates_meta(keys, firsts):
    """The ``slice-candidates`` entry of candidates with digests ``keys``."""
    return {"keys": keys, "first_bytes": [f.hex() for f in firsts]}


# ---------------------------------------------------------------- per vocabulary cache

SLICES_FORMAT = 3
_TABLE_CACHE_SIZE = 16
_CHOICE_CACHE_SIZE = 256
_MEMBERSHIP_MEMO_SIZE = 1024


def _prepared_memo(prepared, name, size):
    """The :class:`~cfgmask.cache.BoundedMemo` ``name`` kept on a prepared
    vocabulary (made on first use; compiles may run in several threads, and
    ``setdefault`` keeps the first one made)."""
    memo = prepared.__dict__.get(name)
    if memo is None:
        memo = prepared.__dict__.setdefault(name, BoundedMemo(size, order="fifo"))
    return memo


def for_grammar(grammar, lexer_spec, prepared, **options):
    """The :class:`SliceTables` of ``grammar`` on a prepared vocabulary (see
    :func:`_for_grammar`)."""
    try:
        return _for_grammar(grammar, lexer_spec, prepared, options, False)
    except _StaleCandidates:
        # a slice-candidates entry listed another number of candidates than the
        # grammar has: derive them and overwrite the entry (once)
        return _for_grammar(grammar, lexer_spec, prepared, options, True)


def for_grammar_standard_first(grammar, lexer_spec, prepared, **options):
    """``(tables, own_pending)``: :func:`for_grammar`'s tables, except when the
    standard slices (a JSON string's body, prepared with the vocabulary) are
    among the grammar's candidates next to others and the grammar's own choice
    or tables are not known yet (in memory or on disk): then the prepared
    standard tables and ``own_pending=True``, without choosing; the caller
    starts with them and builds the grammar's own later (``compiler``: once
    its walk is hot; they are often the standard tables themselves).

    Any slice set gives the same masks (slices only skip work), and the
    standard set holds the runs of string bodies, where a walk without slices
    is most costly; the grammar's own extras (a key pattern, a format's
    characters) save less than the forest costs a schema that is compiled,
    used for one document and dropped: ~10 ms of tekken's 131k-token trie,
    most of MaskBench's p80-p95 time to first mask (docs/compile.md)."""
    try:
        return _for_grammar(grammar, lexer_spec, prepared, options, False, standard_first=True)
    except _StaleCandidates:
        return _for_grammar(grammar, lexer_spec, prepared, options, True, standard_first=True)


def _standard_among(prepared, viable_keys):
    """The prepared standard tables whose slices are all among ``viable_keys``
    next to other candidates, or None (also when they are not prepared, or
    when the candidates are exactly theirs: choosing among them is cheap and
    keeps them)."""
    for std in prepared.standard_slices_if_prepared() or ():
        if std is None:
            continue
        keys = {s.key() for s in std.slices}
        if keys <= set(viable_keys) and len(set(viable_keys)) > len(keys):
            return std
    return None


def _for_grammar(grammar, lexer_spec, prepared, options, rederive, standard_first=False):
    """The :class:`SliceTables` of ``grammar`` on a prepared vocabulary.

    Three levels, each memoised in memory and kept in the disk cache
    (``cfgmask.cache``, looked up with :func:`cfgmask.cache.cached_build`),
    keyed by the vocabulary's fingerprint, the build options and this
    module's code:

    * *candidates* (kind ``slice-candidates``): the digests of the grammar's
      candidate slices, keyed by its terminals;
    * *choice* (kind ``slice-choice``): which candidates are kept, keyed by all
      candidates' digests;
    * *tables* (kind ``slices``: the kept slices' automata, token sets, forest,
      tree), keyed by the kept slices alone.

    A compile that hits all three derives nothing and builds nothing.  Grammars
    that differ only in terminals that make no slice (every JSON Schema grammar
    keeps the same string-body runs) share the tables, and each candidate's
    token set is memoised, so a new grammar pays for the candidates it does not
    share and for a forest only when its kept set is new.
    """
    terminals_key = _terminals_key(grammar)
    terminals_memo = terminals_key["terminals"]
    keys, firsts = _candidate_keys(grammar, lexer_spec, terminals_key, rederive)
    V = prepared.vocab.vocab_size
    trie, special = prepared.trie, prepared.token_special
    # Candidates whose first bytes start too few tokens can never be kept (choose
    # skips them too), so they stay out of the choice key: most JSON Schema
    # grammars differ only in such terminals (a new "any other key" pattern
    # each) and then share one choice instead of choosing again (0.3 ms).
    threshold = _threshold(len(special), options.get("min_tokens", MIN_SLICE_TOKENS),
                           options.get("min_fraction", MIN_SLICE_FRACTION))
    starts = np.unpackbits(np.frombuffer(b"".join(firsts), np.uint8), bitorder="little")
    bound = starts.reshape(len(firsts), 256).astype(np.int64) @ trie.first_byte_counts().astype(np.int64)
    viable = np.flatnonzero(bound >= threshold).tolist()
    base = _tables_base(prepared, options)
    memberships = _prepared_memo(prepared, "_slice_memberships", _MEMBERSHIP_MEMO_SIZE)
    own = None    # the chosen slices' own token sets, when chosen here

    # the choice: indices into the viable candidates (what its key names)
    def choose_viable():
        nonlocal own
        candidates = _derived_as_listed(grammar, lexer_spec, terminals_memo, len(keys))
        chosen, own = choose([candidates[i] for i in viable], trie, special, V,
                             memberships=memberships, **options)
        return {"chosen": chosen}, {}
    def choice(build=True):
        def make():
            if not build:
                raise _NotBuilt
            return choose_viable()
        return cache.cached_build(
            "slice-choice", dict(base, candidates=[keys[i] for i in viable]), make,
            memo=_prepared_memo(prepared, "_slice_choices", _CHOICE_CACHE_SIZE),
            validate=lambda meta, arrays: _check_choice(meta, arrays, len(viable)),
            persist=lambda build_s: build_s > cache.PERSIST_ABOVE_S)[0]

    std = _standard_among(prepared, [keys[i] for i in viable]) if standard_first else None
    if std is not None:
        # the standard slices are candidates next to others: start on their tables
        # unless this grammar's choice and tables are already known (no choosing:
        # its token sets are most of a keyed schema's remaining slice time)
        try:
            meta = choice(build=False)
        except _NotBuilt:
            return std, True
        chosen_keys = [keys[viable[j]] for j in meta["chosen"]]
        if chosen_keys == [s.key() for s in std.slices]:
            return std, False
        got = _tables_for(chosen_keys, None, None, prepared, base, memberships, build=False)
        return (got, False) if got is not None else (std, True)
    meta = choice()
    chosen = [viable[j] for j in meta["chosen"]]

    def chosen_slices():
        candidates = _derived_as_listed(grammar, lexer_spec, terminals_memo, len(keys))
        return [candidates[i] for i in chosen]
    tables = _tables_for([keys[i] for i in chosen], chosen_slices, own, prepared, base, memberships)
    return (tables, False) if standard_first else tables


def _tables_base(prepared, options):
    """The part of a choice's and a table's cache key that is not the slices."""
    return {"format": SLICES_FORMAT, "code": cache.code_fingerprint(__name__, slice_candidates.__name__),
            "vocab": prepared.vocab.fingerprint(), "options": {k: options[k] for k in sorted(options)}}


class _NotBuilt(Exception):
    """A look-up told not to build (a choice, :func:`_tables_for`) found nothing."""


def _tables_for(chosen_keys, chosen_slices, own, prepared, base, memberships, build=True):
    """The :class:`SliceTables` of the chosen slices (digests ``chosen_keys``, in
    priority order; ``chosen_slices()`` gives the slices themselves, only needed
    when the tables must be built), memoised on the prepared vocabulary and kept
    in the disk cache.  They are a function of that ordered list alone: a
    slice's own tokens are its members minus those of the slices chosen before
    it.  ``own``: those own sets, when the caller has them.  ``build=False``:
    None where they are neither in memory nor on disk."""
    trie, special, V = prepared.trie, prepared.token_special, prepared.vocab.vocab_size
    tables_key = dict(base, chosen=list(chosen_keys))
    tables_digest = cache.key_digest(tables_key)
    memo = _prepared_memo(prepared, "_slice_tables", _TABLE_CACHE_SIZE)
    tables = memo.get(tables_digest)
    if tables is not None:
        return tables

    def read(meta, arrays):     # the entry's checks, then its tables
        nonlocal tables
        if check_tables(meta, arrays, len(chosen_keys), V, trie.max_depth):
            tables = _from_arrays(meta, arrays, list(chosen_keys))
        return tables is not None

    def lay_out():
        nonlocal tables
        if not build:
            raise _NotBuilt
        slices = chosen_slices()
        tables = layout(slices, own if own is not None else _own_sets(slices, trie, special, V, memberships),
                        trie, V)
        return _to_arrays(tables)
    try:
        cache.cached_build("slices", tables_key, lay_out, validate=read)
    except _NotBuilt:
        return None
    memo.put(tables_digest, tables)
    return tables


# ---------------------------------------------------------------- standard slices

#: Character classes whose run slices many grammars share, prepared once per
#: vocabulary (:func:`prepare_standard`): the body of a JSON string (every
#: character but ``"``, ``\`` and the controls), which every JSON Schema
#: grammar and JSON-like ``.lark`` grammars (json.lark) repeat, and the body
#: of Lark's ``common.ESCAPED_STRING`` as cfgmask reads it (every character
#: but ``"``, ``\`` and a newline), which most third-party Lark grammars
#: import.  Their candidates are exactly the run slices :func:`derive` offers
#: for such a terminal (same automata, so the same digests:
#: tests/test_slices.py checks).
STANDARD_RUN_CLASSES = (
    ("JSON string", ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, 0x10FFFF))),
    ("Lark string", ((0x00, 0x09), (0x0B, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, 0x10FFFF))),
)


def standard_candidates(label=None):
    """The run slices of :data:`STANDARD_RUN_CLASSES` (of class ``label`` alone, if
    given), each class's variants in the order :func:`derive` offers them."""
    out = []
    for name, ranges in (c for c in STANDARD_RUN_CLASSES if label in (None, c[0])):
        cls = class_regex(ranges)
        for suffix in ["+"] + [f"{{1,{k}}}" for k in BOUNDED_RUNS]:
            sl = run_slice(cls, suffix)
            if sl is not None:
                out.append(sl.renamed(f"run[{name}]{suffix}"))
    return out


def prepare_standard(prepared):
    """Compute, on a prepared vocabulary, what the standard slices cost a first
    compile: each candidate's token set, and for each class the tables of the
    set :func:`choose` keeps of its candidates alone (default options).  A
    grammar whose candidates include them then finds their token sets
    memoised, and one that keeps exactly such a set (json.lark, most JSON
    schemas, a grammar whose only string is common.ESCAPED_STRING) finds its
    tables: its compile derives and chooses, and lays out no trie.  This is
    per-vocabulary work, like the trie: llguidance likewise computes its
    slices when a tokenizer is made (``LLTokenizer(..., slices=...)``).
    Returns the tables of each class (None where the vocabulary is too small
    for any)."""
    trie, special, V = prepared.trie, prepared.token_special, prepared.vocab.vocab_size
    memberships = _prepared_memo(prepared, "_slice_memberships", _MEMBERSHIP_MEMO_SIZE)
    base = _tables_base(prepared, {})
    out = []
    for label, _ranges in STANDARD_RUN_CLASSES:
        candidates = standard_candidates(label)
        chosen, own = choose(candidates, trie, special, V, memberships=memberships)
        slices = [candidates[i] for i in chosen]
        out.append(_tables_for([c.key() for c in slices], lambda slices=slices: slices, own, prepared,
                               base, memberships).warm() if chosen else None)
    return out


def _to_arrays(tables):
    meta = {"rest": [int(tables.rest_lo), int(tables.rest_hi)],
            "words": int(tables.words), "V": int(tables.tokens.shape[1]),
            "slices": [{"name": c.name, "lead": c.lead, "pattern": c.dfa.pattern,
                        "tail": None if c.tail is None else c.tail.pattern} for c in tables.slices]}
    arrays = dict(tables.forest)
    arrays["tokens"] = np.packbits(tables.tokens, axis=1, bitorder="little")
    arrays["parent"] = tables.parent
    arrays["trie_lo"] = tables.trie_lo
    arrays["trie_hi"] = tables.trie_hi
    for i, c in enumerate(tables.slices):
        arrays[f"t{i}"], arrays[f"a{i}"] = c.dfa.trans, c.dfa.accepting.astype(np.uint8)
        if c.tail is not None:
            arrays[f"tt{i}"], arrays[f"ta{i}"] = c.tail.trans, c.tail.accepting.astype(np.uint8)
    return meta, arrays


def _hex64(x):
    if not (isinstance(x, str) and len(x) == 64):
        return False
    try:
        bytes.fromhex(x)
    except ValueError:
        return False
    return True


def _check_candidates(meta, arrays):
    """A ``slice-candidates`` entry: ``keys`` and ``first_bytes``, two lists of
    one length of 64 hex digits each (digests, 32 packed bytes), no arrays."""
    keys, firsts = meta.get("keys"), meta.get("first_bytes")
    return (not arrays and isinstance(keys, list) and isinstance(firsts, list)
            and len(firsts) == len(keys) and all(map(_hex64, keys)) and all(map(_hex64, firsts)))


def _check_choice(meta, arrays, n_viable):
    """A ``slice-choice`` entry: ``chosen``, at most :data:`MAX_SLICES` distinct
    indices into the ``n_viable`` candidates of its key, no arrays."""
    idx = meta.get("chosen")
    return (not arrays and isinstance(idx, list) and len(idx) <= MAX_SLICES
            and all(type(i) is int and 0 <= i < n_viable for i in idx) and len(set(idx)) == len(idx))


def _check_dfa(trans, accepting):
    """A slice automaton: ``trans`` int32[S, 256], ``S >= 1`` (start 0), every
    value -1 (dead) or a state; ``accepting`` uint8[S] of 0/1."""
    return (isinstance(trans, np.ndarray) and isinstance(accepting, np.ndarray)
            and trans.dtype == np.int32 and trans.ndim == 2 and trans.shape[0] >= 1
            and trans.shape[1] == 256 and accepting.dtype == np.uint8 and accepting.shape == trans.shape[:1]
            and int(trans.min()) >= -1 and int(trans.max()) < trans.shape[0] and int(accepting.max()) <= 1)


def check_tables(meta, arrays, n_slices, vocab_size, max_depth):
    """Whether a ``slices`` disk-cache entry holds tables :func:`_to_arrays` could
    have made for ``n_slices`` slices on a vocabulary of ``vocab_size`` ids whose
    trie is ``max_depth`` deep; the invariants ``_fast/_runtime.pyx`` indexes
    with unchecked:

    * ``meta``: ``V == vocab_size``, ``words == ceil(V / 32)``, ``rest`` two ints,
      ``slices`` one dict per slice (``name``, ``pattern`` str; ``lead`` a byte
      or None, ``tail`` a str exactly when ``lead`` is a byte);
    * exactly the arrays ``_to_arrays`` makes: the forest, ``tokens``, ``parent``,
      ``trie_lo``, ``trie_hi``, ``t<i>``/``a<i>`` per slice, ``tt<i>``/``ta<i>``
      per cross slice;
    * the forest passes :func:`cfgmask.engine.trie.check_forest` (pre-order subtrees,
      token ids ``< V``), no deeper than the vocabulary's trie (the walk's stack
      is sized by it), and its roots are exactly ``trie_lo`` then ``rest_lo``,
      each trie ending where the next begins (``trie_hi``, ``rest_hi`` = the
      forest's length);
    * ``tokens`` uint8[n, ceil(V / 8)]; ``parent`` int32[n], -1 or another slice;
    * each slice automaton passes :func:`_check_dfa`.
    """
    n, V = int(n_slices), int(vocab_size)
    rest, slices = meta.get("rest"), meta.get("slices")
    if not (meta.get("V") == V and meta.get("words") == (V + 31) // 32 and isinstance(rest, list)
            and len(rest) == 2 and all(type(r) is int for r in rest) and isinstance(slices, list)
            and len(slices) == n):
        return False
    names = {"node_byte", "node_depth", "node_token", "node_subtree_end", "tokens", "parent",
             "trie_lo", "trie_hi"}
    for i, m in enumerate(slices):
        if not (isinstance(m, dict) and set(m) == {"name", "lead", "pattern", "tail"}
                and isinstance(m["name"], str) and isinstance(m["pattern"], str)):
            return False
        lead, tail = m["lead"], m["tail"]
        if lead is None and tail is None:
            names |= {f"t{i}", f"a{i}"}
        elif type(lead) is int and 0 <= lead < 256 and isinstance(tail, str):
            names |= {f"t{i}", f"a{i}", f"tt{i}", f"ta{i}"}
        else:
            return False
    if set(arrays) != names:
        return False
    nb, nd, nt, ne = (arrays[k] for k in ("node_byte", "node_depth", "node_token", "node_subtree_end"))
    if not check_forest(nb, nd, nt, ne, V) or int(nd.max()) > max_depth:
        return False
    tokens, parent, lo, hi = arrays["tokens"], arrays["parent"], arrays["trie_lo"], arrays["trie_hi"]
    if not (tokens.dtype == np.uint8 and tokens.shape == (n, (V + 7) // 8)
            and all(a.dtype == np.int32 and a.shape == (n,) for a in (parent, lo, hi))):
        return False
    if n and (int(parent.min()) < -1 or int(parent.max()) >= n or (parent == np.arange(n)).any()):
        return False
    roots = np.flatnonzero(nd == 0)
    if not (np.array_equal(roots, np.r_[lo.astype(np.int64), rest[0]])
            and np.array_equal(hi, ne[lo]) and rest[1] == len(nb) == ne[rest[0]]):
        return False
    for i, m in enumerate(slices):
        if not _check_dfa(arrays[f"t{i}"], arrays[f"a{i}"]):
            return False
        if m["lead"] is not None and not _check_dfa(arrays[f"tt{i}"], arrays[f"ta{i}"]):
            return False
    return True


def _from_arrays(meta, arrays, keys):
    """The tables of an entry whose key names the slices' digests ``keys`` (the
    entry's checksum and key were checked by :func:`cfgmask.cache.load`)."""
    try:
        slices = []
        for i, m in enumerate(meta["slices"]):
            dfa = ByteDFA(arrays[f"t{i}"], np.asarray(arrays[f"a{i}"], dtype=np.bool_),
                              pattern=m["pattern"], name=m["name"])
            tail = None
            if m["tail"] is not None:
                tail = ByteDFA(arrays[f"tt{i}"], np.asarray(arrays[f"ta{i}"], dtype=np.bool_),
                                   pattern=m["tail"], name=m["name"])
            if dfa.trans.ndim != 2 or dfa.trans.shape[1] != 256:
                return None
            c = Slice(m["name"], dfa, lead=m["lead"], tail=tail)
            c._key = keys[i]
            slices.append(c)
        if len(slices) != len(keys):
            return None
        V = int(meta["V"])
        tokens = np.unpackbits(arrays["tokens"], axis=1, bitorder="little", count=V).astype(np.bool_)
        forest = {k: np.asarray(arrays[k]) for k in ("node_byte", "node_depth", "node_token",
                                                     "node_subtree_end")}
        if tokens.shape[0] != len(slices):
            return None
        return SliceTables(slices, np.asarray(arrays["parent"]), tokens.reshape(len(slices), V), forest,
                           np.asarray(arrays["trie_lo"]), np.asarray(arrays["trie_hi"]),
                           int(meta["rest"][0]), int(meta["rest"][1]), int(meta["words"]))
    except (KeyError, IndexError, ValueError, TypeError):
        return None
