"""The schema-aware SQL generation profile: ``Grammar.builtin("sql", profile="generate", database=...)``.

Oracle: SQLite itself.  Every query the profile accepts here is also
prepared (``EXPLAIN``) by SQLite against the database the profile was built
from; every query it must refuse names a table or column the schema lacks,
or is a statement kind outside the allowed ones.  Queries sampled at random
under the masks (SmolLM2 tokens; masks checked against tests/reference.py)
must parse with the full grammar, and any "no such table/column" SQLite
reports must be a scoping miss (an unchecked qualifier, another table's
column), never a table or column name the schema lacks.
"""

import functools
import re
import sqlite3

import pytest

import cfgmask
from cfgmask.frontends import profiles
from cfgmask.grammar import Grammar
from cfgmask.frontends.sql_schema import SqlSchema, read_schema
from support.vocabs import byte_vocab, takes

# names that need quoting included: "order" and "group" are keywords, "first name" has a space
DDL = """
CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
CREATE TABLE concert (id INTEGER PRIMARY KEY, singer_id INTEGER REFERENCES singer(id), venue TEXT, year INTEGER);
CREATE TABLE "order" (id INTEGER PRIMARY KEY, "first name" TEXT, "group" INTEGER, amount REAL);
CREATE VIEW adult AS SELECT name, age FROM singer WHERE age >= 18;
"""


@pytest.fixture(scope="module")
def db_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("schema") / "music.sqlite"
    con = sqlite3.connect(path)
    con.executescript(DDL)
    con.close()
    return path


@functools.lru_cache(maxsize=None)
def compiled(statements=None):
    g = Grammar.builtin("sql", profile="generate", database=SqlSchema.from_ddl(DDL), statements=statements)
    return cfgmask.compile(g, byte_vocab())


@functools.lru_cache(maxsize=None)
def full_compiled():
    return cfgmask.compile(Grammar.builtin("sql"), byte_vocab())


def explain(path, doc):
    """SQLite's error preparing ``doc`` against the database at ``path`` (``None``: it prepares)."""
    con = sqlite3.connect(path)
    try:
        con.execute("EXPLAIN " + doc)
    except (sqlite3.Error, sqlite3.Warning) as e:
        return str(e)
    finally:
        con.close()
    return None


# ---------------------------------------------------------------- the schema

def test_read_schema_from_database_and_ddl(db_path, tmp_path):
    ddl = tmp_path / "schema.sql"
    ddl.write_text(DDL, encoding="utf-8")
    for s in (read_schema(db_path), read_schema(str(ddl)), SqlSchema.from_ddl(DDL)):
        assert s.table_names == ("singer", "concert", "order", "adult")
        assert s.column_names == ("id", "name", "country", "age", "singer_id", "venue", "year",
                                  "first name", "group", "amount")
    with sqlite3.connect(db_path) as con:
        assert read_schema(con).table_names[0] == "singer"


def test_read_schema_errors(tmp_path):
    with pytest.raises(cfgmask.ConfigurationError, match="cannot read"):
        read_schema(tmp_path / "nope.sql")
    bad = tmp_path / "bad.sql"
    bad.write_text("CREATE TABLE (", encoding="utf-8")
    with pytest.raises(cfgmask.ConfigurationError, match="DDL"):
        read_schema(bad)
    empty = tmp_path / "empty.sql"
    empty.write_text("-- nothing\n", encoding="utf-8")
    with pytest.raises(cfgmask.ConfigurationError, match="no tables"):
        read_schema(empty)
    with pytest.raises(cfgmask.ConfigurationError):
        read_schema(42)


def test_database_file_is_not_written(db_path):
    before = db_path.read_bytes()
    Grammar.builtin("sql", profile="generate", database=db_path)
    assert db_path.read_bytes() == before


# ------------------------------------------------------- accepted and refused

ACCEPTED = [
    "SELECT name FROM singer WHERE age > 30 ORDER BY age DESC;",
    "select NAME, Country from SINGER",
    "SELECT s.name, c.venue FROM singer AS s JOIN concert AS c ON c.singer_id = s.id;",
    "SELECT singer.name FROM singer",
    "SELECT country, COUNT(*) FROM singer GROUP BY country HAVING COUNT(*) > 1",
    'SELECT "first name", "group" FROM "order" WHERE amount > 10',
    'SELECT o."first name" FROM "order" o',
    "SELECT * FROM concert JOIN singer USING (id)",
    "SELECT name FROM singer WHERE id IN (SELECT singer_id FROM concert WHERE year = 2020)",
    "SELECT name FROM adult",
    "WITH x AS (SELECT age FROM singer) SELECT name FROM singer",
    "VALUES (1, 2)",
    "SELECT s.* FROM singer s",
    "SELECT MAX(age) AS oldest FROM singer;",
]

