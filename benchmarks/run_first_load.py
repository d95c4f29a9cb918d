#!/usr/bin/env python3
"""The first Lark grammar a process loads, with and without Lark's parser table
computed ahead (cfgmask/frontends/lark_meta.py).

Lark parses ``.lark`` text with an LALR parser of its own grammar language,
built on first use in every process.  This times ``Grammar.from_lark`` of one
grammar as the first load of a fresh process (empty ``CFGMASK_CACHE_DIR``;
``cfgmask`` and Lark imported untimed), ``--runs`` processes per setting,
taking turns: "table" is the default, "lark" stops :func:`lark_meta.install`
so that Lark builds its parser itself.

``benchmarks/run_coldstart.py`` does not see this: its processes load a
trivial grammar first (untimed), so its cold column starts after the parser
exists, as in a process that already served one grammar.

Usage::

    python -m benchmarks.run_first_load                      # json.lark, 8 runs each
    python -m benchmarks.run_first_load --grammar grammars/sql.lark --runs 5
"""

import argparse
import statistics
import sys
from pathlib import Path

from benchmarks.fresh_process import run_fresh

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import sys, time
import cfgmask
from cfgmask.frontends import lark_loader, lark_meta
if sys.argv[1] == "lark":
    lark_meta.install = lambda: False
import lark.load_grammar
text = open(sys.argv[2], encoding="utf-8").read()
t0 = time.perf_counter()
cfgmask.Grammar.from_lark(text)
print(time.perf_counter() - t0)
"""


def one(mode, grammar):
    return float(run_fresh(["-c", _CHILD, mode, str(Path(grammar).resolve())], pythonpath=ROOT,
                           what=f"{mode} child"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grammar", default="grammars/json.lark")
    ap.add_argument("--runs", type=int, default=8)
    a = ap.parse_args(argv)
    got = {"lark": [], "table": []}
    for _ in range(a.runs):
        for mode in ("lark", "table"):
            got[mode].append(one(mode, a.grammar))
    med = {m: statistics.median(v) * 1e3 for m, v in got.items()}
    print(f"{a.grammar}, first load in a fresh process, median of {a.runs}: Lark builds its parser "
          f"{med['lark']:.1f} ms, table computed ahead {med['table']:.1f} ms "
          f"({med['table'] / med['lark']:.2f}x); "
          f"ranges {min(got['lark']) * 1e3:.1f}-{max(got['lark']) * 1e3:.1f} / "
          f"{min(got['table']) * 1e3:.1f}-{max(got['table']) * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
