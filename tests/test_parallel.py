"""Batch fills on several threads equal serial fills (issue #8 item 6, issue #12 finding 7).

``CompiledGrammar.fill_bitmasks`` fills a batch's rows without the GIL on
OpenMP threads, all sharing one compiled grammar's caches, which rows fill
concurrently (cold caches: every row builds entries and continuations while
the others read them).  The oracle is the same rows filled one at a time by
``Matcher.fill_bitmask`` on a separately compiled grammar.  Python threads
driving independent matchers on one compiled grammar are checked the same
way.  Speed is a benchmark (benchmarks/bench_parallel.py), not a test.
"""

import threading

import numpy as np
import pytest

import cfgmask
from tests import corpora
from tests import vocabs as V


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
