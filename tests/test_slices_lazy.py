"""Lazy slices (issue 23, item 2): masks are bit-identical with slices on, off
and published in the middle of a walk.

A compile with lazy slices starts on a runtime without them and later
publishes a second runtime over the slice tables; every matcher moves to it at
its next fill (``MatcherCore.rebind``).  Here three compiles of one grammar
walk together -- slices eager, lazy (published at a random step, or by the
background thread the first fill starts) and off -- over random walks with
rollbacks and copies, on several threads that share the compiles, and every
mask must be equal.  Small vocabularies force slices on (``min_tokens=2``);
SmolLM2 has real ones.
"""

import random
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import cfgmask
from cfgmask.engine import compiler as C
from cfgmask.engine import slices as S
from cfgmask.errors import ConfigurationError
from support import vocabs as V

FORCED = {"min_tokens": 2, "min_fraction": 0.0, "hot_nodes": 0}


def _tiny_vocab(extra):
    tokens = [bytes([b]) for b in range(128)] + extra + [None]
    return cfgmask.Vocabulary(tokens, eos_token_ids=[len(tokens) - 1])


TINY = {
    "sql": [b" select", b" from", b" x", b"x", b"ab", b" 'a", b"'ab", b" 12", b"12", b"--", b"-- x", b"  ",
            b" (", b"(x", b"SELECT", b" FROM", b" WHERE", b"abc", b"a_1", b" a", b" b"],
    "json": [b'"a', b'"ab"', b'": ', b", ", b"12", b"1.5", b"true", b"null", b' "', b"abc", b"\\n", b"  ",
             b"[1", b'{"', b"e+", b"-0"],
}


def _compiles(grammar, vocab, options):
    g = cfgmask.Grammar.builtin(grammar)
    eager = cfgmask.compile(g, vocab, slices=dict(options, when="eager"))
    manual = cfgmask.compile(g, vocab, slices=dict(options, when="manual"))
    lazy = cfgmask.compile(g, vocab, slices=dict(options, when="lazy"))
    off = cfgmask.compile(g, vocab, slices=False)
    assert eager.slices is not None and eager.slices.n > 0, "no slices were built"
    assert manual._slice_state == 0 and lazy._slice_state == 0
    return eager, manual, lazy, off


def _walk(compileds, seed, steps, publish_at=None, publish=None):
    """One random walk on a matcher of each compile; returns the masks compared."""
    rng = random.Random(seed)
    words = compileds[0].bitmask_words
    eos = set(compileds[0].vocab.eos_token_ids)
    ms = [c.matcher() for c in compileds]
    checked = 0
    for step in range(steps):
        if step == publish_at:
            publish()
        masks = [V.filled_bitmask(m, words) for m in ms]
        for i, mk in enumerate(masks[1:], 1):
            if not np.array_equal(masks[0], mk):
                diff = np.flatnonzero(np.unpackbits((masks[0] ^ mk).view(np.uint8), bitorder="little"))
                raise AssertionError(f"seed {seed} step {step}: compile {i} differs after "
                                     f"{ms[0].prefix[-60:]!r} on tokens {diff[:10].tolist()}")
        checked += 1
        allowed = np.flatnonzero(np.unpackbits(masks[0].view(np.uint8), bitorder="little"))
        r = rng.random()
        n = ms[0].n_consumed
        if r < 0.12 and n:
            k = rng.randint(1, min(4, n))
            for m in ms:
                m.rollback(k)
        elif r < 0.22:
            ms = [m.copy() for m in ms]          # copies made before and after publication
        else:
            choices = [int(t) for t in allowed if int(t) not in eos]
            if not choices:
                break
            t = rng.choice(choices)
            for m in ms:
                assert m.try_consume(t), (seed, step, t)
    return checked


@pytest.mark.parametrize("grammar", sorted(TINY))
def test_lazy_eager_off_agree_on_random_walks_tiny(grammar):
    eager, manual, lazy, off = _compiles(grammar, _tiny_vocab(TINY[grammar]), FORCED)
    total = 0
    for seed in range(6):
        total += _walk([eager, manual, lazy, off], seed, 60, publish_at=seed * 7 + 3,
                       publish=manual.wait_slices)
    assert total > 100
    assert manual.slices_ready() and manual.slices is not None and manual.slices.n == eager.slices.n
    assert lazy.wait_slices(60) and lazy.slices is not None and lazy.slice_error is None
    assert manual.cache_stats()["slices"] == eager.slices.n


@pytest.mark.parametrize("grammar", sorted(TINY))
def test_lazy_publication_on_several_threads(grammar):
    # four walkers share the compiles; one publishes the manual slices mid-walk, the
    # lazy compile's own background thread publishes whenever it is done
    eager, manual, lazy, off = _compiles(grammar, _tiny_vocab(TINY[grammar]), FORCED)
    start = threading.Barrier(4)

    def job(seed):
        start.wait()
        return sum(_walk([eager, manual, lazy, off], seed * 100 + k, 40,
                         publish_at=(5 if seed == 0 and k == 1 else None), publish=manual.wait_slices)
                   for k in range(3))

    with ThreadPoolExecutor(4) as ex:
        counts = list(ex.map(job, range(4)))
    assert sum(counts) > 100
    assert manual.slices_ready() and lazy.wait_slices(60)
    assert manual.slices is not None and lazy.slices is not None


