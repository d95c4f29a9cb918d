"""Grammar loading: Lark constructs compile, broken grammars fail closed with a named place.

The language each compiled grammar accepts is checked against Lark itself by
feeding documents byte by byte through a byte-level vocabulary.
"""

import os

import lark
import pytest

import cfgmask
from cfgmask import GrammarError

BYTE_VOCAB = cfgmask.Vocabulary([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])


def accepts(grammar, text):
    """cfgmask's verdict on a whole document, fed one byte at a time."""
    m = cfgmask.compile(grammar, BYTE_VOCAB).matcher()
    data = text.encode()
    return m.consume_bytes(data) == len(data) and m.is_accepting()


def lark_accepts(text_grammar, doc, start="start"):
    try:
        lark.Lark(text_grammar, parser="earley", lexer="dynamic", start=start).parse(doc)
        return True
    except lark.exceptions.LarkError:
        return False


TEMPLATES = r"""
start: list{NUMBER} ";" list{WORD}
_separated{x, sep}: x (sep x)*
list{item}: "[" _separated{item, ","} "]"
%import common.NUMBER
%import common.WORD
%import common.WS
%ignore WS
"""

PRIORITIES = r"""
start: (KEYWORD | NAME)+
KEYWORD.2: "if" | "else"
NAME.1: /[a-z]+/
%ignore " "
"""

INLINE_ALIAS_REPEAT = r"""
start: ?pair ("," pair)~1..3
?pair: key "=" _value -> assignment
key: /[a-z]+/
_value: INT | "x"~2
%import common.INT
"""

FLAGS = r"""
start: SELECT WORD
SELECT: "select"i
WORD: /[a-z] + # x flag: spaces and comments ignored
/xi
%ignore " "
"""


@pytest.mark.parametrize("text,docs", [
    (TEMPLATES, ["[1,2.5];[a,b]", "[ 1 ] ; [ xyz ]", "[1];[a,]", "[];[a]", "[1,2][a]"]),
    (PRIORITIES, ["if else foo", "iffy", "", "if  x"]),
    (INLINE_ALIAS_REPEAT.replace("start: ?pair", "start: pair"),
     ["a=1", "a=1,b=xx,c=2", "a=1,b=2,c=3,d=4", "a=x", "a=xx"]),
    (FLAGS, ["SELECT abc", "sElEcT ABC", "select", "selectx y"]),
])
def test_constructs_agree_with_lark(text, docs):
    g = cfgmask.Grammar.from_lark(text)
    for doc in docs:
        assert accepts(g, doc) == lark_accepts(text, doc), doc


def test_import_relative(tmp_path):
    (tmp_path / "base.lark").write_text('NUM: /[0-9]+/\nsum: NUM ("+" NUM)*\n')
    (tmp_path / "main.lark").write_text("%import .base (sum, NUM)\nstart: sum\n")
    g = cfgmask.Grammar.from_file(tmp_path / "main.lark")
    assert accepts(g, "1+22+3")
    assert not accepts(g, "1++2")


def test_normalised_cfg_invariants():
    g = cfgmask.Grammar.from_lark("start: a b\na: \"x\" | \nb: a a | \"y\"\nunused: \"z\"\n")
    assert g.rule_lhs[0] == g.n_terminals  # $start
    assert g.rule_body(0) == [g.n_terminals + 1]
    names = {g.symbol_name(s) for r in range(g.n_rules) for s in g.rule_body(r)}
    assert "unused" not in names and "Z" not in g.terminal_names  # unreachable pruned
    a = g.n_terminals + g.nonterminal_names.index("a")
    b = g.n_terminals + g.nonterminal_names.index("b")
    assert g.nullable[a] and g.nullable[b] and g.nullable[g.n_terminals]
    for r in range(g.n_rules):  # every rule ends with its sentinel
        p = g.rule_rhs_start[r] + len(g.rule_body(r))
        assert g.rhs[p] == -(r + 1)


def test_unproductive_rules_are_pruned():
    g = cfgmask.Grammar.from_lark('start: "a" | loop\nloop: "b" loop\n')
    assert "loop" not in g.nonterminal_names
    assert accepts(g, "a") and not accepts(g, "bb")


def test_ignore_terminals_listed():
    g = cfgmask.Grammar.from_lark('start: "a"+\n%import common.WS\n%ignore WS\n')
    ign = [n for n, i in zip(g.terminal_names, g.terminal_is_ignore) if i]
    assert ign == ["WS"]


