"""Python regex -> exact, minimal byte-level DFA.

``compile_regex(pattern, name)`` returns a :class:`ByteDFA` with these
invariants (the rest of cfgmask relies on every one of them):

* **UTF-8 exact**: it accepts exactly ``{s.encode("utf-8") :
  re.fullmatch(pattern, s)}``, flags included.  No overlong form, surrogate
  (U+D800..U+DFFF), code point above U+10FFFF, stray continuation byte or
  truncated sequence is ever accepted.
* **follow restrictions** (only from a lookahead at the end of a match, see
  below): ``accepting[s]`` means a lexeme *may* end in ``s``;
  ``follow_forbidden[s]`` (``None`` or sorted ``bytes``) lists the bytes
  before which it may not, and ``follow_forbidden_at_eos[s]`` says it may
  not end at end of input.  Exactly: ``s`` followed by the character ``c``
  is accepted (``matches_followed_by(s.encode(), c.encode()[0])``) iff
  ``re.fullmatch("(?:" + pattern + ")" + re.escape(c), s + c)``, and with
  nothing after it (``matches``) iff ``re.fullmatch(pattern, s)``.
  Non-accepting states have ``None`` / ``False``; an accepting state always
  has some byte or the end of input left after which it may end.
* **start = 0**, ``trans[s, b] == -1`` means dead; there is no explicit dead
  state.
* **trimmed**: every state is reachable from 0 and can reach an accepting
  state, so "not -1" means "still a prefix of some accepted string" (with a
  byte or the end of input after it that its restriction allows; and that
  string is valid UTF-8).  The one exception is a pattern that matches
  nothing: one non-accepting state with no transitions.
* **minimal**: no two states accept the same language under the same
  follow restrictions (states with different ``(accepting,
  follow_forbidden, follow_forbidden_at_eos)`` are never merged);
  deterministic; states numbered breadth-first from 0 (bytes visited in
  increasing order).

Pipeline: Python's own parser (``re._parser``, so syntax and flags mean what
they mean to ``re``) -> NFA over *characters* (each character node one move
labelled with code point ranges) -> subset construction over the code point
*atoms* (the coarsest partition that every class and lookahead set is a union
of) -> trimming and minimisation (Moore refinement, vectorised, then
Hopcroft), which folds every state that cannot reach acceptance into one dead
block that is dropped -> UTF-8 spelling (lead-byte edges into continuation
states shared per "bytes left, target of each possible rest") -> breadth-first
renumbering by byte.  Working on characters keeps a class such as ``[^a]``
one move instead of a dozen byte states (SQL's 19 KB IDENT terminal: 1,071
subsets instead of 6,069); because UTF-8 is a prefix code the spelled
automaton is still minimal, so the result is exactly the canonical minimal
DFA a byte-level construction gives.

Supported: literals, classes (ranges, negation, ``\\d \\w \\s \\D \\W \\S``),
``.`` with and without DOTALL, IGNORECASE (exactly Python's folding, ASCII
under ``a``), alternation, all groups, greedy/lazy repeats, inline and scoped
flags, and single-character lookahead ``(?!C)`` / ``(?=C)`` where ``C`` is a
set of ASCII characters (a literal, a class, an alternation of those, after
case folding): anywhere in the pattern, in alternations and repeats too.

Lookahead semantics.  Since ``C`` is ASCII, the character after the
lookahead is in ``C`` iff its first byte is.  A lookahead followed by more of
the match constrains the next byte consumed.  One at the end of a match
constrains the byte after the lexeme: ``(?!C)`` forbids the bytes of ``C``
(the end of input is fine), ``(?=C)`` forbids every other byte (every
non-ASCII lead byte too) and the end of input.  Constraints met in a row
combine (all must hold).  Several ways to reach one DFA state combine the
other way: a lexeme may end before a byte when *some* way allows it, so
``follow_forbidden`` is the intersection over the ways (``a(?!b)|a`` has no
restriction).  In the subset construction a DFA state is a set of
(NFA state, pending constraint) configurations; see ``_determinize``.

Refused with :class:`GrammarError`: anchors (``^ $ \\A \\Z \\b \\B``: their
meaning depends on text outside the lexeme), lookbehind, lookahead over
anything but one character (``terminal X: negative lookahead over more than
one character is not supported (...)``) or over non-ASCII characters
(including ``\\d``/``\\w`` without the ``a`` flag, ``.``, negated classes, and
IGNORECASE when folding adds a non-ASCII character such as the Kelvin sign),
backreferences, conditionals, atomic groups and possessive repeats, and
automata larger than ``max_states``.
"""

import collections
from bisect import bisect_left
from functools import lru_cache
import re
import threading
import time

import numpy as np

from cfgmask.errors import GrammarError
from cfgmask.automata import unicode_tables as ut

try:  # Python >= 3.11
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - older Pythons
    import sre_parse as _sre_parse

__all__ = ["ByteDFA", "compile_regex", "remember_dfa", "byte_classes"]

_C = _sre_parse  # opcodes and flags are re-exported by the parser module
LITERAL, NOT_LITERAL, ANY, IN = _C.LITERAL, _C.NOT_LITERAL, _C.ANY, _C.IN
RANGE, NEGATE, CATEGORY = _C.RANGE, _C.NEGATE, _C.CATEGORY
BRANCH, SUBPATTERN = _C.BRANCH, _C.SUBPATTERN
MAX_REPEAT, MIN_REPEAT, MAXREPEAT = _C.MAX_REPEAT, _C.MIN_REPEAT, _C.MAXREPEAT
AT, ASSERT, ASSERT_NOT = _C.AT, _C.ASSERT, _C.ASSERT_NOT
GROUPREF, GROUPREF_EXISTS = _C.GROUPREF, _C.GROUPREF_EXISTS
POSSESSIVE_REPEAT = getattr(_C, "POSSESSIVE_REPEAT", None)  # 3.11+
ATOMIC_GROUP = getattr(_C, "ATOMIC_GROUP", None)  # 3.11+

FLAG_IGNORECASE = _C.SRE_FLAG_IGNORECASE
FLAG_DOTALL = _C.SRE_FLAG_DOTALL
FLAG_ASCII = _C.SRE_FLAG_ASCII
TYPE_FLAGS = _C.TYPE_FLAGS

_CATEGORY_ESCAPES = {
    _C.CATEGORY_DIGIT: r"\d", _C.CATEGORY_NOT_DIGIT: r"\D",
    _C.CATEGORY_SPACE: r"\s", _C.CATEGORY_NOT_SPACE: r"\S",
    _C.CATEGORY_WORD: r"\w", _C.CATEGORY_NOT_WORD: r"\W",
}

_ANCHOR_NAMES = {
    _C.AT_BEGINNING: "^", _C.AT_BEGINNING_STRING: "\\A",
    _C.AT_END: "$", _C.AT_END_STRING: "\\Z",
    _C.AT_BOUNDARY: "\\b", _C.AT_NON_BOUNDARY: "\\B",
}

DEFAULT_MAX_STATES = 20000
# NFA states allowed per allowed DFA state: a bounded repeat of a big class
# (``\w{1,50}``) needs several NFA states per DFA state, more is a blow-up.
_NFA_STATES_PER_DFA_STATE = 8

# progress.hook: a callable the subset construction calls once per DFA state it
# builds, per thread (the JSON Schema compile budget sets it to check its
# deadline; it may raise, which abandons the construction)
progress = threading.local()


