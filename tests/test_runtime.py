"""Runtime contract: errors, limits, bitmask layout, threads, copies.

Mask *contents* are checked against independent oracles elsewhere
(test_masks_bruteforce.py, test_sampling_lark.py, test_replay_json.py,
test_llguidance_parity.py); here the oracle is the definition of each API
call, checked on hand-made vocabularies where every answer is known.
"""

import threading

import numpy as np
import pytest

import cfgmask
from cfgmask import DeadEnd, TokenRejected
from cfgmask.engine.compiler import Limits

JSONISH = r"""
start: value
?value: "[" [value ("," value)*] "]" | NUMBER
NUMBER: /[0-9]+/
%ignore " "
"""

TOKENS = [b"[", b"]", b",", b"1", b"12", b" ", b"[1", b"],", b"x", None]
EOS = len(TOKENS) - 1


def make(grammar=JSONISH, tokens=TOKENS, eos=(EOS,), **limits):
    g = cfgmask.Grammar.from_lark(grammar)
    v = cfgmask.Vocabulary(tokens, eos_token_ids=list(eos))
    return cfgmask.compile(g, v, limits=Limits(**limits) if limits else None)


def names(ids, tokens=TOKENS):
    return sorted("EOS" if tokens[i] is None else tokens[i].decode() for i in ids)


def test_masks_on_hand_checked_states():
    m = make().matcher()
    assert names(m.allowed_tokens()) == sorted(["[", "1", "12", " ", "[1"])
    m.consume(TOKENS.index(b"[1"))
    # inside a number after "[1": digits continue it; "," "]" end it; " " ends it too
    assert names(m.allowed_tokens()) == sorted(["]", ",", "1", "12", " "])  # "]," would close the document first
    m.consume(TOKENS.index(b"]"))
    assert names(m.allowed_tokens()) == ["EOS"]  # no trailing %ignore after a complete document
    m.consume(EOS)
    assert m.is_finished() and names(m.allowed_tokens()) == ["EOS"]


def test_token_rejected_leaves_state_unchanged():
    m = make().matcher()
    m.consume(TOKENS.index(b"["))
    before = m.allowed_tokens()
    with pytest.raises(TokenRejected) as ei:
        m.consume(TOKENS.index(b"x"))
    assert ei.value.token_id == TOKENS.index(b"x")
    with pytest.raises(TokenRejected):
        m.consume(EOS)  # EOS only by the end-of-sequence rule
    np.testing.assert_array_equal(m.allowed_tokens(), before)
    assert m.prefix == b"["


def test_rollback_and_copy():
    c = make()
    m = c.matcher()
    seq = [TOKENS.index(t) for t in (b"[", b"12", b",", b" ", b"1", b"]")]
    masks = []
    for t in seq:
        masks.append(m.allowed_tokens())
        m.consume(t)
    m.consume(EOS)
    m.rollback(1)
    assert not m.is_finished() and m.is_accepting()
    for k in range(len(seq), 0, -1):
        m.rollback(1)
        np.testing.assert_array_equal(m.allowed_tokens(), masks[k - 1])
    with pytest.raises(ValueError):
        m.rollback(1)
    m.consume_many(seq[:3])
    twin = m.copy()
    twin.consume(TOKENS.index(b"1"))
    np.testing.assert_array_equal(m.allowed_tokens(), masks[3])  # original untouched
    assert twin.prefix == b"[12,1" and m.prefix == b"[12,"


def test_dead_end_carries_state_and_prefix():
    # the grammar needs a "b" that no token contains
    c = make('start: "a" "b"\n', tokens=[b"a", None], eos=(1,))
    m = c.matcher()
    m.consume(0)
    with pytest.raises(DeadEnd) as ei:
        m.fill_bitmask(c.allocate_bitmask())
    assert ei.value.prefix == b"a" and ei.value.state is not None


def test_bitmask_layout_and_validation():
    tokens = [bytes([b]) for b in range(256)] + [None]
    c = make('start: "a"+\n', tokens=tokens, eos=(256,))
    assert c.bitmask_words == (257 + 31) // 32
    bm = c.allocate_bitmask(3)
    m = c.matcher()
    m.fill_bitmask(bm, row=1)
    assert not bm[0].any() and not bm[2].any()
    bits = np.unpackbits(bm[1].view(np.uint8), bitorder="little")
    assert np.flatnonzero(bits).tolist() == [ord("a")]
    for bad in (np.zeros((1, c.bitmask_words), np.int64), np.zeros((1, 2), np.int32),
                np.zeros((c.bitmask_words, 2), np.int32).T, [0] * 9):
        with pytest.raises(cfgmask.ConfigurationError):
            m.fill_bitmask(bad)
    with pytest.raises(cfgmask.ConfigurationError):
        m.fill_bitmask(bm, row=3)


