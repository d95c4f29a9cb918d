"""Python regex syntax: parse trees, flags, and the code points of one character.

Everything the automata take from a regex's *text* lives here, read with
Python's own parser (``re._parser``, exported as :data:`sre_parse`), so that
syntax, flags and classes mean exactly what they mean to ``re``; the trees come
from :func:`cfgmask.automata.reparse.parse`, which answers with the same tree
and errors as ``re._parser.parse``, from C for the common syntax:

* the parser's opcodes (``LITERAL``, ``IN``, ``BRANCH``, ...) and flags;
* :func:`char_ranges`: the code points one character node matches under the
  flags in force (case folding and ``\\d \\w \\s`` asked of ``re`` itself,
  :mod:`~cfgmask.automata.unicode_tables`); :func:`one_char_ranges` for a
  sub-pattern that is one character from a set;
* :func:`repeat_classes`: the one-character classes a pattern repeats;
* :func:`parse_pattern` / :func:`parsed_pattern`: a bounded memo of parse
  trees, so that a pattern the grammar loader checked is not parsed again.

Invariants: a code point set is a tuple of sorted, disjoint, non-adjacent
``(lo, hi)`` ranges without surrogates (:mod:`~cfgmask.automata.unicode_tables`);
parse trees are only read, never changed; :func:`escape_code_point` and
:func:`class_regex` write text that ``re`` parses back to the same code points.
"""

from functools import lru_cache

from cfgmask.automata import unicode_tables as ut
from cfgmask.automata.reparse import getwidth as regex_width, parse as parse_regex, sre_parse
from cfgmask.cache import BoundedMemo

_C = sre_parse  # opcodes and flags are re-exported by the parser module
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
CHAR_FLAGS = FLAG_IGNORECASE | FLAG_DOTALL | FLAG_ASCII   # what a character node depends on

_CATEGORY_ESCAPES = {
    _C.CATEGORY_DIGIT: r"\d", _C.CATEGORY_NOT_DIGIT: r"\D",
    _C.CATEGORY_SPACE: r"\s", _C.CATEGORY_NOT_SPACE: r"\S",
    _C.CATEGORY_WORD: r"\w", _C.CATEGORY_NOT_WORD: r"\W",
}

ANCHOR_NAMES = {
    _C.AT_BEGINNING: "^", _C.AT_BEGINNING_STRING: "\\A",
    _C.AT_END: "$", _C.AT_END_STRING: "\\Z",
    _C.AT_BOUNDARY: "\\b", _C.AT_NON_BOUNDARY: "\\B",
}

# ---------------------------------------------------------------------------
# Character nodes -> sets of code points
# ---------------------------------------------------------------------------

def escape_code_point(code_point: int) -> str:
    """``code_point`` as a regex escape (``\\Uxxxxxxxx``), valid inside and outside a class."""
    return f"\\U{code_point:08x}"


def _render_char_node(op, av) -> str:
    """Regex text for one character node, re-parsed by ``re`` into the same node."""
    if op is LITERAL:
        return escape_code_point(av)
    if op is NOT_LITERAL:
        return "[^" + escape_code_point(av) + "]"
    parts = []
    for item_op, item_av in av:
        if item_op is NEGATE:
            parts.append("^")
        elif item_op is LITERAL:
            parts.append(escape_code_point(item_av))
        elif item_op is RANGE:
            parts.append(escape_code_point(item_av[0]) + "-" + escape_code_point(item_av[1]))
        elif item_op is CATEGORY:
            parts.append(_CATEGORY_ESCAPES[item_av])
        else:  # pragma: no cover - the parser emits nothing else in a class
            raise ValueError(f"unexpected class item {item_op}")
    if len(av) == 1 and av[0][0] is LITERAL:
        # "[x]" would be re-parsed as a plain literal; "[xx]" stays a class.
        parts.append(parts[0])
    return "[" + "".join(parts) + "]"


@lru_cache(maxsize=4096)
def char_ranges(op, av, flags) -> tuple:
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


def one_char_ranges(subpattern, flags):
    """The code points of ``subpattern`` if it matches exactly the strings of
    one character from a set (a literal, a class, an alternation of those,
    possibly grouped); otherwise ``None``."""
    items = subpattern.data        # the list itself: SubPattern's __len__/__getitem__ are Python calls
    if len(items) != 1:
        return None
    op, av = items[0]
    if op in (LITERAL, NOT_LITERAL, ANY):
        return char_ranges(op, av, char_flags(flags))
    if op is IN:
        return char_ranges(op, tuple(av), char_flags(flags))
    if op is SUBPATTERN:
        _group, add_flags, del_flags, body = av
        return one_char_ranges(body, combine_flags(flags, add_flags, del_flags))
    if op is BRANCH:
        parts = [one_char_ranges(alternative, flags) for alternative in av[1]]
        return None if any(part is None for part in parts) else ut.union(*parts)
    if (op is MAX_REPEAT or op is MIN_REPEAT) and av[0] == av[1] == 1:
        return one_char_ranges(av[2], flags)
    return None


def min_width_is_zero(subpattern):
    """Exactly ``subpattern.getwidth()[0] == 0``: whether the pattern can match the
    empty string by ``re._parser``'s widths (Lark refuses such a terminal),
    measured in C (:func:`cfgmask.automata.reparse.getwidth`: in Python, the
    widths of JavaScript's 19 KB regex-literal terminals were a visible part of
    its load)."""
    return regex_width(subpattern)[0] == 0


def combine_flags(flags, add_flags, del_flags):
    """The flags inside a group ``(?add-del:...)`` entered with ``flags``."""
    # Same rule as re._compiler: a scoped (?a) / (?u) replaces the type flag.
    if add_flags & TYPE_FLAGS:
        flags &= ~TYPE_FLAGS
    return (flags | add_flags) & ~del_flags


