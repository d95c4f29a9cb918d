"""Decoded string languages -> regexes over the JSON *text* of a string.

JSON Schema constrains the decoded value of a string (``minLength`` counts
characters, ``pattern`` searches the value), but the model writes JSON text,
where one character has several spellings: ``é`` is also ``\\u00e9`` and
``\\u00E9``, ``/`` is also ``\\/``, a character outside the BMP is also a
surrogate-pair escape.  Everything here works on *character sets*: a decoded
regex is rebuilt node by node, and every character node becomes the
alternation of all spellings of its characters.  Because every JSON string
text decodes to exactly one value (the spelling of each character is read
off unambiguously from left to right), "the text decodes to a value in L" is
then exactly the language of the rebuilt regex.

Invariants:

* a character set is a tuple of sorted, disjoint ``(lo, hi)`` code point
  ranges without surrogates (``cfgmask.automata.unicode_tables``);
* :func:`chars_text` spells exactly one decoded character of the set, each
  way JSON allows it: raw (except ``"``, ``\\`` and U+0000-U+001F, which RFC
  8259 forbids raw), a short escape (``\\" \\\\ \\/ \\b \\f \\n \\r \\t``),
  ``\\uXXXX`` with either case of hex letters, and for U+10000 and above a
  surrogate pair of such escapes.  A *lone* surrogate escape (``"\\ud800"``)
  decodes to no Unicode string and is never accepted (a documented
  departure: RFC 8259 lets a parser do what it likes with it);
* :func:`text_regex` of a decoded regex ``R`` accepts the text of a string
  (quotes included) iff its decoded value fully matches ``R``.

ECMA-262 patterns (the JSON Schema dialect) are read with Python's regex
parser and rebuilt with explicit character sets; see
:func:`pattern_to_decoded` for how their semantics are pinned down.
"""

import re
from functools import lru_cache

from cfgmask.automata import unicode_tables as ut
from cfgmask.automata import sre_parse as _sre_parse
from cfgmask.automata.reparse import getwidth as _regex_width, parse as _parse_regex
from cfgmask.frontends.json_schema.errors import Unsupported

_C = _sre_parse

ALL = ut.UNIVERSE
# Characters RFC 8259 forbids raw inside a string.
_MUST_ESCAPE = ((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C))
_SHORT_ESCAPES = {0x22: '"', 0x5C: "\\\\", 0x2F: "/", 0x08: "b", 0x0C: "f", 0x0A: "n",
                  0x0D: "r", 0x09: "t"}


def intersect(a, b):
    """Intersection of two character sets."""
    return ut.complement(ut.union(ut.complement(a), ut.complement(b)))


def minus(a, b):
    return intersect(a, ut.complement(b))


def cp_set(*ranges):
    return ut.normalize(list(ranges))


# ---------------------------------------------------------------- spellings

def _class_item(lo, hi):
    def one(c):
        if c < 0x10000:
            return f"\\u{c:04x}"
        return f"\\U{c:08x}"
    return one(lo) if lo == hi else f"{one(lo)}-{one(hi)}"


def _code_point_class(ranges):
    """A Python regex class matching exactly the code points of ``ranges``."""
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        c = ranges[0][0]
        return re.escape(chr(c)) if 0x20 < c < 0x7F else f"[{_class_item(c, c)}]"
    return "[" + "".join(_class_item(lo, hi) for lo, hi in ranges) + "]"


def _hex_digit_class(a, b):
    """Regex class for the hex digits with values a..b (letters in both cases)."""
    parts = []
    if a <= 9:
        hi = min(b, 9)
        parts.append(str(a) if a == hi else f"{a}-{hi}")
    if b >= 10:
        lo = max(a, 10)
        lo_c, hi_c = "abcdef"[lo - 10], "abcdef"[b - 10]
        if lo == b:
            parts.append(lo_c + lo_c.upper())
        else:
            parts.append(f"{lo_c}-{hi_c}{lo_c.upper()}-{hi_c.upper()}")
    body = "".join(parts)
    if a == b and a <= 9:
        return body
    return f"[{body}]"


def split_fixed(lo, hi, width, base=16):
    """Cover the integers lo..hi (``width`` digits in ``base``) with digit-range sequences."""
    if width == 0:
        return [[]]
    p = base ** (width - 1)
    lo_d, lo_r = divmod(lo, p)
    hi_d, hi_r = divmod(hi, p)
    if lo_d == hi_d:
        return [[(lo_d, lo_d)] + s for s in split_fixed(lo_r, hi_r, width - 1, base)]
    out = []
    if lo_r != 0:
        out += [[(lo_d, lo_d)] + s for s in split_fixed(lo_r, p - 1, width - 1, base)]
        lo_d += 1
    upper_partial = hi_r != p - 1
    mid_hi = hi_d - 1 if upper_partial else hi_d
    if lo_d <= mid_hi:
        out.append([(lo_d, mid_hi)] + [(0, base - 1)] * (width - 1))
    if upper_partial:
        out += [[(hi_d, hi_d)] + s for s in split_fixed(0, hi_r, width - 1, base)]
    return out


