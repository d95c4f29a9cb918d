# cython: language_level=3
"""Compile-time kernels of the regex pipeline, in C: the subset construction
and the UTF-8 spelling of :mod:`cfgmask.automata`, over flat arrays.

With :mod:`cfgmask._fast._thompson` (the NFA) and
:mod:`cfgmask._fast._minimal` (minimisation, breadth-first numbering)
this is the compile-time part of ``_fast``: the only ``_fast`` modules that
:mod:`cfgmask.automata` may import (through :mod:`cfgmask.automata.kernels`;
docs/architecture.md, "The map"), and they import nothing from cfgmask.  The
callers turn ``None`` results into the pipeline's refusals.  Each function
has a plain-Python reference that defines what it computes
(``determinize_python``, ``expand_utf8_python``); the tests
(``tests/test_automata_compiled.py``) compare the two, and
``CFGMASK_PURE_AUTOMATA=1`` makes the pipeline use the references.

Invariants:

* :func:`subsets` numbers DFA states exactly as the reference does: breadth
  first from the start set, the targets of a state in increasing atom order;
  it calls ``hook`` once per target set it closes (the start first), as the
  reference does, before the size check; an exception from ``hook``
  propagates and abandons the construction; needing a state numbered
  ``max_states`` returns ``None`` (the caller raises the refusal), never a
  partial table;
* :func:`utf8` creates continuation states in the reference's order (depth
  first, lead bytes ascending) with the reference's size check;
* inputs are never modified; every C buffer belongs to an object whose
  ``__dealloc__`` frees it (or to a ``try``/``finally``), so an exception
  leaks nothing.
"""

from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

from cfgmask._fast._hash cimport hash_ints

import numpy as np


cdef inline void* _grow(void* p, size_t nbytes) except NULL:
    # realloc, with ``p`` still the caller's when it fails
    cdef void* q = realloc(p, nbytes if nbytes else 1)
    if q == NULL:
        raise MemoryError("cfgmask: out of memory (regex automaton)")
    return q


cdef void* _alloc(int64_t n, size_t size) except NULL:
    cdef void* p = malloc(<size_t>(n if n > 0 else 1) * size)
    if p == NULL:
        raise MemoryError("cfgmask: out of memory (regex automaton)")
    return p


cdef inline int64_t _bisect_left(const int64_t* xs, int64_t lo, int64_t hi, int64_t x) noexcept nogil:
    """``bisect.bisect_left(xs, x, lo, hi)`` over a sorted C array."""
    cdef int64_t m
    while lo < hi:
        m = (lo + hi) >> 1
        if xs[m] < x:
            lo = m + 1
        else:
            hi = m
    return lo


# ------------------------------------------------------------------ sorting

ctypedef fused _key_t:
    int32_t
    uint64_t


cdef void _sort(_key_t* a, int64_t n) noexcept nogil:
    """Ascending, in place: quicksort (median of three) down to insertion sort."""
    cdef int64_t lo = 0, hi = n - 1, i, j, mid
    cdef _key_t pivot, tmp
    while hi - lo > 16:
        mid = lo + (hi - lo) // 2
        if a[mid] < a[lo]:
            tmp = a[mid]; a[mid] = a[lo]; a[lo] = tmp
        if a[hi] < a[lo]:
            tmp = a[hi]; a[hi] = a[lo]; a[lo] = tmp
        if a[hi] < a[mid]:
            tmp = a[hi]; a[hi] = a[mid]; a[mid] = tmp
        pivot = a[mid]
        i = lo
        j = hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while pivot < a[j]:
                j -= 1
            if i <= j:
                tmp = a[i]; a[i] = a[j]; a[j] = tmp
                i += 1
                j -= 1
        # recurse into the smaller side, loop on the larger: O(log n) stack
        if j - lo < hi - i:
            _sort(a + lo, j - lo + 1)
            lo = i
        else:
            _sort(a + i, hi - i + 1)
            hi = j
    for i in range(lo + 1, hi + 1):
        tmp = a[i]
        j = i - 1
        while j >= lo and tmp < a[j]:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = tmp


# ------------------------------------------------------------------ interned int sets

