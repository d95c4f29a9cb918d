#!/usr/bin/env python3
"""Generate the identifier terminals of grammars/sql.lark.

SQLite's parser reads most keywords as identifiers where the keyword itself
cannot stand (`%fallback ID` in its parse.y; decided per parser state), so
whether a keyword is a name depends on the place: `SELECT * FROM Match` names
a table, while `SELECT 1 match` is an unfinished MATCH expression. The
grammar has one identifier terminal per kind of place (CLASSES below: names,
defined names, column references, function names, aliases with and without
AS, windows); each excludes exactly the keywords that SQLite refuses in one
of the statements listed for its class. Lark and llguidance share no
lookahead, so each exclusion is spelled out as a plain regex built from a
trie of the words (tools/ident_regex.py).

usage:
  python3 tools/sql_ident.py --probe      # ask the local sqlite3 what each class refuses
  python3 tools/sql_ident.py --write      # rewrite the generated block in grammars/sql.lark
  python3 tools/sql_ident.py --check      # exit 1 if the block is out of date

RESERVED below is the result of --probe on SQLite 3.40.1 (kept fixed so the
grammar does not depend on the local SQLite build).
"""
import os
import re
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ident_regex import keyword_free_ident  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GRAMMAR = os.path.join(HERE, "..", "grammars", "sql.lark")

# The 147 keywords of SQLite 3.40 (https://sqlite.org/lang_keywords.html).
KEYWORDS = """
ABORT ACTION ADD AFTER ALL ALTER ALWAYS ANALYZE AND AS ASC ATTACH AUTOINCREMENT
BEFORE BEGIN BETWEEN BY CASCADE CASE CAST CHECK COLLATE COLUMN COMMIT CONFLICT
CONSTRAINT CREATE CROSS CURRENT CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP
DATABASE DEFAULT DEFERRABLE DEFERRED DELETE DESC DETACH DISTINCT DO DROP EACH
ELSE END ESCAPE EXCEPT EXCLUDE EXCLUSIVE EXISTS EXPLAIN FAIL FILTER FIRST
FOLLOWING FOR FOREIGN FROM FULL GENERATED GLOB GROUP GROUPS HAVING IF IGNORE
IMMEDIATE IN INDEX INDEXED INITIALLY INNER INSERT INSTEAD INTERSECT INTO IS
ISNULL JOIN KEY LAST LEFT LIKE LIMIT MATCH MATERIALIZED NATURAL NO NOT NOTHING
NOTNULL NULL NULLS OF OFFSET ON OR ORDER OTHERS OUTER OVER PARTITION PLAN
PRAGMA PRECEDING PRIMARY QUERY RAISE RANGE RECURSIVE REFERENCES REGEXP REINDEX
RELEASE RENAME REPLACE RESTRICT RETURNING RIGHT ROLLBACK ROW ROWS SAVEPOINT
SELECT SET TABLE TEMP TEMPORARY THEN TIES TO TRANSACTION TRIGGER UNBOUNDED UNION
UNIQUE UPDATE USING VACUUM VALUES VIEW VIRTUAL WHEN WHERE WINDOW WITH WITHOUT
""".split()

