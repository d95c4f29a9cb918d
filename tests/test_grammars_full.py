"""The bundled grammars on the full corpora (run with ``pytest -m slow``).

* JSON: every JSONTestSuite file (y_ accepted, n_ rejected, i_ as listed in
  test_grammars_lark.JSON_I_ACCEPTED), the JSON Schema Test Suite and the
  JSONSchemaBench documents -- with lark and with greedy lexing.
* SQL: all 1,748 Spider queries, with lark and with greedy lexing; at least
  99.5% must parse (today: all).
* JavaScript: every file of the Debian corpus with lark (per-file timeout,
  timeouts reported apart); at least 95% of the ES5 and 90% of the ES2015+
  files must parse.

The documents are checked in worker processes by support/coverage.py
(the same code with which benchmarks/coverage/run_coverage.py writes the
committed results and docs/grammars.md's tables). Set CFGMASK_COVERAGE_JOBS
for more workers (default 2) and CFGMASK_JS_TIMEOUT for the per-file limit
in seconds (default 300); expect about an hour per checker for JavaScript on
one core.
"""
import os

import pytest

from support import corpora
from tests.test_grammars_lark import JSON_I_ACCEPTED

pytestmark = pytest.mark.slow

JOBS = int(os.environ.get("CFGMASK_COVERAGE_JOBS", "2"))
JS_TIMEOUT = int(os.environ.get("CFGMASK_JS_TIMEOUT", "300"))


def _run(grammar, checkers, **kw):
    pytest.importorskip("regex", reason="greedy lexing check needs the regex module")
    from support import coverage

    return coverage.run(grammar, checkers, jobs=JOBS, **kw)


def _rate(records, checker):
    return sum(r.get(checker) == "ok" for r in records) / max(1, len(records))


def test_json_all_corpora():
    corpora.require("json")
    records = _run("json", ["lark", "greedy"], timeout=900)
    wrong = []
    for r in records:
        name = r["id"].split("/", 1)[1]
        if r["id"].startswith("jsontestsuite/"):
            want = {"y": True, "n": False}.get(name[0], name in JSON_I_ACCEPTED)
        else:
            want = True
        for c in ("lark", "greedy"):
            got = r[c] == "ok"
            # RecursionError/timeout on the 100 KB and 250 KB n_ files count as rejections
            if got != want:
                wrong.append((c, r["id"], r[c], r.get(c + "_error")))
    assert not wrong


def test_spider_full():
    corpora.require("sql/spider-dev-queries.json")
    records = _run("sql", ["lark", "greedy"], timeout=120)
    assert len(records) == 1748
    for c in ("lark", "greedy"):
        failures = [(r["id"], r.get(c + "_error")) for r in records if r[c] != "ok"]
        assert _rate(records, c) >= 0.995, failures


@pytest.mark.hours
def test_js_corpus_full():
    corpora.require_js_corpus()
    records = _run("javascript", ["lark"], timeout=JS_TIMEOUT)
    report = {}
    for es, minimum in (("es5", 0.95), ("es2015+", 0.90)):
        recs = [r for r in records if r["es"] == es]
        timeouts = [r["id"] for r in recs if r["lark"] == "timeout"]
        rejected = [(r["id"], r.get("lark_error")) for r in recs if r["lark"] not in ("ok", "timeout")]
        rate = _rate(recs, "lark")
        report[es] = (rate, len(recs), timeouts, rejected)
        assert rate >= minimum, report[es]
