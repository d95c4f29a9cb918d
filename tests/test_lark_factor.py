"""lark_loader.factor_products: big products split into rules of their own, language unchanged.

The oracle is Lark's own compile of the same text (``lark.Lark(text,
parser="earley", lexer="dynamic")``, products multiplied out): the grammar
cfgmask loads with factoring must give the same masks at every step of random
token walks on a small vocabulary, and the same verdict on whole documents,
as the grammar built from Lark's rules.  Factoring must leave every bundled
and test grammar exactly as Lark compiles it (tests/test_lark_loader.py
compares those with Lark; here: not one rule definition replaced).
"""

import os
import random

import lark
import numpy as np
import pytest

import cfgmask
from cfgmask import Grammar, GrammarError
from cfgmask.frontends import lark_loader
from cfgmask.frontends.lark_frontend import normalise
from tests.test_lark_loader import GRAMMAR_FILES
from tests.test_lark_loader import _text as grammar_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# a CREATE TRIGGER-like rule with nine optional clauses (2 * 2 * 3 * 4 * ... alternatives
# multiplied out), a short repeat of a group, nested optional groups, an alias and a
# keep-all-tokens rule, so that each kind of part is factored
PRODUCTS = r"""
start: stmt (";" stmt)*
stmt: "create" ["temp"] "trigger" ["if" "not" "exists"] NAME ["before" | "after" | "instead" "of"] event "on" NAME ["for" "each" "row"] ["when" NAME] "begin" NAME? "end"  -> trigger
    | "pick" ("a" | "b" | "c") ~ 5
    | "mix" (("x" "y"?) | "z")? ("p"? "q"?)? "r"? "s"? "t"? "u"* "v"?
    | keep
event: "delete" | "insert" | "update" ["of" NAME ("," NAME)*]
!keep: "k" "1"? "2"? "3"? "4"? "5"? "6"? "7"?
NAME: /[a-z]+/
%ignore " "
"""

WORDS = ["create", "temp", "trigger", "if", "not", "exists", "before", "after", "instead",
         "of", "delete", "insert", "update", "on", "for", "each", "row", "when", "begin",
         "end", "pick", "mix", "k", "ab", "xy", "zz"]


def _lark_rules_grammar(text):
    """The grammar made from Lark's own rules (no factoring)."""
    ref = lark.Lark(text, parser="earley", lexer="dynamic")
    return Grammar(**normalise(ref, "start", b"", None))


def _vocab():
    tokens = [bytes([b]) for b in range(256)]
    tokens += [w.encode() for w in WORDS] + [(" " + w).encode() for w in WORDS] + [b"; ", b", "]
    eos = len(tokens)
    tokens.append(None)
    return cfgmask.Vocabulary(tokens, eos_token_ids=[eos], vocab_size=len(tokens)), eos


