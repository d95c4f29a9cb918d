"""Random small grammars through load, compile and sampling: only cfgmask errors may come out.

A generator writes small Lark grammars from pieces that real grammars use
(literals with and without ``i``, regex terminals, ``?``/``*``/``+``/``[]``,
``~n``/``~n..m``, aliases, inlined ``?rule``/``_rule``, templates, ``%ignore``,
priorities) plus broken ones (bad regexes, empty terminals, backreferences,
undefined names, runaway templates).  Each grammar is loaded and compiled
against a small vocabulary; then random walks sample tokens from the masks.
The oracles:

* any exception that is not a ``CfgmaskError`` fails the test (with the
  grammar text to reproduce it);
* a grammar cfgmask loads must load in Lark too (cfgmask never accepts
  what Lark refuses);
* at every step the mask equals the pure-Python reference mask
  (tests/reference.py, no code shared with the runtime);
* every document completed with EOS parses with Lark.  Lark's dynamic
  Earley parser can take exponential time on these highly ambiguous
  grammars (seed 106 of the long run: grammar 104 kept it busy for more
  than 15 minutes on a 10-token document), so each parse gets 10 s of wall time;
  a parse that runs out is counted, not checked, and the tests allow
  few of them.

Short by default; ``-m slow`` runs ten times as many grammars.
"""

import signal

import numpy as np
import pytest

import cfgmask
from cfgmask import CfgmaskError, Grammar, Vocabulary
from cfgmask.frontends import lark_loader
from tests.reference import Reference

LITERALS = ['"a"', '"b"', '"ab"', '"("', '")"', '","', '"x"i', '"let"', '"c"']
REGEXES = ["/[a-c]+/", "/[0-9]{1,3}/", "/a|bc/", "/x*y/", "/(ab)+/", "/b(?!a)/", "/[a-z](?=[,)])/",
           "/c+/i", "/[^()\\n ,]/"]
BROKEN_TERMINALS = ["/(/", "/a{2,1}/", "/b*/", "/(a)\\1/", "/(?<=a)b/", "/^a/", '""']
VOCAB_PIECES = [b"a", b"b", b"c", b"x", b"y", b"l", b"e", b"t", b"0", b"1", b"9", b"(", b")", b",", b" ",
                b"ab", b"bc", b"ba", b"(a", b"a)", b", ", b" (", b"let", b"X", b"Ab", b"12", b"xy", b"cc",
                b"a,", b"))"]


def _vocab():
    return Vocabulary(VOCAB_PIECES + [None], eos_token_ids=[len(VOCAB_PIECES)])


class GrammarGen:
    """Random grammar text; ``broken`` adds constructs that must raise GrammarError."""

    def __init__(self, rng, broken):
        self.rng = rng
        self.broken = broken

    def pick(self, xs):
        return xs[int(self.rng.integers(len(xs)))]

    def atom(self, rules, terms, depth):
        r = self.rng.random()
        if r < 0.3:
            return self.pick(LITERALS)
        if r < 0.5:
            return self.pick(terms)
        if r < 0.75 or depth > 2:
            return self.pick(rules)
        if r < 0.85:
            return "t{" + self.atom(rules, terms, depth + 1) + "}"
        return "(" + self.alt(rules, terms, depth + 1) + ")"

    def item(self, rules, terms, depth):
        a = self.atom(rules, terms, depth)
        op = self.rng.random()
        if op < 0.55:
            return a
        if op < 0.65:
            return a + "?"
        if op < 0.75:
            return a + "*"
        if op < 0.85:
            return a + "+"
        if op < 0.9:
            return "[" + a + "]"
        if op < 0.95:
            return a + " ~ 2"
        return a + " ~ 1..2"

    def alt(self, rules, terms, depth=0, alias=False):
        n = int(self.rng.integers(1, 4))
        alts = []
        for _ in range(n):
            k = int(self.rng.integers(0 if depth else 1, 4))
            seq = " ".join(self.item(rules, terms, depth) for _ in range(k))
            if alias and self.rng.random() < 0.15 and seq:
                seq += " -> alias"
            alts.append(seq)
        return " | ".join(alts)

    def grammar(self):
        rng = self.rng
        n_rules = int(rng.integers(1, 4))
        rules = ["start"] + [self.pick(["r", "?q", "_u"]) + str(i) for i in range(n_rules)]
        names = [r.lstrip("?") for r in rules]
        n_terms = int(rng.integers(1, 3))
        term_defs = [f"T{i}: {self.pick(REGEXES)}" + (" | " + self.pick(LITERALS) if rng.random() < .3 else "")
                     for i in range(n_terms)]
        if rng.random() < 0.2:
            term_defs[0] = "T0.2: " + term_defs[0].split(": ", 1)[1]  # a priority
        terms = [f"T{i}" for i in range(n_terms)]
        lines = []
        for r in rules:
            alt = self.alt(names[1:] + ["start"] if r != "start" else names[1:] or ["T0"], terms,
                           alias=not r.startswith("_"))
            if r == "start" and not alt.strip("| "):
                alt = terms[0]
            lines.append(f"{r}: {alt}")
        lines.append("t{x}: x | x \",\" t{x}" if rng.random() < 0.9 else "t{x}: x | t{t{x}}")
        lines += term_defs
        if rng.random() < 0.5:
            lines.append('%ignore " "')
        if self.broken:
            k = int(rng.integers(4))
            if k == 0:
                lines.append(f"BAD: {self.pick(BROKEN_TERMINALS)}")
                lines[0] += " | BAD"
            elif k == 1:
                lines[0] += " | undefined_rule"
            elif k == 2:
                lines[0] += " | UNDEFINED_TERM"
            else:
                lines.insert(0, "%import common.NOPE")
        return "\n".join(lines) + "\n"