# ---------------------------------------------------------------------------
# The result
# ---------------------------------------------------------------------------

class ByteDFA:
    """A deterministic automaton over bytes; see the module docstring.

    ``follow_forbidden[s]`` (``None`` or sorted ``bytes``) and
    ``follow_forbidden_at_eos[s]`` (bool) restrict where a lexeme may end in
    accepting state ``s``: not before a byte listed in ``follow_forbidden[s]``,
    and not at end of input when ``follow_forbidden_at_eos[s]``.  Both come
    from trailing lookaheads; without any, every entry is ``None`` / ``False``.
    """

    __slots__ = ("trans", "accepting", "start", "n_states", "pattern", "name",
                 "follow_forbidden", "follow_forbidden_at_eos", "_column_class")

    def __init__(self, trans, accepting, pattern="", name="?", follow_forbidden=None,
                 follow_forbidden_at_eos=None):
        self.trans = np.ascontiguousarray(trans, dtype=np.int32)
        self.accepting = np.ascontiguousarray(accepting, dtype=bool)
        self.start = 0
        self.n_states = int(self.trans.shape[0])
        self.pattern = pattern
        self.name = name
        if follow_forbidden is None:
            follow_forbidden = [None] * self.n_states
        if follow_forbidden_at_eos is None:
            follow_forbidden_at_eos = [False] * self.n_states
        self.follow_forbidden = [bytes(sorted(set(f))) if f else None for f in follow_forbidden]
        self.follow_forbidden_at_eos = [bool(e) for e in follow_forbidden_at_eos]
        if not (len(self.follow_forbidden) == len(self.follow_forbidden_at_eos) == self.n_states):
            raise ValueError("follow restrictions need one entry per state")
        self._column_class = None

    def column_class(self):
        """uint8[256]: the class of each byte among this automaton's columns
        (equal columns, equal classes; numbered by first byte), computed once:
        :func:`byte_classes` combines these, so an automaton shared by many
        grammars is read once, not once per grammar."""
        if self._column_class is None:
            self._column_class = _column_classes(self.trans)[0]
        return self._column_class

    def set_column_class(self, class_of):
        """Hand over the column partition when the builder knows it (a byte chain)."""
        self._column_class = np.ascontiguousarray(class_of, dtype=np.uint8)

    def run(self, data: bytes, state: int = 0) -> int:
        """State after reading ``data`` from ``state``; -1 once dead."""
        trans = self.trans
        for byte in data:
            state = int(trans[state, byte])
            if state < 0:
                return -1
        return state

    def can_end(self, state: int, next_byte=None) -> bool:
        """May a lexeme end in ``state`` when ``next_byte`` follows it
        (``None``: end of input)?  False for -1 and non-accepting states."""
        if state < 0 or not self.accepting[state]:
            return False
        if next_byte is None:
            return not self.follow_forbidden_at_eos[state]
        forbidden = self.follow_forbidden[state]
        return forbidden is None or next_byte not in forbidden

    def matches(self, data: bytes) -> bool:
        """Is ``data`` accepted (a full match with nothing after it)?"""
        return self.can_end(self.run(data), None)

    def matches_followed_by(self, data: bytes, next_byte) -> bool:
        """Is ``data`` accepted as a lexeme followed by the byte ``next_byte``
        (an int; ``None`` means end of input, the same as :meth:`matches`)?"""
        return self.can_end(self.run(data), next_byte)

    def is_prefix(self, data: bytes) -> bool:
        """Is ``data`` a prefix of some accepted lexeme (with some byte, or
        the end of input, after it that its restriction allows)?"""
        # Trimmed: every live state reaches acceptance, except in the
        # one-state automaton of the empty language.
        return self.run(data) >= 0 and bool(self.accepting.any())

    @property
    def has_follow_restrictions(self) -> bool:
        """Does any state restrict what may follow the lexeme?"""
        return any(self.follow_forbidden_at_eos) or any(f is not None for f in self.follow_forbidden)

    def __repr__(self):
        return f"ByteDFA(name={self.name!r}, pattern={self.pattern!r}, n_states={self.n_states})"


class CountedDFA(ByteDFA):
    """A :class:`ByteDFA` whose lexemes may complete at most ``max_chars`` characters.

    Some languages are a small automaton with a length bound on top, such
    as a JSON string of at most 100 words and at most 5,000 characters: the
    product automaton needs a state per (words, characters) pair, 500,000 of
    them, of which a document visits a few thousand.  Here the bound is a
    counter stepped next to the automaton instead, and the runtime builds the
    union states that a document reaches, as it does for everything else.

    ``trans``/``accepting`` are the *uncounted* automaton (``n_states`` its
    states, "base states"), trimmed and with start 0 as for any ByteDFA.
    ``char_end[q]`` is 1 when entering base state ``q`` completes a
    character; ``min_chars[q]`` is the fewest characters a path from ``q``
    completes before it accepts (computed here, so that the invariant
    "every live state can still accept" holds with the counter too).  A
    counted state is ``n * n_states + q``: ``n`` characters completed, base
    state ``q``; it is live iff ``n + min_chars[q] <= max_chars``.  Every
    method below (``run``, ``can_end``, ``matches``) takes and returns
    counted states, so the language of this object is the bounded one.
    Readers of ``trans`` alone see a superset: the lexer steps the counter
    (``_fast/_lexer.pyx``), and the slices skip counted terminals.
    """

    __slots__ = ("char_end", "min_chars", "max_chars")

    def __init__(self, trans, accepting, char_end, max_chars, pattern="", name="?"):
        super().__init__(trans, accepting, pattern=pattern, name=name)
        self.char_end = np.ascontiguousarray(char_end, dtype=np.uint8)
        self.max_chars = int(max_chars)
        if len(self.char_end) != self.n_states:
            raise ValueError("char_end needs one entry per state")
        if self.max_chars < 0 or (self.max_chars + 1) * self.n_states >= 2 ** 31:
            raise ValueError(f"max_chars {max_chars} x {self.n_states} states does not fit a state id")
        self.min_chars = _min_chars_to_accept(self.trans, self.accepting, self.char_end)

    def base_state(self, state):
        return state % self.n_states

    def run(self, data: bytes, state: int = 0) -> int:
        n, q = divmod(state, self.n_states) if state >= 0 else (0, -1)
        trans = self.trans
        for byte in data:
            if q < 0:
                return -1
            q = int(trans[q, byte])
            if q < 0:
                return -1
            n += int(self.char_end[q])
            if n + int(self.min_chars[q]) > self.max_chars:
                return -1
        return n * self.n_states + q if q >= 0 else -1

    def can_end(self, state: int, next_byte=None) -> bool:
        return state >= 0 and super().can_end(state % self.n_states, next_byte)

    def is_prefix(self, data: bytes) -> bool:
        return self.run(data) >= 0

    def __repr__(self):
        return (f"CountedDFA(name={self.name!r}, n_states={self.n_states}, "
                f"max_chars={self.max_chars})")


