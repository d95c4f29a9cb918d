"""Random API operations on a matcher, checked against a fresh replay after every one.

The model of a matcher is the list of token ids it has consumed (EOS
repeats included, see ``Matcher``).  After each random operation --
consume / try_consume (allowed and arbitrary ids, wrong types), rollback
(valid and invalid counts), copy (mutating the copy must not touch the
original), fill_bitmask into a random row of a garbage-filled batch,
fill_bitmasks, allowed_tokens, reset, is_accepting, next_bytes,
forced_bytes -- the matcher must agree with a *fresh* matcher fed the same
list: prefix, n_consumed, is_finished, is_accepting, mask, next and forced
bytes.  Mask and consume must agree too: a token is consumed iff the mask
allows it.  Any exception that is not the documented one fails the test.

Short by default (a few hundred operations per case); ``-m slow`` runs
thousands.
"""

import numpy as np
import pytest

import cfgmask
from cfgmask import ConfigurationError, Grammar, TokenRejected, Vocabulary

JSONISH = r"""
start: value
?value: "[" [value ("," value)*] "]" | NUMBER | STRING
NUMBER: /-?[0-9]+/
STRING: /"[a-z ]*"/
%ignore " "
"""
KEYWORDS = ('// %cfgmask word_boundary [a-z0-9]\n'
            'start: stmt+\nstmt: "let" NAME "=" NAME ";" | "if" NAME ";"\n'
            'NAME: /[a-z][a-z0-9]*/\n%ignore /[ \\n]+/\n')

_PIECES = [b"[", b"]", b",", b"1", b"12", b" ", b"  ", b"[1", b"],", b"-", b'"', b'"a', b'b"', b"a",
           b" b", b'""', b"x", b"let", b"le", b"t", b"if", b" if", b"=", b";", b"x;", b"letx", b"\n",
           b"; ", b"{", b'{"', b'":', b"true", b"nul", b"l", b"e", b"0", b".5", b"e+", b"\xc3\xa9", b"\xc3",
           b"\xa9", b"\\", b'\\"', b"\\u00"]


def _vocab():
    toks = list(dict.fromkeys(_PIECES + [bytes([b]) for b in range(32, 127)]))
    return Vocabulary(toks + [None, None], eos_token_ids=[len(toks)], vocab_size=len(toks) + 5)


CASES = {"jsonish": JSONISH, "keywords": KEYWORDS, "json": "builtin:json"}
_COMPILED = {}


def compiled(name):
    if name not in _COMPILED:
        text = CASES[name]
        g = Grammar.builtin(text.split(":")[1]) if text.startswith("builtin:") else Grammar.from_lark(text)
        _COMPILED[name] = cfgmask.compile(g, _vocab())
    return _COMPILED[name]


def replay(c, toks):
    m = c.matcher()
    for t in toks:
        assert m.try_consume(t), f"the model's token {t} no longer consumes"
    return m


def assert_same(c, m, toks, where):
    ref = replay(c, toks)
    assert m.n_consumed == ref.n_consumed == len(toks), where
    assert m.prefix == ref.prefix, where
    assert m.is_finished() == ref.is_finished(), where
    assert m.is_accepting() == ref.is_accepting(), where
    np.testing.assert_array_equal(m.allowed_tokens(), ref.allowed_tokens(), err_msg=where)
    return ref


