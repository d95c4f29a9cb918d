# cython: language_level=3
"""Compile-time kernels of the regex pipeline, in C: trimming, minimisation
and breadth-first numbering of DFA tables (:mod:`cfgmask.automata.minimize`),
the classes of equal columns (:mod:`cfgmask.automata.dfa`), and the product
of two DFA tables with its trimming (:mod:`cfgmask.automata.setops`).

The companion of :mod:`cfgmask._fast._automata` (see its docstring for the
layer rule: imported only through :mod:`cfgmask.automata.kernels`, imports
nothing from cfgmask).  References: ``minimize_python``,
``renumber_bfs_python``, ``column_classes_python``, ``product_classes_python``,
``live_states_python`` and ``keep_states_python``.

Invariants:

* :func:`minimal` computes the coarsest partition of the live states that
  respects the labels (Hopcroft's algorithm; any refinement order gives the
  same partition) and numbers its blocks by their first state, so the
  start's block is 0 and the result equals the reference's array for array;
* :func:`bfs` numbers states as the reference does (breadth first, columns
  ascending);
* :func:`column_classes` numbers the classes of equal columns by their
  first column, as the reference does;
* :func:`product` numbers pairs as the reference does: level by level
  breadth first, the new pairs of a level in increasing pair code;
* inputs are never modified; C buffers are freed by ``__dealloc__`` or
  ``finally``, so an exception leaks nothing.
"""

from libc.stdlib cimport malloc, free, qsort
from libc.string cimport memset
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from cfgmask._fast._mem cimport grow, grown

import numpy as np


cdef void* _alloc(int64_t n, size_t size) except NULL:
    cdef void* p = malloc(<size_t>(n if n > 0 else 1) * size)
    if p == NULL:
        raise MemoryError("cfgmask: out of memory (regex automaton)")
    return p

# ------------------------------------------------------------------ minimisation

cdef class _Minimal:
    """The buffers of one :func:`minimal` call."""
    cdef int32_t* class_of      # column -> class
    cdef int32_t* rep           # class -> its first column
    cdef uint64_t* col_hash
    cdef int32_t* col_slot
    cdef int32_t* table         # [n, classes], then the live states only
    cdef int32_t* label
    cdef int64_t* pptr          # predecessors by target: pptr, psrc, pcls
    cdef int32_t* psrc
    cdef int32_t* pcls
    cdef int32_t* live_id
    cdef int32_t* stack
    # the partition: elems ordered by block, loc[s] in elems, blk[s];
    # block b is elems[first[b]:end[b]], its marked states elems[first[b]:mid[b]]
    cdef int32_t* elems
    cdef int32_t* loc
    cdef int32_t* blk
    cdef int32_t* first
    cdef int32_t* end
    cdef int32_t* mid
    cdef char* waiting
    cdef int32_t* wait_stack
    cdef int32_t* touched
    cdef int32_t* gsrc
    cdef int32_t* gcls
    cdef int32_t* by_class
    cdef int32_t* class_n
    cdef int32_t* class_at
    cdef int32_t* classes_hit
    cdef int32_t* small

    def __dealloc__(self):
        free(self.class_of)
        free(self.rep)
        free(self.col_hash)
        free(self.col_slot)
        free(self.table)
        free(self.label)
        free(self.pptr)
        free(self.psrc)
        free(self.pcls)
        free(self.live_id)
        free(self.stack)
        free(self.elems)
        free(self.loc)
        free(self.blk)
        free(self.first)
        free(self.end)
        free(self.mid)
        free(self.waiting)
        free(self.wait_stack)
        free(self.touched)
        free(self.gsrc)
        free(self.gcls)
        free(self.by_class)
        free(self.class_n)
        free(self.class_at)
        free(self.classes_hit)
        free(self.small)