cdef class _Sets:
    """Sorted int32 sequences interned by content: entry ``i`` is
    ``pool[off[i]:off[i + 1]]`` and carries ``value[i]``."""
    cdef int32_t* pool
    cdef int64_t pool_n, pool_cap
    cdef int64_t* off
    cdef uint64_t* hashes
    cdef int32_t* value
    cdef int64_t n, cap
    cdef int32_t* slots          # entry index, -1 = empty
    cdef int64_t mask            # slots - 1 (a power of two minus one)

    def __cinit__(self):
        self.pool_cap = 1024
        self.cap = 256
        self.mask = 1023
        self.pool = <int32_t*>malloc(self.pool_cap * sizeof(int32_t))
        self.off = <int64_t*>malloc((self.cap + 1) * sizeof(int64_t))
        self.hashes = <uint64_t*>malloc(self.cap * sizeof(uint64_t))
        self.value = <int32_t*>malloc(self.cap * sizeof(int32_t))
        self.slots = <int32_t*>malloc((self.mask + 1) * sizeof(int32_t))
        if not (self.pool and self.off and self.hashes and self.value and self.slots):
            raise MemoryError()
        cdef int64_t i
        for i in range(self.mask + 1):
            self.slots[i] = -1
        self.off[0] = 0

    def __dealloc__(self):
        free(self.pool)
        free(self.off)
        free(self.hashes)
        free(self.value)
        free(self.slots)

    cdef inline int64_t find(self, const int32_t* key, int64_t n, uint64_t h) noexcept:
        cdef int64_t slot = <int64_t>(h & <uint64_t>self.mask), e, i, a
        while True:
            e = self.slots[slot]
            if e < 0:
                return -1
            if self.hashes[e] == h and self.off[e + 1] - self.off[e] == n:
                a = self.off[e]
                for i in range(n):
                    if self.pool[a + i] != key[i]:
                        break
                else:
                    return e
            slot = (slot + 1) & self.mask

    cdef int64_t add(self, const int32_t* key, int64_t n, uint64_t h, int32_t value) except -1:
        """Append a key that :meth:`find` did not find; returns its entry index."""
        cdef int64_t e = self.n, slot, i, new_mask
        if e == self.cap:
            self.cap *= 2
            self.off = <int64_t*>_grow(self.off, (self.cap + 1) * sizeof(int64_t))
            self.hashes = <uint64_t*>_grow(self.hashes, self.cap * sizeof(uint64_t))
            self.value = <int32_t*>_grow(self.value, self.cap * sizeof(int32_t))
        if self.pool_n + n > self.pool_cap:
            while self.pool_n + n > self.pool_cap:
                self.pool_cap *= 2
            self.pool = <int32_t*>_grow(self.pool, self.pool_cap * sizeof(int32_t))
        memcpy(self.pool + self.pool_n, key, n * sizeof(int32_t))
        self.pool_n += n
        self.off[e + 1] = self.pool_n
        self.hashes[e] = h
        self.value[e] = value
        self.n = e + 1
        if 2 * self.n > self.mask:    # keep the load under one half
            new_mask = 2 * self.mask + 1
            self.slots = <int32_t*>_grow(self.slots, (new_mask + 1) * sizeof(int32_t))
            self.mask = new_mask
            for i in range(new_mask + 1):
                self.slots[i] = -1
            for i in range(self.n):
                slot = <int64_t>(self.hashes[i] & <uint64_t>new_mask)
                while self.slots[slot] >= 0:
                    slot = (slot + 1) & new_mask
                self.slots[slot] = <int32_t>i
        else:
            slot = <int64_t>(h & <uint64_t>self.mask)
            while self.slots[slot] >= 0:
                slot = (slot + 1) & self.mask
            self.slots[slot] = <int32_t>e
        return e


# ------------------------------------------------------------------ the subset construction

cdef class _Subsets:
    """The buffers of one :func:`subsets` call."""
    # the NFA, flat: empty moves eptr/eto; character moves as atom intervals
    cdef int64_t* eptr
    cdef int32_t* eto
    cdef int64_t* mptr
    cdef int32_t* mlo
    cdef int32_t* mhi
    cdef int32_t* mto
    # scratch, one entry per NFA state
    cdef int32_t* seen
    cdef int32_t* count
    cdef char* listed
    cdef int32_t* active
    cdef int32_t* work          # closure stack and result
    cdef int64_t work_cap
    cdef uint64_t* events
    cdef int64_t events_cap
    # the DFA rows, n_atoms entries each, and which states accept
    cdef int32_t* rows
    cdef char* accepting
    cdef int64_t rows_cap

    def __dealloc__(self):
        free(self.eptr)
        free(self.eto)
        free(self.mptr)
        free(self.mlo)
        free(self.mhi)
        free(self.mto)
        free(self.seen)
        free(self.count)
        free(self.listed)
        free(self.active)
        free(self.work)
        free(self.events)
        free(self.rows)
        free(self.accepting)


