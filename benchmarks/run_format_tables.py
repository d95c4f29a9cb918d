#!/usr/bin/env python3
"""What the formats' table computed ahead saves a new process, format by format.

For each asserted format (``strings.FORMATS``) and each round, two fresh
processes time ``Grammar.from_json_schema({"type": "string", "format": F})``
(canonical escapes; imports untimed, empty cache): one reads the format from
``format_tables/``, the other builds it (``formats`` pointed at a missing
table file), in alternating order.  Reported: the medians and their ratio
(docs/json-schema.md, "Formats computed ahead").

usage: python -m benchmarks.run_format_tables [--rounds 7] [--formats uri email ...]
"""
import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def child(fmt, mode):
    os.environ["CFGMASK_CACHE_DIR"] = cache = tempfile.mkdtemp(prefix="cfgmask-format-tables-")
    atexit.register(shutil.rmtree, cache, True)   # scratch: never left in /tmp
    import cfgmask
    import cfgmask.frontends.json_schema  # noqa: F401  (imports untimed)
    from cfgmask.frontends.json_schema import formats
    if mode == "built":     # no table file: every format is built
        formats.TABLE_DIR += ".absent"
    t0 = time.perf_counter()
    cfgmask.Grammar.from_json_schema({"type": "string", "format": fmt})
    ms = 1e3 * (time.perf_counter() - t0)
    if formats.from_table(fmt, True) != (mode == "table"):
        sys.exit(f"format {fmt}: the table was {'not ' if mode == 'table' else ''}used")
    print(json.dumps({"ms": ms}))


def main():
    from cfgmask.frontends.json_schema.strings import FORMATS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--formats", nargs="*", default=list(FORMATS))
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(*args.child)
    unknown = [f for f in args.formats if f not in FORMATS]
    if unknown or args.rounds < 1:
        ap.error(f"unknown formats {unknown} (known: {', '.join(FORMATS)})" if unknown
                 else f"--rounds must be at least 1, got {args.rounds}")
    print("| format | built ms | table ms | ratio |\n|---|--:|--:|--:|")
    for fmt in args.formats:
        got = {"built": [], "table": []}
        for r in range(args.rounds):
            for mode in (("built", "table") if r % 2 == 0 else ("table", "built")):
                out = subprocess.run([sys.executable, "-m", "benchmarks.run_format_tables", "--child", fmt, mode],
                                     capture_output=True, text=True, check=True)
                got[mode].append(json.loads(out.stdout.strip().splitlines()[-1])["ms"])
        b, t = statistics.median(got["built"]), statistics.median(got["table"])
        print(f"| `{fmt}` | {b:.1f} | {t:.1f} | {t / b:.2f} |", flush=True)


if __name__ == "__main__":
    main()