cdef int64_t _column_classes(_Minimal b, const int32_t[:, ::1] trans) except -1:
    """Group equal columns (classes numbered by their first column); returns their number."""
    cdef int64_t n = trans.shape[0], k = trans.shape[1], s, c, slot, mask, r, nc = 0
    cdef uint64_t h
    b.class_of = <int32_t*>_alloc(k, sizeof(int32_t))
    b.rep = <int32_t*>_alloc(k, sizeof(int32_t))
    b.col_hash = <uint64_t*>_alloc(k, sizeof(uint64_t))
    mask = 1
    while mask < 2 * k:
        mask *= 2
    b.col_slot = <int32_t*>_alloc(mask, sizeof(int32_t))
    mask -= 1
    for c in range(k):
        b.col_hash[c] = 14695981039346656037ULL
    for s in range(n):
        for c in range(k):
            h = (b.col_hash[c] ^ <uint32_t>trans[s, c]) * 1099511628211ULL
            b.col_hash[c] = h ^ (h >> 29)
    for c in range(mask + 1):
        b.col_slot[c] = -1
    for c in range(k):
        slot = <int64_t>(b.col_hash[c] & <uint64_t>mask)
        while True:
            r = b.col_slot[slot]
            if r < 0:
                b.col_slot[slot] = <int32_t>nc
                b.rep[nc] = <int32_t>c
                b.class_of[c] = <int32_t>nc
                nc += 1
                break
            if b.col_hash[b.rep[r]] == b.col_hash[c]:
                for s in range(n):
                    if trans[s, b.rep[r]] != trans[s, c]:
                        break
                else:
                    b.class_of[c] = <int32_t>r
                    break
            slot = (slot + 1) & mask
    return nc


cdef int _predecessors(_Minimal b, int64_t n, int64_t nc) except -1:
    """Predecessor lists of ``b.table`` (``n`` states, ``nc`` columns) by target."""
    cdef int64_t s, c, t, m = 0
    free(b.pptr)
    free(b.psrc)
    free(b.pcls)
    b.pptr = NULL
    b.psrc = NULL
    b.pcls = NULL
    b.pptr = <int64_t*>_alloc(n + 1, sizeof(int64_t))
    for s in range(n + 1):
        b.pptr[s] = 0
    for s in range(n * nc):
        if b.table[s] >= 0:
            b.pptr[b.table[s] + 1] += 1
            m += 1
    for s in range(n):
        b.pptr[s + 1] += b.pptr[s]
    b.psrc = <int32_t*>_alloc(m, sizeof(int32_t))
    b.pcls = <int32_t*>_alloc(m, sizeof(int32_t))
    for s in range(n):
        for c in range(nc):
            t = b.table[s * nc + c]
            if t >= 0:
                b.psrc[b.pptr[t]] = <int32_t>s
                b.pcls[b.pptr[t]] = <int32_t>c
                b.pptr[t] += 1
    for s in range(n, 0, -1):
        b.pptr[s] = b.pptr[s - 1]
    b.pptr[0] = 0
    return 0


cdef int _split(_Minimal b, const int32_t* sources, int64_t n_sources, int32_t* n_blocks,
                int64_t* n_wait) except -1:
    """Split every block by whether its states are among ``sources[:n_sources]``
    (each state at most once): the marked states move to a new block, and the
    smaller half waits unless the old block already does (Hopcroft's rule)."""
    cdef int64_t i, n_touched = 0, p
    cdef int32_t s, q, bb, nb
    for i in range(n_sources):
        s = sources[i]
        bb = b.blk[s]
        if b.mid[bb] == b.first[bb]:
            b.touched[n_touched] = bb
            n_touched += 1
        # swap s to the end of its block's marked part
        p = b.mid[bb]
        q = b.elems[p]
        b.elems[b.loc[s]] = q
        b.loc[q] = b.loc[s]
        b.elems[p] = s
        b.loc[s] = <int32_t>p
        b.mid[bb] += 1
    for i in range(n_touched):
        bb = b.touched[i]
        if b.mid[bb] == b.end[bb]:
            b.mid[bb] = b.first[bb]
            continue
        nb = n_blocks[0]
        n_blocks[0] += 1
        b.first[nb] = b.first[bb]
        b.end[nb] = b.mid[bb]
        b.mid[nb] = b.first[nb]
        b.first[bb] = b.mid[bb]
        for p in range(b.first[nb], b.end[nb]):
            b.blk[b.elems[p]] = nb
        b.waiting[nb] = 0
        if b.waiting[bb] or b.end[nb] - b.first[nb] <= b.end[bb] - b.first[bb]:
            b.waiting[nb] = 1
            b.wait_stack[n_wait[0]] = nb
        else:
            b.waiting[bb] = 1
            b.wait_stack[n_wait[0]] = bb
        n_wait[0] += 1
    return 0


