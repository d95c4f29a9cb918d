# cython: language_level=3
"""Compile-time kernel of the regex pipeline, in C: the Thompson NFA of a parse tree.

:func:`thompson` builds, for a tree of Python's regex parser, the NFA that
:meth:`cfgmask.automata.nfa.NFA.build` (the reference) builds: the same
states, numbered alike, and the same moves in the same order, kept in C
arrays; :func:`cfgmask._fast._automata.subsets_flat` reads them as they are.
Like :mod:`cfgmask._fast._automata` it imports nothing from cfgmask and is
reached through :mod:`cfgmask.automata.kernels`; ``CFGMASK_PURE_AUTOMATA=1``
makes the pipeline use the reference (``tests/test_automata_compiled.py``
compares the two on every pattern).

Invariants: the builder declines (``thompson`` returns ``None``) every node
it does not build (lookaheads, anchors, the refused constructs), a tree
nested deeper than ``_MAX_DEPTH`` and an NFA reaching its state limit, so
that the reference answers or refuses; it never modifies the tree; every C
buffer belongs to a :class:`Thompson`, whose ``__dealloc__`` frees it.
"""

from libc.stdlib cimport free, qsort
from libc.stdint cimport int32_t, int64_t

from cfgmask._fast._mem cimport grow

import numpy as np


cdef int _cmp_int32(const void* a, const void* b) noexcept nogil:
    cdef int32_t x = (<const int32_t*>a)[0], y = (<const int32_t*>b)[0]
    return (x > y) - (x < y)


class _LeaveToPython(Exception):
    """A node the compiled builder does not build (a lookahead, an anchor, a
    refused construct, too many states, too deep a tree): the reference
    builds the whole pattern and gives the answer or the refusal."""


# Deeper trees go to the reference, whose recursion limit turns them into a
# refusal: C recursion has no such guard.
cdef int _MAX_DEPTH = 200


