#!/usr/bin/env python3
"""grammars/javascript.lark on the test262 parser tests, checked by cfgmask.

The corpus (<corpora>/js/test262-parser-tests) has three directories:
pass/ (valid programs: must be accepted), fail/ (not in the ECMAScript
grammar: must be rejected) and early/ (in the grammar but an early error:
reported, neither is required). ``*.module.js`` files are modules, the
others scripts; each is checked from the grammar's start rule for its goal
(``--script-start``, ``--module-start``).

Each file is fed byte by byte to cfgmask compiled with a vocabulary of the
256 single bytes (the engine's own verdict, fast); ``--node`` also runs
``node --check`` on every file (.cjs / .mjs), so that the corpus verdicts
and the engine the project samples against can be compared; ``--greedy``
runs support/greedy_check.py (lark's Earley parser under cfgmask's lexing
rules, on characters) from the same start rules, about a minute.

Results: benchmarks/coverage/results/test262.json (summary, and one record
per file whose verdict differs from the one its directory wants).

usage:
  python -m benchmarks.coverage.run_test262 [--limit N] [--node] [--greedy] [--out PATH]
    [--grammar PATH] [--script-start RULE] [--module-start RULE] [--dirs pass,fail,early]
Corpora: $CFGMASK_CORPORA or ../shared/corpora next to the repository.
"""
import argparse
import json
import os
import sys
import time

from support.test262 import DIRS, WANT, Checker, corpus_dir, greedy_recognizers, run, summarize

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grammar", default=None)
    ap.add_argument("--script-start", default="script")
    ap.add_argument("--module-start", default="module")
    ap.add_argument("--dirs", default=",".join(DIRS))
    ap.add_argument("--limit", type=int, default=None, help="files per directory (a spread sample)")
    ap.add_argument("--node", action="store_true", help="also run node --check on every file")
    ap.add_argument("--greedy", action="store_true", help="also run support/greedy_check.py on every file")
    ap.add_argument("--out", default=None)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if not corpus_dir().exists():
        sys.exit("test262 parser tests not found at %s; set CFGMASK_CORPORA" % corpus_dir())
    t0 = time.time()
    checker = Checker(args.grammar, args.script_start, args.module_start)
    dirs = [d for d in args.dirs.split(",") if d]

    def progress(rec):
        want = WANT[rec["dir"]]
        if not args.quiet and want and rec["cfgmask"] != want:
            print("%s/%s: %s %s" % (rec["dir"], rec["file"], rec["cfgmask"], rec.get("cfgmask_error", "")),
                  flush=True)

    greedy = greedy_recognizers(args.grammar, args.script_start, args.module_start) if args.greedy else None
    records = run(checker, dirs, args.limit, args.node, progress, greedy)
    summary = summarize(records)
    meta = {"grammar": args.grammar or "grammars/javascript.lark", "script_start": args.script_start,
            "module_start": args.module_start, "limit": args.limit, "compile_s": checker.compile_s,
            "check_s": round(sum(r["cfgmask_s"] for r in records), 1),
            "wall_s": round(time.time() - t0, 1), "date": time.strftime("%Y-%m-%d"),
            "command": "python -m benchmarks.coverage.run_test262 " + " ".join(argv or sys.argv[1:])}
    # Keep the files whose verdict is not the one their directory wants (and
    # every early/ file, whose verdict is informative either way).
    kept = [r for r in records if WANT[r["dir"]] is None or r["cfgmask"] != WANT[r["dir"]]
            or r.get("greedy", r["cfgmask"]) != r["cfgmask"]]
    out = args.out or os.path.join(RESULTS, "test262.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write('{"meta": %s,\n"summary": %s,\n"documents": [\n' % (json.dumps(meta), json.dumps(summary, indent=1)))
        f.write(",\n".join(json.dumps(r, ensure_ascii=False) for r in kept))
        f.write("\n]}\n")
    print(json.dumps({"meta": meta, "summary": summary}, indent=1))
    print("wrote", out)


if __name__ == "__main__":
    main()
