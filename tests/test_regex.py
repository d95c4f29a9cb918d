"""regex.py: Python regex -> exact byte DFA.

The oracle is Python itself: a DFA must accept ``s.encode()`` exactly when
``re.fullmatch(pattern, s)`` does, and nothing that is not valid UTF-8.  With
a lookahead, ``s`` followed by the character ``c`` is accepted exactly when
``re.fullmatch("(?:" + pattern + ")" + re.escape(c), s + c)`` matches.
"""

import functools
import os
import re

import lark
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from lark.load_grammar import load_grammar

from cfgmask.errors import GrammarError
from cfgmask.automata import ByteDFA, byte_classes, compile_regex

EXAMPLES = int(os.environ.get("CFGMASK_REGEX_EXAMPLES", "60"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])

# ASCII, non-ASCII text, 4-byte characters, and the characters Python's
# case folding treats specially: long s, Kelvin sign, sharp s and capital
# sharp s, dotted/dotless i, the three sigmas, micro sign, theta forms.
TRICKY = ("abcesxyzABCESXYZ0129_ -.+\"\\/*#\n\r\t\x00\x1f\x7f"
          "éÿĀ€ßẞſKİıΣσςµΜμθϑϴǅ\u00a0\u2028\u0800\uffff"
          "😀\U00010400\U00010428\U0010FFFF")

# Every construct compile_regex supports, one or more times.
PATTERNS = [
    # literals, concatenation, alternation, groups
    r"abc", r"a|b|cd", r"(a|b)*abb", r"(a|)b", r"(?:)", r"x(?:)y",
    r"(?P<word>ab)+(?:cd)?(e)", r"(?:ab|ac|a)(?:c|)", r"é€😀",
    # classes, ranges, negation, escapes
    r"[a-z]+", r"[^a-z]+", r"[^\"\\]*", r"[\u00e9-\u0101]+", r"[\U0001F600-\U0001F64F]+",
    r"\U0010FFFF", r"[\x00-\x7f]+", r"[^\x00-\x7f]", r"[\ud000-\ue000]+", r"[-a]|[a-]|[]a]",
    r"[^\n]*", r"[\w\-]+(?:\.[\w\-]+)*",
    # categories, Unicode and ASCII meaning
    r"\d+", r"\w+", r"\s+", r"\D\W\S", r"[\d\s]+", r"[^\W\d_]+", r"(?a:\w+)", r"(?a)\d\s\w",
    r"(?a:[^\w])", r"(?a:(?u:\w))+",
    # dot
    r".", r"(?s:.)+", r".*", r"(?s).*", r"(?s:(?-s:.))",
    # case-insensitive
    r"(?i:select)", r"(?i)[a-z]+", r"(?i:[^k])", r"(?i:ß|ſ)", r"(?ai:kelvin)", r"(?i:σ+)",
    r"(?i:a(?-i:b)c)", r"(?i:[\U00010400-\U0001044f])", r"(?i:\w)", r"(?i:[a-z\W])",
    r"(?i:[à-ÿ]+)", r"(?i:i|İ)", r"(?i)\U00010400",
    # repeats, greedy and lazy
    r"a{2,4}", r"a{3}", r"(ab){2,}", r"a{0,3}?b+?c*?", r"x??", r"(?:a|bc){1,3}", r"(a?)*b",
    r"(?:a?){3}", r"[ab]{2,5}?",
    # verbose, multiline flags
    "(?x) a  b # comment\n c", r"(?m)ab",
    # typical grammar terminals
    r'"(?:[^"\\\x00-\x1f]|\\.)*"', r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?",
    r"/\*(.|\n)*?\*/", r"#[^\n]*", r"[_a-zA-Z][_a-zA-Z0-9]*", r"(?i:(?s:x+))",
]

SMALL_ALPHABET = 'ab"\\ 1.eSſ\n😀'


@functools.lru_cache(maxsize=None)
def dfa_for(pattern):
    return compile_regex(pattern, name="T")


def check_string(dfa, compiled, s):
    if any(0xD800 <= ord(c) <= 0xDFFF for c in s):
        # No UTF-8 encoding exists; the surrogate's CESU-style bytes are invalid.
        assert not dfa.matches(s.encode("utf-8", "surrogatepass"))
        return
    data = s.encode()
    expected = compiled.fullmatch(s) is not None
    assert dfa.matches(data) == expected, (compiled.pattern, s)
    if expected:
        assert all(dfa.is_prefix(data[:i]) for i in range(len(data) + 1))


def strings_for(pattern):
    noise = st.text(alphabet=TRICKY, max_size=8)
    accepted = st.from_regex(pattern, fullmatch=True)

    def mutate(args):
        s, position, char, delete = args
        position = position % (len(s) + 1)
        return s[:position] + s[position + 1:] if delete else s[:position] + char + s[position:]

    return st.one_of(
        noise,
        accepted,
        st.lists(st.one_of(accepted, st.text(alphabet=TRICKY, max_size=2)),
                 min_size=1, max_size=4).map("".join),
        st.tuples(accepted, st.integers(0, 30), st.sampled_from(TRICKY), st.booleans()).map(mutate),
    )


@pytest.mark.parametrize("pattern", PATTERNS)
def test_matches_python_on_generated_strings(pattern):
    dfa, compiled = dfa_for(pattern), re.compile(pattern)

    @SETTINGS
    @given(strings_for(pattern))
    def check(s):
        check_string(dfa, compiled, s)

    check()


@pytest.mark.parametrize("pattern", PATTERNS)
def test_matches_python_on_all_short_strings(pattern):
    dfa, compiled = dfa_for(pattern), re.compile(pattern)
    strings = [""]
    frontier = [""]
    for _ in range(3):
        frontier = [s + c for s in frontier for c in SMALL_ALPHABET]
        strings += frontier
    for s in strings:
        check_string(dfa, compiled, s)


# ---------------------------------------------------------------------------
# Lark's common.lark
# ---------------------------------------------------------------------------