# The places where grammars/sql.lark accepts a bare identifier, grouped by
# the terminal the grammar uses there, each as statements with K standing for
# the identifier. SQLite's parser falls back to reading a keyword as an
# identifier only where the keyword itself cannot be shifted (`%fallback ID`
# in parse.y, decided per parser state), so whether `match` or `range` is a
# name depends on the place: `FROM Match` is a table, `SELECT 1 match` is an
# unfinished MATCH expression. A terminal excludes the keywords that SQLite
# refuses in any of its statements (a syntax error there); every other
# keyword is a name in that place, as in SQLite.
CLASSES = {
    # nm: table and column names, names after AS and after a dot, name lists
    "IDENT": [
        "SELECT * FROM K", "SELECT * FROM K.t", "SELECT * FROM t.K", "SELECT * FROM K AS t",
        "SELECT * FROM K t", "SELECT * FROM K WHERE 1", "SELECT * FROM K JOIN u ON 1",
        "SELECT * FROM K LEFT JOIN u ON 1", "SELECT * FROM K, u", "SELECT * FROM t, K",
        "SELECT * FROM t JOIN K ON 1", "SELECT * FROM t JOIN K USING (a)", "SELECT * FROM (K)",
        "SELECT * FROM (K JOIN u ON 1)", "SELECT * FROM (K, u)", "SELECT * FROM K(1)",
        "SELECT * FROM K ORDER BY 1", "SELECT * FROM K GROUP BY 1", "SELECT * FROM K LIMIT 1",
        "SELECT * FROM K UNION SELECT 1", "SELECT a FROM t WHERE a IN K", "SELECT a FROM t WHERE a IN K.u",
        "SELECT 1 AS K", "SELECT 1 AS K FROM t", "SELECT * FROM t AS K", "SELECT * FROM (SELECT 1) AS K",
        "SELECT * FROM f(1) AS K", "SELECT * FROM t JOIN u USING (K)", "SELECT * FROM t JOIN u USING (a, K)",
        "SELECT a.K FROM t", "SELECT a.b.K FROM t", "SELECT a.K AS x FROM t", "SELECT a.K x FROM t",
        "SELECT a.K.c FROM t", "DELETE FROM t RETURNING 1 AS K",
        "CREATE TABLE t (K INT)", "CREATE TABLE t (K)", "CREATE TABLE t (a INT, K INT)",
        "CREATE TABLE t (a INT CONSTRAINT K NOT NULL)", "CREATE TABLE t (a INT, CONSTRAINT K UNIQUE (a))",
        "CREATE TABLE t (a INT REFERENCES K (a))", "CREATE TABLE t (a INT REFERENCES K)",
        "CREATE TABLE t (a INT REFERENCES u (K))", "CREATE TABLE t (a INT, FOREIGN KEY (K) REFERENCES u)",
        "CREATE TABLE t.K (a INT)",
        "WITH c (K) AS (SELECT 1) SELECT * FROM c", "WITH c (a, K) AS (SELECT 1, 2) SELECT * FROM c",
        "INSERT INTO K VALUES (1)", "INSERT INTO K SELECT 1", "INSERT INTO K DEFAULT VALUES",
        "INSERT INTO K (a) VALUES (1)", "INSERT INTO t (K) VALUES (1)", "INSERT INTO t (a, K) VALUES (1, 2)",
        "INSERT INTO t AS K VALUES (1)", "INSERT INTO K.t VALUES (1)", "REPLACE INTO K VALUES (1)",
        "UPDATE K SET a = 1", "UPDATE K AS x SET a = 1", "UPDATE t SET K = 1", "UPDATE t SET a = 1, K = 2",
        "UPDATE t SET (K) = (1)", "UPDATE t SET (a, K) = (1, 2)", "UPDATE t AS K SET a = 1",
        "UPDATE t SET a = 1 FROM K", "DELETE FROM K", "DELETE FROM K WHERE 1", "DELETE FROM t AS K",
        "DELETE FROM K.t",
    ],
    # names a statement defines, where IF (NOT EXISTS) or RECURSIVE may come instead
    "DEF_IDENT": [
        "CREATE TABLE K (a INT)", "CREATE TABLE K AS SELECT 1", "CREATE TEMP TABLE K (a)",
        "CREATE TABLE IF NOT EXISTS K (a)", "CREATE TABLE K.t (a INT)",
        "WITH K AS (SELECT 1) SELECT * FROM K", "WITH K (a) AS (SELECT 1) SELECT 1",
        "WITH RECURSIVE K AS (SELECT 1) SELECT 1", "WITH c AS (SELECT 1), K AS (SELECT 1) SELECT 1",
        "WITH K AS MATERIALIZED (SELECT 1) SELECT 1",
    ],
    # a column reference or the first name of a dotted one, where an expression starts
    "EXPR_IDENT": [
        "SELECT K", "SELECT K FROM t", "SELECT a, K FROM t", "SELECT (K)", "SELECT - K", "SELECT 1 + K",
        "SELECT NOT K", "SELECT K AS x", "SELECT K x", "SELECT K, 1", "SELECT a FROM t WHERE K = 1",
        "SELECT a FROM t WHERE a = K", "SELECT f(a, K) FROM t", "SELECT count(K) FROM t",
        "SELECT a FROM t ORDER BY K", "SELECT a FROM t ORDER BY K DESC", "SELECT a FROM t ORDER BY K NULLS FIRST",
        "SELECT a FROM t GROUP BY K", "SELECT a FROM t GROUP BY a HAVING K", "SELECT a FROM t LIMIT K",
        "SELECT a FROM t ORDER BY a LIMIT K", "SELECT a FROM t LIMIT 1 OFFSET K", "SELECT a FROM t LIMIT 1, K",
        "SELECT f(a) OVER (PARTITION BY K) FROM t", "SELECT f(a) OVER (ORDER BY K) FROM t",
        "SELECT f(a) FILTER (WHERE K) FROM t", "SELECT * FROM t WHERE a BETWEEN K AND 2",
        "SELECT * FROM t WHERE a BETWEEN 1 AND K", "SELECT * FROM t WHERE K BETWEEN 1 AND 2",
        "SELECT CASE K WHEN K THEN K ELSE K END", "SELECT CASE WHEN K THEN 1 END",
        "SELECT a FROM t WHERE a LIKE K ESCAPE K", "SELECT * FROM t WHERE K LIKE 'a'",
        "SELECT * FROM t WHERE K IN (1)", "SELECT a FROM t WHERE a IN (K)", "SELECT a FROM t WHERE a IN (1, K)",
        "SELECT * FROM t WHERE a IS K", "SELECT * FROM t WHERE a IS NOT K", "SELECT K IS NULL", "SELECT K ISNULL",
        "SELECT K NOT NULL", "SELECT K COLLATE x", "SELECT a FROM t WHERE a IN (SELECT 1) AND K",
        "SELECT * FROM t WHERE K OR 1", "SELECT CAST(K AS INT)", "SELECT EXISTS (SELECT K)",
        "SELECT * FROM t JOIN u ON K", "SELECT * FROM t JOIN u ON K = 1", "VALUES (K)", "VALUES (1, K)",
        "DELETE FROM t RETURNING K", "DELETE FROM t WHERE K", "UPDATE t SET a = K", "UPDATE t SET a = 1 WHERE K",
        "SELECT K.a FROM t", "SELECT K.a.b FROM t", "SELECT K.* FROM t", "SELECT K.a AS x FROM t",
        "SELECT (K.a)", "SELECT 1 + K.a", "CREATE TABLE t (a INT CHECK (K))", "CREATE TABLE t (a INT, CHECK (K))",
        "CREATE TABLE t (a INT, PRIMARY KEY (K))", "CREATE TABLE t (a INT, UNIQUE (a, K))",
        "CREATE TABLE t (a INT, PRIMARY KEY (a, K))", "CREATE TABLE t (a INT, UNIQUE (K))",
    ],
    # the name of a called function
    "FUNC_IDENT": [
        "SELECT K(1)", "SELECT K()", "SELECT K(*)", "SELECT K(DISTINCT a) FROM t", "SELECT (K(1))",
        "SELECT 1 + K(1)", "SELECT - K(1)", "SELECT a FROM t WHERE K(a) = 1", "SELECT K(a) OVER (ORDER BY a) FROM t",
        "SELECT K(a) FILTER (WHERE a) FROM t", "SELECT K(a) OVER w FROM t WINDOW w AS ()",
        "SELECT * FROM t ORDER BY K(a)", "SELECT K(1) x", "SELECT K(1) AS x", "SELECT a FROM t GROUP BY K(a)",
        "SELECT CASE K(1) WHEN 1 THEN K(2) END", "SELECT f(K(1))", "SELECT NOT K(1)",
    ],
    # an alias without AS after a result column (SQLite's `ids`)
    "ALIAS_IDENT": [
        "SELECT 1 K", "SELECT 1 K FROM t", "SELECT 1 K, 2", "SELECT 1 K UNION SELECT 2", "SELECT 1 K ORDER BY 1",
        "SELECT 1 K LIMIT 1", "SELECT a K FROM t WHERE 1", "SELECT a K FROM t GROUP BY 1", "SELECT a.b K FROM t",
        "SELECT 'x' K", "SELECT a K INTERSECT SELECT 1", "SELECT a K EXCEPT SELECT 1",
        "DELETE FROM t RETURNING a K", "DELETE FROM t RETURNING count(*) K", "DELETE FROM t RETURNING a K, b",
        "SELECT count(*) K", "SELECT count(*) K FROM t", "SELECT f(1) K, 2", "SELECT (SELECT 1) K",
        "SELECT CASE WHEN 1 THEN 2 END K", "SELECT CAST(1 AS INT) K", "SELECT 1 COLLATE x K",
        "SELECT f(a) OVER w K FROM t WINDOW w AS ()", "SELECT f(a) FILTER (WHERE 1) K FROM t",
        "SELECT f(a) OVER (ORDER BY a) K FROM t", "SELECT (1) K", "SELECT - 1 K", "SELECT a IS NULL K",
        "SELECT 1 + 2 K", "SELECT NULL K", "SELECT a BETWEEN 1 AND 2 K",
    ],
    # an alias without AS after a table, a type name's words, a collation
    "IDS_IDENT": [
        "SELECT * FROM t K", "SELECT * FROM t K WHERE 1", "SELECT * FROM t K, u", "SELECT * FROM t K GROUP BY 1",
        "SELECT * FROM t K ORDER BY 1", "SELECT * FROM t K LIMIT 1", "SELECT * FROM t K UNION SELECT 1",
        "SELECT * FROM t K WINDOW w AS ()", "SELECT * FROM (SELECT 1) K", "SELECT * FROM t JOIN u K ON 1",
        "SELECT * FROM t JOIN u K USING (a)", "SELECT * FROM t K JOIN u ON 1", "SELECT * FROM t K LEFT JOIN u ON 1",
        "SELECT * FROM t K NATURAL JOIN u", "SELECT * FROM t K CROSS JOIN u", "SELECT * FROM f(1) K",
        "SELECT * FROM t.u K", "SELECT * FROM (SELECT 1) K WHERE 1", "UPDATE t SET a = 1 FROM u K",
        "SELECT CAST(1 AS K)", "SELECT CAST(1 AS INT K)", "SELECT CAST(1 AS K K)", "SELECT CAST(1 AS K(10))",
        "SELECT CAST(1 AS K (10, 2))", "SELECT 1 COLLATE K", "SELECT 1 COLLATE K FROM t",
        "SELECT a FROM t ORDER BY a COLLATE K DESC", "SELECT a FROM t ORDER BY a COLLATE K",
        "CREATE TABLE t (a INT DEFAULT 1 COLLATE K)", "CREATE TABLE t (a K)", "CREATE TABLE t (a INT K)",
        "CREATE TABLE t (a K K)", "CREATE TABLE t (a K NOT NULL)", "CREATE TABLE t (a K(10))",
        "CREATE TABLE t (a INT K(10))", "CREATE TABLE t (a K PRIMARY KEY)", "CREATE TABLE t (a K, b INT)",
        "CREATE TABLE t (a K UNIQUE)", "CREATE TABLE t (a K DEFAULT 1)", "CREATE TABLE t (a K CHECK (1))",
        "CREATE TABLE t (a K REFERENCES u)", "CREATE TABLE t (a INT COLLATE K)", "CREATE TABLE t (a K COLLATE x)", "CREATE TABLE t (a K, UNIQUE (a))",
    ],
    # a window's name
    "WINDOW_IDENT": [
        "SELECT f(a) OVER K FROM t WINDOW K AS ()", "SELECT a FROM t WINDOW K AS ()",
        "SELECT f(a) OVER (K) FROM t WINDOW K AS ()", "SELECT f(a) OVER (K ORDER BY a) FROM t WINDOW K AS ()",
        "SELECT f(a) OVER (K PARTITION BY a) FROM t WINDOW K AS ()",
        "SELECT a FROM t WINDOW w AS (), K AS ()", "SELECT a FROM t WINDOW K AS (PARTITION BY a)",
        "SELECT f(a) OVER K FROM t WINDOW K AS () ORDER BY 1", "SELECT f(a) OVER K x FROM t WINDOW K AS ()",
        "SELECT f(a) FILTER (WHERE 1) OVER K FROM t WINDOW K AS ()",
    ],
}

