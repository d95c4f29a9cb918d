"""pytest-benchmark versions of the JSON Schema measurements (``benchmarks/run_json_schema.py``).

Run: ``pytest benchmarks/bench_json_schema.py --benchmark-enable`` (without
``--benchmark-enable`` each benchmark runs once, as a smoke test).

* ``test_compile``: schema -> an engine ready to fill its first mask, for a
  few JSONSchemaBench schemas of different sizes, per engine;
* ``test_replay``: one round replays the schema's valid instances token by
  token (SmolLM2 tokenizer), filling the mask at every position.

The full per-category tables (coverage, p50/p99, sampling) come from
``python -m benchmarks.run_json_schema``.
"""

import json
import os

import pytest

from benchmarks import run_json_schema as R

ENGINES = ("cfgmask", "llguidance", "xgrammar")
SCHEMAS = ("BFCL_simple_150.json", "Glaiveai2K---calculate_area_1f9b24e6.json",
           "Kubernetes---kb_5_Normalized.json", "Github_medium---o21486.json")

_TOK = {}
_ENG = {}


def tok():
    if "t" not in _TOK:
        _TOK["t"] = R.Tok()
    return _TOK["t"]


def engine(name):
    if name not in _ENG:
        pytest.importorskip(name if name != "cfgmask" else "cfgmask")
        _ENG[name] = R.ENGINES[name](tok())
    return _ENG[name]


def schema_file(prefix):
    try:
        files = R.bench_files()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    hits = [f for f in files if os.path.basename(f) == prefix]
    if not hits:
        pytest.skip(f"no schema like {prefix}")
    return hits[0]


@pytest.mark.parametrize("name", SCHEMAS)
@pytest.mark.parametrize("eng_name", ENGINES)
def test_compile(benchmark, eng_name, name):
    eng = engine(eng_name)
    schema = json.load(open(schema_file(name), encoding="utf-8"))["schema"]
    try:
        eng.compile(schema)
    except Exception as e:
        pytest.skip(f"{eng_name} cannot compile {name}: {str(e)[:100]}")
    benchmark.pedantic(lambda: eng.compile(schema), rounds=5, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("name", SCHEMAS)
@pytest.mark.parametrize("eng_name", ENGINES)
def test_replay(benchmark, eng_name, name):
    eng = engine(eng_name)
    d = json.load(open(schema_file(name), encoding="utf-8"))
    try:
        h = eng.compile(d["schema"])
        ours = engine("cfgmask").compile(d["schema"])
    except Exception as e:
        pytest.skip(f"cannot compile {name}: {str(e)[:100]}")
    from cfgmask.frontends.json_schema.serialize import serialize
    docs = [serialize(t["data"], ours, "compact") for t in d["tests"] if t["valid"]]
    docs = [tok().encode(x) for x in docs if x is not None]
    n_all = len(docs)
    docs = [ids for ids in docs if R.replay(eng, h, ids, tok().eos, [])]  # what this engine accepts
    if not docs:
        pytest.skip(f"{eng_name} accepts none of the {n_all} valid instances")
    benchmark.extra_info["refused_instances"] = n_all - len(docs)
    ns = []

    def replay():
        for ids in docs:
            assert R.replay(eng, h, ids, tok().eos, ns), f"{eng_name} refused a valid instance"

    benchmark.pedantic(replay, rounds=3, iterations=1, warmup_rounds=1)
    benchmark.extra_info["mask_p50_us"] = R.pct(ns, 50) / 1e3
    benchmark.extra_info["mask_p99_us"] = R.pct(ns, 99) / 1e3