def common_lark_terminals():
    path = os.path.join(os.path.dirname(lark.__file__), "grammars", "common.lark")
    with open(path) as f:
        text = f.read()
    grammar, _ = load_grammar(text + "\nstart: DIGIT\n", "<common>", [], False)
    terminals, _, _ = grammar.compile(["start"], "*")
    return [(t.name, t.pattern.to_regexp()) for t in terminals]


COMMON = common_lark_terminals()


def test_common_lark_is_complete():
    names = {name for name, _ in COMMON}
    assert {"NUMBER", "SIGNED_NUMBER", "CNAME", "WS", "ESCAPED_STRING", "C_COMMENT"} <= names
    assert len(COMMON) >= 25


@pytest.mark.parametrize("name,pattern", COMMON, ids=[name for name, _ in COMMON])
def test_common_lark_terminal(name, pattern):
    if "(?<" in pattern:
        # ESCAPED_STRING and its inner part use a lookbehind.
        with pytest.raises(GrammarError) as info:
            compile_regex(pattern, name=name)
        assert name in str(info.value) and "lookbehind" in str(info.value)
        return
    dfa, compiled = compile_regex(pattern, name=name), re.compile(pattern)

    @SETTINGS
    @given(strings_for(pattern))
    def check(s):
        check_string(dfa, compiled, s)

    check()
    assert_invariants(dfa)


# ---------------------------------------------------------------------------
# Structural invariants: start 0, trimmed, minimal
# ---------------------------------------------------------------------------

def state_labels(dfa):
    """What each state says on its own: accepting, and under which follow
    restriction; then the implicit dead state (labelled like a plain
    non-accepting state)."""
    ids = {(False, None, False): 0}
    labels = [ids.setdefault((bool(a), f, e), len(ids)) for a, f, e in
              zip(dfa.accepting, dfa.follow_forbidden, dfa.follow_forbidden_at_eos)]
    return np.array(labels + [0], dtype=np.int64)


def moore_classes(dfa):
    """Number of equivalence classes (plain Moore refinement), where states
    with different labels (accepting, follow restriction) differ."""
    # Identical byte columns give identical signatures: keep one of each.
    columns = np.unique(dfa.trans.T, axis=0).T
    trans = np.where(columns >= 0, columns, dfa.n_states)
    trans = np.vstack([trans, np.full((1, trans.shape[1]), dfa.n_states)])
    block = state_labels(dfa)
    while True:
        signature = np.hstack([block[:, None], block[trans]])
        _, new_block = np.unique(signature, axis=0, return_inverse=True)
        new_block = new_block.ravel()
        if len(np.unique(new_block)) == len(np.unique(block)):
            return len(np.unique(new_block)) - 1  # minus the dead state
        block = new_block


def assert_invariants(dfa):
    assert isinstance(dfa, ByteDFA)
    assert dfa.start == 0
    assert dfa.trans.dtype == np.int32 and dfa.trans.shape == (dfa.n_states, 256)
    assert dfa.accepting.dtype == np.bool_ and dfa.accepting.shape == (dfa.n_states,)
    assert dfa.trans.min() >= -1 and dfa.trans.max() < dfa.n_states
    assert len(dfa.follow_forbidden) == len(dfa.follow_forbidden_at_eos) == dfa.n_states
    for accepting, forbidden, at_eos in zip(dfa.accepting, dfa.follow_forbidden,
                                            dfa.follow_forbidden_at_eos):
        assert type(at_eos) is bool
        assert forbidden is None or (type(forbidden) is bytes and forbidden
                                     and list(forbidden) == sorted(set(forbidden)))
        if not accepting:
            assert forbidden is None and not at_eos
        else:  # some way to end is left
            assert not (at_eos and forbidden is not None and len(forbidden) == 256)
    if not dfa.accepting.any():  # empty language: one bare state
        assert dfa.n_states == 1 and (dfa.trans == -1).all()
        return
    # reachable from 0
    seen, stack = {0}, [0]
    while stack:
        for t in set(dfa.trans[stack.pop()].tolist()) - {-1} - seen:
            seen.add(t)
            stack.append(t)
    assert len(seen) == dfa.n_states
    # every state reaches acceptance
    live = dfa.accepting.copy()
    while True:
        nxt = live | (live[np.maximum(dfa.trans, 0)] & (dfa.trans >= 0)).any(axis=1)
        if (nxt == live).all():
            break
        live = nxt
    assert live.all()
    assert moore_classes(dfa) == dfa.n_states


@pytest.mark.parametrize("pattern", PATTERNS)
def test_invariants(pattern):
    assert_invariants(dfa_for(pattern))


@pytest.mark.parametrize("pattern,n_states", [
    (r"a*", 1), (r"(a|b)*abb", 4), (r"abc", 4), (r"a{1,1000}", 1001), (r"(?s:.)", 9),
    (r".", 9), (r"(?s:.)*", 8), (r"[^\x00-\U0010ffff]", 1), (r"\ud800", 1),
])
def test_known_minimal_sizes(pattern, n_states):
    # (?s:.): start, accept, 1/2/3 continuation bytes left, and the four
    # lead bytes with a narrowed second byte (E0, ED, F0, F4).
    dfa = compile_regex(pattern)
    assert dfa.n_states == n_states
    assert_invariants(dfa)


def test_star_is_one_accepting_loop():
    dfa = compile_regex("a*")
    assert dfa.accepting.tolist() == [True]
    assert dfa.trans[0, ord("a")] == 0 and (np.delete(dfa.trans[0], ord("a")) == -1).all()


def test_empty_language():
    dfa = compile_regex(r"[^\x00-\U0010ffff]")
    assert not dfa.matches(b"") and not dfa.is_prefix(b"")
    assert not compile_regex(r"\ud800").matches("\ud800".encode("utf-8", "surrogatepass"))


def test_states_numbered_breadth_first():
    dfa = compile_regex(r"ab|ac|d")
    order = [0]
    for state in order:
        for target in dfa.trans[state].tolist():
            if target >= 0 and target not in order:
                order.append(target)
    assert order == list(range(dfa.n_states))


