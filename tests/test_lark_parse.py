"""cfgmask's reader of ``.lark`` text (cfgmask/frontends/lark_parse.py) against Lark's.

The oracle is ``lark.load_grammar._parse_grammar`` itself (the original, never
the wrapper :func:`lark_parse.install` puts in its place).  Every tree is
compared node by node (:func:`first_difference`): tree data, child order,
every token's type, value and eight positions, symbol classes, names and
``filter_out``, and each node's ``meta``.  Where our reader declines
(:class:`Unsupported`) Lark's result stands, so declining is always allowed;
accepting a text Lark refuses, or a tree that differs, is a failure.  The
grammars of the repository and of Lark must not be declined at all.
"""

import json
import os
import random
import re
import subprocess
import sys
import threading

import pytest

from cfgmask.frontends import lark_meta, lark_parse
from cfgmask.frontends.lark_parse import Unsupported, parse_grammar_text

lark_meta.install()  # as the loader runs Lark: with its stored meta table

import lark  # noqa: E402
from lark import Token, Tree  # noqa: E402
from lark import load_grammar as lark_load_grammar  # noqa: E402
from lark.grammar import NonTerminal, Symbol, Terminal  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIRROR_DIR = os.environ.get("CFGMASK_MIRROR_DIR", "/work/.mirror")
TOKEN_FIELDS = ("type", "value", "start_pos", "line", "column", "end_line", "end_column", "end_pos")


def lark_parse_grammar():
    """Lark's own ``_parse_grammar``, even while a wrapper is installed."""
    f = lark_load_grammar._parse_grammar
    while getattr(f, "_cfgmask_lark_parse", False):
        f = f.__wrapped__
    return f


def first_difference(ours, theirs, path="start"):
    """None when the two trees are the same in every respect we compare, else
    a description of the first difference and where it is."""
    if type(ours) is not type(theirs):
        return f"{path}: {type(ours).__name__} {ours!r} vs {type(theirs).__name__} {theirs!r}"
    if isinstance(ours, Tree):
        if type(ours.data) is not type(theirs.data) or ours.data != theirs.data:
            return f"{path}: data {ours.data!r} vs {theirs.data!r}"
        if set(vars(ours)) != set(vars(theirs)):
            return f"{path}: attributes {sorted(vars(ours))} vs {sorted(vars(theirs))}"
        m1, m2 = ours._meta, theirs._meta
        if type(m1) is not type(m2) or (m1 is not None and vars(m1) != vars(m2)):
            return f"{path}: meta {m1 and vars(m1)} vs {m2 and vars(m2)}"
        if m1 is not None and m1 is m2:
            return f"{path}: meta object shared"
        if len(ours.children) != len(theirs.children):
            return (f"{path}: {len(ours.children)} children vs {len(theirs.children)}: "
                    f"{ours.children!r} vs {theirs.children!r}")
        for i, (a, b) in enumerate(zip(ours.children, theirs.children)):
            d = first_difference(a, b, f"{path}/{ours.data}[{i}]")
            if d:
                return d
        return None
    if isinstance(ours, Token):
        for field in TOKEN_FIELDS:
            a, b = getattr(ours, field), getattr(theirs, field)
            if type(a) is not type(b) or a != b:
                return f"{path}: token {theirs!r} {field} {a!r} vs {b!r}"
        if str.__str__(ours) != str.__str__(theirs):
            return f"{path}: token text {str.__str__(ours)!r} vs {str.__str__(theirs)!r}"
        return None
    if isinstance(ours, Symbol):
        if type(ours.name) is not type(theirs.name) or ours.name != theirs.name:
            return f"{path}: symbol name {ours.name!r} vs {theirs.name!r}"
        if getattr(ours, "filter_out", None) != getattr(theirs, "filter_out", None):
            return f"{path}: {ours!r} filter_out {ours.filter_out!r} vs {theirs.filter_out!r}"
        return None
    return f"{path}: unexpected leaf {ours!r}"


def compare(text, name="<test>"):
    """``"same"`` (both read it, identically), ``"declined"`` (we raise
    Unsupported; ``lark_ok`` says whether Lark read it), or an AssertionError."""
    try:
        theirs = lark_parse_grammar()(text, name)
        lark_error = None
    except Exception as e:  # noqa: BLE001 - any refusal of Lark's
        theirs, lark_error = None, e
    try:
        ours = parse_grammar_text(text, name)
    except Unsupported:
        return "declined" if lark_error is None else "both refuse"
    assert lark_error is None, f"{name}: we read a text Lark refuses ({lark_error!r}): {text!r}"
    d = first_difference(ours, theirs)
    assert d is None, f"{name}: {d}\ntext: {text[:2000]!r}"
    return "same"


