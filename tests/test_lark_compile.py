"""cfgmask.frontends.lark_compile.compile_grammar against Lark 1.3's own ``Grammar.compile``.

Every grammar is loaded twice with ``lark.load_grammar.load_grammar``; Lark
compiles one copy, ``compile_grammar`` the other, and the results must be
identical field by field (terminal names, pattern classes, values, flags, raw
text, priorities, in order; rules with every symbol's name, kind and
``filter_out``, alias, order and options, in order; the ignore list).  Where
Lark's compile raises, ``compile_grammar`` must raise too (``Unsupported``,
after which the caller runs Lark's compile, or the same exception type).

Corpus: the bundled grammars, the test grammars, Lark's own lark.lark and
python.lark, third-party grammars from bare git mirrors (when present; the
directory comes from CFGMASK_MIRROR_DIR, default /work/.mirror), and a few
hundred seeded random grammars.
"""

import glob
import json
import os
import random
import subprocess
import sys

import pytest

import lark
from lark.load_grammar import load_grammar
from lark.tree import Tree

from cfgmask.frontends.lark_compile import Unsupported, compile_grammar
from tests.test_lark_loader import _rule_key, _term_key, _text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRAMMAR_FILES = sorted(glob.glob(os.path.join(ROOT, "grammars", "*.lark"))
                       + glob.glob(os.path.join(ROOT, "tests", "grammars", "*.lark")))
LARK_GRAMMARS = os.path.join(os.path.dirname(lark.__file__), "grammars")
MIRROR_DIR = os.environ.get("CFGMASK_MIRROR_DIR", "/work/.mirror")
COLDSTART = os.path.join(ROOT, "benchmarks", "coldstart_grammars.json")
RANDOM_GRAMMARS = int(os.environ.get("CFGMASK_RANDOM_GRAMMARS", "300"))


# ----------------------------------------------------------------- comparison
def _key(result):
    terminals, rules, ignore = result
    return [_term_key(t) for t in terminals], [_rule_key(r) for r in rules], list(ignore)


def _load(text, path, import_paths):
    grammar, _ = load_grammar(text, path, list(import_paths), False)
    return grammar


def _compare(text, path, start, import_paths=(), allow_fallback=False, seen=None):
    """'same', 'refused' (both raise) or 'fallback' (ours Unsupported, Lark's fine).

    ``seen`` (a set) collects the features the compiled grammar shows."""
    starts = [start] if isinstance(start, str) else list(start)
    ref_grammar = _load(text, path, import_paths)
    our_grammar = _load(text, path, import_paths)
    try:
        expected = _key(ref_grammar.compile(starts, set()))
    except Exception as e:  # noqa: BLE001 - whatever Lark raises, ours must raise too
        with pytest.raises((Unsupported, type(e))):
            compile_grammar(our_grammar, starts, set())
        return "refused"
    try:
        got = compile_grammar(our_grammar, starts, set())
    except Unsupported:
        if allow_fallback:
            return "fallback"
        raise
    got = _key(got)
    if seen is not None:
        seen.update(_features(got))
    if got != expected:
        for part, (a, b) in zip(("terminals", "rules", "ignore"), zip(expected, got)):
            if a != b:
                first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                pytest.fail("%s: %s differ (lark %d, ours %d) at #%d:\n  lark %r\n  ours %r" % (
                    path, part, len(a), len(b), first,
                    a[first] if first < len(a) else None, b[first] if first < len(b) else None))
    return "same"


def _features(key):
    terminals, rules, _ignore = key
    out = set()
    for name in (t[0] for t in terminals):
        out.add("anon" if name.startswith("__ANON_") else "named-literal" if name.isupper() else "")
    for origin, _t, symbols, _l, alias, _order, options in rules:
        for kind in ("_plus_", "_star_", "_repeat_a", "_opt_", "{"):
            if kind in origin:
                out.add(kind)
        out.add("alias" if alias else "")
        keep_all, expand1, priority, template_source, empty_indices = options
        out.update(["keep_all" if keep_all else "", "expand1" if expand1 else "",
                    "priority" if priority else "", "template" if template_source else "",
                    "empty_indices" if empty_indices else ""])
        out.update("kept-token" if s[2] and not s[3] and s[1].isupper() and "ANON" not in s[1]
                   and not keep_all else "" for s in symbols)
    return out