# ---------------------------------------------------------------------------
# UTF-8 validity
# ---------------------------------------------------------------------------

INVALID_UTF8 = [
    b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xf0\x80\x80\x80",
    b"\xf0\x8f\xbf\xbf",                                   # overlong
    b"\xed\xa0\x80", b"\xed\xbf\xbf",                      # surrogates
    b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xf7\xbf\xbf\xbf",  # > U+10FFFF
    b"\x80", b"\xbf", b"a\x80",                            # stray continuation
    b"\xe2\x82", b"\xf0\x9f\x98", b"\xc3",                 # truncated
    b"\xc3a", b"\xe2a\xac", b"\xfe", b"\xff",
]
INVALID_PREFIXES = [b"\xc0", b"\xc1", b"\xe0\x80", b"\xe0\x9f", b"\xed\xa0", b"\xf0\x80",
                    b"\xf0\x8f", b"\xf4\x90", b"\xf5", b"\xf8", b"\xff", b"\x80", b"\xc3a"]
VALID_PREFIXES = [b"\xe2\x82", b"\xe2", b"\xf0\x9f\x98", b"\xf4\x8f\xbf", b"\xed\x9f",
                  b"\xe0\xa0", b"\xc2"]
ANY_CHAR_PATTERNS = [r"(?s:.)", r".", r"[^\"]", r"[^a]", r"\W", r"(?i:[^k])", r"[^\x00-\x7f]",
                     r"(?s:.)*", r"[^\"\\]*"]


@pytest.mark.parametrize("pattern", ANY_CHAR_PATTERNS)
def test_invalid_utf8_rejected(pattern):
    dfa = compile_regex(pattern)
    repeat = pattern.endswith("*")
    for data in INVALID_UTF8:
        for prefix in ([b"", "é".encode()] if repeat else [b""]):
            assert not dfa.matches(prefix + data), (pattern, data)
    for data in INVALID_PREFIXES:
        assert not dfa.is_prefix(data), (pattern, data)
        if repeat:
            assert not dfa.is_prefix(b"x" + data), (pattern, data)
    for data in VALID_PREFIXES:
        assert dfa.is_prefix(data) and not dfa.matches(data), (pattern, data)


@functools.lru_cache(maxsize=1)
def utf8_encodings_and_prefixes():
    encodings = {chr(c).encode() for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF}
    prefixes = {e[:i] for e in encodings for i in range(len(e) + 1)}
    return encodings, prefixes


@pytest.mark.parametrize("pattern", [r"(?s:.)", r"[^\"]"])
def test_every_two_byte_string(pattern):
    """All 65,536 two-byte strings and all 256 one-byte strings, against
    Python's own UTF-8 decoder."""
    encodings, prefixes = utf8_encodings_and_prefixes()
    dfa = compile_regex(pattern)
    excluded = {b""} if pattern.startswith("(?s") else {b"", b'"'}
    for first in range(256):
        for data in [bytes([first])] + [bytes([first, second]) for second in range(256)]:
            assert dfa.is_prefix(data) == (data in prefixes and data not in excluded), data
            assert dfa.matches(data) == (data in encodings and data not in excluded), data


@given(st.binary(min_size=1, max_size=6))
@SETTINGS
def test_random_bytes_against_decoder(data):
    dfa = compile_regex(r"(?s:.)*")
    try:
        data.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert dfa.matches(data) == valid
    _, prefixes = utf8_encodings_and_prefixes()
    # valid prefix = valid text followed by a prefix of one character
    tail_start = max([i for i in range(len(data) + 1)
                      if _decodes(data[:i])], default=0)
    assert dfa.is_prefix(data) == (data[tail_start:] in prefixes and len(data) - tail_start < 4)


def _decodes(data):
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


# ---------------------------------------------------------------------------
# Exhaustive single-character checks (case folding, categories)
# ---------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def all_chars():
    return "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)


@functools.lru_cache(maxsize=1)
def utf8_byte_table():
    """[n_chars, 4] UTF-8 bytes of every scalar value, and their lengths."""
    text = all_chars()
    code_points = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
    lengths = (1 + (code_points >= 0x80) + (code_points >= 0x800)
               + (code_points >= 0x10000)).astype(np.int64)
    flat = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    table = np.zeros((len(text), 4), dtype=np.uint8)
    for position in range(4):
        has = lengths > position
        table[has, position] = flat[offsets[has] + position]
    return table, lengths


def dfa_single_chars(dfa):
    """Which scalar values (as one-character strings) the DFA accepts."""
    table, lengths = utf8_byte_table()
    state = np.zeros(len(lengths), dtype=np.int64)
    for position in range(4):
        active = (lengths > position) & (state >= 0)
        state[active] = dfa.trans[state[active], table[active, position]]
    return (state >= 0) & dfa.accepting[np.maximum(state, 0)]


def python_single_chars(pattern):
    fullmatch = re.compile(pattern).fullmatch
    return np.array([fullmatch(c) is not None for c in all_chars()])


def assert_same_single_chars(pattern):
    got, expected = dfa_single_chars(compile_regex(pattern)), python_single_chars(pattern)
    wrong = np.flatnonzero(got != expected)[:10]
    assert not len(wrong), (pattern, [all_chars()[i] for i in wrong])


CASE_CHARS = ["s", "k", "ß", "i", "σ", "µ", "θ", "ǅ", "ﬅ", "\U00010400", "İ", "ı", "ς", "K", "ſ",
              "ẞ", "A", "1", "_", "é", "ÿ", "Ω"]
FAST_CASE_PATTERNS = [r"(?i:s)", r"(?i:k)", r"(?i:İ)", r"(?i:[^σ])", r"(?ai:K)",
                      r"(?i:\U00010400)", r"\w", r"(?i:[a-z])"]


@pytest.mark.parametrize("pattern", FAST_CASE_PATTERNS)
def test_single_char_exhaustive(pattern):
    assert_same_single_chars(pattern)