# Places where the grammar takes no bare name although an expression may
# start there: a frame bound, where SQLite reads CURRENT and UNBOUNDED as
# keywords. The grammar lets a bound start only with a literal, a unary
# operator or a parenthesis; tests/test_sql_dialects.py checks these too.
EXTRA_CONTEXTS = [
    "SELECT f(a) OVER (ORDER BY a ROWS K PRECEDING) FROM t",
    "SELECT f(a) OVER (ORDER BY a ROWS BETWEEN K PRECEDING AND CURRENT ROW) FROM t",
    "SELECT f(a) OVER (ORDER BY a ROWS BETWEEN 1 PRECEDING AND K FOLLOWING) FROM t",
    "SELECT f(a) OVER (ORDER BY a RANGE K PRECEDING) FROM t",
]

CONTEXTS = [c for cs in CLASSES.values() for c in cs]


def _is_syntax_error(exc):
    msg = str(exc)
    return "syntax error" in msg or "unrecognized token" in msg or "incomplete input" in msg


def sqlite_refuses(con, sql):
    """True when SQLite reports a syntax error for `sql` (semantic errors are fine)."""
    try:
        con.execute("EXPLAIN " + sql)
    except sqlite3.Error as e:
        return _is_syntax_error(e)
    return False


def fill(ctx, word):
    return re.sub(r"\bK\b", word, ctx)


