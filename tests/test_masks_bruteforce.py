"""Oracle (a): cfgmask's masks against the brute-force reference (``tests/reference.py``).

For every test grammar (``tests/grammars/*.lark``: JSON, arithmetic with left
and right recursion, nullable rules, %ignore with comments, keywords vs
identifiers with and without a word boundary, trailing lookaheads) and the
bundled ``grammars/{json,sql,javascript}.lark`` (skipped while missing):

* tiny exhaustive vocabularies (all 256 single bytes, every string of length
  2..3 over the grammar's characters, some multi-byte UTF-8 pieces, a
  duplicate, a special token, EOS, and ``vocab_size`` 5 ids wider than the
  tokenizer): at fixed interesting prefixes and along seeded random walks,
  ``allowed_tokens()`` must equal the reference mask exactly, with the
  runtime's mask cache on and off; ``fill_bitmask`` into one row of a 2-D
  array must write the same bits and nothing else; ``is_accepting()`` must
  equal "EOS allowed"; a prefix the reference rejects must be rejected at the
  same byte; finished walks must parse with Lark;
* a real vocabulary (SmolLM2, skipped when not installed) at prefixes reached
  by random walks: every allowed token is viable (no hole) and 2,000 random
  disallowed tokens are not (no over-constraint), EOS agrees, cache on and
  off agree; with Mistral's SentencePiece vocabulary the whole mask is
  compared; the ``slow`` variants compare the full vocabulary, also with
  Mistral tekken and more SentencePiece walks;
* state handling: ``rollback``/``copy``/``reset``/``consume_many`` round trips
  give identical masks, ``TokenRejected`` leaves the state untouched,
  matchers sharing one ``CompiledGrammar`` do not affect each other,
  ``consume_bytes`` agrees with the reference.
"""

import functools
import itertools
import random
import subprocess
import sys
from pathlib import Path

import lark
import numpy as np
import pytest

import cfgmask
from tests.reference import Reference

HERE = Path(__file__).resolve().parent
FORCED_SLICES = {"min_tokens": 2, "min_fraction": 0.0}
ROOT = HERE.parent

# The keyword grammars with and without the word-boundary pragma share their
# alphabet, tokens and prefixes: the pragma is what differs.
KEYWORD_CASES = (
    b"letifnox=1;+:( ", 2,
        [b"let", b"if", b"in", b"letx", b"let ", b" in ", b"ifx", b"inx", b"lettin", b"let x", b" = "],
        [b"", b"l", b"le", b"let", b"letx", b"let x", b"let in", b"let x=", b"let x=1", b"let x=1;",
         b"let x=1;if", b"if", b"ifx", b"if x", b"if x i", b"if x in", b"if xin", b"if x in1", b"if in",
         b"if in in", b"if 1in", b"if (x+1)in", b"if x in y:", b"if x in y:let z=1;", b"let x=not",
         b"let x=not;", b"let x=not ", b"let x=not not", b"let x=notx", b"if not in in:"],
)