def _hex4(ranges):
    """Regex for the 4-hex-digit spellings of the values in ``ranges`` (each <= 0xFFFF)."""
    alts = []
    for lo, hi in ranges:
        for seq in split_fixed(lo, hi, 4):
            alts.append("".join(_seq_item(a, b) for a, b in _compress(seq)))
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _compress(seq):
    # runs of the full class [0-f] become one item with a count
    out = []
    for a, b in seq:
        if out and (a, b) == (0, 15) and out[-1][0] == (0, 15):
            out[-1] = ((0, 15), out[-1][1] + 1)
        else:
            out.append(((a, b), 1))
    return [(item, n) for item, n in out]


def _seq_item(item, n):
    cls = _hex_digit_class(*item)
    return cls if n == 1 else f"{cls}{{{n}}}"


def _surrogate_pairs(ranges):
    """Regex (after ``\\u``) for the surrogate-pair spellings of astral code points."""
    pieces = {}  # high surrogate range -> low ranges
    for lo, hi in ranges:
        lo, hi = max(lo, 0x10000), hi
        if lo > hi:
            continue
        h_lo, l_lo = 0xD800 + ((lo - 0x10000) >> 10), 0xDC00 + ((lo - 0x10000) & 0x3FF)
        h_hi, l_hi = 0xD800 + ((hi - 0x10000) >> 10), 0xDC00 + ((hi - 0x10000) & 0x3FF)
        if h_lo == h_hi:
            pieces.setdefault((h_lo, h_lo), []).append((l_lo, l_hi))
            continue
        pieces.setdefault((h_lo, h_lo), []).append((l_lo, 0xDFFF))
        if h_lo + 1 <= h_hi - 1:
            pieces.setdefault((h_lo + 1, h_hi - 1), []).append((0xDC00, 0xDFFF))
        pieces.setdefault((h_hi, h_hi), []).append((0xDC00, l_hi))
    # merge high ranges that share the same low set
    by_low = {}
    for highs, lows in pieces.items():
        by_low.setdefault(_merge(lows), []).append(highs)
    alts = []
    for lows, highs in by_low.items():
        alts.append(_hex4(_merge(highs)) + "\\\\u" + _hex4(lows))
    return alts


def _merge(ranges):
    """Sorted, merged ranges (surrogates kept: these are escape values, not characters)."""
    out = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


_CANONICAL_SHORT = {0x22: '"', 0x5C: "\\\\", 0x08: "b", 0x0C: "f", 0x0A: "n", 0x0D: "r", 0x09: "t"}


def _canonical_escape(c):
    """Regex for the one spelling ``json.dumps(ensure_ascii=False)`` gives a
    must-escape character (one alternative per character: the reference
    :func:`_canonical_escapes`' factored spelling is tested against)."""
    short = _CANONICAL_SHORT.get(c)
    if short is not None:
        return "\\\\" + short
    return f"\\\\u{c:04x}"


def _canonical_escapes(codes):
    """Regex for the canonical spellings of the must-escape characters ``codes``
    (sorted): :func:`_canonical_escape`'s alternatives factored after the
    backslash, ``\\(?:[bfnrt"\\]|u00(?:0[0-7bef]|1[0-9a-f]))`` for all of them.
    The same strings; one NFA path per distinct byte instead of one per
    character, which every ``.`` of a pattern repeats (the 35 alternatives made
    ``^dev|alpha|beta|rc|RC|stable$``'s subset construction 16 ms)."""
    shorts = [_CANONICAL_SHORT[c] for c in codes if c in _CANONICAL_SHORT]
    alts = []
    if shorts:
        alts.append(shorts[0] if len(shorts) == 1 else "[" + "".join(shorts) + "]")
    by_high = {}
    for c in codes:
        if c not in _CANONICAL_SHORT:     # U+0000-U+001F: \u00 and two hex digits
            by_high.setdefault(c >> 4, []).append("0123456789abcdef"[c & 0xF])
    hexes = [f"{high}{lows[0] if len(lows) == 1 else '[' + ''.join(lows) + ']'}"
             for high, lows in sorted(by_high.items())]
    if hexes:
        alts.append("u00" + (hexes[0] if len(hexes) == 1 else "(?:" + "|".join(hexes) + ")"))
    return "\\\\" + (alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")")


# An empty character set in a text regex.  The decoded regexes spell it
# "(?!)" (decoded_class), which compile_regex refuses inside a sequence; an
# empty class compiles to "no byte" anywhere.
NO_CHAR_TEXT = "[^\\s\\S]"