@pytest.mark.slow
@pytest.mark.parametrize("pattern", [
    *(f"(?i:{re.escape(c)})" for c in CASE_CHARS),
    *(f"(?i:[{re.escape(c)}{re.escape(c)}])" for c in CASE_CHARS),
    *(f"(?i:[^{re.escape(c)}])" for c in CASE_CHARS),
    *(f"(?ai:{re.escape(c)})" for c in CASE_CHARS),
    r"(?i:\w)", r"(?i:[^\W\d])", r"(?i:[\U00010400-\U0001044f])", r"(?i:[à-ÿ])", r"(?i:[a-z\W])",
    r"(?i:[\u0100-\u017f])", r"(?i:[^\u0370-\u03ff])", r"(?ai:[^a-z])", r"(?i:[\s\d])",
    r"\d", r"\s", r"\W", r"\D", r"\S", r"(?a:\w)", r"(?a:\W)", r".", r"(?s:.)", r"[^\"]",
])
def test_single_char_exhaustive_slow(pattern):
    assert_same_single_chars(pattern)


# ---------------------------------------------------------------------------
# Refused constructs
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("pattern,construct", [
    (r"(?<=a)b", "lookbehind"),
    (r"(?<!a)b", "negative lookbehind"),
    (r"a(?<!a)", "negative lookbehind"),
    (r"a(?=bc)", "lookahead over more than one character"),
    (r"a(?!bc)", "negative lookahead over more than one character"),
    (r"a(?!b*)", "negative lookahead over more than one character"),
    (r"a(?!b|cd)", "negative lookahead over more than one character"),
    (r"a(?!b$)", "negative lookahead over more than one character"),
    (r"a(?!(?=b))", "negative lookahead over more than one character"),
    (r"a(?!b{1,2})", "negative lookahead over more than one character"),
    (r"a(?!)", "negative lookahead over an empty pattern"),
    (r"a(?=)", "lookahead over an empty pattern"),
    (r"a(?!é)", "negative lookahead over non-ASCII characters"),
    (r"a(?=[a-zé])", "lookahead over non-ASCII characters"),
    (r"a(?=.)", "lookahead over non-ASCII characters"),
    (r"a(?![^b])", "negative lookahead over non-ASCII characters"),
    (r"a(?!\d)", "negative lookahead over non-ASCII characters"),
    (r"a(?![\w.])", "negative lookahead over non-ASCII characters"),
    (r"(?i:a(?!k))", "negative lookahead over non-ASCII characters"),  # Kelvin sign
    (r"(?i:a(?=s))", "lookahead over non-ASCII characters"),           # long s
    (r"(?i:a(?![a-z]))", "negative lookahead over non-ASCII characters"),
    (r"(a)\1", "backreference"),
    (r"(?P<x>a)(?P=x)", "backreference"),
    (r"(a)?(?(1)b|c)", "conditional"),
    (r"a\b", "anchor \\b"),
    (r"\Ba", "anchor \\B"),
    (r"^a", "anchor ^"),
    (r"a$", "anchor $"),
    (r"\Aa", "anchor \\A"),
    (r"a\Z", "anchor \\Z"),
    (r"(?>ab)", "atomic group"),
    (r"a++", "possessive repeat"),
    (r"a(", "regex syntax"),
    (r'".*?(?<!\\)(\\\\)*?"', "negative lookbehind"),
])
def test_refused_constructs(pattern, construct):
    with pytest.raises(GrammarError) as info:
        compile_regex(pattern, name="MY_TERM")
    error = info.value
    assert "MY_TERM" in str(error) and construct in str(error)
    assert error.where == "MY_TERM" and error.construct.startswith(construct)


@pytest.mark.parametrize("pattern,max_states", [
    (r"(a|b){1,5000}", 1000),
    (r"(\w\d){1,60}", 5000),  # small over characters, large in UTF-8
    (r"\w{1,100}", 2000),
    (r"(?:a|b)*a(?:a|b){12}", 1000),  # subset construction blow-up
])
def test_automaton_too_large(pattern, max_states):
    with pytest.raises(GrammarError) as info:
        compile_regex(pattern, name="BIG", max_states=max_states)
    error = info.value
    assert "BIG" in str(error) and "too large" in str(error)
    assert error.where == "BIG" and error.construct == "automaton size"


def test_large_but_allowed():
    assert compile_regex(r"a{1000,}").n_states == 1001
    assert compile_regex(r"(a|b){1,500}").n_states == 501


def test_compile_time_of_big_classes():
    import time
    from cfgmask.automata import memo, parse, unicode_tables
    parse.char_ranges.cache_clear()
    memo.DFA_MEMO.clear()
    unicode_tables.scan_ranges.cache_clear()
    start = time.perf_counter()
    compile_regex(r"\w+")
    compile_regex(r'"(?:[^"\\\x00-\x1f]|\\.)*"')
    assert time.perf_counter() - start < 2.0


# ---------------------------------------------------------------------------
# ByteDFA helpers and byte classes
# ---------------------------------------------------------------------------

def test_matches_and_is_prefix():
    dfa = compile_regex(r'"(?:[^"\\]|\\.)*"')
    assert dfa.matches(b'"a\\"b"') and not dfa.matches(b'"a\\"')
    assert dfa.is_prefix(b"") and dfa.is_prefix(b'"abc\\') and dfa.is_prefix(b'"a"')
    assert not dfa.is_prefix(b'"a"b') and not dfa.is_prefix(b"x")
    assert dfa.is_prefix('"€'.encode()[:3])
    assert dfa.run(b'"a') >= 0 and dfa.run(b'x') == -1


BYTE_CLASS_PATTERNS = [r"[a-z]+", r"\d+", r'"(?:[^"\\]|\\.)*"', r"(?s:.)", r"(?i:select)",
                       r"\w+", r"[ \t\n]+", r"-?\d+(?:\.\d+)?",
                       r"[a-z]+(?![0-4_])", r"0(?![1-9])", r"x(?=[p-r])"]


