"""The bundled grammars (grammars/{json,sql,javascript}.lark).

Fast checks, run by default: the grammars load in lark and llguidance and
stay in the subset both understand; JSONTestSuite y_/n_/i_ files; a sample
of Spider; an SQL negative set; documents sampled from the grammars
themselves that SQLite, json.loads and node must accept; hand-written
JavaScript cases for ASI, regex literals and templates, checked both with
lark and with the greedy-lexing reference (support/greedy_check.py); a few
small files of the JavaScript corpus. Full corpora: test_grammars_full.py.
"""
import functools
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest

from support import corpora
from tools import grammar_sampler, js_ident, sql_ident

REPO = Path(__file__).resolve().parent.parent
GRAMMARS = REPO / "grammars"

lark = pytest.importorskip("lark")

NAMES = ["json", "sql", "javascript"]
WORD_BOUNDARY = "[A-Za-z0-9_$\\x80-\\xff]"
# JavaScript: lead bytes from C3 (no identifier character starts with C2), so
# that a no-break space may follow a name and a name a non-ASCII space.
JS_WORD_BOUNDARY = "[A-Za-z0-9_$\\xc3-\\xff]"


def grammar_text(name):
    return (GRAMMARS / (name + ".lark")).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=None)
def parser(name):
    return lark.Lark(grammar_text(name), parser="earley", lexer="dynamic")


@functools.lru_cache(maxsize=None)
def _greedy(name):
    try:
        import regex  # noqa: F401  (support/greedy_check.py needs it)
    except ImportError:
        return None
    from support.greedy_check import GreedyRecognizer

    return GreedyRecognizer(grammar_text(name))


def greedy(name):
    """The greedy-lexing reference for a grammar; skips the test without `regex`."""
    g = _greedy(name)
    if g is None:
        pytest.skip("support/greedy_check.py needs the regex module (pip install regex)")
    return g


def greedy_accepts(name, text):
    """Greedy-lexing verdict, or None when the reference is unavailable."""
    g = _greedy(name)
    return None if g is None else g.accepts(text)


def lark_accepts(name, text):
    try:
        parser(name).parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


# ------------------------------------------------------------ loading

@pytest.mark.parametrize("name", NAMES)
def test_loads_in_lark(name):
    p = parser(name)
    assert p.rules and p.terminals


@pytest.mark.parametrize("name", NAMES)
def test_loads_in_llguidance(name):
    llguidance = pytest.importorskip("llguidance")
    grammar = llguidance.grammar_from("lark", grammar_text(name))
    is_error, warnings = llguidance.LLMatcher.validate_grammar_with_warnings(grammar)
    assert not is_error, llguidance.LLMatcher.validate_grammar(grammar)
    assert warnings == []


def _regex_opcodes(pattern):
    """The names of all opcodes in Python's parse of a regex."""
    try:
        import re._parser as sre_parse
    except ImportError:  # Python 3.10
        import sre_parse
    names = set()

    def walk(seq):
        for op, av in seq:
            names.add(str(op))
            for x in (av if isinstance(av, (list, tuple)) else [av]):
                if isinstance(x, sre_parse.SubPattern):
                    walk(x)
                elif isinstance(x, (list, tuple)):
                    for y in x:
                        if isinstance(y, sre_parse.SubPattern):
                            walk(y)

    walk(sre_parse.parse(pattern))
    return names


@pytest.mark.parametrize("name", NAMES)
def test_shared_lark_subset(name):
    """No lookaround, backreferences, priorities, templates or %declare; no
    terminal matches the empty string."""
    text = grammar_text(name)
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    assert "%declare" not in code
    assert not re.search(r"^[?!]?\w+\.\-?\d+\s*:", code, re.M), "priority"
    assert not re.search(r"^[?!]?_?\w+\{", code, re.M), "template"
    p = parser(name)
    assert all(r.options.priority is None for r in p.rules)
    for t in p.terminals:
        regexp = t.pattern.to_regexp()
        assert re.fullmatch(regexp, "") is None, t.name
        assert t.priority == 0, t.name
        ops = _regex_opcodes(regexp)
        assert not ops & {"ASSERT", "ASSERT_NOT", "GROUPREF", "GROUPREF_EXISTS"}, (t.name, ops)


def test_word_boundary_pragmas():
    assert "%cfgmask" not in grammar_text("json")
    for name in ("sql", "javascript"):
        wb = JS_WORD_BOUNDARY if name == "javascript" else WORD_BOUNDARY
        first = grammar_text(name).splitlines()[0]
        assert first == "// %cfgmask word_boundary " + wb
        cls = re.compile(wb.encode())
        assert cls.fullmatch(b"a") and cls.fullmatch(b"$") and cls.fullmatch(b"\xc3")
        assert not cls.fullmatch(b" ") and not cls.fullmatch(b"(")


def test_generated_ident_terminals_are_current():
    assert sql_ident.block() in grammar_text("sql")
    assert js_ident.block() in grammar_text("javascript")


def test_generated_javascript_grammar_is_current():
    """grammars/javascript.lark is tools/javascript.lark.in expanded (tools/js_grammar.py)."""
    from tools import js_grammar
    assert js_grammar.render() == grammar_text("javascript")