# name -> (grammar file, characters for the exhaustive vocabulary, max length,
#          extra tokens, interesting prefixes)
CASES = {
    "json_small": (
        HERE / "grammars" / "json_small.lark", b'{}[],:"1-.e \\a', 2,
        [b"true", b"tr", b"ue", b"false", b"null", b'"a"', b'": ', b'\\u00e9', b'\\u', b'"\xc3\xa9"',
         b"0.5", b"1e+", b"-0", b", ", b"},{", b"[]", b"{}"],
        [b"", b" ", b"[", b"[1", b"[1,", b"[1, -0.5e+3", b'{"a"', b'{"a":', b'{"a": {"b": [true, nul',
         b'"', b'"\\', b'"\\u00', b'"\xc3', b'"\xe2\x82', b"-", b"0", b"1.", b"1e", b"1E-", b"t", b"[tru",
         b'{"":[]', b"[[[[1]]]", b"[ ]", b"  [1 ,2 ]"]),
    "json_builtin": (
        ROOT / "grammars" / "json.lark", b'{}[],:"1-.e \\a', 2,
        [b"true", b"false", b"null", b'"a"', b'": ', b'\\u00e9', b'"\xc3\xa9"', b"0.5", b", "],
        [b"", b"[", b"[1,", b'{"a": {"b": [true, nul', b'"\\u00', b'"\xc3', b"1e", b"[[[[1]]]"]),
    "arith": (
        HERE / "grammars" / "arith.lark", b"1.+-*/^() <=", 3,
        [b"12", b"3.14", b" + ", b"))", b"(-", b"^-", b"<<=", b"==="],
        [b"", b"1", b"1.", b"1.5", b"1 ", b"1+", b"1 + 2 ", b"-", b"--1", b"2^", b"2^3^", b"2^-",
         b"(", b"((1", b"((1+2)*3", b"((1+2)*3)/(4", b"1*2^3-4/5", b"  1", b"1<", b"1<=", b"1<<", b"1<<=",
         b"1< =", b"1==", b"1===", b"1=-", b"1<-2", b"1<=2<"]),
    "nullable": (
        HERE / "grammars" / "nullable.lark", b"xkzyvwqu", 3,
        [b"xkzzz", b"wq", b"ww"],
        [b"", b"x", b"xk", b"xkz", b"xkzz", b"z", b"zz", b"y", b"yv", b"yvz", b"w", b"ww", b"wwq",
         b"wxw", b"u", b"uz", b"xu", b"wuq", b"wyq", b"xkzyyvzzuz", b"wxkzyvzzuzq"]),
    "ignore": (
        HERE / "grammars" / "ignore.lark", b"ab=1;#/*\n [,]", 2,
        [b"/*", b"*/", b"**/", b"abc", b"12", b" = ", b"\t", b"# c\n"],
        [b"", b" ", b"#", b"# x", b"# x\n", b"/", b"/*", b"/* a ", b"/* a *", b"/* a **", b"/* a */",
         b"a", b"a ", b"a =", b"a = 1", b"a = 1 ", b"a = 1;", b"a = 1; ", b"a=1;#c", b"a=[", b"a=[1,b",
         b"a/**/=/**/1;", b"a#\n=1"]),
    "at_start": (
        HERE / "grammars" / "at_start.lark", b"#!ab=1;/* \n", 2,
        [b" #!", b"#!a", b"\n#!", b"*/#!", b"/**/", b"#ab", b" #a", b"#!a\n"],
        [b"", b" ", b"#", b"#!", b"#!ab", b"#!ab\n", b"#!ab\na=#b;", b" #", b"\n", b"/**/", b"/**/#",
         b"a", b"a=", b"a=#", b"a=#b", b"a=#b; ", b"a=1;#", b"#!\n #"]),
    "keywords": (HERE / "grammars" / "keywords.lark", *KEYWORD_CASES),
    "keywords_wb": (HERE / "grammars" / "keywords_wb.lark", *KEYWORD_CASES),
    "lookahead": (
        HERE / "grammars" / "lookahead.lark", b"letifxa=(),;1 ", 2,
        [b"let", b"if", b"f(", b"let ", b"1a", b"ifa", b"fx(", b"let(", b"x=f()", b"=1;"],
        [b"", b"l", b"le", b"let", b"let ", b"letx", b"let x", b"let x;", b"if", b"if(", b"if ", b"f", b"f(",
         b"f (", b"f(1", b"f(1a", b"f(1 ", b"f(x,g(", b"f(x,g()", b"f(x,g());", b"x=1", b"x=1;", b"x=f",
         b"x=f(", b"x=f()", b"let=1;", b"let(", b"x=1a", b"x=12;let y;f();"]),
    "sql": (
        ROOT / "grammars" / "sql.lark", b"SELCTFROMWHax1 *,=;'\"().-\n", 2,
        [b"SELECT", b"SELECT ", b" FROM ", b"FROM", b"WHERE", b" WHERE ", b"select", b"Select", b" AS ",
         b" AND ", b"NOT", b"NULL", b" IS ", b"--", b"/*", b"*/", b"SELECTa", b"1e5", b"'it''s'",
         b"count(*)", b'"x"', b"`x`", b"[x]", b" UNION ", b"ORDER BY", b"<=", b"!=", b"||"],
        [b"", b"S", b"SELECT", b"SELECT ", b"SELECTa", b"SELECT a", b"SELECT a FROM", b"SELECT a FROM t",
         b"SELECT a FROM t WHERE", b"SELECT a FROM t WHERE a = 'x'", b"SELECT * FROM t;", b"SELECT * FROM t; ",
         b"select count(*) from t where a is not null", b"SELECT 1e", b"SELECT 1e5", b"SELECT -- c\n1",
         b"SELECT /* c */ 1", b'SELECT a.b, "c" AS d FROM t AS u', b"SELECT 1 UNION SELECT 2",
         b"SELECT (SELECT 1)", b"SELECT a FROM t ORDER BY a DESC LIMIT 1", b"SELECT 'a''b'", b"SELECT x-1"]),
    "javascript": (
        ROOT / "grammars" / "javascript.lark", b"functionra(){};=+ \n1`$'\"/x.", 2,
        [b"function", b"return", b"const", b"let", b"=>", b"${", b"//", b"/*", b"*/", b"?.", b"??", b"===",
         b"class", b"new ", b"this", b"/re/g", b"++", b"\n}"],
        [b"", b"f", b"function", b"function f", b"function f(a, b) {", b"function f(a, b) {\n  return a",
         b"function f(a, b) {\n  return a\n", b"function f(a, b) {\n  return\n", b"x = 1\ny = 2",
         b"x = a\n(b)", b"x = a\n++b", b"const s = `x${1 + ", b"const s = `x${1 + 2}y`",
         b"x = /re/g.test(y)", b"x = a / b / c", b"a?.b ?? c", b"if (x) {} else {}",
         b"x = {a: 1, 'b': [1, 2]}", b"// c\nx", b"/* c */ x", b"x => x + 1", b"class A { #x = 1; static { } }",
         b"x = 1;;", b"returnx", b"for (const a of b) {}", b"import x from 'y'"]),
}