@pytest.fixture(scope="module")
def grammars(tmp_path_factory):
    os.environ.setdefault("CFGMASK_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    factored = Grammar.from_lark(PRODUCTS)
    return factored, _lark_rules_grammar(PRODUCTS)


def test_products_are_factored(grammars):
    factored, plain = grammars
    # Lark writes out thousands of alternatives for stmt; factored, each rule has a few
    assert "__stmt_factor_" in factored.rules_text()
    assert "__keep_factor_" in factored.rules_text()
    assert factored.rules_text().count("\n") * 10 < plain.rules_text().count("\n")


def test_factored_masks_equal_lark_rules(grammars):
    """Random token walks: the same allowed tokens, EOS included, at every step."""
    vocab, eos = _vocab()
    a, b = (cfgmask.compile(g, vocab) for g in grammars)
    rng = random.Random(20261205)
    steps = finished = 0
    for _walk in range(60):
        ma, mb = a.matcher(), b.matcher()
        for _step in range(40):
            got, want = ma.allowed_tokens(), mb.allowed_tokens()
            assert np.array_equal(got, want), (ma.prefix if hasattr(ma, "prefix") else None)
            steps += 1
            allowed = got.tolist()
            t = rng.choice(allowed)
            if t == eos:
                finished += 1
                break
            ma.consume(t)
            mb.consume(t)
    assert steps > 1000 and finished > 5


def test_factored_documents_parse_as_lark_says(grammars):
    """Whole documents (some valid, some one word off): cfgmask's verdict is Lark's."""
    factored, _plain = grammars
    vocab, _eos = _vocab()
    c = cfgmask.compile(factored, vocab)
    parser = lark.Lark(PRODUCTS, parser="earley", lexer="dynamic")
    docs = ["create trigger t delete on x begin end",
            "create temp trigger if not exists t instead of update of a, b on x for each row "
            "when c begin d end",
            "create trigger t after insert on x when c begin end; pick a b c a b",
            "pick a b c a", "pick a b c a b c", "mix x y p q r s t u u v", "mix z", "mix",
            "mix q p", "k 1 3 7", "k 7 1", "create trigger t on x begin end",
            "create trigger if exists t delete on x begin end"]
    rng = random.Random(7)
    for _ in range(200):
        words = rng.choice(docs[:3] + docs[5:8] + docs[9:10]).split()
        i = rng.randrange(len(words))
        op = rng.randrange(3)
        if op == 0:
            del words[i]
        elif op == 1:
            words.insert(i, rng.choice(WORDS))
        else:
            words[i], words[-1] = words[-1], words[i]
        docs.append(" ".join(words))
    agree = {True: 0, False: 0}
    for doc in docs:
        try:
            parser.parse(doc)
            want = True
        except lark.exceptions.LarkError:
            want = False
        m = c.matcher()
        try:
            got = m.consume_bytes(doc.encode()) == len(doc.encode()) and m.is_accepting()
        except cfgmask.TokenRejected:
            got = False
        assert got == want, doc
        agree[want] += 1
    assert agree[True] >= 10 and agree[False] >= 50


@pytest.mark.parametrize("path", GRAMMAR_FILES, ids=os.path.basename)
def test_small_products_untouched(path):
    from lark.load_grammar import load_grammar
    loaded, _ = load_grammar(grammar_text(path), path, [os.path.dirname(path)], False)
    after = lark_loader.factor_products(loaded.rule_defs)
    assert len(after) == len(loaded.rule_defs)
    assert all(x is y for x, y in zip(after, loaded.rule_defs))


def test_factoring_lifts_the_alternatives_limit():
    """a? b? ... 20 optionals: 2**20 alternatives multiplied out (refused before), a few factored."""
    text = "start: " + " ".join(f'"w{i}"?' for i in range(20)) + "\n"
    g = Grammar.from_lark(text)
    assert g.rules_text().count("__start_factor_") >= 20


def test_template_body_still_bounded():
    """A template is expanded per use and not factored: its products stay bounded."""
    text = 't{x}: (x | "b") ~ 16\nstart: t{"a"}\n'
    with pytest.raises(GrammarError) as ei:
        Grammar.from_lark(text)
    assert ei.value.construct == "expansion size"


def test_duplicate_alternatives_lark_refuses_are_factored():
    """Lark refuses a rule whose multiplied-out alternatives repeat ("Rules defined
    twice", here after a group repeated ~ 1..2 is written out); factored, the
    product never repeats, so cfgmask loads it, and Lark's parser of the factored
    grammar (the same language) accepts what cfgmask's masks lead to.  This is
    the one refusal of Lark's that cfgmask does not share."""
    text = ('start: r1*\n'
            '_u0: (T0) ([T1] () (["ab"] t{r1} ~ 2 | r1 "let"* start) ~ 2 |  | r1 start) ~ 1..2 r1\n'
            'r1: (T1* "b"? | ( | ) _u0 "b"*) T1 ( | () "b"? T1 | T1*) | "let"? "x"i (() t{start}* | "c"+ | )\n'
            't{x}: x | x "," t{x}\nT0: /c+/i\nT1: /c+/i | "let"\n%ignore " "\n')
    with pytest.raises(lark.exceptions.GrammarError, match="Rules defined twice"):
        lark.Lark(text, parser="earley", lexer="dynamic")
    g = Grammar.from_lark(text)
    assert "__u0_factor_" in g.rules_text()
    loaded, _ = lark_loader.load(text, "start", [], None)
    parser = lark.Lark(loaded.grammar, parser="earley", lexer="dynamic")
    vocab, eos = _vocab()
    c = cfgmask.compile(g, vocab)
    rng = random.Random(3)
    finished = 0
    for _walk in range(60):
        m = c.matcher()
        for _step in range(16):
            allowed = m.allowed_tokens().tolist()
            short = [t for t in allowed if t < 128] or allowed
            t = eos if eos in allowed and rng.random() < 0.3 else \
                rng.choice(short if rng.random() < 0.7 else allowed)
            if t == eos:
                parser.parse(m.prefix.decode())
                finished += 1
                break
            m.consume(t)
    assert finished >= 10
