"""Disk cache entries tampered with *valid* crc32s (issue 26): a crafted entry must
be a miss that is rebuilt, never a crash, a hang or an unbounded read.

Each check runs a child process (this file run as a script), so a SIGSEGV or a
hang fails the test instead of killing pytest.  The child compiles the JSON
grammar against a small synthetic vocabulary (every artefact kind: grammar,
lexer, vocabulary trie/first_bytes/subtree_bytes, slice candidates, choice and
tables), tampers entries with a recomputed crc32, compiles again and reports
the masks of a fixed document; the oracle is the same run with
``CFGMASK_CACHE=0``.

* crafted cases: the ones the review found (lexer ``offsets`` negative or
  huge, lexer ``trans`` reshaped to the same byte count, ``token_same_next``
  huge, slices ``node_token`` out of range), a FIFO and a symlink to
  ``/dev/zero`` at an entry's path;
* fuzz: random arrays, values, shapes, dtypes, offsets, dropped/extra arrays
  and meta for every kind.  Every rejected entry must give the cache-off masks
  and be rewritten (byte for byte the original); an entry the checks accept
  (in-range values: a flipped 0/1 flag, a transition to another valid state)
  may give other masks -- crc32 is not authentication, see cfgmask/cache.py --
  but must not crash or raise anything but a ``CfgmaskError``.  A small run is
  part of the suite, the long one is ``-m slow``.
"""

import hashlib
import json
import os
import random
import resource
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KINDS = ("grammar", "lexer", "vocab", "slice-candidates", "slice-choice", "slices")
DOC = b'{"abc": [1, -2.5e3, true, null], "xyz": "q\\n", "n": 12, "s": "hello world"}'


# ------------------------------------------------------------------ entry files

_PREFIX = struct.Struct("<8sIQI")


def read_entry(path):
    """``(header dict, {name: array copy})`` of an entry file (no checks but the layout)."""
    data = open(path, "rb").read()
    magic, head_len, payload_len, crc = _PREFIX.unpack_from(data, 0)
    start = _PREFIX.size + head_len
    header = json.loads(data[_PREFIX.size:start])
    arrays = {}
    for name, dtype, shape, off, nbytes in header["arrays"]:
        a = np.frombuffer(data, dtype=np.dtype(dtype), count=nbytes // np.dtype(dtype).itemsize,
                          offset=start + off)
        arrays[name] = a.reshape(shape).copy()
    return header, arrays


def write_entry(path, header, arrays, table_fn=None):
    """Write ``arrays`` under ``header`` (its kind, key, meta) with a correct crc32,
    as cache.store lays it out; ``table_fn(table, payload_len)`` may rewrite the
    array table (names, dtypes, shapes, offsets) before it is hashed."""
    table, chunks, pos = [], [], 0
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        table.append([name, a.dtype.str, list(a.shape), pos, a.nbytes])
        pad = (-a.nbytes) % 64
        chunks.append(a.tobytes() + b"\0" * pad)
        pos += a.nbytes + pad
    if table_fn is not None:
        table = table_fn(table, pos)
    h = dict(header, arrays=table)
    head = json.dumps(h, sort_keys=True, separators=(",", ":")).encode()
    head += b" " * ((-(_PREFIX.size + len(head))) % 64)
    payload = b"".join(chunks)
    crc = zlib.crc32(payload, zlib.crc32(head))
    tmp = str(path) + ".tmp"
    with open(tmp, "wb") as f:
        f.write(_PREFIX.pack(b"CFGMASK\x01", len(head), len(payload), crc) + head + payload)
    os.replace(tmp, path)


def entries(cdir, kind):
    if "cfgmask.cache" in sys.modules:    # this process compiled: its stages write on a thread
        sys.modules["cfgmask.cache"].flush()
    d = os.path.join(cdir, kind)
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".cfgm")) if os.path.isdir(d) else []