@pytest.mark.parametrize("text,needle,construct", [
    ("start: foo\n", "foo", None),                                  # undefined rule
    ("start: A\n%declare A\n", "A", "%declare"),
    ("start: a\na: a \"x\"\n", "start", "unproductive start"),
    ("start: B\nB: /(?<=a)b/\n", "B", "lookbehind"),
    ("start: B\nB: /(a)\\1/\n", "B", "backreference"),
    ("start: B\nB: /(?!ab)[a-z]+/\n", "B", None),                    # multi-character lookahead
    ("start: B\nB: /a{1,100000}/\n", "B", "automaton size"),
    ("start: B\nB: /a*/\n", "B", None),                              # empty terminal (lark refuses too)
    ("start: \"a\" \"b\"\nstart: \"c\"\n", "start", None),           # lark: rule defined twice
])
def test_grammar_errors_name_the_place(text, needle, construct):
    with pytest.raises(GrammarError) as ei:
        g = cfgmask.Grammar.from_lark(text)
        cfgmask.compile(g, BYTE_VOCAB)
    assert needle in str(ei.value)
    if construct is not None:
        assert ei.value.construct == construct


def test_builtin_names():
    with pytest.raises(cfgmask.ConfigurationError):
        cfgmask.Grammar.builtin("cobol")
    g = cfgmask.Grammar.builtin("json")
    assert accepts(g, '{"a": [1, 2.5e3, true, null, "x"]}')