REFUSED = [
    "SELECT name FROM singers",                      # unknown table
    "SELECT name FROM artist",
    "SELECT title FROM singer",                      # unknown column
    "SELECT s.title FROM singer s",                  # unknown column after a qualifier
    "SELECT name FROM singer ORDER BY oldest",       # a result alias is not a column of the schema
    'SELECT "title" FROM singer',                    # SQLite would read an unknown "..." as a string
    "SELECT first name FROM \"order\"",
    "SELECT * FROM order",                           # a keyword: only "order" names it
    'SELECT "First Name" FROM "order"',              # quoted names are spelled as in the schema
    "SELECT main.singer.name FROM singer",           # s.t.c is refused
    "SELECT * FROM concert JOIN singer USING (title)",
    "WITH x AS (SELECT age FROM singer) SELECT * FROM x",   # a CTE is not a table of the schema
    "INSERT INTO singer (name) VALUES ('a')",        # read-only by default
    "UPDATE singer SET age = 1",
    "DELETE FROM singer",
    "CREATE TABLE t (a)",
    "DROP TABLE singer",                             # never: the grammar has no DROP
]


@pytest.mark.parametrize("doc", ACCEPTED)
def test_accepted_queries_prepare_in_sqlite(doc, db_path):
    assert takes(compiled(), doc), doc
    assert takes(full_compiled(), doc), doc
    assert explain(db_path, doc) is None, (doc, explain(db_path, doc))


@pytest.mark.parametrize("doc", REFUSED)
def test_refused(doc):
    assert not takes(compiled(), doc), doc


@pytest.mark.parametrize("statements,doc,ok", [
    (("select", "insert"), "INSERT INTO singer (name, age) VALUES ('a', 3)", True),
    (("select", "insert"), "INSERT INTO singer (title) VALUES ('a')", False),
    (("select", "insert"), "UPDATE singer SET age = 1", False),
    ("all", "UPDATE singer SET age = age + 1 WHERE name = 'x'", True),
    ("all", "UPDATE singer SET title = 1", False),
    ("all", "DELETE FROM concert WHERE year < 2000", True),
    ("all", "DELETE FROM concerts", False),
    ("all", "CREATE TABLE t (a)", True),
    ("all", "DROP TABLE singer", False),
    ("insert", "INSERT INTO \"order\" (amount) VALUES (1.5)", True),
    ("insert", "SELECT 1", False),
])
def test_statements_widen(statements, doc, ok, db_path):
    assert takes(compiled(statements), doc) == ok, doc
    if ok:
        assert takes(full_compiled(), doc)
        if not doc.startswith("CREATE"):
            assert explain(db_path, doc) is None


def test_options_and_errors(db_path):
    g = Grammar.builtin("sql", profile="generate", database=db_path)
    assert g.profile.options["statements"] == profiles.READ_ONLY
    assert g.profile.options["tables"] == ("singer", "concert", "order", "adult")
    assert "COLUMN_NAME_QUOTED" in g.profile.rewrites
    with pytest.raises(cfgmask.ConfigurationError, match="statements"):
        Grammar.builtin("sql", profile="generate", database=db_path, statements=["drop"])
    with pytest.raises(cfgmask.ConfigurationError, match="drop tables"):
        Grammar.builtin("sql", profile="generate", database=db_path, tables=["singer"])
    with pytest.raises(cfgmask.ConfigurationError, match="sql grammar"):
        Grammar.builtin("json", profile="generate", database=db_path)
    with pytest.raises(cfgmask.ConfigurationError):
        Grammar.builtin("sql", profile="full", database=db_path)
    with pytest.raises(cfgmask.ConfigurationError, match="columns"):
        Grammar.builtin("json", profile="generate", columns=["a"])
    with pytest.raises(cfgmask.ConfigurationError, match="statements"):
        Grammar.builtin("javascript", profile="generate", statements=["select"])
    # statements= alone (no schema) restricts only the statement kinds
    c = cfgmask.compile(Grammar.builtin("sql", profile="generate", statements=["select"]), byte_vocab())
    assert takes(c, "SELECT anything FROM anywhere") and not takes(c, "DELETE FROM t")