def probe():
    """{terminal: sorted keywords SQLite refuses in some statement of its class}."""
    con = sqlite3.connect(":memory:")
    out = {}
    for name, contexts in CLASSES.items():
        for ctx in contexts:
            if sqlite_refuses(con, fill(ctx, "xyz")):
                raise SystemExit("context is not valid SQLite with a plain name: %r" % ctx)
        out[name] = sorted(kw for kw in KEYWORDS
                           if any(sqlite_refuses(con, fill(ctx, kw.lower())) for ctx in contexts))
    return out


# Result of probe() on SQLite 3.40.1 (kept fixed so that the grammar does not
# depend on the local SQLite build; --probe prints the differences).
RESERVED = {
    "IDENT": """
    ADD ALL ALTER AND AS AUTOINCREMENT BETWEEN CASE CHECK COLLATE COMMIT CONSTRAINT CREATE DEFAULT
    DEFERRABLE DELETE DISTINCT DROP ELSE ESCAPE EXCEPT EXISTS FOREIGN FROM GROUP HAVING IN INDEX
    INSERT INTERSECT INTO IS ISNULL JOIN LIMIT NOT NOTHING NOTNULL NULL ON OR ORDER PRIMARY
    REFERENCES RETURNING SELECT SET TABLE THEN TO TRANSACTION UNION UNIQUE UPDATE USING VALUES WHEN
    WHERE WITH
    """.split(),
    "DEF_IDENT": """
    ADD ALL ALTER AND AS AUTOINCREMENT BETWEEN CASE CHECK COLLATE COMMIT CONSTRAINT CREATE DEFAULT
    DEFERRABLE DELETE DISTINCT DROP ELSE ESCAPE EXCEPT EXISTS FOREIGN FROM GROUP HAVING IF IN INDEX
    INSERT INTERSECT INTO IS ISNULL JOIN LIMIT NOT NOTHING NOTNULL NULL ON OR ORDER PRIMARY
    RECURSIVE REFERENCES RETURNING SELECT SET TABLE THEN TO TRANSACTION UNION UNIQUE UPDATE USING
    VALUES WHEN WHERE
    """.split(),
    "EXPR_IDENT": """
    ADD ALL ALTER AND AS AUTOINCREMENT BETWEEN CASE CAST CHECK COLLATE COMMIT CONSTRAINT CREATE
    CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP DEFAULT DEFERRABLE DELETE DISTINCT DROP ELSE ESCAPE
    EXCEPT EXISTS FOREIGN FROM GROUP HAVING IN INDEX INSERT INTERSECT INTO IS ISNULL JOIN LIMIT NOT
    NOTHING NOTNULL NULL ON OR ORDER PRIMARY RAISE REFERENCES RETURNING SELECT SET TABLE THEN TO
    TRANSACTION UNION UNIQUE UPDATE USING VALUES WHEN WHERE WITH
    """.split(),
    "FUNC_IDENT": """
    ADD ALL ALTER AND AS AUTOINCREMENT BETWEEN CASE CAST CHECK COLLATE COMMIT CONSTRAINT CREATE
    CROSS CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP DEFAULT DEFERRABLE DELETE DISTINCT DROP ELSE
    ESCAPE EXCEPT EXISTS FOREIGN FROM FULL GROUP HAVING IN INDEX INNER INSERT INTERSECT INTO IS
    ISNULL JOIN LEFT LIMIT NATURAL NOT NOTHING NOTNULL NULL ON OR ORDER OUTER PRIMARY RAISE
    REFERENCES RETURNING RIGHT SELECT SET TABLE THEN TO TRANSACTION UNION UNIQUE UPDATE USING VALUES
    WHEN WHERE WITH
    """.split(),
    "ALIAS_IDENT": """
    ADD ALL ALTER AND AS AUTOINCREMENT BETWEEN CASE CHECK COLLATE COMMIT CONSTRAINT CREATE CROSS
    DEFAULT DEFERRABLE DELETE DISTINCT DROP ELSE ESCAPE EXCEPT EXISTS FOREIGN FROM FULL GLOB GROUP
    HAVING IN INDEX INDEXED INNER INSERT INTERSECT INTO IS JOIN LEFT LIKE LIMIT MATCH NATURAL NOT
    NOTHING NULL ON OR ORDER OUTER PRIMARY REFERENCES REGEXP RETURNING RIGHT SELECT SET TABLE THEN
    TO TRANSACTION UNION UNIQUE UPDATE USING VALUES WHEN WHERE
    """.split(),
    "IDS_IDENT": """
    ADD ALL ALTER AND AS AUTOINCREMENT BETWEEN CASE CHECK COLLATE COMMIT CONSTRAINT CREATE CROSS
    DEFAULT DEFERRABLE DELETE DISTINCT DROP ELSE ESCAPE EXCEPT EXISTS FOREIGN FROM FULL GROUP HAVING
    IN INDEX INDEXED INNER INSERT INTERSECT INTO IS ISNULL JOIN LEFT LIMIT NATURAL NOT NOTHING
    NOTNULL NULL ON OR ORDER OUTER PRIMARY REFERENCES RETURNING RIGHT SELECT SET TABLE THEN TO
    TRANSACTION UNION UNIQUE UPDATE USING VALUES WHEN WHERE
    """.split(),
    "WINDOW_IDENT": """
    ADD ALL ALTER AND AS AUTOINCREMENT BETWEEN CASE CHECK COLLATE COMMIT CONSTRAINT CREATE DEFAULT
    DEFERRABLE DELETE DISTINCT DROP ELSE ESCAPE EXCEPT EXISTS FILTER FOREIGN FROM GROUP GROUPS
    HAVING IN INDEX INDEXED INSERT INTERSECT INTO IS ISNULL JOIN LIMIT NOT NOTHING NOTNULL NULL ON
    OR ORDER PARTITION PRIMARY RANGE REFERENCES RETURNING ROWS SELECT SET TABLE THEN TO TRANSACTION
    UNION UNIQUE UPDATE USING VALUES WHEN WHERE
    """.split(),
}


