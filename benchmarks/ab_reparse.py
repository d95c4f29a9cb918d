#!/usr/bin/env python3
"""The compiled regex parser against ``re._parser``, on a cold load and first mask.

For issue #23 (``_fast/_reparse.pyx``): each round starts fresh processes,
one with ``CFGMASK_PURE_REPARSE=1`` (every regex parsed by ``re._parser``,
"before") and one without ("after"), alternating which goes first, each with
its own empty cache directory (``CFGMASK_CACHE_DIR``).  A process prepares
the SmolLM2 vocabulary and imports Lark's loader (``run_coldstart.Engines``,
untimed), runs a full collection, then times ``Grammar.from_lark`` on
``grammars/<name>.lark`` (load), ``compile`` (lazy slices by default) and
the first ``fill_bitmask``, and reports:

* ``parser``: the time inside ``re._parser.parse`` and the compiled parser
  during the load, less the garbage collector's pauses that fell inside
  those calls (``parser_gross`` with them);
* ``gc_load`` / ``gc_compile``: the collector's pauses in each step;
* ``load``, ``compile``, ``first_mask``, ``total``.

The report gives medians over rounds and after/before.

usage:
  python -m benchmarks.ab_reparse [--rounds 9] [--grammars sql,javascript] [--slices lazy]
"""
import argparse
import atexit
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.fresh_process import run_fresh

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
PURE_ENV = "CFGMASK_PURE_REPARSE"


def child(dump, grammar, slices):
    from re import _parser as sre_parse

    from benchmarks.run_coldstart import Engines
    from cfgmask._fast import _reparse

    engines = Engines(dump, False)
    cfgmask = engines.cfgmask
    text = (ROOT / "grammars" / f"{grammar}.lark").read_text(encoding="utf-8")
    acc = {"parser_gross": 0.0, "gc_in_parser": 0.0, "gc": 0.0}
    depth = [0]
    gc_start = [0.0]

    def on_gc(phase, _info):
        if phase == "start":
            gc_start[0] = time.perf_counter()
            return
        pause = time.perf_counter() - gc_start[0]
        acc["gc"] += pause
        if depth[0]:
            acc["gc_in_parser"] += pause

    def timed(fn):
        def wrapper(*args, **kwargs):
            depth[0] += 1
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                depth[0] -= 1
                if not depth[0]:
                    acc["parser_gross"] += time.perf_counter() - t0
        return wrapper

    sre_parse.parse = timed(sre_parse.parse)
    _reparse.parse = timed(_reparse.parse)
    gc.collect()
    gc.callbacks.append(on_gc)
    t0 = time.perf_counter()
    g = cfgmask.Grammar.from_lark(text)
    t1 = time.perf_counter()
    parser_gross, gc_in_parser, gc_load = acc["parser_gross"], acc["gc_in_parser"], acc["gc"]
    c = cfgmask.compile(g, engines.vocab, slices=slices)
    t2 = time.perf_counter()
    bm = c.allocate_bitmask()
    c.matcher().fill_bitmask(bm)
    t3 = time.perf_counter()
    gc.callbacks.remove(on_gc)
    return {"parser": parser_gross - gc_in_parser, "parser_gross": parser_gross,
            "gc_load": gc_load, "gc_compile": acc["gc"] - gc_load,
            "load": t1 - t0, "compile": t2 - t1, "first_mask": t3 - t2, "total": t3 - t0}


def _run(pure, args):
    return run_fresh([str(HERE), "--child"] + args, pythonpath=ROOT, env_unset=(PURE_ENV,),
                     env_set={PURE_ENV: "1"} if pure else None)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--grammars", default="sql,javascript")
    ap.add_argument("--slices", default="lazy")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    from benchmarks.run_ttfm import dump_vocab
    tmp = tempfile.mkdtemp(prefix="cfgmask-ab-reparse-")
    atexit.register(shutil.rmtree, tmp, True)   # scratch: never left in /tmp
    dump = os.path.join(tmp, "smollm2.npz")
    dump_vocab("smollm2", dump)
    grammars = args.grammars.split(",")
    runs = {(pure, g): [] for pure in (True, False) for g in grammars}
    for r in range(args.rounds):
        for g in grammars:
            for pure in ((True, False) if r % 2 == 0 else (False, True)):
                runs[pure, g].append(_run(pure, [dump, g, args.slices]))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(f"{args.rounds} rounds, {args.slices} slices, fresh process and empty cache each; "
          f"medians over rounds (ms); before: {PURE_ENV}=1\n")
    print("| grammar | step | before | after | after/before |\n|---|---|--:|--:|--:|")
    for g in grammars:
        for step in ("parser", "parser_gross", "gc_load", "gc_compile", "load", "compile",
                     "first_mask", "total"):
            b = 1e3 * statistics.median(x[step] for x in runs[True, g])
            a = 1e3 * statistics.median(x[step] for x in runs[False, g])
            print(f"| {g} | {step} | {b:.1f} | {a:.1f} | {a / b if b else float('nan'):.2f} |")


if __name__ == "__main__":
    main()
