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
  python -m tools.sql_ident --probe      # ask the local sqlite3 what each class refuses
  python -m tools.sql_ident --write      # rewrite the generated block in grammars/sql.lark
  python -m tools.sql_ident --check      # exit 1 if the block is out of date

RESERVED below is the result of --probe on SQLite 3.40.1 (kept fixed so the
grammar does not depend on the local SQLite build).
"""
import os
import re
import sqlite3
import sys

from tools.ident_regex import keyword_free_ident

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


# What the other dialects add: places only their grammars have, and
# terminals that exclude every keyword of the dialect (None).
DIALECT_CLASSES = {
    "postgres": {
        "EXPR_IDENT": ["SELECT DISTINCT ON (K) a FROM t", "SELECT K::int", "SELECT a FROM t WHERE K ILIKE 'a'",
                       "SELECT a FROM t WHERE a ILIKE K", "SELECT K IS DISTINCT FROM 1", "SELECT 1 IS DISTINCT FROM K",
                       "SELECT a FROM t LIMIT K OFFSET 1", "SELECT a FROM t OFFSET K", "SELECT EXTRACT(YEAR FROM K)",
                       "SELECT SUBSTRING(K FROM 1 FOR 2)", "SELECT COALESCE(K, 1)", "SELECT 1 = ANY (K)"],
        "FUNC_IDENT": ["SELECT K(a ORDER BY a) FROM t", "SELECT K(a) WITHIN GROUP (ORDER BY a) FROM t",
                       "SELECT a.K(1)", "SELECT * FROM K(1) AS x", "SELECT * FROM a.K(1)"],
        # a type's name, and a constant of a type (date '2020-01-01')
        "TYPE_IDENT": ["SELECT K 'a'", "SELECT CAST(1 AS K)", "SELECT 1::K", "SELECT 1::K(10)",
                       "SELECT CAST(1 AS K[])", "SELECT CAST(1 AS a.K)", "SELECT K 'a' FROM t",
                       "SELECT CAST(1 AS K(10))", "SELECT CAST(1 AS K (10, 2))"],
        "ALIAS_IDENT": ["SELECT 1::int K", "SELECT a::text K FROM t", "SELECT EXTRACT(YEAR FROM a) K FROM t",
                        "SELECT a FROM t WHERE 1 = 1 UNION SELECT 1 K"],
        "IDS_IDENT": ["SELECT * FROM t K (a)", "SELECT * FROM t K OFFSET 1", "UPDATE t K SET a = 1",
                      "DELETE FROM t K WHERE 1", "SELECT * FROM LATERAL (SELECT 1) K", "SELECT * FROM (t JOIN u ON 1) K",
                      "SELECT * FROM t K FETCH FIRST 1 ROW ONLY", "DELETE FROM t K USING u"],
    },
    "mysql": {
        # OVER follows only the built-in aggregate and window functions in MariaDB
        "WINDOW_IDENT": ["SELECT sum(a) OVER K FROM t WINDOW K AS ()", "SELECT sum(a) OVER (K) FROM t WINDOW K AS ()",
                         "SELECT sum(a) OVER (K ORDER BY a) FROM t WINDOW K AS ()",
                         "SELECT rank() OVER K FROM t WINDOW K AS (ORDER BY a)"],
        "EXPR_IDENT": ["SELECT sum(a) OVER (PARTITION BY K) FROM t", "SELECT sum(a) OVER (ORDER BY K) FROM t",
                       "SELECT K DIV 2", "SELECT K REGEXP 'a'", "SELECT a FROM t LIMIT 1, K", "SELECT K := 1",
                       "SELECT INTERVAL K DAY + a", "SELECT K MOD 2", "SELECT K XOR 1"],
        "FUNC_IDENT": ["SELECT K(1) DIV 2"],
        "ALIAS_IDENT": ["SELECT sum(a) OVER (ORDER BY a) K FROM t", "SELECT sum(a) OVER w K FROM t WINDOW w AS ()",
                        "SELECT 1 K FROM t LIMIT 1, 2", "SELECT a DIV 2 K FROM t"],
        "IDS_IDENT": ["SELECT * FROM t K LIMIT 1, 2", "UPDATE t K SET a = 1", "SELECT * FROM t K STRAIGHT_JOIN u"],
    },
}

GRAMMARS = {"sqlite": GRAMMAR, "postgres": os.path.join(HERE, "..", "grammars", "sql_postgres.lark"),
            "mysql": os.path.join(HERE, "..", "grammars", "sql_mysql.lark")}
RESERVED_FILE = os.path.join(HERE, "sql_ident_reserved.json")


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


def judge(dialect):
    """`refuses(sql)` for the dialect's engine: True on a syntax error."""
    if dialect == "sqlite":
        con = sqlite3.connect(":memory:")
        return lambda sql: sqlite_refuses(con, sql)
    from support import sql_judges
    j = sql_judges.get(dialect)
    if j is None:
        raise SystemExit("no %s judge here (see support/sql_judges.py)" % dialect)
    return lambda sql: j.syntax_error(sql) is not None