@lru_cache(maxsize=4096)
def chars_text(ranges, canonical=False):
    """Regex spelling exactly one character of the set ``ranges`` in JSON string text.

    ``canonical``: only the spelling ``json.dumps(..., ensure_ascii=False)``
    writes: every character raw except ``"``, ``\\`` and U+0000-U+001F,
    which take their short escape or lowercase ``\\u00xx``.
    """
    ranges = tuple(ranges)
    if canonical:
        alts = []
        raw = minus(ranges, _MUST_ESCAPE)
        if raw:
            alts.append(_code_point_class(raw))
        escaped = [c for lo, hi in intersect(ranges, _MUST_ESCAPE) for c in range(lo, hi + 1)]
        if escaped:
            alts.append(_canonical_escapes(escaped))
        if not alts:
            return NO_CHAR_TEXT
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
    alts = []
    raw = minus(ranges, _MUST_ESCAPE)
    if raw:
        alts.append(_code_point_class(raw))
    esc = []
    shorts = [s for c, s in _SHORT_ESCAPES.items() if ut.contains(ranges, c)]
    if shorts:
        esc.append(shorts[0] if len(shorts) == 1 and shorts[0] != "\\\\"
                   else "[" + "".join("\\\\" if s == "\\\\" else re.escape(s) for s in shorts) + "]")
    u_alts = []
    bmp = intersect(ranges, ((0, 0xFFFF),))
    if bmp:
        u_alts.append(_hex4(bmp))
    u_alts += _surrogate_pairs(intersect(ranges, ((0x10000, ut.MAX_CODE_POINT),)))
    if u_alts:
        esc.append("u" + (u_alts[0] if len(u_alts) == 1 else "(?:" + "|".join(u_alts) + ")"))
    if esc:
        alts.append("\\\\" + (esc[0] if len(esc) == 1 else "(?:" + "|".join(esc) + ")"))
    if not alts:
        return NO_CHAR_TEXT
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


JSON_CHAR = chars_text(ALL)
JSON_CHAR_CANONICAL = chars_text(ALL, True)
# Any JSON string: the text of the quoted string, quotes included.
ANY_STRING = f'"{JSON_CHAR}*"'
ANY_STRING_CANONICAL = f'"{JSON_CHAR_CANONICAL}*"'


def json_char(canonical=False):
    return JSON_CHAR_CANONICAL if canonical else JSON_CHAR


def any_string(canonical=False):
    return ANY_STRING_CANONICAL if canonical else ANY_STRING


def literal_body(value, canonical=False):
    """Regex for every spelling of the decoded string ``value`` (without quotes)."""
    return "".join(chars_text(((ord(c), ord(c)),), canonical) for c in value)


def literal_text(value, canonical=False):
    """Regex for every JSON text of the string ``value`` (quotes included)."""
    _check_scalar_values(value)
    return f'"{literal_body(value, canonical)}"'


def _check_scalar_values(value):
    for c in value:
        if 0xD800 <= ord(c) <= 0xDFFF:
            raise Unsupported("const", "a string with a lone surrogate has no UTF-8 spelling")


# ------------------------------------------------- decoded regex -> text regex

@lru_cache(maxsize=4096)
def text_regex(decoded, canonical=False):
    """JSON text regex (quotes included) for strings whose value fully matches ``decoded``.

    ``decoded`` is a Python regex over code points built by this package:
    explicit classes, groups, alternation and repeats only.
    """
    parsed = _parsed(decoded)
    return '"' + _rebuild(parsed, parsed.state.flags, canonical) + '"'


@lru_cache(maxsize=256)
def _parsed(decoded):
    """The parse of a decoded regex, shared by :func:`text_regex` and :func:`width`
    (read, never changed), by the compiled parser where it covers the syntax
    (``automata.reparse``: ``re``'s own tree, its errors from ``re`` itself)."""
    return _parse_regex(decoded, 0)


def _rebuild(seq, flags, canonical):
    out = []
    for op, av in seq:
        out.append(_rebuild_item(op, av, flags, canonical))
    return "".join(out)


def _rebuild_item(op, av, flags, canonical):
    if op in (_C.LITERAL, _C.NOT_LITERAL, _C.ANY, _C.IN):
        return _item_text(op, tuple(av) if op is _C.IN else av, flags, canonical)
    if op is _C.BRANCH:
        return "(?:" + "|".join(_rebuild(b, flags, canonical) for b in av[1]) + ")"
    if op is _C.SUBPATTERN:
        _group, add, dele, p = av
        return "(?:" + _rebuild(p, (flags | add) & ~dele, canonical) + ")"
    if op in (_C.MAX_REPEAT, _C.MIN_REPEAT):
        lo, hi, p = av
        body = "(?:" + _rebuild(p, flags, canonical) + ")"
        if hi is _C.MAXREPEAT:
            return body + ("*" if lo == 0 else "+" if lo == 1 else f"{{{lo},}}")
        return body + (f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}")
    if op is _C.ASSERT_NOT and not av[1]:
        return NO_CHAR_TEXT  # "(?!)": a class that no character is in (e.g. [^\s\S])
    raise AssertionError(f"internal: unexpected regex node {op} in a decoded regex")


@lru_cache(maxsize=4096)
def _item_text(op, av, flags, canonical):
    """``chars_text`` of one character node (``av`` of a class as a tuple),
    memoised: a format's regex repeats its classes (the e-mail format's IPv6
    part has the hex digit class ~40 times), and the set algebra behind one
    spelling was most of a new process's e-mail automaton (3.5 ms)."""
    return chars_text(_item_set(op, av, flags), canonical)


def _item_set(op, av, flags):
    if op is _C.LITERAL:
        return ((av, av),) if not 0xD800 <= av <= 0xDFFF else ()
    if op is _C.NOT_LITERAL:
        return ut.complement(((av, av),))
    if op is _C.ANY:
        return ALL if flags & _C.SRE_FLAG_DOTALL else ut.complement(((10, 10),))
    negate = False
    parts = []
    for iop, iav in av:
        if iop is _C.NEGATE:
            negate = True
        elif iop is _C.LITERAL:
            parts.append((iav, iav))
        elif iop is _C.RANGE:
            parts.append(iav)
        else:
            raise AssertionError(f"internal: unexpected class item {iop} in a decoded regex")
    s = ut.normalize([r for r in parts if not (0xD800 <= r[0] and r[1] <= 0xDFFF)])
    s = minus(s, ((0xD800, 0xDFFF),)) if s else s
    return ut.complement(s) if negate else s