# ---------------------------------------------------------------- corpora

def _files(pattern_dir):
    return sorted(os.path.join(pattern_dir, f) for f in os.listdir(pattern_dir) if f.endswith(".lark"))


LOCAL_FILES = (_files(os.path.join(ROOT, "grammars")) + _files(os.path.join(ROOT, "tests", "grammars"))
               + _files(os.path.join(os.path.dirname(lark.__file__), "grammars")))


def _read(path):
    with open(path, encoding="utf-8", newline="") as f:  # newline="": keep CRLF as written
        return f.read()


@pytest.mark.parametrize("path", LOCAL_FILES, ids=lambda p: os.path.relpath(p, os.path.dirname(ROOT)))
def test_local_grammars(path):
    assert compare(_read(path), path) == "same"


def _mirror_sources():
    with open(os.path.join(ROOT, "benchmarks", "coldstart_grammars.json"), encoding="utf-8") as f:
        entries = json.load(f)["grammars"]
    return sorted({(e["repo"], e["commit"]) for e in entries})


def _mirror_files(repo, commit):
    git_dir = os.path.join(MIRROR_DIR, repo.replace("/", "+"), "repo")
    if not os.path.isdir(git_dir):
        pytest.skip(f"no mirror of {repo} at {git_dir} (set CFGMASK_MIRROR_DIR)")
    listing = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", commit],
                             capture_output=True, text=True)
    if listing.returncode != 0:
        pytest.skip(f"mirror {git_dir} lacks commit {commit}: {listing.stderr.strip()}")
    for path in listing.stdout.splitlines():
        if path.endswith(".lark"):
            blob = subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"],
                                  capture_output=True, check=True).stdout
            yield path, blob.decode("utf-8")


@pytest.mark.parametrize("repo,commit", _mirror_sources())
def test_mirror_grammars(repo, commit):
    outcomes = {}
    for path, text in _mirror_files(repo, commit):
        outcome = compare(text, f"{repo}:{path}")
        assert outcome != "declined", f"{repo}:{path}: Lark reads it, we declined"
        outcomes[path] = outcome
    assert outcomes, f"no .lark files in {repo}@{commit}"
    assert "same" in outcomes.values()


# ---------------------------------------------------------------- constructs

SAME = [
    "",
    "\n\n\n",
    "// only a comment",
    "# a hash comment\nstart: a\n",
    "start: a // trailing\n  | b # hash\n// whole line\n  | c\n\n// before the next\nd: e\n",
    'start: "a"',
    "start: a // no final newline",
    'start: a\r\nb: "x"\r\n  | "y"\r\n\r\n  | z\r\n',
    "start:\ta\t|\tb\n\tc: d\n",
    "%import common.WS\n%import common (INT, WORD)\n%import .foo.bar -> baz\n%import .x\n"
    "%import a.b.C -> D\n%import common.ESCAPED_STRING -> STRING\n%import .t (a,B ,c)\n",
    '%ignore WS\n%ignore " "\n%ignore /[\\t ]+/ | COMMENT\n%declare A b _C\n%declare _d\n',
    '%override start: "x"\n%extend A: "y"\n%override A.2: "z"\n%extend ?b: c\n%override !_e{x}.3: x\n',
    'sep{x, s}: x (s x)*\nstart: sep{a, ","} sep{sep{b, C}, /;/}\n_t{x}: x\n?u{a,b,c}: a b c\n',
    'a: t{"a".."z", /x/, B, c, _D, d{e}}\n',
    'a.2: x\nA.-1: "a"\nB.+3: "b"\n?b.1: c\n_c . 5 : d\n',
    "?a: b\n!c: d\n_e: f\n!?g: h\n?!i: j\n_k.3: l\n?_m: n\n",
    "a: b -> x\n  | c d -> y\n  | -> z\n  | (e -> f)\n",
    'a: b ~ 3\n   | c~2..5\n   | (d e)~ 1 .. 2\n   | "x"~0\n   | y~+1..-2\n',
    'A: "a".."z"\nB: ("0".."9")+\nC: "a" .. "b"\n',
    'A: "x"i\nB: /x/imsulx\nC: /y/\nD: "\u00e9"i "i"\n',
    'A: "a\\"b" "\\\\" "\\n\\t" "\\\\\\"" "\\q"\n',
    "A: /a\\/b/ /\\\\/ /[^\\/]+/ /\\// /\\\\\\//\n",
    "A: /a\nb/ B\nB: /c/\n",
    "a: b* c+ d? [e] (f | g)* h?\n",
    "a: (((b | [c]) d)+ | [[e]])*\n",
    "// \u00fcn\u00efc\u00f6d\u00e9\nstart: \"\u00df\" /[\u03b1-\u03c9]+/ \"\U0001F600\"\n",
    "a: b \\\n  c\n",
    "a: b \\  \n  c\n",
    "a: b\n\n\n  | c",
    "a: b\n \x0c| c\n",
    "a:\nb: c\n",
    "a: |\n",
    "a: b\n  // c\n  | d\n",
    "a: b\n  # c\n  | d\n",
    "   \n\t\nA: B\n  \n",
    "a: \"x\"  // \"not a string\n",
    'a: "//" "#" /#/\n',
    "%import common.WS // comment\n",
    "start: x\n%ignore WS",
    "a: b\n| c\n| \n|",
    'a:\t"x"\t/y/\tB\t"p"..\t"q"\n\tc: d ~\t2\n',
    "a: b+c*d? e\n",
    'a: "x" ~ 2..3 "y"+ ["z"]*\n',
    "!_a{b}.-7: b\n",
]

