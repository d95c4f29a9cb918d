"""Disk cache of normalised grammars: Lark grammar text -> :class:`~cfgmask.grammar.Grammar`.

Loading a grammar with Lark costs 10 ms (JSON) to 100-150 ms (SQL,
JavaScript), more than the whole rest of a compile on a cache hit; importing
``lark`` alone costs ~30 ms.  ``Grammar.from_lark`` therefore asks this module
first, and only runs Lark on a miss.

Key: the grammar text, start rule, import paths, source path and
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

Entries read in this process are also kept in memory, the last
:data:`_MEMORY_SIZE` of them, keyed by the cache directory and the key's
digest, so that compiling the same grammar again skips reading and checking
the file (about 0.2 ms of a 1-2 ms JSON compile).  The ``%import``\\ ed files
are still read and hashed on every hit.  A disabled cache bypasses the memory
too.
"""

import collections
import hashlib
import importlib.util
import os
import sys
import threading

import numpy as np

from . import cache

GRAMMAR_CACHE_FORMAT = 2     # 2: Grammar.terminal_at_start
_LARK_FILES = ("__init__.py", "lark.py", "load_grammar.py", "grammar.py", "lexer.py",
               "parse_tree_builder.py", "grammars/common.lark")

_lark_hash = None
_MEMORY_SIZE = 32
_memory = collections.OrderedDict()   # (cache dir, digest) -> (meta, arrays), oldest first
_memory_lock = threading.Lock()


def _memory_key(key):
    d = cache.cache_dir()
    return None if d is None else (str(d), cache.key_digest(key))


def _remember(mkey, got):
    with _memory_lock:
        _memory[mkey] = got
        _memory.move_to_end(mkey)
        while len(_memory) > _MEMORY_SIZE:
            _memory.popitem(last=False)


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
    from . import grammar
    if not all(isinstance(p, (str, os.PathLike)) for p in import_paths):
        return None
    if not (word_boundary is None or isinstance(word_boundary, str)):
        return None
    return {"format": GRAMMAR_CACHE_FORMAT, "text": text, "start": start,
            "import_paths": [os.path.abspath(os.fspath(p)) for p in import_paths],
            "word_boundary": word_boundary, "source": None if source is None else str(source),
            "python": list(sys.version_info[:2]), "lark": _lark_fingerprint(),
            "code": cache.code_fingerprint(grammar, sys.modules[__name__])}


def load(key):
    """The cached :class:`~cfgmask.grammar.Grammar` for ``key``, or ``None``."""
    if key is None:
        return None
    mkey = _memory_key(key)
    if mkey is None:
        return None
    with _memory_lock:
        got = _memory.get(mkey)
    if got is None:
        got = cache.load("grammar", key)
        if got is None:
            return None
        _remember(mkey, got)
    meta, arrays = got
    try:
        if not all(_file_unchanged(entry) for entry in meta["imports"]):
            return None
        from .grammar import Grammar
        g = object.__new__(Grammar)
        for name, value in meta["attrs"].items():
            setattr(g, name, _decode(value))
        for name, a in arrays.items():
            setattr(g, name, a)
        return g
    except (KeyError, TypeError, ValueError):
        return None


def store(key, grammar, used_files):
    """Store ``grammar``; ``used_files`` is Lark's ``{path: sha256 of its text}``.
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
    return cache.store("grammar", key, {"attrs": attrs, "imports": imports}, arrays)


def _file_unchanged(entry):
    if entry[0] == "file":
        _, path, digest = entry
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            return False
    elif entry[0] == "package":
        _, package, path, digest = entry
        import pkgutil
        try:
            data = pkgutil.get_data(package, path)
        except (OSError, ImportError):
            return False
        if data is None:
            return False
        text = data.decode("utf-8")
    else:
        return False
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