def decoded_class(ranges):
    """A decoded-regex class for the character set ``ranges``."""
    if not ranges:
        return "(?!)"
    return _code_point_class(tuple(ranges))


ANY_DECODED = decoded_class(ALL)


def length_regex(lo, hi):
    """Decoded regex: any string of ``lo`` to ``hi`` characters (``hi`` None: unbounded)."""
    if hi is None:
        return f"{ANY_DECODED}{{{lo},}}" if lo else f"{ANY_DECODED}*"
    return f"{ANY_DECODED}{{{lo},{hi}}}"


@lru_cache(maxsize=4096)
def width(decoded):
    """``(min, max)`` length in characters of what ``decoded`` matches (max None: unbounded)."""
    lo, hi = _regex_width(_parsed(decoded))
    return lo, (None if hi >= _C.MAXREPEAT - 1 or hi >= 2 ** 31 - 1 else hi)


# ------------------------------------------------------- ECMA-262 patterns

# The character sets of the ECMA-262 escapes.  The jsonschema package (the
# usual reference implementation in Python) runs patterns with Python's
# ``re``, whose \d \w \s are Unicode-aware.  A pattern is read so that what
# it matches is matched under *both* readings: positive escapes take the
# intersection of the two sets, negated ones (\D, [^\d]) the complement of
# the union.  "." is any character but the ECMA line terminators.
_ECMA_DIGIT = ((0x30, 0x39),)
_ECMA_WORD = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_ECMA_SPACE = ut.normalize([(0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680),
                            (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F),
                            (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF)])
_LINE_TERMINATORS = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))


@lru_cache(maxsize=None)
def _python_set(escape):
    return ut.scan_ranges(escape)


def _category_set(cat, polarity):
    """The set of one escape class; ``polarity`` +1 = must be contained, -1 = must contain."""
    table = {
        _C.CATEGORY_DIGIT: (_ECMA_DIGIT, r"\d", False),
        _C.CATEGORY_NOT_DIGIT: (_ECMA_DIGIT, r"\d", True),
        _C.CATEGORY_WORD: (_ECMA_WORD, r"\w", False),
        _C.CATEGORY_NOT_WORD: (_ECMA_WORD, r"\w", True),
        _C.CATEGORY_SPACE: (_ECMA_SPACE, r"\s", False),
        _C.CATEGORY_NOT_SPACE: (_ECMA_SPACE, r"\s", True),
    }
    if cat not in table:
        raise Unsupported("pattern", f"escape class {cat}")
    ecma, py_escape, negated = table[cat]
    py = _python_set(py_escape)
    # the positive set we need: small (intersection) or large (union)
    want_small = (polarity > 0) != negated
    base = intersect(ecma, py) if want_small else ut.union(ecma, py)
    return ut.complement(base) if negated else base


@lru_cache(maxsize=4096)
def pattern_to_decoded(pattern):
    """The ``pattern`` keyword as a decoded regex with full-match semantics.

    JSON Schema patterns are unanchored searches: the result matches a string
    iff the pattern matches somewhere in it.  ``^`` and ``$`` (no multiline
    flag in JSON Schema) pin an alternative to the start or end.  Raises
    :class:`Unsupported` for what an automaton cannot do here (lookaround,
    backreferences, word boundaries, anchors in the middle) and for syntax
    ECMA-262 has but Python's parser reads differently (``\\p{..}``,
    ``\\u{..}``, named groups ``(?<n>..)``, ``[^]``).
    """
    if not isinstance(pattern, str):
        raise Unsupported("pattern", "the pattern is not a string")
    for bad, why in ((r"\p{", "Unicode property escapes"), (r"\P{", "Unicode property escapes"),
                     (r"\u{", "\\u{...} escapes"), ("(?<", "named groups or lookbehind"),
                     ("[^]", "the empty negated class"), (r"\k<", "named backreferences")):
        if bad in pattern:
            raise Unsupported("pattern", why)
    if re.search(r"\(\?[aiLmsux-]", pattern):
        raise Unsupported("pattern", "inline flags are not ECMA-262")
    try:
        parsed = _parse_regex(pattern, 0)
    except re.error as e:
        raise Unsupported("pattern", f"not a regex Python can read ({e})") from None
    alts = []
    for start, end, body in _anchored_alternatives(list(parsed), False, False, [0]):
        core = _ecma_seq(body, +1)
        nullable = matches_empty(body)
        if not start and not end and nullable:
            return f"{ANY_DECODED}*"  # matches (the empty string) inside every value
        alts.append(("" if start else f"{ANY_DECODED}*") + f"(?:{core})" +
                    ("" if end else f"{ANY_DECODED}*"))
    if not alts:
        return "(?!)"
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def matches_empty(seq):
    """Whether the parsed items ``seq`` (those :func:`_ecma_seq` accepts) match "".

    Read off the tree: ``re.fullmatch(core, "")`` on the rewritten pattern gave
    the same answer (tests/test_json_schema.py compares them), but
    compiling a pattern whose ECMA classes span much of Unicode spends most of
    its time in ``re``'s charset optimiser (MaskBench's Handwritten---allany17:
    133 ms of 480).  Not ``getwidth()``: an empty class (``[^\\s\\S]``) has
    width 0 there but matches nothing."""
    for op, av in seq:
        if op in (_C.LITERAL, _C.NOT_LITERAL, _C.ANY, _C.IN):
            return False
        if op is _C.BRANCH:
            if not any(matches_empty(b) for b in av[1]):
                return False
        elif op is _C.SUBPATTERN:
            if not matches_empty(av[3]):
                return False
        elif op in (_C.MAX_REPEAT, _C.MIN_REPEAT):
            if av[0] != 0 and not matches_empty(av[2]):
                return False
        else:
            raise AssertionError(f"internal: {op} in a pattern _ecma_seq accepted")
    return True


