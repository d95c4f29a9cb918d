#!/usr/bin/env python3
"""Warm mask latency of two versions of one grammar, in one process.

For a change to a bundled grammar (``tools/javascript.lark.in`` and the
like): separate ``run_masks.py`` runs differ by 10-30% between repeats on
this shared 2-core machine, more than most grammar changes move a mask.
Here both grammars are compiled against the same vocabulary in one
process, every document is replayed once per grammar to fill the lazy
caches (and screened: both must accept all of its tokens), then the
documents are replayed ``--rounds`` times with the garbage collector off,
the two grammars taking turns document by document (the order alternates).
What is timed is one ``fill_bitmask`` call per position, as in
``run_masks.py``; the report gives p50/p90/p99/mean per grammar and B/A.

usage:
  python -m benchmarks.ab_grammar OLD.lark NEW.lark [--grammar javascript]
      [--docs 14] [--rounds 3] [--tokenizer smollm2]

``--grammar`` picks the documents (benchmarks/workload.py). To get the old
grammar of a commit: ``git show REV:grammars/javascript.lark > /tmp/old.lark``.
"""
import argparse
import gc
import statistics
import sys
import time

import cfgmask
from benchmarks import engines, workload


def _replay(compiled, bitmask, ids, out=None):
    """Fill, then consume, at every position; False if a token is refused."""
    m = compiled.matcher()
    for t in ids:
        t0 = time.perf_counter_ns()
        m.fill_bitmask(bitmask)
        dt = time.perf_counter_ns() - t0
        if out is not None:
            out.append(dt)
        if not m.try_consume(t):
            return False
    return True


def _quantile(sorted_ns, p):
    return sorted_ns[int(p * (len(sorted_ns) - 1))] / 1000.0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", help="grammar file A (the baseline)")
    ap.add_argument("b", help="grammar file B")
    ap.add_argument("--grammar", default="javascript", choices=sorted(workload.CANDIDATES),
                    help="which documents to replay (default javascript)")
    ap.add_argument("--docs", type=int, default=14)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokenizer", default="smollm2", choices=sorted(engines.TOKENIZERS))
    args = ap.parse_args(argv)

    tok = engines.Tok(args.tokenizer)
    eng = engines.CfgmaskEngine()
    eng.prepare(tok)
    compiled, bitmasks = {}, {}
    for side, path in (("A", args.a), ("B", args.b)):
        print("compiling %s: %s" % (side, path), file=sys.stderr)
        compiled[side] = cfgmask.compile(cfgmask.Grammar.from_file(path), eng.vocab)
        bitmasks[side] = compiled[side].allocate_bitmask()
    docs = [tok.encode(text) for _, text in workload.candidates(args.grammar)[: args.docs]]
    kept = [ids for ids in docs if all(_replay(compiled[s], bitmasks[s], ids) for s in "AB")]
    print("%d of %d documents accepted by both; warm-up done" % (len(kept), len(docs)), file=sys.stderr)

    times = {"A": [], "B": []}
    gc.disable()
    try:
        for r in range(args.rounds):
            for i, ids in enumerate(kept):
                for side in ("AB" if (i + r) % 2 == 0 else "BA"):
                    _replay(compiled[side], bitmasks[side], ids, times[side])
    finally:
        gc.enable()

    stats = {}
    for side in "AB":
        xs = sorted(times[side])
        stats[side] = [_quantile(xs, 0.5), _quantile(xs, 0.9), _quantile(xs, 0.99), statistics.mean(xs) / 1000.0]
    print("| grammar | masks | p50 | p90 | p99 | mean |")
    print("|---|---:|---:|---:|---:|---:|")
    for side, path in (("A", args.a), ("B", args.b)):
        print("| %s `%s` | %d | %s |" % (side, path, len(times[side]),
                                       " | ".join("%.1f µs" % v for v in stats[side])))
    print("| B / A | | %s |" % " | ".join("%.2f×" % (b / a) for a, b in zip(stats["A"], stats["B"])))


if __name__ == "__main__":
    main()