cdef int _add_spans(ranges, const int64_t* bounds, int64_t nb, int32_t** span, int64_t* span_n,
                    int64_t* span_cap) except -1:
    """Append the atom intervals of code point ranges ``ranges`` (adjacent ones
    merged) to the ``(lo, hi)`` pairs in ``span``, as the reference maps them."""
    cdef int64_t first = span_n[0], a, z, lo_cp, hi_cp
    cdef int32_t* sp = span[0]
    for lo, hi in ranges:
        lo_cp = lo
        hi_cp = hi + 1
        # bisect_left(bounds, lo) .. bisect_left(bounds, hi + 1) - 1
        a = _bisect_left(bounds, 0, nb, lo_cp)
        z = _bisect_left(bounds, a, nb, hi_cp) - 1
        if span_n[0] > first and sp[span_n[0] - 1] + 1 == a:
            sp[span_n[0] - 1] = <int32_t>z
        else:
            if span_n[0] + 2 > span_cap[0]:
                span_cap[0] *= 2
                sp = span[0] = <int32_t*>_grow(sp, span_cap[0] * sizeof(int32_t))
            sp[span_n[0]] = <int32_t>a
            sp[span_n[0] + 1] = <int32_t>z
            span_n[0] += 2
    return 0


cdef tuple _edges_of_lists(list empty_moves, list char_moves):
    """The reference's per-state move lists as :func:`subsets_flat`'s arrays
    (moves in state order, each state's in list order; a range tuple's index
    by identity), so that one flattening serves both entry points."""
    cdef list e_from = [], e_to = [], c_from = [], c_to = [], c_rid = [], ranges = []
    cdef dict rid_of = {}
    cdef Py_ssize_t s
    for s in range(len(empty_moves)):
        for t in <list>empty_moves[s]:
            e_from.append(s)
            e_to.append(t)
    for s in range(len(char_moves)):
        for rs, t in <list>char_moves[s]:
            rid = rid_of.get(id(rs))
            if rid is None:
                rid = rid_of[id(rs)] = len(ranges)
                ranges.append(rs)
            c_from.append(s)
            c_to.append(t)
            c_rid.append(rid)
    return (_int32s(e_from), _int32s(e_to), _int32s(c_from), _int32s(c_to), _int32s(c_rid),
            ranges)


cdef object _int32s(list xs):
    # a state number past int32 is outside any NFA this builds: refused, not wrapped
    arr = np.array(xs, dtype=np.int64)
    if arr.size and (arr.min() < -2 ** 31 or arr.max() >= 2 ** 31):
        raise ValueError("subsets: a move leaves the NFA")
    return arr.astype(np.int32)


cdef int64_t _closure(_Subsets b, const int32_t* states, int64_t n_states, int32_t stamp) except -1:
    """The empty-move closure of ``states`` into ``b.work``, sorted; returns its size."""
    cdef int64_t top = 0, done, j, i
    cdef int32_t s, t
    # work[0:done] is the result so far, work[done:top] the stack: each state
    # enters once, so the result never needs more room than the NFA has states
    for i in range(n_states):
        s = states[i]
        if b.seen[s] != stamp:
            b.seen[s] = stamp
            b.work[top] = s
            top += 1
    done = 0
    while done < top:
        s = b.work[done]
        done += 1
        for j in range(b.eptr[s], b.eptr[s + 1]):
            t = b.eto[j]
            if b.seen[t] != stamp:
                b.seen[t] = stamp
                b.work[top] = t
                top += 1
    _sort(b.work, top)
    return top