cdef class Thompson:
    """An NFA as :class:`cfgmask.automata.nfa.NFA`'s ``build`` makes it, for the
    nodes of most terminals, state for state and move for move (see
    :func:`thompson`), its moves kept in C: the empty moves and the character
    moves in the order the reference appends them to its per-state lists
    (:meth:`lists` makes those lists, :meth:`arrays` gives the arrays).
    A character move names its range tuple by index into ``ranges`` (one
    entry per distinct tuple object)."""
    cdef int32_t* e_from
    cdef int32_t* e_to
    cdef int64_t n_e, cap_e
    cdef int32_t* c_from
    cdef int32_t* c_to
    cdef int32_t* c_rid
    cdef int64_t n_c, cap_c
    cdef dict rid_of         # id(range tuple) -> its index in ranges
    cdef readonly list ranges
    cdef readonly list repeats
    cdef readonly int64_t n
    cdef int64_t limit
    cdef object char_ranges
    cdef object LITERAL, IN, NOT_LITERAL, ANY, SUBPATTERN, BRANCH, MAX_REPEAT, MIN_REPEAT
    cdef int64_t maxrepeat, char_mask, type_flags

    def __dealloc__(self):
        free(self.e_from)
        free(self.e_to)
        free(self.c_from)
        free(self.c_to)
        free(self.c_rid)

    cdef int64_t new_state(self) except -1:
        if self.n >= self.limit:
            raise _LeaveToPython()
        self.n += 1
        return self.n - 1

    cdef int add_empty(self, int64_t a, int64_t b) except -1:
        if self.n_e == self.cap_e:
            self.cap_e = 2 * self.cap_e if self.cap_e else 64
            self.e_from = <int32_t*>grow(self.e_from, self.cap_e * sizeof(int32_t), "regex NFA")
            self.e_to = <int32_t*>grow(self.e_to, self.cap_e * sizeof(int32_t), "regex NFA")
        self.e_from[self.n_e] = <int32_t>a
        self.e_to[self.n_e] = <int32_t>b
        self.n_e += 1
        return 0

    cdef int add_char(self, ranges, int64_t a, int64_t b) except -1:
        rid = self.rid_of.get(id(ranges))
        if rid is None:
            rid = self.rid_of[id(ranges)] = len(self.ranges)
            self.ranges.append(ranges)
        if self.n_c == self.cap_c:
            self.cap_c = 2 * self.cap_c if self.cap_c else 64
            self.c_from = <int32_t*>grow(self.c_from, self.cap_c * sizeof(int32_t), "regex NFA")
            self.c_to = <int32_t*>grow(self.c_to, self.cap_c * sizeof(int32_t), "regex NFA")
            self.c_rid = <int32_t*>grow(self.c_rid, self.cap_c * sizeof(int32_t), "regex NFA")
        self.c_from[self.n_c] = <int32_t>a
        self.c_to[self.n_c] = <int32_t>b
        self.c_rid[self.n_c] = <int32_t>rid
        self.n_c += 1
        return 0

    cdef int64_t add_char_set(self, ranges, int64_t entry) except -1:
        cdef int64_t exit_state = self.new_state()
        if ranges:
            self.add_char(ranges, entry, exit_state)
        return exit_state

    cdef inline bint one_character(self, op):
        return op is self.LITERAL or op is self.IN or op is self.NOT_LITERAL or op is self.ANY

    cdef object ranges_of(self, op, av, int64_t flags):
        return self.char_ranges(op, tuple(av) if op is self.IN else av, flags & self.char_mask)

    cdef int64_t build(self, subpattern, int64_t flags, int64_t entry, int depth) except -1:
        cdef int64_t state = entry
        if depth > _MAX_DEPTH:
            raise _LeaveToPython()
        for op, av in <list>subpattern.data:
            if self.one_character(op):
                state = self.add_char_set(self.ranges_of(op, av, flags), state)
            else:
                state = self.build_item(op, av, flags, state, depth)
        return state

    cdef int64_t build_item(self, op, av, int64_t flags, int64_t entry, int depth) except -1:
        cdef int64_t exit_state, add_flags, del_flags
        if op is self.SUBPATTERN:
            add_flags, del_flags = av[1], av[2]
            if add_flags & self.type_flags:
                flags &= ~self.type_flags
            return self.build(av[3], (flags | add_flags) & ~del_flags, entry, depth + 1)
        if op is self.BRANCH:
            exit_state = self.new_state()
            for alternative in av[1]:
                self.add_empty(self.build(alternative, flags, entry, depth + 1), exit_state)
            return exit_state
        if op is self.MAX_REPEAT or op is self.MIN_REPEAT:
            return self.build_repeat(av[0], av[1], av[2], flags, entry, depth + 1)
        raise _LeaveToPython()

    cdef int64_t build_repeat(self, int64_t min_count, int64_t max_count, body, int64_t flags,
                              int64_t entry, int depth) except -1:
        cdef int64_t state = entry, loop, start, end, exit_state, i
        cdef list items
        self.repeats.append((body, flags, max_count))
        if max_count == self.maxrepeat:
            items = body.data
            if len(items) == 1 and self.one_character(items[0][0]):
                op, av = items[0]
                ranges = self.ranges_of(op, av, flags)
                for i in range(min_count - 1):
                    state = self.add_char_set(ranges, state)
                if min_count:
                    loop = self.add_char_set(ranges, state)
                else:
                    loop = self.new_state()
                    self.add_empty(state, loop)
                if ranges:
                    self.add_char(ranges, loop, loop)
                return loop
        if max_count == self.maxrepeat and min_count >= 1:
            for i in range(min_count - 1):
                state = self.build(body, flags, state, depth)
            start = self.new_state()
            self.add_empty(state, start)
            end = self.build(body, flags, start, depth)
            exit_state = self.new_state()
            self.add_empty(end, start)
            self.add_empty(end, exit_state)
            return exit_state
        for i in range(min_count):
            state = self.build(body, flags, state, depth)
        if max_count == self.maxrepeat:
            loop = self.new_state()
            self.add_empty(state, loop)
            self.add_empty(self.build(body, flags, loop, depth), loop)
            return loop
        if max_count == min_count:
            return state
        exit_state = self.new_state()
        for i in range(max_count - min_count):
            self.add_empty(state, exit_state)
            state = self.build(body, flags, state, depth)
        self.add_empty(state, exit_state)
        return exit_state

    def arrays(self):
        """``(e_from, e_to, c_from, c_to, c_rid)``: the moves as int32 arrays, in
        the order they were made (what ``_automata.subsets_flat`` takes)."""
        return (_copy(self.e_from, self.n_e), _copy(self.e_to, self.n_e), _copy(self.c_from, self.n_c),
                _copy(self.c_to, self.n_c), _copy(self.c_rid, self.n_c))

    def lists(self):
        """``(empty_moves, char_moves)`` as the reference's per-state lists."""
        cdef int64_t k
        empty = [[] for _ in range(self.n)]
        chars = [[] for _ in range(self.n)]
        for k in range(self.n_e):
            (<list>empty[self.e_from[k]]).append(self.e_to[k])
        for k in range(self.n_c):
            (<list>chars[self.c_from[k]]).append((self.ranges[self.c_rid[k]], self.c_to[k]))
        return empty, chars