# --------------------------------------------------------------- JSON

# What the grammar does with each JSONTestSuite i_ file (implementation-
# defined per RFC 8259); docs/grammars.md explains each row.
JSON_I_ACCEPTED = {
    "i_number_double_huge_neg_exp.json", "i_number_huge_exp.json",
    "i_number_neg_int_huge_exp.json", "i_number_pos_double_huge_exp.json",
    "i_number_real_neg_overflow.json", "i_number_real_pos_overflow.json",
    "i_number_real_underflow.json", "i_number_too_big_neg_int.json",
    "i_number_too_big_pos_int.json", "i_number_very_big_negative_int.json",
    "i_object_key_lone_2nd_surrogate.json", "i_string_1st_surrogate_but_2nd_missing.json",
    "i_string_1st_valid_surrogate_2nd_invalid.json",
    "i_string_incomplete_surrogate_and_escape_valid.json",
    "i_string_incomplete_surrogate_pair.json", "i_string_incomplete_surrogates_escape_valid.json",
    "i_string_invalid_lonely_surrogate.json", "i_string_invalid_surrogate.json",
    "i_string_inverted_surrogates_U+1D11E.json", "i_string_lone_second_surrogate.json",
    "i_structure_500_nested_arrays.json",
}


# The two n_structure files of 100 KB and 250 KB take lark minutes; they run
# in test_grammars_full.py.
JSON_FAST_MAX_BYTES = 10000