UTF8_PIECES = ["é".encode(), "€".encode(), "😀".encode(), "€".encode()[:2], "😀".encode()[:3],
               b"\xa9", b"\xff", b"\xc0\x80", b"\xed\xa0\x80", "é".encode() + b'"']


class Tiny:
    """A compiled test grammar with its tiny vocabulary and reference."""

    def __init__(self, name):
        path, alphabet, max_len, extra, prefixes = CASES[name]
        if not path.exists():
            pytest.skip(f"{path.relative_to(ROOT)} does not exist yet")
        self.name = name
        self.text = path.read_text(encoding="utf-8")
        self.path = path
        self.grammar = cfgmask.Grammar.from_file(path)
        tokens = [bytes([b]) for b in range(256)]  # token id b is the byte b
        chars = [bytes([c]) for c in sorted(set(alphabet))]
        for n in range(2, max_len + 1):
            tokens += [b"".join(p) for p in itertools.product(chars, repeat=n)]
        tokens += extra + UTF8_PIECES
        tokens.append(tokens[ord("1")])  # a duplicate of an existing token
        self.special = len(tokens)
        tokens.append(None)
        self.eos = len(tokens)
        tokens.append(None)
        self.vocab = cfgmask.Vocabulary(tokens, eos_token_ids=[self.eos], vocab_size=len(tokens) + 5)
        # slices forced on (a tiny vocabulary would get none by default), so that
        # every mask here also checks the slice and continuation caches
        self.compiled = cfgmask.compile(self.grammar, self.vocab, slices=FORCED_SLICES)
        self.ref = Reference(self.grammar)
        self.prefixes = prefixes

    @functools.cached_property
    def lark(self):
        return lark.Lark(self.text, parser="earley", lexer="dynamic", import_paths=[str(self.path.parent)])


