"""Disk cache of normalised grammars: Lark grammar text -> :class:`~cfgmask.grammar.Grammar`.

Loading a grammar with Lark costs 10 ms (JSON) to 100-150 ms (SQL,
JavaScript), more than the whole rest of a compile on a cache hit; importing
``lark`` alone costs ~30 ms.  ``Grammar.from_lark`` therefore asks this module
first, and only runs Lark on a miss.

Key: the grammar text's sha256 (the key is made canonical JSON, digested and
written into each entry's header, and a 358 KB text cost ~1.5 ms a pass),
start rule, import paths, source path and
``word_boundary`` argument, the Python version, a hash of Lark's own source
files (found without importing Lark) and of the cfgmask modules that
normalise grammars, and a format version.  An entry also records every file
the grammar ``%import``\\ ed (Lark reports them with a sha256 of their text);
on a hit each is read and hashed again, and any change makes the entry a miss.

What is stored is the ``Grammar`` object's own attributes: NumPy arrays as
arrays, everything else as JSON with tags for ``bytes``, ``frozenset`` and
``tuple``.  An attribute of any other type makes the grammar uncacheable
(stored nowhere, built every time), so a new field added to ``Grammar`` is
either cached faithfully or not at all.  Errors are never cached.

Entries read in this process are also kept in memory (a
:class:`~cfgmask.cache.BoundedMemo`, the last :data:`_MEMORY_SIZE` of them),
keyed by the cache directory and the key's digest, so that compiling the same
grammar again skips reading and checking the file (about 0.2 ms of a 1-2 ms
JSON compile).  The ``%import``\\ ed files are still read and hashed on every
hit.  A disabled cache bypasses the memory too.

This module holds attributes, not objects: :func:`load` gives the attributes
of the cached grammar and the Lark front end builds the object through the
class it was given (:mod:`cfgmask.frontends.lark_frontend`).  It does not use
:func:`cfgmask.cache.cached_build`: a hit here is not final (the ``%import``\\ ed
files are checked after the look-up, and a changed one means a rebuild that
overwrites the entry), a grammar with an attribute that cannot be encoded is
built but never stored, and only entries read from disk go to memory.
"""

import hashlib
import importlib.util
import os
import sys

import numpy as np

from cfgmask import cache
from cfgmask.frontends.cfg import nullable

GRAMMAR_CACHE_FORMAT = 3     # 2: Grammar.terminal_at_start; 3: the text by its sha256
_LARK_FILES = ("__init__.py", "lark.py", "load_grammar.py", "grammar.py", "lexer.py",
               "parse_tree_builder.py", "grammars/common.lark")

# the cfgmask modules whose code decides what a cached grammar holds (part of the key)
_CODE = ("cfgmask.grammar", "cfgmask.frontends.cfg", "cfgmask.frontends.lark_frontend",
         "cfgmask.frontends.lark_loader", "cfgmask.frontends.lark_parse",
         "cfgmask.frontends.lark_build", "cfgmask.frontends.lark_compile", __name__)

_lark_hash = None
_MEMORY_SIZE = 32
# (cache dir, digest) -> (meta, arrays) of entries read from disk; a hit does not
# refresh an entry, reading it from disk again does
_memory = cache.BoundedMemo(_MEMORY_SIZE, order="fifo")


def _memory_key(digest):
    d = cache.cache_dir()
    return None if d is None else (str(d), digest)


def _lark_fingerprint():
    """sha256 (16 hex) of Lark's grammar-loading source files, without importing Lark."""
    global _lark_hash
    if _lark_hash is None:
        h = hashlib.sha256()
        spec = importlib.util.find_spec("lark")
        locations = list(spec.submodule_search_locations or ()) if spec else []
        for name in _LARK_FILES:
            h.update(name.encode() + b"\0")
            for d in locations:
                try:
                    with open(os.path.join(d, name), "rb") as f:
                        h.update(f.read())
                    break
                except OSError:
                    continue
        _lark_hash = h.hexdigest()[:16]
    return _lark_hash


