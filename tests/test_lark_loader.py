"""lark_loader.load (Lark's grammar loader and compile step only) against the reference:
``lark.Lark(text, parser="earley", lexer="dynamic")``, which also builds the Earley parser.

The compiled grammar (terminals with their patterns and flags, rules, %ignore
list) must be identical for every bundled and test grammar, and a grammar
Lark's parser construction refuses must still be refused, with the same kind
of :class:`GrammarError`.
"""

import glob
import os

import pytest

import lark

from cfgmask import Grammar, GrammarError
from cfgmask.frontends import lark_loader
from cfgmask.frontends.lark_frontend import normalise

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRAMMAR_FILES = sorted(glob.glob(os.path.join(ROOT, "grammars", "*.lark"))
                       + glob.glob(os.path.join(ROOT, "tests", "grammars", "*.lark")))


def _lark_lark():
    return os.path.join(os.path.dirname(lark.__file__), "grammars", "lark.lark")


def _rule_key(r):
    o = r.options
    return (r.origin.name, type(r.origin).__name__,
            tuple((type(s).__name__, s.name, s.is_term, getattr(s, "filter_out", None))
                  for s in r.expansion),
            type(r.expansion).__name__, r.alias, r.order,
            None if o is None else (o.keep_all_tokens, o.expand1, o.priority,
                                    o.template_source, o.empty_indices))


def _term_key(t):
    p = t.pattern
    return (t.name, type(p).__name__, p.value, tuple(sorted(p.flags)), p.raw, t.priority,
            p.to_regexp())


def _compiled(x):
    return ([_term_key(t) for t in x.terminals], [_rule_key(r) for r in x.rules],
            list(x.ignore_tokens))


def _reference(text, path, start="start"):
    return lark.Lark(text, start=start, parser="earley", lexer="dynamic",
                     import_paths=[os.path.dirname(path)], source_path=path)


def _text(path):
    """The grammar text; a SQL dialect file is an overlay on sql.lark (cfgmask.frontends.sql_dialects)."""
    name = os.path.basename(path)
    if name.startswith("sql_") and os.path.dirname(path) == os.path.join(ROOT, "grammars"):
        from pathlib import Path
        from cfgmask.frontends.sql_dialects import dialect_text
        return dialect_text(name[4:-5], Path(path).parent)
    return open(path, encoding="utf-8").read()


@pytest.mark.parametrize("path", GRAMMAR_FILES + [_lark_lark()], ids=os.path.basename)
def test_compiled_grammar_identical_to_lark(path):
    text = _text(path)
    start = "start"
    ref = _reference(text, path, start)
    got, used = lark_loader.load(text, start, [os.path.dirname(path)], path)
    assert isinstance(got, lark_loader.LoadedGrammar)
    assert _compiled(got) == _compiled(ref)
    assert got.grammar.term_defs == ref.grammar.term_defs
    # and the normalised cfgmask grammar built from each is the same
    a, b = Grammar(**normalise(got, start, b"", path)), Grammar(**normalise(ref, start, b"", path))
    assert a.terminal_names == b.terminal_names
    assert a.terminal_patterns == b.terminal_patterns
    assert a.terminal_flags == b.terminal_flags
    assert a.nonterminal_names == b.nonterminal_names
    assert a.rules_text() == b.rules_text()
    assert (a.terminal_is_ignore == b.terminal_is_ignore).all()
    assert lark_loader.ungrouped_alternations(got) == lark_loader.ungrouped_alternations(ref)
    assert lark_loader.ungrouped_alternations(got) == lark_loader.ungrouped_alternations(
        got, prune=False)


REFUSED = [
    # zero-width terminals: Lark's Earley frontend refuses them
    ('start: A\nA: /a?/', "lark"),
    ('start: "x" A?\nA: /b*/', "lark"),
    ('start: A\nA: /(?=a)/', "lark"),
    # invalid regexes, named by terminal
    ('start: A\nA: /a(/', "regex syntax"),
    ('start: A\nA: /\\p{L}/', "regex syntax"),
    ('start: "x" /a(/', "regex syntax"),
    ('start: A\nA: /(?<=a+)b/', "regex syntax"),      # re.compile: look-behind not fixed-width
    ('start: A\nA: /' + "(" * 1000 + "a" + ")" * 1000 + '/', "nesting depth"),
    # the start rule missing
    ('other: "a"', None),
]


@pytest.mark.parametrize("text,construct", REFUSED)
def test_refused_as_before(text, construct):
    """The same GrammarError construct as loading through lark.Lark (the old way)."""
    from lark.load_grammar import load_grammar
    loaded, _ = load_grammar(text, "<string>", [], False)
    with pytest.raises(GrammarError) as old:
        lark_loader.load_with_lark_parser(loaded, "start", None)
    with pytest.raises(GrammarError) as new:
        lark_loader.load(text, "start", [], None)
    assert new.value.construct == old.value.construct
    assert str(new.value) == str(old.value)
    if construct is not None:
        assert new.value.construct == construct, str(new.value)