def char_flags(flags):
    """The flags a character node's meaning depends on (better cache hits)."""
    return flags & CHAR_FLAGS


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


PARSE_MEMO = BoundedMemo(512, order="fifo")   # pattern -> re._parser.SubPattern, parsed ahead


def parse_pattern(pattern: str):
    """``re._parser.parse(pattern, 0)``, kept for the next :func:`~cfgmask.automata.compile_regex` of ``pattern``.

    The grammar loader parses every terminal's regex to check it (syntax and
    width, as Lark's Earley frontend did); ``compile_regex`` then takes
    that tree (once: :func:`parsed_pattern` drops it when used, and the oldest
    of the 512 unused ones in :data:`PARSE_MEMO` go first) instead of running
    Python's regex parser a second time.  Errors are not kept.  The trees are
    only read (``getwidth`` caches its answer on the node, as ``re`` itself does).
    """
    parsed = PARSE_MEMO.get(pattern)
    if parsed is None:
        parsed = parse_regex(pattern, 0)
        PARSE_MEMO.put(pattern, parsed)
    return parsed


# Trees of long patterns stay after the regex pipeline used them: the slices of
# the same terminal read them again (repeat_classes), and parsing one of
# sql.lark's 15 KB identifiers again cost ~10 ms.  Bounded: ~0.5 MB a tree.
LONG_PATTERN = 2000
LONG_TREES = BoundedMemo(16, order="fifo")   # pattern -> SubPattern


def parsed_pattern(pattern: str):
    """The tree :func:`parse_pattern` kept for ``pattern`` (taken out of the memo),
    else ``re._parser.parse(pattern, 0)``; raises what the parser raises."""
    tree = PARSE_MEMO.pop(pattern, None) or LONG_TREES.get(pattern) or parse_regex(pattern, 0)
    if len(pattern) >= LONG_PATTERN:
        LONG_TREES.put(pattern, tree)
    return tree


_NO_RANGES = object()

# pattern -> its repeat_classes, recorded by the regex pipeline while it builds
# the pattern's NFA (the same walk of the tree), so that the slices of a
# terminal do not walk the tree again (javascript.lark's identifiers: 5,575
# nodes, ~8 ms)
REPEATS_SEEN = BoundedMemo(4096, order="fifo")


def repeat_class(body, flags, hi, class_ranges):
    """``(ranges or None, the tree to look into next or None)`` for a repeat
    ``body{lo,hi}`` (``hi`` MAXREPEAT when unbounded): the code points of a
    one-character body (a class; an alternation whose one-character
    alternatives are taken), and the body itself unless it is one class.
    ``class_ranges`` memoises classes by ``(flags, items)``."""
    items = body.data
    if len(items) == 1 and items[0][0] is IN:
        key = (flags, tuple(items[0][1]))
        ranges = class_ranges.get(key, _NO_RANGES)
        if ranges is _NO_RANGES:
            ranges = class_ranges[key] = one_char_ranges(body, flags)
        return ranges, None      # a class has nothing inside to visit
    ranges = one_char_ranges(body, flags)
    inner, inner_flags = body, flags
    if ranges is None and len(items) == 1 and items[0][0] is SUBPATTERN:
        _g, add, dele, inner = items[0][1]
        inner_flags = combine_flags(flags, add, dele)
        items = inner.data
    if ranges is None and len(items) == 1 and items[0][0] is BRANCH:
        # (?:[^"\\]|\\.)*: take the one-character alternatives
        parts = [one_char_ranges(alt, inner_flags) for alt in items[0][1][1]]
        parts = [p for p in parts if p]
        ranges = ut.union(*parts) if parts else None
    return ranges, (inner, inner_flags)


def repeat_classes(pattern):
    """``(code point ranges, max_count)`` of every repeat of one character class in
    ``pattern`` (``max_count`` None when unbounded), in the order of a walk of
    Python's own parse tree (the pipeline's record of its own walk when it
    compiled ``pattern``, :data:`REPEATS_SEEN`, else this walk; the same
    repeats, first occurrences in the same order); empty when the pattern
    does not parse."""
    seen = REPEATS_SEEN.get(pattern)
    if seen is not None:
        return list(seen)
    return repeat_classes_walked(pattern)


def repeat_classes_walked(pattern):
    """:func:`repeat_classes` by walking the tree (its reference)."""
    out = []
    try:
        parsed = LONG_TREES.get(pattern) or parse_regex(pattern, 0)
    except Exception:
        return out

    # generated patterns repeat one class thousands of times (sql.lark's
    # identifiers: 313 repeats, 1 class): its ranges once per (flags, class)
    class_ranges = {}

    def visit(sub, flags):
        # the node lists themselves (``.data``): SubPattern's Python-level
        # __getitem__ and __len__ were 40% of this walk on sql.lark's identifiers
        for op, av in sub.data:
            if op in (MAX_REPEAT, MIN_REPEAT):
                _lo, hi, body = av
                ranges, inner = repeat_class(body, flags, hi, class_ranges)
                if ranges and hi != 1:
                    out.append((tuple(ranges), None if hi == MAXREPEAT else int(hi)))
                if inner is not None:
                    visit(*inner)
            elif op is SUBPATTERN:
                _g, add, dele, body = av
                visit(body, combine_flags(flags, add, dele))
            elif op is BRANCH:
                for alt in av[1]:
                    visit(alt, flags)

    visit(parsed, parsed.state.flags)
    return out


def class_regex(ranges):
    """A regex character class for the code point ranges ``ranges``."""
    esc = escape_code_point
    return "[" + "".join(esc(a) if a == b else esc(a) + "-" + esc(b) for a, b in ranges) + "]"
