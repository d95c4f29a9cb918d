"""Character counters (``regex.CountedDFA``): a ``maxLength`` stepped next to a pattern.

A JSON Schema string with a ``pattern`` (or ``format``) and a ``maxLength``
whose product automaton would be too large (``^(?:\\S+\\s+){0,99}\\S+$`` with
``maxLength: 5000`` needs 500,000 states) is one terminal whose lexer state
carries a character count (``json_schema/automata.counted_string_dfa``).  The
runtime keeps only the last characters a token can reach and resets the count
while a lexeme is far from its bound (``LazyDFA.resaturate``).  Oracles:

* the counted automaton's language equals the product automaton's (every
  string over a small alphabet up to 6 bytes, and random word strings that run
  into the bound), built independently by ``automata.product`` with the
  layered ``bounded_string_dfa``;
* the runtime's masks for a counted grammar equal those of the same schema
  compiled with the product automaton (checked against the brute-force
  reference by ``tests/test_masks_bruteforce.py``'s kind of walk here too),
  along random walks that reach the bound, with a vocabulary whose longest
  token is short enough that the count is reset many times (cache on and
  off, ``copy`` and ``rollback`` included);
* documents drawn under the masks of the JSONSchemaBench schema that needs
  it (``o21053``) validate with ``jsonschema``.
"""

import itertools
import json
import random

import numpy as np
import pytest

import cfgmask
from cfgmask.frontends.json_schema import automata as A
from cfgmask.frontends.json_schema import emit as E
from cfgmask.frontends.json_schema import strings as S
from cfgmask.automata import CountedDFA, compile_regex
from tests.reference import Reference

WORDS = r"^(?:\S+\s+){0,3}\S+$"
PATTERNS = [WORDS, r"^[a-c]+@[a-c]+\.(?:uk|com)$", r"^(?:ab|é)*$"]


def _pattern_dfa(pattern, canonical):
    text = S.text_regex(S.pattern_to_decoded(pattern), canonical)
    return compile_regex(text, name="pattern"), text


def _word_strings(rng, n):
    """Quoted JSON string texts of words, spaces and escapes around the bounds."""
    pieces = ["a", "b", "é", " ", "\\n", "\\u00e9", "\\\"", "ab", "@", ".", "@c.uk", "b.com"]
    out = []
    for _ in range(n):
        body = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 16)))
        out.append(('"' + body + ('"' if rng.random() < 0.8 else "")).encode())
    return out


@pytest.mark.parametrize("canonical", [True, False])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_counted_language_equals_the_product_automaton(pattern, canonical):
    base, text = _pattern_dfa(pattern, canonical)
    rng = random.Random(7)
    alphabet = [b'"', b"a", b" ", b"\\", b"n", b"\xc3", b"\xa9", b"@"]
    exhaustive = [b"".join(p) for k in range(7) for p in itertools.product(alphabet, repeat=k)]
    accepted = 0
    near = [f'"{u}@{v}.{w}"'.encode() for u in ("a", "abc", "cccc") for v in ("b", "abcab")
            for w in ("uk", "com")] + ['"abéab"'.encode(), '"é\\u00e9"'.encode()]
    for hi in (0, 1, 3, 7, 12):
        owner = []
        counted, _ = A.counted_string_dfa(base, text, hi, canonical, owner)
        bounded, btext = A.bounded_string_dfa(0, hi, canonical=canonical)
        eager = A.product(base, bounded, "and", "(?!)")
        if A.is_empty(eager):
            assert A.is_empty(counted)
            continue
        assert isinstance(counted, CountedDFA)
        for data in exhaustive + near + _word_strings(rng, 3000):
            want = eager.matches(data)
            assert counted.matches(data) == want, (pattern, hi, data)
            assert (counted.run(data) >= 0) == (eager.run(data) >= 0), (pattern, hi, data)
            accepted += want
    assert accepted >= 10, "few accepted strings: the comparison checked little"


def _schema(pattern, hi):
    return {"type": "object", "properties": {"q": {"type": "string", "pattern": pattern,
                                                   "maxLength": hi}},
            "required": ["q"], "additionalProperties": False}


def _vocab():
    tokens = [bytes([b]) for b in b'{}:" abeq@.\\nu0c9k'] + [
        b'"q', b'"q":', b'{"q":"', b"ab", b"a b", b" a", b"aaa", "é".encode(), "éa".encode(),
        b"\\n", b"\\u00e9", b'a"', b'"}', b"a "]
    return cfgmask.Vocabulary(tokens + [b"<eos>"], eos_token_ids=[len(tokens)])


@pytest.mark.parametrize("pattern,hi", [(WORDS, 20), (r"^(?:ab|é)*$", 13)])
def test_counted_masks_equal_the_product_automaton(monkeypatch, pattern, hi):
    vocab = _vocab()
    eager_g = cfgmask.Grammar.from_json_schema(_schema(pattern, hi))
    monkeypatch.setattr(E, "COUNT_ABOVE", 0)
    counted_g = cfgmask.Grammar.from_json_schema(_schema(pattern, hi))
    eager, counted = cfgmask.compile(eager_g, vocab), cfgmask.compile(counted_g, vocab)
    assert any(counted.lexer_spec.counted(t) for t in range(counted_g.n_terminals))
    assert not any(eager.lexer_spec.counted(t) for t in range(eager_g.n_terminals))
    # the longest token has 6 bytes: the lexer counts only the last 6 + 2 + 1 or so
    # characters of hi, so the count is reset while a walk is far from the bound
    assert counted._dfa.max_token_bytes == 6
    ref = Reference(eager_g)
    rng = random.Random(3)
    longest = 0
    for walk in range(40):
        me, mc = eager.matcher(), counted.matcher()
        mo = counted.matcher()
        mo._set_use_cache(False)
        text = b""
        for step in range(60):
            want = me.allowed_tokens().tolist()
            assert mc.allowed_tokens().tolist() == want, (walk, text)
            assert mo.allowed_tokens().tolist() == want, (walk, text)
            if step % 7 == 0:     # the brute-force reference on the eager grammar
                assert ref.reference_mask(text, vocab) == set(want), (walk, text)
            if not want:
                break
            # prefer string content, so that walks run into the bound
            body = [t for t in want if vocab.token_bytes[t] not in (b'"', b'a"', b'"}')]
            t = rng.choice(body if body and rng.random() < 0.9 else want)
            if t in vocab.eos_token_ids:
                break
            if step % 5 == 3:     # a copy taken mid-string gives the same masks
                c = mc.copy()
                assert c.allowed_tokens().tolist() == want
            me.consume(t)
            mc.consume(t)
            mo.consume(t)
            text += vocab.token_bytes[t]
            if step % 9 == 8:     # and so does a rollback and re-consume
                mc.rollback(1)
                mc.consume(t)
        longest = max(longest, len(text))
        doc = text.decode("utf-8", "replace")
        if me.is_accepting():
            json.loads(doc)
    assert longest > hi + 6, "no walk reached the bound: the test would not see the counter"