def subsets(list empty_moves, list char_moves, bounds, int start, int final, int max_states, hook):
    """The subset construction of :func:`cfgmask.automata.determinize.determinize`
    for an NFA without lookahead moves (its reference: ``determinize_python``).

    ``empty_moves[s]``: the states an empty move of ``s`` reaches;
    ``char_moves[s]``: ``(ranges, target)`` pairs, ``ranges`` sorted disjoint
    code point intervals; ``bounds``: the atom boundaries (int64).  Returns
    ``(trans int32 [states, atoms], accepting bool [states])``, or ``None``
    when a state numbered ``max_states`` would be needed.  ``hook`` (None or
    a callable) is called before each closure.
    """
    cdef const int64_t[::1] cuts = np.ascontiguousarray(bounds, dtype=np.int64)
    cdef int64_t n_nfa = len(char_moves), n_atoms = cuts.shape[0] - 1
    if len(empty_moves) != n_nfa or not (0 <= start < n_nfa) or n_atoms < 1:
        raise ValueError("subsets: inconsistent NFA")
    cdef _Subsets b = _Subsets()
    e_from, e_to, c_from, c_to, c_rid, ranges = _edges_of_lists(empty_moves, char_moves)
    _flatten_edges(b, n_nfa, e_from, e_to, c_from, c_to, c_rid, ranges, cuts)
    return _construct(b, n_nfa, n_atoms, start, final, max_states, hook)


def subsets_flat(int64_t n_nfa, e_from, e_to, c_from, c_to, c_rid, list ranges, bounds, int start,
                 int final, int max_states, hook):
    """:func:`subsets` of an NFA whose moves came as arrays
    (:func:`cfgmask._fast._thompson.thompson`; they never became lists): empty
    moves ``e_from[k] -> e_to[k]`` and character moves ``c_from[k] -> c_to[k]``
    on ``ranges[c_rid[k]]``, each state's in the order the reference appends
    them to its lists.  The same table as :func:`subsets`."""
    cdef const int64_t[::1] cuts = np.ascontiguousarray(bounds, dtype=np.int64)
    cdef int64_t n_atoms = cuts.shape[0] - 1
    if not (0 <= start < n_nfa) or n_atoms < 1:
        raise ValueError("subsets: inconsistent NFA")
    cdef _Subsets b = _Subsets()
    _flatten_edges(b, n_nfa, np.ascontiguousarray(e_from, dtype=np.int32),
                   np.ascontiguousarray(e_to, dtype=np.int32), np.ascontiguousarray(c_from, dtype=np.int32),
                   np.ascontiguousarray(c_to, dtype=np.int32), np.ascontiguousarray(c_rid, dtype=np.int32),
                   ranges, cuts)
    return _construct(b, n_nfa, n_atoms, start, final, max_states, hook)


cdef int _flatten_edges(_Subsets b, int64_t n, const int32_t[::1] e_from, const int32_t[::1] e_to,
                        const int32_t[::1] c_from, const int32_t[::1] c_to, const int32_t[::1] c_rid,
                        list ranges, const int64_t[::1] bounds) except -1:
    """The NFA's moves as flat arrays (see :func:`subsets_flat`): grouped by
    state, each state's in the order given (a stable counting sort); a
    character move's code point ranges become atom intervals (adjacent ones
    merged), as in the reference."""
    cdef int64_t k, i, r, a, nb = bounds.shape[0], total
    cdef int64_t n_ranges = len(ranges), n_e = e_from.shape[0], n_c = c_from.shape[0]
    if e_to.shape[0] != n_e or c_to.shape[0] != n_c or c_rid.shape[0] != n_c:
        raise ValueError("subsets: move arrays of different lengths")
    for k in range(n_e):
        if not (0 <= e_from[k] < n and 0 <= e_to[k] < n):
            raise ValueError("subsets: an empty move leaves the NFA")
    for k in range(n_c):
        if not (0 <= c_from[k] < n and 0 <= c_to[k] < n and 0 <= c_rid[k] < n_ranges):
            raise ValueError("subsets: a character move leaves the NFA")
    b.eptr = <int64_t*>_alloc(n + 1, sizeof(int64_t))
    b.mptr = <int64_t*>_alloc(n + 1, sizeof(int64_t))
    b.eto = <int32_t*>_alloc(n_e, sizeof(int32_t))
    cdef int64_t* cursor = <int64_t*>_alloc(n + 1, sizeof(int64_t))
    cdef int64_t* first = <int64_t*>_alloc(n_ranges, sizeof(int64_t))
    cdef int64_t* count = <int64_t*>_alloc(n_ranges, sizeof(int64_t))
    cdef int32_t* span = <int32_t*>_alloc(64, sizeof(int32_t))
    cdef int64_t span_n = 0, span_cap = 64
    try:
        for i in range(n + 1):
            b.eptr[i] = 0
            b.mptr[i] = 0
        for k in range(n_e):
            b.eptr[e_from[k] + 1] += 1
        for i in range(n):
            b.eptr[i + 1] += b.eptr[i]
            cursor[i] = b.eptr[i]
        for k in range(n_e):
            b.eto[cursor[e_from[k]]] = e_to[k]
            cursor[e_from[k]] += 1
        # the atom intervals of each distinct range tuple, once
        for r in range(n_ranges):
            first[r] = span_n
            _add_spans(ranges[r], &bounds[0], nb, &span, &span_n, &span_cap)
            count[r] = (span_n - first[r]) // 2
        for k in range(n_c):
            b.mptr[c_from[k] + 1] += count[c_rid[k]]
        for i in range(n):
            b.mptr[i + 1] += b.mptr[i]
            cursor[i] = b.mptr[i]
        total = b.mptr[n]
        b.mlo = <int32_t*>_alloc(total, sizeof(int32_t))
        b.mhi = <int32_t*>_alloc(total, sizeof(int32_t))
        b.mto = <int32_t*>_alloc(total, sizeof(int32_t))
        for k in range(n_c):
            r = c_rid[k]
            i = cursor[c_from[k]]
            for a in range(first[r], first[r] + 2 * count[r], 2):
                b.mlo[i] = span[a]
                b.mhi[i] = span[a + 1]
                b.mto[i] = c_to[k]
                i += 1
            cursor[c_from[k]] = i
    finally:
        free(cursor)
        free(first)
        free(count)
        free(span)
    return 0