def check_byte_classes(dfas):
    class_of, n_classes = byte_classes(dfas)
    assert class_of.dtype == np.uint8 and class_of.shape == (256,)
    assert sorted(set(class_of.tolist())) == list(range(n_classes))
    # numbered by first appearance
    assert [c for i, c in enumerate(class_of.tolist()) if c not in class_of[:i]] == list(range(n_classes))
    columns = np.concatenate([d.trans for d in dfas], axis=0).T if dfas else np.zeros((256, 0))
    forbidden = [f for d in dfas for f in d.follow_forbidden if f is not None]
    membership = np.array([[b in f for f in forbidden] for b in range(256)]).reshape(256, -1)
    columns = np.hstack([columns, membership])
    for b1 in range(256):
        # same class <=> same target in every state of every DFA, and in
        # every follow_forbidden set both or neither
        same_column = (columns == columns[b1]).all(axis=1)
        assert (same_column == (class_of == class_of[b1])).all(), b1


@given(st.lists(st.sampled_from(BYTE_CLASS_PATTERNS), max_size=4, unique=True))
@settings(max_examples=15, deadline=None)
def test_byte_classes(patterns):
    check_byte_classes([dfa_for(p) for p in patterns])


def test_byte_classes_examples():
    class_of, n = byte_classes([compile_regex(r"[a-c]+")])
    assert n == 2 and class_of[ord("a")] == class_of[ord("c")] == 1 and class_of[0] == 0
    class_of, n = byte_classes([compile_regex(r"[a-c]+"), compile_regex(r"b")])
    assert n == 3 and class_of[ord("a")] != class_of[ord("b")] and class_of[ord("a")] == class_of[ord("c")]
    class_of, n = byte_classes([])
    assert n == 1 and not class_of.any()
    # A follow restriction splits bytes whose transitions agree.
    class_of, n = byte_classes([compile_regex(r"[a-z]+(?![0-4])")])
    assert n == 3 and class_of[ord("0")] == class_of[ord("4")] != class_of[ord("5")]
    assert class_of[ord("5")] == class_of[ord("9")] == class_of[0]
    class_of, n = byte_classes([compile_regex(r"x(?=a)")])  # forbids every byte but "a"
    assert n == 3 and len({class_of[ord("a")], class_of[ord("x")], class_of[ord("b")]}) == 3


# ---------------------------------------------------------------------------
# Single-character lookahead
# ---------------------------------------------------------------------------

def python_accepts(pattern, s, c):
    """Does ``pattern`` match exactly ``s`` when the character ``c`` follows
    (``None``: nothing follows)?  Lookaheads at the end of the match see ``c``."""
    if c is None:
        return _compiled(pattern).fullmatch(s) is not None
    return _compiled("(?:%s)%s" % (pattern, re.escape(c))).fullmatch(s + c) is not None


@functools.lru_cache(maxsize=None)
def _compiled(pattern):
    return re.compile(pattern)


def dfa_accepts(dfa, s, c):
    data = s.encode()
    if c is None:
        assert dfa.matches_followed_by(data, None) == dfa.matches(data)
        return dfa.matches(data)
    return dfa.matches_followed_by(data, c.encode()[0])


def check_followed(dfa, pattern, s, c):
    expected = python_accepts(pattern, s, c)
    assert dfa_accepts(dfa, s, c) == expected, (pattern, s, c)
    if expected:
        data = s.encode()
        assert all(dfa.is_prefix(data[:i]) for i in range(len(data) + 1)), (pattern, s)


def lark_lark_terminals():
    path = os.path.join(os.path.dirname(lark.__file__), "grammars", "lark.lark")
    with open(path) as f:
        text = f.read()
    grammar, _ = load_grammar(text, "<lark>", [], False)
    terminals, _, _ = grammar.compile(["start"], "*")
    return {t.name: t.pattern.to_regexp() for t in terminals}


LARK = lark_lark_terminals()

# (pattern, alphabet): every string over the alphabet up to length 4 (3 for
# long alphabets), followed by each alphabet character, a non-ASCII one, or
# nothing.
LOOKAHEAD_PATTERNS = [
    # Lark's lark.lark
    (LARK["OP"], "+*?az"),
    (LARK["REGEXP"], "/\\aié"),
    # end of the match: number and keyword style
    (r"0(?![1-9])", "019a"),
    (r"(?:0|[1-9][0-9]*)(?![0-9a-z])", "019a"),
    (r"(?:if|else)(?![A-Za-z0-9_])", "ifelsx_ "),
    (r"(?:if|else)(?!\w)", "ifels_"),  # \w after a keyword: refused, see below
    (r"[a-z]+(?![0-9_])", "ab0_"),
    (r"é(?!a)", "éab"),
    (r"€+(?=[a-z])", "€a1"),
    (r"a(?![\x00-\x7f])", "abé"),
    (r"(?ai:if(?![a-z]))", "iIfFa"),
    (r"(?i:x(?![0-9_]))", "xX0_"),
    (r"(?a:\d+(?![\d.]))", "01.a"),
    (r"(?a:\w+(?!\s))", "ab \t"),
    # positive lookahead
    (r"a(?=b)", "ab"),
    (r"[a-z]+(?=\()", "ab("),
    (r"a(?=[bc])b?", "abc"),
    (r"(?=[a-c])\w+", "adé_"),
    # lookahead in the middle (constrains the next consumed character)
    (r"\/(?!\/)[^\n]*", "/a\n"),
    (r"a(?!b)[a-c]+", "abc"),
    (r"x(?=[0-9])\w+", "x0a"),
    (r"(?!x)[a-z]+", "xab"),
    (r"(?!b)(?:a|b)(?=a)a", "ab"),
    # several in a row: constraints combine
    (r"a(?!b)(?!c)", "abcd"),
    (r"a(?=[bc])(?!b)", "abc"),
    (r"a(?=b)(?!b)", "ab"),  # nothing
    (r"a(?=[b-d])(?=[c-e])", "abcdef"),
    (r"a(?!b)(?=[b-d])c?", "abcd"),
    # alternation: a lexeme may end where some path allows it
    (r"a(?!b)|ab|b(?=a)", "ab"),
    (r"a(?!b)|a", "ab"),
    (r"a(?![bc])|a(?![cd])", "abcde"),
    (r"a(?=b)|a(?!c)", "abc"),
    (r"(?:a(?!b)|ab)c?", "abc"),
    (r"x(?:(?!a)|b)", "xab"),
    # repetition
    (r"(?:a(?!a)|b)+", "ab"),
    (r"(?:(?=a)[a-c])*b", "abc"),
    (r"(?:x(?!y))+", "xy"),
    (r"(?:x?(?!a))+", "xa"),
    (r"(?:(?!a)x?)*b", "xab"),
    (r"(?:a(?=b)|b(?=a))+", "ab"),
    (r"(?:ab(?!c)){2,3}", "abc"),
    (r"a+?(?!a)", "ab"),
    (r"(?:a|b(?!a)){1,3}?", "ab"),
    # bodies: groups, alternations, repeats of one, classes of categories
    (r"x(?!(?:a|[bc]|(d)))", "xabde"),
    (r"x(?!a{1})", "xa"),
    (r"x(?![^\x00-\U0010ffff])", "xa"),  # empty set: no constraint
    (r"x(?=[^\x00-\U0010ffff])", "xa"),  # empty set: never
]
LOOKAHEAD_PATTERNS.remove((r"(?:if|else)(?!\w)", "ifels_"))
LOOKAHEAD_IDS = [pattern for pattern, _ in LOOKAHEAD_PATTERNS]