# --------------------------------------------------------------------- corpus
@pytest.mark.parametrize("path", GRAMMAR_FILES, ids=os.path.basename)
def test_project_grammars(path):
    assert _compare(_text(path), path, "start", [os.path.dirname(path)]) == "same"


@pytest.mark.parametrize("name,start", [("lark.lark", "start"), ("python.lark", "file_input")])
def test_lark_own_grammars(name, start):
    path = os.path.join(LARK_GRAMMARS, name)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert _compare(text, path, start, [LARK_GRAMMARS]) == "same"


def _mirror(repo):
    git_dir = os.path.join(MIRROR_DIR, repo.replace("/", "+"), "repo")
    if not os.path.isdir(git_dir):
        pytest.skip("no git mirror of %s at %s (set CFGMASK_MIRROR_DIR)" % (repo, git_dir))
    return git_dir


def _git_show(git_dir, commit, path):
    return subprocess.run(["git", "--git-dir", git_dir, "show", "%s:%s" % (commit, path)],
                          check=True, capture_output=True, text=True).stdout


def _coldstart():
    with open(COLDSTART, encoding="utf-8") as f:
        return json.load(f)["grammars"]


@pytest.mark.parametrize("entry", _coldstart(), ids=lambda e: e["name"])
def test_mirror_grammars(entry, tmp_path):
    git_dir = _mirror(entry["repo"])
    text = _git_show(git_dir, entry["commit"], entry["path"])
    path = str(tmp_path / os.path.basename(entry["path"]))
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    assert _compare(text, path, entry["start"], [str(tmp_path)]) == "same"


def test_lark_examples(tmp_path):
    """Every .lark under examples/ of the lark mirror that load_grammar loads (relative
    imports resolve in a checkout of examples/ written to tmp_path)."""
    entry = next(e for e in _coldstart() if e["repo"] == "lark-parser/lark")
    git_dir = _mirror(entry["repo"])
    names = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only",
                            entry["commit"], "examples"],
                           check=True, capture_output=True, text=True).stdout.split()
    names = [n for n in names if n.endswith(".lark")]
    assert names
    for name in names:
        out = tmp_path / name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(_git_show(git_dir, entry["commit"], name), encoding="utf-8")
    outcomes = {}
    for name in names:
        path = str(tmp_path / name)
        text = (tmp_path / name).read_text(encoding="utf-8")
        try:
            _load(text, path, [os.path.dirname(path)])
        except Exception:  # noqa: BLE001 - not loadable on its own (e.g. needs a parser option)
            outcomes[name] = "unloadable"
            continue
        outcomes[name] = _compare(text, path, "start", [os.path.dirname(path)])
    assert sum(v == "same" for v in outcomes.values()) >= 5, outcomes


# ----------------------------------------------------------- random grammars
_LITERALS = ['"if"', '"else"', '"("', '")"', '"+"', '","', '"a"', '"x"i', '"If"i', '"\\n"',
             '"\\"q\\""', '"it\'s"', '"\\\\"', '"\\x41"', '"name"', '"NAME"', '"_"', '"é"',
             '"->"', '"-"', '"\\t"', '"num"']
_REGEXES = ['/[0-9]+/', '/a|b/i', '/[a-z_]\\w*/', '/\\d+(\\.\\d+)?/', '/"[^"]*"/', '/x+/s',
            '/[\\n]/x', '/z/']
