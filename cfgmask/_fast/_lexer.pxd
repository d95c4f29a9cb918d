from cfgmask._fast._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

cdef struct LexTablesC:
    int32_t* trans        # [cap * n_classes]; -1 = unknown, 0 = dead
    uint64_t* accept      # [cap * n_words] accepting-terminal bitsets
    uint8_t* any_accept   # [cap]
    uint8_t* restricted   # [cap] some accepting terminal has a trailing lookahead
    int32_t* end_trans    # [cap * (n_classes + 1)] "ended before class c" state; -1 unknown
    int32_t n_states
    int32_t cap
    int32_t n_classes
    int32_t n_words
    uint8_t class_of[256]

cdef class LazyDFA:
    cdef LexTablesC c
    cdef object builder
    # start-state cache: open addressing over allowed-set bitsets
    cdef uint64_t* start_keys      # [start_cap * n_words]
    cdef int32_t* start_vals       # [start_cap]; -1 empty
    cdef int32_t start_cap
    cdef int32_t start_count
    cdef uint64_t* ignore_bits     # [n_words]

    cdef int32_t fill(self, int32_t s, uint8_t b) except -2
    cdef int32_t fill_end(self, int32_t s, int cls) except -2
    cdef int32_t start_for(self, const uint64_t* allowed) except -2
    cdef int _add_state(self) except -1
    cdef int _sync(self) except -1
    cdef int _grow_starts(self) except -1


cdef inline int32_t lex_step(LazyDFA dfa, int32_t s, uint8_t b) except -2:
    """Next lexer state after byte ``b``; 0 = dead.  May call into Python once per new transition."""
    cdef int32_t t = dfa.c.trans[<int64_t>s * dfa.c.n_classes + dfa.c.class_of[b]]
    if t >= 0:
        return t
    return dfa.fill(s, b)


cdef inline int32_t lex_end(LazyDFA dfa, int32_t s, int cls) except -2:
    """The state to scan when the lexeme in state ``s`` ends before a byte of class
    ``cls`` (``n_classes`` = end of input): ``s`` itself unless a trailing lookahead
    forbids some of its accepting terminals there."""
    if not dfa.c.restricted[s]:
        return s
    cdef int32_t t = dfa.c.end_trans[<int64_t>s * (dfa.c.n_classes + 1) + cls]
    if t >= 0:
        return t
    return dfa.fill_end(s, cls)