cdef int32_t _hopcroft(_Minimal b, int64_t n, int64_t nc) except -1:
    """Coarsest partition of ``b.table``'s ``n`` states respecting ``b.label``
    (0..n); a missing move goes to an implicit dead block that never splits
    anything, as in the reference.  Returns the number of blocks, ``b.blk``
    holds each state's."""
    cdef int64_t s, i, j, t, c, n_wait = 0, n_edges, n_hit, at
    cdef int32_t n_blocks = 0, spl, lab
    _predecessors(b, n, nc)
    b.elems = <int32_t*>_alloc(n, sizeof(int32_t))
    b.loc = <int32_t*>_alloc(n, sizeof(int32_t))
    b.blk = <int32_t*>_alloc(n, sizeof(int32_t))
    b.first = <int32_t*>_alloc(n, sizeof(int32_t))
    b.end = <int32_t*>_alloc(n, sizeof(int32_t))
    b.mid = <int32_t*>_alloc(n, sizeof(int32_t))
    b.waiting = <char*>_alloc(n, 1)
    b.wait_stack = <int32_t*>_alloc(n, sizeof(int32_t))
    b.touched = <int32_t*>_alloc(n, sizeof(int32_t))
    b.by_class = <int32_t*>_alloc(b.pptr[n], sizeof(int32_t))
    b.gsrc = <int32_t*>_alloc(b.pptr[n], sizeof(int32_t))
    b.gcls = <int32_t*>_alloc(b.pptr[n], sizeof(int32_t))
    b.class_n = <int32_t*>_alloc(nc, sizeof(int32_t))
    b.class_at = <int32_t*>_alloc(nc, sizeof(int32_t))
    b.classes_hit = <int32_t*>_alloc(nc, sizeof(int32_t))
    # initial blocks: one per label present, by counting sort over labels 0..n
    cdef int32_t* per_label = <int32_t*>_alloc(n + 2, sizeof(int32_t))
    try:
        for i in range(n + 2):
            per_label[i] = 0
        for s in range(n):
            per_label[b.label[s] + 1] += 1
        for i in range(n + 1):
            per_label[i + 1] += per_label[i]
        for s in range(n):
            lab = b.label[s]
            b.elems[per_label[lab]] = <int32_t>s
            b.loc[s] = per_label[lab]
            per_label[lab] += 1
    finally:
        free(per_label)
    for i in range(n):
        s = b.elems[i]
        if i == 0 or b.label[s] != b.label[b.elems[i - 1]]:
            b.first[n_blocks] = <int32_t>i
            b.mid[n_blocks] = <int32_t>i
            if n_blocks:
                b.end[n_blocks - 1] = <int32_t>i
            b.waiting[n_blocks] = 1
            b.wait_stack[n_wait] = n_blocks
            n_wait += 1
            n_blocks += 1
        b.blk[s] = n_blocks - 1
    if n_blocks:
        b.end[n_blocks - 1] = <int32_t>n
    for c in range(nc):
        b.class_n[c] = 0
    while n_wait:
        n_wait -= 1
        spl = b.wait_stack[n_wait]
        b.waiting[spl] = 0
        # the moves into the splitter as it is now, grouped by class
        n_edges = 0
        n_hit = 0
        for i in range(b.first[spl], b.end[spl]):
            t = b.elems[i]
            for j in range(b.pptr[t], b.pptr[t + 1]):
                c = b.pcls[j]
                if b.class_n[c] == 0:
                    b.classes_hit[n_hit] = <int32_t>c
                    n_hit += 1
                b.class_n[c] += 1
                b.gsrc[n_edges] = b.psrc[j]
                b.gcls[n_edges] = <int32_t>c
                n_edges += 1
        at = 0
        for i in range(n_hit):
            c = b.classes_hit[i]
            b.class_at[c] = <int32_t>at
            at += b.class_n[c]
        for j in range(n_edges):
            c = b.gcls[j]
            b.by_class[b.class_at[c]] = b.gsrc[j]
            b.class_at[c] += 1
        # by_class now holds the sources class after class; split by each
        at = 0
        for i in range(n_hit):
            c = b.classes_hit[i]
            _split(b, b.by_class + at, b.class_n[c], &n_blocks, &n_wait)
            at += b.class_n[c]
            b.class_n[c] = 0
    return n_blocks