_TERM_DEFS = [
    'NAME: /[a-z_][a-z0-9_]*/',
    'NUM.2: /[0-9]+/ | "0x" HEX',
    'HEX: /[0-9a-f]+/i',
    'KW_IF: "if"',
    'LETTER: "a".."f"',
    'WORDS: ("x" | "yy")+ "z"?',
    'REP: "q"~2..3 | "r"~2',
    '_SEP: ","',
    'STR: "\\"" /[^"]*/ "\\""',
    'PLUS: "+"',
    'OPT: ["-"] DIGITS',
    'DIGITS: /\\d/+',
    'BIG: ("ab" | /c+/) ("d" | "ee" | /f?/)',
    'NEG.-1: "neg"i',
]
_TEMPLATES = [
    ("sep", 2, "sep{x, s}: x (s x)*"),
    ("pair", 2, "pair{a, b}: a b | b [a]"),
    ("kt", 1, '!kt{x}: x "k" x?'),
    ("_opt", 1, "_opt{x}: x? x"),
    ("wrap", 1, 'wrap{x}: "(" sep{x, ","} ")"'),
    ("twice", 1, "twice{x}: x~2 | x~1..3"),
]


class _Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.rules = []
        self.terms = []
        self.templates = []

    def atom(self, depth):
        r = self.r
        k = r.random()
        if k < 0.25 and self.rules:
            return r.choice(self.rules)
        if k < 0.40 and self.terms:
            return r.choice(self.terms)
        if k < 0.60:
            return r.choice(_LITERALS)
        if k < 0.67:
            return r.choice(_REGEXES)
        if k < 0.70:
            return r.choice(['"a".."c"', '"0".."9"'])
        if k < 0.78 and self.templates:
            name, arity, _ = r.choice(self.templates)
            return "%s{%s}" % (name, ", ".join(self.simple_value() for _ in range(arity)))
        if depth < 2 and k < 0.93:
            return "(" + self.alternatives(depth + 1, top=False) + ")"
        if depth < 2:
            return "[" + self.alternatives(depth + 1, top=False) + "]"
        return r.choice(_LITERALS)

    def simple_value(self):
        r = self.r
        k = r.random()
        if k < 0.4 and self.rules:
            return r.choice(self.rules)
        if k < 0.6 and self.terms:
            return r.choice(self.terms)
        if k < 0.7 and self.templates:
            name, arity, _ = r.choice(self.templates)
            return "%s{%s}" % (name, ", ".join(r.choice(_LITERALS) for _ in range(arity)))
        return r.choice(_LITERALS + _REGEXES[:3])

    def expr(self, depth):
        r = self.r
        a = self.atom(depth)
        k = r.random()
        if k < 0.55 or a.startswith("["):
            return a
        if k < 0.62:
            return a + "?"
        if k < 0.75:
            return a + "*"
        if k < 0.85:
            return a + "+"
        if a.startswith("("):
            return a       # a repeated group multiplies out too fast
        if k < 0.90:
            return a + " ~ %d" % r.randint(0, 3)
        if k < 0.97:
            if r.random() < 0.03:
                return a + " ~ 3..1"      # refused
            return a + " ~ %d..%d" % r.choice([(0, 2), (1, 3), (2, 2)])
        return a + " ~ %d..%d" % r.choice([(0, 50), (3, 57), (50, 50), (2, 120), (60, 61)])

    def sequence(self, depth):
        n = self.r.choice([1, 1, 2, 2, 3]) if depth else self.r.choice([0, 1, 1, 2, 2, 3, 4])
        return " ".join(self.expr(depth) for _ in range(n))

    def alternatives(self, depth, top, alias_ok=False):
        r = self.r
        alts = []
        for _ in range(r.choice([1, 1, 2, 3])):
            seq = self.sequence(depth)
            if top and alias_ok and seq and r.random() < 0.25:
                seq += " -> al%d" % r.randint(0, 3)
            alts.append(seq)
        if depth and not any(alts):
            alts[0] = r.choice(_LITERALS)
        return " | ".join(alts)

    def grammar(self):
        r = self.r
        lines = []
        if r.random() < 0.5:
            lines.append("%import common.WS")
            lines.append("%ignore WS")
            self.terms.append("WS")
        if r.random() < 0.4:
            lines.append("%import common (INT, CNAME)")
            self.terms += ["INT", "CNAME"]
        if r.random() < 0.3:
            lines.append("%declare DECL")
            self.terms.append("DECL")
        for d in r.sample(_TERM_DEFS, r.randint(0, 5)):
            needed = {"NUM.2": "HEX", "OPT": "DIGITS"}.get(d.split(":")[0])
            if needed and not any(t.startswith(needed + ":") for t in lines):
                lines.append(next(t for t in _TERM_DEFS if t.startswith(needed + ":")))
                self.terms.append(needed)
            lines.append(d)
            self.terms.append(d.split(":")[0].split(".")[0])
        if r.random() < 0.3 and "LETTER" in self.terms:
            lines.append("%ignore LETTER")
        if r.random() < 0.2:
            lines.append('%ignore "#" /[^\\n]*/')
        for name, arity, text in _TEMPLATES:
            if r.random() < 0.4:
                if name == "wrap" and "sep" not in [t[0] for t in self.templates]:
                    continue
                self.templates.append((name, arity, text))
                lines.append(text)
        n_rules = r.randint(1, 6)
        names = ["start"] + ["r%d" % i for i in range(1, n_rules)]
        specs = []
        for i, name in enumerate(names):
            if i and r.random() < 0.25:
                name = "_" + name
            mod = r.choice(["", "", "", "?", "!", "!?"]) if not name.startswith("_") else \
                r.choice(["", "", "!"])
            prio = r.choice(["", "", "", ".2", ".-1"])
            specs.append((mod, name, prio))
        self.rules = [s[1] for s in specs]
        for mod, name, prio in specs:
            body = self.alternatives(0, top=True,
                                     alias_ok=not name.startswith("_") or r.random() < 0.05)
            lines.append("%s%s%s: %s" % (mod, name, prio, body))
        if r.random() < 0.1:
            lines.append("%extend start: " + self.alternatives(0, top=True, alias_ok=True))
        return "\n".join(lines) + "\n"