@functools.lru_cache(maxsize=None)
def tiny(name):
    return Tiny(name)


def _mask(m):
    try:
        return set(m.allowed_tokens().tolist())
    except cfgmask.DeadEnd:
        return set()


def _describe(vocab, ids, limit=12):
    ids = sorted(ids)
    shown = [(t, vocab.token_bytes[t] if t < len(vocab.token_bytes) else None) for t in ids[:limit]]
    return f"{len(ids)} ids: {shown}{' ...' if len(ids) > limit else ''}"


def assert_same_mask(got, want, vocab, context):
    if got != want:
        raise AssertionError(
            f"{context}\n  holes (allowed by cfgmask, not by the reference): {_describe(vocab, got - want)}"
            f"\n  missing (allowed by the reference, refused by cfgmask): {_describe(vocab, want - got)}")


def matchers(c):
    """A default matcher and one with the mask cache switched off."""
    on = c.matcher()
    off = c.matcher()
    off._set_use_cache(False)
    return on, off


def _bitmask_row(m, vocab_size):
    """The mask written by ``fill_bitmask`` into row 1 of a garbage-filled [3, W] array.

    Checks on the way that rows 0 and 2 are untouched and that no bit at or
    beyond ``vocab_size`` is set.
    """
    words = (vocab_size + 31) // 32
    arr = np.full((3, words), -1, dtype=np.int32)
    try:
        m.fill_bitmask(arr, row=1)
    except cfgmask.DeadEnd:
        return set()
    assert (arr[0] == -1).all() and (arr[2] == -1).all(), "fill_bitmask wrote outside its row"
    bits = np.unpackbits(arr[1].view(np.uint8), bitorder="little")
    assert not bits[vocab_size:].any(), "fill_bitmask set bits beyond vocab_size"
    return set(np.flatnonzero(bits).tolist())


def check_state(tc, st, ms, prefix, label=""):
    """Both matchers' masks == reference mask; ``is_accepting`` == EOS allowed. Returns the mask."""
    want = tc.ref.mask(st, tc.vocab)
    for m, mode in zip(ms, ("cache on", "cache off")):
        got = _mask(m)
        assert _bitmask_row(m, tc.vocab.vocab_size) == got, f"[{tc.name}] fill_bitmask != allowed_tokens"
        assert_same_mask(got, want, tc.vocab, f"[{tc.name}] {label} prefix={prefix!r} ({mode})")
        assert m.is_accepting() == (tc.eos in want), f"[{tc.name}] is_accepting() wrong at {prefix!r} ({mode})"
    return want


# ------------------------------------------------------------------ the reference itself

REFERENCE_FACTS = [
    # grammar, prefix, viable, EOS allowed (worked out by hand from docs/architecture.md)
    ("keywords", b"letx=1;", True, True),         # "let" ends at "x" (NAME is not expected there)
    ("keywords_wb", b"letx", False, False),        # word boundary: "let" may not end before "x"
    ("keywords_wb", b"let x=1;", True, True),
    ("keywords", b"if in in in:let a=1;", True, True),
    ("keywords", b"if xin", True, False),          # "xin" is one NAME
    ("json_small", b"1 ", False, False),           # nothing can follow: no trailing %ignore
    ("json_small", b" [1, 2]", True, True),
    ("json_small", b"[1, 2] ", False, False),
    ("json_builtin", b"[1, 2] ", True, True),      # explicit trailing _WS
    ("lookahead", b"let x;", True, True),
    ("lookahead", b"letx=1;", True, True),        # KW may not end before "x": one NAME
    ("lookahead", b"let(", True, False),          # "let" ends as FNAME (or KW/NAME), then "("
    ("lookahead", b"f (", False, False),          # FNAME only before "(", NAME then needs "="
    ("lookahead", b"f(1a", False, False),         # NUMBER may not end before a letter
    ("lookahead", b"x=f", True, False),           # NAME or FNAME pending: EOS would need ";"
    ("lookahead", b"x=f;", True, True),
    ("json_builtin", b'"\xc3', True, False),
    ("json_builtin", b'"\xc3"', False, False),
    ("json_builtin", b"01", False, False),
    ("json_builtin", b"-", True, False),
    ("arith", b"1 + 2 ", True, True),              # "+" etc. could still follow
    ("arith", b"1^", True, False),
    ("arith", b"1^^", False, False),
    ("nullable", b"", True, True),
    ("nullable", b"uu", False, False),
    ("nullable", b"ww", True, False),
    ("nullable", b"wxkzyvzzuzq", True, True),
    ("ignore", b"", True, True),
    ("ignore", b"/* a ** b */", True, True),
    ("ignore", b"/*", True, False),
    ("ignore", b"a = 1 # c\n", True, False),
    ("ignore", b"a = 1; # c", True, True),
    ("at_start", b"#!x", True, True),
    ("at_start", b" #!", False, False),            # white space, then a hashbang
    ("at_start", b"/**/#!", False, False),          # a comment, then a hashbang
    ("at_start", b" #", False, False),             # "#" starts a private name, not a statement
    ("at_start", b"#!\na=1; #", False, False),
    ("at_start", b"a=#b;", True, True),
]


