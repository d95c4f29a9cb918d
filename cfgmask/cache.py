"""Caches of compile-time artefacts (prepared vocabularies, lexer tables, grammars):
one file format on disk, one bounded memo in memory (:class:`BoundedMemo`), and
one look-up order over both (:func:`cached_build`).

Everything here is an optimisation: a miss, a disabled cache, an unreadable or
unwritable directory all fall back to building the artefact, never to an error
and never to trusting a file that fails a check.

Where: ``$CFGMASK_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/cfgmask``, else
``~/.cache/cfgmask``.  ``CFGMASK_CACHE=0`` (or ``off``/``false``/``no``)
disables reading and writing.  Both are read at every call, so a test or a
server can change them at run time.

One entry is one file ``<dir>/<kind>/<digest>.cfgm`` where ``digest`` is the
sha256 of the canonical JSON of its key (a dict: what the artefact was built
from, the builder's version, a hash of the source code that builds it, the
container format version).  File layout::

    magic  b"CFGMASK\\x01"                   8 bytes
    header length (little-endian uint32)     4 bytes
    payload length (little-endian uint64)    8 bytes
    crc32 of header + payload (uint32)       4 bytes
    header (UTF-8 JSON: format, kind, key, meta, array table)
    padding to 64 bytes, then the arrays, each 64-byte aligned

Invariants:

* a file is trusted only if magic, format version, lengths, the crc32 of
  header and payload, the kind and the *full* key (not just its digest) all
  match; anything else is a miss (counted in :data:`stats` as ``rejected``)
  and the caller rebuilds and overwrites it;
* writes go to a temporary file in the same directory and are published with
  ``os.replace``, so readers see either the old complete file or the new
  complete file, and concurrent writers of the same key just race to publish
  identical content;
* the payload is read into memory (``read``, not ``mmap``): a file replaced
  or truncated later by another process cannot fault a process that loaded it;
* arrays come back read-only (``np.frombuffer`` over an immutable ``bytes``);
* metadata is JSON, never pickle, so a cache directory shared with others can
  at worst cause a rebuild, not run code;
* only a regular file is read: the entry path is opened with ``O_NOFOLLOW``
  and ``O_NONBLOCK`` and checked with ``fstat``, so a FIFO (which would block
  ``open``), a device, a socket or a symbolic link (even to a regular file:
  entries are only ever written as regular files, and a link could point at
  ``/dev/zero`` or another user's file) is a miss, and ``store`` replaces the
  link itself, never its target;
* a file larger than :data:`MAX_ENTRY_BYTES` is a miss and never more than
  that is read (``store`` does not write such entries);
* a correct checksum proves nothing about the arrays: every caller passes a
  ``validate`` function that checks each array's dtype, shape and value range
  against the invariants the Cython runtime indexes with unchecked, and an
  entry that fails it is a miss (``rejected``) like a damaged one.

crc32 guards against accidental damage (truncation, bit flips, a foreign
file), not against someone who can write the cache directory: such a person
can recompute it.  What they can do is bounded by the checks above: an entry
whose arrays break an invariant is rebuilt, so no entry can crash the
process, hang it or make it read without bound.  An entry whose arrays are
in range but wrong (a transition to another valid state) passes, and gives
wrong masks: share a cache directory only with those you would let write
the package itself (tests/test_cache_tamper.py).  It checks 8 MB in 2-4 ms here, 2-3x less
than sha256 (``benchmarks/run_ttfm.py --sections hash``).
"""

import atexit
import hashlib
import json
import os
import stat
import struct
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

import numpy as np

from cfgmask.compiled_python import source_file

__all__ = ["FORMAT_VERSION", "cache_dir", "enabled", "load", "store", "flush", "entry_path",
           "key_digest", "code_fingerprint", "stats", "BoundedMemo", "cached_build"]

FORMAT_VERSION = 1
MAGIC = b"CFGMASK\x01"
_PREFIX = struct.Struct("<8sIQI")  # magic, header length, payload length, crc32
_ALIGN = 64
_OFF_VALUES = ("0", "off", "false", "no", "disable", "disabled")
#: the largest entry read or written (bytes); a larger file is a miss and is
#: never read (the biggest real entries, JavaScript lexer and slice tables on a
#: 128k vocabulary, are tens of MB)
MAX_ENTRY_BYTES = 1 << 30
_O_READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
    | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
