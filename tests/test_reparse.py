"""The compiled regex parser (``cfgmask/_fast/_reparse.pyx``) against ``re._parser``.

Where ``_reparse.parse`` answers, its tree must be the one
``re._parser.parse(pattern, flags)`` returns: the same items in the same
order, the same opcode and constant objects, the same argument values and
types, nested sub-patterns alike (cached widths included), and the same
``State`` (flags, group names, group widths, look-behind groups, group count).
Where ``re`` raises or warns, the compiled parser must give up (``None``), so
that :func:`cfgmask.automata.reparse.parse` -- what the automata and the
grammar loader call -- raises ``re``'s own error.  The patterns: every
terminal of the bundled grammars (each SQL dialect, each profile), Lark's
lark.lark, the test grammars, the regex suite, the regexes the JSON Schema
front end builds and parses (formats, ``pattern``), hand-picked corner
cases of re's normalisations, and random regexes, valid and not.  Lark's
widths and the compiled DFAs must not depend on ``CFGMASK_PURE_REPARSE``.
"""

import glob
import os
import random
import re
import warnings

import lark
import lark.utils
import pytest

import cfgmask
from cfgmask._fast import _reparse
from cfgmask.automata import pipeline, reparse
from cfgmask.automata.parse import PARSE_MEMO, sre_parse
from cfgmask.frontends.lark_loader import lark_regexp_width
from tests.test_regex import PATTERNS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NamedIntConstant = type(sre_parse.LITERAL)


@pytest.fixture(autouse=True)
def _compiled_parser(monkeypatch):
    monkeypatch.delenv(reparse.PURE_ENV, raising=False)


# ---------------------------------------------------------------- comparison

# the items whose argument is an int, a constant, None or a pair of ints:
# compared in one step (the trees have up to ~10^5 of them)
_LEAF_OPS = {id(op) for op in (sre_parse.LITERAL, sre_parse.NOT_LITERAL, sre_parse.ANY, sre_parse.AT,
                               sre_parse.CATEGORY, sre_parse.NEGATE, sre_parse.RANGE, sre_parse.GROUPREF)}


def _same_leaf(got, ref):
    if type(got) is not tuple or len(got) != 2 or got[0] is not ref[0]:
        return False
    a, b = got[1], ref[1]
    if type(a) is not type(b):
        return False
    if type(b) is tuple:
        return len(a) == len(b) == 2 and all(type(x) is type(y) is int for x, y in zip(a, b)) and a == b
    if isinstance(b, NamedIntConstant):
        return a is b
    return a == b


def assert_same_tree(got, ref, path="tree"):
    """``got`` is ``ref``: same structure, types, values; re's constants identical."""
    if isinstance(ref, sre_parse.SubPattern):
        assert type(got) is sre_parse.SubPattern, f"{path}: {type(got)}"
        assert got.width == ref.width, f"{path}.width: {got.width} != {ref.width}"
        assert type(got.data) is list, path
        assert_same_tree(got.data, ref.data, path + ".data")
        return
    assert type(got) is type(ref), f"{path}: {type(got).__name__} != {type(ref).__name__}"
    if isinstance(ref, (list, tuple)):
        assert len(got) == len(ref), f"{path}: {len(got)} items != {len(ref)}: {got!r} != {ref!r}"
        for i, (g, r) in enumerate(zip(got, ref)):
            if type(r) is tuple and len(r) == 2 and id(r[0]) in _LEAF_OPS and _same_leaf(g, r):
                continue
            assert_same_tree(g, r, f"{path}[{i}]")
    elif isinstance(ref, NamedIntConstant):
        assert got is ref, f"{path}: {got!r} is not {ref!r}"
    else:
        assert got == ref, f"{path}: {got!r} != {ref!r}"


def assert_same_state(got, ref):
    g, r = got.state, ref.state
    assert g is not r
    for field in ("flags", "groupdict", "groupwidths", "lookbehindgroups", "grouprefpos", "groups", "str"):
        assert getattr(g, field) == getattr(r, field), field
    assert type(g.flags) is type(r.flags)
    assert got.getwidth() == ref.getwidth()