REFUSED = [
    "a: (\n", "a: )\n", "a: [)\n", "a: (]\n", "a\n", "A\n", "a->\n", "a A\n", "Aa:\n",
    'a: -> "a"\n', "a::\n", "a: b:\n", "a: b??", "a: b(?)", "a:+\n", "a:?\n", "a:|*\n",
    "a:a\n()\n", "A.B\n", '"a"\n', '%import "a"\n', "%ignore %import\n", "a: 1\n",
    "\\", "%declare\n", "a: b ~\n", "a: b ~ 1..\n", 'a: "x\n', "a: b\x0cc\n", "\ufeffstart: a\n",
    "a: b ?c\n", "a{}: b\n", "a{b,}: c\n", "A{b}: c\n", "a: t{}\n", "a: t{b,}\n", "%import a.\n",
    "%import ..a\n", "%import a (b,)\n", "%import a -> \n", "a.: b\n", "a.b: c\n", "a: b -> C\n",
    "%override %ignore a\n", "%extend\n", "?A: b\n", "!: a\n", "a: /x/ /\n",
    "a: b\n  c\n", "a: b+c*d?e\n", "A.1: B.2\n", "_: a\n", "a: [b\n", "a: (b))\n", 'a: "a".."b".."c"\n', "a: -> b -> c\n",
]

DECLINED = [
    # Lark's lexer backtracks into escapes when no closing quote follows; ours
    # leaves such texts to Lark.
    "a: /x\\/",
    'A: "x\\"\n',
]


@pytest.mark.parametrize("text", SAME)
def test_constructs(text):
    assert compare(text) == "same"


@pytest.mark.parametrize("text", REFUSED)
def test_refused(text):
    assert compare(text) == "both refuse"


@pytest.mark.parametrize("text", DECLINED)
def test_declined(text):
    assert compare(text) == "declined"


def test_other_start_and_types_declined():
    with pytest.raises(Unsupported):
        parse_grammar_text("a: b\n", "x", start="other")
    with pytest.raises(Unsupported):
        parse_grammar_text(b"a: b\n", "x")


def test_deep_nesting_declined():
    deep = "a: " + "(" * (lark_parse.MAX_DEPTH + 5) + "b" + ")" * (lark_parse.MAX_DEPTH + 5) + "\n"
    with pytest.raises(Unsupported):
        parse_grammar_text(deep, "x")
    ok = "a: " + "[" * (lark_parse.MAX_DEPTH - 1) + "b" + "]" * (lark_parse.MAX_DEPTH - 1) + "\n"
    assert compare(ok) == "same"


# ---------------------------------------------------------------- the lexer

def test_token_order_is_larks():
    lexer = lark_load_grammar._get_parser().lexer
    assert tuple(t.name for t in lexer.terminals) == lark_parse.TOKEN_ORDER
    assert set(lexer.ignore_types) == {"WS", "COMMENT", "BACKSLASH"}
    ours = [n for n, _ in lark_parse._SIGNIFICANT]
    assert ours == [n for n in lark_parse.TOKEN_ORDER if n not in lexer.ignore_types]