def keywords(dialect):
    if dialect == "sqlite":
        return KEYWORDS
    if dialect == "postgres":
        from pglast import keywords as kw
        return sorted(w.upper() for w in (kw.RESERVED_KEYWORDS | kw.UNRESERVED_KEYWORDS |
                                          kw.COL_NAME_KEYWORDS | kw.TYPE_FUNC_NAME_KEYWORDS))
    from support import sql_judges
    return sql_judges.get("mysql").keywords()


# MariaDB refuses VALUE as the table after INSERT INTO (`INSERT INTO t VALUE (1)`)
# but not elsewhere: the mysql grammar names that table with INSERT_IDENT.
_INSERT_TARGETS = ["INSERT INTO K VALUES (1)", "INSERT INTO K SELECT 1", "INSERT INTO K DEFAULT VALUES",
                   "INSERT INTO K (a) VALUES (1)", "INSERT INTO K.t VALUES (1)", "REPLACE INTO K VALUES (1)"]
DIALECT_CLASSES["mysql"]["INSERT_IDENT"] = _INSERT_TARGETS + ["INSERT INTO K SET a = 1", "REPLACE INTO K (a) SELECT 1"]
# PostgreSQL's table functions are named by FUNC_IDENT, not IDENT
MOVED = {"mysql": {"IDENT": _INSERT_TARGETS}, "postgres": {"IDENT": ["SELECT * FROM K(1)"]}}


def classes(dialect):
    out = {k: [c for c in v if c not in MOVED.get(dialect, {}).get(k, ())] for k, v in CLASSES.items()}
    for k, v in DIALECT_CLASSES.get(dialect, {}).items():
        out[k] = None if v is None else out.get(k, []) + v
    return out


def fill(ctx, word):
    return re.sub(r"\bK\b", word, ctx)


def probe(dialect="sqlite", verbose=False):
    """{terminal: sorted keywords the engine refuses in some statement of its class}.

    Statements that the engine refuses even with a plain name are skipped
    (they are SQLite syntax the dialect lacks)."""
    refuses = judge(dialect)
    words = keywords(dialect)
    out = {}
    for name, contexts in classes(dialect).items():
        if contexts is None:
            out[name] = sorted(words)
            continue
        ok = [c for c in contexts if not refuses(fill(c, "xyz"))]
        if dialect == "sqlite" and len(ok) != len(contexts):
            raise SystemExit("not valid SQLite with a plain name: %r" % sorted(set(contexts) - set(ok)))
        if verbose and len(ok) != len(contexts):
            print("%s: %d statements skipped: %s" % (name, len(contexts) - len(ok), sorted(set(contexts) - set(ok))))
        out[name] = sorted(kw for kw in words if any(refuses(fill(c, kw.lower())) for c in ok))
    return out


def reserved(dialect="sqlite"):
    if dialect == "sqlite":
        return RESERVED
    import json
    with open(RESERVED_FILE) as f:
        return json.load(f)[dialect]


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


