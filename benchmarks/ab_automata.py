#!/usr/bin/env python3
"""Two checkouts of cfgmask, A and B, timed in turn on the regex pipeline's cold cost.

For issue #23 part 5 (the compile-time kernels in ``_fast/_automata.pyx`` and
``_fast/_minimal.pyx``): each round starts fresh processes for A and for B,
A first in odd rounds and B first in even ones, each with its own empty
cache directory (``CFGMASK_CACHE_DIR``), and measures:

* *idents*: ``cfgmask.automata.regex_to_dfa`` on every ``*_IDENT`` terminal
  of ``Grammar.builtin("sql")``, one call each after loading the grammar (so
  the loader's parse tree is reused, as in a compile), in one process;
* *grammar, mode*: one process per bundled grammar (``grammars/<name>.lark``)
  and slice mode (``lazy``, ``eager``): ``run_coldstart.Engines`` (the
  SmolLM2 vocabulary prepared, Lark's loader imported and a trivial grammar
  compiled, all untimed), then ``Grammar.from_lark`` (load), ``compile``
  with that slice mode and the first ``fill_bitmask``, each timed, and the
  compiled grammar's ``timings`` (``automata_s``, ``slices_s``).

The garbage collector runs a full collection before the timed steps.  The
report gives medians over rounds and B/A.  A checkout is a directory with a
built ``cfgmask/`` and this repository's ``benchmarks/`` and ``support/``
(``git worktree add DIR REV`` and copy or build the ``_fast`` extensions);
the child imports it through ``PYTHONPATH``.

usage:
  python -m benchmarks.ab_automata A_DIR B_DIR [--rounds 7]
      [--grammars json,sql,javascript] [--modes lazy,eager]
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


def child_idents():
    import cfgmask
    from cfgmask.automata import regex_to_dfa
    g = cfgmask.Grammar.builtin("sql")
    regex_to_dfa("a")                 # the pipeline's own first-call costs, untimed
    gc.collect()
    out = {}
    for name, pattern in zip(g.terminal_names, g.terminal_patterns):
        if name.endswith("IDENT"):
            t0 = time.perf_counter()
            regex_to_dfa(pattern, name)
            out[name] = time.perf_counter() - t0
    return out


def child_grammar(dump, grammar, mode):
    from benchmarks.run_coldstart import Engines
    engines = Engines(dump, False)
    cfgmask = engines.cfgmask
    root = Path(cfgmask.__file__).resolve().parent.parent
    text = (root / "grammars" / f"{grammar}.lark").read_text(encoding="utf-8")
    gc.collect()
    t0 = time.perf_counter()
    g = cfgmask.Grammar.from_lark(text)
    t1 = time.perf_counter()
    c = cfgmask.compile(g, engines.vocab, slices=mode)
    t2 = time.perf_counter()
    bm = c.allocate_bitmask()
    c.matcher().fill_bitmask(bm)
    t3 = time.perf_counter()
    return {"load": t1 - t0, "compile": t2 - t1, "first_mask": t3 - t2, "total": t3 - t0,
            "automata_s": c.timings["automata_s"], "slices_s": c.timings["slices_s"]}


def _run(tree, args):
    return run_fresh([str(HERE), "--child"] + args, pythonpath=Path(tree).resolve(),
                     env_unset=("CFGMASK_PURE_AUTOMATA",), what=f"{tree}: child")


def _median(runs, f):
    return statistics.median(f(x) for x in runs)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", nargs="?")
    ap.add_argument("b", nargs="?")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--grammars", default="json,sql,javascript")
    ap.add_argument("--modes", default="lazy,eager")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind = args.child[0]
        out = child_idents() if kind == "idents" else child_grammar(*args.child[1:])
        print(json.dumps(out))
        return
    if not (args.a and args.b):
        ap.error("give two checkouts, A and B")
    from benchmarks.run_ttfm import dump_vocab
    tmp = tempfile.mkdtemp(prefix="cfgmask-ab-automata-")
    atexit.register(shutil.rmtree, tmp, True)   # scratch: never left in /tmp
    dump = os.path.join(tmp, "smollm2.npz")
    dump_vocab("smollm2", dump)
    cells = [("idents",)] + [("grammar", dump, g, m) for g in args.grammars.split(",")
                             for m in args.modes.split(",")]
    runs = {(side, cell): [] for side in "AB" for cell in cells}
    for r in range(args.rounds):
        for cell in cells:
            for side in ("AB" if r % 2 == 0 else "BA"):
                runs[side, cell].append(_run(args.a if side == "A" else args.b, list(cell)))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(f"A = {args.a}\nB = {args.b}\n{args.rounds} rounds, fresh process and empty cache each; "
          f"medians over rounds (ms)\n")
    print("| sql terminal, `regex_to_dfa` | A | B | B/A |\n|---|--:|--:|--:|")
    a_runs, b_runs = runs["A", cells[0]], runs["B", cells[0]]
    for name in a_runs[0]:
        a = 1e3 * _median(a_runs, lambda x: x[name])
        b = 1e3 * _median(b_runs, lambda x: x[name])
        print(f"| `{name}` | {a:.1f} | {b:.1f} | {b / a:.2f} |")
    print("\n| grammar | slices | step | A | B | B/A |\n|---|---|---|--:|--:|--:|")
    for cell in cells[1:]:
        _, _, g, m = cell
        for step in ("automata_s", "slices_s", "load", "compile", "first_mask", "total"):
            a = 1e3 * _median(runs["A", cell], lambda x: x[step])
            b = 1e3 * _median(runs["B", cell], lambda x: x[step])
            if a or b:
                print(f"| {g} | {m} | {step} | {a:.1f} | {b:.1f} | {b / a if a else float('nan'):.2f} |")


if __name__ == "__main__":
    main()
