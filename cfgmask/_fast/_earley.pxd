from cfgmask._fast._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from cfgmask._fast._lexer cimport LazyDFA

cdef struct ItemC:
    int32_t ptr      # index into rhs: the symbol after the dot (negative: rule complete)
    int32_t origin   # row where the rule's match began

cdef class CGrammar:
    cdef object _keep               # numpy arrays backing the pointers below
    cdef const int32_t* rhs
    cdef const int32_t* rule_lhs
    cdef const int32_t* rule_rhs_start
    cdef const int32_t* nt_rules_start   # CSR: rules of nonterminal A (index A - T)
    cdef const int32_t* nt_rules
    cdef const uint8_t* nullable
    cdef const int32_t* static_start     # CSR: items predicting nonterminal B adds (see _prediction_tables)
    cdef const int32_t* static_ptrs
    cdef const int32_t* lc_start         # CSR: nonterminals predicted with A
    cdef const int32_t* lc_nts
    cdef int32_t n_terminals
    cdef int32_t n_words
    cdef int32_t start_end_ptr     # rhs index of "$start -> start ." (the accepting item)
    cdef int32_t max_items_per_row
    cdef int64_t max_matcher_bytes
    cdef int32_t n_nonterminals

cdef class Rows:
    cdef CGrammar g
    cdef LazyDFA dfa
    cdef ItemC* items
    cdef int64_t items_cap
    cdef int32_t* row_start          # [rows_cap + 1]
    cdef int32_t* wait               # indices of items whose next symbol is a nonterminal
    cdef int64_t wait_cap
    cdef int32_t* row_wait_start     # [rows_cap + 1]: row k's waiting items are wait[a:b]
    cdef int32_t* row_lex_start      # lexer start state of each row
    cdef int32_t initial_lex         # lexer start state before the first byte (row 0 plus at_start terminals)
    cdef uint64_t* row_scanned       # [rows_cap * n_words] terminals scanned to build the row (row 0: none)
    cdef uint8_t* row_accepting
    cdef uint64_t* row_expected      # [rows_cap * n_words]
    cdef int32_t rows_cap
    cdef int32_t n_rows
    cdef int32_t n_rows_mem          # rows [0, n_rows_mem) still hold valid data
    # per-row dedup scratch
    cdef int64_t* seen_keys
    cdef uint32_t* seen_gen          # slot is in use iff seen_gen[slot] == gen
    cdef uint64_t* row_stamp         # [rows_cap] unique id of the row's contents (for memo keys)
    cdef uint64_t next_stamp
    cdef public int64_t n_builds
    cdef uint64_t* stamp_keys        # [STAMP_SLOTS * (n_words + 1)] parent stamp, scanned set
    cdef uint64_t* stamp_vals        # [STAMP_SLOTS] stamp, 0 empty
    cdef int32_t seen_cap
    cdef uint32_t* predicted_gen     # per nonterminal: row generation that predicted it
    cdef uint32_t gen
    cdef uint64_t* scratch_bits      # [n_words]
    # what the owning matcher holds beside the rows (byte stack, token list, memo):
    # counted in Limits.max_matcher_bytes with the rows' own arrays (held_bytes)
    cdef int64_t owner_bytes

    # per-stack cache of lexer start states by allowed set, in front of the shared table
    cdef uint64_t* sc_keys           # [SC_SLOTS * n_words]
    cdef int32_t* sc_vals            # [SC_SLOTS], -1 empty
    # Leo memo: (row stamp, row, nonterminal) -> topmost completed item, ptr -1 for none
    cdef uint64_t* leo_key
    cdef int32_t* leo_row
    cdef int32_t* leo_sym
    cdef int32_t* leo_ptr
    cdef int32_t* leo_orig

    cdef int reset(self) except -1 nogil
    cdef int64_t held_bytes(self) noexcept nogil
    cdef int charge(self, int64_t more) except -1 nogil
    cdef int push_scan(self, int32_t lex_state) except -1 nogil
    cdef int _close_row(self, int32_t k) except -1 nogil
    cdef bint _leo_top(self, int32_t j, int32_t A, int32_t* ptr_out, int32_t* orig_out) noexcept nogil
    cdef int64_t _leo_slot(self, int32_t row, int32_t sym) noexcept nogil
    cdef bint _leo_hit(self, int64_t slot, int32_t row, int32_t sym) noexcept nogil
    cdef int _predict(self, int32_t A, int32_t k) except -1 nogil
    cdef int _add(self, int32_t ptr, int32_t origin) except -1 nogil
    cdef int _grow_items(self, int64_t need) except -1 nogil
    cdef int _grow_rows(self) except -1 nogil
    cdef int _finish_row(self, int32_t k) except -1 nogil
    cdef int32_t _start_state(self, const uint64_t* allowed) except -2 nogil
    cdef int _begin_row(self, int32_t k) except -1 nogil
    cdef int _grow_seen(self, int32_t k) except -1 nogil
    cdef uint64_t _stamp_for(self, int32_t r, const uint64_t* scanned) except 0 nogil