def minimal(trans, labels):
    """Trimming and minimisation of :func:`cfgmask.automata.minimize.minimize_and_trim`
    (its reference: ``minimize_python``).

    ``trans`` int32 ``[n, k]`` (start 0, -1 dead, ``n >= 1``); ``labels``
    int64 ``[n]`` in ``0..n``, 0 exactly for the non-accepting states.
    Returns ``(trans int32 [m, k], labels int64 [m])``, blocks numbered by
    their first live state, or ``None`` when the start cannot reach an
    accepting state.
    """
    cdef const int32_t[:, ::1] tr = np.ascontiguousarray(trans, dtype=np.int32)
    cdef const int64_t[::1] lab = np.ascontiguousarray(labels, dtype=np.int64)
    cdef int64_t n = tr.shape[0], k = tr.shape[1], s, c, t, nl, top, j, m
    if n < 1 or lab.shape[0] != n:
        raise ValueError("minimal: one label per state, at least one state")
    for s in range(n):
        if not (0 <= lab[s] <= n):
            raise ValueError("minimal: labels must lie in 0..n")
    cdef _Minimal b = _Minimal()
    cdef int64_t nc = _column_classes(b, tr)
    b.table = <int32_t*>_alloc(n * nc, sizeof(int32_t))
    for s in range(n):
        for c in range(nc):
            b.table[s * nc + c] = tr[s, b.rep[c]]
    # trim: the states from which an accepting state can be reached
    _predecessors(b, n, nc)
    b.live_id = <int32_t*>_alloc(n, sizeof(int32_t))
    b.stack = <int32_t*>_alloc(n, sizeof(int32_t))
    top = 0
    for s in range(n):
        b.live_id[s] = -1
        if lab[s]:
            b.live_id[s] = 0
            b.stack[top] = <int32_t>s
            top += 1
    while top:
        top -= 1
        t = b.stack[top]
        for j in range(b.pptr[t], b.pptr[t + 1]):
            s = b.psrc[j]
            if b.live_id[s] < 0:
                b.live_id[s] = 0
                b.stack[top] = <int32_t>s
                top += 1
    if b.live_id[0] < 0:
        return None
    nl = 0
    for s in range(n):
        if b.live_id[s] >= 0:
            b.live_id[s] = <int32_t>nl
            nl += 1
    # the live states' table (moves into dead states die) and labels, in place
    b.label = <int32_t*>_alloc(nl, sizeof(int32_t))
    for s in range(n):
        if b.live_id[s] < 0:
            continue
        b.label[b.live_id[s]] = <int32_t>lab[s]
        for c in range(nc):
            t = b.table[s * nc + c]
            b.table[b.live_id[s] * nc + c] = b.live_id[t] if t >= 0 else -1
    cdef int32_t n_blocks = _hopcroft(b, nl, nc)
    # blocks by their first state: the start's block is 0
    cdef int32_t* new_id = b.stack       # n >= nl >= n_blocks entries, free again
    cdef int32_t* first_of = b.touched
    for s in range(n_blocks):
        new_id[s] = -1
    m = 0
    for s in range(nl):
        if new_id[b.blk[s]] < 0:
            new_id[b.blk[s]] = <int32_t>m
            first_of[m] = <int32_t>s
            m += 1
    out = np.empty((m, k), dtype=np.int32)
    out_labels = np.empty(m, dtype=np.int64)
    cdef int32_t[:, ::1] o = out
    cdef int64_t[::1] ol = out_labels
    b.small = <int32_t*>_alloc(nc, sizeof(int32_t))
    for j in range(m):
        s = first_of[j]
        ol[j] = b.label[s]
        for c in range(nc):
            t = b.table[s * nc + c]
            b.small[c] = new_id[b.blk[t]] if t >= 0 else -1
        for c in range(k):
            o[j, c] = b.small[b.class_of[c]]
    return out, out_labels


def column_classes(trans):
    """:func:`cfgmask.automata.dfa.column_classes` (its reference:
    ``column_classes_python``): the columns of ``trans`` (``[n, k]``, any
    integer type) grouped into classes of equal columns, numbered by their
    first column.  Returns ``(class_of, representatives)``: uint8 ``[k]``
    (int32 above 256 columns) and the first column of each class, a list."""
    cdef const int32_t[:, ::1] tr = np.ascontiguousarray(trans, dtype=np.int32)
    cdef int64_t k = tr.shape[1], nc, c
    dtype = np.uint8 if k <= 256 else np.int32
    if k == 0:
        return np.zeros(0, dtype=dtype), []
    cdef _Minimal b = _Minimal()
    nc = _column_classes(b, tr)
    out = np.empty(k, dtype=np.int32)
    cdef int32_t[::1] o = out
    for c in range(k):
        o[c] = b.class_of[c]
    return out.astype(dtype, copy=False), [b.rep[c] for c in range(nc)]