#: what :func:`_parse` and a ``validate`` function may raise on a crafted entry:
#: all of them make the entry a miss (MemoryError: a header that asks for a
#: huge array; RecursionError: deeply nested JSON)
_BAD_ENTRY = (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError,
              RecursionError, MemoryError)

#: counters for tests and benchmarks: hits, misses, rejected (a file failed a
#: check), writes, write_errors
stats = {"hits": 0, "misses": 0, "rejected": 0, "writes": 0, "write_errors": 0}
_stats_lock = threading.Lock()


def _count(what):
    with _stats_lock:
        stats[what] += 1


def enabled():
    """False when ``CFGMASK_CACHE`` is ``0``/``off``/``false``/``no``."""
    return os.environ.get("CFGMASK_CACHE", "1").strip().lower() not in _OFF_VALUES


def cache_dir():
    """The cache directory (a :class:`~pathlib.Path`, maybe not created yet), or
    ``None`` when the cache is disabled."""
    if not enabled():
        return None
    d = os.environ.get("CFGMASK_CACHE_DIR")
    if d:
        return Path(d).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "cfgmask"


def _canonical(key):
    return json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def key_digest(key, canonical_key=None):
    """sha256 hex of the canonical JSON of ``key`` (a JSON-able dict;
    ``canonical_key``: that JSON, when the caller has made it already)."""
    if canonical_key is None:
        canonical_key = _canonical(key)
    return hashlib.sha256(canonical_key.encode()).hexdigest()


def entry_path(kind, key, digest=None):
    """Where the entry for ``(kind, key)`` lives, or ``None`` when disabled
    (``digest``: ``key_digest(key)``, when the caller has it already)."""
    d = cache_dir()
    if d is None:
        return None
    return d / kind / f"{(digest or key_digest(key))[:40]}.cfgm"


# Artefacts that took less than this to build stay in memory only: reading a
# cache file back costs about as much, and a server compiling one JSON Schema
# grammar after another would otherwise write files it never reads again.
PERSIST_ABOVE_S = 0.003

_code_hashes = {}


def code_fingerprint(*modules):
    """sha256 (hex, 16 chars) of the source files of ``modules`` (module objects or
    dotted names).

    Part of every cache key, so that changing the code that builds an artefact
    invalidates its cached copies even if nobody bumps a version number.
    """
    names = tuple(sorted(m if isinstance(m, str) else m.__name__ for m in modules))
    h = _code_hashes.get(names)
    if h is None:
        digest = hashlib.sha256()
        for name in names:
            mod = sys.modules.get(name)
            if mod is None:
                import importlib
                mod = importlib.import_module(name)
            path = getattr(mod, "__file__", None)
            if path:
                # a module compiled from the .py beside it (compiled_python.py): the
                # source names the code, and hashing megabytes of machine code costs ms
                path = source_file(path)
            digest.update(name.encode() + b"\0")
            if path:
                try:
                    with open(path, "rb") as f:
                        digest.update(f.read())
                except OSError:
                    digest.update(b"<unreadable>")
        h = _code_hashes[names] = digest.hexdigest()[:16]
    return h


def _aligned(n):
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def store(kind, key, meta, arrays, digest=None, *, background=False, canonical_key=None):
    """Write one entry; returns True on success (False: disabled or an OS error).

    ``meta`` is a JSON-able dict, ``arrays`` a dict of name -> numpy array
    (numeric dtypes; written C-contiguous); ``digest`` as for :func:`entry_path`;
    ``canonical_key``: the key's canonical JSON, when the caller has it already.

    ``background``: serialise now (a snapshot of the arrays), checksum and write
    on this process's writer thread, and return True at once (see
    :func:`flush`); a compile then does not wait for its own cache files.
    """
    path = entry_path(kind, key, digest)
    if path is None:
        return False
    if sum(_aligned(np.asarray(a).nbytes) for a in arrays.values()) > MAX_ENTRY_BYTES:
        return False                # load would refuse it
    table = []
    chunks = []
    pos = 0
    for name, a in arrays.items():
        a = _contiguous(a)
        if a.dtype.hasobject:
            raise TypeError(f"cache entry {kind}: array {name} has an object dtype")
        table.append([name, a.dtype.str, list(a.shape), pos, a.nbytes])
        pad = _aligned(a.nbytes) - a.nbytes
        if background and not a.flags.writeable and a.base is None and a.ndim:
            # frozen by cached_build and owning its data: nothing can change it, so the
            # writer reads it in place (the copies were ~1 ms of a cold javascript.lark,
            # 5.7 MB of fresh pages)
            chunks.append(a.reshape(-1).view(np.uint8))
        else:
            chunks.append(a.tobytes())
        if pad:
            chunks.append(b"\0" * pad)
        pos += a.nbytes + pad
    if canonical_key is None:
        canonical_key = _canonical(key)
    header = json.dumps({"format": FORMAT_VERSION, "kind": kind, "key": canonical_key,
                         "meta": meta, "arrays": table},
                        sort_keys=True, separators=(",", ":")).encode()
    head_pad = _aligned(_PREFIX.size + len(header)) - _PREFIX.size - len(header)
    header += b" " * head_pad  # JSON tolerates trailing blanks
    if background:
        _submit(path, header, pos, chunks)
        return True
    return _write_entry(path, header, pos, chunks)