def test_batch_fill_with_rows_on_both_runtimes():
    vocab = _tiny_vocab(TINY["sql"])
    eager, manual, _lazy, _off = _compiles("sql", vocab, FORCED)
    texts = [b"SELECT a", b"SELECT a FROM t WHERE x = 'a", b"SELECT ", b"SELECT 12 --", b"SELECT a,b"]
    ms = [manual.matcher() for _ in texts]
    refs = [eager.matcher() for _ in texts]
    words = eager.bitmask_words
    buf = manual.allocate_bitmask(len(texts))
    for i, tx in enumerate(texts):
        assert ms[i].consume_bytes(tx) == len(tx) and refs[i].consume_bytes(tx) == len(tx)
        if i == 2:
            manual.wait_slices()      # rows 0-1 were built on the runtime without slices
        ms[i].fill_bitmask(np.zeros(words, dtype=np.int32))
    old_rt = ms[0]._rt
    assert old_rt is not manual._runtime and ms[4]._rt is manual._runtime
    manual.fill_bitmasks(ms, buf, n_threads=2)
    for i in range(len(texts)):
        assert np.array_equal(buf[i], V.filled_bitmask(refs[i], words)), texts[i]
        assert ms[i]._rt is manual._runtime


def test_slices_on_smollm2_lazy_eager_off_agree():
    vocab = V.smollm2_vocab()
    eager, manual, lazy, off = _compiles("json", vocab, {})
    total = 0
    with ThreadPoolExecutor(3) as ex:
        futs = [ex.submit(_walk, [eager, manual, lazy, off], seed, 30, 4 if seed == 0 else None,
                          manual.wait_slices) for seed in range(3)]
        total = sum(f.result() for f in futs)
    assert total > 30
    assert manual.slices is not None and lazy.wait_slices(120)


def test_slices_on_smollm2_sql():
    vocab = V.smollm2_vocab()
    eager, manual, _lazy, off = _compiles("sql", vocab, {})
    assert sum(_walk([eager, manual, off], seed, 25, 6, manual.wait_slices) for seed in range(2)) > 20


def test_failed_build_leaves_slices_off(monkeypatch):
    vocab = _tiny_vocab(TINY["json"])
    g = cfgmask.Grammar.builtin("json")

    def boom(*a, **k):
        raise MemoryError("no room for slices")

    monkeypatch.setattr(S, "for_grammar", boom)
    c = cfgmask.compile(g, vocab, slices=dict(FORCED, when="manual"))
    rt = c._runtime
    assert c.wait_slices(10) and c.slices is None and isinstance(c.slice_error, MemoryError)
    assert c._runtime is rt
    off = cfgmask.compile(g, vocab, slices=False)
    assert _walk([c, off], 1, 30) > 5


def test_slices_argument_and_environment(monkeypatch):
    vocab = _tiny_vocab(TINY["json"])
    g = cfgmask.Grammar.builtin("json")
    for bad in ("sometimes", 1, {"when": "later"}):
        with pytest.raises(ConfigurationError):
            cfgmask.compile(g, vocab, slices=bad)
    monkeypatch.setenv("CFGMASK_SLICES", "0")
    assert C._slice_mode(True) == (None, {})
    assert cfgmask.compile(g, vocab).slices is None
    monkeypatch.setenv("CFGMASK_SLICES", "eager")
    assert C._slice_mode(True) == ("eager", {})
    monkeypatch.setenv("CFGMASK_SLICES", "lazy")
    assert C._slice_mode(True) == ("lazy", {})
    monkeypatch.setenv("CFGMASK_SLICES", "sometimes")
    with pytest.raises(ConfigurationError, match="CFGMASK_SLICES"):
        cfgmask.compile(g, vocab)
    monkeypatch.setenv("CFGMASK_SLICES", "auto")
    assert C._slice_mode(True) == ("auto", {})
    monkeypatch.delenv("CFGMASK_SLICES")
    assert C._slice_mode(True) == ("auto", {})  # eager but for standard-first grammars (docs/compile.md)
    assert C._slice_mode({"min_tokens": 2}) == ("eager", {"min_tokens": 2})
    assert C._slice_mode({"min_tokens": 2, "when": "lazy", "hot_nodes": 5}) == ("lazy", {"min_tokens": 2})
    c = cfgmask.compile(g, vocab, slices=dict(FORCED, when="eager"))
    assert c._slice_state == 2 and c.slices is not None


def test_rebind_refuses_another_grammars_runtime():
    vocab = _tiny_vocab(TINY["json"])
    a = cfgmask.compile(cfgmask.Grammar.builtin("json"), vocab, slices=False)
    b = cfgmask.compile(cfgmask.Grammar.builtin("json"), vocab, slices=False)
    with pytest.raises(ValueError):
        a.matcher()._core.rebind(b._runtime)