@lru_cache(maxsize=4096)
def anchored_prefix(pattern):
    """The literal text every match of ``pattern`` starts the value with, or None.

    Only for patterns with a single alternative anchored at the start; used
    to see cheaply that two patterns cannot match the same string.
    """
    try:
        parsed = _parse_regex(pattern, 0)
        alts = _anchored_alternatives(list(parsed), False, False, [0])
    except (re.error, Unsupported):
        return None
    if len(alts) != 1 or not alts[0][0]:
        return None
    out = []

    def walk(seq):
        for op, av in seq:
            if op is _C.LITERAL:
                out.append(chr(av))
            elif _plain_group((op, av)):
                if not walk(av[3]):
                    return False
            else:
                return False
        return True
    walk(alts[0][2])
    return "".join(out)


def patterns_disjoint(p1, p2):
    """True when no string can match both patterns (a cheap, incomplete check)."""
    a, b = anchored_prefix(p1), anchored_prefix(p2)
    if not a or not b:
        return False
    return not (a.startswith(b) or b.startswith(a))


def _is_at(item, which):
    op, av = item
    return op is _C.AT and av in which


_BEGIN = (_C.AT_BEGINNING, _C.AT_BEGINNING_STRING)
_END = (_C.AT_END, _C.AT_END_STRING)


def _plain_group(item):
    op, av = item
    return op is _C.SUBPATTERN and not av[1] and not av[2]


def _anchored_alternatives(seq, start, end, budget):
    """Distribute alternation until each alternative is ``^? body $?`` with no anchor inside."""
    budget[0] += 1
    if budget[0] > 256:
        raise Unsupported("pattern", "too many anchored alternatives")
    while seq and _is_at(seq[0], _BEGIN):
        start = True
        seq = seq[1:]
    while seq and _is_at(seq[-1], _END):
        end = True
        seq = seq[:-1]
    if not _has_anchor(seq):
        return [(start, end, seq)]
    if len(seq) == 1 and _plain_group(seq[0]):
        return _anchored_alternatives(list(seq[0][1][3]), start, end, budget)
    # an alternation (or a group holding one) at the front or the back: distribute it
    for pos in (0, len(seq) - 1):
        item = seq[pos]
        branches = _branches_of(item)
        if branches is None or not any(_has_anchor(b) for b in branches):
            continue
        out = []
        for b in branches:
            new = seq[:pos] + list(b) + seq[pos + 1:]
            out += _anchored_alternatives(new, start, end, budget)
        return out
    raise Unsupported("pattern", "an anchor (^ or $) that is not at the start or end of an alternative")


def _branches_of(item):
    op, av = item
    if op is _C.BRANCH:
        return av[1]
    if _plain_group(item):
        inner = list(av[3])
        if len(inner) == 1 and inner[0][0] is _C.BRANCH:
            return inner[0][1][1]
        return [inner]
    return None


def _has_anchor(seq):
    for op, av in seq:
        if op is _C.AT:
            if av in (_C.AT_BOUNDARY, _C.AT_NON_BOUNDARY):
                raise Unsupported("pattern", "word boundaries (\\b, \\B)")
            return True
        if op is _C.BRANCH and any(_has_anchor(b) for b in av[1]):
            return True
        if op is _C.SUBPATTERN and _has_anchor(av[3]):
            return True
        if op in (_C.MAX_REPEAT, _C.MIN_REPEAT) and _has_anchor(av[2]):
            return True
    return False


def _ecma_seq(seq, polarity):
    return "".join(_ecma_item(op, av) for op, av in seq)