def _min_chars_to_accept(trans, accepting, char_end):
    """int32 per state: the fewest completed characters on a path to acceptance
    (0-1 breadth-first search backwards from the accepting states; a state that
    cannot accept gets 2**30)."""
    n = trans.shape[0]
    src, byte = np.nonzero(trans >= 0)
    dst = trans[src, byte]
    pairs = np.unique(dst.astype(np.int64) * n + src)          # (target, source), once each
    dst, src = (pairs // n).tolist(), (pairs % n).tolist()
    preds = [[] for _ in range(n)]
    for d_, s_ in zip(dst, src):
        preds[d_].append(s_)
    far = 1 << 30
    dist = [far] * n
    todo = collections.deque()
    for q in np.flatnonzero(accepting).tolist():
        dist[q] = 0
        todo.append(q)
    cost = char_end.tolist()
    while todo:
        v = todo.popleft()
        d = dist[v] + cost[v]      # entering v completes cost[v] characters
        for u in preds[v]:
            if d < dist[u]:
                dist[u] = d
                if cost[v]:
                    todo.append(u)
                else:
                    todo.appendleft(u)
    return np.asarray(dist, dtype=np.int32)


def _too_large(name, limit, what):
    return GrammarError(
        f"terminal {name}: automaton too large (more than {limit} states in the {what}); "
        f"bounded repeats such as {{m,n}} are expanded copy by copy, so simplify "
        f"the pattern or raise max_states",
        where=name, construct="automaton size")


def _too_deep(name):
    return GrammarError(f"terminal {name}: the regex is nested too deeply (Python's recursion "
                        "limit was hit; flatten the nested groups)", where=name, construct="nesting depth")


def _unsupported(name, construct, why):
    return GrammarError(f"terminal {name}: {construct} is not supported ({why})",
                        where=name, construct=construct)


# ---------------------------------------------------------------------------
# Character nodes -> sets of code points
# ---------------------------------------------------------------------------

def _escape_code_point(code_point: int) -> str:
    return f"\\U{code_point:08x}"


def _render_char_node(op, av) -> str:
    """Regex text for one character node, re-parsed by ``re`` into the same node."""
    if op is LITERAL:
        return _escape_code_point(av)
    if op is NOT_LITERAL:
        return "[^" + _escape_code_point(av) + "]"
    parts = []
    for item_op, item_av in av:
        if item_op is NEGATE:
            parts.append("^")
        elif item_op is LITERAL:
            parts.append(_escape_code_point(item_av))
        elif item_op is RANGE:
            parts.append(_escape_code_point(item_av[0]) + "-" + _escape_code_point(item_av[1]))
        elif item_op is CATEGORY:
            parts.append(_CATEGORY_ESCAPES[item_av])
        else:  # pragma: no cover - the parser emits nothing else in a class
            raise ValueError(f"unexpected class item {item_op}")
    if len(av) == 1 and av[0][0] is LITERAL:
        # "[x]" would be re-parsed as a plain literal; "[xx]" stays a class.
        parts.append(parts[0])
    return "[" + "".join(parts) + "]"


@lru_cache(maxsize=4096)
def _char_ranges(op, av, flags) -> tuple:
    """The code points one character node matches under ``flags``."""
    if op is ANY:
        return ut.UNIVERSE if flags & FLAG_DOTALL else ut.complement(((0x0A, 0x0A),))
    if flags & FLAG_IGNORECASE:
        # Case folding has many special cases (Kelvin sign, long s, Turkish
        # dotted I, non-BMP ranges, classes with categories): ask Python.
        return ut.scan_ranges(_render_char_node(op, av),
                              flags & (FLAG_IGNORECASE | FLAG_ASCII))
    if op is LITERAL:
        return ut.normalize(((av, av),))
    if op is NOT_LITERAL:
        return ut.complement(((av, av),))
    negate = False
    ranges = []
    for item_op, item_av in av:
        if item_op is NEGATE:
            negate = True
        elif item_op is LITERAL:
            ranges.append((item_av, item_av))
        elif item_op is RANGE:
            ranges.append(item_av)
        else:  # CATEGORY: \d \w \s and negations, Unicode or ASCII meaning
            ranges.extend(ut.scan_ranges(_CATEGORY_ESCAPES[item_av], flags & FLAG_ASCII))
    return ut.complement(ranges) if negate else ut.normalize(ranges)


# ---------------------------------------------------------------------------
# Character-level DFA -> byte-level DFA (UTF-8)
# ---------------------------------------------------------------------------

_LEAD_MARKERS = {2: 0xC0, 3: 0xE0, 4: 0xF0}


def _split_by_top_digit(intervals, k):
    """Group tagged values by their base-64 digit above the low ``k`` digits.

    ``intervals``: sorted disjoint ``(lo, hi, tag)`` ranges of integers.
    Returns a list of ``(top_lo, top_hi, low)``: for ``top_lo <= top <=
    top_hi``, value ``top * 64**k + x`` has the tag that ``low`` (a tuple of
    ``(lo, hi, tag)``) gives ``x``.  Consecutive tops with the same ``low``
    share one entry, which becomes one byte-range edge.
    """
    shift = 6 * k
    unit = 1 << shift
    low_parts = {}
    for lo, hi, tag in intervals:
        top_lo, top_hi = lo >> shift, hi >> shift
        if top_lo == top_hi:
            low_parts.setdefault(top_lo, []).append(
                (lo - (top_lo << shift), hi - (top_lo << shift), tag))
            continue
        low_parts.setdefault(top_lo, []).append((lo - (top_lo << shift), unit - 1, tag))
        for top in range(top_lo + 1, top_hi):
            low_parts[top] = [(0, unit - 1, tag)]
        low_parts.setdefault(top_hi, []).append((0, hi - (top_hi << shift), tag))
    groups = []
    for top in sorted(low_parts):
        low = tuple(low_parts[top])
        if groups and groups[-1][1] == top - 1 and groups[-1][2] == low:
            groups[-1][1] = top
        else:
            groups.append([top, top, low])
    return groups


def _expand_utf8(trans, bounds, max_states, name):
    """The byte DFA of a character DFA whose columns are the code point atoms
    ``[bounds[a], bounds[a + 1])``.

    Character states keep their numbers.  The non-ASCII characters leaving a
    state become UTF-8 lead-byte edges into *continuation states*, one per
    ``(bytes still to read, which target each possible rest leads to)`` --
    two targets can share a lead byte (U+2000 and U+2028 both start with
    0xE2) -- shared by every state that needs the same one.  Only scalar
    values are ever spelled, each in its one encoding, so no overlong form,
    surrogate or value above U+10FFFF is accepted.

    If the character DFA is minimal and trimmed, so is the result: UTF-8 is a
    prefix code, so distinct character states stay distinct, and two
    continuation states are equal only if their keys are (the key determines
    the language and the language determines the key).
    """
    n, n_atoms = trans.shape
    extra = []   # continuation rows, numbered from n
    shared = {}

    def continuation(k, parts):
        # parts: sorted (lo, hi, target) over the payloads of k continuation bytes
        key = (k, parts)
        sid = shared.get(key)
        if sid is None:
            sid = shared[key] = n + len(extra)
            if sid >= max_states:
                raise _too_large(name, max_states, "DFA")
            row = np.full(256, -1, dtype=np.int32)
            extra.append(row)
            for top_lo, top_hi, low in _split_by_top_digit(parts, k - 1):
                nxt = low[0][2] if k == 1 else continuation(k - 1, low)
                row[0x80 + top_lo:0x81 + top_hi] = nxt
        return sid

    out = np.full((n, 256), -1, dtype=np.int32)
    # ASCII: one byte per character, the atom of each byte value
    out[:, :0x80] = trans[:, np.searchsorted(bounds, np.arange(0x80), side="right") - 1]
    first = int(np.searchsorted(bounds, 0x80))   # 0x80 is always a boundary
    wide = trans[:, first:]
    wide_bounds = bounds[first:]
    for s in np.flatnonzero((wide >= 0).any(axis=1)).tolist():
        # runs of atoms with one target are contiguous code point ranges
        t = wide[s]
        starts = np.flatnonzero(np.concatenate([[True], t[1:] != t[:-1]]))
        ends = np.append(starts[1:], len(t))
        keep = t[starts] >= 0
        segments = list(zip(wide_bounds[starts[keep]].tolist(),
                            (wide_bounds[ends[keep]] - 1).tolist(), t[starts[keep]].tolist()))
        row = out[s]
        for length, (bound_lo, bound_hi) in enumerate(ut.UTF8_LENGTH_BOUNDS[1:], start=2):
            clipped = [(max(lo, bound_lo), min(hi, bound_hi), t) for lo, hi, t in segments
                       if lo <= bound_hi and hi >= bound_lo]
            if not clipped:
                continue
            marker = _LEAD_MARKERS[length]
            for top_lo, top_hi, low in _split_by_top_digit(clipped, length - 1):
                row[marker + top_lo:marker + top_hi + 1] = continuation(length - 1, low)
    return np.concatenate([out] + [r[None, :] for r in extra]) if extra else out


# ---------------------------------------------------------------------------
# AST -> NFA over bytes
# ---------------------------------------------------------------------------

# A lookahead constraint on the next byte, as an int bit set: bit b (0..255)
# set = the next byte may not be b; bit _EOS_BIT set = the end of input may
# not come next.  Constraints met one after the other combine by OR; a full
# mask can never be met.
_EOS_BIT = 256
_ALL_BYTES = (1 << 256) - 1
_FULL_MASK = (1 << 257) - 1
_ASCII_BYTES = (1 << 128) - 1


def _ranges_to_bits(ranges) -> int:
    bits = 0
    for lo, hi in ranges:
        bits |= ((1 << (hi - lo + 1)) - 1) << lo
    return bits


class _NFABuilder:
    """Thompson-style NFA over *characters* whose moves are character sets
    (tuples of code point ranges), empty moves, or lookahead moves.

    ``build(subpattern, flags, entry)`` adds the moves for ``subpattern``
    starting at ``entry`` and returns the state reached after it.  A
    lookahead move ``(target, mask)`` is an empty move that puts the
    constraint ``mask`` (see ``_EOS_BIT``) on the next byte of the path:
    every lookahead body is one ASCII character, so the next byte (or the
    end of input) decides it.  The automaton is determinised and minimised
    over characters and only then spelled in UTF-8 (``_expand_utf8``): a
    class such as ``[^a]`` is one move here instead of a dozen byte states.
    """

    def __init__(self, name, limit):
        self.name = name
        self.limit = limit
        self.empty_moves = []   # state -> [state]
        self.char_moves = []    # state -> [(ranges, state)]
        self.assert_moves = []  # state -> [(state, mask)]
        self.lookahead_sets = []  # the code point sets lookaheads test

    def new_state(self) -> int:
        if len(self.char_moves) >= self.limit:
            raise _too_large(self.name, self.limit, "NFA")
        self.empty_moves.append([])
        self.char_moves.append([])
        self.assert_moves.append([])
        return len(self.char_moves) - 1

    def add_char_set(self, ranges, entry) -> int:
        exit_state = self.new_state()
        if ranges:
            self.char_moves[entry].append((ranges, exit_state))
        return exit_state

    def atoms(self):
        """Boundaries of the coarsest partition of the code points that every
        character set and lookahead set is a union of (and that splits ASCII
        from the rest): atom ``a`` is ``[bounds[a], bounds[a + 1])``."""
        cuts = {0, 0x80, ut.MAX_CODE_POINT + 1}
        seen = set()
        for moves in self.char_moves:
            for ranges, _ in moves:
                if ranges not in seen:
                    seen.add(ranges)
                    for lo, hi in ranges:
                        cuts.add(lo)
                        cuts.add(hi + 1)
        for ranges in self.lookahead_sets:
            for lo, hi in ranges:
                cuts.add(lo)
                cuts.add(hi + 1)
        return np.array(sorted(cuts), dtype=np.int64)

    def build(self, subpattern, flags, entry) -> int:
        state = entry
        for op, av in subpattern:
            state = self.build_item(op, av, flags, state)
        return state

    def build_item(self, op, av, flags, entry) -> int:
        name = self.name
        if op in (LITERAL, NOT_LITERAL, ANY):
            return self.add_char_set(_char_ranges(op, av, _char_flags(flags)), entry)
        if op is IN:
            return self.add_char_set(_char_ranges(op, tuple(av), _char_flags(flags)), entry)
        if op is SUBPATTERN:
            _group, add_flags, del_flags, body = av
            return self.build(body, _combine_flags(flags, add_flags, del_flags), entry)
        if op is BRANCH:
            exit_state = self.new_state()
            for alternative in av[1]:
                start = self.new_state()
                self.empty_moves[entry].append(start)
                self.empty_moves[self.build(alternative, flags, start)].append(exit_state)
            return exit_state
        if op is MAX_REPEAT or op is MIN_REPEAT:
            # Lazy and greedy repeats accept the same strings under fullmatch.
            return self.build_repeat(*av, flags, entry)
        if op is AT:
            anchor = _ANCHOR_NAMES.get(av, str(av))
            raise _unsupported(name, f"anchor {anchor}",
                               "its truth depends on text around the lexeme, "
                               "which a terminal's automaton never sees")
        if op is ASSERT or op is ASSERT_NOT:
            return self.build_lookahead(op, av, flags, entry)
        if op is GROUPREF:
            raise _unsupported(name, "backreference", "it does not describe a regular language")
        if op is GROUPREF_EXISTS:
            raise _unsupported(name, "conditional group (?(id)yes|no)",
                               "it depends on which groups matched")
        if ATOMIC_GROUP is not None and op is ATOMIC_GROUP:
            raise _unsupported(name, "atomic group (?>...)",
                               "it cuts backtracking, which changes the language")
        if POSSESSIVE_REPEAT is not None and op is POSSESSIVE_REPEAT:
            raise _unsupported(name, "possessive repeat",
                               "it cuts backtracking, which changes the language")
        raise _unsupported(name, f"regex construct {op}", "unknown to cfgmask")

    def build_lookahead(self, op, av, flags, entry) -> int:
        """``(?=C)`` / ``(?!C)`` for a set ``C`` of ASCII characters: an
        empty move constraining the next byte (see the class docstring)."""
        direction, body = av
        kind = "lookbehind" if direction < 0 else "lookahead"
        if op is ASSERT_NOT:
            kind = "negative " + kind
        if direction < 0:
            raise _unsupported(self.name, kind,
                               "it depends on text before the lexeme, which a terminal's "
                               "automaton never sees")
        ranges = _one_char_ranges(body, flags)
        if ranges is None:
            what = "an empty pattern" if not len(body) else "more than one character"
            raise _unsupported(self.name, f"{kind} over {what}",
                               "only a lookahead over one character from a set of ASCII "
                               "characters, such as (?![a-z0-9_]), is compiled")
        if ranges and ranges[-1][1] > 0x7F:
            why = ("the character after the lexeme must be decided by one byte, so the "
                   "lookahead may only name ASCII characters")
            if flags & FLAG_IGNORECASE and not flags & FLAG_ASCII:
                why += ("; under IGNORECASE, Unicode case folding adds non-ASCII characters "
                        "(add the ASCII flag (?a) to fold within ASCII only)")
            raise _unsupported(self.name, f"{kind} over non-ASCII characters", why)
        self.lookahead_sets.append(ranges)
        bits = _ranges_to_bits(ranges)
        # (?!C): the next byte is not in C.  (?=C): the next byte is in C, so
        # neither another byte (every non-ASCII lead byte included) nor the
        # end of input.
        mask = bits if op is ASSERT_NOT else _FULL_MASK & ~bits
        exit_state = self.new_state()
        self.assert_moves[entry].append((exit_state, mask))
        return exit_state

    def build_repeat(self, min_count, max_count, body, flags, entry) -> int:
        state = entry
        for _ in range(min_count):
            state = self.build(body, flags, state)
        if max_count == MAXREPEAT:
            loop = self.new_state()
            self.empty_moves[state].append(loop)
            self.empty_moves[self.build(body, flags, loop)].append(loop)
            return loop
        if max_count == min_count:
            return state
        # x{0,n} as x?x?...x? where skipping one copy skips all the rest, so
        # the copies do not combine into a quadratic number of paths.
        exit_state = self.new_state()
        for _ in range(max_count - min_count):
            self.empty_moves[state].append(exit_state)
            state = self.build(body, flags, state)
        self.empty_moves[state].append(exit_state)
        return exit_state


def _one_char_ranges(subpattern, flags):
    """The code points of ``subpattern`` if it matches exactly the strings of
    one character from a set (a literal, a class, an alternation of those,
    possibly grouped); otherwise ``None``."""
    if len(subpattern) != 1:
        return None
    op, av = subpattern[0]
    if op in (LITERAL, NOT_LITERAL, ANY):
        return _char_ranges(op, av, _char_flags(flags))
    if op is IN:
        return _char_ranges(op, tuple(av), _char_flags(flags))
    if op is SUBPATTERN:
        _group, add_flags, del_flags, body = av
        return _one_char_ranges(body, _combine_flags(flags, add_flags, del_flags))
    if op is BRANCH:
        parts = [_one_char_ranges(alternative, flags) for alternative in av[1]]
        return None if any(part is None for part in parts) else ut.union(*parts)
    if (op is MAX_REPEAT or op is MIN_REPEAT) and av[0] == av[1] == 1:
        return _one_char_ranges(av[2], flags)
    return None


def _combine_flags(flags, add_flags, del_flags):
    # Same rule as re._compiler: a scoped (?a) / (?u) replaces the type flag.
    if add_flags & TYPE_FLAGS:
        flags &= ~TYPE_FLAGS
    return (flags | add_flags) & ~del_flags


def _char_flags(flags):
    """The flags a character node's meaning depends on (better cache hits)."""
    return flags & (FLAG_IGNORECASE | FLAG_DOTALL | FLAG_ASCII)


# ---------------------------------------------------------------------------
# NFA -> DFA (subset construction)
# ---------------------------------------------------------------------------

def _byte_segments(edge_lists):
    """Split 0..255 at every edge boundary.

    Yields ``(byte_lo, byte_hi, targets)`` for each maximal byte interval on
    which the same non-empty set of NFA targets is reachable.
    """
    events = []
    for edges in edge_lists:
        for lo, hi, target in edges:
            events.append((lo, 1, target))
            events.append((hi + 1, -1, target))
    events.sort(key=lambda event: event[0])
    active = {}
    i, n = 0, len(events)
    while i < n:
        position = events[i][0]
        while i < n and events[i][0] == position:
            _, delta, target = events[i]
            count = active.get(target, 0) + delta
            if count:
                active[target] = count
            else:
                del active[target]
            i += 1
        if i < n and active:
            yield position, events[i][0] - 1, frozenset(active)


def _allowed_edges(edges, mask):
    """``edges`` without the bytes set in ``mask``."""
    out = []
    for lo, hi, target in edges:
        byte = lo
        while byte <= hi:
            if mask >> byte & 1:
                byte += 1
                continue
            last = byte
            while last < hi and not mask >> (last + 1) & 1:
                last += 1
            out.append((byte, last, target))
            byte = last + 1
    return out


def _determinize(nfa, start, final, max_states, name, bounds):
    """Subset construction over the code point atoms ``bounds`` (see
    :meth:`_NFABuilder.atoms`).

    Returns ``(trans, accepting, follow)``, ``trans`` int32 ``[states, atoms]``:
    ``follow[d]`` is the constraint
    mask (see ``_EOS_BIT``) on what may come after a lexeme ending in DFA
    state ``d`` (0 for no constraint or a non-accepting state).

    With lookaheads, a DFA state is a set of *configurations*: an NFA state
    with the constraint pending on its path, encoded as
    ``state + n_nfa * mask_id`` (mask id 0 = no constraint, so without
    lookaheads configurations are plain NFA states).  A move out of a
    configuration is dropped when its mask forbids the character's first byte
    (an ASCII character is its byte; a mask forbids either every non-ASCII
    lead byte or none, so it treats all non-ASCII atoms alike), and the target
    starts with no constraint.  A configuration at ``final`` lets the lexeme
    end under its mask; a DFA state may end before a byte when some of its
    configurations allow it, so its mask is the AND of theirs.
    """
    empty_moves, assert_moves = nfa.empty_moves, nfa.assert_moves
    n_atoms = len(bounds) - 1
    cuts = bounds.tolist()
    # each move as atom intervals (lo, hi inclusive, target)
    atom_of = {}
    byte_moves = []
    for moves in nfa.char_moves:
        edges = []
        for ranges, target in moves:
            spans = atom_of.get(ranges)
            if spans is None:
                spans = []
                for lo, hi in ranges:
                    a = bisect_left(cuts, lo)
                    b = bisect_left(cuts, hi + 1) - 1
                    if spans and spans[-1][1] + 1 == a:
                        spans[-1][1] = b
                    else:
                        spans.append([a, b])
                spans = atom_of[ranges] = [tuple(x) for x in spans]
            edges.extend((a, b, target) for a, b in spans)
        byte_moves.append(edges)
    first_byte = [min(int(lo), 0x80) for lo in bounds[:-1]]
    n_nfa = len(byte_moves)
    lookahead = any(assert_moves)
    masks = [0]
    mask_ids = {0: 0}
    filtered = {}  # configuration with a mask -> its allowed moves
    atom_masks = {}

    def atom_mask(mask):
        m = atom_masks.get(mask)
        if m is None:
            m = 0
            for a, b in enumerate(first_byte):
                if mask >> b & 1:
                    m |= 1 << a
            atom_masks[mask] = m
        return m

    hook = getattr(progress, "hook", None)

    def closure(states):
        if hook is not None:
            hook()
        stack = list(states)
        seen = set(stack)
        while stack:
            for nxt in empty_moves[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return frozenset(seen)

    def closure_with_masks(configs):
        if hook is not None:
            hook()
        stack = list(configs)
        seen = set(stack)
        while stack:
            mask_id, state = divmod(stack.pop(), n_nfa)
            base = mask_id * n_nfa
            for nxt in empty_moves[state]:
                nxt += base
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
            for nxt, extra in assert_moves[state]:
                mask = masks[mask_id] | extra
                if mask == _FULL_MASK:
                    continue  # no next byte and no end of input can satisfy it
                new_id = mask_ids.get(mask)
                if new_id is None:
                    new_id = mask_ids[mask] = len(masks)
                    masks.append(mask)
                nxt += new_id * n_nfa
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return frozenset(_drop_dominated(seen))

    def _drop_dominated(configs):
        # (state, m2) is redundant next to (state, m1) when m1 is a subset of m2.
        by_state = {}
        for config in configs:
            mask_id, state = divmod(config, n_nfa)
            by_state.setdefault(state, []).append(mask_id)
        out = []
        for state, ids in by_state.items():
            if len(ids) == 1:
                out.append(state + ids[0] * n_nfa)
            elif 0 in ids:
                out.append(state)
            else:
                for mask_id in ids:
                    mask = masks[mask_id]
                    if not any(other != mask_id and masks[other] & mask == masks[other]
                               for other in ids):
                        out.append(state + mask_id * n_nfa)
        return out

    def moves(config):
        if config < n_nfa:
            return byte_moves[config]
        edges = filtered.get(config)
        if edges is None:
            mask_id, state = divmod(config, n_nfa)
            edges = filtered[config] = _allowed_edges(byte_moves[state], atom_mask(masks[mask_id]))
        return edges

    if lookahead:
        closure = closure_with_masks  # noqa: F811 - same contract, with masks

    start_set = closure([start])
    id_of_set = {start_set: 0}
    subsets = [start_set]
    id_of_targets = {}  # target set before closure -> DFA state (saves closures)
    rows = []
    while len(rows) < len(subsets):
        subset = subsets[len(rows)]
        row = np.full(n_atoms, -1, dtype=np.int32)
        for lo, hi, targets in _byte_segments(moves(c) for c in subset):
            dfa_state = id_of_targets.get(targets)
            if dfa_state is None:
                closed = closure(targets)
                dfa_state = id_of_set.get(closed)
                if dfa_state is None:
                    dfa_state = len(subsets)
                    if dfa_state >= max_states:
                        raise _too_large(name, max_states, "DFA")
                    id_of_set[closed] = dfa_state
                    subsets.append(closed)
                id_of_targets[targets] = dfa_state
            row[lo:hi + 1] = dfa_state
        rows.append(row)
    if not lookahead:
        accepting = np.array([final in subset for subset in subsets], dtype=bool)
        return np.stack(rows), accepting, [0] * len(subsets)
    accepting = np.zeros(len(subsets), dtype=bool)
    follow = [0] * len(subsets)
    for d, subset in enumerate(subsets):
        mask = _FULL_MASK
        for config in subset:
            mask_id, state = divmod(config, n_nfa)
            if state == final:
                accepting[d] = True
                mask &= masks[mask_id]
        if accepting[d]:
            follow[d] = mask
    return np.stack(rows), accepting, follow


# ---------------------------------------------------------------------------
# Minimisation and trimming
# ---------------------------------------------------------------------------

def _column_classes(trans):
    """Group the columns of ``trans`` (256 bytes, or character atoms) into
    classes of identical columns.

    Returns ``(class_of uint8[256] (int32 for more columns), representative
    column of each class)``; classes are numbered by the first column that has
    them.
    """
    columns = np.ascontiguousarray(trans.T)
    k = columns.shape[0]
    dtype = np.uint8 if k <= 256 else np.int32
    if columns.shape[1] == 0:
        return np.zeros(k, dtype=dtype), [0] if k else []
    # one bytes key per column, numbered by a dict in column order (a Python loop
    # over the columns with a tobytes and an item store each was 3x slower)
    keys = columns.view(np.dtype((np.void, columns.shape[1] * columns.itemsize))).ravel().tolist()
    ids = {}
    class_of = np.fromiter((ids.setdefault(key, len(ids)) for key in keys), dtype=dtype, count=k)
    representatives = np.unique(class_of, return_index=True)[1].tolist()
    return class_of, representatives


def _predecessors(table):
    """Incoming edges of a partial DFA ``table`` (int [n, k], -1 = none).

    Returns lists ``(bounds, pred_source, pred_class)``: the edges entering
    state t are entries ``bounds[t]:bounds[t + 1]`` of the two others.
    """
    n, k = table.shape
    targets = table.ravel()
    edges = np.flatnonzero(targets >= 0)
    edges = edges[np.argsort(targets[edges], kind="stable")]
    bounds = np.searchsorted(targets[edges], np.arange(n + 1)).tolist()
    return bounds, (edges // k).tolist(), (edges % k).tolist()


_MOORE_ROUNDS = 24
_MOORE_MIN_STATES = 256  # below this Hopcroft in Python is quicker than numpy's overheads


def _moore(table, labels, max_rounds):
    """Moore's partition refinement, vectorised: split blocks by the blocks
    their transitions reach until nothing splits.  Round ``r`` separates the
    states that differ on some string of length ``r``, so it converges in
    about as many rounds as the longest distinguishing string (keyword tries
    such as SQL's IDENT: ~20).  Returns ``(block_of, converged)``; when it has
    not converged after ``max_rounds`` the partition is still a valid start
    for :func:`_hopcroft` (coarser than the answer, finer than ``labels``).
    """
    _, block = np.unique(labels, return_inverse=True)
    block = block.ravel().astype(np.int32)
    n_blocks = int(block.max()) + 1 if block.size else 0
    for _ in range(max_rounds):
        sig = np.empty((table.shape[0], table.shape[1] + 1), dtype=np.int32)
        if not len(sig):
            return block.astype(np.int64), True
        sig[:, 0] = block
        sig[:, 1:] = np.where(table >= 0, block[np.maximum(table, 0)], -1)
        # one bytes key per row; a dict numbers the distinct rows (exact, no sorting)
        keys = sig.view(np.dtype((np.void, sig.shape[1] * 4))).ravel().tolist()
        ids = {}
        new = np.fromiter((ids.setdefault(k, len(ids)) for k in keys), dtype=np.int32,
                          count=len(keys))
        if len(ids) == n_blocks:
            return new.astype(np.int64), True
        slow = len(ids) - n_blocks < max(2, len(keys) >> 6)
        block, n_blocks = new, len(ids)
        if slow:  # a chain that splits one block per round: Hopcroft does it better
            break
    return block.astype(np.int64), False


def _hopcroft(n, labels, bounds, pred_source, pred_class):
    """Coarsest partition of the states of a trimmed partial DFA into
    equivalent blocks (Hopcroft's algorithm).

    ``labels[s]`` is what state ``s`` says on its own (accepting or not, and
    under which follow restriction): states with different labels are never
    equivalent.  A missing transition goes to an implicit dead state, which
    is its own block: every real state can reach acceptance, the dead state
    cannot.  Returns ``block_of``, a list mapping each state to its block
    number.
    """
    block_of = [0] * n
    blocks = []
    by_label = {}
    for s in range(n):
        by_label.setdefault(labels[s], []).append(s)
    for label in sorted(by_label):
        members = by_label[label]
        for s in members:
            block_of[s] = len(blocks)
        blocks.append(set(members))
    # The initial blocks are one per label, and {dead}.  Splitting by all but
    # one of them is enough; leaving out {dead} means the many missing
    # transitions are never looked at.
    waiting = set(range(len(blocks)))
    while waiting:
        splitter = blocks[waiting.pop()]
        # Sources that enter the splitter, by class.
        sources_by_class = {}
        for target in splitter:
            for j in range(bounds[target], bounds[target + 1]):
                sources_by_class.setdefault(pred_class[j], []).append(pred_source[j])
        for sources in sources_by_class.values():
            hit = {}
            for source in sources:
                hit.setdefault(block_of[source], []).append(source)
            for b, members in hit.items():
                block = blocks[b]
                if len(members) == len(block):
                    continue
                new_block = set(members)
                block -= new_block
                new_id = len(blocks)
                blocks.append(new_block)
                for s in new_block:
                    block_of[s] = new_id
                # Hopcroft's rule: it suffices to wait on the smaller half.
                if b in waiting or len(new_block) <= len(block):
                    waiting.add(new_id)
                else:
                    waiting.add(b)
    return block_of


def _co_accessible(accepting, bounds, pred_source):
    """States from which an accepting state can be reached."""
    live = np.array(accepting, dtype=bool)
    stack = np.flatnonzero(live).tolist()
    while stack:
        target = stack.pop()
        for j in range(bounds[target], bounds[target + 1]):
            source = pred_source[j]
            if not live[source]:
                live[source] = True
                stack.append(source)
    return live


def _minimize_and_trim(trans, accepting, follow, moore_min_states=_MOORE_MIN_STATES):
    """Minimal trimmed DFA equivalent to ``trans`` (start 0, -1 = dead; the other
    states in no particular order).

    ``follow[s]``: the follow-restriction mask of state ``s`` (0: none).
    ``moore_min_states``: automata this big start with Moore's rounds, smaller
    ones go straight to Hopcroft.  Returns ``(trans, accepting, follow)`` for
    the new states.
    """
    # Work on byte classes: bytes with identical columns behave alike.
    class_of, representatives = _column_classes(trans)
    table = trans[:, representatives]

    # Trim: drop states that cannot reach acceptance (moves into them die).
    live = _co_accessible(accepting, *_predecessors(table)[:2])
    if not live[0]:
        return np.full((1, trans.shape[1]), -1, dtype=np.int32), np.zeros(1, dtype=bool), [0]
    # Label 0: not accepting; 1 + i: accepting under the i-th distinct mask.
    label_of_mask = {}
    labels = np.array([label_of_mask.setdefault(follow[s], len(label_of_mask)) + 1
                       if accepting[s] else 0 for s in range(len(follow))], dtype=np.int64)
    mask_of_label = [0] + list(label_of_mask)
    live_id = np.where(live, np.cumsum(live) - 1, -1)
    table = np.where(table >= 0, live_id[np.maximum(table, 0)], -1)[live]
    labels = labels[live]
    n = table.shape[0]

    block_of, done = _moore(table, labels, _MOORE_ROUNDS) if n >= moore_min_states else (labels, False)
    if not done:  # long chains (a{1,1000}): finish from Moore's partition
        block_of = np.array(_hopcroft(n, block_of.tolist(), *_predecessors(table)), dtype=np.int64)

    # One state per block, the start's block first (the caller renumbers the
    # final byte automaton breadth-first, see _renumber_bfs).
    _, representative = np.unique(block_of, return_index=True)
    n_blocks = len(representative)
    new_id = np.arange(n_blocks)
    start = int(block_of[0])
    new_id[[0, start]] = new_id[[start, 0]]
    order = np.argsort(new_id)                  # new state -> block
    small = table[representative[order]]
    small = np.where(small >= 0, new_id[block_of[np.maximum(small, 0)]], -1).astype(np.int32)
    new_trans = np.ascontiguousarray(small[:, class_of])
    new_labels = labels[representative[order]]
    return new_trans, new_labels > 0, [mask_of_label[label] for label in new_labels.tolist()]


def _renumber_bfs(trans, accepting, follow):
    """Number the states breadth-first from 0, bytes in increasing order (the
    canonical numbering of a minimal DFA; every state must be reachable).

    Each state's distinct targets in order of their first byte come from the
    starts of its runs of equal entries, all states at once; the breadth-first
    pass then touches each (state, distinct target) pair once.
    """
    n, k = trans.shape
    run = np.empty_like(trans, dtype=bool)
    run[:, 0] = True
    np.not_equal(trans[:, 1:], trans[:, :-1], out=run[:, 1:])
    run &= trans >= 0
    rows, cols = np.nonzero(run)                  # row-major: by state, then byte
    targets = trans[rows, cols].astype(np.int64)
    _, first = np.unique(rows.astype(np.int64) * n + targets, return_index=True)
    first.sort()
    rows, targets = rows[first], targets[first]
    ptr = np.searchsorted(rows, np.arange(n + 1)).tolist()
    children = targets.tolist()
    new_id = [-1] * n
    new_id[0] = 0
    order = [0]
    i = 0
    while i < len(order):
        s = order[i]
        for t in children[ptr[s]:ptr[s + 1]]:
            if new_id[t] < 0:
                new_id[t] = len(order)
                order.append(t)
        i += 1
    if len(order) != n:  # pragma: no cover - the construction only makes reachable states
        raise AssertionError("unreachable DFA state")
    old = np.array(order, dtype=np.int64)
    ids = np.array(new_id, dtype=np.int64)
    out = trans[old]
    out = np.where(out >= 0, ids[np.maximum(out, 0)], -1).astype(np.int32)
    return np.ascontiguousarray(out), np.asarray(accepting, dtype=bool)[old], [follow[s] for s in order]


# ---------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------

# Process-level memo of terminal automata, keyed by pattern text.  Building a
# DFA is pure Python; grammars generated from JSON schemas reuse the same few
# terminals (strings, numbers, keys) over and over.  ByteDFAs are never
# mutated after construction, so sharing one between grammars is safe.
_DFA_MEMO = {}          # pattern -> ByteDFA (insertion order = age; oldest evicted)
_DFA_MEMO_SIZE = 4096
_DFA_PINNED = {}        # pattern -> [ByteDFA, owners]: automata compile_regex cannot build itself
_BUILD_S = {}           # pattern -> seconds compile_regex took to build its memoised automaton


def unescaped_characters(pattern: str, start: int = 0):
    """Yield ``(index, character)`` for each character of the regex text
    ``pattern`` from ``start`` on that is neither escaped nor inside a
    character class (escapes and whole classes are skipped), so that callers
    can track group depth and find a top-level ``|`` on the text alone."""
    i, n = start, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            if i < n and pattern[i] == "]":   # a "]" first in a class is literal
                i += 1
            while i < n and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
            i += 1
            continue
        yield i, c
        i += 1


def build_cost(pattern: str) -> float:
    """Seconds :func:`compile_regex` spent building the memoised automaton of
    ``pattern``; 0.0 when it did not build it (not met yet, evicted, or handed
    over by :func:`remember_dfa`, whose caller builds it again in any process).
    The lexer's disk cache uses it to tell what a fresh process would pay."""
    return _BUILD_S.get(pattern, 0.0)


def remember_dfa(pattern: str, dfa: ByteDFA, owner=None) -> None:
    """Register ``dfa`` as the automaton of ``pattern`` for :func:`compile_regex`.

    The caller guarantees that ``dfa`` accepts exactly the full-match
    language of ``pattern`` (``cfgmask.frontends.json_schema`` builds some automata
    directly, faster than the regex pipeline).  Without ``owner`` the entry
    lives in the bounded memo.  With ``owner`` (an object that supports weak
    references, e.g. the :class:`~cfgmask.grammar.Grammar` that uses the
    terminal) the entry is pinned until every owner is garbage collected:
    that is for patterns whose automaton ``compile_regex`` could not rebuild
    from the text (intersections written with lookaheads).
    """
    if owner is None:
        _memo_put(pattern, dfa)
        return
    import weakref
    entry = _DFA_PINNED.get(pattern)
    if entry is None:
        entry = _DFA_PINNED[pattern] = [dfa, 0]
    entry[1] += 1
    weakref.finalize(owner, _unpin_dfa, pattern)


def _unpin_dfa(pattern):
    entry = _DFA_PINNED.get(pattern)
    if entry is not None:
        entry[1] -= 1
        if entry[1] <= 0:
            del _DFA_PINNED[pattern]


def _memo_put(pattern, dfa, build_s=None):
    if len(_DFA_MEMO) >= _DFA_MEMO_SIZE:
        old = next(iter(_DFA_MEMO))
        del _DFA_MEMO[old]
        _BUILD_S.pop(old, None)
    _DFA_MEMO[pattern] = dfa
    if build_s is None:
        _BUILD_S.pop(pattern, None)
    else:
        _BUILD_S[pattern] = build_s


def _memo_get(pattern, name, max_states, rename=True):
    entry = _DFA_PINNED.get(pattern)
    dfa = entry[0] if entry is not None else _DFA_MEMO.get(pattern)
    if dfa is None:
        return None
    if dfa.n_states > max_states:
        raise _too_large(name, max_states, "DFA")
    if rename and dfa.name != name:  # same tables, the caller's name for messages
        cls = type(dfa)
        renamed = cls.__new__(cls)
        for klass in cls.__mro__:
            for slot in getattr(klass, "__slots__", ()):
                setattr(renamed, slot, getattr(dfa, slot))
        renamed.name = name
        dfa = renamed
    return dfa


def compile_regex(pattern: str, name: str = "?", max_states: int = DEFAULT_MAX_STATES, *,
                  rename: bool = True) -> ByteDFA:
    """Compile a Python regex to its exact minimal byte DFA (see module doc).

    Raises :class:`GrammarError` naming ``name`` and the construct when the
    pattern uses something a DFA cannot express here, or when the automaton
    would need more than ``max_states`` states.  Results are memoised by
    pattern text (see :func:`remember_dfa`); a memoised automaton comes back
    as a copy carrying ``name`` unless ``rename`` is False (a caller that
    only reads its tables and names the terminal in its own messages).
    """
    cached = _memo_get(pattern, name, max_states, rename)
    if cached is not None:
        return cached
    t0 = time.perf_counter()
    dfa = _compile_regex(pattern, name, max_states)
    dfa.trans.flags.writeable = False      # shared between grammars from now on
    dfa.accepting.flags.writeable = False
    _memo_put(pattern, dfa, time.perf_counter() - t0)
    return dfa


_PARSE_MEMO = {}        # pattern -> re._parser.SubPattern, parsed ahead (insertion order = age)
_PARSE_MEMO_SIZE = 512


def parse_pattern(pattern: str):
    """``re._parser.parse(pattern, 0)``, kept for the next :func:`compile_regex` of ``pattern``.

    The grammar loader parses every terminal's regex to check it (syntax and
    width, as Lark's Earley frontend did); :func:`compile_regex` then takes
    that tree (once: it is dropped when used, and the oldest of
    :data:`_PARSE_MEMO_SIZE` unused ones go first) instead of running Python's
    regex parser a second time.  Errors are not kept.  The trees are only read
    (``getwidth`` caches its answer on the node, as ``re`` itself does).
    """
    parsed = _PARSE_MEMO.get(pattern)
    if parsed is None:
        parsed = _sre_parse.parse(pattern, 0)
        if len(_PARSE_MEMO) >= _PARSE_MEMO_SIZE:
            try:
                _PARSE_MEMO.pop(next(iter(_PARSE_MEMO)), None)
            except (RuntimeError, StopIteration):  # another thread changed it meanwhile
                pass
        _PARSE_MEMO[pattern] = parsed
    return parsed


def _compile_regex(pattern, name, max_states):
    try:
        parsed = _PARSE_MEMO.pop(pattern, None) or _sre_parse.parse(pattern, 0)
    except (re.error, OverflowError) as exc:
        raise GrammarError(f"terminal {name}: regex syntax error in {pattern!r} ({exc})",
                           where=name, construct="regex syntax") from exc
    except RecursionError as exc:
        raise _too_deep(name) from exc
    try:
        nfa = _NFABuilder(name, limit=_NFA_STATES_PER_DFA_STATE * max_states)
        start = nfa.new_state()
        final = nfa.build(parsed, parsed.state.flags, start)
        bounds = nfa.atoms()
    except RecursionError as exc:  # the AST walk recurses once per nesting level
        raise _too_deep(name) from exc
    # determinise and minimise over characters, then spell them in UTF-8
    trans, accepting, follow = _determinize(nfa, start, final, max_states, name, bounds)
    trans, accepting, follow = _minimize_and_trim(trans, accepting, follow)
    n_chars = trans.shape[0]
    trans = _expand_utf8(trans, bounds, max_states, name)
    extra = trans.shape[0] - n_chars
    accepting = np.concatenate([accepting, np.zeros(extra, dtype=bool)])
    trans, accepting, follow = _renumber_bfs(trans, accepting, list(follow) + [0] * extra)
    return ByteDFA(trans, accepting, pattern=pattern, name=name,
                   follow_forbidden=[_mask_bytes(mask) for mask in follow],
                   follow_forbidden_at_eos=[bool(mask >> _EOS_BIT & 1) for mask in follow])


def _mask_bytes(mask):
    """The bytes a constraint mask forbids, sorted, or ``None`` for none."""
    mask &= _ALL_BYTES
    return bytes(b for b in range(256) if mask >> b & 1) if mask else None


def byte_classes(dfas):
    """Partition the 256 byte values by how the given DFAs treat them.

    Two bytes share a class iff every state of every DFA sends them to the
    same target and every ``follow_forbidden`` set holds both or neither (so
    the class of the byte after a lexeme decides whether it may end).
    Returns ``(class_of_byte uint8[256], n_classes)``; classes are numbered
    in order of first appearance by byte value.
    """
    if not dfas:
        return np.zeros(256, dtype=np.uint8), 1
    # Bytes share a class iff they share one in every automaton, so the classes
    # are the distinct columns of the automata's own partitions (one small row
    # each, memoised on shared automata) rather than of all their transitions.
    rows = [d.column_class() for d in dfas]
    forbidden_sets = sorted({f for d in dfas for f in d.follow_forbidden if f})
    if forbidden_sets:
        membership = np.zeros((len(forbidden_sets), 256), dtype=np.uint8)
        for i, forbidden in enumerate(forbidden_sets):
            membership[i, list(forbidden)] = 1
        rows.extend(membership)
    class_of, representatives = _column_classes(np.stack(rows))
    return class_of, len(representatives)