def test_a_forked_child_builds_its_own_slices():
    # a child forked while the parent's thread was building has no such thread:
    # wait_slices must build them there instead of waiting forever
    vocab = _tiny_vocab(TINY["json"])
    c = cfgmask.compile(cfgmask.Grammar.builtin("json"), vocab, slices=dict(FORCED, when="manual"))
    c._slice_state, c._slice_pid = 1, -1          # what the child sees
    assert c.wait_slices(10) and c.slices is not None and c.slices.n > 0


def test_the_first_fill_starts_the_build():
    vocab = _tiny_vocab(TINY["json"])
    c = cfgmask.compile(cfgmask.Grammar.builtin("json"), vocab, slices=dict(FORCED, when="lazy"))
    rt = c._runtime
    assert c._slice_state == 0 and c.cache_stats()["slices"] == 0
    m = c.matcher()
    m.fill_bitmask(c.allocate_bitmask())
    assert c._slice_state in (1, 2)
    assert c.wait_slices(60) and c._runtime is not rt and c.cache_stats()["slices"] == c.slices.n > 0
    m.fill_bitmask(c.allocate_bitmask())
    assert m._rt is c._runtime


# a schema keeping the standard JSON string runs and runs of a key pattern of its own
# (a key class no other test uses: the tables memo and the disk cache would otherwise
# hold its own tables already, and "auto" would rightly start on those)
KEYED_SCHEMA = {"type": "object", "patternProperties": {"^[a-hk-zA-Q]+$": {"type": "string"}},
                "additionalProperties": False}


def test_auto_starts_on_the_standard_slices_with_equal_masks():
    """slices="auto" (the default): a schema whose candidates hold the standard
    slices next to others, its choice keeping slices of its own, starts on the
    prepared standard tables and lays out its own later (here: wait_slices,
    and the hot walk on another compile);
    masks equal eager's and no slices' over random walks, before and after."""
    vocab = V.smollm2_vocab()
    vocab.prepare()
    std = vocab.prepared().standard_slices_if_prepared()[0]
    assert std is not None
    g = cfgmask.Grammar.from_json_schema(KEYED_SCHEMA)
    auto = cfgmask.compile(g, vocab)
    hot = cfgmask.compile(g, vocab, slices=dict(when="auto", hot_nodes=0))
    assert auto._slices is std and hot._slices is std and not auto.slices_ready()
    eager = cfgmask.compile(g, vocab, slices="eager")
    off = cfgmask.compile(g, vocab, slices=False)
    own = [s.key() for s in eager.slices.slices]
    assert own != [s.key() for s in std.slices], "the schema keeps only the standard slices"
    for seed in range(4):
        _walk([eager, auto, hot, off], seed, 60)
    assert hot.wait_slices(60) and [s.key() for s in hot._slices.slices] == own
    assert auto.wait_slices(60) and [s.key() for s in auto.slices.slices] == own
    for seed in range(4, 8):
        _walk([eager, auto, hot, off], seed, 60)
    # a new compile finds the grammar's own tables in the memo: no standard start
    again = cfgmask.compile(cfgmask.Grammar.from_json_schema(KEYED_SCHEMA), vocab)
    assert again.slices_ready() and [s.key() for s in again._slices.slices] == own


def test_auto_json_keeps_its_runtime_when_its_choice_is_the_standard_set(tmp_path, monkeypatch):
    """json.lark's candidates hold the standard slices next to others: "auto"
    starts on the standard tables without choosing, and when its own choice
    turns out to be exactly them, the runtime (and its warm caches) stays."""
    monkeypatch.setenv("CFGMASK_CACHE_DIR", str(tmp_path))
    vocab = V.smollm2_vocab()
    vocab.prepare()
    std = vocab.prepared().standard_slices_if_prepared()[0]
    # no choice known for json.lark yet (other tests compile it on this vocabulary)
    S._prepared_memo(vocab.prepared(), "_slice_choices", S._CHOICE_CACHE_SIZE).clear()
    c = cfgmask.compile(cfgmask.Grammar.builtin("json"), vocab)
    assert c._slices is std and c._slice_state == 0     # started on them, own choice pending
    eager = cfgmask.compile(cfgmask.Grammar.builtin("json"), vocab, slices="eager")
    assert eager.slices is std                 # json.lark keeps exactly the standard set
    rt = c._runtime
    for seed in range(3):
        _walk([eager, c], seed, 40)
    assert c.wait_slices(60) and c._runtime is rt and c.slices is std and c.slice_error is None


def test_auto_is_eager_where_no_standard_slice_is_kept():
    """sql.lark keeps no standard slice: "auto" derives its own before returning."""
    vocab = V.smollm2_vocab()
    vocab.prepare()
    c = cfgmask.compile(cfgmask.Grammar.builtin("sql"), vocab)
    assert c.slices_ready() and c._slices is not None and c._slices.n > 0
