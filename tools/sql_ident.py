#!/usr/bin/env python3
"""Generate the IDENT terminal of grammars/sql.lark.

SQLite refuses some keywords as bare identifiers ("reserved" below) and
accepts the rest (its parser falls back to reading them as identifiers).
The grammar's IDENT must therefore match every SQLite identifier except the
reserved keywords. Lark and llguidance share no lookahead, so the exclusion
is spelled out as a plain regex built from a trie of the reserved words:
at each trie node the identifier either stops (if the prefix is not itself
reserved), continues with a character that leaves the trie (then anything
may follow), or continues along the trie.

usage:
  python3 tools/sql_ident.py --probe      # ask the local sqlite3 which keywords are reserved
  python3 tools/sql_ident.py --write      # rewrite the IDENT block in grammars/sql.lark
  python3 tools/sql_ident.py --check      # exit 1 if the block is out of date

The reserved list below is the result of --probe on SQLite 3.40.1 (kept
fixed so the grammar does not depend on the local SQLite build). The regex
construction itself is tools/ident_regex.py.
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

# Every place where grammars/sql.lark accepts IDENT, as a statement with K
# standing for the identifier. A keyword is reserved when SQLite reports a
# syntax error for any of them.
CONTEXTS = [
    "SELECT K", "SELECT K FROM t", "SELECT a, K FROM t", "SELECT (K)", "SELECT - K",
    "SELECT 1 + K", "SELECT NOT K", "SELECT a FROM t WHERE K = 1",
    "SELECT a FROM t WHERE a = K", "SELECT a FROM t WHERE a IN K",
    "SELECT 1 AS K", "SELECT 1 K", "SELECT 1 K FROM t", "SELECT 1 K, 2",
    "SELECT 1 K UNION SELECT 2", "SELECT 1 K ORDER BY 1", "SELECT 1 K LIMIT 1",
    "SELECT * FROM K", "SELECT * FROM K.t", "SELECT * FROM t AS K", "SELECT * FROM t K",
    "SELECT * FROM t K WHERE 1", "SELECT * FROM t K JOIN u ON 1",
    "SELECT * FROM t K LEFT JOIN u ON 1", "SELECT * FROM t K NATURAL JOIN u",
    "SELECT * FROM t K CROSS JOIN u", "SELECT * FROM t K, u",
    "SELECT * FROM t K GROUP BY 1", "SELECT * FROM t K ORDER BY 1",
    "SELECT * FROM t K LIMIT 1", "SELECT * FROM t K UNION SELECT 1",
    "SELECT * FROM t K WINDOW w AS ()", "SELECT * FROM (SELECT 1) K",
    "SELECT * FROM (SELECT 1) AS K", "SELECT * FROM t JOIN u K ON 1",
    "SELECT * FROM t JOIN u USING (K)",
    "SELECT K.a FROM t", "SELECT a.K FROM t", "SELECT K.a.b FROM t", "SELECT K.* FROM t",
    "SELECT K(1)", "SELECT K()", "SELECT count(K) FROM t", "SELECT f(a, K) FROM t",
    "SELECT CAST(1 AS K)", "SELECT 1 COLLATE K", "SELECT a FROM t ORDER BY K",
    "SELECT a FROM t GROUP BY K", "SELECT a FROM t LIMIT K", "SELECT a FROM t ORDER BY a LIMIT K",
    "CREATE TABLE K (a INT)", "CREATE TABLE t (K INT)", "CREATE TABLE t (a K)",
    "CREATE TABLE t (a INT, K INT)", "CREATE TABLE t (a INT CONSTRAINT K NOT NULL)",
    "CREATE TABLE t (a INT REFERENCES K (a))", "CREATE TABLE t (a INT, PRIMARY KEY (K))",
    "WITH K AS (SELECT 1) SELECT * FROM K", "WITH c (K) AS (SELECT 1) SELECT * FROM c",
    "INSERT INTO K VALUES (1)", "INSERT INTO t (K) VALUES (1)", "INSERT INTO t AS K VALUES (1)",
    "UPDATE K SET a = 1", "UPDATE t SET K = 1", "UPDATE t SET (K) = (1)", "DELETE FROM K",
    "SELECT f(a) OVER K FROM t", "SELECT f(a) OVER (K) FROM t WINDOW K AS ()",
    "SELECT a FROM t WINDOW K AS ()", "SELECT f(a) OVER (PARTITION BY K) FROM t",
    "SELECT * FROM t WHERE a BETWEEN K AND 2", "SELECT * FROM t WHERE a BETWEEN 1 AND K",
    "SELECT CASE K WHEN K THEN K ELSE K END", "SELECT a FROM t WHERE a LIKE K ESCAPE K",
    "DELETE FROM t RETURNING K", "DELETE FROM t RETURNING a K",
    "DELETE FROM t RETURNING count(*) K",
    # an identifier right after something that ends an expression or a name
    "SELECT count(*) K", "SELECT count(*) K FROM t", "SELECT f(1) K, 2",
    "SELECT * FROM f(1) K", "SELECT * FROM f(1) AS K", "SELECT (SELECT 1) K",
    "SELECT CASE WHEN 1 THEN 2 END K", "SELECT CAST(1 AS INT) K", "SELECT 1 COLLATE x K",
    "SELECT a FROM t WHERE a IN (SELECT 1) AND K",
    "CREATE TABLE t (a INT K)", "CREATE TABLE t (a K K)", "CREATE TABLE t (a K NOT NULL)",
    "CREATE TABLE t (a K(10))", "CREATE TABLE t (a INT K(10))", "SELECT CAST(1 AS INT K)",
    "SELECT CAST(1 AS K K)", "CREATE TABLE t (a INT DEFAULT 1 COLLATE K)",
    "CREATE TABLE t (a INT REFERENCES u (K))", "CREATE TABLE t (a INT, UNIQUE (a, K))",
    "UPDATE t AS K SET a = 1", "DELETE FROM t AS K", "UPDATE t SET a = 1 FROM u K",
    "SELECT f(a) FILTER (WHERE K) OVER (ORDER BY K ROWS K PRECEDING) FROM t",
]


def _is_syntax_error(exc):
    msg = str(exc)
    return "syntax error" in msg or "unrecognized token" in msg or "incomplete input" in msg


def probe():
    """Return the keywords SQLite refuses as identifiers in any of CONTEXTS."""
    con = sqlite3.connect(":memory:")
    reserved = []
    for kw in KEYWORDS:
        for ctx in CONTEXTS:
            sql = re.sub(r"\bK\b", kw.lower(), ctx)
            try:
                con.execute("EXPLAIN " + sql)
            except sqlite3.Error as e:
                if _is_syntax_error(e):
                    reserved.append(kw)
                    break
    return reserved


# Result of probe() on SQLite 3.40.1 (84 of the 147 keywords). Older SQLite
# builds reserve a subset of these (RETURNING, for one, is newer), which only
# makes the grammar stricter than those builds need.
RESERVED = """
ADD ALL ALTER AND AS AUTOINCREMENT BETWEEN CASE CAST CHECK COLLATE COMMIT
CONSTRAINT CREATE CROSS CURRENT CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP DEFAULT
DEFERRABLE DELETE DISTINCT DROP ELSE ESCAPE EXCEPT EXISTS FILTER FOREIGN FROM
FULL GLOB GROUP GROUPS HAVING IF IN INDEX INDEXED INNER INSERT INTERSECT INTO
IS ISNULL JOIN LEFT LIKE LIMIT MATCH NATURAL NOT NOTHING NOTNULL NULL ON OR
ORDER OUTER PARTITION PRIMARY RAISE RANGE RECURSIVE REFERENCES REGEXP
RETURNING RIGHT ROWS SELECT SET TABLE THEN TO TRANSACTION UNION UNIQUE UPDATE
USING VALUES WHEN WHERE WITH
""".split()

def build_regex(words):
    """IDENT for sql.lark: an SQLite identifier that is not one of `words`."""
    return keyword_free_ident(words, first="A-Za-z_", cont="A-Za-z0-9_$",
                              case_insensitive=True)


BEGIN = "// BEGIN GENERATED by tools/sql_ident.py"
END = "// END GENERATED"


def block():
    return "%s\n// IDENT: an SQLite identifier that is not one of %d reserved keywords.\nIDENT: /%s/\n%s" % (
        BEGIN, len(RESERVED), build_regex(RESERVED), END)


def main():
    arg = sys.argv[1] if len(sys.argv) > 1 else "--check"
    if arg == "--probe":
        got = probe()
        print("sqlite", sqlite3.sqlite_version, len(got), "reserved")
        print(" ".join(got))
        print("not reserved:", " ".join(k for k in KEYWORDS if k not in got))
        print("differs from RESERVED:", sorted(set(got) ^ set(RESERVED)))
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