@pytest.mark.parametrize("name,prefix,viable,eos", REFERENCE_FACTS)
def test_reference_facts(name, prefix, viable, eos):
    ref = Reference(cfgmask.Grammar.from_file(CASES[name][0]))
    st = ref.state_after(prefix)
    assert ref.viable(st) == viable
    assert ref.eos_allowed(st) == eos


# ------------------------------------------------------------------ (i) tiny vocabularies

@pytest.mark.parametrize("name", sorted(CASES))
def test_fixed_prefixes_exact(name):
    """Exact masks at hand-picked prefixes; a prefix the reference rejects must be rejected at the same byte."""
    tc = tiny(name)
    for prefix in tc.prefixes:
        ms = matchers(tc.compiled)
        st = tc.ref.initial()
        check_state(tc, st, ms, b"")
        for i, b in enumerate(prefix):
            st2 = tc.ref.push_byte(st, b)
            if st2 is None:
                for m in ms:
                    before = _mask(m)
                    with pytest.raises(cfgmask.TokenRejected):
                        m.consume(b)
                    assert _mask(m) == before
                break
            for m in ms:
                m.consume(b)  # token id b is the single byte b
            st = st2
            check_state(tc, st, ms, prefix[: i + 1])


@pytest.mark.parametrize("name", sorted(CASES))
def test_random_walks_exact(name):
    """Seeded random walks under the reference; exact masks at every step, cache on and off.

    Also: a random disallowed token raises ``TokenRejected`` and changes
    nothing; after EOS the mask is EOS only, the matcher is finished, and the
    document parses with Lark.
    """
    tc = tiny(name)
    rng = random.Random(1234 + sum(name.encode()))
    n_steps = 0
    for walk in range(10):
        ms = matchers(tc.compiled)
        st = tc.ref.initial()
        prefix = b""
        for step in range(30):
            want = check_state(tc, st, ms, prefix, f"walk {walk} step {step}")
            n_steps += 1
            if not want:
                break
            if step % 3 == 0:
                bad = [t for t in rng.sample(range(tc.vocab.vocab_size), 40) if t not in want][:3]
                for t in bad:
                    with pytest.raises(cfgmask.TokenRejected):
                        ms[0].consume(t)
                    assert _mask(ms[0]) == want, f"[{name}] TokenRejected({t}) changed the mask at {prefix!r}"
                    assert ms[0].prefix == prefix
            if tc.eos in want and (rng.random() < (0.25 if step >= 10 else 0.03) or want == {tc.eos}):
                for m in ms:
                    m.consume(tc.eos)
                    assert m.is_finished()
                    assert _mask(m) == {tc.eos}
                tc.lark.parse(prefix.decode("utf-8"))
                break
            choices = sorted(want - {tc.eos})
            tok = rng.choice(choices)
            for m in ms:
                m.consume(tok)
            st = tc.ref.push_tokens(st, tc.vocab, [tok])
            prefix += tc.vocab.token_bytes[tok]
    assert n_steps >= 100


