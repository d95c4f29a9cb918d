# cython: language_level=3
"""Compile-time trie walk of lexeme slices (:mod:`cfgmask.engine.slice_walk`), in C.

Once the regex pipeline was compiled, the slices' token sets were most of a
cold compile's slice derivation: json.lark on SmolLM2 walked the whole trie
level by level (numpy, one pass per depth) for each of 9 candidate slices,
about 1.5 ms each, although most slices die on the first byte of most
subtrees.  :func:`live_token_mask` walks the trie once in pre-order, skips a
subtree as soon as the slice automaton dies at its root, and marks each live
node's tokens as it passes.

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


def live_token_mask(const int32_t[:, ::1] trans, const uint8_t[::1] node_byte,
                    const int32_t[::1] node_depth, const int32_t[::1] subtree_end,
                    const int32_t[::1] node_token, const uint8_t[::1] node_dups,
                    const int32_t[::1] token_same_next, const uint8_t[::1] allowed,
                    int max_depth, int min_depth):
    """bool ``[len(token_same_next)]``: the tokens whose bytes never die in
    ``trans``, whose node is at least ``min_depth`` deep (cross slices: a byte
    after the lead) and with ``allowed[id]`` (0 for special ids; ids past it
    are not allowed).  ``node_dups[i]``: node ``i``'s token has duplicates
    (:meth:`cfgmask.engine.trie.TokTrie.node_dups`).

    One pre-order walk that skips a subtree where the automaton dies and marks
    each live node's token (and, where ``node_dups``, the ``token_same_next``
    chain of its duplicates) as it passes.  It replaced a walk writing a live
    flag per node and a second pass over every token id reading those flags
    (``live_tokens``), whose cost did not shrink with the slice.  SmolLM2's
    trie, callgrind, ``slice_walk.trie_membership`` a call: ``[0-9]+`` 0.74M
    -> 0.21M instructions, ``[a-z]+`` 1.34M -> 0.95M, ``[A-Za-z0-9_ ]+``
    (nearly every token) 3.51M -> 3.61M.  Only tokens in the trie can be
    members."""
    cdef int64_t n = node_byte.shape[0]
    cdef int64_t n_states = trans.shape[0]
    cdef int64_t V = token_same_next.shape[0], n_allowed = allowed.shape[0]
    if trans.shape[1] != 256:
        raise ValueError(f"live_token_mask needs a [states, 256] byte automaton, got {trans.shape[1]} columns")
    if (node_depth.shape[0] != n or subtree_end.shape[0] != n or node_token.shape[0] != n
            or node_dups.shape[0] != n):
        raise ValueError("live_token_mask: the trie's node arrays differ in length")
    if n_allowed < V:
        raise ValueError(f"live_token_mask: allowed has {n_allowed} entries for {V} token ids")
    out = np.zeros(V, dtype=np.bool_)
    if n == 0 or n_states == 0:
        return out
    cdef uint8_t[::1] ok = out.view(np.uint8)
    path_arr = np.zeros(max_depth + 2, dtype=np.int32)   # the automaton's state along the path
    cdef int32_t[::1] path = path_arr
    cdef int64_t i = 1, nxt
    cdef int32_t d, s, t, later
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
            t = node_token[i]
            if d >= min_depth and 0 <= t < V:
                ok[t] = allowed[t]
                if node_dups[i]:
                    later = token_same_next[t]
                    while t < later < V:    # -1 ends the chain (ids increase along it)
                        t = later
                        ok[t] = allowed[t]
                        later = token_same_next[t]
            i += 1
    if i < n:
        raise ValueError(f"live_token_mask: node {i} breaks the trie layout (depth {node_depth[i]}, "
                         f"subtree end {subtree_end[i]})")
    return out


cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil

ctypedef fused mask_t:
    uint8_t
    uint64_t


# The passes below read and write through raw pointers held in locals: a
# uint8 store through a memoryview may alias the memoryview structs (they live
# on the stack), which keeps gcc from holding loop bounds and data pointers in
# registers.

cdef void _part_masks(mask_t* mk, int64_t n, const int32_t* node_depth, const int32_t* node_token,
                      const uint8_t* part_of_token, int64_t V, int n_parts, uint64_t* acc,
                      int64_t* count) noexcept nogil:
    """``mk[i]``: the parts whose tokens lie in node ``i``'s subtree (the root: all);
    ``count[p]``: the nodes of part ``p``'s trie.  One reverse pre-order pass:
    ``acc[d]`` collects the masks of the depth-``d`` nodes whose parent is not
    reached yet, which are exactly the children of the next depth-``d - 1`` node.
    Byte masks are counted by value (256 counters, turned into per-part counts
    once at the end), which took the per-bit loop out of the pass."""
    cdef int64_t i
    cdef int32_t d, t
    cdef uint64_t bits, one = 1
    cdef int p, v
    cdef int64_t by_value[256]
    if mask_t is uint8_t:
        for v in range(256):
            by_value[v] = 0
    for i in range(n - 1, 0, -1):
        d = node_depth[i]
        bits = acc[d + 1]
        acc[d + 1] = 0
        t = node_token[i]
        if 0 <= t < V and part_of_token[t] < n_parts:
            bits |= one << part_of_token[t]
        mk[i] = <mask_t>bits
        acc[d] |= bits
        if mask_t is uint8_t:
            by_value[bits] += 1
        else:
            while bits:
                count[__builtin_ctzll(bits)] += 1
                bits &= bits - 1
    if mask_t is uint8_t:
        for v in range(1, 256):
            bits = <uint64_t>v
            while bits:
                count[__builtin_ctzll(bits)] += by_value[v]
                bits &= bits - 1
    mk[0] = <mask_t>((one << n_parts) - 1 if n_parts < 64 else ~(<uint64_t>0))
    for p in range(n_parts):
        count[p] += 1


cdef void _lay_out(const mask_t* mk, int64_t n, int n_parts, const uint8_t* node_byte,
                   const int32_t* node_depth, const int32_t* node_token, const uint8_t* part_of_token,
                   int64_t V, int64_t* pos, int64_t* open_at, int64_t open_stride, int32_t* n_open,
                   uint8_t* ob, int32_t* od, int32_t* ot, int32_t* oe) noexcept nogil:
    """One forward pass: each node is appended to the trie of every part in its
    mask (``pos[p]``: the next free row of part ``p``).  ``open_at[p, d]`` is
    part ``p``'s row of its open node at depth ``d`` (``n_open[p]`` of them, the
    path to the last row); a node at depth ``d`` closes the open ones at depth
    ``>= d``, whose subtrees end where it starts.  The ancestors of a kept node
    are kept, so part ``p`` always has the path down to ``d - 1`` open.

    ``pos`` and ``n_open`` are copied into local arrays for the pass: the
    output stores (a byte store may alias anything) no longer force gcc to
    reload them (SmolLM2's trie, a random two-part partition: 7.2M -> 6.7M
    instructions a call, callgrind)."""
    cdef int64_t i, k
    cdef int64_t* opens
    cdef int32_t d, t, m
    cdef uint64_t bits
    cdef int p, tp
    cdef int64_t next_row[64]
    cdef int32_t depth_open[64]
    for p in range(n_parts):
        next_row[p] = pos[p]
        depth_open[p] = n_open[p]
    for i in range(n):
        bits = mk[i]
        if not bits:
            continue
        d = node_depth[i]
        t = node_token[i]
        tp = part_of_token[t] if 0 <= t < V else 255
        while bits:
            p = __builtin_ctzll(bits)
            bits &= bits - 1
            k = next_row[p]
            opens = open_at + p * open_stride
            m = depth_open[p]
            while m > d:
                m -= 1
                oe[opens[m]] = <int32_t>k
            opens[d] = k
            depth_open[p] = d + 1
            od[k] = d
            ot[k] = t if tp == p else -1
            ob[k] = node_byte[i]
            next_row[p] = k + 1
    for p in range(n_parts):
        pos[p] = next_row[p]
        n_open[p] = depth_open[p]


def partition_forest(const uint8_t[::1] node_byte, const int32_t[::1] node_depth,
                     const int32_t[::1] node_token, const int32_t[::1] subtree_end,
                     const uint8_t[::1] part_of_token, int n_parts):
    """The sub-trie of each part ``p < n_parts`` of a partition of the tokens
    (``part_of_token[id]``; a value ``>= n_parts`` is in no part), laid out one
    after the other as one forest: ``(node_byte, node_depth, node_token,
    subtree_end, lo, hi)``, part ``p``'s trie at rows ``[lo[p], hi[p])`` in the
    trie's own pre-order layout.  A node is kept in part ``p``'s trie when its
    subtree holds a token of ``p`` (the root always), a kept node's token is -1
    unless it is in ``p``, and subtree ends are rows of the forest.

    Two passes over the trie, whatever the number of parts: one (reverse) finds
    the parts under each node, one appends each node to its parts' tries.  It
    replaced two passes per part and a concatenation of the parts afterwards:
    schema-person's 7-slice layout on SmolLM2 (100,298 nodes), repeated in one
    process, 2.75 -> 2.25 ms."""
    cdef int64_t n = node_byte.shape[0], i, total = 0
    cdef int32_t max_depth = 0
    cdef int p
    if node_depth.shape[0] != n or node_token.shape[0] != n or subtree_end.shape[0] != n:
        raise ValueError("partition_forest: the trie's node arrays differ in length")
    if n == 0:
        raise ValueError("partition_forest: a trie has a root")
    if not 0 <= n_parts <= 64:
        raise ValueError(f"partition_forest: {n_parts} parts (at most 64)")
    cdef int64_t bad = -1
    cdef const int32_t* dp = &node_depth[0]
    cdef const int32_t* ep = &subtree_end[0]
    cdef int broken = 0
    with nogil:
        # one flag without early exits, and the first broken node looked for
        # only when there is one: this pass, the byte masks counted by value
        # and the local state of _lay_out took a call on SmolLM2's trie (random
        # two-part partition) from 12.5M to 10.6M instructions (callgrind)
        broken = ep[0] <= 0 or ep[0] > n or dp[0] < 0
        max_depth = dp[0] if dp[0] > 0 else 0
        for i in range(1, n):
            broken |= ((ep[i] <= i) | (ep[i] > n) | (dp[i] <= 0)
                       | (dp[i] > dp[i - 1] + 1))
            max_depth = dp[i] if dp[i] > max_depth else max_depth
        if broken:
            max_depth = 0
            for i in range(n):
                if ep[i] <= i or ep[i] > n or dp[i] < 0 or (i > 0 and (dp[i] == 0 or dp[i] > dp[i - 1] + 1)):
                    bad = i
                    break
            if bad < 0:
                bad = 0     # unreachable (the same tests as above); refuse rather than go on
    if bad >= 0:
        raise ValueError(f"partition_forest: node {bad} breaks the trie layout (depth {node_depth[bad]}, "
                         f"subtree end {subtree_end[bad]})")
    counts = np.zeros(max(n_parts, 1), dtype=np.int64)
    accs = np.zeros(max_depth + 2, dtype=np.uint64)
    cdef int64_t[::1] count = counts
    cdef uint64_t[::1] acc = accs
    # a byte per node where the parts fit (a slice layout has at most 33)
    masks = np.empty(n, dtype=np.uint8 if n_parts <= 8 else np.uint64)
    cdef uint8_t[::1] mk8
    cdef uint64_t[::1] mk64
    cdef int64_t V = part_of_token.shape[0]
    cdef const uint8_t* pt = &part_of_token[0] if V > 0 else NULL
    cdef const int32_t* tk = &node_token[0]
    if n_parts <= 8:
        mk8 = masks
        with nogil:
            _part_masks(&mk8[0], n, dp, tk, pt, V, n_parts, &acc[0], &count[0])
    else:
        mk64 = masks
        with nogil:
            _part_masks(&mk64[0], n, dp, tk, pt, V, n_parts, &acc[0], &count[0])
    lo = np.zeros(n_parts, dtype=np.int64)
    hi = np.zeros(n_parts, dtype=np.int64)
    for p in range(n_parts):
        lo[p] = total
        total += counts[p]
        hi[p] = total
    out_byte = np.empty(max(total, 1), dtype=np.uint8)
    out_depth = np.empty(max(total, 1), dtype=np.int32)
    out_token = np.empty(max(total, 1), dtype=np.int32)
    out_end = np.empty(max(total, 1), dtype=np.int32)
    positions = np.zeros(max(n_parts, 1), dtype=np.int64)
    positions[:n_parts] = lo
    opens = np.zeros((max(n_parts, 1), max_depth + 2), dtype=np.int64)
    n_opens = np.zeros(max(n_parts, 1), dtype=np.int32)
    cdef int64_t[::1] pos = positions
    cdef int32_t[::1] n_open = n_opens
    cdef int64_t[:, ::1] open_at = opens
    cdef uint8_t[::1] ob = out_byte
    cdef int32_t[::1] od = out_depth, ot = out_token, oe = out_end
    cdef const uint8_t* by = &node_byte[0]
    if n_parts <= 8:
        with nogil:
            _lay_out(&mk8[0], n, n_parts, by, dp, tk, pt, V, &pos[0], &open_at[0, 0], max_depth + 2, &n_open[0],
                     &ob[0], &od[0], &ot[0], &oe[0])
    else:
        with nogil:
            _lay_out(&mk64[0], n, n_parts, by, dp, tk, pt, V, &pos[0], &open_at[0, 0], max_depth + 2, &n_open[0],
                     &ob[0], &od[0], &ot[0], &oe[0])
    with nogil:
        for p in range(n_parts):
            while n_open[p] > 0:
                n_open[p] -= 1
                oe[open_at[p, n_open[p]]] = <int32_t>pos[p]
    if total == 0:
        out_byte, out_depth, out_token, out_end = out_byte[:0], out_depth[:0], out_token[:0], out_end[:0]
    return out_byte, out_depth, out_token, out_end, lo, hi
