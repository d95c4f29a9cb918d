# cython: language_level=3
"""The lazy union DFA table (see ``cfgmask/lexer.py`` for what a state is).

Invariants:

* state 0 is dead: ``trans[0, *] == 0`` and it accepts nothing;
* ``trans[s, c] == -1`` means "not computed yet": :meth:`LazyDFA.fill` asks
  the Python ``UnionBuilder`` once and stores the answer, so the steady state
  is one table read per byte;
* the table only grows (``realloc``); callers must re-read ``c.trans`` after
  any call that may fill, never keep the pointer across one;
* start states are cached by allowed-terminal bitset in an open-addressing
  table so that building an Earley row never touches a Python object once the
  set has been seen.
"""

from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset, memcpy, memcmp

from cfgmask._fast._types cimport int32_t, int64_t, uint8_t, uint64_t


cdef inline uint64_t _hash_words(const uint64_t* w, int n) noexcept nogil:
    cdef uint64_t h = 1469598103934665603ULL
    cdef int i
    for i in range(n):
        h ^= w[i]
        h *= 1099511628211ULL
        h ^= h >> 29
    return h


cdef class LazyDFA:
    """Flat transition table of the union automaton, filled on demand."""

    def __cinit__(self, builder, class_of_byte, int n_classes, int n_words, ignore_mask):
        cdef int b, w
        self.builder = builder
        self.c.n_classes = n_classes
        self.c.n_words = n_words
        for b in range(256):
            self.c.class_of[b] = <uint8_t>int(class_of_byte[b])
        self.c.cap = 64
        self.c.n_states = 0
        self.c.trans = <int32_t*>malloc(sizeof(int32_t) * self.c.cap * n_classes)
        self.c.accept = <uint64_t*>malloc(sizeof(uint64_t) * self.c.cap * n_words)
        self.c.any_accept = <uint8_t*>malloc(self.c.cap)
        self.c.restricted = <uint8_t*>malloc(self.c.cap)
        self.c.end_trans = <int32_t*>malloc(sizeof(int32_t) * self.c.cap * (n_classes + 1))
        self.start_cap = 64
        self.start_count = 0
        self.start_keys = <uint64_t*>malloc(sizeof(uint64_t) * self.start_cap * n_words)
        self.start_vals = <int32_t*>malloc(sizeof(int32_t) * self.start_cap)
        self.ignore_bits = <uint64_t*>malloc(sizeof(uint64_t) * n_words)
        if (self.c.trans == NULL or self.c.accept == NULL or self.c.any_accept == NULL
                or self.c.restricted == NULL or self.c.end_trans == NULL
                or self.start_keys == NULL or self.start_vals == NULL or self.ignore_bits == NULL):
            raise MemoryError()
        for b in range(self.start_cap):
            self.start_vals[b] = -1
        for w in range(n_words):
            self.ignore_bits[w] = <uint64_t>((ignore_mask >> (64 * w)) & 0xFFFFFFFFFFFFFFFF)
        # state 0: dead, loops to itself
        self._add_state()
        for b in range(n_classes):
            self.c.trans[b] = 0
        self._sync()

    def __dealloc__(self):
        free(self.c.trans)
        free(self.c.accept)
        free(self.c.any_accept)
        free(self.c.restricted)
        free(self.c.end_trans)
        free(self.start_keys)
        free(self.start_vals)
        free(self.ignore_bits)

    cdef int _add_state(self) except -1:
        """Append one state row (all transitions unknown); accept bits set by ``_sync``."""
        cdef int32_t s = self.c.n_states
        cdef int32_t newcap
        cdef int i
        if s == self.c.cap:
            newcap = self.c.cap * 2
            p1 = <int32_t*>realloc(self.c.trans, sizeof(int32_t) * newcap * self.c.n_classes)
            if p1 == NULL:
                raise MemoryError()
            self.c.trans = p1
            p2 = <uint64_t*>realloc(self.c.accept, sizeof(uint64_t) * newcap * self.c.n_words)
            if p2 == NULL:
                raise MemoryError()
            self.c.accept = p2
            p3 = <uint8_t*>realloc(self.c.any_accept, newcap)
            if p3 == NULL:
                raise MemoryError()
            self.c.any_accept = p3
            p4 = <uint8_t*>realloc(self.c.restricted, newcap)
            if p4 == NULL:
                raise MemoryError()
            self.c.restricted = p4
            p5 = <int32_t*>realloc(self.c.end_trans, sizeof(int32_t) * newcap * (self.c.n_classes + 1))
            if p5 == NULL:
                raise MemoryError()
            self.c.end_trans = p5
            self.c.cap = newcap
        for i in range(self.c.n_classes):
            self.c.trans[<int64_t>s * self.c.n_classes + i] = -1
        memset(&self.c.accept[<int64_t>s * self.c.n_words], 0, sizeof(uint64_t) * self.c.n_words)
        self.c.any_accept[s] = 0
        self.c.restricted[s] = 0
        for i in range(self.c.n_classes + 1):
            self.c.end_trans[<int64_t>s * (self.c.n_classes + 1) + i] = -1
        self.c.n_states = s + 1
        return 0

    cdef int _sync(self) except -1:
        """Copy rows for states the builder created since the last call."""
        cdef int32_t s
        cdef int w
        cdef uint64_t any
        while self.c.n_states < len(self.builder.keys):
            s = self.c.n_states
            self._add_state()
            words = self.builder.accept_words(s)
            any = 0
            for w in range(self.c.n_words):
                self.c.accept[<int64_t>s * self.c.n_words + w] = <uint64_t>words[w]
                any |= <uint64_t>words[w]
            self.c.any_accept[s] = 1 if any else 0
            self.c.restricted[s] = 1 if self.builder.restricted[s] else 0
        # the dead state row must stay all-dead
        return 0

    cdef int32_t fill(self, int32_t s, uint8_t b) except -2:
        cdef int cls = self.c.class_of[b]
        cdef int32_t t = <int32_t>self.builder.step(s, cls)
        self._sync()
        self.c.trans[<int64_t>s * self.c.n_classes + cls] = t
        return t

    cdef int32_t fill_end(self, int32_t s, int cls) except -2:
        cdef int32_t t = <int32_t>self.builder.end(s, cls)
        self._sync()
        self.c.end_trans[<int64_t>s * (self.c.n_classes + 1) + cls] = t
        return t

    cdef int32_t start_for(self, const uint64_t* allowed) except -2:
        """Start state of the union automaton for ``allowed`` (n_words uint64)."""
        cdef int n = self.c.n_words
        cdef uint64_t h = _hash_words(allowed, n)
        cdef int32_t mask = self.start_cap - 1
        cdef int32_t i = <int32_t>(h & mask)
        while self.start_vals[i] >= 0:
            if memcmp(&self.start_keys[<int64_t>i * n], allowed, sizeof(uint64_t) * n) == 0:
                return self.start_vals[i]
            i = (i + 1) & mask
        # miss: ask Python, then insert (growing at 50% load)
        value = 0
        for w in range(n):
            value |= (<object>allowed[w]) << (64 * w)
        cdef int32_t sid = <int32_t>self.builder.start(value)
        self._sync()
        if (self.start_count + 1) * 2 > self.start_cap:
            self._grow_starts()
            mask = self.start_cap - 1
        i = <int32_t>(h & mask)
        while self.start_vals[i] >= 0:
            i = (i + 1) & mask
        memcpy(&self.start_keys[<int64_t>i * n], allowed, sizeof(uint64_t) * n)
        self.start_vals[i] = sid
        self.start_count += 1
        return sid

    cdef int _grow_starts(self) except -1:
        cdef int n = self.c.n_words
        cdef int32_t oldcap = self.start_cap
        cdef uint64_t* okeys = self.start_keys
        cdef int32_t* ovals = self.start_vals
        cdef int32_t newcap = oldcap * 2
        cdef int32_t i, j, mask = newcap - 1
        self.start_keys = <uint64_t*>malloc(sizeof(uint64_t) * newcap * n)
        self.start_vals = <int32_t*>malloc(sizeof(int32_t) * newcap)
        if self.start_keys == NULL or self.start_vals == NULL:
            raise MemoryError()
        for i in range(newcap):
            self.start_vals[i] = -1
        self.start_cap = newcap
        for i in range(oldcap):
            if ovals[i] >= 0:
                j = <int32_t>(_hash_words(&okeys[<int64_t>i * n], n) & mask)
                while self.start_vals[j] >= 0:
                    j = (j + 1) & mask
                memcpy(&self.start_keys[<int64_t>j * n], &okeys[<int64_t>i * n], sizeof(uint64_t) * n)
                self.start_vals[j] = ovals[i]
        free(okeys)
        free(ovals)
        return 0

    # ---- Python-visible helpers (tests, debugging) --------------------
    def py_step(self, int s, int b):
        return lex_step(self, s, <uint8_t>b)

    def py_start(self, allowed_mask):
        cdef int n = self.c.n_words
        cdef uint64_t* buf = <uint64_t*>malloc(sizeof(uint64_t) * n)
        try:
            for w in range(n):
                buf[w] = <uint64_t>((allowed_mask >> (64 * w)) & 0xFFFFFFFFFFFFFFFF)
            return self.start_for(buf)
        finally:
            free(buf)

    def py_accepting(self, int s):
        return bool(self.c.any_accept[s])

    @property
    def n_states(self):
        return self.c.n_states