def _write_entry(path, header, pos, chunks):
    """Checksum and publish one serialised entry (see :func:`store`)."""
    crc = zlib.crc32(header)
    for c in chunks:
        crc = zlib.crc32(c, crc)
    prefix = _PREFIX.pack(MAGIC, len(header), pos, crc)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".cfgm", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(prefix)
            f.write(header)
            for c in chunks:
                f.write(c)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        _count("write_errors")
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    _count("writes")
    return True


# ---------------------------------------------------------------- background writes
#
# A cold compile writes its artefacts (lexer tables, slice tables: up to tens
# of MB) for the next process; checksumming and writing them took about a
# fifth of json.lark's time to first mask.  One writer thread per process
# does it after the compile has returned.  Invariants: a load of an entry
# whose write is pending waits for that write (so a process reads its own
# entries back exactly as before); the interpreter's exit waits for pending
# writes (at most _EXIT_WAIT_S); a forked child drops the parent's queue (its
# thread did not survive the fork, and the parent writes those entries).

_writes = []                      # [(path, header, payload length, chunks)] not yet written
_pending = {}                     # normalised path -> number of queued writes of it
_write_cv = threading.Condition()
_writer = None                    # the writer thread of this process, once started
_EXIT_WAIT_S = 30.0


def _submit(path, header, pos, chunks):
    global _writer
    with _write_cv:
        _writes.append((path, header, pos, chunks))
        name = os.path.normpath(str(path))
        _pending[name] = _pending.get(name, 0) + 1
        if _writer is None:
            _writer = threading.Thread(target=_write_loop, name="cfgmask-cache-writer", daemon=True)
            _writer.start()
        _write_cv.notify_all()


def _write_loop():
    while True:
        with _write_cv:
            while not _writes:
                _write_cv.wait()
            path, header, pos, chunks = _writes[0]
        try:
            _write_entry(path, header, pos, chunks)
        except Exception:  # noqa: BLE001 - a cache write never raises into anyone
            _count("write_errors")
        with _write_cv:
            if _writes and _writes[0][0] is path:
                _writes.pop(0)
            name = os.path.normpath(str(path))
            left = _pending.get(name, 1) - 1
            if left > 0:
                _pending[name] = left
            else:
                _pending.pop(name, None)
            _write_cv.notify_all()


def flush(timeout=None):
    """Wait until every background write of this process is on disk (or
    ``timeout`` seconds); returns True when none is left."""
    deadline = None if timeout is None else time.monotonic() + timeout
    with _write_cv:
        while _writes:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            _write_cv.wait(left)
    return True


def _wait_written(path):
    """Wait (bounded) for a pending background write of ``path``."""
    if not _pending:
        return
    path = os.path.normpath(path)
    deadline = time.monotonic() + _EXIT_WAIT_S
    with _write_cv:
        while path in _pending and time.monotonic() < deadline:
            _write_cv.wait(0.1)


def _after_fork_in_child():
    global _writer, _write_cv
    _writer = None
    _writes.clear()
    _pending.clear()
    _write_cv = threading.Condition()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _flush_at_exit():
    flush(_EXIT_WAIT_S)


atexit.register(_flush_at_exit)


def _entry_file(kind, key, digest):
    """:func:`entry_path` as a plain string, without pathlib (a miss is looked up at
    every compile of a new grammar: pathlib and a raised FileNotFoundError were
    most of its cost)."""
    if not enabled():
        return None
    env = os.environ
    d = env.get("CFGMASK_CACHE_DIR")
    if d:
        d = os.path.expanduser(d)
    else:
        xdg = env.get("XDG_CACHE_HOME")
        base = os.path.expanduser(xdg) if xdg else os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "cfgmask")
    return os.path.join(d, kind, f"{(digest or key_digest(key))[:40]}.cfgm")