def _ecma_item(op, av):
    if op is _C.LITERAL:
        if 0xD800 <= av <= 0xDFFF:
            raise Unsupported("pattern", "surrogate code points in the pattern")
        return decoded_class(((av, av),))
    if op is _C.NOT_LITERAL:
        return decoded_class(ut.complement(((av, av),)))
    if op is _C.ANY:
        return decoded_class(ut.complement(_LINE_TERMINATORS))
    if op is _C.IN:
        return decoded_class(_ecma_class(av))
    if op is _C.BRANCH:
        return "(?:" + "|".join(_ecma_seq(b, 1) for b in av[1]) + ")"
    if op is _C.SUBPATTERN:
        _g, add, dele, p = av
        if add or dele:
            raise Unsupported("pattern", "inline flags are not ECMA-262")
        return "(?:" + _ecma_seq(p, 1) + ")"
    if op in (_C.MAX_REPEAT, _C.MIN_REPEAT):
        lo, hi, p = av
        body = "(?:" + _ecma_seq(p, 1) + ")"
        if hi is _C.MAXREPEAT:
            return body + ("*" if lo == 0 else "+" if lo == 1 else f"{{{lo},}}")
        return body + (f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}")
    if op is _C.AT:
        if av in (_C.AT_BOUNDARY, _C.AT_NON_BOUNDARY):
            raise Unsupported("pattern", "word boundaries (\\b, \\B)")
        raise Unsupported("pattern", "an anchor (^ or $) that is not at the start or end of an alternative")
    names = {_C.ASSERT: "lookahead or lookbehind", _C.ASSERT_NOT: "negative lookahead or lookbehind",
             _C.GROUPREF: "backreferences", _C.GROUPREF_EXISTS: "conditionals"}
    raise Unsupported("pattern", names.get(op, f"the construct {op}"))


def _ecma_class(items):
    negate = bool(items) and items[0][0] is _C.NEGATE
    polarity = -1 if negate else +1
    parts = []
    for op, av in items[1:] if negate else items:
        if op is _C.LITERAL:
            if 0xD800 <= av <= 0xDFFF:
                raise Unsupported("pattern", "surrogate code points in the pattern")
            parts.append(((av, av),))
        elif op is _C.RANGE:
            parts.append(minus(((av[0], av[1]),), ((0xD800, 0xDFFF),)))
        elif op is _C.CATEGORY:
            parts.append(_category_set(av, polarity))
        else:
            raise Unsupported("pattern", f"class item {op}")
    s = ut.union(*parts) if parts else ()
    return ut.complement(s) if negate else s


# ------------------------------------------------------------------ formats

def _alt(*xs):
    return "(?:" + "|".join(xs) + ")"


_D = "[0-9]"
_HEXD = "[0-9A-Fa-f]"
_MONTH31 = _alt("0[13578]", "1[02]")
_MONTH30 = _alt("0[469]", "11")
_LEAP_YEAR = _alt(f"{_D}{_D}" + _alt("0[48]", "[2468][048]", "[13579][26]"),
                  _alt("[02468][048]", "[13579][26]") + "00")
_FULL_DATE = _alt(
    f"{_D}{{4}}-" + _alt(f"{_MONTH31}-" + _alt("0[1-9]", "[12][0-9]", "3[01]"),
                         f"{_MONTH30}-" + _alt("0[1-9]", "[12][0-9]", "30"),
                         "02-" + _alt("0[1-9]", "1[0-9]", "2[0-8]")),
    f"{_LEAP_YEAR}-02-29")
_HOUR = _alt("[01][0-9]", "2[0-3]")
_MINUTE = "[0-5][0-9]"
_PARTIAL_TIME = f"{_HOUR}:{_MINUTE}:{_MINUTE}(?:\\.{_D}+)?"
_OFFSET = _alt("[Zz]", f"[+-]{_HOUR}:{_MINUTE}")
_FULL_TIME = _PARTIAL_TIME + _OFFSET
_DEC_OCTET = _alt("25[0-5]", "2[0-4][0-9]", "1[0-9]{2}", "[1-9][0-9]", "[0-9]")
_IPV4 = f"{_DEC_OCTET}(?:\\.{_DEC_OCTET}){{3}}"
_H16 = f"{_HEXD}{{1,4}}"
_LS32 = _alt(f"{_H16}:{_H16}", _IPV4)


def _ipv6_rfc4291():
    # RFC 3986 section 3.2.2 IPv6address, verbatim
    h = f"{_H16}:"
    return _alt(
        f"(?:{h}){{6}}{_LS32}",
        f"::(?:{h}){{5}}{_LS32}",
        f"(?:{_H16})?::(?:{h}){{4}}{_LS32}",
        f"(?:(?:{h}){{0,1}}{_H16})?::(?:{h}){{3}}{_LS32}",
        f"(?:(?:{h}){{0,2}}{_H16})?::(?:{h}){{2}}{_LS32}",
        f"(?:(?:{h}){{0,3}}{_H16})?::{h}{_LS32}",
        f"(?:(?:{h}){{0,4}}{_H16})?::{_LS32}",
        f"(?:(?:{h}){{0,5}}{_H16})?::{_H16}",
        f"(?:(?:{h}){{0,6}}{_H16})?::",
    )


_IPV6 = _ipv6_rfc4291()
# hostname: RFC 1123 section 2.1 labels (letters, digits, inner hyphens) of 1 to
# 63 characters; the 253-character total (RFC 1034 section 3.1) is the
# maxLength in FORMAT_MAX_LENGTH.  A label with "--" in its 3rd and 4th
# characters is reserved (RFC 5891 section 4.2.3.1): only an A-label ("xn--"
# and valid Punycode, RFC 5891 section 4.4) may be one, and that is refused
# here (a documented under-approximation: Punycode validity is not checked).
_LDH = "[A-Za-z0-9-]"
_LET_DIG = "[A-Za-z0-9]"
_LABEL = _alt(_LET_DIG, _LET_DIG * 2, _LET_DIG + _LDH + _LET_DIG, _LET_DIG + _LDH * 2 + _LET_DIG,
              _LET_DIG + _LDH + _alt(_LET_DIG + _LDH, "-" + _LET_DIG) + f"{_LDH}{{0,58}}{_LET_DIG}")
