"""Batch fills on several threads equal serial fills (issue #8 item 6, issue #12 finding 7).

``CompiledGrammar.fill_bitmasks`` fills a batch's rows without the GIL on
the runtime's thread pool (``cfgmask/_fast/_pool.h``), all sharing one compiled grammar's caches, which rows fill
concurrently (cold caches: every row builds entries and continuations while
the others read them).  The oracle is the same rows filled one at a time by
``Matcher.fill_bitmask`` on a separately compiled grammar.  Python threads
driving independent matchers on one compiled grammar are checked the same
way, and so are the pool's own cases: a row that raises on a worker, batches
from several Python threads at once, a forked child.  Speed is a benchmark
(benchmarks/run_batch.py, bench_batch.py), not a test.
"""

import threading

import numpy as np
import pytest

import cfgmask
from cfgmask.engine.compiler import Limits
from support import corpora
from support import vocabs as V


def _docs(grammar, n):
    if grammar == "sql":
        return corpora.spider_queries()[5::131][:n]
    docs = corpora.jsonschemabench_docs()
    return [d for d in docs[3::59] if len(d) < 800][:n]


@pytest.fixture(scope="module")
def smollm2():
    return V.smollm2_vocab(), V.smollm2_tokenizer()


@pytest.mark.parametrize("grammar", ["sql", "json"])
def test_parallel_batch_equals_serial_fills(grammar, smollm2):
    vocab, tok = smollm2
    shared = cfgmask.compile(cfgmask.Grammar.builtin(grammar), vocab)
    serial = cfgmask.compile(cfgmask.Grammar.builtin(grammar), vocab)
    docs = [tok.encode(d, add_special_tokens=False) for d in _docs(grammar, 8)]
    assert len(docs) == 8
    rows = [shared.matcher() for _ in docs]
    refs = [serial.matcher() for _ in docs]
    batch = shared.allocate_bitmask(len(docs))
    one = serial.allocate_bitmask(1)
    steps = max(len(d) for d in docs)
    checked = 0
    for pos in range(steps):
        live = [i for i, d in enumerate(docs) if pos < len(d)]
        if not live:
            break
        shared.fill_bitmasks([rows[i] if i in live else None for i in range(len(docs))], batch, n_threads=4)
        for i in live:
            refs[i].fill_bitmask(one)
            assert np.array_equal(batch[i], one[0]), f"row {i} differs at token {pos}"
            checked += 1
            rows[i].consume(docs[i][pos])
            refs[i].consume(docs[i][pos])
    assert checked > 100


def test_threads_on_one_compiled_grammar_equal_serial_replays(smollm2):
    vocab, tok = smollm2
    shared = cfgmask.compile(cfgmask.Grammar.builtin("sql"), vocab)
    serial = cfgmask.compile(cfgmask.Grammar.builtin("sql"), vocab)
    docs = [tok.encode(d, add_special_tokens=False) for d in _docs("sql", 6)]

    def replay(c, ids):
        m = c.matcher()
        out = []
        for t in ids:
            out.append(m.allowed_tokens().tobytes())
            m.consume(t)
        out.append(m.allowed_tokens().tobytes())
        return out

    want = [replay(serial, d) for d in docs]
    got = [None] * len(docs)
    errors = []

    def work(i):
        try:
            got[i] = replay(shared, docs[i])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(docs))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for i in range(len(docs)):
        assert got[i] == want[i], f"document {i} differs"


def test_batch_reports_dead_rows_and_errors_after_all_rows():
    g = cfgmask.Grammar.from_lark('start: "ab"\n')
    v = cfgmask.Vocabulary([b"a", b"b", b"c", None], eos_token_ids=[3])
    c = cfgmask.compile(g, v)
    ok, dead = c.matcher(), c.matcher()
    dead_vocab = cfgmask.Vocabulary([b"a", b"c", None], eos_token_ids=[2])
    c2 = cfgmask.compile(g, dead_vocab)
    m2 = c2.matcher()
    m2.consume(0)                       # after "a" nothing of this vocabulary fits
    arr = c2.allocate_bitmask(2)
    with pytest.raises(cfgmask.DeadEnd, match="row 1"):
        c2.fill_bitmasks([c2.matcher(), m2], arr, n_threads=2)
    assert arr[0].any()
    with pytest.raises(cfgmask.ConfigurationError, match="another compiled grammar"):
        c.fill_bitmasks([ok, m2], c.allocate_bitmask(2))
    c.fill_bitmasks([ok, dead], c.allocate_bitmask(2), n_threads=2)