cdef object _construct(_Subsets b, int64_t n_nfa, int64_t n_atoms, int start, int final,
                       int max_states, hook):
    """The subset construction over the flat NFA in ``b`` (see :func:`subsets`)."""
    cdef int64_t i
    b.seen = <int32_t*>malloc(n_nfa * sizeof(int32_t))
    b.count = <int32_t*>malloc(n_nfa * sizeof(int32_t))
    b.listed = <char*>malloc(n_nfa)
    b.active = <int32_t*>malloc(n_nfa * sizeof(int32_t))
    b.work = <int32_t*>malloc(n_nfa * sizeof(int32_t))
    b.events_cap = 256
    b.events = <uint64_t*>malloc(b.events_cap * sizeof(uint64_t))
    b.rows_cap = 16
    b.rows = <int32_t*>malloc(b.rows_cap * n_atoms * sizeof(int32_t))
    b.accepting = <char*>malloc(b.rows_cap)
    if not (b.seen and b.count and b.listed and b.active and b.work and b.events
            and b.rows and b.accepting):
        raise MemoryError()
    for i in range(n_nfa):
        b.seen[i] = 0
        b.count[i] = 0
        b.listed[i] = 0

    cdef _Sets closed_sets = _Sets()     # closed subset -> DFA state (value unused)
    cdef _Sets target_sets = _Sets()     # target set before closure -> DFA state
    cdef int32_t stamp = 1, first_state = start, d, pos, nxt, t
    cdef int64_t size, e, n_events, j, n_active, na, m, sub_lo, sub_hi, x
    cdef uint64_t h, ev
    cdef int32_t* row

    if hook is not None:
        hook()
    size = _closure(b, &first_state, 1, stamp)
    closed_sets.add(b.work, size, hash_ints(b.work, size), 0)
    cdef int64_t n_states = 1, done = 0
    while done < n_states:
        if n_states > b.rows_cap:
            while n_states > b.rows_cap:
                b.rows_cap *= 2
            b.rows = <int32_t*>_grow(b.rows, b.rows_cap * n_atoms * sizeof(int32_t))
            b.accepting = <char*>_grow(b.accepting, b.rows_cap)
        row = b.rows + done * n_atoms
        for i in range(n_atoms):
            row[i] = -1
        sub_lo = closed_sets.off[done]
        sub_hi = closed_sets.off[done + 1]
        b.accepting[done] = 0
        # the moves of every member as start and end events, by atom
        n_events = 0
        for i in range(sub_lo, sub_hi):
            x = closed_sets.pool[i]
            if x == final:
                b.accepting[done] = 1
            n_events += 2 * (b.mptr[x + 1] - b.mptr[x])
        if n_events > b.events_cap:
            while n_events > b.events_cap:
                b.events_cap *= 2
            b.events = <uint64_t*>_grow(b.events, b.events_cap * sizeof(uint64_t))
        n_events = 0
        for i in range(sub_lo, sub_hi):
            x = closed_sets.pool[i]
            for e in range(b.mptr[x], b.mptr[x + 1]):
                t = b.mto[e]
                b.events[n_events] = (<uint64_t>b.mlo[e] << 32) | (<uint64_t>t << 1) | 1
                b.events[n_events + 1] = (<uint64_t>(b.mhi[e] + 1) << 32) | (<uint64_t>t << 1)
                n_events += 2
        _sort(b.events, n_events)
        # sweep: between consecutive event positions the set of targets with a
        # positive count is what that run of atoms reaches
        j = 0
        n_active = 0
        while j < n_events:
            pos = <int32_t>(b.events[j] >> 32)
            while j < n_events and <int32_t>(b.events[j] >> 32) == pos:
                ev = b.events[j]
                t = <int32_t>((ev >> 1) & 0x7FFFFFFF)
                if ev & 1:
                    b.count[t] += 1
                    if not b.listed[t]:
                        b.listed[t] = 1
                        b.active[n_active] = t
                        n_active += 1
                else:
                    b.count[t] -= 1
                j += 1
            if j == n_events:
                break
            na = 0
            for i in range(n_active):
                t = b.active[i]
                if b.count[t] > 0:
                    b.active[na] = t
                    na += 1
                else:
                    b.listed[t] = 0
            n_active = na
            if not n_active:
                continue
            _sort(b.active, n_active)
            h = hash_ints(b.active, n_active)
            e = target_sets.find(b.active, n_active, h)
            if e >= 0:
                d = target_sets.value[e]
            else:
                if hook is not None:
                    hook()
                stamp += 1
                size = _closure(b, b.active, n_active, stamp)
                m = closed_sets.find(b.work, size, hash_ints(b.work, size))
                if m < 0:
                    if n_states >= max_states:
                        return None
                    m = closed_sets.add(b.work, size, hash_ints(b.work, size), 0)
                    n_states += 1
                d = <int32_t>m
                target_sets.add(b.active, n_active, h, d)
            nxt = <int32_t>(b.events[j] >> 32)
            for i in range(pos, nxt):
                row[i] = d
        for i in range(n_active):
            b.listed[b.active[i]] = 0
        done += 1
    trans = np.empty((n_states, n_atoms), dtype=np.int32)
    accepting = np.empty(n_states, dtype=np.uint8)
    cdef int32_t[:, ::1] out = trans
    cdef unsigned char[::1] acc = accepting
    memcpy(&out[0, 0], b.rows, n_states * n_atoms * sizeof(int32_t))
    for i in range(n_states):
        acc[i] = b.accepting[i]
    return trans, accepting.view(np.bool_)