def json_file_accepted(path):
    """Lark's verdict on a file: bytes that are not UTF-8 are rejected."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return False
    return lark_accepts("json", text)


@functools.lru_cache(maxsize=None)
def json_verdicts():
    """{file name: lark accepts} for the JSONTestSuite files of at most 10 KB."""
    return {p.name: json_file_accepted(p) for p in corpora.jsontestsuite_files()
            if p.stat().st_size <= JSON_FAST_MAX_BYTES}


def test_jsontestsuite_verdicts():
    files = corpora.jsontestsuite_files()
    verdicts = json_verdicts()
    wrong = []
    for p in files:
        if p.name not in verdicts:
            continue
        got = verdicts[p.name]
        kind = p.name[0]
        want = {"y": True, "n": False}.get(kind, p.name in JSON_I_ACCEPTED)
        if got != want:
            wrong.append((p.name, got))
    assert not wrong
    assert sum(p.name.startswith("i_") for p in files) == 35


def test_jsontestsuite_matches_expected_file():
    """jsontestsuite-expected.json: accepted iff no byte is rejected and the
    whole file is accepted at end of input (a strict RFC 8259 recogniser)."""
    path = corpora.require("json/jsontestsuite-expected.json")
    expected = json.loads(path.read_text("utf-8"))
    verdicts = json_verdicts()
    wrong = [name for name, e in expected.items() if name in verdicts
             and verdicts[name] != (e["first_rejected_byte"] is None and e["accepted_at_eof"])]
    assert not wrong


def test_json_greedy_lexing_on_jsontestsuite():
    """Greedy lexing gives the same verdicts as lark on every UTF-8 file."""
    g = greedy("json")
    bad = []
    for p in corpora.jsontestsuite_files():
        try:
            text = p.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
        if p.name not in json_verdicts():
            continue
        if g.accepts(text) != json_verdicts()[p.name]:
            bad.append(p.name)
    assert not bad


def test_json_sampled_documents_load_with_json_module():
    s = grammar_sampler.GrammarSampler(grammar_text("json"), max_depth=12, max_tokens=40)
    rng = random.Random(1)
    for _ in range(50):
        doc = s.sample(rng)
        assert lark_accepts("json", doc), doc
        json.loads(doc)


# ---------------------------------------------------------------- SQL

def test_spider_sample():
    queries = corpora.spider_queries()
    assert len(queries) == 1748
    sample = random.Random(0).sample(queries, 60)
    bad = [q for q in sample if not lark_accepts("sql", q)]
    assert not bad


SQL_ACCEPT = [
    "SELECT 1",
    "select count(*) from singer;",
    "SELECT name FROM t WHERE x = \"USA\" AND y != 'a''b' OR z <> 1",
    "SELECT T1.a, T2.b FROM t AS T1 JOIN u AS T2 ON T1.id = T2.id WHERE T1.c LIKE '%x%'",
    "SELECT a FROM t WHERE a NOT IN (SELECT b FROM u) GROUP BY a HAVING count(*) > 1 ORDER BY a DESC LIMIT 5 OFFSET 2",
    "SELECT a FROM t INTERSECT SELECT a FROM u EXCEPT SELECT a FROM v UNION ALL SELECT 1",
    "SELECT * FROM t WHERE a BETWEEN 1 AND 2 AND EXISTS (SELECT 1 FROM u WHERE u.x = t.x)",
    "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT n FROM c",
    "SELECT CASE WHEN a > 0 THEN 'p' ELSE 'n' END, CAST(b AS INTEGER) FROM t",
    "SELECT a, rank() OVER (PARTITION BY b ORDER BY c ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t",
    "SELECT sum(x) FILTER (WHERE x > 0) OVER w FROM t WINDOW w AS (ORDER BY y)",
    "SELECT `a`, [b c], \"d\" FROM `t 1`",
    "SELECT 0x1F, 1.5e3, .5, 1., x'00ff', NULL, CURRENT_DATE",
    "SELECT a FROM t LEFT OUTER JOIN u USING (id) NATURAL JOIN v CROSS JOIN w",
    "SELECT a FROM t -- comment\n WHERE /* inline */ b = 1",
    "VALUES (1, 2), (3, 4)",
    "INSERT INTO t (a, b) VALUES (1, 'x'), (2, 'y')",
    "INSERT OR IGNORE INTO t SELECT * FROM u",
    "REPLACE INTO t DEFAULT VALUES",
    "UPDATE t SET a = a + 1, b = 'z' WHERE id = 3 RETURNING *",
    "DELETE FROM t WHERE a IS NOT NULL",
    "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY AUTOINCREMENT, name VARCHAR(20) NOT NULL UNIQUE, "
    "p REAL DEFAULT 0.5 CHECK (p >= 0), u INT REFERENCES v (id) ON DELETE CASCADE, "
    "CONSTRAINT k UNIQUE (name, p))",
    "CREATE TEMP TABLE t AS SELECT 1 AS x",
    "SELECT key, desc.a FROM t AS desc",  # non-reserved keywords as names, as in SQLite
    "SELECT T1.name FROM Match AS T1 WHERE Range > 2",  # MATCH / RANGE fall back to names here
    "SELECT match.id FROM match JOIN range ON range.x = match.y ORDER BY range",
    "SELECT 1;  ",  # whitespace and comments after the final ";"
    "SELECT 1; -- done\n /* end */ ",
]

SQL_REJECT = [
    "",
    "SELECT",
    "SELECT FROM t",
    "SELECT a FROM",
    "SELECT a, FROM t",
    "SELECT 1 + * 2",
    "SELECT (a FROM t",
    "SELECT a) FROM t",
    "SELECT count(*) FROM t WHERE (a = 1",
    "SELECT a FROM t WHERE",
    "SELECT a FROM t WHERE a = 1 AND",
    "SELECT a FROM t t2 t3",
    "SELECT a b c FROM t",
    "SELECT a FROM t garbage garbage",
    "SELECT a FROM t;;",
    "SELECT a FROM t; SELECT b FROM u",
    "SELECT a AS where FROM t",
    "SELECT * FROM t ORDER a",
    "SELECT * FROM t GROUP BY",
    "SELECT * FROM t LIMIT",
    "SELECT * FROM t LIMIT 1 WHERE a = 1",
    "SELECT * FROM t ORDER BY a UNION SELECT * FROM u",
    "SELECT * FROM t UNION",
    "VALUES (1) ORDER BY 1",
    "SELECT * FROM t WHERE a BETWEEN 1",
    "SELECT CASE WHEN a THEN b",
    "SELECT CAST(a)",
    "SELECT * FROM t NATURAL JOIN u ON t.a = u.a",
    "SELECT 'abc",
    "SELECT \"abc",
    "SELECT [a FROM t",
    "SELECT /* unterminated",
    "WITH x AS SELECT 1 SELECT * FROM x",
    "INSERT INTO t VALUES",
    "UPDATE t SET",
    "DELETE t",
    "CREATE TABLE t ()",
    "SELECT a FROM t WHERE a ! = 1",
    "SELECT 1 match",  # MATCH is an operator here, not an alias
    "SELECT * FROM t left",  # LEFT starts a join
    "SELECT a FROM t WINDOW range AS ()",
    "SELECT 1; SELECT 2",
]

# Lark's dynamic lexer takes each terminal's own longest match, so it reads
# `FROM` as the identifiers `FRO` `M` (IDENT excludes the keyword, not its
# prefixes) and `1e` as `1 e`; greedy lexing over the union of the allowed
# terminals, with the word boundary, does not -- and neither does SQLite.
SQL_REJECT_GREEDY = [
    "SELECT DISTINCT FROM t",
    "SELECT from FROM t",
    "SELECT * FROM select",
    "SELECT group FROM t",
    "SELECT 1e",
    "SELECTa FROM t",
    "SELECT * FROMt",
    "SELECT 1a",
    "SELECT a FROM t WHEREa = 1",
    "SELECT a FROM t ORDER BYa",
    "SELECT cast FROM t",  # CAST starts a cast here (lark reads `cas t`)
]


def _sqlite_error(sql):
    try:
        sqlite3.connect(":memory:").execute("EXPLAIN " + sql)
    except sqlite3.Warning as e:  # more than one statement
        return str(e)
    except sqlite3.Error as e:
        return str(e)
    return None


def _is_syntax_error(msg):
    return msg is not None and any(s in msg for s in ("syntax error", "unrecognized token", "incomplete input"))


@pytest.mark.parametrize("sql", SQL_ACCEPT)
def test_sql_accepts(sql):
    assert lark_accepts("sql", sql)
    assert greedy_accepts("sql", sql) in (True, None)
    assert not _is_syntax_error(_sqlite_error(sql))


@pytest.mark.parametrize("sql", SQL_REJECT)
def test_sql_rejects(sql):
    assert not lark_accepts("sql", sql)
    assert greedy_accepts("sql", sql) in (False, None)
    if sql:
        assert _sqlite_error(sql) is not None, "SQLite accepts it too"


@pytest.mark.parametrize("sql", SQL_REJECT_GREEDY)
def test_sql_rejects_under_greedy_lexing(sql):
    ok, msg = greedy("sql").check(sql)
    assert not ok
    if sql.strip() != "SELECT 1 ;":
        assert _sqlite_error(sql) is not None


def test_sql_sampled_documents_compile_in_sqlite():
    """Documents sampled from the grammar parse with lark, lex greedily, and
    SQLite compiles them without a syntax error ("no such table" is fine)."""
    s = grammar_sampler.GrammarSampler(grammar_text("sql"), max_depth=25, max_tokens=18)
    rng = random.Random(7)
    bad = []
    for _ in range(100):
        q = s.sample(rng)
        if greedy_accepts("sql", q) is False:
            bad.append(("greedy", q))
        msg = _sqlite_error(q)
        if _is_syntax_error(msg):
            bad.append((msg, q))
    for q in [s.sample(rng) for _ in range(15)]:
        if not lark_accepts("sql", q):
            bad.append(("lark", q))
    assert not bad


# --------------------------------------------------------- JavaScript

JS_ACCEPT = [
    "var a = 1;",
    "var a = 1",
    "a\nb",
    "a\n.b()\n.c(d =>\n d.e)\n",
    "a\n+ b",
    "f(a\n)",
    "x = [\n 1,\n 2\n]",
    "var obj = {\n  a: 1,\n  b: 2\n}\n",
    "var a = b\n  , c = d",
    "let x\n= 5",
    "x = a\n  ? b\n  : c",
    "return\nx",  # ASI after return: `return; x;`
    "x\n++y",  # no line break before postfix ++: `x; ++y;`
    "x++\ny",
    "a = b\n(c)",
    "var a = function() {}\n(function() {})()",
    "if (a) b\nelse c",
    "do x(); while (y) z()",
    "{ a }",
    "switch (x) { case 1: a; case 2: b\n default: c }",
    "x = a / b / c",
    "x = /ab+c/gi.test(y)",
    "if (a) /re/.exec(b)",
    "x = a\n/2/g",  # division, as in JavaScript
    "x = `a${b}c${`d${e}`}f`;",
    "x = `a$b$${c}$`",
    "x = `\\``",
    "x = {a: `${ {b: 1}.b }`}",
    "class A extends B { #x = 1; static y; static { z() } get q() { return this.#x } async *gen() {} m() {} }",
    "class A { x = 1\n y = 2\n static z }",
    "const {a, b: [c, ...d], ...e} = f",
    "[a, b] = [b, a]",
    "({a, b} = c)",
    "const f = async (x, y = 2, ...z) => { await x; }",
    "x = a?.b?.[c]?.(d) ?? e",
    "x = 2 ** 3 ** 2",
    "x = 1_000_000n + 0xFFn + 0o17 + 0b1010 + .5e-3",
    "function* g() { yield* h(); yield\n1 }",
    "import a, {b as c, default as d} from 'x'; export default function () {}\nexport {a as b}; export * from 'y'",
    "export const x = 1\nexport { default as y } from 'z'",
    "label: for (const x of y) { if (x) continue label; else break }",
    "for (var i = 0, n = a.length; i < n; i++) {}",
    "for (;;) {}",
    "for (x in y) z()",
    "async function f() { for await (const x of y) {} }",
    "try { a } catch { b } finally { c }",
    "x = {a, b: 1, [c]: 2, d() {}, get e() {}, set f(v) {}, ...g, 'h': 3, 4: 5, if: 6}",
    "new a.b.C(1).d()",
    "new A",
    "new new A()()",
    "x = import.meta.url; y = new.target",
    "x = typeof y === 'undefined'",
    "a ||= b; c &&= d; e ??= f",
    "#!/usr/bin/env node\nfoo()",
    "'use strict'\nvar x",
    "x => ({})",
    "x => {}",
]

JS_REJECT = [
    "a b",
    "var",
    "x = -2 ** 2",  # unary operand of **
    "x = a ?? b || c",  # ?? mixed with || without parentheses
    "x = (a",
    "x = `a${b`",
    "if (a) let b = 1",
    "while (a) class B {}",
    "function f() { import x from 'y' }",
    "a?.b = 1",
    "f() ++",
    "x = {a = 1}",
    "x = `\\9`",
    "x = '\\xZ'",
    "export default a, b",
    "export { if }",
    "var if = 1",
    "let x = 08n",
]

# Rejected under greedy lexing (what cfgmask does) though lark's dynamic
# lexer finds another segmentation.
JS_REJECT_GREEDY = [
    "x instanceofY",
    "1in x",
    "x\n=> 1",  # no line break before =>
    "returnx\ny",  # `returnx` is one identifier, then ASI: fine, so check below
]


# The [In] parameter: `in` is no relational operator at the top level of a
# for(;;) head's first part (its expression, or a var/let/const
# initialiser), where it would start a for-in; parentheses, brackets,
# calls, templates, a conditional's middle and function bodies set it
# again. (source, verdict), the verdicts `node --check` gives.
JS_IN_CASES = [
    ("for (var i = a in b;;) {}", False), ("for (let i = a in b;;) {}", False),
    ("for (const i = a in b;;) {}", False), ("for (x = a in b;;) {}", False),
    ("for (a ? b : c in d;;) {}", False), ("for (x => x in y;;) {}", False),
    ("for (async x => x in y;;) {}", False), ("for ({a} = b in c;;) {}", False),
    ("for (a = b = c in d;;);", False), ("for (a, b in c;;);", False),
    ("for (let in a in b;;);", False), ("function* g() { for (yield a in b;;); }", False),
    ("for (var [a] = 1 in b) {}", False), ("for (var a = 1, b in c) {}", False),
    ("'use strict'; for (var i = a in b) {}", False),
    ("for (a in b in c) {}", True), ("for ((a in b);;) {}", True), ("for (a ? b in c : d;;) {}", True),
    ("for (x => (x in y);;) {}", True), ("for (x => { x in y };;) {}", True),
    ("for (var {a = b in c} = d;;) {}", True), ("for ([a in b];;) {}", True), ("for (f(a in b);;) {}", True),
    ("for (a; b in c; d in e) {}", True), ("for (var a = `${b in c}`;;) {}", True),
    ("for (a instanceof b;;);", True), ("for (var x = y instanceof z;;);", True),
    ("for (var a = b ? c in d : e; ;);", True), ("var x = a in b, y = c in d;", True),
    ("if (a in b) c in d;", True), ("for (a\nin b);", True), ("for (let in a);", True),
    # Annex B.3.5: sloppy mode allows an initialiser in a `var` for-in head
    ("for (var i = a in b) {}", True), ("for (var a = 1 in b in c);", True),
]

# A concise arrow body may start with anything but "{" -- unlike an
# expression statement, also with a function or class expression or (in
# sloppy code) `let [`.
JS_ARROW_BODY_CASES = [
    ("x => function(){}", True), ("x => class {}", True), ("x => async function(){}", True),
    ("x => function*(){}", True), ("x => let[0]", True), ("x => let[0].y", True), ("x => let(1)", True),
    ("x => function(){}.call(this)", True), ("x => class extends A {}.b", True),
    ("x => function(){} + 1", True), ("x => function(){}, y", True), ("x => x => class {}", True),
    ("async x => function(){}", True), ("for (x => function(){ a in b };;);", True),
    ("x => {}.a", False), ("x => {a: 1, b: 2}", False), ("'use strict'; x => let[0]", False),
    ("for (x => function(){} in y;;);", False), ("function(){}", False), ("class {}", False),
    ("let[0] = 1", False),
]

# A line break after `get` / `set` in an object literal and between a
# method's name and "(" (where the name could also be a shorthand property
# or a field, so the break is an NL lexeme); `async` takes none after it.
JS_METHOD_LINE_BREAK_CASES = [
    ("x = { get\n a() {} }", True), ("x = { set\n a(v) {} }", True), ("x = { get\n [a]() {} }", True),
    ("x = { get /*\n*/ a() {} }", True), ("x = { a\n() {} }", True), ("x = { get\n() {} }", True),
    ("x = { \"a\"\n() {} }", True), ("x = { [a]\n() {} }", True), ("class A { a\n() {} }", True),
    ("class A { #a\n() {} }", True), ("class A { get\n a() {} }", True), ("x = { set\n: 1 }", True),
    ("x = { async\n a() {} }", False), ("x = { get\n a }", False), ("x = { a\n b }", False),
    # a class field named get / set / static and a line break: JavaScript
    # reads on (a getter, a static element) wherever what follows can go on
    ("class A { get\n a }", False), ("class A { set\n a }", False), ("class A { get\n a = 1 }", False),
    ("class A { static get\n a }", False), ("class A { get\n #a }", False), ("class A { get\n [a] }", False),
    ("class A { get\n static a(){} }", False), ("class A { static\n static a(){} }", False),
    ("class A { get\n async *a(){} }", False),
    ("class A { get\n *a(){} }", True), ("class A { static get\n *a(){} }", True), ("class A { get\n ; a }", True),
    ("class A { get\n }", True), ("class A { static\n a }", True), ("class A { static\n a() {} }", True),
    ("class A { static\n {} }", True), ("class A { async\n a() {} }", True), ("class A { get = 1\n a }", True),
    ("class A { getx\n a }", True), ("class A { #get\n a }", True), ("class A { get; set; static; }", True),
]


# `#x in obj` (ES2022, first in its binary list or after an equality or
# bitwise operator), tagged
# templates with escapes an untagged one refuses (ES2018), import() with
# options (ES2025, node 20 accepts it), a line break before `from` after
# `export {...}`, and the spec's for-of lookahead (not `async of`).
JS_SYNTAX_CASES = [
    ("class A { #a; m() { #a in this } }", True), ("class A { #a; m() { return #a in o && #a in p } }", True),
    ("class A { #a; m() { x = a ? #a in b : c } }", True), ("class A { #a; m() { #a in a + b } }", True),
    ("class A { #a; m() { #a + 1 } }", False), ("class A { #a; m() { a + #a in b } }", False),
    ("class A { #a; m() { for (#a in this;;); } }", False), ("class A { #x; m(o) { return a == #x in o } }", True),
    ("class A { #x; m(o) { return a & #x in o | #x in p } }", True), ("class A { #x; m(o) { a === #x in o in p } }", True),
    ("class A { #x; m(o) { a < #x in o } }", False), ("class A { #x; m(o) { a ** #x in o } }", False),
    ("class A { #x; m(o) { for (a == #x in o;;); } }", False), ("class A { #x; m(o) { a ==\n#x in o } }", True),
    ("tag`\\u{110000}`", True), ("tag`\\01`", True), ("String.raw`C:\\users\\x`", True),
    ("f()`\\xg`", True), ("`\\01`", False), ("`${`\\xg`}`", False), ("tag`\\`", False),
    ("import(a,)", True), ("import(a, b,)", True), ("import(a, b, c)", False), ("import(a, ...b)", False),
    ("for (async of x);", False), ("for (async.a of x);", True), ("for ((async) of x);", True),
    ("async function f() { for await (async of x); }", True), ("for (asyncx of x);", True),
    ("for (async of => x;;);", True), ("for (async in x);", True),
]

# ASI before "(", "[" or a template: none where the expression can go on
# (`a\n(b)` is a call), so the reading as two statements must not exist
# there; after a declaration without initialiser, break, continue, a bare
# return or debugger there is one.
JS_ASI_CASES = [
    ("foo\n() => 1", False), ("a\n[...b]", False), ("let x = async\n(y) => y", False),
    ("x = y\n(a, b) => c", False), ("a\n(b)", True), ("a\nb", True), ("x = y\n`a`", True),
    ("var x\n(function(){})()", True), ("var x = 1, y\n(function(){})()", True),
    ("let a, b\n[a, b] = [1, 2]", True), ("let a = c\n[a, b] = [1, 2]", True), ("const a = c\n[0]", True),
    ("do x; while (y)\n(z)", True), ("function f() { return\n(x) }", True),
    ("function f() { return a\n(x) }", True), ("while (1) { break\n(x) }", True),
    ("while (1) { continue\n[x] }", True), ("debugger\n(x)", True), ("var [a] = b\n(c)", True),
    ("if (a) var b\n(c)", True), ("x = 1\n;(function(){})()", True),
]
# Closed expressions (a postfix ++/--, an arrow function with a block body
# or a bare `yield` last): nothing after a line break goes on with them, so
# the statement ends there even before "(", "[" or a template; and class
# fields, whose line break after an initialiser is NL_EOS too.
JS_CLOSED_CASES = [
    ("x++\n(y)", True), ("x--\n[1].map(f)", True), ("() => {}\n[1].map(f)", True),
    ("async () => {}\n(x)", True), ("function* g() { yield\n(x) }", True), ("a = b++\n(c)", True),
    ("x => y++\n(z)", True), ("a ? b : () => {}\n(x)", True), ("x = a ? b : c++\n(d)", True),
    ("var a = b--\n[1]", True), ("let a = b => {}\n[c] = d", True), ("const f = () => {}\n`t`", True),
    ("function f() { return x++\n(y) }", True), ("throw x++\n(y)", True), ("for (;;) x++\n(y)", True),
    ("a, b++\n(c)", True), ("a + -b++\n(c)", True), ("x = y => z\n(w)", True),
    ("x = function(){}\n(1)", True), ("x = y => z\n(w) => v", False), ("x = () => {}\n(w) => v", True),
    ("a = ++b\n(c) => d", False), ("class A { x = y\n[z]() {} }", False), ("class A { x = y\n*g() {} }", False),
    ("class A { x = y\n[z] }", True), ("class A { x\n[z]() {} }", True), ("class A { x\n*g() {} }", True),
    ("class A { x = () => {}\n[z]() {} }", True), ("class A { x = () => {}\n*g() {} }", True),
    ("class A { x = y++\n*g() {} }", False),
]
# Refused by the `not_before` pragma on NL_EOS, which support/greedy_check.py
# (and lark) do not read.
JS_NOT_BEFORE_REFUSALS = {src for src, ok in JS_ASI_CASES + JS_CLOSED_CASES if not ok} | {
    "export default a\n(b) => c", "export var x = a\n(b) => c", "export let x = a\n[...b]"}

JS_NODE_CASES = (JS_IN_CASES + JS_ARROW_BODY_CASES + JS_METHOD_LINE_BREAK_CASES + JS_SYNTAX_CASES
                 + JS_ASI_CASES + JS_CLOSED_CASES)


@pytest.mark.parametrize("src,ok", JS_NODE_CASES)
def test_js_node_verdicts(src, ok):
    """JS_NODE_CASES: the engine (byte by byte), lark under greedy lexing and
    lark itself give node's verdict (refusals of the not_before pragma on
    NL_EOS: the engine only). (Lark alone also
    reads `'use strict';` as a plain directive, a sloppy reading that greedy
    lexing never makes; and it may skip a line break as ignored white space
    where greedy lexing scans NL, so it accepts `async\n a() {}`.)"""
    assert cfgmask_accepts("javascript", src) == ok
    if src in JS_NOT_BEFORE_REFUSALS:
        return
    assert greedy_accepts("javascript", src) in (ok, None)
    if "use strict" not in src and (ok or "\n" not in src):
        assert lark_accepts("javascript", src) == ok


# Module code (the `start` rule reads modules too; node checks them as .mjs).
JS_MODULE_CASES = [
    ("export {a}\nfrom 'b'", True), ("export {a} from 'b'\nexport {c}\nfrom 'd'", True),
    ("export * as a\nfrom 'b'", True), ("export {a}\nfrom 'b' c", False),
    ("import a from 'b' with {type: 'json'}", True), ("import 'b' with {type: 'json', x: 'y',}", True),
    ("import a from 'b'\nwith {type: 'json'}", True), ("export {a} from 'b' with {'type': 'json'}", True),
    ("import a from 'b' with {type: json}", False), ("import a from 'b' with {,}", False),
    ("import a from 'b'\n(c)", True), ("export default a\n(b) => c", False),
    ("export var x = a\n(b) => c", False), ("export let x = a\n[...b]", False),
    ("export const x = a++\n[1]", True), ("export default () => {}\n[1]", True),
    ("export default a\n(b)", True), ("export let x\n[y] = z", True),
]


@pytest.mark.parametrize("src,ok", JS_MODULE_CASES)
def test_js_module_node_verdicts(src, ok):
    assert cfgmask_accepts("javascript", src) == ok
    if src not in JS_NOT_BEFORE_REFUSALS:
        assert greedy_accepts("javascript", src) in (ok, None)


@pytest.mark.parametrize("cases,suffix", [(JS_NODE_CASES, ".cjs"), (JS_MODULE_CASES, ".mjs")],
                         ids=["scripts", "modules"])
def test_js_verdict_cases_match_node(cases, suffix):
    """The stated verdicts are node's (`node --check` as a script or a module)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed: the verdicts of JS_NODE_CASES / JS_MODULE_CASES are not re-checked")
    wrong = [(src, ok) for src, ok in cases if (_node_error(node, src, suffix) is None) != ok]
    assert not wrong


