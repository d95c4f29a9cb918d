"""A slice's tokens on the vocabulary's trie, and the filtered tries the slice forest is made of.

Part of lexeme slices (:mod:`cfgmask.engine.slices`, which chooses and lays
them out): both functions read a :class:`~cfgmask.engine.trie.TokTrie`'s flat
pre-order arrays and never modify them.

* :func:`trie_membership`: the token ids whose bytes never die in a slice's
  byte automaton, by one pre-order walk in C (``_fast/_slicewalk.pyx``) that
  skips a subtree where the automaton dies; :func:`trie_membership_levels`
  (numpy, one trie level at a time) and :func:`token_membership` (token by
  token) are its references, and ``CFGMASK_PURE_SLICES=1`` selects the first.
  Only tokens in the trie can be members: they are the only ones the
  runtime's walks see.
* :func:`filtered_trie`: the sub-trie holding a set of tokens, in the same
  layout, derived from the full trie without sorting; :func:`partition_forest`
  makes one for each part of a partition of the tokens, laid out one after
  the other (a slice layout's forest: one trie per slice and the rest), in two
  passes over the trie.
"""

import os

import numpy as np

from cfgmask._fast._slicewalk import live_token_mask
from cfgmask._fast._slicewalk import partition_forest as _partition_forest_c


def trie_membership(dfa, trie, special, lead=None):
    """:func:`token_membership` computed on the trie: shared prefixes are stepped
    once (the trie has 2-3x fewer nodes than the tokens have bytes) and a dead
    node's subtree is skipped.  Only tokens in the trie can be members (they are
    the only ones the runtime's walks see).  The walk is ``_fast/_slicewalk.pyx``
    (one pre-order pass); :func:`trie_membership_levels` is its reference
    (``CFGMASK_PURE_SLICES=1``)."""
    if os.environ.get("CFGMASK_PURE_SLICES") == "1":
        return trie_membership_levels(dfa, trie, special, lead)
    V = trie.vocab_size
    allowed = np.ones(V, dtype=np.uint8)      # ids past ``special`` are not special
    n = min(V, len(special))
    allowed[:n] = np.asarray(special[:n]) == 0
    return live_token_mask(np.ascontiguousarray(dfa.trans, dtype=np.int32), trie.node_byte,
                           trie.node_depth, trie.node_subtree_end, trie.node_token, trie.node_dups(),
                           trie.token_same_next, allowed, trie.max_depth, 1 if lead is None else 2)


def _members(live, trie, special, lead):
    """Bool per token id: its trie node is live (``live[node]``), it is not special,
    and (cross slices, ``lead``) it has a byte after the lead."""
    node = trie.token_node
    ok = node > 0
    ok[ok] = live[node[ok]]
    n = min(len(special), len(ok))
    ok[:n] &= special[:n] == 0
    if lead is not None:
        ok[ok] = trie.node_depth[node[ok]] >= 2
    return ok


def trie_membership_levels(dfa, trie, special, lead=None):
    """:func:`trie_membership` one trie level at a time with numpy (the reference
    of the compiled walk)."""
    parent, by_depth, depth_start = trie.levels()
    trans = np.ascontiguousarray(dfa.trans, dtype=np.int32)
    n_states = trans.shape[0]
    # one extra dead row so that a dead parent stays dead without a branch
    table = np.vstack([trans, np.full((1, trans.shape[1]), -1, np.int32)])
    table[table < 0] = n_states
    state = np.full(trie.n_nodes, n_states, dtype=np.int32)
    state[0] = 0
    byte = trie.node_byte
    for d in range(1, trie.max_depth + 1):
        here = by_depth[depth_start[d]:depth_start[d + 1]]
        st = table[state[parent[here]], byte[here]]
        state[here] = st
        if not (st < n_states).any():
            break      # every node of this depth is dead, so is everything deeper (still n_states)
    return _members(state < n_states, trie, special, lead)


def token_membership(dfa, flat, offsets, special, lead=None):
    """Boolean array over token ids: the token's bytes never die in ``dfa``
    (cross slices also need at least one byte after the lead).  The reference
    for :func:`trie_membership`, token by token over the flattened bytes; the
    tests compare the two."""
    n = len(offsets) - 1
    lens = np.diff(offsets)
    ok = (lens > 0) & (special == 0)
    if lead is not None:
        ok &= lens >= 2
    trans = np.ascontiguousarray(dfa.trans, dtype=np.int32)
    state = np.zeros(n, dtype=np.int32)
    idx = np.flatnonzero(ok)
    pos = 0
    while idx.size:
        st = state[idx]
        b = flat[offsets[idx] + pos]
        nxt = trans[st, b]
        alive = nxt >= 0
        ok[idx[~alive]] = False
        idx, nxt = idx[alive], nxt[alive]
        state[idx] = nxt
        pos += 1
        more = lens[idx] > pos
        idx = idx[more]
    return ok


