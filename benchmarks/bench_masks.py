"""pytest-benchmark versions of the mask-latency measurements (DESIGN.md §5).

Run: ``pytest benchmarks/bench_masks.py --benchmark-enable`` (add
``--benchmark-group-by=param:tokenizer`` to line the engines up).  Without
``--benchmark-enable`` every benchmark runs once as a smoke test.

* ``test_replay``: one round replays ``CFGMASK_BENCH_DOCS`` (default 20)
  JSONSchemaBench documents token by token with a fresh matcher per document,
  filling the mask at every position and at the end (EOS must be allowed).
  pytest-benchmark times whole rounds; the per-mask percentiles of the same
  rounds are in ``extra_info`` (``--benchmark-json`` keeps them).  The
  percentile table of the README comes from ``benchmarks/run_masks.py``.
* ``test_mask_at_state``: the same mask filled again and again at one state
  (start of document, inside a string, inside a number, after a key's colon).
  Repeated fills at one state measure each engine's steady-state path,
  including whatever it caches per state; they are a lower bound, not a
  decoding workload.
* ``test_compile``: grammar compilation against an already prepared tokenizer.
"""

import pytest

from benchmarks import run_masks

ENGINES = ("cfgmask", "llguidance", "xgrammar")
TOKENIZERS = ("smollm2", "tekken")

STATES = {
    "start": "",
    "in_string": '{"name": "Alexander Gra',
    "in_number": '{"total": 12345.6',
    "after_colon": '{"user": {"id": 7, "tags": ["a", "b"]}, "email":',
}


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("engine", ENGINES)
def test_replay(benchmark, engine, tokenizer, bench_docs, get_tok, get_engine):
    eng = get_engine(engine, tokenizer)
    tok = get_tok(tokenizer)
    token_docs = [(name, tok.encode(text)) for name, text in bench_docs]
    series = run_masks.Series()

    def replay():
        for name, ids in token_docs:
            run_masks.replay_doc(eng, ids, series, 1, name)

    benchmark.pedantic(replay, rounds=3, iterations=1, warmup_rounds=1)
    assert not series.refused, f"{engine} refused corpus tokens: {series.refused[:3]}"
    assert not series.no_eos, f"{engine}: EOS not allowed at the end of {series.no_eos[:3]}"
    stats = run_masks.stats_us(series.ns[1])
    benchmark.extra_info.update({f"mask_{k}_us": v for k, v in stats.items()})
    benchmark.extra_info["tokens_per_round"] = sum(len(ids) for _, ids in token_docs)


@pytest.mark.parametrize("state", sorted(STATES))
@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("engine", ENGINES)
def test_mask_at_state(benchmark, engine, tokenizer, state, get_tok, get_engine):
    eng = get_engine(engine, tokenizer)
    m = eng.matcher()
    for t in get_tok(tokenizer).encode(STATES[state]):
        assert eng.consume(m, t), f"{engine} refused the prefix of state {state}"
    benchmark(eng.fill, m)


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("engine", ENGINES)
def test_compile(benchmark, engine, tokenizer, get_engine):
    eng = get_engine(engine, tokenizer)
    benchmark.pedantic(eng.compile, rounds=3, iterations=1)