def test_terminal_regexes_match_larks():
    """Each of our terminal regexes matches where Lark's matches and the same
    text, except that REGEXP and STRING may match nothing where Lark's
    backtracks (texts we then decline)."""
    alphabet = '/\\"|()[]{}.~?!*+-:,%#\n\r\t \x0caA_z9>ix'
    rng = random.Random(1234)
    ours = {name: rx if isinstance(rx, str) else "%s(?=(%s))\\1%s" % rx
            for name, rx in lark_parse._SIGNIFICANT}
    samples = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(4000)]
    samples += ["/x\\/", '"x\\"', "/a\\\\/", '"\\\\"', "\n  |", "\r\n\n |", "+1", "?a", "!?a", "?!_"]
    for name, pattern in lark_load_grammar.TERMINALS.items():
        if name not in ours:
            continue
        theirs_rx, ours_rx = re.compile(pattern), re.compile(ours[name])
        for s in samples:
            m1, m2 = theirs_rx.match(s), ours_rx.match(s)
            if m2 is None and m1 is not None and name in ("REGEXP", "STRING"):
                continue
            assert (m1 and m1.group()) == (m2 and m2.group()), (name, s)
    ignored = re.compile(lark_parse._IGNORED)
    theirs_ign = re.compile("|".join(f"(?:{lark_load_grammar.TERMINALS[n]})" for n in ("COMMENT", "BACKSLASH", "WS")))
    for s in samples:
        m1, m2 = theirs_ign.match(s), ignored.match(s)
        assert (m1 and m1.group()) == (m2 and m2.group()), s


# ---------------------------------------------------------------- mutations

_MUTATION_CHARS = '/\\"|()[]{}.~?!*+-:,%#\n\r\t aZ_19>i\u00e9'


def _mutate(text, rng):
    lines = text.splitlines(keepends=True)
    op = rng.randrange(7)
    if op == 0 and len(lines) > 1:
        del lines[rng.randrange(len(lines))]
        return "".join(lines)
    if op == 1 and lines:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return "".join(lines)
    if op == 2 and len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return "".join(lines)
    if not text:
        return rng.choice(_MUTATION_CHARS)
    i = rng.randrange(len(text))
    if op == 3:
        return text[:i] + text[i + 1:]
    if op == 4:
        return text[:i] + text[i] + text[i:]
    if op == 5:
        j = min(len(text), i + rng.randint(1, 8))
        return text[:i] + text[j:]
    return text[:i] + rng.choice(_MUTATION_CHARS) + text[i:]


def _mutation_bases():
    """Short texts: the small grammars whole, windows of the large ones."""
    rng = random.Random(99)
    bases = []
    for path in LOCAL_FILES:
        text = _read(path)
        lines = text.splitlines(keepends=True)
        if len(lines) <= 60:
            bases.append(text)
        else:
            for _ in range(6):
                i = rng.randrange(len(lines))
                bases.append("".join(lines[i:i + rng.randint(5, 40)]))
    bases += SAME
    return bases


def _run_mutations(count, seed):
    rng = random.Random(seed)
    bases = _mutation_bases()
    outcomes = {"same": 0, "declined": 0, "both refuse": 0}
    for _ in range(count):
        text = rng.choice(bases)
        for _ in range(rng.randint(1, 3)):
            text = _mutate(text, rng)
        outcomes[compare(text, "mutation")] += 1
    # The comparison must exercise both sides.
    assert outcomes["same"] > count // 10 and outcomes["both refuse"] > count // 10, outcomes
    return outcomes


def test_mutations():
    _run_mutations(int(os.environ.get("CFGMASK_LARK_PARSE_MUTATIONS", "1500")), seed=20240601)


@pytest.mark.slow
def test_mutations_many():
    for seed in range(8):
        _run_mutations(5000, seed=seed)


# ---------------------------------------------------------------- the compiled scanner

def _scans(src):
    """(compiled, regex) tokens of ``src``: kinds, starts, ends, ERR tokens included."""
    return (lark_parse._larklex.scan(src, lark_parse._CODES), lark_parse._lex_regex(src))


# characters whose classes differ between ASCII and Unicode (\s, \d), and each
# token's first characters
_SCAN_CHARS = _MUTATION_CHARS + "\u0661\u00a0\u2028\x0b\x0c\x1c\u0660'0%&=<;^$@`A"
_SCAN_PIECES = ["%import", "%ignore", "%declare", "%override", "%extend", "%impor", "->", "..", "//",
                "#", "/x/i", "/a\\/b/", '"a\\"b"i', "!?a", "?!_", "?a", "!?", "?!", "\\ \n",
                "\r\n |", "\n\u00a0|", "+1", "-12", "\u0661\u0662", "_A", "_a", "_9", "a.1", "~ 2..3"]


@pytest.mark.parametrize("path", LOCAL_FILES, ids=lambda p: os.path.relpath(p, os.path.dirname(ROOT)))
def test_compiled_scanner_equals_the_regex_on_grammars(path):
    text = _read(path) + "\n"
    ours, ref = _scans(text)
    assert ours == ref


