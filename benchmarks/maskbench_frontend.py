#!/usr/bin/env python3
"""Time cfgmask's JSON Schema front end alone over MaskBench schemas.

Each schema goes through ``Grammar.from_json_schema(schema,
whitespace="flexible")`` (the runner's style) once, in this process, after
one warm-up schema; nothing is compiled against a vocabulary, so this is
the part of TTFM that ``run_maskbench.py`` cannot separate. Prints the total,
p50/p90/p99 and the slowest schemas; ``--digest FILE`` writes one line per
schema with a SHA-1 of the grammar (rules and terminals) or the error, so
two trees can be compared for identical output (``diff``) as well as speed.

Usage (an A/B: put the other tree first on ``PYTHONPATH``)::

    python -m benchmarks.maskbench_frontend --sample 300
    python -m benchmarks.maskbench_frontend --full --digest /tmp/after.txt
    python -m benchmarks.maskbench_frontend --files Github_medium---o46145.json
"""

import argparse
import hashlib
import json
import os
import sys
import time

from benchmarks.run_maskbench import data_files, default_data_dir, stratified_sample


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--sample", type=int, default=300, help="stratified sample size (default 300)")
    mode.add_argument("--full", action="store_true", help="every schema")
    mode.add_argument("--files", nargs="+", help="these MaskBench file names only")
    ap.add_argument("--data", default=default_data_dir(), help="folder of MaskBench *.json files")
    ap.add_argument("--slowest", type=int, default=10, help="how many of the slowest to list")
    ap.add_argument("--digest", help="write '<name> <sha1 of the grammar, or the error>' lines here")
    args = ap.parse_args(argv)

    import cfgmask
    names, _ = data_files(args.data, None)
    chosen = args.files or (names if args.full else stratified_sample(names, args.sample))
    cfgmask.Grammar.from_json_schema({"type": "object"})  # imports and first-use tables, untimed
    times, lines = [], []
    for name in chosen:
        with open(os.path.join(args.data, name), encoding="utf-8") as f:
            schema = json.load(f)["schema"]
        t0 = time.perf_counter()
        try:
            g = cfgmask.Grammar.from_json_schema(schema, whitespace="flexible")
        except Exception as e:  # noqa: BLE001 - a refusal is an outcome here
            g, out = None, f"ERR {type(e).__name__} {str(e)[:200]}"
        times.append((time.perf_counter() - t0, name))
        if args.digest:
            if g is not None:
                text = g.rules_text() + "\n" + "\n".join(g.terminal_names) + "\n" + \
                    "\n".join(g.terminal_patterns)
                out = hashlib.sha1(text.encode()).hexdigest()
            lines.append(f"{name} {out}\n")
    if args.digest:
        with open(args.digest, "w", encoding="utf-8") as f:
            f.writelines(lines)
    ts = sorted(t for t, _ in times)
    n = len(ts)
    pick = lambda p: 1e3 * ts[min(n - 1, int(p * n))]  # noqa: E731
    print(f"{n} schemas, front end total {sum(ts):.2f} s; p50 {pick(.5):.2f} ms, "
          f"p90 {pick(.9):.2f} ms, p99 {pick(.99):.1f} ms (cfgmask at {os.path.dirname(cfgmask.__file__)})")
    for t, name in sorted(times, reverse=True)[:args.slowest]:
        print(f"  {1e3 * t:9.1f} ms  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