def filtered_trie(trie, keep_token):
    """The trie of the tokens with ``keep_token[id]`` (ids with equal bytes agree),
    as arrays in the TokTrie layout, derived from the full trie without sorting."""
    if os.environ.get("CFGMASK_PURE_SLICES") == "1":
        return filtered_trie_numpy(trie, keep_token)
    # a partition into one part: the kept tokens, the others in none
    part = np.where(np.asarray(keep_token, dtype=np.bool_), 0, 1).astype(np.uint8)
    return _partition_forest_c(trie.node_byte, trie.node_depth, trie.node_token, trie.node_subtree_end,
                               part, 1)[:4]


def filtered_trie_numpy(trie, keep_token):
    """:func:`filtered_trie` with numpy (the reference of ``_slicewalk.filtered_trie``)."""
    tokn = np.asarray(trie.node_token)
    depth = np.asarray(trie.node_depth)
    t_ok = tokn >= 0
    own = np.zeros(trie.n_nodes, dtype=np.int64)
    own[t_ok] = keep_token[tokn[t_ok]]
    # pre-order: a node is kept when its subtree [i, subtree_end[i]) holds a kept
    # token, one prefix sum for all nodes (a level-by-level climb was 2 ms a trie)
    before = np.concatenate([[0], np.cumsum(own)])
    has = before[np.asarray(trie.node_subtree_end)] > before[:-1]
    has[0] = True
    first_kept_at = np.concatenate([np.cumsum(has) - has, [has.sum()]])  # kept nodes before i
    keep_idx = np.flatnonzero(has)
    node_token = np.where(t_ok[keep_idx] & keep_token[np.maximum(tokn[keep_idx], 0)],
                          tokn[keep_idx], -1).astype(np.int32)
    send = first_kept_at[np.asarray(trie.node_subtree_end)[keep_idx]].astype(np.int32)
    return (np.asarray(trie.node_byte)[keep_idx].copy(), depth[keep_idx].astype(np.int32),
            node_token, send)


def partition_forest(trie, part_of_token, n_parts):
    """The filtered trie of each part ``p < n_parts`` of a partition of the tokens
    (``part_of_token``: uint8 per token id, a value ``>= n_parts`` in no part),
    one after the other: ``(node_byte, node_depth, node_token, subtree_end, lo,
    hi)`` with part ``p`` at rows ``[lo[p], hi[p])`` and subtree ends counted
    in the forest's rows.  Two passes over the trie whatever the number of parts
    (``_fast/_slicewalk.pyx``); :func:`filtered_trie_numpy` of each part,
    concatenated, is its reference (``CFGMASK_PURE_SLICES=1``)."""
    part_of_token = np.ascontiguousarray(part_of_token, dtype=np.uint8)
    if os.environ.get("CFGMASK_PURE_SLICES") == "1":
        return _forest_of(filtered_trie_numpy(trie, part_of_token == p) for p in range(n_parts))
    return _partition_forest_c(trie.node_byte, trie.node_depth, trie.node_token, trie.node_subtree_end,
                               part_of_token, int(n_parts))


def _forest_of(tries):
    """Filtered tries laid out one after the other (the reference of :func:`partition_forest`)."""
    tries = list(tries)
    sizes = np.array([len(t[0]) for t in tries], dtype=np.int64)
    hi = np.cumsum(sizes)
    lo = hi - sizes
    cat = [np.concatenate([t[j] for t in tries]) if tries else np.zeros(0, d)
           for j, d in enumerate((np.uint8, np.int32, np.int32, np.int32))]
    cat[3] = (cat[3] + np.repeat(lo, sizes)).astype(np.int32)
    return (*cat, lo, hi)


def partition_tries(trie, part_of_token, n_parts):
    """``[filtered_trie(trie, part_of_token == p) for p in range(n_parts)]``: the
    parts of :func:`partition_forest`, each with its own row numbers."""
    nb, nd, nt, ne, lo, hi = partition_forest(trie, part_of_token, n_parts)
    return [(nb[a:b], nd[a:b], nt[a:b], (ne[a:b] - a).astype(np.int32)) for a, b in zip(lo, hi)]