# ------------------------------------------------------------------ UTF-8 spelling

cdef class _Utf8:
    """The state of one :func:`utf8` call: continuation rows (256 entries each,
    numbered from ``n``) and the key of each."""
    cdef int32_t* extra
    cdef int64_t n_extra, cap, n, max_states
    cdef _Sets shared            # (bytes left, parts) -> continuation state

    def __dealloc__(self):
        free(self.extra)


cdef int64_t _entries(const int32_t* parts, int64_t n_parts, int shift, int32_t** out) except -1:
    """``parts`` (``lo, hi, tag`` triples, sorted, disjoint) cut at multiples of
    ``1 << shift``: ``*out`` gets ``top, lo, hi, tag`` quadruples (``lo``/``hi``
    below the cut), by top; returns their number.  The caller frees ``*out``."""
    cdef int64_t i, size = 0, top, top_lo, top_hi, k = 0
    cdef int32_t lo, hi, unit = (1 << shift) - 1
    for i in range(n_parts):
        size += (parts[3 * i + 1] >> shift) - (parts[3 * i] >> shift) + 1
    cdef int32_t* e = <int32_t*>_alloc(4 * size, sizeof(int32_t))
    for i in range(n_parts):
        lo = parts[3 * i]
        hi = parts[3 * i + 1]
        top_lo = lo >> shift
        top_hi = hi >> shift
        for top in range(top_lo, top_hi + 1):
            e[4 * k] = <int32_t>top
            e[4 * k + 1] = lo - <int32_t>(top << shift) if top == top_lo else 0
            e[4 * k + 2] = hi - <int32_t>(top << shift) if top == top_hi else unit
            e[4 * k + 3] = parts[3 * i + 2]
            k += 1
    out[0] = e
    return k


