"""NFA over characters -> DFA over code point atoms (the subset construction).

:func:`determinize` reads an :class:`~cfgmask.automata.nfa.NFA` with its atom
boundaries (:meth:`~cfgmask.automata.nfa.NFA.atoms`) and returns a DFA table
with one column per atom.  With lookaheads, a DFA state is a set of
*configurations* (an NFA state with the constraint pending on its path), see
:func:`determinize_python`.

Invariants of the result: state 0 is the start, ``-1`` is dead, every state
is reachable from 0; ``follow[d]`` is the constraint mask
(:data:`~cfgmask.automata.nfa.EOS_BIT`) of accepting state ``d``, 0 for none
and for every non-accepting state; more than ``max_states`` states is a
:func:`~cfgmask.automata.refusals.too_large` refusal.  ``progress.hook``, when
set in this thread, is called once per subset built and may raise to abandon
the construction.

Two implementations compute the same table: :func:`determinize_python`, the
reference, and the C kernel :func:`cfgmask._fast._automata.subsets`, which
:func:`determinize` uses for an NFA without lookahead moves (every terminal
of the bundled grammars but five small JavaScript ones) unless
``CFGMASK_PURE_AUTOMATA=1`` (:mod:`~cfgmask.automata.kernels`).  They number
the states alike, call ``progress.hook`` at the same points and refuse at
the same state.
"""

from bisect import bisect_left
import threading

import numpy as np

from cfgmask.automata.kernels import compiled
from cfgmask.automata.nfa import FULL_MASK
from cfgmask.automata.refusals import too_large

__all__ = ["determinize", "determinize_python", "progress"]


# progress.hook: a callable the subset construction calls once per DFA state it
# builds, per thread (the JSON Schema compile budget sets it to check its
# deadline; it may raise, which abandons the construction)
progress = threading.local()


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


def determinize(nfa, start, final, max_states, name, bounds):
    """:func:`determinize_python`'s result, in C when the NFA has no lookahead
    moves (see the module docstring)."""
    kernel = compiled()
    flat = getattr(nfa, "flat", None)    # the compiled builder's NFA: no lookaheads
    if kernel is None or flat is None and any(nfa.assert_moves):
        # the lookahead configurations stay in Python: the terminals that use
        # them are few and small (javascript.lark: five, 3 ms in all)
        return determinize_python(nfa, start, final, max_states, name, bounds)
    hook = getattr(progress, "hook", None)
    if flat is not None:
        out = kernel.subsets_flat(flat.n, *flat.arrays(), flat.ranges, bounds, start, final,
                                  max_states, hook)
    else:
        out = kernel.subsets(nfa.empty_moves, nfa.char_moves, bounds, start, final, max_states, hook)
    if out is None:
        raise too_large(name, max_states, "DFA")
    trans, accepting = out
    return trans, accepting, [0] * len(accepting)


def determinize_python(nfa, start, final, max_states, name, bounds):
    """Subset construction over the code point atoms ``bounds`` (see
    :meth:`~cfgmask.automata.nfa.NFA.atoms`).

    Returns ``(trans, accepting, follow)``, ``trans`` int32 ``[states, atoms]``:
    ``follow[d]`` is the constraint
    mask (see ``EOS_BIT``) on what may come after a lexeme ending in DFA
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
                if mask == FULL_MASK:
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
                        raise too_large(name, max_states, "DFA")
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
        mask = FULL_MASK
        for config in subset:
            mask_id, state = divmod(config, n_nfa)
            if state == final:
                accepting[d] = True
                mask &= masks[mask_id]
        if accepting[d]:
            follow[d] = mask
    return np.stack(rows), accepting, follow