def test_random_grammars(tmp_path):
    outcomes = {"same": 0, "refused": 0, "fallback": 0, "unloadable": 0}
    fallbacks = []
    seen = set()
    path = str(tmp_path / "random.lark")
    for seed in range(RANDOM_GRAMMARS):
        text = _Gen(seed).grammar()
        try:
            _load(text, path, [])
        except Exception:  # noqa: BLE001 - the generator made something load_grammar refuses
            outcomes["unloadable"] += 1
            continue
        got = _compare(text, "%s (seed %d)\n%s" % (path, seed, text), "start", [],
                       allow_fallback=True, seen=seen)
        outcomes[got] += 1
        if got == "fallback":
            fallbacks.append(seed)
    print(outcomes)
    # the generator mostly makes grammars Lark compiles, and they are compiled here, not handed back
    assert outcomes["same"] >= RANDOM_GRAMMARS // 2, outcomes
    assert outcomes["refused"] >= 1, outcomes
    assert not fallbacks, "fell back to Lark for seeds %s" % fallbacks[:20]
    if RANDOM_GRAMMARS >= 300:
        wanted = {"anon", "named-literal", "_plus_", "_star_", "_repeat_a", "_opt_", "{", "alias",
                  "keep_all", "expand1", "priority", "template", "empty_indices"}
        assert wanted <= seen, wanted - seen