# ---- the batch pool (cfgmask/_fast/_pool.h, issue 26) --------------------------

def _ambiguous_batch():
    # s: s s is ambiguous, rows grow with the length: a fill after 24 "a"s walks the
    # 12-byte token into rows past the item budget and raises; a fresh row does not
    g = cfgmask.Grammar.from_lark('start: s\ns: s s | "a"\n')
    v = cfgmask.Vocabulary([b"a", b"a" * 12, None], eos_token_ids=[2])
    c = cfgmask.compile(g, v, limits=Limits(max_items_per_row=60))
    rows = []
    for i in range(8):
        m = c.matcher()
        if i % 4 == 3:
            m.consume_many([0] * 24)
        rows.append(m)
    return c, rows


def test_batch_row_that_raises_on_a_worker_is_reported_and_the_rest_filled():
    c, rows = _ambiguous_batch()
    ok = [m for i, m in enumerate(rows) if i % 4 != 3]
    want = c.allocate_bitmask(1)
    ok[0].fill_bitmask(want)
    for _ in range(40):        # the worker takes some of the raising rows: its error is cleared there
        arr = c.allocate_bitmask(len(rows))
        with pytest.raises(cfgmask.BudgetExceeded, match="items"):
            c.fill_bitmasks(rows, arr, n_threads=2)
        for i in range(len(rows)):
            if i % 4 != 3:
                assert np.array_equal(arr[i], want[0]), f"row {i}"
    for i, m in enumerate(rows):
        assert m.prefix == (b"a" * 24 if i % 4 == 3 else b"")   # a refused fill changes nothing


def test_concurrent_batches_from_python_threads_equal_serial_fills(smollm2):
    # one job at a time on the pool: a batch that finds it busy fills its rows alone
    vocab, tok = smollm2
    shared = cfgmask.compile(cfgmask.Grammar.builtin("sql"), vocab)
    serial = cfgmask.compile(cfgmask.Grammar.builtin("sql"), vocab)
    docs = [tok.encode(d, add_special_tokens=False) for d in _docs("sql", 8)]
    errors = []

    def work(j):
        try:
            rows = [shared.matcher() for _ in docs]
            refs = [serial.matcher() for _ in docs]
            off = [(j + i) % 5 for i in range(len(docs))]
            for m, r, d, o in zip(rows, refs, docs, off):
                m.consume_many(d[:o])
                r.consume_many(d[:o])
            batch = shared.allocate_bitmask(len(docs))
            one = serial.allocate_bitmask(1)
            for step in range(6):
                shared.fill_bitmasks(rows, batch, n_threads=2)
                for i, (r, d) in enumerate(zip(refs, docs)):
                    r.fill_bitmask(one)
                    assert np.array_equal(batch[i], one[0]), f"thread {j} row {i} step {step}"
                    rows[i].consume(d[off[i] + step])
                    r.consume(d[off[i] + step])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(j,)) for j in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors


def test_batch_pool_works_in_a_forked_child():
    # the pool's workers do not survive fork(): the child starts its own
    import os
    import subprocess
    import sys
    code = (
        "import os, numpy as np, cfgmask\n"
        "g = cfgmask.Grammar.from_lark('start: \"ab\"+\\n')\n"
        "v = cfgmask.Vocabulary([b'a', b'b', b'ab', None], eos_token_ids=[3])\n"
        "c = cfgmask.compile(g, v)\n"
        "ms = [c.matcher() for _ in range(6)]\n"
        "c.fill_bitmasks(ms, c.allocate_bitmask(6), n_threads=2)\n"   # workers started here
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    arr = c.allocate_bitmask(6)\n"
        "    c.fill_bitmasks(ms, arr, n_threads=2)\n"
        "    os._exit(0 if all(arr[i, 0] == 0b101 for i in range(6)) else 3)\n"
        "_, st = os.waitpid(pid, 0)\n"
        "arr = c.allocate_bitmask(6)\n"
        "c.fill_bitmasks(ms, arr, n_threads=2)\n"
        "print(os.waitstatus_to_exitcode(st), int(arr[5, 0]))\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["0", str(0b101)]
