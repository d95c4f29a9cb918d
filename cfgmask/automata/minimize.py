"""Trimming, minimisation and canonical numbering of DFA tables.

:func:`minimize_and_trim` takes a DFA table (start 0, ``-1`` dead, any
number of columns: bytes or code point atoms) with per-state labels
(accepting, and the follow restriction mask of each accepting state) and
returns the minimal trimmed equivalent: states that cannot reach acceptance
are dropped, then blocks are refined (Moore's rounds, vectorised, for big
automata; Hopcroft's algorithm to finish or for small ones).
:func:`renumber_bfs` numbers the states of a DFA breadth-first from 0, bytes
in increasing order: the canonical numbering of a minimal DFA.

Invariants: states with different labels are never merged; blocks are
numbered by their first (lowest) live state, so the start's block is state 0
and the result does not depend on the order in which blocks were refined;
every state of the result can reach an accepting state, except the one-state
automaton of the empty language; the input is never modified.

Two implementations compute the same arrays: :func:`minimize_python` and
:func:`renumber_bfs_python`, the references, and the C kernels
:func:`cfgmask._fast._automata.minimal` (Hopcroft's algorithm over flat
arrays) and :func:`cfgmask._fast._automata.bfs`, which
:func:`minimize_and_trim` and :func:`renumber_bfs` use unless
``CFGMASK_PURE_AUTOMATA=1`` (:mod:`~cfgmask.automata.kernels`).
The numbering by first state is what lets them agree array for array: the
coarsest partition is unique, its numbering was an accident of refinement.
"""

import numpy as np

from cfgmask.automata.dfa import column_classes
from cfgmask.automata.kernels import compiled

__all__ = ["minimize_and_trim", "minimize_python", "renumber_bfs", "renumber_bfs_python"]


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


def minimize_and_trim(trans, accepting, follow, moore_min_states=_MOORE_MIN_STATES):
    """:func:`minimize_python`'s result, computed in C (see the module
    docstring; ``moore_min_states`` only tunes the Python version)."""
    kernel = compiled()
    if kernel is None or not len(follow):
        return minimize_python(trans, accepting, follow, moore_min_states)
    # labels as the reference numbers them: 0 not accepting, 1 + i accepting
    # under the i-th distinct follow mask (most automata have none: one label)
    accepting = np.asarray(accepting, dtype=bool)
    if any(follow):
        label_of_mask = {}
        labels = np.array([label_of_mask.setdefault(follow[s], len(label_of_mask)) + 1
                           if accepting[s] else 0 for s in range(len(follow))], dtype=np.int64)
        mask_of_label = [0] + list(label_of_mask)
    else:
        labels = accepting.astype(np.int64)
        mask_of_label = [0, 0]
    out = kernel.minimal(trans, labels)
    if out is None:
        return np.full((1, trans.shape[1]), -1, dtype=np.int32), np.zeros(1, dtype=bool), [0]
    new_trans, new_labels = out
    return new_trans, new_labels > 0, [mask_of_label[label] for label in new_labels.tolist()]


def minimize_python(trans, accepting, follow, moore_min_states=_MOORE_MIN_STATES):
    """Minimal trimmed DFA equivalent to ``trans`` (start 0, -1 = dead; the other
    states in no particular order).

    ``follow[s]``: the follow-restriction mask of state ``s`` (0: none).
    ``moore_min_states``: automata this big start with Moore's rounds, smaller
    ones go straight to Hopcroft.  Returns ``(trans, accepting, follow)`` for
    the new states.
    """
    # Work on byte classes: bytes with identical columns behave alike.
    class_of, representatives = column_classes(trans)
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

    # One state per block, numbered by the block's first state (so the start's
    # block is 0; the caller renumbers the final byte automaton breadth-first,
    # see renumber_bfs).
    _, representative = np.unique(block_of, return_index=True)
    order = np.argsort(representative)          # new state -> block
    new_id = np.empty(len(order), dtype=np.int64)
    new_id[order] = np.arange(len(order))
    small = table[representative[order]]
    small = np.where(small >= 0, new_id[block_of[np.maximum(small, 0)]], -1).astype(np.int32)
    new_trans = np.ascontiguousarray(small[:, class_of])
    new_labels = labels[representative[order]]
    return new_trans, new_labels > 0, [mask_of_label[label] for label in new_labels.tolist()]


def renumber_bfs(trans, accepting, follow):
    """:func:`renumber_bfs_python`'s result, computed in C (see the module docstring)."""
    kernel = compiled()
    if kernel is None or not trans.shape[0]:
        return renumber_bfs_python(trans, accepting, follow)
    out, old = kernel.bfs(trans)
    return out, np.asarray(accepting, dtype=bool)[old], [follow[s] for s in old.tolist()]


def renumber_bfs_python(trans, accepting, follow):
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