def grammar_key(text, start, import_paths, word_boundary, source):
    """The cache key (a dict) of ``Grammar.from_lark(text, start, ...)``, or ``None``
    when it cannot be cached (an import path that is a loader, not a directory)."""
    if not all(isinstance(p, (str, os.PathLike)) for p in import_paths):
        return None
    if not (word_boundary is None or isinstance(word_boundary, str)):
        return None
    # the text by its digest: the key is made canonical JSON, digested and written
    # into the entry's header, and javascript.lark's text is 358 KB (~1.5 ms a pass)
    text_sha256 = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return {"format": GRAMMAR_CACHE_FORMAT, "text_sha256": text_sha256, "start": start,
            "import_paths": [os.path.abspath(os.fspath(p)) for p in import_paths],
            "word_boundary": word_boundary, "source": None if source is None else str(source),
            "python": list(sys.version_info[:2]), "lark": _lark_fingerprint(),
            "code": cache.code_fingerprint(*_CODE)}


def load(key, digest=None):
    """The attributes (``{name: value}``) of the cached :class:`~cfgmask.grammar.Grammar`
    for ``key``, or ``None`` (``digest``: ``cfgmask.cache.key_digest(key)``, when the
    caller has it)."""
    if key is None:
        return None
    digest = digest or cache.key_digest(key)
    mkey = _memory_key(digest)
    if mkey is None:
        return None
    got = _memory.get(mkey)
    if got is None:
        got = cache.load("grammar", key, digest, validate=check_entry)
        if got is None:
            return None
        _memory.put(mkey, got)
    meta, arrays = got
    try:
        if not all(_file_unchanged(entry) for entry in meta["imports"]):
            return None
        fields = {name: _decode(value) for name, value in meta["attrs"].items()}
        fields.update(arrays)
        return fields
    except (KeyError, TypeError, ValueError):
        return None


# A Grammar's attributes as from_lark makes them: JSON values (checked by type
# here) and arrays (checked by check_entry).  A new attribute must be added
# here, or every cached grammar is rejected (tests/test_cache_tamper.py notices).
_ATTR_TYPES = {"terminal_names": list, "terminal_patterns": list, "terminal_flags": list,
               "nonterminal_names": list, "start": str, "word_boundary": bytes,
               "source": (str, type(None)), "rewritten_terminals": dict, "profile": type(None),
               "start_rule": int, "load_warnings": list}
_ARRAY_DTYPES = {"terminal_is_ignore": np.bool_, "terminal_at_start": np.bool_, "rule_lhs": np.int32,
                 "rule_rhs_start": np.int32, "rhs": np.int32, "nullable": np.bool_}


def _strs(x, n=None):
    return isinstance(x, list) and all(isinstance(v, str) for v in x) and (n is None or len(x) == n)