def load(kind, key, digest=None, validate=None, canonical_key=None):
    """``(meta, arrays)`` of a valid entry, or ``None`` (missing, disabled, or failing
    any check; see the module docstring).  Arrays are read-only.  ``digest`` as
    for :func:`entry_path`, ``canonical_key`` as for :func:`store`.

    ``validate(meta, arrays)``: the artefact's own checks (dtypes, shapes, value
    ranges); it returns false or raises (ValueError, TypeError, KeyError,
    IndexError...) to reject the entry, which is then a miss like a damaged file.
    """
    path = _entry_file(kind, key, digest)
    if path is None:
        return None
    _wait_written(path)
    if not os.path.lexists(path):   # (still checked by open: it may go in between)
        _count("misses")
        return None
    data = _read_entry(path)
    if not data:
        _count("misses" if data is None else "rejected")
        return None
    try:
        got = _parse(data, kind, canonical_key if canonical_key is not None else _canonical(key))
        if got is not None and validate is not None and not validate(*got):
            got = None
    except _BAD_ENTRY:
        got = None
    if got is None:
        _count("rejected")
        return None
    _count("hits")
    return got


def _read_entry(path):
    """The bytes of the entry file at ``path`` (see :func:`read_regular_file`); links
    are refused."""
    return read_regular_file(path, MAX_ENTRY_BYTES, follow_links=False)


def read_regular_file(path, max_bytes, follow_links=False):
    """The bytes of the regular file at ``path``; ``None`` when it is gone, ``False``
    when it is not a regular file (a FIFO, device, socket; a symbolic link unless
    ``follow_links``, and then one whose target is not a regular file), is larger
    than ``max_bytes``, changed size while read, or on any other OS error.
    Never blocks on open (``O_NONBLOCK``: a FIFO without a writer), never reads
    more than the file's size plus one byte (to notice growth)."""
    flags = _O_READ if not follow_links else _O_READ & ~getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError):   # ELOOP: a link (O_NOFOLLOW); no access; a NUL
        return False
    try:
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
                return False
            data = f.read(st.st_size + 1)
        return data if len(data) == st.st_size else False
    except (OSError, MemoryError, OverflowError):
        return False


def _parse(data, kind, canonical_key):
    if len(data) < _PREFIX.size:
        return None
    magic, head_len, payload_len, crc = _PREFIX.unpack_from(data, 0)
    if magic != MAGIC:
        return None
    start = _PREFIX.size + head_len
    if start % _ALIGN or len(data) != start + payload_len:
        return None
    view = memoryview(data)
    if zlib.crc32(view[_PREFIX.size:]) != crc:
        return None
    header = json.loads(bytes(view[_PREFIX.size:start]))
    if not isinstance(header, dict):
        return None
    if (header.get("format") != FORMAT_VERSION or header.get("kind") != kind
            or header.get("key") != canonical_key):
        return None
    meta = header.get("meta", {})
    table = header["arrays"]
    if not isinstance(meta, dict) or not isinstance(table, list):
        return None
    arrays = {}
    for name, dtype, shape, off, nbytes in table:
        if not (isinstance(name, str) and isinstance(dtype, str) and isinstance(shape, list)
                and all(type(d) is int and 0 <= d <= payload_len for d in shape)
                and type(off) is int and type(nbytes) is int and name not in arrays):
            return None
        dt = np.dtype(dtype)
        if dt.hasobject or off < 0 or nbytes < 0 or off + nbytes > payload_len:
            return None
        count = 1
        for d in shape:
            count *= d              # Python ints: no wrap-around
        if count * dt.itemsize != nbytes:
            return None
        if count == 0:
            a = np.zeros(shape, dtype=dt)
            a.flags.writeable = False
        else:
            a = np.frombuffer(data, dtype=dt, count=count, offset=start + off).reshape(tuple(shape))
        arrays[name] = a
    return meta, arrays


