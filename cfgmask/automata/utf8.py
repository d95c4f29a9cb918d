"""Character-level DFA -> byte-level DFA: code point ranges spelled in UTF-8.

:func:`expand_utf8` turns a DFA whose columns are code point atoms into one
over the 256 byte values.  Non-ASCII characters become lead-byte edges into
*continuation states*, shared by every state that needs the same one.

Invariants: only scalar values are spelled, each in its one encoding, so no
overlong form, surrogate, value above U+10FFFF, stray continuation byte or
truncated sequence is accepted; character states keep their numbers and the
continuation states follow them; a minimal trimmed character DFA gives a
minimal trimmed byte DFA (UTF-8 is a prefix code).

Two implementations compute the same table: :func:`expand_utf8_python`, the
reference, and the C kernel :func:`cfgmask._fast._automata.utf8`, which
:func:`expand_utf8` uses unless ``CFGMASK_PURE_AUTOMATA=1``
(:mod:`~cfgmask.automata.kernels`); they number the continuation states
alike and refuse at the same state.
"""

import numpy as np

from cfgmask.automata import unicode_tables as ut
from cfgmask.automata.kernels import compiled
from cfgmask.automata.refusals import too_large

__all__ = ["expand_utf8", "expand_utf8_python"]

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


def expand_utf8(trans, bounds, max_states, name):
    """:func:`expand_utf8_python`'s table, computed in C (see the module docstring)."""
    kernel = compiled()
    if kernel is None:
        return expand_utf8_python(trans, bounds, max_states, name)
    out = kernel.utf8(trans, bounds, ut.UTF8_LENGTH_BOUNDS[1:], max_states)
    if out is None:
        raise too_large(name, max_states, "DFA")
    return out


def expand_utf8_python(trans, bounds, max_states, name):
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
                raise too_large(name, max_states, "DFA")
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