cdef int64_t _groups(const int32_t* e, int64_t n_e, int32_t** out) except -1:
    """Consecutive tops of the quadruples ``e`` whose low parts are equal, as
    ``top_lo, top_hi, first entry, entries`` quadruples (``*out``, freed by the
    caller); returns their number.  The same grouping as the reference's
    ``_split_by_top_digit``."""
    cdef int32_t* g = <int32_t*>_alloc(4 * n_e, sizeof(int32_t))
    cdef int64_t i = 0, j, n_g = 0, x, pi, pn
    cdef bint same
    while i < n_e:
        j = i + 1
        while j < n_e and e[4 * j] == e[4 * i]:
            j += 1
        same = False
        if n_g and g[4 * (n_g - 1) + 1] == e[4 * i] - 1 and g[4 * (n_g - 1) + 3] == j - i:
            pi = g[4 * (n_g - 1) + 2]
            pn = j - i
            same = True
            for x in range(pn):
                if (e[4 * (pi + x) + 1] != e[4 * (i + x) + 1] or e[4 * (pi + x) + 2] != e[4 * (i + x) + 2]
                        or e[4 * (pi + x) + 3] != e[4 * (i + x) + 3]):
                    same = False
                    break
        if same:
            g[4 * (n_g - 1) + 1] = e[4 * i]
        else:
            g[4 * n_g] = e[4 * i]
            g[4 * n_g + 1] = e[4 * i]
            g[4 * n_g + 2] = <int32_t>i
            g[4 * n_g + 3] = <int32_t>(j - i)
            n_g += 1
        i = j
    out[0] = g
    return n_g


cdef int64_t _continuation(_Utf8 u, int k, const int32_t* e, int64_t n_e) except -2:
    """The state that reads ``k`` more continuation bytes whose payloads go to
    the targets of the low parts of quadruples ``e``; -1 when it would be
    numbered ``max_states`` or more."""
    cdef int64_t i, sid, found, row_at, n_sub = 0, n_g = 0, gi, nxt
    cdef int64_t key_n = 1 + 3 * n_e
    cdef int32_t* key = <int32_t*>_alloc(key_n, sizeof(int32_t))
    cdef int32_t* sub = NULL
    cdef int32_t* grp = NULL
    cdef int32_t* row
    cdef uint64_t h
    try:
        key[0] = k
        for i in range(n_e):
            key[1 + 3 * i] = e[4 * i + 1]
            key[2 + 3 * i] = e[4 * i + 2]
            key[3 + 3 * i] = e[4 * i + 3]
        h = hash_ints(key, key_n)
        found = u.shared.find(key, key_n, h)
        if found >= 0:
            return u.shared.value[found]
        sid = u.n + u.n_extra
        if sid >= u.max_states:
            return -1
        u.shared.add(key, key_n, h, <int32_t>sid)
        if u.n_extra == u.cap:
            u.cap *= 2
            u.extra = <int32_t*>_grow(u.extra, u.cap * 256 * sizeof(int32_t))
        row_at = u.n_extra * 256
        u.n_extra += 1
        for i in range(256):
            u.extra[row_at + i] = -1
        n_sub = _entries(key + 1, n_e, 6 * (k - 1), &sub)
        n_g = _groups(sub, n_sub, &grp)
        for gi in range(n_g):
            if k == 1:
                nxt = sub[4 * grp[4 * gi + 2] + 3]
            else:
                nxt = _continuation(u, k - 1, sub + 4 * grp[4 * gi + 2], grp[4 * gi + 3])
                if nxt < 0:
                    return -1
            row = u.extra + row_at        # the rows may have moved
            for i in range(0x80 + grp[4 * gi], 0x81 + grp[4 * gi + 1]):
                row[i] = <int32_t>nxt
        return sid
    finally:
        free(key)
        free(sub)
        free(grp)