@pytest.mark.parametrize("name", sorted(CASES))
def test_consume_bytes_matches_reference(name):
    """``consume_bytes`` accepts exactly the reference's viable byte prefix and lands in the same state."""
    tc = tiny(name)
    for prefix in tc.prefixes + [p + b"\x00" for p in tc.prefixes[-3:]] + [b"\xff", b"}{"]:
        st = tc.ref.initial()
        n_ok = 0
        for b in prefix:
            s2 = tc.ref.push_byte(st, b)
            if s2 is None:
                break
            st, n_ok = s2, n_ok + 1
        m = tc.compiled.matcher()
        assert m.consume_bytes(prefix) == n_ok, f"[{name}] consume_bytes({prefix!r})"
        want = tc.ref.mask(st, tc.vocab)
        assert_same_mask(_mask(m), want, tc.vocab, f"[{name}] after consume_bytes({prefix!r})")


# ------------------------------------------------------------------ state handling

def _walk_tokens(tc, rng, n):
    """``n`` tokens allowed by the reference (EOS only as the last one, when allowed)."""
    st, toks = tc.ref.initial(), []
    for _ in range(n):
        want = tc.ref.mask(st, tc.vocab) - {tc.eos}
        if not want:
            break
        t = rng.choice(sorted(want))
        toks.append(t)
        st = tc.ref.push_tokens(st, tc.vocab, [t])
    if tc.ref.eos_allowed(st):
        toks.append(tc.eos)
    return toks


_ROLLBACK_PROBE = """
import cfgmask
m = cfgmask.compile(cfgmask.Grammar.from_lark('start: "a"+'),
                    cfgmask.Vocabulary([b"a", None], eos_token_ids=[1])).matcher()
m.consume(0); m.consume(0); m.rollback(1); m.rollback(1)
"""


@functools.lru_cache(maxsize=None)
def _crashes(code):
    """Does ``code`` kill the interpreter (a signal, e.g. SIGSEGV)?  Run in a subprocess."""
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, timeout=120)
    return r.returncode < 0


def _skip_if_rollback_crashes():
    # a crash would take the whole test session down: probe in a subprocess first
    if _crashes(_ROLLBACK_PROBE):
        pytest.fail("rollback crashes the interpreter (see _ROLLBACK_PROBE)")