# The documented limits (docs/grammars.md, "Limits (measured)"): documents
# where the engine's verdict is not node's, each with the engine's verdict
# (and whether it is a module). The test fails when either side changes, so
# that the table is kept true.
JS_LIMIT_CASES = [
    ("x = a\n / b", False, False), ("a\n/= 2", False, False), ("a\n/b/.test(c)", True, False),
    ("throw /a/", False, False), ("()\u2028=> 1", True, False), ("/[z-a]/", True, False),
    ("a\n/* c */ (b) => c", True, False), ("export {a}\nfrom", True, True), ("x = a?.5:1", False, False),
    ("x\u00b5 = 1", False, False), ("var \\u{1EE00}", False, False), ('"use strict" ;\nx = 010', True, False),
    ("/((((((a))))))/", False, False), ("/(((a)))/u", False, False), ("/(?<=(?<!a))/", False, False),
    ("/\\2(a)/u", True, False), ("class A { x = yield }", True, False),
    ("class A { x = y++\n[z]() {} }", False, False), ("class A { x = y\nin() {} }", True, False),
    ("/[(]/v", True, False),
    ("/[a-z&&b]/v", True, False), ("/[\\q{abc}]/v", False, False), ("/[[a-z]--[aeiou]]/v", False, False),
]


@pytest.mark.parametrize("src,ok,module", JS_LIMIT_CASES)
def test_js_documented_limits(src, ok, module):
    """Each documented limit holds: the engine gives the stated verdict and
    node the other one."""
    assert cfgmask_accepts("javascript", src) == ok
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed: the limit is not re-checked against node")
    assert (_node_error(node, src, ".mjs" if module else ".cjs") is None) != ok