def utf8(trans, bounds, length_bounds, int max_states):
    """:func:`cfgmask.automata.utf8.expand_utf8` (its reference:
    ``expand_utf8_python``): the byte table of a character DFA whose columns
    are the code point atoms ``bounds``; ``length_bounds``: the code point
    range of each UTF-8 length 2, 3, 4.  Returns int32 ``[states, 256]``, the
    continuation states after the character states in the reference's order,
    or ``None`` when a state numbered ``max_states`` would be needed."""
    cdef const int32_t[:, ::1] tr = np.ascontiguousarray(trans, dtype=np.int32)
    cdef const int64_t[::1] cuts = np.ascontiguousarray(bounds, dtype=np.int64)
    cdef int64_t n = tr.shape[0], n_atoms = tr.shape[1], s, a, c, first, i, run, n_seg
    cdef int64_t L, n_clip, n_e, n_g, gi, sid, marker
    cdef int32_t lo, hi, t
    cdef int32_t blo[3]
    cdef int32_t bhi[3]
    if cuts.shape[0] != n_atoms + 1 or len(length_bounds) != 3:
        raise ValueError("utf8: one column per atom, three lengths")
    for L in range(3):
        blo[L], bhi[L] = length_bounds[L]
    cdef int32_t[256] atom_of
    a = 0
    for c in range(0x80):
        while a + 1 < cuts.shape[0] and cuts[a + 1] <= c:
            a += 1
        atom_of[c] = <int32_t>a
    first = 0
    while first < n_atoms and cuts[first] < 0x80:
        first += 1
    cdef _Utf8 u = _Utf8()
    u.n = n
    u.max_states = max_states
    u.cap = 16
    u.extra = <int32_t*>_alloc(u.cap * 256, sizeof(int32_t))
    u.shared = _Sets()
    out = np.full((n, 256), -1, dtype=np.int32)
    cdef int32_t[:, ::1] o = out
    cdef int32_t* seg = <int32_t*>_alloc(3 * (n_atoms - first), sizeof(int32_t))
    cdef int32_t* clip = <int32_t*>_alloc(3 * (n_atoms - first), sizeof(int32_t))
    cdef int32_t* ent = NULL
    cdef int32_t* grp = NULL
    try:
        for s in range(n):
            for c in range(0x80):
                o[s, c] = tr[s, atom_of[c]]
            # runs of atoms with one target are contiguous code point ranges
            n_seg = 0
            a = first
            while a < n_atoms:
                t = tr[s, a]
                run = a + 1
                while run < n_atoms and tr[s, run] == t:
                    run += 1
                if t >= 0:
                    seg[3 * n_seg] = <int32_t>cuts[a]
                    seg[3 * n_seg + 1] = <int32_t>(cuts[run] - 1)
                    seg[3 * n_seg + 2] = t
                    n_seg += 1
                a = run
            for L in range(3):
                n_clip = 0
                for i in range(n_seg):
                    if seg[3 * i] <= bhi[L] and seg[3 * i + 1] >= blo[L]:
                        clip[3 * n_clip] = seg[3 * i] if seg[3 * i] > blo[L] else blo[L]
                        clip[3 * n_clip + 1] = seg[3 * i + 1] if seg[3 * i + 1] < bhi[L] else bhi[L]
                        clip[3 * n_clip + 2] = seg[3 * i + 2]
                        n_clip += 1
                if not n_clip:
                    continue
                marker = (0xC0, 0xE0, 0xF0)[L]
                n_e = _entries(clip, n_clip, 6 * (L + 1), &ent)
                n_g = _groups(ent, n_e, &grp)
                for gi in range(n_g):
                    sid = _continuation(u, <int>(L + 1), ent + 4 * grp[4 * gi + 2], grp[4 * gi + 3])
                    if sid < 0:
                        return None
                    for c in range(marker + grp[4 * gi], marker + grp[4 * gi + 1] + 1):
                        o[s, c] = <int32_t>sid
                free(ent)
                free(grp)
                ent = NULL
                grp = NULL
    finally:
        free(seg)
        free(clip)
        free(ent)
        free(grp)
    if not u.n_extra:
        return out
    full = np.empty((n + u.n_extra, 256), dtype=np.int32)
    full[:n] = out
    cdef int32_t[:, ::1] f = full
    memcpy(&f[n, 0], u.extra, u.n_extra * 256 * sizeof(int32_t))
    return full