def find_entry(cdir, kind, has_array=None, part=None):
    """The entry of ``kind`` holding array ``has_array`` (vocab: of part ``part``)."""
    for p in entries(cdir, kind):
        header, arrays = read_entry(p)
        if has_array is not None and has_array not in arrays:
            continue
        if part is not None and json.loads(header["key"]).get("part") != part:
            continue
        return p
    raise AssertionError(f"no {kind} entry with {has_array or part} in {cdir}")


# ------------------------------------------------------------------ child side

def small_vocab():
    """1,500 tokens: all bytes, words, space-words, quoted pieces, digits, so the
    JSON grammar keeps a few slices (a slice needs 256 tokens)."""
    from cfgmask.engine.vocab import Vocabulary
    rng = random.Random(0)
    toks = [bytes([b]) for b in range(256)]
    seen = set(toks)
    letters = b"abcdefghijklmnopqrstuvwxyz"
    while len(toks) < 1500:
        k = rng.random()
        w = bytes(rng.choice(letters) for _ in range(rng.randint(2, 7)))
        t = (w if k < .4 else b" " + w if k < .6 else b'"' + w if k < .7 else w + b'"' if k < .8
             else bytes(rng.choice(b"0123456789") for _ in range(rng.randint(2, 4))))
        if t not in seen:
            seen.add(t)
            toks.append(t)
    return Vocabulary(toks + [None], eos_token_ids=[len(toks)])


def masks_digest():
    """Compile JSON on a fresh vocabulary object with every in-memory memo dropped
    (so each artefact comes from disk or a build), and hash its masks along DOC."""
    import cfgmask
    from cfgmask.frontends import grammar_cache
    from cfgmask.engine import lexer, slices
    from cfgmask.grammar import Grammar
    lexer._memory.clear()
    grammar_cache._memory.clear()
    slices._DERIVED.clear()
    slices._CANDIDATE_KEYS.clear()
    vocab = small_vocab()
    # eager: lazy slices (the default) are built only once the walk is hot,
    # which a 1,500-token vocabulary never is, and every slice entry must be read here
    c = cfgmask.compile(Grammar.builtin("json"), vocab, slices="eager")
    vocab.prepared().part("subtree_bytes")   # the one part a compile does not read
    m = c.matcher()
    h = hashlib.sha256()
    for b in DOC:
        h.update(np.asarray(m.allowed_tokens()).tobytes())
        if m.consume_bytes(bytes([b])) != 1:
            h.update(b"refused")
            break
    h.update(np.asarray(m.allowed_tokens()).tobytes())
    return h.hexdigest()


def child_main(argv):
    """``child CACHE_DIR PLAN.json``: prime the cache, then for each step of the plan
    tamper, compile, report one JSON line (flushed, so the parent knows which step
    a crash hit)."""
    from cfgmask import cache
    from cfgmask.errors import CfgmaskError
    cdir, plan_path = argv
    os.environ["CFGMASK_CACHE_DIR"] = cdir
    cache.PERSIST_ABOVE_S = 0.0
    os.environ["CFGMASK_CACHE"] = "0"
    reference = masks_digest()
    del os.environ["CFGMASK_CACHE"]
    primed = masks_digest()
    originals = {p: open(p, "rb").read() for k in KINDS for p in entries(cdir, k)}
    print(json.dumps({"reference": reference, "primed": primed,
                      "kinds": {k: len(entries(cdir, k)) for k in KINDS}}), flush=True)
    plan = json.load(open(plan_path))
    for step in plan:
        print(json.dumps({"start": step}), flush=True)
        path = apply_step(cdir, step, sorted(originals))
        step = dict(step)
        before = dict(cache.stats)
        try:
            digest, error = masks_digest(), None
        except CfgmaskError as e:
            digest, error = None, f"{type(e).__name__}: {e}"
        rejected = cache.stats["rejected"] - before["rejected"]
        cache.flush()       # the rebuilt entry is written on the cache's writer thread
        now = open(path, "rb").read() if os.path.lexists(path) and os.path.isfile(path) \
            and not os.path.islink(path) else None
        print(json.dumps({"step": step, "digest": digest, "error": error, "rejected": rejected,
                          "restored": now == originals.get(path)}), flush=True)
        for p, data in originals.items():   # an accepted entry stays tampered: undo it
            if os.path.islink(p) or not os.path.isfile(p) or open(p, "rb").read() != data:
                if os.path.lexists(p):
                    os.unlink(p)
                with open(p, "wb") as f:
                    f.write(data)
        for p in (p for k in KINDS for p in entries(cdir, k)):
            if p not in originals:          # made under a tampered key (a valid other choice)
                os.unlink(p)
    print(json.dumps({"done": len(plan)}), flush=True)