def test_word_boundary_pragma():
    text = ('// %cfgmask word_boundary [A-Za-z0-9_]\n'
            'start: "select" NAME\nNAME: /[a-z]+/\n%ignore " "\n')
    g = cfgmask.Grammar.from_lark(text)
    assert g.word_boundary == bytes(sorted(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"))
    assert accepts(g, "select x")
    assert not accepts(g, "selectx")
    g2 = cfgmask.Grammar.from_lark(text, word_boundary="")
    assert accepts(g2, "selectx")  # plain greedy lexing splits it


def _byte_matcher(grammar):
    vocab = cfgmask.Vocabulary([bytes([i]) for i in range(128)] + [None], eos_token_ids=[128])
    return cfgmask.compile(grammar, vocab).matcher()


def test_not_before_pragma():
    # "-" may not end before "-": "a--b" cannot be read as "a - -b" (JavaScript's
    # tokenizer takes "--"), while "a - -b" and "a-b" still can.
    text = ('// %cfgmask not_before [-] MINUS\n'
            'start: NAME (op NAME)*\nop: MINUS | MINUS MINUS | "+"\nNAME: /[a-z]+/\nMINUS: "-"\n%ignore " "\n')
    g = cfgmask.Grammar.from_lark(text)
    for doc, ok in ((b"a - -b", True), (b"a-b", True), (b"a--b", False), (b"a- -b", True)):
        m = _byte_matcher(g)
        assert (m.consume_bytes(doc) == len(doc) and m.is_accepting()) == ok, doc
    # without the pragma Lark's language is unchanged: the contextual lexer splits "--"
    m = _byte_matcher(cfgmask.Grammar.from_lark(text.split("\n", 1)[1]))
    assert m.consume_bytes(b"a--b") == 4 and m.is_accepting()


def test_at_start_pragma():
    # a hashbang only as the first lexeme: not after white space or a comment, while
    # "#" still starts other lexemes there; the grammar cache keeps the flag
    text = ('// %cfgmask at_start HB\nstart: HB? (NAME | PRIV)*\nHB: /#![^\\n]*/\n'
            'PRIV: /#[a-z]+/\nNAME: /[a-z]+/\n%ignore /[ \\n]+/\n%ignore /\\/\\*[^*]*\\*\\//\n')
    for _ in range(2):
        g = cfgmask.Grammar.from_lark(text)
        assert list(g.terminal_at_start) == [n == "HB" for n in g.terminal_names]
        for doc, ok in ((b"#!x\na", True), (b" #!x\na", False), (b"/**/#!x", False), (b"#a #b", True),
                        (b"\n#a", True), (b"#!x\n#a", True), (b"#!x\n#!y", False)):
            m = _byte_matcher(g)
            assert (m.consume_bytes(doc) == len(doc) and m.is_accepting()) == ok, doc
    # without the pragma Lark's language: ignored text before the hashbang is fine
    m = _byte_matcher(cfgmask.Grammar.from_lark(text.split("\n", 1)[1]))
    assert m.consume_bytes(b" #!x") == 4 and m.is_accepting()


@pytest.mark.parametrize("pragma,where", [
    ("// %cfgmask not_before [-] NOPE", "NOPE"),
    ("// %cfgmask not_before [- MINUS", "not_before"),
    ("// %cfgmask at_start NOPE", "NOPE"),
    ("// %cfgmask at_start WS", "WS"),          # %ignore'd: may go anywhere
])
def test_pragma_errors(pragma, where):
    with pytest.raises(cfgmask.GrammarError) as e:
        cfgmask.Grammar.from_lark(pragma + '\nstart: MINUS\nMINUS: "-"\nWS: " "\n%ignore WS\n')
    assert where in str(e.value)


def test_lark_grammar_of_lark_compiles():
    """Lark's own grammar: single-character lookahead (OP, REGEXP) and the
    ESCAPED_STRING idiom compile exactly."""
    path = os.path.join(os.path.dirname(lark.__file__), "grammars", "lark.lark")
    g = cfgmask.Grammar.from_file(path)
    c = cfgmask.compile(g, BYTE_VOCAB)
    m = c.matcher()
    doc = b'start: a "x"i b?\na:/[0-9]+/ -> num\n%import common.WS\n%ignore WS\n'
    assert m.consume_bytes(doc) == len(doc)
    assert m.is_accepting()
    # "b?a": OP "?" may not end before "a", so the lexeme goes on as RULE "?a" (as in Lark)
    m = c.matcher()
    assert m.consume_bytes(b"start: b?a\n") == len(b"start: b?a\n") and m.is_accepting()


def test_greedy_lexing_differs_from_lark_backtracking():
    """Documented limit (docs/architecture.md, "Semantics"): lexemes grow while *some* allowed terminal
    can continue, with one byte of look-ahead and no backtracking.  In
    lark.lark, COMMENT starts with ``\\s*``, so the blank before ``/x/`` is
    read as the start of a comment and ``a: /x/`` is refused, while Lark's
    lexers backtrack to the whitespace terminal and accept it."""
    path = os.path.join(os.path.dirname(lark.__file__), "grammars", "lark.lark")
    g = cfgmask.Grammar.from_file(path)
    m = cfgmask.compile(g, BYTE_VOCAB).matcher()
    assert m.consume_bytes(b"a: /x/\n") == len(b"a: /")
    assert lark_accepts(open(path).read(), "a: /x/\n")


UNGROUPED = [
    ('start: A\nA: /x|y/ "z"\n', True),          # Lark: x|yz
    ('start: A\nT: /x|y/\nA: T "z"\n', True),    # through a terminal reference
    ('start: A\nA: (/x|y/) "z"\n', True),        # Lark's parentheses do not group it either
    ('start: A\nA: "z" /x|y/?\n', False),        # a quantified piece is grouped
    ('start: A\nA: /(x|y)/ "z"\n', False),
    ('start: A\nA: /x|y/i "z"\n', False),        # flags wrap it in (?i:...)
    ('start: A\nA: /[|]/ "z"\n', False),
    ('start: A\nA: /[]|]/ "z"\n', False),
    ('start: A\nA: /\\|/ "z"\n', False),
    ('start: A\nA: /x|y/\n', False),             # alone: nothing is joined to it
]


@pytest.mark.parametrize("text,warns", UNGROUPED)
def test_ungrouped_alternation_in_a_terminal_warns(text, warns, tmp_path, monkeypatch):
    """Lark joins ``/x|y/ "z"`` into ``x|yz`` (lark-parser/lark#1633); cfgmask
    reads it the same way, and says so, also when the grammar comes from the
    disk cache; the mask is Lark's language."""
    import warnings
    monkeypatch.setenv("CFGMASK_CACHE_DIR", str(tmp_path))
    for _ in range(2):   # fresh, then from the disk cache
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            g = cfgmask.Grammar.from_lark(text)
        found = [w.message for w in caught if isinstance(w.message, cfgmask.GrammarWarning)]
        assert bool(found) is warns, [str(w) for w in found]
        if warns:
            assert found[0].where == "A" and "(?:x|y)" in str(found[0])
    if warns:
        for doc in ("x", "yz", "xz", "y"):
            assert accepts(g, doc) == lark_accepts(text, doc), doc
        assert accepts(g, "x") and not accepts(g, "xz")


@pytest.mark.parametrize("name,dialect", [("json", None), ("javascript", None), ("sql", "sqlite"),
                                          ("sql", "postgres"), ("sql", "mysql")])
def test_bundled_grammars_load_without_warnings(name, dialect, tmp_path, monkeypatch):
    import warnings
    monkeypatch.setenv("CFGMASK_CACHE_DIR", str(tmp_path))   # a fresh load, not the cache
    with warnings.catch_warnings():
        warnings.simplefilter("error", cfgmask.GrammarWarning)
        cfgmask.Grammar.from_lark(cfgmask.Grammar.builtin_text(name, dialect))
