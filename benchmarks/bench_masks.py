"""pytest-benchmark versions of the mask-latency measurements
(docs/architecture.md, "How performance is measured").

Run: ``pytest benchmarks/bench_masks.py --benchmark-enable`` (add
``--benchmark-group-by=param:grammar,param:tokenizer`` to line the engines
up).  Without ``--benchmark-enable`` every benchmark runs once as a smoke
test.  The percentile tables of docs/performance.md and the README come from
``benchmarks/run_masks.py`` (cold and warm phases, ratios, ``--write``); this
file gives the same workloads to pytest-benchmark's machinery.

Parameters: grammar (json, sql, javascript) x tokenizer (smollm2, tekken, sp)
x engine (cfgmask, llguidance, xgrammar -- XGrammar for JSON only, see
benchmarks/engines.py); ``CFGMASK_BENCH_GRAMMARS`` and
``CFGMASK_BENCH_TOKENIZERS`` narrow them.

* ``test_replay``: one round replays ``CFGMASK_BENCH_DOCS`` (default 10)
  documents token by token (the ones run_masks.py takes, screened the same
  way) with a fresh matcher per document, filling the mask at every position
  and at the end (EOS must be allowed).  pytest-benchmark times whole rounds;
  the per-mask percentiles of the same rounds are in ``extra_info``
  (``--benchmark-json`` keeps them).  The compiled grammar is shared by the
  rounds, so later rounds are warm.
* ``test_mask_at_state``: the same mask filled again and again at one state
  (for each grammar: the start, inside a lexeme, between two lexemes).  Repeated
  fills at one state measure each engine's steady-state path, including
  whatever it caches per state; a lower bound, not a decoding workload.
* ``test_compile``: grammar text -> compiled grammar, on a prepared tokenizer.
"""

import os

import pytest

from benchmarks import run_masks
from benchmarks.engines import ENGINES, GRAMMARS, TOKENIZERS


def _env_list(var, default):
    v = os.environ.get(var)
    return tuple(x for x in v.split(",") if x) if v else default


BENCH_GRAMMARS = _env_list("CFGMASK_BENCH_GRAMMARS", GRAMMARS)
BENCH_TOKENIZERS = _env_list("CFGMASK_BENCH_TOKENIZERS", TOKENIZERS)

# "lexeme": inside an identifier, string or number; "between": after a keyword, colon or dot
STATES = {
    "json": {"start": "", "lexeme": '{"name": "Alexander Gra',
             "between": '{"user": {"id": 7, "tags": ["a", "b"]}, "email":'},
    "sql": {"start": "", "lexeme": "SELECT T1.name FROM singer AS T1 WHERE T1.countr",
            "between": "SELECT count(*) FROM concert WHERE year = 2014 AND"},
    "javascript": {"start": "", "lexeme": "function render(node, options) {\n  var result = node.child",
                   "between": "const x = require('path');\nmodule.exports = x."},
}

# XGrammar has no Lark front end: JSON only (its built-in grammar)
CASES = [(g, t, e) for g in BENCH_GRAMMARS for t in BENCH_TOKENIZERS for e in ENGINES
         if e != "xgrammar" or g == "json"]


@pytest.mark.parametrize("grammar,tokenizer,engine", CASES)
def test_replay(benchmark, grammar, tokenizer, engine, get_compiled, get_docs):
    eng, compiled = get_compiled(engine, tokenizer, grammar)
    docs = get_docs(tokenizer, grammar)
    series = run_masks.Series()

    def replay():
        for name, ids, _ in docs:
            run_masks.replay_doc(eng, compiled, ids, series, "warm", name)

    benchmark.pedantic(replay, rounds=3, iterations=1, warmup_rounds=1)
    assert not series.refused, f"{engine} refused screened corpus tokens: {series.refused[:3]}"
    assert not series.no_eos, f"{engine}: EOS not allowed at the end of {series.no_eos[:3]}"
    stats = run_masks.stats_us(series.ns["warm"])
    benchmark.extra_info.update({f"mask_{k}_us": v for k, v in stats.items()})
    benchmark.extra_info["tokens_per_round"] = sum(len(ids) for _, ids, _ in docs)


@pytest.mark.parametrize("state", ["start", "lexeme", "between"])
@pytest.mark.parametrize("grammar,tokenizer,engine", CASES)
def test_mask_at_state(benchmark, grammar, tokenizer, engine, state, get_compiled, get_tok):
    eng, compiled = get_compiled(engine, tokenizer, grammar)
    m = eng.matcher(compiled)
    for t in get_tok(tokenizer).encode(STATES[grammar][state]):
        assert eng.consume(m, t), f"{engine} refused the prefix of state {state}"
    benchmark(eng.fill, m)


@pytest.mark.parametrize("grammar,tokenizer,engine", CASES)
def test_compile(benchmark, grammar, tokenizer, engine, get_engine):
    eng = get_engine(engine, tokenizer, grammar)
    benchmark.pedantic(eng.compile, args=(grammar,), rounds=3, iterations=1)