def byte_representatives(const uint8_t[::1] alive, const uint8_t[::1] col_id,
                         const uint8_t[::1] class_of):
    """``automata.dfa.byte_representatives`` (its reference: ``byte_representatives_python``):
    of the bytes ``alive`` (ascending), the first of each (``class_of[b]``,
    ``col_id[b]``) pair, as bytes.  ~1 µs against ~50 µs in Python, three or
    more calls a compile."""
    cdef uint64_t seen[1024]          # one bit per (class, column) pair: 65,536 pairs
    cdef uint8_t out[256]
    cdef Py_ssize_t i, n = 0
    cdef uint32_t b, p
    if col_id.shape[0] != 256 or class_of.shape[0] != 256:
        raise ValueError("col_id and class_of need one entry per byte")
    memset(seen, 0, sizeof(seen))
    for i in range(min(alive.shape[0], 256)):
        b = alive[i]
        p = (<uint32_t>class_of[b] << 8) | col_id[b]
        if not (seen[p >> 6] >> (p & 63)) & 1:
            seen[p >> 6] |= (<uint64_t>1) << (p & 63)
            out[n] = <uint8_t>b
            n += 1
    return (<char*>out)[:n]


# ------------------------------------------------------------------ breadth-first numbering

def bfs(trans):
    """:func:`cfgmask.automata.minimize.renumber_bfs`'s numbering (its reference:
    ``renumber_bfs_python``): states breadth-first from 0, each state's targets
    in increasing column order.  Returns ``(trans int32, order int64)``, the
    renumbered table and the old state of each new one; every state must be
    reachable (``AssertionError`` otherwise, as in the reference)."""
    cdef const int32_t[:, ::1] tr = np.ascontiguousarray(trans, dtype=np.int32)
    cdef int64_t n = tr.shape[0], k = tr.shape[1], i = 0, top = 1, s, c
    cdef int32_t t
    order = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] old = order
    cdef int32_t* new_id = <int32_t*>_alloc(n, sizeof(int32_t))
    try:
        for s in range(n):
            new_id[s] = -1
        if n:
            new_id[0] = 0
            old[0] = 0
        while i < top:
            s = old[i]
            i += 1
            for c in range(k):
                t = tr[s, c]
                if t >= 0 and new_id[t] < 0:
                    new_id[t] = <int32_t>top
                    old[top] = t
                    top += 1
        if top != n:
            raise AssertionError("unreachable DFA state")
        out = np.empty((n, k), dtype=np.int32)
        _renumbered(tr, old, new_id, out)
    finally:
        free(new_id)
    return out, order


cdef int _renumbered(const int32_t[:, ::1] tr, const int64_t[::1] old, const int32_t* new_id,
                     int32_t[:, ::1] out) except -1:
    cdef int64_t n = tr.shape[0], k = tr.shape[1], i, c
    cdef int32_t t
    for i in range(n):
        for c in range(k):
            t = tr[old[i], c]
            out[i, c] = new_id[t] if t >= 0 else -1
    return 0


# ------------------------------------------------------------------ products

cdef int _cmp_int64(const void* x, const void* y) noexcept nogil:
    cdef int64_t a = (<const int64_t*>x)[0], b = (<const int64_t*>y)[0]
    return (a > b) - (a < b)


cdef inline uint64_t _mix64(int64_t key) noexcept nogil:
    cdef uint64_t h = <uint64_t>key * 11400714819323198485ULL
    return h ^ (h >> 29)


cdef class _Product:
    """The buffers of one :func:`product` call: the pair table (pair code ->
    state, open addressing, ``-1`` = empty slot), the pairs, the class table."""
    cdef int64_t* keys
    cdef int32_t* vals
    cdef int64_t mask           # slots - 1 (a power of two minus one)
    cdef int64_t used
    cdef int64_t* pa
    cdef int64_t* pb
    cdef int32_t* table
    cdef int64_t cap            # states pa, pb and table have room for
    cdef int64_t* fresh         # pair codes first met in the current level
    cdef int64_t fresh_cap

    def __dealloc__(self):
        free(self.keys)
        free(self.vals)
        free(self.pa)
        free(self.pb)
        free(self.table)
        free(self.fresh)

    cdef int64_t slot(self, int64_t key) noexcept nogil:
        """The slot of ``key``, or the empty slot where it would go."""
        cdef int64_t i = <int64_t>(_mix64(key) & <uint64_t>self.mask)
        while self.keys[i] != key and self.keys[i] != -1:
            i = (i + 1) & self.mask
        return i

    cdef int rehash(self) except -1:
        cdef int64_t old_n = self.mask + 1, i, j
        cdef int64_t* old_keys = self.keys
        cdef int32_t* old_vals = self.vals
        self.keys = <int64_t*>_alloc(2 * old_n, sizeof(int64_t))
        self.vals = <int32_t*>malloc(<size_t>(2 * old_n) * sizeof(int32_t))
        if self.vals == NULL:
            free(self.keys)
            self.keys, self.vals = old_keys, old_vals
            raise MemoryError("cfgmask: out of memory (product automaton)")
        self.mask = 2 * old_n - 1
        for i in range(2 * old_n):
            self.keys[i] = -1
        for i in range(old_n):
            if old_keys[i] != -1:
                j = self.slot(old_keys[i])
                self.keys[j] = old_keys[i]
                self.vals[j] = old_vals[i]
        free(old_keys)
        free(old_vals)
        return 0

    cdef int reserve(self, int64_t n_states, int64_t k) except -1:
        if n_states <= self.cap:
            return 0
        cdef int64_t cap = grown(self.cap, n_states)
        self.pa = <int64_t*>grow(self.pa, cap * sizeof(int64_t), "product automaton")
        self.pb = <int64_t*>grow(self.pb, cap * sizeof(int64_t), "product automaton")
        self.table = <int32_t*>grow(self.table, cap * k * sizeof(int32_t), "product automaton")
        self.cap = cap
        return 0