# Corner cases of Lark's compile, each compared as above (same result, or both refuse)
_CORNERS = {
    "higher-order-template": 'start: app{wrap, "a"} app{wrap, B}\napp{f, x}: f{x} x\n'
                             'wrap{y}: "(" y ")"\nB: "b"\n',
    "shared-template-arg": '!start: t{"a"} t{"a"} u{"a"}\nt{x}: x u{x} [x]\n!u{x}: x x?\n'
                           'other: t{"a"} u{"b"}\n',
    "plus-shared-between-keep-and-not": '!start: "a"+ b\nb: "a"+ ["a"] _c\n_c: "a"* "x"\n',
    "extend-with-alias": 'start: a\na: "x" -> ax\n%extend a: "y" -> ay | "z"\n',
    "keyword-equals-terminal": 'start: "if" IF2 "else" "if"i NAME "name"\nIF2: "if"\nIF: "iff"\n'
                               'NAME: /[a-z]+/\nELSE: "else"\nELSE2: "else"\n',
    "declared-keyword": 'start: "if" IF\n%declare IF\n',
    "repeats": 'start: "a"~0 "b"~0..60 "c"~70 ("d"|"e")~55 f~2..3 f~50..50\nf: "f" | "g"\n',
    "negative-repeat": 'start: "a" ~ -1 "b"\n',
    "negative-repeat-terminal": 'start: A\nA: "a" ~ -1 "b"\n',
    "maybe-keep-all": '!start: [A] [_B] [a] [_a] b\nb: [A] [_B] [a] [_a] "x"\na: "a"\n_a: "b"\n'
                      'A: "A"\n_B: "B"\n',
    "empty-duplicate": 'start: [a] | "z" | -> e\na: "a"\n',
    "empty-duplicate-alias": 'start: a\na: -> p | -> q\n',
    # alternatives equal symbol for symbol (Symbol.__eq__: kind and name) are one
    "duplicate-alternatives": 'start: ("a" | "a" | b | B) "c" | "a" "c" | b "c" -> x | (b | b) "d"\n'
                              'b: "b"\nB: "b"\n',
    "unused-rules": 'start: "s"\nu1: u2 "x"\nu2: u1 | "y"\nchain: link\nlink: "l"\nself: self "s"\n',
    "anon-order": 'start: /a/ (/b/ (/c/ | /d/)) /e/ [/f/] "g" ("h" | ("i"))\n',
    "carriage-return": 'start: "a\rb" A\nA: "c\rd"\n',
    "escapes": 'start: "\\\\" "\\"" "\\x41\\u00e9" /\\// /\\\\"/ "\\N" "\'" "\\\'"\n',
    "terminal-flags": 'start: A B C\nA: "a"i "b"\nB: ("x"i | /y/s)+\nC: "c"i? /d/x ~ 2..3\n',
    "terminal-references": 'start: A\nA: B B C\nB: C "b"\nC: ("c" | "cc" | /c+/)\n',
    "range-in-rule": 'start: "a".."z" "0".."9" "a".."z"\n',
    "inline-and-expand1": '?start: _x | y\n_x: "x" y?\ny: "y" | "yy" -> yy\n',
    "ignore-terminal": 'start: "a"\n%ignore " "\n%ignore /\\t/\n%import common.WS\n%ignore WS\n',
    "priorities": 'start.3: A "a"\nA.2: "a"\nB.-2: "b"\n',
}


@pytest.mark.parametrize("name", sorted(_CORNERS))
def test_corner_cases(name):
    assert _compare(_CORNERS[name], "<string>", "start", []) in ("same", "refused")


# ---------------------------------------------------------------- properties
def _fingerprint(grammar):
    """Everything compile could change in a loaded Grammar, symbols with filter_out."""
    def walk(x):
        if isinstance(x, Tree):
            return (x.data, tuple(walk(c) for c in x.children))
        if isinstance(x, lark.grammar.Symbol):
            return (type(x).__name__, x.name, getattr(x, "filter_out", None))
        if isinstance(x, lark.lexer.Token):
            return ("Token", x.type, str(x))
        return repr(x)

    def opts(o):
        return None if o is None else (o.keep_all_tokens, o.expand1, o.priority,
                                       o.template_source, o.empty_indices)
    return ([(n, tuple(p), walk(t) if t is not None else None, opts(o))
             for n, p, t, o in grammar.rule_defs],
            [(n, walk(t) if t is not None else None, p) for n, (t, p) in grammar.term_defs],
            list(grammar.ignore))


