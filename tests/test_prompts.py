"""The demo's prompt library (cfgmask/app/prompts.py) and engine judges (cfgmask/app/judges.py).

The judges are checked against documents whose verdict is known (a correct
query against the prompt's schema passes; the same query against a table the
schema lacks fails), and every prompt's reference answer must pass its judge
and be a document of both the full grammar and the generation profile.
"""

import shutil
from types import SimpleNamespace

import pytest

from cfgmask.app import cli, judges
from cfgmask.errors import ConfigurationError
from cfgmask.app.prompts import PROMPTS, SYSTEM
from tests.test_profiles import accepts


def test_six_prompts_each():
    assert set(PROMPTS) == {"json", "sql", "javascript"} == set(SYSTEM)
    for name, prompts in PROMPTS.items():
        assert len(prompts) == 6, name
        assert len({p.text for p in prompts}) == 6


def test_sql_prompts_carry_their_schema():
    for p in PROMPTS["sql"]:
        assert p.schema and p.schema in p.text and "CREATE TABLE" in p.schema
        assert judges.judge_sql(p.reference, p.schema) is None, p.reference
        assert judges.judge_sql(p.reference) is not None          # no schema: unknown table
        assert "no such table" in judges.judge_sql("SELECT * FROM no_such_table;", p.schema)


def test_sql_judge():
    schema = "CREATE TABLE t (a INTEGER, b TEXT);"
    assert judges.judge_sql("SELECT a FROM t WHERE b = 'x';", schema) is None
    assert "no such column" in judges.judge_sql("SELECT c FROM t;", schema)
    assert "syntax error" in judges.judge_sql("SELECT FROM t;", schema)
    assert judges.judge_sql("SELECT 1; SELECT 2;", schema) is not None  # one statement only
    assert judges.judge_sql("DELETE FROM t;", schema) is None           # prepared, never run


def test_json_judge():
    assert judges.judge_json('{"a": [1, 2.5, null, true]}') is None
    assert judges.judge_json("[1, 2,]") is not None
    assert judges.judge_json("NaN") is not None and judges.judge_json("[Infinity]") is not None
    assert judges.judge_json("") is not None


def test_javascript_judge():
    if shutil.which("node") is None:
        with pytest.raises(ConfigurationError, match="node"):
            judges.judge_javascript("1")
        pytest.skip("node is not installed")
    assert judges.judge_javascript("const x = 1;\nconsole.log(x);\n") is None
    assert judges.judge_javascript("export const x = 1;") is None        # as a module
    assert judges.judge_javascript("function (") is not None
    for p in PROMPTS["javascript"]:
        assert judges.judge_javascript(p.reference) is None, p.reference


@pytest.mark.parametrize("name", ["sql", "javascript"])
def test_references_are_profile_documents(name):
    for p in PROMPTS[name]:
        assert accepts(name, "full", p.reference), p.reference
        assert accepts(name, "generate", p.reference), p.reference


def test_extract_document():
    assert judges.extract_document("Sure!\n```sql\nSELECT 1;\n```\nDone.") == "SELECT 1;"
    assert judges.extract_document("```\n{}\n```") == "{}"
    assert judges.extract_document("```json\n{\"a\": 1}") == '{"a": 1}'   # cut before the fence closed
    assert judges.extract_document("  SELECT 2;\n") == "SELECT 2;"


def test_judge_dispatch():
    assert judges.judge("json", "[]") is None
    assert judges.judge("sql", "SELECT 1") is None
    with pytest.raises(ConfigurationError):
        judges.judge("python", "1")


def test_demo_lanes():
    ns = lambda **kw: SimpleNamespace(**{"full_language": False, "lanes": ",".join(cli.DEMO_LANES), **kw})  # noqa: E731
    assert cli._demo_lanes(ns()) == ("unconstrained", "full", "generate")
    assert cli._demo_lanes(ns(full_language=True)) == ("unconstrained", "full")
    assert cli._demo_lanes(ns(lanes="generate")) == ("generate",)
    with pytest.raises(ConfigurationError):
        cli._demo_lanes(ns(lanes="constrained"))