def test_ids_beyond_tokenizer_and_specials_never_allowed():
    g = cfgmask.Grammar.from_lark('start: /[a-z]+/\n')
    v = cfgmask.Vocabulary([b"a", b"b", None, None], eos_token_ids=[3], vocab_size=100)
    c = cfgmask.compile(g, v)
    assert c.bitmask_words == 4
    m = c.matcher()
    assert m.allowed_tokens().tolist() == [0, 1]
    with pytest.raises(TokenRejected):
        m.consume(2)
    with pytest.raises(TokenRejected):
        m.consume(77)
    m.consume(0)
    assert m.allowed_tokens().tolist() == [0, 1, 3]


def test_ambiguous_grammar_hits_item_budget_with_clear_error():
    # s: s s is ambiguous: row n holds a completed s for every origin, so rows grow
    # linearly and the item budget must fire (with the state left as before the call)
    c = make('start: s\ns: s s | "a"\n', tokens=[b"a", None], eos=(1,), max_items_per_row=50)
    m = c.matcher()
    with pytest.raises(cfgmask.BudgetExceeded, match="items"):
        for _ in range(200):
            m.consume(0)
        m.is_accepting()
    n = m.n_consumed
    assert n < 200 and m.prefix == b"a" * n


def test_right_recursion_stays_within_a_small_item_budget():
    # Leo's optimisation: right recursion keeps rows bounded, so 2000 tokens fit in 50 items per row
    c = make('start: l\nl: "a" l | "a"\n', tokens=[b"a", None], eos=(1,), max_items_per_row=50)
    m = c.matcher()
    for _ in range(2000):
        m.consume(0)
    assert m.is_accepting() and m.allowed_tokens().tolist() == [0, 1]


def test_deep_right_recursion_within_budget_is_exact():
    c = make('start: l\nl: "a" l | "a"\n', tokens=[b"a", b"aa", None], eos=(2,))
    m = c.matcher()
    for _ in range(300):
        m.consume(1)
    assert m.is_accepting() and m.allowed_tokens().tolist() == [0, 1, 2]


def test_shared_compiled_grammar_across_threads():
    c = make()
    seq = [TOKENS.index(t) for t in (b"[", b"[1", b",", b"12", b"]", b",", b"1", b"]")]
    expected = []
    m = c.matcher()
    for t in seq:
        expected.append(m.allowed_tokens().tolist())
        m.consume(t)
    errors = []

    def run():
        try:
            for _ in range(30):
                mm = c.matcher()
                for t, exp in zip(seq, expected):
                    assert mm.allowed_tokens().tolist() == exp
                    mm.consume(t)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_cached_and_plain_walk_agree_on_keyword_grammar():
    grammar = ('// %cfgmask word_boundary [a-z0-9]\n'
               'start: stmt+\nstmt: "let" NAME "=" NAME ";" | "if" NAME ";"\n'
               'NAME: /[a-z][a-z0-9]*/\n%ignore /[ \\n]+/\n')
    pieces = [b"let", b"le", b"t", b" ", b"x", b"if", b"i", b"f", b"=", b";", b"x;", b" if", b"letx",
              b"1", b" =", b"; ", b"\n", None]
    c = make(grammar, tokens=pieces, eos=(len(pieces) - 1,))
    rng = np.random.default_rng(0)
    for _ in range(40):
        m = c.matcher()
        for _ in range(12):
            a = m.allowed_tokens()
            m._set_use_cache(False)
            b = m.allowed_tokens()
            m._set_use_cache(True)
            np.testing.assert_array_equal(a, b)
            choices = [t for t in a if pieces[t] is not None]
            if not choices:
                break
            m.consume(int(rng.choice(choices)))


def test_next_and_forced_bytes():
    c = make('start: "{" "\\"name\\"" ":" NUMBER "}"\nNUMBER: /[0-9]+/\n%ignore " "\n',
             tokens=[bytes([b]) for b in range(128)] + [None], eos=(128,))
    m = c.matcher()
    assert m.next_bytes() == b" {"
    m.consume_bytes(b"{")
    assert m.forced_bytes() == b""  # " " or '"' may come next
    m.consume_bytes(b'"')
    assert m.forced_bytes() == b'name"'  # then ":" or " "
    m.consume_bytes(b'name":7')
    assert set(m.next_bytes()) == set(b"0123456789} ")
    m.consume_bytes(b"}")
    assert m.next_bytes() == b"" and m.is_accepting()


def test_fill_bitmasks_batch():
    c = make()
    ms = [c.matcher() for _ in range(3)]
    ms[1].consume(TOKENS.index(b"["))
    bm = c.allocate_bitmask(4)
    bm[3] = -1
    c.fill_bitmasks([ms[0], ms[1], None], bm)
    for i in range(2):
        one = c.allocate_bitmask(1)
        ms[i].fill_bitmask(one)
        np.testing.assert_array_equal(bm[i], one[0])
    assert not bm[2].any() and (bm[3] == -1).all()
    dead = make('start: "a" "b"\n', tokens=[b"a", None], eos=(1,))
    dm = dead.matcher()
    dm.consume(0)
    with pytest.raises(DeadEnd, match="row 1"):
        dead.fill_bitmasks([dead.matcher(), dm], dead.allocate_bitmask(2))