cdef object _copy(const int32_t* p, int64_t n):
    out = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] o = out
    cdef int64_t i
    for i in range(n):
        o[i] = p[i]
    return out


cdef object _atoms(list ranges, int64_t ascii_end, int64_t end):
    """:meth:`cfgmask.automata.nfa.NFA.atoms` of an NFA without lookaheads: the
    sorted distinct boundaries of its moves' ranges, with 0, ``ascii_end`` and
    ``end``."""
    cdef int64_t n = 3, k = 0, i
    for r in ranges:
        n += 2 * len(r)
    cdef int32_t* cuts = <int32_t*>grow(NULL, n * sizeof(int32_t), "regex NFA")
    try:
        cuts[0], cuts[1], cuts[2] = 0, <int32_t>ascii_end, <int32_t>end
        k = 3
        for r in ranges:
            for lo, hi in r:
                cuts[k] = lo
                cuts[k + 1] = hi + 1
                k += 2
        qsort(cuts, k, sizeof(int32_t), _cmp_int32)
        out = np.empty(k, dtype=np.int64)
        n = 0
        for i in range(k):
            if i == 0 or cuts[i] != cuts[i - 1]:
                out[n] = cuts[i]
                n += 1
        return out[:n].copy()
    finally:
        free(cuts)


def thompson(tree, int64_t flags, int64_t limit, ops, char_ranges, int64_t char_mask,
             int64_t type_flags, int64_t max_code_point):
    """The Thompson NFA of parse tree ``tree`` (``re._parser``'s, ``flags`` in
    force) as :class:`cfgmask.automata.nfa.NFA` builds it from a first state
    0: ``(nfa, final, bounds)``, ``nfa`` a :class:`Thompson` holding the
    same moves in the same order (and its ``repeats``, the reference's list),
    ``bounds`` what ``NFA.atoms()`` returns for them.  ``ops``: the parser's
    ``(LITERAL, IN, NOT_LITERAL, ANY, SUBPATTERN, BRANCH, MAX_REPEAT,
    MIN_REPEAT, MAXREPEAT)``; ``char_ranges(op, av, flags)`` the code points
    of a character node (flags masked with ``char_mask``); ``type_flags`` the
    flags a scoped ``(?a)`` replaces.  ``None`` when the tree holds a node
    this builder leaves to the reference (lookaheads, anchors, refused
    constructs), nests deeper than the C stack should go, or needs ``limit``
    states or more.  Built as per-state Python lists, the moves of the
    ``email`` format's 8,636 states cost more than its subset construction."""
    cdef Thompson t = Thompson()
    t.repeats, t.ranges, t.rid_of = [], [], {}
    t.n, t.limit = 0, limit
    t.char_ranges = char_ranges
    (t.LITERAL, t.IN, t.NOT_LITERAL, t.ANY, t.SUBPATTERN, t.BRANCH, t.MAX_REPEAT,
     t.MIN_REPEAT, maxrepeat) = ops
    t.maxrepeat = maxrepeat
    t.char_mask, t.type_flags = char_mask, type_flags
    cdef int64_t final
    try:
        t.new_state()
        final = t.build(tree, flags, 0, 0)
    except _LeaveToPython:
        return None
    return t, final, _atoms(t.ranges, 0x80, max_code_point + 1)
