#!/usr/bin/env python3
"""Markdown tables from benchmarks/coverage/results/*.json (for docs/grammars.md and the README).

usage: python -m benchmarks.coverage.report [json sql javascript times]
       python -m benchmarks.coverage.report readme [--write]   # the README's coverage table
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
CHECKERS = ["lark", "greedy", "cfgmask", "node"]
LABEL = {"lark": "lark (dynamic Earley)", "greedy": "greedy lexing (support/greedy_check.py)",
         "cfgmask": "cfgmask matcher", "node": "node --check"}


def load(name):
    with open(os.path.join(RESULTS, name + ".json"), encoding="utf-8") as f:
        return json.load(f)


def pct(n, d):
    return "%d / %d (%.1f%%)" % (n, d, 100.0 * n / d) if d else "-"


def table(summary, checkers, expect=None):
    rows = ["| corpus | documents | KB | " + " | ".join(LABEL[c] for c in checkers) + " |",
            "|---|---:|---:|" + "---|" * len(checkers)]
    for key, s in summary.items():
        cells = []
        for c in checkers:
            counts = s.get(c)
            if not counts:
                cells.append("-")
                continue
            total = sum(counts.values())
            ok = counts.get("ok", 0)
            extra = ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items()) if k not in ("ok", "reject"))
            cell = pct(ok, total)
            if key.endswith("n_") and expect is None:
                cell = "%d accepted" % ok
            if extra:
                cell += " (%s)" % extra
            if c + "_seconds" in s:
                cell += ", %.0f s" % s[c + "_seconds"]
            cells.append(cell)
        rows.append("| %s | %d | %.0f | %s |" % (key, s["documents"], s["bytes"] / 1024.0, " | ".join(cells)))
    return "\n".join(rows)


def json_section():
    data = load("json")
    checkers = [c for c in CHECKERS if c in data["meta"]["checkers"]]
    out = ["### JSON", "", table(data["summary"], checkers), ""]
    out.append("JSONTestSuite `i_` files (implementation-defined):")
    out.append("")
    out.append("| file | " + " | ".join(checkers) + " | why |")
    out.append("|---|" + "---|" * (len(checkers) + 1))
    for r in data["documents"]:
        if r["id"].startswith("jsontestsuite/i_"):
            name = r["id"].split("/", 1)[1]
            out.append("| %s | %s | %s |" % (name, " | ".join(r.get(c, "-") for c in checkers),
                                              _i_reason(name, r)))
    return "\n".join(out)


def _i_reason(name, rec):
    if name.startswith("i_number"):
        return "a valid number; the grammar sets no size or precision limit"
    if "surrogate" in name and rec.get("lark") == "ok":
        return "`\\u` escapes of unpaired surrogates are valid JSON syntax"
    if name == "i_structure_500_nested_arrays.json":
        return "no nesting limit"
    if "BOM" in name and "UTF-8" in name:
        return "a byte-order mark is not JSON whitespace"
    err = rec.get("cfgmask_error") or ""
    where = err.split(" (")[0] if err.startswith("byte") else "rejected"
    return "not UTF-8 (cfgmask: %s)" % where


def sql_section():
    data = load("sql")
    checkers = [c for c in CHECKERS if c in data["meta"]["checkers"]]
    out = ["### SQL (Spider)", "", table(data["summary"], checkers), ""]
    bad = [r for r in data["documents"] if any(r.get(c) not in (None, "ok") for c in checkers)]
    if bad:
        out.append("Rejections:")
        out.append("")
        for r in bad:
            out.append("* %s: %s" % (r["id"], "; ".join(
                "%s: %s" % (c, r.get(c + "_error") or r.get(c)) for c in checkers if r.get(c) != "ok")))
    else:
        out.append("No rejections.")
    return "\n".join(out)


def js_section():
    data = load("javascript")
    checkers = [c for c in CHECKERS if c in data["meta"]["checkers"]]
    out = ["### JavaScript (Debian corpus)", "", table(data["summary"], checkers), ""]
    for c in checkers:
        bad = [r for r in data["documents"] if r.get(c) not in (None, "ok")]
        if not bad:
            continue
        out.append("Not accepted by %s:" % LABEL[c])
        out.append("")
        for r in sorted(bad, key=lambda r: (r.get(c), r["id"])):
            why = r.get(c + "_error") or ""
            out.append("* `%s` (%s, %d bytes): %s %s" % (r["id"], r["es"], r["bytes"], r.get(c), why[:160]))
        out.append("")
    return "\n".join(out)


def times_section():
    rows = ["| grammar | corpus | KB | " + " | ".join(LABEL[c] for c in ("lark", "greedy", "cfgmask")) + " |",
            "|---|---|---:|---|---|---|"]
    slow = []
    for name in ("json", "sql", "javascript"):
        path = os.path.join(RESULTS, name + ".json")
        if not os.path.exists(path):
            continue
        data = load(name)
        for key, s in data["summary"].items():
            cells = []
            for c in ("lark", "greedy", "cfgmask"):
                sec = s.get(c + "_seconds")
                if sec is None:
                    cells.append("-")
                else:
                    kbs = s["bytes"] / 1024.0 / sec if sec else float("inf")
                    cells.append("%.0f s (%.1f KB/s)" % (sec, kbs) if sec >= 1 else "%.1f s" % sec)
            rows.append("| %s | %s | %.0f | %s |" % (name, key, s["bytes"] / 1024.0, " | ".join(cells)))
        if name == "javascript":
            slow = sorted(data["documents"], key=lambda r: -r.get("lark_s", 0))[:6]
    out = "\n".join(rows)
    if slow:
        out += "\n\nSlowest JavaScript files with lark: " + ", ".join(
            "%s (%.0f KB, %.0f s)" % (r["id"].split("__")[-1], r["bytes"] / 1024.0, r["lark_s"]) for r in slow) + "."
    return out


def _frac(counts, key="ok"):
    return "%d/%d" % (counts.get(key, 0), sum(counts.values()))


def readme_section():
    """The README's summary table (lark and cfgmask byte-by-byte verdicts, node --check)."""
    js, js_, sql = load("json")["summary"], load("javascript")["summary"], load("sql")
    dates = sorted({load(n)["meta"]["date"] for n in ("json", "sql", "javascript")})
    y, n = js["jsontestsuite y_"], js["jsontestsuite n_"]
    rows = [
        "Printed by `python -m benchmarks.coverage.report readme` from benchmarks/coverage/results/*.json "
        "(written by `benchmarks/coverage/run_coverage.py` on %s)." % ", ".join(dates), "",
        "| grammar | corpus | Lark (Earley) | cfgmask | engine check |",
        "|---|---|---|---|---|",
        "| json.lark | JSONTestSuite `y_` / `n_` | %s accepted, %s refused | %s accepted, %s refused, "
        "each `n_` at its expected byte | — |" % (_frac(y["lark"]), _frac(n["lark"], "reject"),
                                                   _frac(y["cfgmask"]), _frac(n["cfgmask"], "reject")),
        "| json.lark | JSON Schema Test Suite, JSONSchemaBench | %s, %s | %s, %s | — |" % (
            _frac(js["json-schema-test-suite"]["lark"]), _frac(js["jsonschemabench"]["lark"]),
            _frac(js["json-schema-test-suite"]["cfgmask"]), _frac(js["jsonschemabench"]["cfgmask"])),
    ]
    sp = sql["summary"]["spider"]
    rows.append("| sql.lark | Spider (%s queries) | %s | %s | SQLite: no syntax error on sampled documents |"
                % (format(sp["documents"], ","), _frac(sp["lark"]), _frac(sp["cfgmask"])))
    for key, label in (("es5", "ES5"), ("es2015+", "ES2015+")):
        s_ = js_[key]
        c = s_["cfgmask"]
        pct = " (%.1f%%)" % (100.0 * c.get("ok", 0) / sum(c.values())) if c.get("ok", 0) != sum(c.values()) else ""
        node = ("`node --check` %s" % _frac(s_["node"])) if "node" in s_ else "—"
        rows.append("| javascript.lark | Debian %s (%d files) | %s | %s%s | %s |"
                    % (label, s_["documents"], _frac(s_["lark"]), _frac(c), pct, node))
    return "\n".join(rows)


def main(argv):
    if argv[1:2] == ["readme"]:
        text = readme_section()
        print(text)
        if "--write" in argv[2:]:
            from benchmarks import doc_blocks
            doc_blocks.replace_block(os.path.join(os.path.dirname(os.path.dirname(HERE)), "README.md"),
                                     "coverage:readme", text)
        return
    names = argv[1:] or ["json", "sql", "javascript", "times"]
    parts = {"json": json_section, "sql": sql_section, "javascript": js_section}
    for n in names:
        if n == "times":
            print("### Times")
            print()
            print(times_section())
        elif os.path.exists(os.path.join(RESULTS, n + ".json")):
            print(parts[n]())
            print()


if __name__ == "__main__":
    main(sys.argv)
