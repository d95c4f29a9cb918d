#!/usr/bin/env python3
"""Coverage and mask time of the SQL dialects (issue 11): the numbers in docs/grammars.md.

Coverage (``--coverage``): for each dialect (sqlite, postgres, mysql), its
corpus ``benchmarks/coverage/sql_dialects/<dialect>.sql`` (written for
cfgmask) and Spider (``<corpora>/sql``): how many queries the dialect's
engine parses (support/sql_judges.py: SQLite prepare, pglast, MariaDB
PREPARE) and how many the dialect's grammar accepts (cfgmask, 256 single
bytes, fed byte by byte).  The queries the grammar refuses are listed.

Masks (``--masks``): benchmarks/run_masks.py's measurement (one fresh
compile, 3 cold + N warm documents, engines taking turns, SmolLM2's
tokenizer) for the sql grammar before issue 11 (``git show REV:grammars/
sql.lark``, ``--old-rev``, default the commit this branch started from)
and for each dialect, cfgmask next to llguidance loading the same text.
Documents: Spider for the old grammar and sqlite, the dialect corpus for
postgres and mysql.  Read the cfgmask / llguidance ratios: the machine is
shared and noisy.

usage:
  python -m benchmarks.coverage.run_sql_dialects --coverage --masks [--warm 37] [--json PATH]
MariaDB: $CFGMASK_MARIADB_SOCKET, else a private server (support/sql_judges.py).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import cfgmask
from support import corpora, sql_judges

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))

DIALECTS = ("sqlite", "postgres", "mysql")
OLD_REV = "883336e"


def corpus(dialect):
    path = os.path.join(HERE, "sql_dialects", f"{dialect}.sql")
    with open(path, encoding="utf-8") as f:
        return [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("--")]


def accepter(dialect):
    vocab = cfgmask.Vocabulary([bytes([i]) for i in range(256)] + [b"<eos>"], eos_token_ids=[256])
    c = cfgmask.compile(cfgmask.Grammar.builtin("sql", dialect=dialect), vocab)

    def accepts(text):
        m = c.matcher()
        data = text.encode("utf-8")
        return m.consume_bytes(data) == len(data) and m.is_accepting()
    return accepts


def coverage():
    out = {}
    spider = corpora.spider_queries()
    for d in DIALECTS:
        acc = accepter(d)
        j = sql_judges.get(d)
        for name, qs in ((f"{d} corpus", corpus(d)), ("spider", spider)):
            t0 = time.perf_counter()
            refused = [q for q in qs if not acc(q)]
            valid = None if j is None else sum(1 for q in qs if j.syntax_error(q) is None)
            refused_valid = None if j is None else [q for q in refused if j.syntax_error(q) is None]
            out[f"{d} / {name}"] = {
                "dialect": d, "corpus": name, "n": len(qs), "accepted": len(qs) - len(refused),
                "judge": None if j is None else j.name, "judge_valid": valid,
                "refused": refused[:50], "refused_but_valid": refused_valid and refused_valid[:50],
                "seconds": time.perf_counter() - t0}
            r = out[f"{d} / {name}"]
            print(f"{d:8s} {name:16s} grammar {r['accepted']}/{r['n']}  judge-valid {valid}/{len(qs)}")
    return out


def masks(old_rev, n_warm):
    from benchmarks import engines, run_masks, workload
    old_text = subprocess.run(["git", "-C", REPO, "show", f"{old_rev}:grammars/sql.lark"],
                              check=True, capture_output=True, text=True).stdout
    texts = {"sql (before issue 11)": old_text}
    texts.update({f"sql:{d}": cfgmask.Grammar.builtin_text("sql", d) for d in DIALECTS})
    spider = workload.sql_candidates()
    docs = {"sql (before issue 11)": spider, "sql:sqlite": spider,
            "sql:postgres": [(f"postgres:{i}", q) for i, q in enumerate(corpus("postgres"))],
            "sql:mysql": [(f"mysql:{i}", q) for i, q in enumerate(corpus("mysql"))]}
    engines.grammar_text = texts.__getitem__
    workload.candidates = docs.__getitem__
    tok = engines.Tok("smollm2")
    active = []
    for name in ("cfgmask", "llguidance"):
        e = engines.ENGINES[name]()
        t0 = time.perf_counter()
        e.prepare(tok)
        e.prep_s = time.perf_counter() - t0
        active.append(e)
    out = {}
    for g in texts:
        print(f"[{g}]")
        res = run_masks.run_pair(active, g, tok, 3, n_warm, 3)
        c, l = res["engines"]["cfgmask"], res["engines"]["llguidance"]
        out[g] = {"docs_warm": len(res["docs_warm"]), "refused": {k: len(v) for k, v in res["refused"].items()},
                  "cfgmask_warm_p50_us": c["warm"]["p50"], "cfgmask_warm_mean_us": c["warm"]["mean"],
                  "llguidance_warm_p50_us": l["warm"]["p50"], "llguidance_warm_mean_us": l["warm"]["mean"],
                  "ratio_p50": c["warm"]["p50"] / l["warm"]["p50"],
                  "ratio_mean": c["warm"]["mean"] / l["warm"]["mean"],
                  "cfgmask_compile_s": c["compile_s"], "llguidance_compile_s": l["compile_s"],
                  "cfgmask_ttfm_s": c["ttfm_s"]}
        r = out[g]
        print(f"  warm p50 cfgmask {r['cfgmask_warm_p50_us']:.1f} us, llguidance {r['llguidance_warm_p50_us']:.1f} us"
              f" (ratio {r['ratio_p50']:.2f}); mean ratio {r['ratio_mean']:.2f}; compile {r['cfgmask_compile_s']:.2f} s")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--coverage", action="store_true")
    ap.add_argument("--masks", action="store_true")
    ap.add_argument("--old-rev", default=OLD_REV)
    ap.add_argument("--warm", type=int, default=37)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "sql_dialects.json"))
    a = ap.parse_args()
    res = {"date": datetime.date.today().isoformat(),
           "command": " ".join(["python", "-m", "benchmarks.coverage.run_sql_dialects"] + sys.argv[1:])}
    if a.coverage:
        res["coverage"] = coverage()
    if a.masks:
        res["masks"] = masks(a.old_rev, a.warm)
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