@pytest.mark.parametrize("src", JS_ACCEPT)
def test_js_accepts(src):
    assert lark_accepts("javascript", src)
    assert greedy_accepts("javascript", src) in (True, None)


@pytest.mark.parametrize("src", JS_REJECT)
def test_js_rejects(src):
    assert not lark_accepts("javascript", src)
    assert greedy_accepts("javascript", src) in (False, None)


@pytest.mark.parametrize("src", JS_REJECT_GREEDY[:3])
def test_js_rejects_under_greedy_lexing(src):
    assert not greedy("javascript").accepts(src)


def test_js_identifier_and_keyword_lexing():
    g = greedy("javascript")
    assert g.accepts("returnx\ny")  # an identifier, not `return x`
    assert g.accepts("x = ifx + iff")
    assert not g.accepts("return(x)y")


# node early errors that depend on context a context-free grammar does not
# track (scopes, labels, strict mode, module-only syntax).
JS_CONTEXT_ERRORS = re.compile("|".join([
    r"Private field .* must be declared in an enclosing class",
    r"new\.target expression is not allowed here",
    r"Duplicate parameter name not allowed in this context",
    r"Identifier .* has already been declared",
    r"Duplicate export of",
    r"Export .* is not defined in module",
    r"Octal escape sequences are not allowed",
    r"Label .* has already been declared",
    r"More than one default clause",
    r"Illegal return statement",
    r"Classes may not have",
    r"Class constructor may not be",
    r"A class may only have one constructor",
    r"Duplicate __proto__ fields",
    r"Illegal 'use strict' directive",
    # strict-mode reserved words (`let`, `static`, `yield`, ...) in class
    # bodies and modules, and `let` bound by let/const inside a pattern
    r"Unexpected strict mode reserved word",
    r"let is disallowed as a lexically bound name",
]))
JS_MODULE_ONLY = re.compile(
    r"Cannot use import statement outside a module|Unexpected token 'export'|"
    r"Cannot use 'import\.meta' outside a module")