# ------------------------------------------------------------------ tampering

def apply_step(cdir, step, originals):
    """Tamper one entry as ``step`` says (a fuzz step: one of ``originals``); returns
    its path."""
    how = step["how"]
    if how == "fifo":
        p = find_entry(cdir, step["kind"], step.get("array"), step.get("part"))
        os.unlink(p)
        os.mkfifo(p)
        return p
    if how == "devzero":
        p = find_entry(cdir, step["kind"], step.get("array"), step.get("part"))
        os.unlink(p)
        os.symlink("/dev/zero", p)
        return p
    if how == "crafted":
        p = find_entry(cdir, step["kind"], step.get("array"), step.get("part"))
        header, arrays = read_entry(p)
        CRAFTED[step["case"]](header, arrays)
        write_entry(p, header, arrays)
        return p
    assert how == "fuzz"
    paths = [p for p in originals if os.path.basename(os.path.dirname(p)) == step["kind"]]
    rng = random.Random(step["seed"])
    p = paths[rng.randrange(len(paths))]
    header, arrays = read_entry(p)
    table_fn = fuzz(rng, header, arrays)
    write_entry(p, header, arrays, table_fn)
    step["did"] = header.get("did")
    return p


def _lexer_offsets_negative(header, a):
    off = a["offsets"].copy()
    off[1] = -(1 << 20)
    a["offsets"] = off


def _lexer_offsets_huge(header, a):
    off = a["offsets"].copy()
    off[1:-1] = off[1:-1] + (1 << 28)
    a["offsets"] = off


def _lexer_trans_reshaped(header, a):
    t = a["trans"]
    S, C = t.shape
    # the same byte count, other columns: rows now run into the next state's
    for k in range(C + 1, C * S + 1):
        if (S * C) % k == 0 and k <= 256:
            a["trans"] = t.reshape(-1, k)
            return
    a["trans"] = t.reshape(S * C, 1)


def _vocab_same_next_huge(header, a):
    sn = a["token_same_next"].copy()
    sn[:] = np.int32(2 ** 31 - 1)
    a["token_same_next"] = sn


def _slices_node_token_out_of_range(header, a):
    nt = a["node_token"].copy()
    nt[nt >= 0] += 1 << 24
    a["node_token"] = nt


def _candidates_extra_key(header, a):
    # well-formed, but one more candidate than the grammar has: the indices
    # derived from it ran past the derived list (an IndexError out of compile)
    meta = header["meta"]
    meta["keys"] = meta["keys"] + ["ab" * 32]
    meta["first_bytes"] = meta["first_bytes"] + ["ff" * 32]


CRAFTED = {"lexer-offsets-negative": _lexer_offsets_negative,
           "slice-candidates-extra-key": _candidates_extra_key,
           "lexer-offsets-huge": _lexer_offsets_huge,
           "lexer-trans-reshaped": _lexer_trans_reshaped,
           "vocab-token-same-next-huge": _vocab_same_next_huge,
           "slices-node-token-out-of-range": _slices_node_token_out_of_range}


_EDGE = [-(2 ** 31), -(2 ** 15), -2, -1, 0, 1, 2, 255, 256, 2 ** 15, 2 ** 31 - 1, 2 ** 32 - 1,
         2 ** 62]


def _random_values(rng, dtype, n, scale):
    """``n`` values of ``dtype``: edge values, small ones near the array's size, or
    anything the dtype holds."""
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    out = []
    for _ in range(n):
        r = rng.random()
        if r < .3:
            v = rng.choice(_EDGE)
        elif r < .8:
            v = rng.randint(-3, scale + 3)
        else:
            v = rng.randint(info.min, info.max) if info else rng.random() * 2 ** 40
        if info is not None:
            v = min(max(v, info.min), info.max)
        out.append(v)
    return np.array(out).astype(dtype)