def reference(pattern, flags=0):
    """``("ok", tree)``, or ``("error", exception)`` / ``("warning", warnings)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            tree = sre_parse.parse(pattern, flags)
        except Exception as e:  # noqa: BLE001 - re.error, OverflowError, ValueError, RecursionError
            return "error", e
    if caught:
        return "warning", caught
    return "ok", tree


def check(pattern, flags=0):
    """Compare both parsers on ``pattern``; True where the compiled one answered."""
    kind, ref = reference(pattern, flags)
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # the compiled parser never warns
        got = _reparse.parse(pattern, flags)
    if kind != "ok":
        assert got is None, f"{pattern!r}: re {kind} ({ref!r}) but the compiled parser answered"
        if kind == "error":
            # the switch's parse raises re's error: message and position
            with pytest.raises(type(ref)) as info, warnings.catch_warnings():
                warnings.simplefilter("ignore")     # re's own, before its error
                reparse.parse(pattern, flags)
            assert str(info.value) == str(ref)
            assert getattr(info.value, "pos", None) == getattr(ref, "pos", None)
        return False
    if got is None:
        return False
    assert_same_tree(got, ref)
    assert_same_state(got, ref)
    # and once more: a second parse is a new tree, not the first one
    again = _reparse.parse(pattern, flags)
    assert again is not got and again.data is not got.data
    return True


# ---------------------------------------------------------------- the patterns

def _terminals(grammar):
    return list(grammar.terminal_patterns)


GRAMMARS = {
    "json": lambda: cfgmask.Grammar.builtin("json"),
    "json-generate": lambda: cfgmask.Grammar.builtin("json", profile="generate"),
    "sql": lambda: cfgmask.Grammar.builtin("sql"),
    "sql-generate": lambda: cfgmask.Grammar.builtin("sql", profile="generate"),
    "sql-postgres": lambda: cfgmask.Grammar.builtin("sql", dialect="postgres"),
    "sql-postgres-generate": lambda: cfgmask.Grammar.builtin("sql", "generate", dialect="postgres"),
    "sql-mysql": lambda: cfgmask.Grammar.builtin("sql", dialect="mysql"),
    "sql-mysql-generate": lambda: cfgmask.Grammar.builtin("sql", "generate", dialect="mysql"),
    "javascript": lambda: cfgmask.Grammar.builtin("javascript"),
    "javascript-generate": lambda: cfgmask.Grammar.builtin("javascript", profile="generate"),
    "lark.lark": lambda: cfgmask.Grammar.from_file(
        os.path.join(os.path.dirname(lark.__file__), "grammars", "lark.lark")),
}
for _path in sorted(glob.glob(os.path.join(ROOT, "grammars", "*.lark"))):
    if os.path.basename(_path).startswith("sql_"):
        continue        # a dialect's overlay of sql.lark: loaded above, through builtin
    GRAMMARS["grammars/" + os.path.basename(_path)] = (lambda p: lambda: cfgmask.Grammar.from_file(p))(_path)
for _path in sorted(glob.glob(os.path.join(ROOT, "tests", "grammars", "*.lark"))):
    GRAMMARS["tests/" + os.path.basename(_path)] = (lambda p: lambda: cfgmask.Grammar.from_file(p))(_path)

_LOADED = {}


def grammar_patterns(name):
    if name not in _LOADED:
        _LOADED[name] = _terminals(GRAMMARS[name]())
    return _LOADED[name]


# Schemas whose formats and patterns the JSON Schema front end turns into regexes.
SCHEMAS = [
    {"type": "object", "properties": {
        f: {"type": "string", "format": f}
        for f in ["email", "idn-email", "uri", "uri-reference", "iri", "iri-reference", "uri-template",
                  "date-time", "date", "time", "duration", "ipv4", "ipv6", "uuid", "hostname",
                  "idn-hostname", "json-pointer", "relative-json-pointer", "regex"]}},
    {"type": "object", "properties": {
        "a": {"type": "string", "pattern": "^[a-z]+\\d{2,4}$"},
        "b": {"type": "string", "pattern": "^(\\([0-9]{3}\\))?[0-9]{3}-[0-9]{4}$"},
        "c": {"type": "string", "pattern": "^\\p{L}+$"},
        "d": {"type": "string", "pattern": "[A-Z]{2,}|x?y+", "minLength": 2, "maxLength": 9},
        "e": {"type": "object", "patternProperties": {"^x-": {"type": "integer"}, "^[0-9]+$": {}}},
        "f": {"type": "string", "pattern": "^(?:[^\\s@]+@[^\\s@]+\\.[^\\s@]+)$"},
    }},
    {"type": "array", "items": {"type": "string", "pattern": "\\w+(-\\w+)*", "format": "date"}},
]


def schema_patterns():
    """Every regex the JSON Schema front end parses or compiles for :data:`SCHEMAS`
    (``re._parser.parse`` inputs, recorded with the compiled parser switched off,
    and the grammars' terminal regexes)."""
    if "schemas" in _LOADED:
        return _LOADED["schemas"]
    seen = []
    original = sre_parse.parse

    def recording(pattern, flags=0, state=None):
        if isinstance(pattern, str):
            seen.append(pattern)
        return original(pattern, flags, state)

    mp = pytest.MonkeyPatch()
    try:
        mp.setenv(reparse.PURE_ENV, "1")
        mp.setattr(sre_parse, "parse", recording)
        for schema in SCHEMAS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                g = cfgmask.Grammar.from_json_schema(schema, strict=False)
            seen.extend(g.terminal_patterns)
    finally:
        mp.undo()
    _LOADED["schemas"] = list(dict.fromkeys(seen))
    return _LOADED["schemas"]


# Corner cases of re._parser's reading, each one the compiled parser must answer.
COVERED = [
    # literals, escapes
    "abc", "é€😀", "\\é", "\\.\\*\\[\\]\\-\\^\\\\\\ \\/", "\\x41\\u00e9\\U0001F600", "\\n\\t\\r\\f\\v\\a",
    "\\0", "\\01", "\\012", "\\0123", "\\123", "\\377", "[\\0\\1\\77\\377\\18]", "\\x41\\x4a", "\\ud800",
    "\\d\\D\\w\\W\\s\\S", "[\\d]", "[\\da]", "[\\d\\w]", "[^\\d]", "[\\b]", "\\b\\B\\A\\Z^$", "a{}", "a{,}",
    "a{x}", "a{1", "a{1,", "{", "}", "]", "a{1,2", "a{,3}", "a{3}", "a{2,}", "a{0}", "a{2,5}?", "a{2}+",
    "x*?", "x++", "x?+", "x+?", "(?:ab)*", "(?:ab){2}", "(a)*", "(?:)*", "(?i:a)*",
    # classes
    "[a]", "[^a]", "[ab]", "[^ab]", "[aa]", "[aab]", "[a-a]", "[a-z]", "[^a-z0-9_]", "[]a]", "[^]a]",
    "[]]", "[a-]", "[-a]", "[-]", "[--]", "[a\\-z]", "[\\]]", "[\\^]", "[^^]", "[a-z-]", "[\\d-]",
    "[\\x00-\\x1f]", "[é-ü]", "[\\u0100-\\U0010ffff]", "[a-cb-d]", "[a-ca-c]", "[a&b]", "[a|b]", "[-&]",
    "[^ -#%-/:-@\\[-\\^`{-\\x7f]", "[" + "".join(chr(0x100 + 2 * i) for i in range(100)) + "]",
    "[" + "ab" * 80 + "]", "[" + "a-c" * 70 + "x]",
    # alternation: common prefixes, character sets
    "a|b", "ab|ac", "a|ab", "ab|a", "a|", "|a", "|", "a||b", "a|[bc]|d", "a|[^bc]", "a|\\d", "\\d|\\w",
    "[ab]|[bc]", "ab|ab", "(?:a|b)|(?:a|c)", "a(?:b|c)d", "abc|abd|abe", "(a)|(a)", "x(?:a|b)*y",
    "(?:ab|ac)+", "a|b|c|[d-f]|g", "[^a]|b", ".|a", "a|.", "(?=a)|b",
    # groups, flags, look-arounds
    "(a)", "(?:a)", "(?P<name>a)(?P<other>b)", "(a)(b)(?:c)(d)", "((a)|b)", "()", "(?:)", "(|)",
    "(?i)a", "(?i)(?s)a", "(?#comment)(?i)a", "(?ims)a", "(?a)\\w", "(?u)\\w", "(?i:a)", "(?s:.)", "(?-i:a)",
    "(?i-s:a)", "(?m:^a$)", "(?a:\\w)", "(?u:\\w)", "(?i:a(?-i:b))", "(?=a)", "(?!a)b", "(?<=a)b",
    "(?<!ab)c", "(?<=(a))b", "(a)(?<=b)", "(?>a+)", "(?>)", "(?#c\\))a", "a(?#)b", "(?:(?:(?:a)))",
    "((((((((((a))))))))))", ".", "..", "a.b",
    # nesting at the compiled parser's limit
    "(?:" * _reparse.MAX_NESTING + "a" + ")" * _reparse.MAX_NESTING,
]

# Patterns re refuses (or warns about): the compiled parser must give up.
REFUSED = [
    "a**", "a*+*", "*a", "+", "?", "{1}", "a{3,2}", "^*", "(?i)*", "a)", ")", "(a", "(?:a", "[a", "[", "[^",
    "[]", "[z-a]", "[\\d-z]", "[a-\\d]", "\\", "a\\", "[\\", "(?P<1>a)", "(?P<a>x)(?P<a>y)", "(?P<>a)",
    "(?P<a", "(?Pa)", "(?P", "(?", "(?<", "(?<x)", "(?Q)", "\\q", "\\e", "[\\A]", "[\\B]", "[\\Z]", "[\\q]",
    "(?au:a)", "(?-a:a)", "(?i-i:a)", "(?-i)", "(?i", "(?i-", "(?i-:a)", "(?L)a", "(?u)(?a)a",
    "a(?i)", "a|(?i)b", "(?:(?i)a)", "\\U00110000", "\\x4", "\\xZZ", "\\u12", "[\\x4]", "\\400", "[\\400]",
    "[\\8]", "\\N", "\\N{", "\\N{NO SUCH NAME}", "a{4294967295}", "a{99999999999}", "(?#unterminated",
    "(?#a\\", "\\1", "\\12", "\\9", "(?(1)a|b)",
    # FutureWarnings
    "[[a]", "[a--b]", "[a&&b]", "[a||b]", "[a~~b]", "[+--]",
]

# Valid patterns outside the covered syntax: re._parser answers.
NOT_COVERED = [
    "(a)\\1", "(?P<x>a)(?P=x)", "(a)(?(1)b|c)", "(?x) a b # c", "a(?x: b )", "(?-x:a)", "\\N{EM DASH}",
    "[\\N{EM DASH}]", "(?t)a",
]


def random_regex(rng, depth=0):
    """A regex over the syntax above, with now and then something invalid."""
    r = rng.random()
    if depth > 4 or r < 0.35:
        return _random_atom(rng) + (_random_quantifier(rng) if rng.random() < 0.3 else "")
    if r < 0.55:
        return "".join(random_regex(rng, depth + 1) for _ in range(rng.randint(2, 4)))
    if r < 0.75:
        return "|".join(random_regex(rng, depth + 1) for _ in range(rng.randint(2, 4)))
    group = _pick(rng, _GROUPS)
    body = random_regex(rng, depth + 1)
    close = ")" if rng.random() < 0.97 else ""
    return group + body + close + (_random_quantifier(rng) if rng.random() < 0.3 else "")


# each list: (mostly valid pieces, pieces re refuses or the compiled parser does not cover)
_CHARS = "abcxyzAZ019_ -,:;!\"'#%&/<=>@`~é€😀ſK\t" + ".^$|"
_ESCAPES = ([
    "\\x41", "\\u00e9", "\\U0001F600", "\\n", "\\t", "\\0", "\\07", "\\012", "\\0777", "\\123",
    "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\A", "\\Z", "\\b", "\\B", "\\.", "\\*", "\\[", "\\]",
    "\\-", "\\^", "\\\\", "\\ ", "\\é", "\\/", "\\{", "\\}", "\\(", "\\)", "\\|",
], [
    "\\x4", "\\u12", "\\U00110000", "\\400", "\\1", "\\12", "\\8", "\\q", "\\N{EM DASH}",
])
_CLASS_ITEMS = ([
    "a", "z", "0", "9", "é", "😀", "a-z", "0-9", "é-ü", "\\x00-\\x1f", "\\u0100-\\uffff", "\\d", "\\w",
    "\\s", "\\D", "\\b", "\\n", "\\]", "\\[", "\\-", "\\^", "\\\\", "-", "]", "^", "a-", "\\0", "\\12",
    "\\777", ".", "|", "(", ")", "*", " ", "#", "&", "~", "\\u00e9-\\u00ff", "\\U0001F600-\\U0001F64F",
], [
    "z-a", "\\A", "\\q", "\\d-z", "[", "--", "&&", "||", "~~", "\\8", "\\x4", "\\N{EM DASH}",
])
_GROUPS = ([
    "(", "(", "(?:", "(?:", "(?:", "(?P<n1>", "(?P<n2>", "(?i:", "(?s:", "(?m:", "(?a:", "(?u:", "(?-i:",
    "(?i-s:", "(?=", "(?!", "(?<=", "(?<!", "(?>", "(?#",
], [
    "(?P<1x>", "(?P<>", "(?x:", "(?L:", "(?i-i:", "(?au:", "(?-a:", "(?<x", "(?(1)", "(?Q", "(?P=n1)",
    "(?", "(?i)", "(?s)",
])
_QUANTIFIERS = (["*", "+", "?", "{3}", "{2,}", "{,4}", "{2,5}", "{}", "{,}", "{a}", "{1", "{0}", "{0,0}"],
                ["{5,2}", "{99999999999}"])


def _pick(rng, lists):
    good, bad = lists
    return rng.choice(bad if rng.random() < 0.08 else good)
_GLOBAL_FLAGS = ["(?i)", "(?s)", "(?a)", "(?u)", "(?x)", "(?L)", "(?t)", "(?au)", "(?-i)", "(?ims)", "(?#c)"]


def _random_atom(rng):
    r = rng.random()
    if r < 0.45:
        return rng.choice(_CHARS)
    if r < 0.65:
        return _pick(rng, _ESCAPES)
    if r < 0.95:
        items = "".join(_pick(rng, _CLASS_ITEMS) for _ in range(rng.randint(1, 4)))
        return "[" + ("^" if rng.random() < 0.3 else "") + items + ("]" if rng.random() < 0.95 else "")
    return rng.choice(["^", "$", "\\b", "\\A", "()", "(?:)", "."])


def _random_quantifier(rng):
    q = _pick(rng, _QUANTIFIERS)
    r = rng.random()
    if r < 0.2:
        q += "?"
    elif r < 0.3:
        q += "+"
    elif r < 0.33:
        q += _pick(rng, _QUANTIFIERS)
    return q


def random_pattern(rng):
    p = random_regex(rng)
    if rng.random() < 0.1:
        p = rng.choice(_GLOBAL_FLAGS) + p
    r = rng.random()
    if r < 0.03 and p:                       # delete a character
        i = rng.randrange(len(p))
        p = p[:i] + p[i + 1:]
    elif r < 0.06:                           # insert a special one
        i = rng.randrange(len(p) + 1)
        p = p[:i] + rng.choice("()[]{}|*+?\\^$-") + p[i:]
    return p


RANDOM_FLAGS = [0, 0, 0, re.IGNORECASE, re.DOTALL | re.MULTILINE, re.ASCII, re.UNICODE,
                re.ASCII | re.UNICODE, re.VERBOSE, re.LOCALE]


def run_random(n, seed):
    rng = random.Random(seed)
    answered = valid = 0
    for _ in range(n):
        pattern = random_pattern(rng)
        flags = rng.choice(RANDOM_FLAGS) if rng.random() < 0.2 else 0
        valid += reference(pattern, flags)[0] == "ok"
        answered += check(pattern, flags)
    return answered, valid


# ---------------------------------------------------------------- tests

@pytest.mark.parametrize("a, b", [("[ab]", "[ba]"), ("a*", "a*?"), ("(?:a)b", "(a)b"), ("a|b", "(?:a|b)c"),
                                  ("(?i)a", "a"), ("\\d", "[0-9]"), ("a{2}", "aa"), ("(a)", "(?P<n>a)")])
def test_the_comparison_sees_differences(a, b):
    ta, tb = sre_parse.parse(a), sre_parse.parse(b)
    with pytest.raises(AssertionError):
        assert_same_tree(ta, tb)
        assert_same_state(ta, tb)


def test_the_comparison_sees_types():
    t = sre_parse.parse("a*")
    op, (lo, hi, body) = t.data[0]
    with pytest.raises(AssertionError):
        assert_same_tree(sre_parse.SubPattern(t.state, [(op, (lo, int(hi), body))]), t)
    with pytest.raises(AssertionError):
        assert_same_tree(sre_parse.SubPattern(t.state, [(op, [lo, hi, body])]), t)


@pytest.mark.parametrize("pattern", COVERED)
def test_corner_cases_answered_as_re(pattern):
    assert check(pattern), f"{pattern!r}: the compiled parser gave up"


@pytest.mark.parametrize("pattern", REFUSED)
def test_refused_patterns_raise_re_errors(pattern):
    assert reference(pattern)[0] != "ok", pattern
    assert not check(pattern)


@pytest.mark.parametrize("pattern", NOT_COVERED)
def test_not_covered_go_to_re(pattern):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kind, ref = reference(pattern)
        assert kind == "ok", pattern
        assert _reparse.parse(pattern) is None
        assert_same_tree(reparse.parse(pattern), ref)


@pytest.mark.parametrize("flags", [0, re.IGNORECASE, re.DOTALL, re.MULTILINE, re.ASCII, re.UNICODE,
                                   re.IGNORECASE | re.ASCII])
def test_flags_argument(flags):
    for pattern in ("a(?i:b)\\w", "(?s).", "[\\d\\s]+|x", "(?a)\\w"):
        kind, _ = reference(pattern, flags)
        assert check(pattern, flags) == (kind == "ok"), (pattern, flags)


@pytest.mark.parametrize("flags", [re.VERBOSE, re.LOCALE, re.ASCII | re.UNICODE, re.DEBUG,
                                   sre_parse.SRE_FLAG_TEMPLATE])
def test_flags_not_covered_give_up(flags):
    assert _reparse.parse("a b", flags) is None


def test_not_str_gives_up():
    assert _reparse.parse(b"abc") is None
    assert reparse.parse(b"abc").data == sre_parse.parse(b"abc").data


def test_nesting_past_the_limit_gives_up():
    deep = "(?:" * (_reparse.MAX_NESTING + 2) + "a" + ")" * (_reparse.MAX_NESTING + 2)
    assert _reparse.parse(deep) is None
    check(deep)
    very_deep = "(" * 5000 + ")" * 5000       # re recurses too deep; the answer is its error
    assert _reparse.parse(very_deep) is None


def test_switch_forces_re(monkeypatch):
    calls = []
    original = sre_parse.parse
    monkeypatch.setattr(sre_parse, "parse", lambda *a: calls.append(a) or original(*a))
    reparse.parse("a|b")
    assert calls == []
    monkeypatch.setenv(reparse.PURE_ENV, "1")
    assert reparse.compiled_parse("a|b") is None
    reparse.parse("a|b")
    assert calls == [("a|b", 0)]


_ANSWERED = set()      # patterns checked already (the grammars share most terminals)


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_every_terminal_of_the_grammars(name):
    patterns = grammar_patterns(name)
    assert patterns
    for pattern in patterns:
        if pattern not in _ANSWERED:
            assert check(pattern), f"{name}: the compiled parser gave up on {pattern[:200]!r}"
            _ANSWERED.add(pattern)


def test_regex_suite_patterns():
    for pattern in PATTERNS:
        check(pattern)
    assert sum(check(p) for p in PATTERNS) >= 0.9 * len(PATTERNS)


def test_json_schema_regexes():
    patterns = schema_patterns()
    assert len(patterns) > 50
    answered = sum(check(p) for p in patterns)
    assert answered == len(patterns), [p[:80] for p in patterns if _reparse.parse(p) is None]


def test_random_regexes():
    answered, valid = run_random(3000, seed=23)
    assert valid > 1000 and answered > 0.8 * valid, (answered, valid)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_random_regexes_long(seed):
    answered, valid = run_random(25000, seed=1000 + seed)
    assert answered > 0.8 * valid, (answered, valid)


def _lark_width_outcome(fn, pattern):
    try:
        return "ok", fn(pattern)
    except Exception as e:  # noqa: BLE001
        return "error", (type(e), str(e))


def test_lark_widths():
    rng = random.Random(5)
    patterns = (COVERED + REFUSED + PATTERNS + schema_patterns() + grammar_patterns("javascript")
                + grammar_patterns("sql") + [random_pattern(rng) for _ in range(500)]
                + ["\\p{L}+", "a\\p{Lu}b", "(?x) a b", "[[a]"])
    reference_width = lark.utils.get_regexp_width
    for pattern in patterns:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = _lark_width_outcome(reference_width, pattern)
            got = _lark_width_outcome(lambda p: lark_regexp_width(p, reference_width), pattern)
        assert got == want, pattern[:200]
        if want[0] == "ok":
            assert type(got[1]) is type(want[1]) and all(type(x) is int for x in got[1])


def _dfa_arrays(pattern):
    PARSE_MEMO.pop(pattern, None)
    try:
        d = pipeline.regex_to_dfa(pattern, "T")
    except cfgmask.GrammarError as e:
        return ("error", str(e))
    return (d.trans.tobytes(), d.trans.shape, d.accepting.tobytes(), tuple(d.follow_forbidden),
            tuple(d.follow_forbidden_at_eos))


_SAME_DFA = set()


@pytest.mark.parametrize("name", ["json", "sql", "javascript", "lark.lark",
                                  pytest.param("sql-postgres", marks=pytest.mark.slow),
                                  pytest.param("sql-mysql", marks=pytest.mark.slow)])
def test_dfas_do_not_depend_on_the_switch(name, monkeypatch):
    for pattern in grammar_patterns(name):
        if pattern in _SAME_DFA:
            continue
        _SAME_DFA.add(pattern)
        monkeypatch.delenv(reparse.PURE_ENV, raising=False)
        fast = _dfa_arrays(pattern)
        monkeypatch.setenv(reparse.PURE_ENV, "1")
        pure = _dfa_arrays(pattern)
        assert fast == pure, pattern[:200]


def test_callers_use_the_compiled_parser(monkeypatch):
    """parse_pattern (the grammar loader's check, kept for the pipeline),
    parsed_pattern, repeat_classes and Lark's width all parse without re._parser."""
    from cfgmask.automata.parse import parse_pattern, parsed_pattern, repeat_classes

    def refuse(*args):
        raise AssertionError(f"re._parser.parse{args!r}")

    big = max(grammar_patterns("sql"), key=len)
    want = sre_parse.parse(big, 0)
    PARSE_MEMO.pop(big, None)
    monkeypatch.setattr(sre_parse, "parse", refuse)
    assert_same_tree(parse_pattern(big), want)
    assert_same_tree(parsed_pattern(big), want)      # the kept tree, taken out
    assert_same_tree(parsed_pattern(big), want)      # parsed again
    assert repeat_classes("[a-z]{1,5}x*") == [(((97, 122),), 5), (((120, 120),), None)]
    assert lark_regexp_width(big, refuse) == [int(x) for x in want.getwidth()]
    monkeypatch.setenv(reparse.PURE_ENV, "1")
    with pytest.raises(AssertionError):
        parse_pattern("a|b|c")


def test_widths_computed_in_c(monkeypatch):
    # _reparse.getwidth is re._parser's getwidth in C: the same (min, max), the same
    # caps, cached on the same nodes, on trees from either parser; the switch runs
    # re._parser's own
    rng = random.Random(11)
    patterns = (COVERED + PATTERNS + schema_patterns() + grammar_patterns("javascript")
                + grammar_patterns("sql") + [random_pattern(rng) for _ in range(1500)]
                + ["a{3,}", "(?:ab){2}c+", "(a)\\1", "(a)?(?(1)b|cd)", "(?>a*)b?", "x*+", ".{5,7}"])
    compared = 0
    for pattern in patterns:
        if not isinstance(pattern, str):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = sre_parse.parse(pattern, 0).getwidth()
                trees = [sre_parse.parse(pattern, 0), reparse.parse(pattern)]
        except (re.error, RecursionError, OverflowError):
            continue
        for tree in trees:
            assert _reparse.getwidth(tree) == want, pattern[:200]
            assert tree.width == want and _reparse.getwidth(tree) is tree.width
        compared += 1
    assert compared > 1000
    tree = sre_parse.parse("ab+", 0)
    monkeypatch.setenv(reparse.PURE_ENV, "1")
    assert reparse.getwidth(tree) == (2, sre_parse.MAXWIDTH)