cdef inline int64_t _pair_code(const int32_t[:, ::1] A, const int32_t[:, ::1] B, int64_t a, int64_t b,
                               int64_t c, int64_t na, int64_t nb, int mode) noexcept nogil:
    """The code ``a' * (nb + 1) + b'`` of the pair a byte of class ``c`` leads
    to from ``(a, b)`` (``na`` / ``nb``: dead on that side), or -1 when the
    product dies there."""
    cdef int64_t ta = A[a, c] if a < na else -1
    cdef int64_t tb = B[b, c] if b < nb else -1
    if ta < 0:
        ta = na
    if tb < 0:
        tb = nb
    if mode == 0:
        if ta == na or tb == nb:
            return -1
    elif mode == 1:
        if ta == na:
            return -1
    elif ta == na and tb == nb:
        return -1
    return ta * (nb + 1) + tb


def product(A, B, int mode, int64_t max_states):
    """The reachable pairs of two DFA tables over shared byte classes, for
    :func:`cfgmask.automata.setops.product_table` (its reference:
    ``product_classes_python``).

    ``A`` int32 ``[na, k]`` and ``B`` int32 ``[nb, k]`` (start 0, -1 dead),
    the columns the same byte classes; ``mode`` 0 "and", 1 "minus", 2 "or".
    Returns ``(table int32 [n, k], pa int64 [n], pb int64 [n])``, pair ``i``
    = (``pa[i]``, ``pb[i]``), ``na`` / ``nb`` meaning dead on that side,
    ``-1`` in the table where the product dies; or ``None`` when there are
    more than ``max_states`` pairs.
    """
    cdef const int32_t[:, ::1] ta = np.ascontiguousarray(A, dtype=np.int32)
    cdef const int32_t[:, ::1] tb = np.ascontiguousarray(B, dtype=np.int32)
    cdef int64_t na = ta.shape[0], nb = tb.shape[0], k = ta.shape[1]
    if tb.shape[1] != k or na < 1 or nb < 1 or not 0 <= mode <= 2:
        raise ValueError("product: two tables of the same width, at least one state each, mode 0-2")
    cdef int64_t width = nb + 1, n = 1, lo = 0, hi = 1, n_fresh, s, c, code, i, j
    cdef _Product p = _Product()
    p.mask = 1023
    p.keys = <int64_t*>_alloc(p.mask + 1, sizeof(int64_t))
    p.vals = <int32_t*>_alloc(p.mask + 1, sizeof(int32_t))
    for i in range(p.mask + 1):
        p.keys[i] = -1
    p.cap = 64
    p.pa = <int64_t*>_alloc(p.cap, sizeof(int64_t))
    p.pb = <int64_t*>_alloc(p.cap, sizeof(int64_t))
    p.table = <int32_t*>_alloc(p.cap * k, sizeof(int32_t))
    p.fresh_cap = 64
    p.fresh = <int64_t*>_alloc(p.fresh_cap, sizeof(int64_t))
    p.pa[0] = 0
    p.pb[0] = 0
    j = p.slot(0)
    p.keys[j] = 0
    p.vals[j] = 0
    p.used = 1
    while lo < hi:
        # the pairs this level meets first, then numbered in increasing code
        n_fresh = 0
        for s in range(lo, hi):
            for c in range(k):
                code = _pair_code(ta, tb, p.pa[s], p.pb[s], c, na, nb, mode)
                if code < 0:
                    continue
                j = p.slot(code)
                if p.keys[j] != -1:
                    continue
                p.keys[j] = code
                p.vals[j] = -1
                p.used += 1
                if n_fresh == p.fresh_cap:
                    p.fresh = <int64_t*>grow(p.fresh, 2 * p.fresh_cap * sizeof(int64_t), "product automaton")
                    p.fresh_cap *= 2
                p.fresh[n_fresh] = code
                n_fresh += 1
                if 2 * p.used > p.mask:
                    p.rehash()
        if n + n_fresh > max_states:
            return None
        qsort(p.fresh, <size_t>n_fresh, sizeof(int64_t), _cmp_int64)
        p.reserve(n + n_fresh, k)
        for i in range(n_fresh):
            code = p.fresh[i]
            p.vals[p.slot(code)] = <int32_t>(n + i)
            p.pa[n + i] = code // width
            p.pb[n + i] = code % width
        for s in range(lo, hi):
            for c in range(k):
                code = _pair_code(ta, tb, p.pa[s], p.pb[s], c, na, nb, mode)
                p.table[s * k + c] = p.vals[p.slot(code)] if code >= 0 else -1
        lo = hi
        n += n_fresh
        hi = n
    table = np.empty((n, k), dtype=np.int32)
    pa = np.empty(n, dtype=np.int64)
    pb = np.empty(n, dtype=np.int64)
    cdef int32_t[:, ::1] o = table
    cdef int64_t[::1] oa = pa, ob = pb
    for s in range(n):
        oa[s] = p.pa[s]
        ob[s] = p.pb[s]
        for c in range(k):
            o[s, c] = p.table[s * k + c]
    return table, pa, pb


