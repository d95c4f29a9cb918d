from cfgmask._fast._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from cfgmask._fast._sync cimport cfg_rmutex, cfg_load_i32

cdef struct LexTablesC:
    # Per union state; every array is allocated once for ``max_states`` states
    # (calloc: pages are only committed when used), so a pointer read here stays
    # valid while other threads add states.
    int32_t* trans        # [max_states * n_classes] next state + 1; 0 = not computed yet
    uint64_t* accept      # [max_states * n_words] accepting-terminal bitsets
    uint8_t* any_accept   # [max_states]
    int32_t* accept_id    # [max_states] id of the accepting-terminal set (equal sets, equal ids; 0 = none)
    uint8_t* restricted   # [max_states] some accepting terminal has a trailing lookahead
    uint8_t* char_end     # [max_states] entering it completed a character (counted terminals)
    uint8_t* counted      # [max_states] it has a counted pair with a count above 0 (see resaturate)
    int32_t* end_trans    # [max_states * (n_classes + 1)] "ended before class c" state + 1; 0 unknown
    int32_t n_states
    int32_t max_states
    int32_t n_classes
    int32_t n_words
    uint8_t class_of[256]

cdef class LazyDFA:
    cdef LexTablesC c
    cdef cfg_rmutex lock              # the one writer lock of a compiled grammar's caches
    cdef bint lock_ok
    cdef object _keep
    # terminal automata over the byte classes
    cdef int32_t n_terms
    cdef const int32_t** term_trans   # [T] -> [n_states_t * n_classes], -1 dead
    cdef const uint8_t** term_acc     # [T] -> [n_states_t]
    cdef const int32_t** term_forb    # [T] -> [n_states_t] row of forb_bits, -1 none
    cdef const uint64_t* forb_bits    # [n_forb * fw] classes (n_classes = end of input) a lexeme may not end before
    cdef int32_t fw
    # character counters (cfgmask.automata.CountedDFA terminals): a counted terminal's
    # state is n * term_nq[t] + q (n characters completed, base state q)
    cdef readonly bint has_counters
    cdef readonly int max_token_bytes   # -1: counters keep every character
    cdef int32_t* count_limit         # [T] characters the state counts up to, -1: not counted
    cdef int32_t* count_offset        # [T] characters left uncounted (the bound minus count_limit)
    cdef int32_t min_count_offset      # the smallest positive count_offset
    cdef int32_t* zeroed              # [max_states] the state with every count at 0, + 1; 0 unknown
    cdef int32_t* term_nq             # [T] base states
    cdef const uint8_t** term_char_end    # [T] -> [n_states_t] entering q completes a character
    cdef const int32_t** term_min_chars   # [T] -> [n_states_t] fewest characters left to accept
    # product-state keys: (terminal, state) pairs, terminal ascending; "ended" keys start with -1
    cdef int32_t* key_pool
    cdef int64_t pool_n
    cdef int64_t pool_cap
    cdef int64_t* key_off             # [max_states]
    cdef int32_t* key_len             # [max_states]
    cdef int32_t* key_buf             # [2 * T + 1] scratch
    cdef int32_t* h_vals              # state hash: state + 1, 0 empty
    cdef uint64_t* h_hash
    cdef int64_t h_cap
    # accepting-set ids
    cdef uint64_t* aset_keys          # [aset_cap * n_words]
    cdef int32_t* aset_vals           # id + 1, 0 empty
    cdef int64_t aset_cap
    cdef int32_t n_asets
    # start-state cache: open addressing over allowed-set bitsets
    cdef uint64_t* start_keys      # [start_cap * n_words]
    cdef int32_t* start_vals       # [start_cap]; -1 empty
    cdef int32_t start_cap
    cdef int32_t start_count
    cdef uint64_t* ignore_bits     # [n_words]
    cdef uint64_t* at_start_bits   # [n_words] terminals only the first lexeme may be
    cdef bint has_at_start

    cdef int32_t fill(self, int32_t s, uint8_t b) except -2 nogil
    cdef int32_t fill_end(self, int32_t s, int cls) except -2 nogil
    cdef int32_t start_for(self, const uint64_t* allowed) except -2 nogil
    cdef int32_t fill_locked(self, int32_t s, int cls) except -2 nogil
    cdef int32_t _fill_end(self, int32_t s, int cls) except -2 nogil
    cdef int32_t _start_for(self, const uint64_t* allowed) except -2 nogil
    cdef int32_t _intern(self, const int32_t* key, int32_t n) except -2 nogil
    cdef int32_t _aset_id(self, const uint64_t* bits) except -2 nogil
    cdef int32_t _base(self, int32_t t, int32_t st) noexcept nogil
    cdef int32_t _term_step(self, int32_t t, int32_t st, int cls) noexcept nogil
    cdef void _count_flags(self, int32_t s, const int32_t* key, int32_t n) noexcept nogil
    cdef int32_t resaturate(self, int32_t s, int32_t n) except -2 nogil
    cdef int32_t _resaturate(self, int32_t s, int32_t n) except -2 nogil
    cdef int _grow_starts(self) except -1 nogil
    cdef int _grow_hash(self) except -1 nogil


cdef inline int32_t lex_step(LazyDFA dfa, int32_t s, uint8_t b) except -2 nogil:
    """Next lexer state after byte ``b``; 0 = dead.  Computes a transition on first use."""
    cdef int32_t t = cfg_load_i32(&dfa.c.trans[<int64_t>s * dfa.c.n_classes + dfa.c.class_of[b]])
    if t:
        return t - 1
    return dfa.fill(s, b)


cdef inline int32_t lex_end(LazyDFA dfa, int32_t s, int cls) except -2 nogil:
    """The state to scan when the lexeme in state ``s`` ends before a byte of class
    ``cls`` (``n_classes`` = end of input): ``s`` itself unless a trailing lookahead
    forbids some of its accepting terminals there."""
    if not dfa.c.restricted[s]:
        return s
    cdef int32_t t = cfg_load_i32(&dfa.c.end_trans[<int64_t>s * (dfa.c.n_classes + 1) + cls])
    if t:
        return t - 1
    return dfa.fill_end(s, cls)