def build_regex(words):
    """An SQLite identifier that is not one of `words`."""
    return keyword_free_ident(words, first="A-Za-z_", cont="A-Za-z0-9_$",
                              case_insensitive=True)


BEGIN = "// BEGIN GENERATED by tools/sql_ident.py"
END = "// END GENERATED"


def block():
    out = [BEGIN, "// One terminal per kind of place a bare name can stand; each excludes the",
           "// keywords SQLite refuses there (tools/sql_ident.py CLASSES)."]
    for name, words in RESERVED.items():
        out.append("// %s: not one of %d keywords." % (name, len(words)))
        out.append("%s: /%s/" % (name, build_regex(words)))
    out.append(END)
    return "\n".join(out)


def main():
    arg = sys.argv[1] if len(sys.argv) > 1 else "--check"
    if arg == "--probe":
        got = probe()
        print("sqlite", sqlite3.sqlite_version)
        for name, words in got.items():
            print(name, len(words), "refused:", " ".join(words))
            diff = sorted(set(words) ^ set(RESERVED.get(name, ())))
            if diff:
                print("  differs from RESERVED:", diff)
        return
    text = open(GRAMMAR).read()
    pat = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    new = pat.sub(lambda m: block(), text)
    if arg == "--write":
        open(GRAMMAR, "w").write(new)
    elif new != text:
        sys.exit("grammars/sql.lark IDENT block is out of date: run tools/sql_ident.py --write")


if __name__ == "__main__":
    main()