def _node_error(node, src, suffix):
    with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False, encoding="utf-8") as f:
        f.write(src)
    try:
        r = subprocess.run([node, "--check", f.name], capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(f.name)
    if r.returncode == 0:
        return None
    lines = [x for x in r.stderr.splitlines() if "Error" in x]
    return lines[0] if lines else r.stderr[-200:]


def test_js_sampled_documents_pass_node_check():
    """Documents sampled from the grammar lex greedily and pass
    `node --check` as a script or as a module, up to context errors."""
    node = shutil.which("node")
    s = grammar_sampler.GrammarSampler(
        grammar_text("javascript"), max_depth=30, max_tokens=25,
        # yield/await/super/break/continue/with only make sense in some
        # contexts; hashbang and HTML-like comments must end their line
        avoid_terminals=["HASHBANG", "HTML_COMMENT", "YIELD", "AWAIT", "SUPER", "BREAK", "CONTINUE", "WITH"],
        terminal_samples={
            "NL": ["\n"],
            "IDENT": ["a", "b1", "$x", "_y", "foo", "ofs", "get", "async", "of"],
            "IDENT_NY": ["a", "b1", "foo", "async", "of"],
            "IDENT_NA": ["a", "b1", "foo", "async", "of"],
            "IDENT_NYA": ["a", "b1", "foo", "async", "of"],
            "IDENT_U": ["é", "x\\u0061", "ĳk", "π"],
            "IDENT_NAME": ["a", "if", "default", "x_1"],
            "HTML_COMMENT": ["<!-- x"],
            "PRIVATE_NAME": ["#p", "#q"],
            "REGEX": ["/a/", "/[b-d]+/g", "/\\//i", "/x*y?/m", "/ +/"],
            "REGEX_U": ["/a/u", "/[b-d]+/gu", "/\\p{L}/u", "/x*y?/v"],
        })
    rng = random.Random(3)
    bad = []
    for _ in range(30):
        src = s.sample(rng)
        if greedy_accepts("javascript", src) is False:
            bad.append(("greedy", src))
            continue
        if _greedy("javascript") is None and not lark_accepts("javascript", src):
            bad.append(("lark", src))
            continue
        if node is None:
            continue
        err = _node_error(node, src, ".cjs")
        if err is None or JS_CONTEXT_ERRORS.search(err):
            continue
        err2 = _node_error(node, src, ".mjs")
        if err2 is None or JS_CONTEXT_ERRORS.search(err2):
            continue
        # A private name outside its class is a context error that node
        # sometimes reports as another one: try again with plain names.
        plain = re.sub(r"#([pq])\b", r"\1", src)
        if "#" in src and any(_node_error(node, plain, sfx) is None for sfx in (".cjs", ".mjs")):
            continue
        bad.append((err + " / module: " + err2, src))
    assert not bad
    if node is None:
        pytest.skip("node not installed: sampled documents were only checked by the grammar")


def test_js_corpus_small_files():
    """The smallest files of each ES level in the Debian corpus parse with lark."""
    index = corpora.js_corpus_index()
    bad = []
    for es in ("es5", "es2015+"):
        files = sorted((r for r in index if r["es"] == es), key=lambda r: r["bytes"])[:3]
        for rec in files:
            text = Path(rec["abspath"]).read_text(encoding="utf-8")
            if not lark_accepts("javascript", text):
                bad.append(rec["file"])
    assert not bad


# ----------------------------------------------- cfgmask on the same cases

@functools.lru_cache(maxsize=None)
def _cfgmask_compiled(name):
    cfgmask = pytest.importorskip("cfgmask")
    try:
        vocab = cfgmask.Vocabulary([bytes([i]) for i in range(256)] + [b"<eos>"], eos_token_ids=[256])
        return cfgmask.compile(cfgmask.Grammar.builtin(name), vocab)
    except ImportError as e:  # extension not built
        pytest.skip("cfgmask runtime not available: %s" % e)


def cfgmask_accepts(name, text):
    from cfgmask.errors import TokenRejected

    m = _cfgmask_compiled(name).matcher()
    for b in text.encode("utf-8"):
        try:
            m.consume(b)
        except TokenRejected:
            return False
    return m.is_accepting()


@pytest.mark.parametrize("name,accept,reject", [
    ("sql", SQL_ACCEPT, SQL_REJECT + SQL_REJECT_GREEDY),
    ("javascript", JS_ACCEPT + ["returnx\ny", "x = ifx + iff"],
     JS_REJECT + JS_REJECT_GREEDY[:3] + ["return(x)y"]),
])
def test_cfgmask_agrees_on_hand_written_cases(name, accept, reject):
    """The engine, fed byte by byte, gives the verdicts the grammar is written for."""
    wrong = [("should accept", s) for s in accept if not cfgmask_accepts(name, s)]
    wrong += [("should reject", s) for s in reject if cfgmask_accepts(name, s)]
    assert not wrong