def test_compiled_scanner_equals_the_regex_on_random_text():
    rng = random.Random(7)
    bases = _mutation_bases()
    for n in range(4000):
        if n % 2:
            text = "".join(rng.choice(_SCAN_PIECES) if rng.random() < 0.3 else rng.choice(_SCAN_CHARS)
                           for _ in range(rng.randint(0, 40)))
        else:
            text = rng.choice(bases)
            for _ in range(rng.randint(1, 4)):
                text = _mutate(text, rng)
        ours, ref = _scans(text)
        assert ours == ref, text


def test_pure_lex_env_reads_with_the_regex(monkeypatch):
    text = 'start: "a" /b/i -> x\n%ignore " "\n'
    monkeypatch.setenv(lark_parse.PURE_ENV, "1")
    assert lark_parse._lex(text) == lark_parse._lex_regex(text)
    with pytest.raises(Unsupported, match="no token at offset 7"):
        lark_parse._lex("start: \x0b")


# ---------------------------------------------------------------- install()

@pytest.fixture
def restore_parse_grammar():
    saved = lark_load_grammar._parse_grammar
    yield
    lark_load_grammar._parse_grammar = saved


def _load(text, name="json"):
    return lark_load_grammar.load_grammar(text, name, [], False)[0]


def _grammar_parts(g):
    return (g.rule_defs, g.term_defs, g.ignore)


def test_install_same_grammar(restore_parse_grammar):
    text = _read(os.path.join(ROOT, "grammars", "json.lark"))
    original = lark_parse_grammar()
    lark_load_grammar._parse_grammar = original
    before = _grammar_parts(_load(text))
    assert lark_parse.install() is True
    wrapper = lark_load_grammar._parse_grammar
    assert wrapper is not original and wrapper.__wrapped__ is original
    calls = []
    real = lark_parse.parse_grammar_text

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    lark_parse.parse_grammar_text = spy
    try:
        after = _grammar_parts(_load(text))
    finally:
        lark_parse.parse_grammar_text = real
    assert calls, "the wrapper did not use our reader"
    assert repr(after) == repr(before)
    for (n1, p1, t1, o1), (n2, p2, t2, o2) in zip(after[0], before[0]):
        assert (n1, p1, repr(o1)) == (n2, p2, repr(o2))
        assert first_difference(t1, t2) is None
    for (n1, (t1, p1)), (n2, (t2, p2)) in zip(after[1], before[1]):
        assert (n1, p1) == (n2, p2)
        assert first_difference(t1, t2) is None


@pytest.mark.parametrize("text", ["a: (\n", "a: b??", "%import \"a\"\n", "a: b\x0cc\n", "a: /x\\/ c"])
def test_install_keeps_larks_errors(restore_parse_grammar, text):
    original = lark_parse_grammar()
    lark_load_grammar._parse_grammar = original
    with pytest.raises(Exception) as theirs:
        _load(text, "bad")
    lark_parse.install()
    assert lark_load_grammar._parse_grammar is not original
    with pytest.raises(Exception) as ours:
        _load(text, "bad")
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)
    assert ours.value.__context__ is None or not isinstance(ours.value.__context__, Unsupported)


def test_install_idempotent_and_thread_safe(restore_parse_grammar):
    original = lark_parse_grammar()
    lark_load_grammar._parse_grammar = original
    barrier = threading.Barrier(8)
    results = []

    def go():
        barrier.wait()
        results.append(lark_parse.install())

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 8
    wrapper = lark_load_grammar._parse_grammar
    assert wrapper.__wrapped__ is original
    assert lark_parse.install() is True and lark_load_grammar._parse_grammar is wrapper


def test_install_only_for_lark_13(restore_parse_grammar, monkeypatch):
    original = lark_parse_grammar()
    lark_load_grammar._parse_grammar = original
    monkeypatch.setattr(lark, "__version__", "1.2.2")
    assert lark_parse.install() is False
    assert lark_load_grammar._parse_grammar is original


def test_import_does_not_import_lark():
    code = ("import sys; import cfgmask.frontends.lark_parse as m; "
            "assert not any(k == 'lark' or k.startswith('lark.') for k in sys.modules), 'lark imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_results_are_fresh_objects():
    text = 'a: b "c"\n'
    t1, t2 = parse_grammar_text(text), parse_grammar_text(text)
    assert t1 == t2 and t1 is not t2
    assert isinstance(t1.children[0].children[4].children[0].children[0].children[0], NonTerminal)
    assert not isinstance(t1.children[0].children[4].children[0].children[0].children[0], Terminal)