_HOSTNAME = f"{_LABEL}(?:\\.{_LABEL})*"
# email: RFC 5321 section 4.1.2 Mailbox, the ABNF as written: Local-part
# (Dot-string or Quoted-string) "@" (Domain or address-literal).  The size
# limits of section 4.5.3.1 (local part 64, domain 255 octets) are not part of
# the ABNF and are not applied.  General-address-literal is left out: its
# Standardized-tag must be registered with IANA, and the only registered tag
# is "IPv6", which IPv6-address-literal covers.
_ATEXT = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
_QTEXT_SMTP = r"[ !#-\[\]-~]"
_QPAIR_SMTP = r"\\[ -~]"
_LOCAL_PART = _alt(f"{_ATEXT}+(?:\\.{_ATEXT}+)*", f'"(?:{_QTEXT_SMTP}|{_QPAIR_SMTP})*"')
_SMTP_DOMAIN = f"{_LET_DIG}(?:[A-Za-z0-9-]*{_LET_DIG})?(?:\\.{_LET_DIG}(?:[A-Za-z0-9-]*{_LET_DIG})?)*"
_SNUM = _alt("25[0-5]", "2[0-4][0-9]", "[01]?[0-9]{1,2}")
_SMTP_IPV4 = f"{_SNUM}(?:\\.{_SNUM}){{3}}"


def _smtp_ipv6():
    # IPv6-full / IPv6-comp / IPv6v4-full / IPv6v4-comp, with the group counts
    # of their comments ("::" stands for at least two groups)
    h = f"{_HEXD}{{1,4}}"

    def groups(n, trail=""):
        # exactly n groups separated by ":" (then ``trail`` after each when given)
        if n == 0:
            return ""
        if trail:
            return f"(?:{h}{trail}){{{n}}}"
        return h + (f"(?::{h}){{{n - 1}}}" if n > 1 else "")

    comp = _alt(*(groups(a) + "::" + _alt(*(groups(b) for b in range(0, 7 - a)))
                  for a in range(0, 7)))
    v4comp = _alt(*(groups(a) + "::" + _alt(*(groups(b, ":") for b in range(0, 5 - a)))
                    for a in range(0, 5))) + _SMTP_IPV4
    return _alt(groups(8), comp, groups(6, ":") + _SMTP_IPV4, v4comp)


_ADDRESS_LITERAL = r"\[" + _alt(_SMTP_IPV4, "IPv6:" + _smtp_ipv6()) + r"\]"
_EMAIL = f"{_LOCAL_PART}@" + _alt(_SMTP_DOMAIN, _ADDRESS_LITERAL)


def _cls(*ranges):
    """A decoded-regex class of code point ranges (``(lo, hi)`` pairs or single characters)."""
    out = []
    for r in ranges:
        lo, hi = (r, r) if isinstance(r, int) else r
        out.append(f"\\U{lo:08X}" if lo == hi else f"\\U{lo:08X}-\\U{hi:08X}")
    return "[" + "".join(out) + "]"


# RFC 3987 ucschar and iprivate
_UCSCHAR = ((0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF)) + tuple(
    (p << 16, (p << 16) + 0xFFFD) for p in range(1, 14)) + ((0xE1000, 0xEFFFD),)
_IPRIVATE = ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))


def _uri_family(iri):
    """``(absolute, reference)``: RFC 3986 URI and URI-reference, or with ``iri``
    RFC 3987 IRI and IRI-reference (ucschar in the unreserved characters,
    iprivate in the query)."""
    unreserved = "[A-Za-z0-9._~-]"
    if iri:
        unreserved = _alt(unreserved, _cls(*_UCSCHAR))
    pct = f"%{_HEXD}{_HEXD}"
    sub_delims = "[!$&'()*+,;=]"
    pchar = _alt(unreserved, pct, sub_delims, "[:@]")
    segment, segment_nz = f"{pchar}*", f"{pchar}+"
    segment_nz_nc = _alt(unreserved, pct, sub_delims, "@") + "+"
    ip_literal = r"\[" + _alt(_IPV6, f"[vV]{_HEXD}+\\." + _alt("[A-Za-z0-9._~-]", sub_delims, ":")
                              + "+") + r"\]"
    reg_name = _alt(unreserved, pct, sub_delims) + "*"
    host = _alt(ip_literal, _IPV4, reg_name)
    authority = "(?:" + _alt(unreserved, pct, sub_delims, ":") + "*@)?" + host + "(?::[0-9]*)?"
    path_abempty = f"(?:/{segment})*"
    path_absolute = f"/(?:{segment_nz}(?:/{segment})*)?"
    hier_part = _alt(f"//{authority}{path_abempty}", path_absolute,
                     f"{segment_nz}(?:/{segment})*", "")
    relative_part = _alt(f"//{authority}{path_abempty}", path_absolute,
                         f"{segment_nz_nc}(?:/{segment})*", "")
    query = _alt(pchar, _cls(*_IPRIVATE), "[/?]") + "*" if iri else _alt(pchar, "[/?]") + "*"
    fragment = _alt(pchar, "[/?]") + "*"
    tail = f"(?:\\?{query})?(?:#{fragment})?"
    absolute = f"[A-Za-z][A-Za-z0-9+.-]*:{hier_part}{tail}"
    return absolute, _alt(absolute, relative_part + tail)