class BoundedMemo:
    """A thread-safe in-memory memo of at most ``size`` entries: the one memo of
    every compile stage (grammars, lexer tables, slices, regex automata,
    compiled grammars in the integrations).

    ``order="lru"``: a hit makes the entry the newest, so the entries in use
    stay; ``order="fifo"``: entries age from insertion only, for memos read
    far more often than they are written, where the bookkeeping of a hit
    would cost more than a rare rebuild.  The oldest entry goes first.

    Values are shared, not copied: store only immutable values (read-only
    arrays, frozen objects).  A failed build is never stored, so a bad input
    raises the same error every time.
    """

    __slots__ = ("size", "order", "_data", "_lock")

    def __init__(self, size, order="lru"):
        if order not in ("lru", "fifo"):
            raise ValueError(f"BoundedMemo order must be 'lru' or 'fifo', not {order!r}")
        if size < 1:
            raise ValueError(f"BoundedMemo size must be at least 1, not {size!r}")
        self.size = int(size)
        self.order = order
        self._data = {}     # insertion order is age: the first key is the oldest
        self._lock = threading.Lock()

    def get(self, key, default=None):
        """The value stored under ``key`` (refreshed under ``"lru"``), else ``default``."""
        if self.order == "fifo":
            # a hit changes nothing, and one dict read is atomic: no lock on the hot path
            value = self._data.get(key, _MISSING)
            return default if value is _MISSING else value
        with self._lock:
            value = self._data.get(key, _MISSING)
            if value is _MISSING:
                return default
            if self.order == "lru":
                del self._data[key]
                self._data[key] = value
            return value

    def put(self, key, value):
        """Store ``value`` under ``key`` as the newest entry, evicting the oldest past ``size``."""
        with self._lock:
            self._data.pop(key, None)
            self._data[key] = value
            while len(self._data) > self.size:
                del self._data[next(iter(self._data))]

    def pop(self, key, default=None):
        with self._lock:
            return self._data.pop(key, default)

    def clear(self):
        with self._lock:
            self._data.clear()

    def __contains__(self, key):
        with self._lock:
            return key in self._data

    def __len__(self):
        return len(self._data)

    def keys(self):
        """The keys, oldest first (a snapshot)."""
        with self._lock:
            return list(self._data)


_MISSING = object()


def _contiguous(a):
    """``a`` as a C-contiguous array of the same shape (``np.ascontiguousarray``
    turns a 0-d array into a 1-d one)."""
    a = np.asarray(a)
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _frozen(a):
    """``a`` (C-contiguous) marked read-only."""
    a = _contiguous(a)
    a.flags.writeable = False
    return a


def cached_build(kind, key, build, *, memo=None, memory_key=None, validate=None, persist=None):
    """``(meta, arrays, source)`` of the artefact ``kind`` named by ``key``: from
    ``memo``, else from the disk cache, else ``build()``; ``source`` is
    ``"memory"``, ``"disk"`` or ``"built"``.

    The one look-up order of every stage, so that a stage states only what is
    particular to it:

    * ``key``: the disk key (a dict, see :func:`key_digest`), or a function
      returning it, called only on a memory miss (keys that hash source code or
      long pattern lists are not free); ``None``: memory only, never on disk.
    * ``build()`` returns ``(meta, arrays)``; whatever it raises propagates and
      nothing is stored.
    * ``memo``: a :class:`BoundedMemo` keyed by ``memory_key`` (default: the
      disk key's digest), holding ``(meta, arrays)``.
    * ``validate(meta, arrays)``: the artefact's own checks on a disk entry
      (see :func:`load`).
    * ``persist(build_s)``: whether a fresh build that took ``build_s`` seconds
      is worth a disk entry (default: always).  Entries that a fresh process
      rebuilds faster than it reads them only cost disk space.
    """
    if memo is not None and memory_key is not None:
        got = memo.get(memory_key)
        if got is not None:
            return got[0], got[1], "memory"
    if callable(key):
        key = key()
    digest = canonical = None
    if key is not None:
        # one canonical JSON for the digest, the check of a hit and the header of
        # a new entry (keys that hold long lists are not free to serialise)
        canonical = _canonical(key)
        digest = key_digest(key, canonical)
        if memo is not None and memory_key is None:
            memory_key = digest
            got = memo.get(memory_key)
            if got is not None:
                return got[0], got[1], "memory"
        got = load(kind, key, digest, validate, canonical)
        if got is not None:
            if memo is not None:
                memo.put(memory_key, got)
            return got[0], got[1], "disk"
    t0 = time.perf_counter()
    meta, arrays = build()
    # read-only from here, as entries loaded from disk are: the memo shares them with
    # every later compile, and the background write reads them in place
    arrays = {name: _frozen(a) for name, a in arrays.items()}
    if key is not None and (persist is None or persist(time.perf_counter() - t0)):
        store(kind, key, meta, arrays, digest, background=True, canonical_key=canonical)
    if memo is not None and memory_key is not None:
        memo.put(memory_key, (meta, arrays))
    return meta, arrays, "built"
