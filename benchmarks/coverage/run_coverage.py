#!/usr/bin/env python3
"""Coverage of the bundled grammars on the shared corpora.

For each document this records whether lark (dynamic Earley, the project's
parse oracle), greedy lexing (support/greedy_check.py: what a cfgmask matcher
lets through), cfgmask itself (a vocabulary of the 256 single bytes) and, for
JavaScript, ``node --check`` accept it; the documents and the checkers are
:mod:`support.coverage`, which tests/test_grammars_full.py runs too.

Results go to benchmarks/coverage/results/<grammar>.json (one record per
document plus a summary); a markdown summary is printed.

usage:
  python -m benchmarks.coverage.run_coverage json|sql|javascript [options]
    --checkers lark,greedy,cfgmask,node   which checks to run (default: all)
    --timeout S                   per document and checker (default 300)
    --jobs N                      worker processes (default 1)
    --max-bytes N                 skip larger JavaScript files (default: none)
    --js-corpus DIR               materialised corpus (default $CFGMASK_JS_CORPUS
                                  or <corpora>/js/materialized)
Corpora: $CFGMASK_CORPORA or ../shared/corpora next to the repository.
"""
import argparse
import json
import os
import sys
import time

from support.coverage import documents, run, summarize

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")


def _keep(rec, checkers):
    """JSON/SQL results keep the documents worth a look: any verdict other
    than ok, and JSONTestSuite's n_ and i_ files."""
    if any(rec.get(c) not in (None, "ok") for c in checkers):
        return True
    return rec["id"].startswith(("jsontestsuite/i_", "jsontestsuite/n_"))


def write_results(out, meta, summary, records, all_records):
    """One document record per line, so that diffs stay readable."""
    checkers = meta["checkers"]
    if not all_records:
        meta = dict(meta, documents_listed="only documents with a verdict other than ok, and "
                                           "JSONTestSuite n_/i_ files")
        records = [r for r in records if _keep(r, checkers)]
    with open(out, "w", encoding="utf-8") as f:
        f.write('{"meta": %s,\n"summary": %s,\n"documents": [\n' % (
            json.dumps(meta), json.dumps(summary, indent=1)))
        f.write(",\n".join(json.dumps(r, ensure_ascii=False) for r in records))
        f.write("\n]}\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grammar", choices=["json", "sql", "javascript"])
    ap.add_argument("--checkers", default="lark,greedy,cfgmask,node")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--max-bytes", type=int, default=None)
    ap.add_argument("--js-corpus", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    checkers = [c for c in args.checkers.split(",") if c]
    if args.grammar != "javascript":
        checkers = [c for c in checkers if c != "node"]
    docs = documents(args.grammar, args.js_corpus, args.max_bytes)
    t0 = time.time()
    records = run(args.grammar, checkers, args.timeout, args.jobs, docs,
                  progress=lambda line: print(line, flush=True))
    summary = summarize(args.grammar, records, checkers)
    out = args.out or os.path.join(RESULTS, args.grammar + ".json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    import lark
    meta = {"grammar": "grammars/%s.lark" % args.grammar, "lark": lark.__version__,
            "python": sys.version.split()[0], "checkers": checkers, "timeout_s": args.timeout,
            "max_bytes": args.max_bytes, "wall_s": round(time.time() - t0, 1),
            "date": time.strftime("%Y-%m-%d")}
    write_results(out, meta, summary, records, all_records=args.grammar == "javascript")
    print(json.dumps(summary, indent=1))
    print("wrote", out)


if __name__ == "__main__":
    main()