def run_ops(name, seed, n_ops):
    c = compiled(name)
    V = c.vocab_size
    rng = np.random.default_rng(seed)
    m, toks = c.matcher(), []
    counts = {}
    for step in range(n_ops):
        where = f"{name} seed {seed} step {step} after {toks}"
        ref_allowed = set(replay(c, toks).allowed_tokens().tolist())
        op = rng.choice(["consume", "try", "rollback", "copy", "fill", "fills", "allowed", "reset",
                         "accepting", "next", "forced", "badtype"],
                        p=[.3, .15, .12, .07, .08, .04, .05, .02, .04, .04, .05, .04])
        counts[op] = counts.get(op, 0) + 1
        if op in ("consume", "try"):
            if ref_allowed and rng.random() < 0.7 and len(toks) < 40:
                t = int(rng.choice(sorted(ref_allowed)))
            else:
                t = int(rng.integers(-3, V + 3))
            ok = t in ref_allowed
            if op == "consume":
                if ok:
                    m.consume(t)
                else:
                    with pytest.raises(TokenRejected):
                        m.consume(t)
            else:
                assert m.try_consume(t) == ok, where
            if ok:
                toks.append(t)
        elif op == "rollback":
            if rng.random() < 0.15:
                with pytest.raises(ConfigurationError):
                    m.rollback(len(toks) + 1 + int(rng.integers(3)))
            else:
                k = int(rng.integers(len(toks) + 1))
                m.rollback(k)
                del toks[len(toks) - k:]
        elif op == "copy":
            twin = m.copy()
            if rng.random() < 0.5:  # mutate the copy; the original must not move
                twin_toks = list(toks)
                for _ in range(int(rng.integers(1, 4))):
                    allowed = twin.allowed_tokens().tolist()
                    if allowed:
                        t = int(rng.choice(allowed))
                        twin.consume(t)
                        twin_toks.append(t)
                if twin_toks:
                    twin.rollback(int(rng.integers(len(twin_toks) + 1)))
                assert_same(c, m, toks, where + " (after mutating a copy)")
            else:  # continue on the copy
                m = twin
        elif op == "fill":
            bm = rng.integers(-2**31, 2**31, size=(3, c.bitmask_words + 1), dtype=np.int64).astype(np.int32)
            before = bm.copy()
            row = int(rng.integers(3))
            m.fill_bitmask(bm, row)
            bits = np.unpackbits(bm[row].view(np.uint8), bitorder="little")
            assert set(np.flatnonzero(bits).tolist()) == ref_allowed, where
            others = [r for r in range(3) if r != row]
            np.testing.assert_array_equal(bm[others], before[others])
        elif op == "fills":
            other = replay(c, toks[: int(rng.integers(len(toks) + 1))])
            bm = c.allocate_bitmask(3)
            c.fill_bitmasks([other, None, m], bm)
            one = c.allocate_bitmask(1)
            m.fill_bitmask(one)
            np.testing.assert_array_equal(bm[2], one[0])
            assert not bm[1].any()
        elif op == "allowed":
            assert set(m.allowed_tokens().tolist()) == ref_allowed, where
            # the mask is what consume accepts: check a few ids each way on copies
            for t in rng.integers(0, V, size=6).tolist():
                assert m.copy().try_consume(t) == (t in ref_allowed), where + f" token {t}"
        elif op == "reset":
            m.reset()
            toks = []
        elif op == "accepting":
            eos = c.vocab.eos_token_ids[0]
            assert m.is_accepting() == (eos in ref_allowed), where
        elif op == "next":
            ref = replay(c, toks)
            assert m.next_bytes() == ref.next_bytes(), where
        elif op == "forced":
            ref = replay(c, toks)
            limit = int(rng.integers(0, 20))
            got = m.forced_bytes(limit)
            assert got == ref.forced_bytes(limit) and len(got) <= limit, where
            # forced bytes: at each byte exactly one byte may come next (oracle: next_bytes)
            probe = ref.copy()
            for b in got:
                assert probe.next_bytes() == bytes([b]) and not probe.is_accepting(), where
                probe.consume_bytes(bytes([b]))
        elif op == "badtype":
            bad = [1.5, "1", True, None, b"["][int(rng.integers(5))]
            with pytest.raises(ConfigurationError):
                [m.consume, m.try_consume, m.rollback][int(rng.integers(3))](bad)
        assert_same(c, m, toks, where + f" ({op})")
    return counts


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seed", range(3))
def test_random_api_operations_match_fresh_replay(name, seed):
    counts = run_ops(name, seed, 400)
    assert counts.get("consume", 0) > 20 and counts.get("rollback", 0) > 5


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seed", range(100, 120))
def test_random_api_operations_long(name, seed):
    run_ops(name, seed, 2000)