def short_strings(alphabet, max_length):
    strings, frontier = [""], [""]
    for _ in range(max_length):
        frontier = [s + c for s in frontier for c in alphabet]
        strings += frontier
    return strings


@pytest.mark.parametrize("pattern,alphabet", LOOKAHEAD_PATTERNS, ids=LOOKAHEAD_IDS)
def test_lookahead_all_short_strings(pattern, alphabet):
    dfa = compile_regex(pattern, name="T")
    assert_invariants(dfa)
    followers = list(dict.fromkeys(alphabet + "Zé😀")) + [None]
    for s in short_strings(alphabet, 4 if len(alphabet) <= 5 else 3):
        for c in followers:
            check_followed(dfa, pattern, s, c)


def without_lookaheads(pattern):
    """A pattern accepting a superset of ``pattern``'s strings (lookaheads
    with simple bodies removed), for generating candidates."""
    return re.sub(r"\(\?[=!](?:\\.|\[(?:\\.|[^\]\\])*\]|[^()\\])*\)", "", pattern)


@pytest.mark.parametrize("pattern,alphabet", LOOKAHEAD_PATTERNS, ids=LOOKAHEAD_IDS)
def test_lookahead_generated_strings(pattern, alphabet):
    dfa = compile_regex(pattern, name="T")
    noise = st.text(alphabet=alphabet + TRICKY, max_size=8)
    candidates = [noise]
    try:
        candidates.append(st.from_regex(without_lookaheads(pattern), fullmatch=True))
    except re.error:
        pass
    strings = st.one_of(*candidates, st.lists(st.one_of(*candidates), min_size=1,
                                              max_size=3).map("".join))
    followers = st.one_of(st.none(), st.sampled_from(alphabet + TRICKY))

    @SETTINGS
    @given(strings, followers)
    def check(s, c):
        if any(0xD800 <= ord(x) <= 0xDFFF for x in s):
            return
        check_followed(dfa, pattern, s, c)

    check()


def test_without_lookaheads_helper():
    assert without_lookaheads(r"a(?![a-z)])b(?=\()c") == "abc"
    assert without_lookaheads(LARK["OP"]) == "[+*]|[?]"