def fuzz(rng, header, arrays):
    """Mutate ``arrays`` (and ``header["meta"]``) in place in one random way; may
    return a ``table_fn`` for :func:`write_entry` (offsets, shapes, dtypes)."""
    names = sorted(arrays)
    ops = ["values", "random", "resize", "meta", "offset", "table-shape", "table-dtype",
           "reshape", "retype", "drop", "extra", "swap"] if names else ["meta", "extra"]
    op = rng.choice(ops)
    name = rng.choice(names) if names else None
    a = arrays[name] if name else None
    header["did"] = f"{op} {name}"   # (an unknown header field: readers ignore it)
    if op == "values" and a.size:
        flat = a.reshape(-1).copy()
        k = rng.randint(1, min(4, flat.size))
        idx = [rng.randrange(flat.size) for _ in range(k)]
        flat[idx] = _random_values(rng, flat.dtype, k, max(flat.size, 2))
        arrays[name] = flat.reshape(a.shape)
    elif op == "random" and a.size:
        arrays[name] = _random_values(rng, a.dtype, a.size, max(a.size, 2)).reshape(a.shape)
    elif op == "resize" and a.ndim:
        n = max(0, a.shape[0] + rng.choice([-a.shape[0], -2, -1, 1, 2, 1000]))
        flat = np.resize(a, (n,) + a.shape[1:]) if a.size else np.zeros((n,) + a.shape[1:], a.dtype)
        arrays[name] = flat
    elif op == "reshape" and a.size > 1:
        divs = [d for d in range(1, min(a.size, 300) + 1) if a.size % d == 0 and (a.size // d,) != a.shape]
        d = rng.choice(divs) if divs else 1
        arrays[name] = a.reshape(-1, d) if rng.random() < .7 else a.reshape(-1)
    elif op == "retype" and a.size:
        other = rng.choice([np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64,
                            np.float32, np.float64, np.bool_, ">i4"])
        raw = a.tobytes()
        dt = np.dtype(other)
        raw = raw[: len(raw) // dt.itemsize * dt.itemsize]
        arrays[name] = np.frombuffer(raw, dtype=dt).copy()
    elif op == "drop":
        del arrays[name]
    elif op == "extra":
        arrays[rng.choice(["x", "trans", "t99", "node_token", "offsets"]) + ("_" if rng.random() < .5 else "")] = \
            _random_values(rng, np.dtype(np.int32), rng.randint(0, 9), 9)
    elif op == "swap" and len(names) > 1:
        other = rng.choice([n for n in names if n != name])
        arrays[name], arrays[other] = arrays[other], arrays[name]
    elif op == "offset":
        def table_fn(table, payload_len):
            row = rng.choice(table)
            row[3] = rng.choice([-64, 0, 64, row[3] + 64, payload_len - row[4], payload_len,
                                 rng.randrange(0, payload_len + 1, 64)])
            return table
        return table_fn
    elif op == "table-shape":
        def table_fn(table, payload_len):
            row = rng.choice(table)
            n = row[4] // max(1, np.dtype(row[1]).itemsize)
            row[2] = rng.choice([[n], [1, n], [n, 1], [-1, -n], [n + 1], [2 ** 40, 0], [2 ** 70, 1],
                                 [0], [n, 0, 7]])
            return table
        return table_fn
    elif op == "table-dtype":
        def table_fn(table, payload_len):
            row = rng.choice(table)
            row[1] = rng.choice(["|O", "<U1", "|S4", "<M8[s]", "|V4", "<c8", ">i4", "<f4", "|b1", "bogus"])
            return table
        return table_fn
    else:   # meta
        meta = header.setdefault("meta", {})
        keys = sorted(meta) or ["n"]
        k = rng.choice(keys)
        meta[k] = rng.choice([None, -1, 0, 1, 2 ** 40, "x", [], [0], [-1, 2 ** 31], {"a": 1},
                              meta.get(k, 0) if not isinstance(meta.get(k), int) else meta[k] + 1,
                              {"__tuple__": 3}, [[1, 2]]])
    return None


# ------------------------------------------------------------------ parent side

# The children's address space: enough for a compile, small enough that reading
# /dev/zero (the unfixed code did) ends in a MemoryError, not in the machine's swap.
CHILD_MEMORY = 3 << 30


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))


def run_python(args, timeout):
    """Run this file's child mode (or ``-c`` code) with the repository on the path,
    the cache on, a memory limit and a timeout."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("CFGMASK_CACHE", None)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=ROOT, preexec_fn=_limit_memory)

def run_plan(tmp_path, plan, timeout=300):
    """Run ``plan`` in a child; returns (header line, results).  Fails on a crash or
    a hang, naming the step it hit."""
    cdir = str(tmp_path / "cache")
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan))
    try:
        proc = run_python([os.path.abspath(__file__), "child", cdir, str(plan_path)], timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        last = [ln for ln in out.splitlines() if ln.startswith('{"start"')][-1:]
        pytest.fail(f"child hung (> {timeout} s) at {last}")
    lines = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0:
        last = [ln for ln in lines if "start" in ln][-1:]
        pytest.fail(f"child died with {proc.returncode} (signal {-proc.returncode} if < 0) at {last}\n"
                    f"{proc.stderr[-3000:]}")
    head, results = lines[0], [ln for ln in lines[1:] if "step" in ln]
    assert lines[-1] == {"done": len(plan)}
    assert head["reference"] == head["primed"]
    return head, results


def assert_rebuilt(head, r, rejected=True):
    """A rejected entry: the masks of a cache-off run, and the file rewritten as it was
    (``rejected=False``: an entry found wrong after the load, not by it)."""
    assert r["error"] is None, r
    assert r["rejected"] >= 1 or not rejected, f"not rejected: {r}"
    assert r["digest"] == head["reference"], r
    assert r["restored"], f"entry not rebuilt: {r}"


CRAFTED_STEPS = [
    {"how": "crafted", "case": "lexer-offsets-negative", "kind": "lexer", "array": "offsets"},
    {"how": "crafted", "case": "lexer-offsets-huge", "kind": "lexer", "array": "offsets"},
    {"how": "crafted", "case": "lexer-trans-reshaped", "kind": "lexer", "array": "trans"},
    {"how": "crafted", "case": "vocab-token-same-next-huge", "kind": "vocab", "part": "trie"},
    {"how": "crafted", "case": "slices-node-token-out-of-range", "kind": "slices", "array": "node_token"},
    # well-formed, so the load takes it; the derivation it is checked against rebuilds it
    {"how": "crafted", "case": "slice-candidates-extra-key", "kind": "slice-candidates", "late": True},
]


@pytest.mark.parametrize("step", CRAFTED_STEPS, ids=[s["case"] for s in CRAFTED_STEPS])
def test_crafted_entry_is_rebuilt_not_trusted(tmp_path, step):
    head, (r,) = run_plan(tmp_path, [step], timeout=120)
    assert_rebuilt(head, r, rejected=not step.get("late"))


@pytest.mark.parametrize("kind,part", [("lexer", None), ("vocab", "trie"), ("grammar", None)])
def test_fifo_at_entry_path_does_not_block(tmp_path, kind, part):
    head, (r,) = run_plan(tmp_path, [{"how": "fifo", "kind": kind, "part": part}], timeout=60)
    assert_rebuilt(head, r)


@pytest.mark.parametrize("kind,part", [("lexer", None), ("vocab", "trie"), ("slices", None)])
def test_symlink_to_dev_zero_is_not_read(tmp_path, kind, part):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    head, (r,) = run_plan(tmp_path, [{"how": "devzero", "kind": kind, "part": part}], timeout=60)
    assert_rebuilt(head, r)


def test_symlink_to_a_valid_entry_is_refused(tmp_path, monkeypatch):
    """A link is refused even to a good entry (entries are only written as regular
    files), and store replaces the link, not its target."""
    from cfgmask import cache
    monkeypatch.setenv("CFGMASK_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("CFGMASK_CACHE", raising=False)
    key = {"k": 1}
    assert cache.store("unit", key, {}, {"a": np.arange(3)})
    path = cache.entry_path("unit", key)
    target = tmp_path / "elsewhere.cfgm"
    os.replace(path, target)
    os.symlink(target, path)
    assert cache.load("unit", key) is None
    assert cache.store("unit", key, {}, {"a": np.arange(3)})
    assert not os.path.islink(path) and cache.load("unit", key) is not None
    assert target.read_bytes() == open(path, "rb").read()


def test_oversized_entry_is_not_read(tmp_path, monkeypatch):
    from cfgmask import cache
    monkeypatch.setenv("CFGMASK_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("CFGMASK_CACHE", raising=False)
    key = {"k": 2}
    assert cache.store("unit", key, {}, {"a": np.arange(1000)})
    monkeypatch.setattr(cache, "MAX_ENTRY_BYTES", 1000)
    assert cache.load("unit", key) is None
    assert not cache.store("unit", key, {}, {"a": np.arange(1000)})   # would be refused


@pytest.mark.parametrize("header", [b"[1]", b'"x"', b"1", b"[" * 100000 + b"]" * 100000])
def test_header_that_is_not_an_object_is_a_miss(tmp_path, monkeypatch, header):
    """A JSON header that is a list, a string, a number or nested past the
    recursion limit (valid crc32) is a miss, not an AttributeError/RecursionError."""
    from cfgmask import cache
    monkeypatch.setenv("CFGMASK_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("CFGMASK_CACHE", raising=False)
    key = {"k": 3}
    path = cache.entry_path("unit", key)
    path.parent.mkdir(parents=True)
    head = header + b" " * ((-(_PREFIX.size + len(header))) % 64)
    path.write_bytes(_PREFIX.pack(b"CFGMASK\x01", len(head), 0, zlib.crc32(head)) + head)
    assert cache.load("unit", key) is None


def test_grammar_import_entry_pointing_at_a_fifo_does_not_block(tmp_path):
    """A grammar entry's recorded %import paths come from the file too: one naming a
    FIFO or /dev/zero, or a package outside lark (valid crc32), is a failed
    unchanged-check (a rebuild), not a hang, an unbounded read or an import."""
    cdir = tmp_path / "c"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code = f"""
import os, sys
os.environ["CFGMASK_CACHE_DIR"] = {str(cdir)!r}
from tests.test_cache_tamper import entries, read_entry, write_entry
from cfgmask.frontends import grammar_cache
from cfgmask.grammar import Grammar
path = Grammar.builtin_path("json")
text = path.read_text()
Grammar.from_lark(text, import_paths=[path.parent])
(p,) = entries({str(cdir)!r}, "grammar")
header, arrays = read_entry(p)
key = grammar_cache.grammar_key(text, "start", [path.parent], None, None)
for imp in (["file", {str(fifo)!r}, "0" * 64], ["file", "/dev/zero", "0" * 64],
            ["package", "lark", "../../../../../../../../dev/zero", "0" * 64],
            ["package", "antigravity", "x.lark", "0" * 64]):
    header["meta"]["imports"] = [imp]
    write_entry(p, header, arrays)
    grammar_cache._memory.clear()
    assert grammar_cache.load(key) is None, imp
    print("ok", imp[1], flush=True)
assert "antigravity" not in sys.modules
print("done")
"""
    try:
        proc = run_python(["-c", code], timeout=60)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"hung after {e.stdout!r}")
    assert proc.returncode == 0 and proc.stdout.endswith("done\n"), (proc.returncode, proc.stdout,
                                                                     proc.stderr[-2000:])


def test_grammar_attributes_are_all_checked():
    """check_entry knows every attribute a Grammar has: a new one must be added to
    grammar_cache._ATTR_TYPES / _ARRAY_DTYPES, or every cached grammar is rejected."""
    from cfgmask.frontends import grammar_cache
    from cfgmask.grammar import Grammar
    g = Grammar.from_lark(Grammar.builtin_path("json").read_text())
    names = set(vars(g))
    assert names == set(grammar_cache._ATTR_TYPES) | set(grammar_cache._ARRAY_DTYPES)


def test_forest_check_is_the_exact_pre_order():
    """check_forest's linear conditions accept a node_subtree_end exactly when it
    is the pre-order one (``_next_le`` of the depths): every depth sequence of up
    to 5 nodes, every forward node_subtree_end."""
    import itertools
    from cfgmask.engine.trie import _next_le, check_forest

    def depth_sequences(n, d=(0,)):
        if len(d) == n:
            yield d
            return
        for x in range(d[-1] + 2):
            yield from depth_sequences(n, d + (x,))

    for n in range(1, 6):
        for d in depth_sequences(n):
            d = np.array(d, np.int32)
            exact = tuple(_next_le(d).tolist())
            for se in itertools.product(*[range(i + 1, n + 1) for i in range(n)]):
                ok = check_forest(np.zeros(n, np.uint8), d, np.full(n, -1, np.int32),
                                  np.array(se, np.int32), 1)
                assert ok == (se == exact), (d, se, exact)


def test_lexer_counter_arrays_are_checked():
    """Counted terminals (JSON Schema ``maxLength``) never reach the disk (their
    automata are rebuilt in any process), so the fuzz never sees the counter
    arrays: check_tables is tested on them directly."""
    from cfgmask.frontends.json_schema import compile_schema
    from cfgmask.engine.lexer import LexerSpec, check_tables
    from cfgmask.grammar import Grammar
    g = compile_schema(Grammar, {"type": "string", "maxLength": 3000, "pattern": "^[a-z ]*$"})
    good = dict(LexerSpec(g)._tab.arrays)
    T = g.n_terminals
    assert "count_limit" in good and check_tables(good, T)
    t = int((good["count_limit"] >= 0).argmax())
    n_t = int(good["offsets"][t + 1] - good["offsets"][t])

    def bad(name, fn):
        a = dict(good)
        a[name] = fn(a[name].copy())
        return not check_tables(a, T)

    def set_at(i, v):
        def fn(x):
            x[i] = v
            return x
        return fn

    assert bad("count_limit", set_at(t, (2 ** 31) // n_t))      # a counted state id past int32
    assert bad("count_limit", set_at(t, -2))
    assert bad("char_end", set_at(0, 2))
    assert bad("min_chars", set_at(0, -1))
    assert bad("min_chars", set_at(0, 2 ** 30 + 1))
    assert bad("count_limit", lambda x: x[:-1])
    a = dict(good)
    del a["min_chars"]                                           # counters all or none
    assert not check_tables(a, T)
    assert not check_tables(good, T + 1)                        # another grammar's tables


def _fuzz_plan(seed, per_kind):
    rng = random.Random(seed)
    return [{"how": "fuzz", "kind": k, "seed": rng.randrange(2 ** 32)} for k in KINDS for _ in range(per_kind)]


def _check_fuzz(head, results):
    accepted = []
    for r in results:
        if r["rejected"]:
            assert_rebuilt(head, r)
        else:
            accepted.append(r)
            # in-range values pass the checks (crc32 is not authentication): whatever
            # the masks, no crash (the child is alive) and only a clean error
            assert r["error"] is None or r["error"].split(":")[0], r
    return accepted


def test_fuzz_tampered_entries_are_rebuilt(tmp_path):
    head, results = run_plan(tmp_path, _fuzz_plan(0, 25), timeout=300)
    assert all(head["kinds"][k] >= 1 for k in KINDS), head
    accepted = _check_fuzz(head, results)
    assert len(accepted) < len(results) // 2, accepted


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_fuzz_tampered_entries_are_rebuilt_long(tmp_path, seed):
    head, results = run_plan(tmp_path, _fuzz_plan(1000 + seed, 125), timeout=3000)
    _check_fuzz(head, results)


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "child":
    child_main(sys.argv[2:])