def live(trans, accepting):
    """:func:`cfgmask.automata.setops.live_states` (its reference:
    ``live_states_python``): bool per state of ``trans`` (int32 ``[n, k]``,
    -1 dead), can it reach an accepting state."""
    cdef const int32_t[:, ::1] tr = np.ascontiguousarray(trans, dtype=np.int32)
    acc = np.ascontiguousarray(accepting, dtype=bool)
    cdef int64_t n = tr.shape[0], k = tr.shape[1], s, c, t, top = 0, j
    if acc.shape[0] != n:
        raise ValueError("live: one accepting flag per state")
    out = acc.copy()
    cdef uint8_t[::1] lv = out.view(np.uint8)
    cdef int64_t* ptr = <int64_t*>_alloc(n + 1, sizeof(int64_t))
    cdef int32_t* src = NULL
    cdef int32_t* stack = NULL
    try:
        for s in range(n + 1):
            ptr[s] = 0
        for s in range(n):
            for c in range(k):
                t = tr[s, c]
                if t >= 0:
                    ptr[t + 1] += 1
        for s in range(n):
            ptr[s + 1] += ptr[s]
        src = <int32_t*>_alloc(ptr[n], sizeof(int32_t))
        stack = <int32_t*>_alloc(n, sizeof(int32_t))
        # predecessors by target; ptr[t] walks to the end of t's run while filling
        for s in range(n):
            for c in range(k):
                t = tr[s, c]
                if t >= 0:
                    src[ptr[t]] = <int32_t>s
                    ptr[t] += 1
        for s in range(n - 1, -1, -1):
            ptr[s + 1] = ptr[s]
        ptr[0] = 0
        for s in range(n):
            if lv[s]:
                stack[top] = <int32_t>s
                top += 1
        while top:
            top -= 1
            t = stack[top]
            for j in range(ptr[t], ptr[t + 1]):
                s = src[j]
                if not lv[s]:
                    lv[s] = 1
                    stack[top] = <int32_t>s
                    top += 1
    finally:
        free(ptr)
        free(src)
        free(stack)
    return out


def keep(trans, live, columns=None):
    """:func:`cfgmask.automata.setops.keep_states` (its reference:
    ``keep_states_python``): the rows of the ``live`` states, renumbered in
    order, moves into the others dead.  ``columns`` (int ``[m]``, optional):
    column ``c`` of the result is column ``columns[c]`` of ``trans``, so a
    table over byte classes comes back over bytes in one pass (NumPy's
    ``table[:, class_of]`` of a 12,000-state product took 50-100 ms)."""
    cdef const int32_t[:, ::1] tr = np.ascontiguousarray(trans, dtype=np.int32)
    lv_arr = np.ascontiguousarray(live, dtype=bool)
    cdef const uint8_t[::1] lv = lv_arr.view(np.uint8)
    cdef int64_t n = tr.shape[0], k = tr.shape[1], s, m = 0
    if lv.shape[0] != n:
        raise ValueError("keep: one flag per state")
    cols_arr = np.arange(k, dtype=np.int64) if columns is None else \
        np.ascontiguousarray(columns, dtype=np.int64)
    cdef const int64_t[::1] cols = cols_arr
    for s in range(cols.shape[0]):
        if not 0 <= cols[s] < k:
            raise ValueError("keep: a column outside the table")
    cdef int32_t* new_id = <int32_t*>_alloc(n, sizeof(int32_t))
    try:
        for s in range(n):
            new_id[s] = <int32_t>m if lv[s] else -1
            m += lv[s] != 0
        out = np.empty((m, cols.shape[0]), dtype=np.int32)
        _renumbered_rows(tr, lv, new_id, cols, out)
    finally:
        free(new_id)
    return out