def test_lookbehind_that_lark_accepts_still_loads():
    """A fixed-width look-behind goes through Lark's own check and loads."""
    text = 'start: A B\nA: "a"\nB: /(?<=a)b/'
    got, _ = lark_loader.load(text, "start", [], None)
    ref = lark.Lark(text, parser="earley", lexer="dynamic")
    assert _compiled(got) == _compiled(ref)


def test_from_lark_end_to_end_unchanged(tmp_path, monkeypatch):
    """Grammar.from_lark over the new loader gives the grammar the reference gives."""
    monkeypatch.setenv("CFGMASK_CACHE_DIR", str(tmp_path))
    path = os.path.join(ROOT, "grammars", "json.lark")
    g = Grammar.from_file(path)
    ref = Grammar(**normalise(_reference(open(path, encoding="utf-8").read(), path), "start", b"", path))
    assert g.terminal_patterns == ref.terminal_patterns
    assert g.rules_text() == ref.rules_text()


def test_width_memo_gives_lark_widths():
    """The memoised get_regexp_width Lark's compile uses returns what Lark's own does."""
    import lark.lexer
    import lark.utils
    lark_loader._memoise_lark_widths()
    lark_loader._memoise_lark_widths()  # installed once
    memo = lark.lexer.get_regexp_width
    assert memo._cfgmask_memo and memo.__wrapped__ is lark.utils.get_regexp_width
    for rx in ["a+", "(?:ab|c)", "x?", "(?:a|bb){2,5}", "[0-9]*\\.[0-9]+", "\\p{L}+", "é|ab"]:
        for _ in range(2):   # a miss, then a hit
            assert memo(rx) == lark.utils.get_regexp_width(rx), rx
    for _ in range(2):  # errors are raised every time, not memoised
        with pytest.raises(Exception):
            memo("a(")
    assert "a(" not in lark_loader._WIDTH_MEMO


def test_earley_would_refuse_checks_rules_by_name():
    """The rule checks Lark's Earley construction makes: a start without a rule,
    a nonterminal used but never defined, a rule given twice (the rest of the
    check, the terminals' regexes, is tested through REFUSED above)."""
    from lark.grammar import NonTerminal as N, Rule, Terminal as T
    ok = [Rule(N("start"), [N("a"), T("X")]), Rule(N("a"), [T("X")]), Rule(N("a"), [])]
    refuse = lark_loader._earley_would_refuse
    assert not refuse([], ok, ["start"])
    assert not refuse([], ok, ["start", "a"])
    assert refuse([], ok, ["b"])                                   # no rule for this start
    assert refuse([], ok[:1] + ok[2:] + [Rule(N("a"), [N("c")])], ["start"])   # c undefined
    assert refuse([], ok + [Rule(N("a"), [T("X")])], ["start"])    # the same rule twice
    # a terminal named like a rule does not define it
    assert refuse([], [Rule(N("start"), [N("X")]), Rule(N("a"), [T("X")])], ["start"])


def _random_terminals(rng, n):
    """A grammar of ``n`` terminals built from bar pieces, plain pieces, groups,
    quantifiers and references to earlier terminals, so subtrees are shared."""
    pieces = ['/x|y/', '"z"', '/q/', '"w"', '/(u|v)/', '/m|n/i', '"k"', '/p/', '"r"', '/s/']
    lines = []
    for i in range(n):
        def item(depth):
            r = rng.random()
            if i and r < 0.3:
                return f"T{rng.randrange(i)}"
            if depth < 2 and r < 0.45:
                inner = " ".join(item(depth + 1) for _ in range(rng.randint(1, 3)))
                return f"({inner})" + rng.choice(["", "", "?", "+"])
            return rng.choice(pieces)
        alts = [" ".join(item(0) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 2))]
        lines.append(f"T{i}: " + " | ".join(alts))
    return "start: " + " ".join(f"T{i}" for i in range(n)) + "\n" + "\n".join(lines) + "\n"


def test_ungrouped_alternations_pruned_walk_equals_full_walk():
    """The report walks only the terminals whose trees hold a joined bar piece;
    it must equal the walk of every terminal, in the same order, also where
    terminals share subtrees through references."""
    import random
    rng = random.Random(1633)
    found = loaded = 0
    for _ in range(200):
        text = _random_terminals(rng, rng.randint(2, 6))
        try:
            got, _used = lark_loader.load(text, "start", [], None)
        except GrammarError:   # a zero-width terminal: Lark refuses it
            continue
        loaded += 1
        full = lark_loader.ungrouped_alternations(got, prune=False)
        assert lark_loader.ungrouped_alternations(got) == full, text
        found += bool(full)
    assert loaded > 100 and 20 < found < loaded - 20   # both kinds of grammar were drawn