@pytest.mark.parametrize("dialect,good,bad", [
    ("postgres", ['SELECT "first name" FROM "order" WHERE amount > 1', "SELECT s.name FROM singer s"],
     ["SELECT title FROM singer", "DELETE FROM singer", "SELECT * FROM `order`"]),
    ("mysql", ["SELECT `first name` FROM `order` WHERE amount > 1", "SELECT s.name FROM singer s"],
     # ("first name" is a string in MySQL, so it is not refused)
     ["SELECT title FROM singer", "DELETE FROM singer", "SELECT `title` FROM `order`", "SELECT * FROM `orders`"]),
])
def test_dialects(dialect, good, bad):
    g = Grammar.builtin("sql", profile="generate", dialect=dialect, database=SqlSchema.from_ddl(DDL))
    c = cfgmask.compile(g, byte_vocab())
    full = cfgmask.compile(Grammar.builtin("sql", dialect=dialect), byte_vocab())
    for doc in good:
        assert takes(c, doc) and takes(full, doc), doc
    for doc in bad:
        assert not takes(c, doc), doc


# ------------------------------------------------------------- sampled queries

def test_sampled_queries_name_only_the_schema(db_path):
    """Random queries under the masks: full grammar (Lark and greedy lexing), no syntax error,
    an unknown table only as the qualifier of ``x.*``, and an unknown column only where the
    name is one of the schema's (another table's column, or behind a qualifier that is not in
    scope: the documented approximation)."""
    from tests.test_profiles import ProfileSampler
    from tests.test_sampling_lark import SEED
    s = ProfileSampler("sql", database=SqlSchema.from_ddl(DDL))
    docs, unfinished, failures = s.run(24, seed=SEED + 41)
    assert not failures, failures[:5]
    assert len(docs) >= 18
    columns = {c.lower() for c in read_schema(db_path).column_names}
    for d in docs:
        body = s.grammar.document(d).decode("utf-8")
        assert re.match(r"\s*(select|with|values)\b", body, re.I), body
        e = explain(db_path, body)
        if e is None:
            continue
        assert "syntax error" not in e, (e, body)
        m = re.match(r"no such table: (.*)", e)
        if m:  # only a qualifier of x.* may be out of scope (qualifiers are not checked)
            assert re.search(re.escape(m.group(1)) + r"[\"`\]]?\s*\.\s*\*", body), (e, body)
        m = re.match(r"no such column: (.*)", e)
        if m:
            assert m.group(1).split(".")[-1].strip('"').lower() in columns, (e, body)


# ------------------------------------------------------------------- the CLI

def test_cli_db_and_statements(db_path, tmp_path, monkeypatch, capsys):
    """``generate --db`` / ``--statements`` / ``--whitespace`` reach the profile (checked up to the model load)."""
    from cfgmask.app import cli

    class Stop(Exception):
        pass
    seen = {}

    def stop(args, src, quiet=False):
        seen["g"] = src.grammar
        raise Stop
    monkeypatch.setattr(cli, "Session", stop)
    with pytest.raises(Stop):
        cli.main(["generate", "--grammar", "sql", "--db", str(db_path), "hi"])
    opts = seen["g"].profile.options
    assert opts["statements"] == ("select",) and "singer" in opts["tables"] and "venue" in opts["columns"]
    ddl = tmp_path / "schema.sql"
    ddl.write_text(DDL, encoding="utf-8")
    with pytest.raises(Stop):
        cli.main(["generate", "--grammar", "sql", "--db", str(ddl), "--statements", "select,insert", "hi"])
    assert seen["g"].profile.options["statements"] == ("select", "insert")
    with pytest.raises(Stop):
        cli.main(["generate", "--whitespace", "compact", "hi"])
    assert seen["g"].profile.options["whitespace"] == "compact"
    for argv in (["--grammar", "json", "--db", str(db_path)], ["--grammar", "sql", "--statements", "all"],
                 ["--grammar", "sql", "--db", str(db_path), "--tables", "singer"],
                 ["--grammar", "sql", "--db", str(tmp_path / "missing.db")],
                 ["--grammar", "sql", "--db", str(db_path), "--statements", "drop"],
                 ["--grammar", "sql", "--full-language", "--db", str(db_path)]):
        assert cli.main(["generate", *argv, "hi"]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and err.startswith("cfgmask: "), err


@pytest.mark.parametrize("kw", [dict(statements=5), dict(tables=5), dict(columns=3.5)])
def test_option_that_is_no_list_is_a_configuration_error(kw):
    """Not a TypeError out of tuple(): the option is named."""
    (name, _), = kw.items()
    with pytest.raises(cfgmask.ConfigurationError, match=name):
        Grammar.builtin("sql", profile="generate", **kw)