@pytest.mark.parametrize("name", sorted(LARK))
def test_lark_lark_terminal(name):
    pattern = LARK[name]
    if "(?<" in pattern:
        # _STRING and STRING use a lookbehind.
        with pytest.raises(GrammarError) as info:
            compile_regex(pattern, name=name)
        assert name in str(info.value) and "lookbehind" in str(info.value)
        return
    dfa = compile_regex(pattern, name=name)
    assert_invariants(dfa)

    @settings(SETTINGS, max_examples=max(10, EXAMPLES // 2))
    @given(strings_for(without_lookaheads(pattern)),
           st.one_of(st.none(), st.sampled_from("/+*?az \n(é")))
    def check(s, c):
        if any(0xD800 <= ord(x) <= 0xDFFF for x in s):
            return
        check_followed(dfa, pattern, s, c)

    check()


def test_lark_op_terminal():
    dfa = compile_regex(LARK["OP"], name="OP")
    assert LARK["OP"] == r"[+*]|[?](?![a-z])"
    question = dfa.run(b"?")
    assert dfa.follow_forbidden[question] == bytes(range(ord("a"), ord("z") + 1))
    assert dfa.follow_forbidden_at_eos == [False] * dfa.n_states
    assert dfa.matches(b"?") and dfa.matches_followed_by(b"?", ord("A"))
    assert not dfa.matches_followed_by(b"?", ord("a")) and not dfa.matches_followed_by(b"?", ord("z"))
    assert dfa.matches_followed_by(b"?", "é".encode()[0]) and dfa.matches_followed_by(b"?", 0xFF)
    plus = dfa.run(b"+")
    assert dfa.follow_forbidden[plus] is None and dfa.matches_followed_by(b"+", ord("a"))
    assert dfa.can_end(plus, ord("a")) and not dfa.can_end(question, ord("a"))
    assert not dfa.can_end(-1) and not dfa.can_end(0)
    assert dfa.has_follow_restrictions


def test_lark_regexp_terminal():
    # The lookahead is in the middle: it only rules out "//" at the start.
    dfa = compile_regex(LARK["REGEXP"], name="REGEXP")
    assert not dfa.has_follow_restrictions
    assert dfa.run(b"//") == -1 and dfa.matches(b"/a/") and dfa.matches(b"/a/imx")
    assert dfa.matches(rb"/\//") and dfa.matches(rb"/a\\/")
    assert dfa.matches(rb"/\/")  # a lone backslash is a [^/] character too
    assert not dfa.matches(b"/a") and not dfa.matches(b"/") and dfa.run(b"//i") == -1
    assert dfa.matches("/é/".encode()) and dfa.is_prefix(b"/a")


def test_keyword_and_number_style():
    dfa = compile_regex(r"(?:if|else)(?![A-Za-z0-9_])")
    assert dfa.matches(b"if") and dfa.matches_followed_by(b"if", ord(" "))
    assert not dfa.matches_followed_by(b"if", ord("x")) and not dfa.matches_followed_by(b"else", ord("_"))
    assert dfa.matches_followed_by(b"if", "é".encode()[0])  # é is not in the set
    zero = compile_regex(r"0(?![1-9])")
    assert zero.matches(b"0") and zero.matches_followed_by(b"0", ord("0"))
    assert not zero.matches_followed_by(b"0", ord("5")) and zero.matches_followed_by(b"0", ord("."))


def test_positive_lookahead_at_end():
    dfa = compile_regex(r"[a-z]+(?=\()")
    end = dfa.run(b"f")
    assert dfa.follow_forbidden_at_eos[end] and not dfa.matches(b"f")
    assert dfa.follow_forbidden[end] == bytes(b for b in range(256) if b != ord("("))
    assert dfa.matches_followed_by(b"f", ord("(")) and not dfa.matches_followed_by(b"f", ord(")"))
    assert not dfa.matches_followed_by(b"f", 0xC3)  # no non-ASCII character is "("
    assert dfa.is_prefix(b"f")


@pytest.mark.parametrize("pattern,n_states,restrictions", [
    # (pattern, states, {input: (follow_forbidden, at_eos)}) for accepting states
    (r"a(?!b)|c", 3, {b"a": (b"b", False), b"c": (None, False)}),
    (r"a(?!b)|c(?!b)", 2, {b"a": (b"b", False), b"c": (b"b", False)}),
    (r"a(?!b)|a", 2, {b"a": (None, False)}),
    (r"a(?!b)|a(?!c)", 2, {b"a": (None, False)}),
    (r"a(?![bc])|a(?![cd])", 2, {b"a": (b"c", False)}),
    (r"a(?=b)|a", 2, {b"a": (None, False)}),
    (r"a(?=b)|a(?!c)", 2, {b"a": (b"c", False)}),
    (r"a(?=[bc])|a(?=[cd])", 2, {b"a": (bytes(b for b in range(256) if b not in b"bcd"), True)}),
    (r"a(?=b)(?!b)", 1, {}),
    (r"a(?=b)b", 3, {b"ab": (None, False)}),
    (r"a(?!b)b", 1, {}),
    (r"(?:a(?!a))+", 2, {b"a": (b"a", False)}),
])
def test_restrictions_and_minimal_sizes(pattern, n_states, restrictions):
    dfa = compile_regex(pattern)
    assert_invariants(dfa)
    assert dfa.n_states == n_states
    for data, (forbidden, at_eos) in restrictions.items():
        state = dfa.run(data)
        assert dfa.accepting[state]
        assert (dfa.follow_forbidden[state], dfa.follow_forbidden_at_eos[state]) == (forbidden, at_eos)
    assert dfa.accepting.sum() == len(set(dfa.run(d) for d in restrictions))


def test_lookahead_error_message():
    with pytest.raises(GrammarError) as info:
        compile_regex(r"a(?!bc)", name="X")
    assert str(info.value).startswith("terminal X: negative lookahead over more than one character "
                                      "is not supported")
    with pytest.raises(GrammarError) as info:
        compile_regex(r"(?i:a(?!k))", name="X")
    assert "(?a)" in str(info.value)
    # Folding within ASCII is fine: (?ai) and characters without non-ASCII folds.
    assert compile_regex(r"(?ai:a(?!k))").follow_forbidden[1] == b"Kk"
    assert compile_regex(r"(?i:a(?!x))").follow_forbidden[1] == b"Xx"


def test_byte_dfa_defaults():
    dfa = ByteDFA(np.full((2, 256), -1), [False, True])
    assert dfa.follow_forbidden == [None, None] and dfa.follow_forbidden_at_eos == [False, False]
    assert not dfa.has_follow_restrictions and dfa.matches_followed_by(b"", None) is False
    dfa = ByteDFA(np.full((1, 256), -1), [True], follow_forbidden=[b"ba"], follow_forbidden_at_eos=[1])
    assert dfa.follow_forbidden == [b"ab"] and dfa.follow_forbidden_at_eos == [True]
    assert not dfa.matches(b"") and dfa.matches_followed_by(b"", ord("c"))


def test_precomputed_unicode_scans_equal_a_fresh_scan():
    """Every answer tools/unicode_scans.py wrote equals what ``re`` says now, and
    scan_ranges uses them only for the Unicode database they were made for."""
    import unicodedata
    from cfgmask.automata import unicode_scans, unicode_tables as ut
    if unicode_scans.UNIDATA_VERSION != unicodedata.unidata_version:
        assert ut._precomputed("\\s", 0) is None
        pytest.skip(f"unicode_scans.py was made for Unicode {unicode_scans.UNIDATA_VERSION}, "
                    f"this Python has {unicodedata.unidata_version}: rerun python -m tools.unicode_scans")
    assert len(unicode_scans.SCANS) == 268
    for (rx, flags) in unicode_scans.SCANS:
        got = ut._precomputed(rx, flags)
        assert got == ut.scan_ranges_by_re(rx, flags), (rx, flags)
        assert got == ut.scan_ranges(rx, flags)


def test_literal_patterns_spelled_directly_equal_the_pipeline(monkeypatch):
    # a pattern that is a chain of characters (literals, ASCII classes) skips the
    # NFA: its chain of bytes must be exactly the pipeline's minimal automaton (and
    # IGNORECASE, other classes, a surrogate or a too long chain still take the pipeline)
    import random
    import cfgmask
    from cfgmask.automata import pipeline
    patterns = ["a", "true", re.escape("{"), re.escape("<=>"), "caf\u00e9", "\U0001f600x", "a b\nc",
                "(?i)select", "[ab]", "(?:ab)", "\\ud800", "[Ww][Hh][Ee][Rr][Ee]", "(?:e|E)(?:x|X)_",
                "[a-c]x", "\u00e9[ab]\u00e9", "[ -~]", "[\\x00-\\x7f]\U0001f600", "(?:a|b|c)d"]
    rng = random.Random(4)
    for _ in range(200):      # random chains of literals and ASCII classes
        parts = []
        for _ in range(rng.randint(1, 6)):
            if rng.random() < 0.5:
                parts.append(re.escape(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0xa0, 0x3000)]))))
            else:
                lo = rng.randrange(32, 120)
                parts.append("[" + re.escape(chr(lo)) + "-" + re.escape(chr(rng.randrange(lo, 127)))
                             + re.escape(chr(rng.randrange(32, 127))) + "]")
        patterns.append("".join(parts))
    for name in ("json", "sql", "javascript"):
        patterns += cfgmask.Grammar.builtin(name).terminal_patterns
    direct = 0
    for p in patterns:
        try:
            parsed = re._parser.parse(p, 0)
        except re.error:
            continue
        chain = pipeline.literal_dfa(parsed, p, "t", 20000)
        if chain is None:
            continue
        direct += 1
        with monkeypatch.context() as m:
            m.setattr(pipeline, "literal_dfa", lambda *a: None)
            ref = pipeline.regex_to_dfa(p, "t")
        assert np.array_equal(chain.trans, ref.trans) and np.array_equal(chain.accepting, ref.accepting), p
        assert chain.follow_forbidden == ref.follow_forbidden and \
            chain.follow_forbidden_at_eos == ref.follow_forbidden_at_eos, p
    assert direct > 400
    for p in ("(?i)select", "[^a]b", "[\\d]x", "[a\u00e9]", "\\w", "\\ud800", "a*", "a|bc", "a(?!b)"):
        assert pipeline.literal_dfa(re._parser.parse(p, 0), p, "t", 20000) is None, p
    assert pipeline.literal_dfa(re._parser.parse("abcd", 0), "abcd", "t", 4) is None
    assert pipeline.literal_dfa(re._parser.parse("[ab]c[de]", 0), "[ab]c[de]", "t", 3) is None


