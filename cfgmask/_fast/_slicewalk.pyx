# cython: language_level=3
"""Compile-time trie walk of lexeme slices (:mod:`cfgmask.engine.slice_walk`), in C.

Once the regex pipeline was compiled, the slices' token sets were most of a
cold compile's slice derivation: json.lark on SmolLM2 walked the whole trie
level by level (numpy, one pass per depth) for each of 9 candidate slices,
about 1.5 ms each, although most slices die on the first byte of most
subtrees.  :func:`live_nodes` walks the trie once in pre-order and skips a
subtree as soon as the slice automaton dies at its root; :func:`live_tokens`
turns live nodes into token ids in one pass (numpy's masked indexing over
the vocabulary took longer than the walk).

The reference is :func:`cfgmask.engine.slice_walk.trie_membership_levels` (and
``token_membership`` before it); ``CFGMASK_PURE_SLICES=1`` selects it and
tests/test_slices.py compares the two.

Invariants read (those of :class:`cfgmask.engine.trie.TokTrie`): the nodes are
in pre-order, node 0 is the root at depth 0, node ``i``'s subtree is
``[i, subtree_end[i])`` and a child is one level deeper than its parent.
``trans`` is a byte automaton ``[states, 256]`` (start 0, -1 dead).  Inputs
are never modified.  Imports nothing from cfgmask (the runtime layer).
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

import numpy as np


def live_nodes(const int32_t[:, ::1] trans, const uint8_t[::1] node_byte,
               const int32_t[::1] node_depth, const int32_t[::1] subtree_end, int max_depth):
    """uint8 ``[n_nodes]``: 1 where the bytes from the root to the node never
    die in ``trans`` (the root counts as live), 0 elsewhere."""
    cdef int64_t n = node_byte.shape[0]
    cdef int64_t n_states = trans.shape[0]
    if trans.shape[1] != 256:
        raise ValueError(f"live_nodes needs a [states, 256] byte automaton, got {trans.shape[1]} columns")
    if node_depth.shape[0] != n or subtree_end.shape[0] != n:
        raise ValueError("live_nodes: the trie's node arrays differ in length")
    out = np.zeros(n, dtype=np.uint8)
    if n == 0 or n_states == 0:
        return out
    cdef uint8_t[::1] live = out
    path_arr = np.zeros(max_depth + 2, dtype=np.int32)   # the automaton's state along the path
    cdef int32_t[::1] path = path_arr
    cdef int64_t i = 1, nxt
    cdef int32_t d, s
    live[0] = 1
    with nogil:
        while i < n:
            d = node_depth[i]
            if d < 1 or d > max_depth:
                break                       # not a trie: reported below
            s = trans[path[d - 1], node_byte[i]]
            if s < 0 or s >= n_states:
                nxt = subtree_end[i]
                if nxt <= i:
                    break
                i = nxt                     # dead here, so in the whole subtree
                continue
            path[d] = s
            live[i] = 1
            i += 1
    if i < n:
        raise ValueError(f"live_nodes: node {i} breaks the trie layout (depth {node_depth[i]}, "
                         f"subtree end {subtree_end[i]})")
    return out


def live_tokens(const uint8_t[::1] live, const int32_t[::1] token_node, const uint8_t[::1] special,
                const int32_t[::1] node_depth, int min_depth):
    """bool ``[len(token_node)]``: the token's trie node is live, it is in the trie
    (node > 0), not special (ids past ``special`` count as not special), and its
    node is at least ``min_depth`` deep (cross slices: a byte after the lead)."""
    cdef int64_t V = token_node.shape[0], n = live.shape[0], n_special = special.shape[0]
    cdef int64_t t
    cdef int32_t node
    out = np.zeros(V, dtype=np.bool_)
    cdef uint8_t[::1] ok = out.view(np.uint8)
    with nogil:
        for t in range(V):
            node = token_node[t]
            if node <= 0 or node >= n or not live[node] or node_depth[node] < min_depth:
                continue
            if t < n_special and special[t]:
                continue
            ok[t] = 1
    return out


def partition_tries(const uint8_t[::1] node_byte, const int32_t[::1] node_depth,
                    const int32_t[::1] node_token, const int32_t[::1] subtree_end,
                    const uint8_t[::1] part_of_token, int n_parts):
    """The sub-trie of each part ``p < n_parts`` of a partition of the tokens
    (``part_of_token[id]``; a value ``>= n_parts`` is in no part), as a list of
    ``(node_byte, node_depth, node_token, subtree_end)`` in the trie's own
    pre-order layout: a node is kept in part ``p``'s trie when its subtree
    holds a token of ``p`` (the root always), a kept node's token is -1 unless
    it is in ``p``, and subtree ends count kept nodes.  One part is the
    filtered trie of a token set (``engine.slice_walk.filtered_trie``).

    One reverse pre-order pass gives each node the set of parts its subtree
    holds (a 64-bit mask: ``acc[d]`` collects the masks of the depth-``d`` nodes
    whose parent is not reached yet, which are exactly the children of the next
    depth-``d - 1`` node met), then two passes per part lay out its trie; a
    slice layout with eight parts made eight tries of four passes each."""
    cdef int64_t n = node_byte.shape[0], V = part_of_token.shape[0]
    cdef int64_t i, k, m
    cdef int32_t t, d, max_depth = 0
    cdef uint64_t bits, one = 1
    cdef int p
    if node_depth.shape[0] != n or node_token.shape[0] != n or subtree_end.shape[0] != n:
        raise ValueError("partition_tries: the trie's node arrays differ in length")
    if n == 0:
        raise ValueError("partition_tries: a trie has a root")
    if not 0 <= n_parts <= 64:
        raise ValueError(f"partition_tries: {n_parts} parts (at most 64)")
    for i in range(n):
        if subtree_end[i] <= i or subtree_end[i] > n:
            raise ValueError(f"partition_tries: node {i} has subtree end {subtree_end[i]}")
        if node_depth[i] < 0 or (i > 0 and node_depth[i] == 0):
            raise ValueError(f"partition_tries: node {i} has depth {node_depth[i]}")
        if node_depth[i] > max_depth:
            max_depth = node_depth[i]
    masks = np.zeros(n, dtype=np.uint64)
    accs = np.zeros(max_depth + 2, dtype=np.uint64)
    cdef uint64_t[::1] mk = masks
    cdef uint64_t[::1] acc = accs
    with nogil:
        for i in range(n - 1, -1, -1):
            d = node_depth[i]
            bits = acc[d + 1]
            acc[d + 1] = 0
            t = node_token[i]
            if 0 <= t < V and part_of_token[t] < n_parts:
                bits |= one << part_of_token[t]
            mk[i] = bits
            acc[d] |= bits
        mk[0] = (one << n_parts) - 1 if n_parts < 64 else ~(<uint64_t>0)   # the root is in every trie
    kept_before = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] kb = kept_before
    cdef uint8_t[::1] ob_
    cdef int32_t[::1] od, ot, oe
    out = []
    for p in range(n_parts):
        with nogil:
            kb[0] = 0
            for i in range(n):
                kb[i + 1] = kb[i] + <int64_t>((mk[i] >> p) & one)
        m = kb[n]
        out_byte = np.empty(m, dtype=np.uint8)
        out_depth = np.empty(m, dtype=np.int32)
        out_token = np.empty(m, dtype=np.int32)
        out_end = np.empty(m, dtype=np.int32)
        ob_ = out_byte
        od = out_depth
        ot = out_token
        oe = out_end
        with nogil:
            k = 0
            for i in range(n):
                if kb[i + 1] == kb[i]:
                    continue
                t = node_token[i]
                ob_[k] = node_byte[i]
                od[k] = node_depth[i]
                ot[k] = t if (0 <= t < V and part_of_token[t] == p) else -1
                oe[k] = <int32_t>kb[subtree_end[i]]
                k += 1
        out.append((out_byte, out_depth, out_token, out_end))
    return out