LARK_SECONDS = 10.0


class _LarkTimeout(Exception):
    pass


def _lark_parses(parser, text):
    """Parse ``text`` with Lark (raises what Lark raises on a refusal); ``False``
    when the parse ran out of ``LARK_SECONDS`` of wall time."""
    def expire(signum, frame):
        raise _LarkTimeout()
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, LARK_SECONDS)
    try:
        parser.parse(text)
        return True
    except _LarkTimeout:
        return False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_grammar(text, rng, vocab, n_walks=3, max_steps=10):
    """Returns what happened ("grammar-error", "compile-error" or "ok") and
    ``(documents Lark parsed, documents whose parse ran out of time)``."""
    import lark
    try:
        g = Grammar.from_lark(text)
    except CfgmaskError:
        return "grammar-error", (0, 0)
    if "_factor_" in g.rules_text():
        # cfgmask split a big product into rules of its own (lark_loader.factor_products):
        # Lark's parser of that grammar (the same language, tests/test_lark_factor.py)
        # is the oracle; Lark on the text multiplies the product out (tens of thousands
        # of rules, minutes to analyse) or refuses one that repeats an alternative
        loaded, _ = lark_loader.load(text, "start", [], None)
        parser = lark.Lark(loaded.grammar, parser="earley", lexer="dynamic")
    else:
        parser = lark.Lark(text, parser="earley", lexer="dynamic")  # cfgmask loaded it: Lark must too
    try:
        c = cfgmask.compile(g, vocab)
    except CfgmaskError:
        return "compile-error", (0, 0)
    ref = Reference(g)
    eos = vocab.eos_token_ids[0]
    complete = timeouts = 0
    for _ in range(n_walks):
        m = c.matcher()
        st = ref.initial()
        ids = []
        for _ in range(max_steps):
            try:
                allowed = m.allowed_tokens().tolist()
            except CfgmaskError:  # DeadEnd (the vocabulary cannot continue) or a budget
                break
            assert set(allowed) == ref.mask(st, vocab), f"mask differs from the reference after {ids}"
            if not allowed:
                break
            t = int(rng.choice(allowed))
            m.consume(t)
            ids.append(t)
            if t == eos:
                # a complete document: Lark must accept it
                if _lark_parses(parser, m.prefix.decode("utf-8")):
                    complete += 1
                else:
                    timeouts += 1
                break
            st = ref.push_tokens(st, vocab, [t])
    return "ok", (complete, timeouts)


def _fuzz(seed, n_grammars):
    rng = np.random.default_rng(seed)
    vocab = _vocab()
    outcomes = {}
    for i in range(n_grammars):
        text = GrammarGen(rng, broken=rng.random() < 0.25).grammar()
        try:
            kind, (complete, timeouts) = run_grammar(text, rng, vocab)
        except CfgmaskError:
            raise
        except AssertionError as e:
            raise AssertionError(f"grammar {i} (seed {seed}):\n{text}\n{e}") from e
        except Exception as e:  # noqa: BLE001 - the point of the test
            raise AssertionError(f"grammar {i} (seed {seed}) raised {type(e).__name__}: {e}\n{text}") from e
        outcomes[kind] = outcomes.get(kind, 0) + 1
        outcomes["complete"] = outcomes.get("complete", 0) + complete
        outcomes["lark-timeout"] = outcomes.get("lark-timeout", 0) + timeouts
    return outcomes


@pytest.mark.parametrize("seed", range(4))
def test_random_grammars_only_raise_cfgmask_errors(seed):
    outcomes = _fuzz(seed, 25)
    assert outcomes.get("ok", 0) >= 5, outcomes
    assert outcomes.get("grammar-error", 0) >= 1, outcomes
    assert outcomes["lark-timeout"] <= 1, outcomes


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 110))
def test_random_grammars_long(seed):
    outcomes = _fuzz(seed, 250)
    assert outcomes["lark-timeout"] <= max(2, outcomes["complete"] // 50), outcomes
