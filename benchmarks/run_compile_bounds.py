#!/usr/bin/env python3
"""JSON Schema compile bounds: the schemas that used to stall ``Grammar.from_json_schema``.

Each case runs in a child process with a wall-clock limit (``--timeout``,
default 60 s) so a stalled compile is counted, never waited on.  A case ends
``ok`` (compiled), ``refused`` (``GrammarError``, the message's head shown),
``error`` (any other exception: a bug) or ``timeout``.

Synthetic cases: the tagged union (``allOf`` of N ``if``/``then`` clauses on
one discriminator), ``dependentRequired`` with N keys, counts at 10^9
(``minItems``, ``maxProperties``, ``minContains``, ``maxLength``) and a
10,000-string ``enum``.  Real cases: the 8 JsonSchemaStore schemas of
MaskBench (guidance-ai/jsonschemabench, ``maskbench/data/``) that never
answered in 60 s, read from ``--real DIR`` (one ``<name>.json`` MaskBench file
each: the schema is its ``"schema"`` member) when given.

    python -m benchmarks.run_compile_bounds [--timeout 60] [--real DIR] [--only SUBSTR]
"""

import argparse
import json
import multiprocessing as mp
import os
import sys
import time

REAL = ["saucectl.schema", "cloudify", "yippee-ki-json_config_schema", "minecraft-predicate",
        "v4-config.schema", "mongodb-atlas-search-index-definition", "jfrog-pipelines",
        "minecraft-item-modifier"]


def tagged_union(n, required=True, extra=False):
    """``allOf`` of n if/then clauses on the discriminator ``kind`` (``extra``: each
    ``if`` also tests a second property)."""
    clauses = []
    for i in range(n):
        cond = {"properties": {"kind": {"const": f"k{i}"}}}
        if extra:
            cond["properties"]["x"] = {"type": "integer"}
        if required:
            cond["required"] = ["kind"]
        clauses.append({"if": cond, "then": {"properties": {f"p{i}": {"type": "integer"}},
                                             "required": [f"p{i}"]}})
    return {"type": "object", "properties": {"kind": {"type": "string"}}, "allOf": clauses}


def dependent_required(n):
    """A cycle: ``a_i`` requires ``a_(i+1)``."""
    props = {f"a{i}": {"type": "integer"} for i in range(n)}
    deps = {f"a{i}": [f"a{(i + 1) % n}"] for i in range(n)}
    return {"type": "object", "properties": props, "dependentRequired": deps}


def dependent_required_pairs(n):
    """n independent ``a_i`` requires ``b_i``: 2^n presence combinations."""
    props = {}
    for i in range(n):
        props[f"a{i}"] = {"type": "integer"}
        props[f"b{i}"] = {"type": "integer"}
    return {"type": "object", "properties": props,
            "dependentRequired": {f"a{i}": [f"b{i}"] for i in range(n)}}


def synthetic():
    big = 10 ** 9
    return {
        "tagged-union-10": tagged_union(10),
        "tagged-union-17": tagged_union(17),
        "tagged-union-40": tagged_union(40),
        "tagged-union-17-extra": tagged_union(17, extra=True),
        "dependentRequired-14": dependent_required(14),
        "dependentRequired-30": dependent_required(30),
        "dependentRequired-pairs-10": dependent_required_pairs(10),
        "dependentRequired-pairs-14": dependent_required_pairs(14),
        "minItems-1e9": {"type": "array", "minItems": big},
        "maxProperties-1e9": {"type": "object", "maxProperties": big},
        "minContains-1e9": {"type": "array", "contains": {"type": "integer"}, "minContains": big},
        "maxLength-1e9": {"type": "string", "maxLength": big},
        "enum-10k-strings": {"enum": [f"value-{i:05d}-{i * 7919 % 10007}" for i in range(10000)]},
    }


def _child(schema, q):
    import warnings
    from cfgmask import GrammarError, Grammar
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    try:
        Grammar.from_json_schema(schema)
        q.put(("ok", time.perf_counter() - t0, ""))
    except GrammarError as e:
        q.put(("refused", time.perf_counter() - t0, str(e)[:160]))
    except BaseException as e:  # noqa: BLE001 - a bug, reported as such
        q.put(("error", time.perf_counter() - t0, f"{type(e).__name__}: {str(e)[:140]}"))


def run_case(schema, timeout):
    q = mp.Queue()
    p = mp.Process(target=_child, args=(schema, q))
    t0 = time.perf_counter()
    p.start()
    p.join(timeout)
    if p.is_alive():
        p.kill()
        p.join()
        return "timeout", time.perf_counter() - t0, ""
    try:
        return q.get(timeout=5)
    except Exception:  # noqa: BLE001
        return "error", time.perf_counter() - t0, f"child exit code {p.exitcode}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--real", help="directory of the MaskBench files <name>.json")
    ap.add_argument("--only", help="run the cases whose name contains this")
    args = ap.parse_args()
    cases = dict(synthetic())
    if args.real:
        for name in REAL:
            path = os.path.join(args.real, name + ".json")
            if os.path.exists(path):
                with open(path) as f:
                    data = json.load(f)
                cases[name] = data.get("schema", data) if isinstance(data, dict) else data
            else:
                print(f"{name}: missing {path}", file=sys.stderr)
    for name, schema in cases.items():
        if args.only and args.only not in name:
            continue
        status, secs, detail = run_case(schema, args.timeout)
        print(f"{name:42s} {status:8s} {secs:8.2f} s  {detail}", flush=True)


if __name__ == "__main__":
    main()