_KEEP_ALL = """
!start: t{"a"} _SEP b~2 sep{B, ","}
t{x}: x u{x} [x]
!u{x}: x _SEP?
b: B+ | [B] "c"
sep{x, s}: x (s x)*
B: "b"
_SEP: ";"
"""


@pytest.mark.parametrize("text", [_KEEP_ALL, None], ids=["keep_all", "javascript"])
def test_input_grammar_unchanged(text):
    if text is None:
        path = os.path.join(ROOT, "grammars", "javascript.lark")
        text = _text(path)
    grammar = _load(text, "<string>", [])
    before = _fingerprint(grammar)
    first = _key(compile_grammar(grammar, ["start"], set()))
    assert _fingerprint(grammar) == before
    second = _key(compile_grammar(grammar, ["start"], set()))
    assert first == second
    assert _fingerprint(grammar) == before
    # and it is Lark's result on a fresh copy
    assert first == _key(_load(text, "<string>", []).compile(["start"], set()))


@pytest.mark.parametrize("text", [
    'start: "a" -> p | "a" -> q\n',             # rules defined twice
    'start: _r\n_r: "a" -> x\n',                # alias on an inlined rule
    'start: "a"~3..1\n',                        # bad range
    'start: A\nA: "b"~3..1\n',                  # bad range in a terminal
    'start: A\nA: "a" -> b\n',                  # alias in a terminal
    'start: A\nA:\n',                           # empty terminal
    'start: "\\x4"\n',                          # bad escape
    'start: ("a" -> b) "c"\nb: "q"\n',         # alias inside a group
])
def test_refused_grammars_raise(text):
    grammar = _load(text, "<string>", [])
    with pytest.raises(Exception) as lark_error:
        _load(text, "<string>", []).compile(["start"], set())
    with pytest.raises((Unsupported, lark_error.type)):
        compile_grammar(grammar, ["start"], set())


def test_other_lark_version_is_unsupported(monkeypatch):
    grammar = _load('start: "a"\n', "<string>", [])
    monkeypatch.setattr(lark, "__version__", "1.4.0")
    with pytest.raises(Unsupported):
        compile_grammar(grammar, ["start"], set())


def test_terminals_to_keep_and_several_starts():
    text = 'start: "a" b\nb: B\nother: C "z"\nB: "b"\nC: "c"\nD: "d"\n%ignore " "\n'
    for keep in (set(), {"D"}, "*"):
        for starts in (["start"], ["start", "other"]):
            expected = _key(_load(text, "<string>", []).compile(starts, keep))
            assert _key(compile_grammar(_load(text, "<string>", []), starts, keep)) == expected


def test_import_does_not_load_lark():
    code = "import sys, cfgmask.frontends.lark_compile; print('lark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         check=True).stdout.strip()
    assert out == "False"


def test_unescape_is_larks_eval_escaping():
    """A literal's text as Lark's ``eval_escaping`` reads it, on seeded random
    bodies heavy in backslashes, quotes and escape letters: the same string,
    or ``Unsupported`` exactly where Lark raises."""
    from lark.load_grammar import eval_escaping
    from cfgmask.frontends.lark_compile import _unescape
    rng = random.Random(23)
    pieces = list("ab\\\\\\\"'xuUnftrN0{}\té") + ["\\x4", "\\x41", "\\u00e9", "\\U0001F600",
                                                  "\\N{DASH}", "'''", "\\\\\\"]
    raised = 0
    for _ in range(5000):
        body = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        try:
            want = eval_escaping(body)
        except Exception:  # noqa: BLE001 - Lark's GrammarError, or what literal_eval raised
            raised += 1
            with pytest.raises(Unsupported):
                _unescape(body)
            continue
        assert _unescape(body) == want, body
    assert 500 < raised < 4500      # both sides of the comparison were exercised