def test_nested_plus_builds_each_body_once():
    # x+ is one copy of x that loops back to its own start: nested "+" used to
    # double the NFA at every level (x then x*), 2**10 copies of "a" here; the
    # language is unchanged (the DFA is still the minimal one of the pattern)
    from cfgmask.automata.nfa import NFA
    pattern = "(?:" * 10 + "a" + ")+" * 10 + "b"
    parsed = re._parser.parse(pattern, 0)
    nfa = NFA("t", limit=10 ** 6)
    start = nfa.new_state()
    nfa.build(parsed, parsed.state.flags, start)
    assert len(nfa.char_moves) < 60
    dfa = compile_regex(pattern)
    for s, ok in (("ab", True), ("aaab", True), ("b", False), ("aa", False)):
        assert dfa.matches(s.encode()) == ok == bool(re.fullmatch(pattern, s)), s


def test_min_width_is_zero_is_the_parsers_own_answer():
    # Lark refuses a terminal that can match the empty string, by re._parser's
    # minimum width; the loader asks min_width_is_zero, which stops at the first
    # item that needs a character: it must answer exactly as getwidth does
    import cfgmask
    from cfgmask.automata.parse import min_width_is_zero
    from cfgmask.automata.reparse import parse as compiled_parse
    patterns = [p for p in PATTERNS if isinstance(p, str)]
    patterns += ["", "a*", "(?:a|)", "(?=a)", "a{0,3}", "(a)\\1", "(a)?\\1", "(?(1)a|)", "(?>a*)b?",
                 "x*+", "\\b", "(?:)+a", "[^a]?", "(?:a?){5}", "(?:a|b?)c?", "(a)(?(1)|b)"]
    for name in ("json", "sql", "javascript"):
        patterns += cfgmask.Grammar.builtin(name).terminal_patterns
    checked = zero = 0
    for p in patterns:
        try:
            want = re._parser.parse(p, 0).getwidth()[0] == 0
            trees = [re._parser.parse(p, 0), compiled_parse(p)]
        except re.error:
            continue
        for tree in trees:
            assert min_width_is_zero(tree) == want, p
        checked += 1
        zero += want
    assert checked > 200 and zero > 10


def test_lexer_class_rows_match_the_numpy_reference(monkeypatch):
    """engine.lexer._class_rows (the C kernel stacked_columns: every terminal's
    rows read at the class representatives, without a whole-width stack)
    equals the NumPy reference, with terminals big and small in any order,
    and CFGMASK_PURE_AUTOMATA=1 runs the reference."""
    from cfgmask.automata import kernels
    from cfgmask.engine import lexer
    monkeypatch.delenv(kernels.PURE_ENV, raising=False)
    small = [compile_regex(p, name="s") for p in ("a", "[0-9]+", "(?:ab|cd)*e", "\\w")]
    big = [compile_regex("[a-z0-9]{0,%d}x" % n, name="b") for n in (1100, 1500)]
    for dfas in (small[:1], small, big, big[:1] + small + big[1:], small[:2] + big + small[2:]):
        class_of, _n = byte_classes(dfas)
        rep = np.unique(class_of, return_index=True)[1].astype(np.int64)
        want = np.concatenate([d.trans for d in dfas]).take(rep, axis=1)
        got = lexer._class_rows(dfas, rep)
        assert got.dtype == np.int32 and got.flags.c_contiguous and np.array_equal(got, want)
        assert np.array_equal(lexer._class_rows_python(dfas, rep), want)
    monkeypatch.setenv(kernels.PURE_ENV, "1")
    calls = []
    monkeypatch.setattr(lexer, "_class_rows_python", lambda dfas, rep: calls.append(1) or want)
    lexer._class_rows(dfas, rep)
    assert calls == [1]