@pytest.mark.parametrize("name", sorted(CASES))
def test_rollback_and_copy_round_trips(name):
    _skip_if_rollback_crashes()
    tc = tiny(name)
    rng = random.Random(99)
    toks = _walk_tokens(tc, rng, 16)
    m = tc.compiled.matcher()
    masks = [_mask(m)]
    for t in toks:
        m.consume(t)
        masks.append(_mask(m))
    assert m.n_consumed == len(toks)
    # roll back in random chunks, checking the mask after each
    pos = len(toks)
    while pos > 0:
        k = rng.randint(1, min(4, pos))
        m.rollback(k)
        pos -= k
        assert m.n_consumed == pos
        assert _mask(m) == masks[pos], f"[{name}] mask after rollback to {pos} differs"
        assert m.is_finished() == (pos > 0 and toks[pos - 1] == tc.eos)
    # replay, taking copies on the way; each copy keeps its own state
    copies = []
    for i, t in enumerate(toks):
        copies.append((i, m.copy()))
        m.consume(t)
        assert _mask(m) == masks[i + 1]
    for i, c in copies:
        assert _mask(c) == masks[i], f"[{name}] copy taken at {i} changed when the original advanced"
    # advancing a copy leaves the original alone
    i, c = copies[len(copies) // 2]
    for t in toks[i:]:
        c.consume(t)
    assert _mask(c) == masks[-1]
    assert _mask(m) == masks[-1]
    m.rollback(len(toks))
    assert _mask(m) == masks[0]
    assert _mask(c) == masks[-1]
    c.reset()
    assert _mask(c) == masks[0] and c.n_consumed == 0 and not c.is_finished()
    # consume_many stops at the first refused token; the ones before it stay consumed
    bad = min(set(range(tc.vocab.vocab_size)) - masks[3]) if len(toks) > 3 else tc.special
    with pytest.raises(cfgmask.TokenRejected):
        c.consume_many(toks[:3] + [bad] + toks[3:])
    assert c.n_consumed == min(3, len(toks)) and _mask(c) == masks[min(3, len(toks))]
    # the rolled-back matcher can take a different path (against the reference)
    st = tc.ref.initial()
    for t in _walk_tokens(tc, random.Random(7), 8):
        m.consume(t)
        st = tc.ref.push_tokens(st, tc.vocab, [t])
        assert_same_mask(_mask(m), tc.ref.mask(st, tc.vocab), tc.vocab, f"[{name}] after rollback + new path")


@pytest.mark.parametrize("name", sorted(CASES))
def test_rejected_token_leaves_state_unchanged(name):
    tc = tiny(name)
    for prefix in tc.prefixes[::3]:
        m = tc.compiled.matcher()
        for b in prefix:
            if not m.try_consume(b):
                break
        before, acc, pfx, n = _mask(m), m.is_accepting(), m.prefix, m.n_consumed
        refused = [t for t in range(tc.vocab.vocab_size) if t not in before]
        for t in refused[:: max(1, len(refused) // 60)] + [tc.special, tc.vocab.vocab_size - 1]:
            with pytest.raises(cfgmask.TokenRejected):
                m.consume(t)
            assert not m.try_consume(t)
        assert (_mask(m), m.is_accepting(), m.prefix, m.n_consumed) == (before, acc, pfx, n), \
            f"[{name}] refused tokens changed the state at {prefix!r}"
        if before:
            m.consume(min(before))  # and it still works


@pytest.mark.parametrize("name", ["json_small", "arith", "nullable", "keywords_wb"])
def test_matchers_are_independent(name):
    """Two matchers of one CompiledGrammar, advanced in turn on different walks, each match the reference."""
    tc = tiny(name)
    walks = [_walk_tokens(tc, random.Random(s), 14) for s in (1, 2, 3)]
    ms = [tc.compiled.matcher() for _ in walks]
    ms[2]._set_use_cache(False)
    sts = [tc.ref.initial() for _ in walks]
    for step in range(max(map(len, walks))):
        for k, (m, w) in enumerate(zip(ms, walks)):
            if step < len(w):
                m.consume(w[step])
                sts[k] = tc.ref.push_tokens(sts[k], tc.vocab, [w[step]])
            assert_same_mask(_mask(m), tc.ref.mask(sts[k], tc.vocab), tc.vocab,
                             f"[{name}] matcher {k} at step {step}")


# ------------------------------------------------------------------ (ii) a real vocabulary

def _real_vocab(vocab_name):
    from support.vocabs import ALL_VOCABS
    return ALL_VOCABS[vocab_name]()  # skips the test when the tokenizer is not installed


@functools.lru_cache(maxsize=None)
def _real(name, vocab_name):
    vocab = _real_vocab(vocab_name)
    if not CASES[name][0].exists():
        pytest.skip(f"{CASES[name][0].relative_to(ROOT)} does not exist yet")
    g = cfgmask.Grammar.from_file(CASES[name][0])
    return g, vocab, cfgmask.compile(g, vocab), Reference(g)


def _pick(rng, ref, st, vocab, choices):
    """A random allowed token, biased so that walks cross many lexemes.

    35%: the single-byte token that most shortens the reference's estimated
    completion (closes strings, ends identifiers, ...); 35%: a random token
    of at most 2 bytes; 30%: any allowed token.
    """
    r = rng.random()
    if r < 0.35:
        single = [t for t in choices if len(vocab.token_bytes[t]) == 1]
        if single:
            rng.shuffle(single)
            return min(single, key=lambda t: ref.completion_cost(ref.push_bytes(st, vocab.token_bytes[t])))
    if r < 0.7:
        short = [t for t in choices if len(vocab.token_bytes[t]) <= 2]
        if short:
            return rng.choice(short)
    return rng.choice(choices)


def _real_vocab_walk(name, seed, n_checks, check_every, full, walk_len=8, vocab_name="smollm2"):
    """Random walks under cfgmask's masks with a real vocabulary, compared with the reference every few steps.

    Each walk starts after one of the grammar's interesting prefixes (pushed
    with ``consume_bytes``) and lasts ``walk_len`` tokens (less if only EOS is
    left).  ``full``: compare the whole mask; otherwise check every allowed
    token (holes) and 2,000 random refused ones (over-constraint).
    """
    g, vocab, c, ref = _real(name, vocab_name)
    rng = random.Random(seed)
    eos = set(vocab.eos_token_ids)
    starts = [p for p in CASES[name][4] if ref.viable(ref.state_after(p))]
    checked = 0
    while checked < n_checks:
        prefix = rng.choice(starts)
        m, m_off = c.matcher(), c.matcher()
        m_off._set_use_cache(False)
        assert m.consume_bytes(prefix) == len(prefix) and m_off.consume_bytes(prefix) == len(prefix)
        st = ref.state_after(prefix)
        for step in range(walk_len):
            allowed = _mask(m)
            if step % check_every == check_every - 1:
                ctx = f"[{name}/{vocab_name}] prefix={prefix!r}"
                assert _mask(m_off) == allowed, f"{ctx}: cache on and off disagree"
                assert ref.eos_allowed(st) == bool(eos & allowed), f"{ctx}: EOS"
                if full:
                    assert_same_mask(allowed, ref.mask(st, vocab), vocab, ctx)
                else:
                    ok = ref.mask(st, vocab, subset=allowed)
                    assert_same_mask(allowed, ok, vocab, ctx + " (holes only)")
                    refused = [t for t in range(vocab.vocab_size) if t not in allowed]
                    sample = set(rng.sample(refused, min(2000, len(refused))))
                    wrongly = ref.mask(st, vocab, subset=sample)
                    assert_same_mask(set(), wrongly, vocab, ctx + " (2000 refused tokens)")
                checked += 1
            choices = sorted(allowed - eos)
            if not choices:
                break
            tok = _pick(rng, ref, st, vocab, choices)
            m.consume(tok)
            m_off.consume(tok)
            st = ref.push_tokens(st, vocab, [tok])
            prefix += vocab.token_bytes[tok]
    return checked


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_vocab_no_holes_no_overconstraint(name):
    _real_vocab_walk(name, seed=5, n_checks=4, check_every=3, full=False, walk_len=6)


# SentencePiece in the default run: its "▁word" pieces (a space glued to a
# word) and <0xNN> byte-fallback pieces cross word boundaries and split UTF-8
# characters in ways byte-level BPE does not.
# (Whole masks against the reference: cheap at 32k ids, about 1 s for the largest grammar.)
@pytest.mark.parametrize("name", sorted(CASES))
def test_sentencepiece_vocab_full_masks(name):
    _real_vocab_walk(name, seed=10, n_checks=4, check_every=2, full=True, walk_len=8, vocab_name="sp")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seed", [11, 12, 13, 14, 15])
def test_real_vocab_full_masks(name, seed):
    _real_vocab_walk(name, seed=seed, n_checks=30, check_every=2, full=True, walk_len=10)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["json_builtin", "ignore", "keywords_wb", "arith", "sql", "javascript"])
@pytest.mark.parametrize("vocab_name", ["tekken", "sp"])
def test_other_vocabs_full_masks(name, vocab_name):
    """Mistral tekken (131k ids, 1,000 specials) and SentencePiece (byte fallback)."""
    _real_vocab_walk(name, seed=21, n_checks=8, check_every=2, full=True, walk_len=8, vocab_name=vocab_name)