# MariaDB's unquoted names take characters up to U+FFFF only (written as the
# characters themselves: llguidance and Python spell \U escapes differently)
ASTRAL = "\U00010000-\U0010ffff"


def build_regex(words, dialect="sqlite"):
    """An identifier of the dialect that is not one of `words`."""
    rx = keyword_free_ident(words, first="A-Za-z_", cont="A-Za-z0-9_$",
                            case_insensitive=True)
    if dialect == "mysql":
        rx = rx.replace("[^", "[^" + ASTRAL)
    return rx


BEGIN = "// BEGIN GENERATED by tools/sql_ident.py"
END = "// END GENERATED"


# MariaDB refuses nearly the same ~250 words in every place but a function's
# name, so its grammar has one IDENT for all of them (the union; a few
# keywords stricter than MariaDB) and keeps the file small.
MERGED = {"mysql": ["IDENT", "DEF_IDENT", "EXPR_IDENT", "ALIAS_IDENT", "IDS_IDENT", "WINDOW_IDENT"]}
# (INSERT_IDENT is IDENT plus VALUE: written as IDENT's words plus its own)


def block(dialect="sqlite"):
    base_terms = set(RESERVED)
    out = [BEGIN, "// One terminal per kind of place a bare name can stand; each excludes the",
           "// keywords the engine refuses there (tools/sql_ident.py CLASSES)."]
    res = dict(reserved(dialect))
    if dialect in MERGED:
        merged = sorted(set().union(*(res.pop(n) for n in MERGED[dialect])))
        res = {"IDENT": merged, **res}
        if "INSERT_IDENT" in res:
            res["INSERT_IDENT"] = sorted(set(merged) | set(res["INSERT_IDENT"]))
        out.append("// IDENT stands for %s (tools/sql_ident.py MERGED)." % ", ".join(MERGED[dialect][1:]))
    for name, words in res.items():
        out.append("// %s: not one of %d keywords." % (name, len(words)))
        pre = "%override " if dialect != "sqlite" and name in base_terms else ""
        if dialect == "mysql" and name == "FUNC_IDENT":
            # MySQL refuses a space between a built-in function's name and "("
            out[-1] = "// FUNC_OPEN: a function's name (not one of %d keywords) and its \"(\"." % len(words)
            out.append("FUNC_OPEN: /(?:%s)\\(/" % build_regex(words, dialect))
            continue
        out.append("%s%s: /%s/" % (pre, name, build_regex(words, dialect)))
    out.append(END)
    return "\n".join(out)


def main():
    args = sys.argv[1:]
    dialect = "sqlite"
    if "--dialect" in args:
        i = args.index("--dialect")
        dialect = args[i + 1]
        del args[i:i + 2]
    arg = args[0] if args else "--check"
    if arg in ("--probe", "--update"):
        got = probe(dialect, verbose=True)
        print(dialect)
        for name, words in got.items():
            print(name, len(words), "refused:", " ".join(words)[:400])
            try:
                stored = reserved(dialect).get(name, ())
            except (OSError, KeyError):
                stored = ()
            diff = sorted(set(words) ^ set(stored))
            if diff:
                print("  differs from the stored list:", diff[:50])
        if arg == "--update" and dialect != "sqlite":
            import json
            data = {}
            if os.path.exists(RESERVED_FILE):
                with open(RESERVED_FILE) as f:
                    data = json.load(f)
            data[dialect] = got
            with open(RESERVED_FILE, "w") as f:
                json.dump(data, f, indent=1, sort_keys=True)
                f.write("\n")
        return
    path = GRAMMARS[dialect]
    text = open(path).read()
    pat = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    new = pat.sub(lambda m: block(dialect), text)
    if arg == "--write":
        if BEGIN not in text:
            new = text.rstrip("\n") + "\n\n" + block(dialect) + "\n"
        open(path, "w").write(new)
    elif new != text or BEGIN not in text:
        sys.exit("%s: generated block out of date: run python -m tools.sql_ident --dialect %s --write"
                 % (os.path.basename(path), dialect))


if __name__ == "__main__":
    main()
