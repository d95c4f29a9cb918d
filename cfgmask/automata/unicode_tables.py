"""Sets of Unicode scalar values, computed from Python's own ``re`` engine.

A character set is a tuple of ``(lo, hi)`` code point ranges (inclusive),
sorted, disjoint and non-adjacent, never containing a surrogate
(U+D800..U+DFFF): surrogates have no UTF-8 encoding, so no string that can
reach the byte automaton contains one.

Sets whose meaning depends on Python's Unicode tables or its case-folding
rules (``\\w``, ``\\d``, ``\\s`` and every character node under IGNORECASE)
are not re-derived here from rules: :func:`scan_ranges` asks the ``re``
engine itself which of the 1,112,064 scalar values a one-character pattern
matches, by one ``finditer`` over a string holding all of them in code point
order.  Whatever quirks Python's case folding has, the automaton inherits them
exactly.  One scan costs 1-30 ms (the first in a process 15 ms more, to build
that string) and is cached; the category escapes and case-insensitive ASCII
literals, which most grammars need, are answered ahead of time
(``unicode_scans``, made by ``tools/unicode_scans.py`` for one Unicode
database and used only under it).
"""

import base64
from functools import lru_cache
import re
import unicodedata
import zlib

import numpy as np

MAX_CODE_POINT = 0x10FFFF
SURROGATE_LO = 0xD800
SURROGATE_HI = 0xDFFF

# Every scalar value, as ranges.
UNIVERSE = ((0, SURROGATE_LO - 1), (SURROGATE_HI + 1, MAX_CODE_POINT))

# Code point ranges by UTF-8 encoded length (1..4 bytes).
UTF8_LENGTH_BOUNDS = ((0x0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, MAX_CODE_POINT))


@lru_cache(maxsize=1)
def all_scalar_values() -> str:
    """A string of every scalar value in code point order (surrogates skipped).

    Index ``i`` holds code point ``i`` below U+D800 and ``i + 0x800`` above.
    """
    code_points = np.concatenate([
        np.arange(SURROGATE_LO, dtype="<u4"),
        np.arange(SURROGATE_HI + 1, MAX_CODE_POINT + 1, dtype="<u4"),
    ])
    return code_points.tobytes().decode("utf-32-le")


def _index_to_code_point(index: int) -> int:
    return index if index < SURROGATE_LO else index + (SURROGATE_HI + 1 - SURROGATE_LO)


def normalize(ranges) -> tuple:
    """Sort, merge overlapping/adjacent ranges and cut out the surrogates."""
    out = []
    for lo, hi in sorted(ranges):
        if lo > hi:
            continue
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1][1] = hi
        else:
            out.append([lo, hi])
    result = []
    for lo, hi in out:
        # A range can straddle the surrogate block: keep the parts outside it.
        if lo < SURROGATE_LO:
            result.append((lo, min(hi, SURROGATE_LO - 1)))
        if hi > SURROGATE_HI:
            result.append((max(lo, SURROGATE_HI + 1), hi))
    return tuple(result)


def complement(ranges) -> tuple:
    """All scalar values not in ``ranges`` (surrogates never included)."""
    out = []
    next_lo = 0
    for lo, hi in normalize(ranges):
        if lo > next_lo:
            out.append((next_lo, lo - 1))
        next_lo = hi + 1
    if next_lo <= MAX_CODE_POINT:
        out.append((next_lo, MAX_CODE_POINT))
    return normalize(out)


def union(*range_sets) -> tuple:
    return normalize([r for ranges in range_sets for r in ranges])


def contains(ranges, code_point: int) -> bool:
    return any(lo <= code_point <= hi for lo, hi in ranges)


@lru_cache(maxsize=4096)
def scan_ranges(one_char_regex: str, flags: int = 0) -> tuple:
    """Exactly the scalar values ``c`` with ``re.fullmatch(one_char_regex, c, flags)``.

    ``one_char_regex`` must match single characters only (a literal, a class,
    an escape such as ``\\w``).  The category escapes and case-insensitive
    ASCII literals come from ``unicode_scans`` (computed ahead by
    ``tools/unicode_scans.py``) when it was made for this Python's Unicode
    database, else from :func:`scan_ranges_by_re`.
    """
    got = _precomputed(one_char_regex, flags)
    return got if got is not None else scan_ranges_by_re(one_char_regex, flags)


_SCANS = None     # the precomputed answers, or {} when made for another Unicode version


def _precomputed(one_char_regex, flags):
    global _SCANS
    if _SCANS is None:
        from cfgmask.automata import unicode_scans
        _SCANS = unicode_scans.SCANS if unicode_scans.UNIDATA_VERSION == unicodedata.unidata_version else {}
    data = _SCANS.get((one_char_regex, flags))
    if data is None:
        return None
    flat = np.frombuffer(zlib.decompress(base64.b64decode(data)), dtype="<u4").tolist()
    return tuple(zip(flat[0::2], flat[1::2]))


def scan_ranges_by_re(one_char_regex: str, flags: int = 0) -> tuple:
    """:func:`scan_ranges` by asking ``re`` (the reference of the precomputed answers):
    one ``finditer`` over every scalar value; runs of consecutive matching
    characters come back as one match, so the result is already a range list."""
    compiled = re.compile(f"(?:{one_char_regex})+", flags)
    ranges = []
    for match in compiled.finditer(all_scalar_values()):
        start, end = match.span()
        first, last = _index_to_code_point(start), _index_to_code_point(end - 1)
        if start < SURROGATE_LO <= end - 1:
            # The run crosses the (absent) surrogate block: two ranges.
            ranges.append((first, SURROGATE_LO - 1))
            ranges.append((SURROGATE_HI + 1, last))
        else:
            ranges.append((first, last))
    return normalize(ranges)