_URI, _URI_REFERENCE = _uri_family(False)
_IRI, _IRI_REFERENCE = _uri_family(True)
# uri-template: RFC 6570 section 2, any level (URI-Template = *( literals / expression )).
# The literals ABNF of section 2.1 leaves out "'" (%x27), a sub-delim that
# section 3.1 copies like any other URI character; it is allowed here, as the
# JSON-Schema-Test-Suite reads the RFC.
_UT_PCT = f"%{_HEXD}{_HEXD}"
_UT_LITERAL = _alt(_cls(0x21, (0x23, 0x24), (0x26, 0x3B), 0x3D, (0x3F, 0x5B), 0x5D, 0x5F,
                        (0x61, 0x7A), 0x7E, *_UCSCHAR, *_IPRIVATE), _UT_PCT)
_UT_VARCHAR = _alt("[A-Za-z0-9_]", _UT_PCT)
_UT_VARSPEC = f"{_UT_VARCHAR}(?:\\.?{_UT_VARCHAR})*" + _alt(":[1-9][0-9]{0,3}", r"\*", "")
_UT_EXPRESSION = r"\{[+#./;?&=,!@|]?" + f"{_UT_VARSPEC}(?:,{_UT_VARSPEC})*" + r"\}"
_URI_TEMPLATE = _alt(_UT_LITERAL, _UT_EXPRESSION) + "*"
# json-pointer: RFC 6901 section 3; relative-json-pointer: draft-bhutton-
# relative-json-pointer-00 section 3 (the draft JSON Schema 2020-12 cites), with
# its index manipulation ("+" / "-" positive integer) after the prefix
_JSON_POINTER = "(?:/(?:[^/~]|~[01])*)*"
_RELATIVE_JSON_POINTER = "(?:0|[1-9][0-9]*)(?:[+-][1-9][0-9]*)?" + _alt("#", _JSON_POINTER)
_UUID = f"{_HEXD}{{8}}-{_HEXD}{{4}}-{_HEXD}{{4}}-{_HEXD}{{4}}-{_HEXD}{{12}}"
# duration: RFC 3339 appendix A, verbatim
_N = f"{_D}+"
_DUR_SECOND = f"{_N}S"
_DUR_MINUTE = f"{_N}M(?:{_DUR_SECOND})?"
_DUR_HOUR = f"{_N}H(?:{_DUR_MINUTE})?"
_DUR_TIME = "T" + _alt(_DUR_HOUR, _DUR_MINUTE, _DUR_SECOND)
_DUR_DAY = f"{_N}D"
_DUR_MONTH = f"{_N}M(?:{_DUR_DAY})?"
_DUR_YEAR = f"{_N}Y(?:{_DUR_MONTH})?"
_DUR_DATE = _alt(_DUR_DAY, _DUR_MONTH, _DUR_YEAR) + f"(?:{_DUR_TIME})?"
_DURATION = "P" + _alt(_DUR_DATE, _DUR_TIME, f"{_N}W")

# Decoded regexes (full match) of the asserted formats.
FORMATS = {
    "date-time": f"{_FULL_DATE}[Tt]{_FULL_TIME}",
    "date": _FULL_DATE,
    "time": _FULL_TIME,
    "duration": _DURATION,
    "email": _EMAIL,
    "hostname": _HOSTNAME,
    "ipv4": _IPV4,
    "ipv6": _IPV6,
    "uri": _URI,
    "uri-reference": _URI_REFERENCE,
    "iri": _IRI,
    "iri-reference": _IRI_REFERENCE,
    "uri-template": _URI_TEMPLATE,
    "json-pointer": _JSON_POINTER,
    "relative-json-pointer": _RELATIVE_JSON_POINTER,
    "uuid": _UUID,
}
# A length bound that belongs to a format but is kept out of its regex (the
# product automaton would be large); the normaliser adds it as a maxLength.
FORMAT_MAX_LENGTH = {"hostname": 253}
# Draft 2020-12 formats whose language is not checked here (strict=True refuses
# them, strict=False reads them as annotations): an ECMA-262 regex nests
# parentheses (not a regular language); an IDNA2008 U-label (idn-hostname,
# the domain of idn-email) needs its Punycode A-label to fit 63 octets, besides
# code point properties, contextual and Bidi rules and NFC.  Other unknown
# formats are annotations, as the specification says.
UNCHECKED_FORMATS = {
    "regex": "an ECMA-262 regular expression nests parentheses: not a regular language",
    "idn-hostname": "IDNA2008 U-label validity (RFC 5891: code point properties, contextual "
                    "and Bidi rules, NFC, a Punycode A-label of at most 63 octets) is not "
                    "checked by a regular expression here",
    "idn-email": "the domain of an RFC 6531 address may be an IDNA2008 U-label, whose validity "
                 "(RFC 5891) is not checked by a regular expression here",
}
