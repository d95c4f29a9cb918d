#!/usr/bin/env python3
"""Two checkouts of cfgmask, A and B, timed in turn on ``run_coldstart``'s grammars.

For a compile-time change too small to see in ``run_coldstart``'s table,
whose ratios move by 10-20% between windows on a shared machine: each round
starts one fresh process per checkout and grammar, A first in odd rounds and
B first in even ones, each with its own empty cache directory.  A process
prepares the vocabulary with ``run_coldstart.Engines`` (untimed, llguidance
off) and times grammar text -> ``Grammar.from_lark`` / ``from_json_schema``
-> ``compile`` -> first ``fill_bitmask``, in CPU time of the process
(``time.process_time``: less moved by other processes than wall time) and
wall time.  The report gives the medians over rounds and B/A.

A checkout is a directory with a built ``cfgmask/`` and this repository's
``benchmarks/`` (``git worktree add DIR REV`` and copy or build the
``_fast`` extensions); the child imports both from it through
``PYTHONPATH``, so each side runs its own ``run_coldstart``.

usage:
  python -m benchmarks.ab_coldstart A_DIR B_DIR [--rounds 9]
      [--only lark-csv-example "lark.lark (Lark's own)" ...] [--tokenizer smollm2]
"""
import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()


def child(args):
    from benchmarks import run_coldstart as rc
    specs = {s[0]: s for s in rc.grammar_specs(args["mirror_dir"])}
    e = rc.Engines(args["dump"], False)
    spec = specs[args["grammar"]]
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    e.cfgmask_first(spec)
    return {"cpu_ms": (time.process_time() - c0) * 1e3, "wall_ms": (time.perf_counter() - t0) * 1e3}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", nargs="?")
    ap.add_argument("b", nargs="?")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--only", nargs="*", help="grammar names (run_coldstart's); default: all that load")
    ap.add_argument("--tokenizer", default="smollm2", choices=("smollm2", "tekken", "sp"))
    ap.add_argument("--mirror-dir", default=os.environ.get("CFGMASK_MIRROR_DIR", "/work/.mirror"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(json.loads(a.child))))
        return 0
    if not (a.a and a.b):
        ap.error("two checkouts, A_DIR and B_DIR, are needed")
    from benchmarks.fresh_process import run_fresh
    from benchmarks.run_coldstart import grammar_specs
    from benchmarks.run_ttfm import dump_vocab
    names = a.only or [s[0] for s in grammar_specs(a.mirror_dir)]
    trees = {"A": Path(a.a).resolve(), "B": Path(a.b).resolve()}
    with tempfile.TemporaryDirectory(prefix="cfgmask-ab-coldstart-") as tmp:
        dump = os.path.join(tmp, f"{a.tokenizer}.npz")
        dump_vocab(a.tokenizer, dump)
        got = {(n, k): [] for n in names for k in trees}
        failed = set()
        for r in range(a.rounds):
            for name in names:
                if name in failed:
                    continue
                for k in ("A", "B") if r % 2 == 0 else ("B", "A"):
                    job = {"dump": dump, "grammar": name, "mirror_dir": a.mirror_dir}
                    try:
                        got[(name, k)].append(run_fresh([str(HERE), "--child", json.dumps(job)],
                                                        pythonpath=trees[k], what=f"{k} {name}"))
                    except SystemExit as e:   # a grammar this checkout refuses: reported, not timed
                        print(f"# {name}: {str(e).splitlines()[-1][:200]}", file=sys.stderr)
                        failed.add(name)
                        break
            print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    print(f"A = {trees['A']}\nB = {trees['B']}\n{a.rounds} rounds, fresh process and empty cache each; "
          f"medians over rounds\n")
    print(f"{'grammar':32s} {'A cpu ms':>9s} {'B cpu ms':>9s} {'B/A':>5s}   {'A wall':>7s} {'B wall':>7s} {'B/A':>5s}")
    for name in names:
        if name in failed:
            continue
        med = {k: {m: statistics.median(x[m] for x in got[(name, k)]) for m in ("cpu_ms", "wall_ms")}
               for k in trees}
        print(f"{name:32s} {med['A']['cpu_ms']:9.1f} {med['B']['cpu_ms']:9.1f} "
              f"{med['B']['cpu_ms'] / med['A']['cpu_ms']:5.2f}   {med['A']['wall_ms']:7.1f} "
              f"{med['B']['wall_ms']:7.1f} {med['B']['wall_ms'] / med['A']['wall_ms']:5.2f}")
    return 1 if len(failed) == len(names) else 0    # nothing timed: a broken run, not a result


if __name__ == "__main__":
    sys.exit(main())