def check_entry(meta, arrays):
    """Whether a ``grammar`` disk-cache entry decodes to a :class:`~cfgmask.grammar.Grammar`
    the runtime can use safely (``_fast/_earley.pyx`` indexes with its arrays
    unchecked), ``T`` terminals, ``N`` nonterminals, ``R`` rules:

    * ``meta``: ``imports`` a list, ``attrs`` exactly the attributes of
      :data:`_ATTR_TYPES` with those types after decoding, ``imports`` lists of
      str (``["file", path, sha256]`` or ``["package", name, path, sha256]``:
      see :func:`_file_unchanged` for how they are read); names and patterns
      lists of str (``T`` terminal names, distinct, and patterns; ``N >= 1``
      nonterminal names), ``terminal_flags`` ``T`` frozensets of str,
      ``start_rule`` 0, ``load_warnings`` pairs of str;
    * exactly the arrays of :data:`_ARRAY_DTYPES`, one-dimensional, of those
      dtypes (booleans stored as bytes 0/1): ``terminal_is_ignore`` and
      ``terminal_at_start`` ``[T]``, ``nullable`` ``[T + N]``;
    * ``rhs`` is the rules back to back, rule ``r``'s body (symbols in
      ``0 .. T+N-1``) followed by the sentinel ``-(r+1)``, starting at
      ``rule_rhs_start[r]``; ``rule_lhs`` ``[R]`` are nonterminals; rule 0 is
      the augmented start rule (one symbol: the runtime reads its end at
      ``rule_rhs_start[0] + 1``);
    * ``nullable`` is what the rules give (recomputed), terminals never.
    """
    attrs, imports = meta["attrs"], meta["imports"]
    if not isinstance(attrs, dict) or set(attrs) != set(_ATTR_TYPES) or not isinstance(imports, list):
        return False
    if not all(_strs(e) and ((e[:1] == ["file"] and len(e) == 3) or (e[:1] == ["package"] and len(e) == 4))
               for e in imports):
        return False
    if set(arrays) != set(_ARRAY_DTYPES):
        return False
    v = {name: _decode(value) for name, value in attrs.items()}
    if not all(isinstance(v[k], t) for k, t in _ATTR_TYPES.items()) or type(v["start_rule"]) is not int:
        return False
    names = v["terminal_names"]
    T = len(names)
    if not (_strs(names) and len(set(names)) == T and _strs(v["terminal_patterns"], T)
            and _strs(v["nonterminal_names"]) and v["nonterminal_names"] and v["start_rule"] == 0
            and len(v["terminal_flags"]) == T
            and all(isinstance(f, frozenset) and all(isinstance(x, str) for x in f) for f in v["terminal_flags"])
            and all(isinstance(w, list) and _strs(w, 2) for w in v["load_warnings"])
            and all(isinstance(a, str) and isinstance(b, str) for a, b in v["rewritten_terminals"].items())):
        return False
    N = len(v["nonterminal_names"])
    for name, dt in _ARRAY_DTYPES.items():
        a = arrays[name]
        if a.dtype != dt or a.ndim != 1 or (dt is np.bool_ and a.size and int(a.view(np.uint8).max()) > 1):
            return False
    lhs, start, rhs, nullable = arrays["rule_lhs"], arrays["rule_rhs_start"], arrays["rhs"], arrays["nullable"]
    R = len(lhs)
    if not (arrays["terminal_is_ignore"].shape == (T,) and arrays["terminal_at_start"].shape == (T,)
            and nullable.shape == (T + N,) and start.shape == (R,) and R >= 1):
        return False
    if int(lhs.min()) < T or int(lhs.max()) >= T + N:
        return False
    ends = np.flatnonzero(rhs < 0)
    if not (len(ends) == R and ends[-1] == len(rhs) - 1
            and (rhs[ends] == -np.arange(1, R + 1)).all()
            and (start == np.r_[0, ends[:-1] + 1]).all()
            and int(rhs.max()) < T + N and ends[0] == 1):
        return False
    return bool((_nullable_of(lhs, rhs, start, ends, T + N) == nullable).all())


def _nullable_of(lhs, rhs, start, ends, n_symbols):
    """``nullable`` recomputed from the flat rules (as :func:`cfgmask.frontends.cfg.nullable`):
    a fixpoint over whole arrays, a few rounds for real grammars (the depth of
    the longest chain of nullable rules); past 32 rounds, the linear worklist."""
    R = len(lhs)
    lengths = ends - start                  # body symbols per rule
    rule_of = np.repeat(np.arange(R), lengths + 1)
    in_body = rhs >= 0
    syms = np.where(in_body, rhs, 0)
    null = np.zeros(n_symbols, dtype=np.bool_)
    for _ in range(32):
        blocked = np.bincount(rule_of[in_body & ~null[syms]], minlength=R) > 0
        new = np.zeros(n_symbols, dtype=np.bool_)
        new[lhs[~blocked]] = True
        if (new == null).all():
            return null
        null = new
    rl = rhs.tolist()
    return nullable(n_symbols, [(a, rl[s:e]) for a, s, e in zip(lhs.tolist(), start.tolist(), ends.tolist())])