cdef int _renumbered_rows(const int32_t[:, ::1] tr, const uint8_t[::1] lv, const int32_t* new_id,
                          const int64_t[::1] cols, int32_t[:, ::1] out) except -1:
    cdef int64_t n = tr.shape[0], k = cols.shape[0], s, c, i = 0
    cdef int32_t t
    for s in range(n):
        if not lv[s]:
            continue
        for c in range(k):
            t = tr[s, cols[c]]
            out[i, c] = new_id[t] if t >= 0 else -1
        i += 1
    return 0


# ------------------------------------------------------------------ cycles

def cycle(trans):
    """:func:`cfgmask.automata.dfa.has_cycle` (its reference: ``has_cycle_python``):
    whether the graph of ``trans`` (int ``[n, k]``, -1 dead) has a cycle, by
    an iterative depth-first search from every state (each state's columns in
    order, a dead entry skipped)."""
    cdef const int32_t[:, ::1] tr = np.ascontiguousarray(trans, dtype=np.int32)
    cdef int64_t n = tr.shape[0], k = tr.shape[1], root, top, s, c
    cdef int32_t t
    # colour: 0 unseen, 1 on the stack, 2 done; the stack holds (state, next column)
    cdef uint8_t* colour = <uint8_t*>_alloc(n, sizeof(uint8_t))
    cdef int32_t* st_state = <int32_t*>_alloc(n, sizeof(int32_t))
    cdef int64_t* st_col = <int64_t*>_alloc(n, sizeof(int64_t))
    try:
        for s in range(n):
            colour[s] = 0
        for root in range(n):
            if colour[root]:
                continue
            colour[root] = 1
            st_state[0] = <int32_t>root
            st_col[0] = 0
            top = 1
            while top:
                s = st_state[top - 1]
                c = st_col[top - 1]
                while c < k:
                    t = tr[s, c]
                    c += 1
                    if t < 0 or colour[t] == 2:
                        continue
                    if colour[t] == 1:
                        return True
                    break
                else:
                    colour[s] = 2
                    top -= 1
                    continue
                st_col[top - 1] = c
                colour[t] = 1
                st_state[top] = t
                st_col[top] = 0
                top += 1
        return False
    finally:
        free(colour)
        free(st_state)
        free(st_col)


# ------------------------------------------------------------------ stacking

def stacked_columns(tables, columns):
    """``np.concatenate(tables).take(columns, axis=1)`` as int32 (its reference:
    ``cfgmask.engine.lexer._class_rows_python``): the rows of every table in
    ``tables`` (int32 ``[n_i, k]``, the same ``k``), one after the other,
    reading only ``columns`` of each, without the whole-width copy of all of
    them in between (a JSON schema's hundreds of terminals made that copy
    10 MB of fresh memory, 5-12 ms)."""
    cdef const int64_t[::1] cols = np.ascontiguousarray(columns, dtype=np.int64)
    cdef int64_t m = cols.shape[0], total = 0, k = -1, r = 0, i, j
    cdef const int32_t[:, ::1] tr
    arrays = [np.ascontiguousarray(t, dtype=np.int32) for t in tables]
    for a in arrays:
        if a.ndim != 2 or (k >= 0 and a.shape[1] != k):
            raise ValueError("stacked_columns: tables of one width")
        k = a.shape[1]
        total += a.shape[0]
    for j in range(m):
        if not 0 <= cols[j] < (k if k >= 0 else 0):
            raise ValueError("stacked_columns: a column outside the tables")
    out = np.empty((total, m), dtype=np.int32)
    cdef int32_t[:, ::1] o = out
    for a in arrays:
        tr = a
        for i in range(tr.shape[0]):
            for j in range(m):
                o[r, j] = tr[i, cols[j]]
            r += 1
    return out