def store(key, grammar, used_files, key_digest=None):
    """Store ``grammar``; ``used_files`` is Lark's ``{path: sha256 of its text}``
    (``key_digest``: ``load``'s ``digest``).
    Returns False (and stores nothing) when an attribute cannot be encoded."""
    if key is None:
        return False
    attrs, arrays = {}, {}
    for name, value in vars(grammar).items():
        if isinstance(value, np.ndarray):
            arrays[name] = value
            continue
        try:
            attrs[name] = _encode(value)
        except TypeError:
            return False
    imports = []
    for path, digest in used_files.items():
        if isinstance(path, str):
            imports.append(["file", path, digest])
        elif isinstance(path, tuple) and len(path) == 2:  # lark's PackageResource(pkg, path)
            imports.append(["package", str(path[0]), str(path[1]), digest])
        else:
            return False
    # written by the cache's writer thread, as the compile's own tables are: the
    # file write was ~0.5 ms of sql.lark's load (a read of it waits for the write)
    return cache.store("grammar", key, {"attrs": attrs, "imports": imports}, arrays, key_digest,
                       background=True)


# an %import-ed grammar file larger than this is "changed" (never read whole)
_MAX_IMPORT_BYTES = 64 << 20
# packages whose files an entry may name: finding any other package could import
# it (run its code) just to check a cache entry
_IMPORT_PACKAGES = ("lark",)


def _file_unchanged(entry):
    """Whether an ``%import``-ed file still has the recorded sha256.  The entry comes
    from the cache file, so its path is read like an entry: a regular file (a
    link to one is fine: installed grammars may be links), bounded, opened
    without blocking; a package resource only from :data:`_IMPORT_PACKAGES`."""
    if entry[0] == "file":
        _, path, digest = entry
        if not isinstance(path, str):
            return False
    elif entry[0] == "package":
        _, package, path, digest = entry
        if package not in _IMPORT_PACKAGES or not isinstance(path, str) or ".." in path.split("/"):
            return False
        spec = importlib.util.find_spec(package)
        origin = getattr(spec, "origin", None)
        if not origin:
            return False
        path = os.path.join(os.path.dirname(origin), *path.split("/"))
    else:
        return False
    data = cache.read_regular_file(path, _MAX_IMPORT_BYTES, follow_links=True)
    if not data:
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if entry[0] == "file":          # as open(path, encoding="utf-8") reads it
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return hashlib.sha256(text.encode("utf8")).hexdigest() == digest


def _encode(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, list):
        return [_encode(x) for x in v]
    if isinstance(v, tuple):
        return {"__tuple__": [_encode(x) for x in v]}
    if isinstance(v, frozenset):
        return {"__frozenset__": sorted((_encode(x) for x in v), key=repr)}
    if isinstance(v, bytes):
        return {"__bytes__": v.hex()}
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        if any(k.startswith("__") for k in v):
            raise TypeError("dict keys starting with __ are reserved")
        return {"__dict__": {k: _encode(x) for k, x in v.items()}}
    raise TypeError(f"cannot cache a {type(v).__name__}")


def _decode(v):
    if isinstance(v, list):
        return [_decode(x) for x in v]
    if isinstance(v, dict):
        (tag, x), = v.items()
        if tag == "__tuple__":
            return tuple(_decode(y) for y in x)
        if tag == "__frozenset__":
            return frozenset(_decode(y) for y in x)
        if tag == "__bytes__":
            return bytes.fromhex(x)
        if tag == "__dict__":
            return {k: _decode(y) for k, y in x.items()}
        raise ValueError(f"unknown tag {tag}")
    return v
