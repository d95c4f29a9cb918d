# cython: language_level=3
"""Earley rows over the flat CFG of ``cfgmask/grammar.py``.

Terminology follows Kallmeyer's and Aycock & Horspool's presentations: a
*row* is an Earley set, an *item* is a dotted rule plus the row where it
started (its origin).  An item is two int32: ``ptr`` indexes ``rhs`` at the
symbol after the dot (so advancing the dot is ``ptr + 1``, and ``rhs[ptr] < 0``
means the rule is complete), ``origin`` is a row index.

Invariants:

* rows form a stack; row ``k`` holds items ``row_start[k] .. row_start[k+1]``;
  popping is truncation (``n_rows``), the items stay in memory;
* row ``k`` was built from row ``k-1`` by scanning the terminal set
  ``row_scanned[k]`` (the lexeme's accepting terminals that row ``k-1``
  expected); rows ``< n_rows_mem`` still hold that data, so scanning a lexeme
  with the same terminal set at the same place re-pushes the row in O(1).  The
  key is the terminal set, not the lexer state: lexemes that end in different
  lexer states but are accepted by the same terminals (``countx`` and ``count``
  as identifiers) build the same row, and the mask path scans many of them in a
  row from the same place;
* nullable nonterminals are handled the Aycock-Horspool way: predicting a
  nullable ``A`` also advances the predicting item over ``A``, so completions
  with origin equal to the current row never need to look back;
* a row never holds more than ``max_items_per_row`` items: hitting the limit
  raises ``BudgetExceeded`` (right recursion is quadratic in a plain Earley
  parser; the limit turns a hang into a clear error).
"""

from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset, memcpy, memcmp

import numpy as np

from cfgmask._fast._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from cfgmask._fast._lexer cimport LazyDFA
from cfgmask._fast._mem cimport grown, grow, data_of
from cfgmask.errors import BudgetExceeded


cdef enum:
    STAMP_SLOTS = 8192    # canonical-stamp table slots per row stack (a power of two)
    SC_SLOTS = 256        # start-state cache slots per row stack (a power of two)
    LEO_SLOTS = 4096      # Leo memo slots per row stack (a power of two)


cdef int _raise_row_budget(int32_t k, int32_t limit) except -1 nogil:
    with gil:
        raise BudgetExceeded(
            f"Earley row {k} exceeds {limit} items (a highly ambiguous grammar, or deep nesting "
            "that is not right recursion); raise Limits.max_items_per_row or rewrite the rule")


cdef int _raise_matcher_budget(int64_t used, int64_t limit) except -1 nogil:
    with gil:
        raise BudgetExceeded(
            f"one matcher needs more than {limit} bytes ({used} requested: Earley rows, "
            "byte stack and rollback history): raise Limits.max_matcher_bytes, or shorten the document")


cdef class CGrammar:
    """Immutable flat grammar tables, shared by every matcher of a compiled grammar."""

    def __cinit__(self, grammar, int max_items_per_row=100000, int64_t max_matcher_bytes=1 << 28):
        T = grammar.n_terminals
        N = grammar.n_nonterminals
        rhs = np.ascontiguousarray(grammar.rhs, dtype=np.int32)
        lhs = np.ascontiguousarray(grammar.rule_lhs, dtype=np.int32)
        rstart = np.ascontiguousarray(grammar.rule_rhs_start, dtype=np.int32)
        order = np.argsort(lhs, kind="stable").astype(np.int32)
        counts = np.bincount(lhs - T, minlength=N)
        nt_start = np.zeros(N + 1, dtype=np.int32)
        nt_start[1:] = np.cumsum(counts)
        nullable = np.ascontiguousarray(grammar.nullable, dtype=np.uint8)
        st_start, st_ptrs, lc_start, lc_nts = _prediction_tables(rhs, lhs, rstart, nullable, T, N)
        self._keep = (rhs, lhs, rstart, order, nt_start, nullable, st_start, st_ptrs, lc_start, lc_nts)
        self.rhs = <const int32_t*>data_of(rhs)
        self.rule_lhs = <const int32_t*>data_of(lhs)
        self.rule_rhs_start = <const int32_t*>data_of(rstart)
        self.nt_rules = <const int32_t*>data_of(order)
        self.nt_rules_start = <const int32_t*>data_of(nt_start)
        self.nullable = <const uint8_t*>data_of(nullable)
        self.static_start = <const int32_t*>data_of(st_start)
        self.static_ptrs = <const int32_t*>data_of(st_ptrs)
        self.lc_start = <const int32_t*>data_of(lc_start)
        self.lc_nts = <const int32_t*>data_of(lc_nts)
        self.n_terminals = T
        self.n_words = max(1, (T + 63) // 64)
        self.start_end_ptr = int(rstart[grammar.start_rule]) + 1
        self.max_items_per_row = max_items_per_row
        self.max_matcher_bytes = max_matcher_bytes
        self.n_nonterminals = N


def _prediction_tables(rhs, lhs, rstart, nullable, T, N):
    """What predicting a nonterminal adds to a row, computed once per grammar.

    ``static[B]``: the items of B's rules with the dot at the start and after
    every nullable prefix (the complete position too when the whole rule is
    nullable), i.e. everything predicting B adds with origin = the current row.
    ``lc[A]``: the nonterminals predicted, transitively, when A is (A first).
    """
    rules_of = [[] for _ in range(N)]
    for r, a in enumerate(lhs.tolist()):
        rules_of[a - T].append(r)
    # plain lists: indexing numpy arrays one element at a time costs more than the loop
    rhs_l = rhs.tolist()
    rstart_l = rstart.tolist()
    nullable_l = nullable.tolist()
    static, first = [], []
    for b in range(N):
        items, nts = [], []
        for r in rules_of[b]:
            p = rstart_l[r]
            while True:
                items.append(p)
                sym = rhs_l[p]
                if sym >= T:
                    nts.append(sym - T)
                if sym < 0 or not nullable_l[sym]:
                    break
                p += 1
        static.append(items)
        first.append(nts)
    lc = []
    for a in range(N):
        seen, order = {a}, [a]
        for x in order:
            for c in first[x]:
                if c not in seen:
                    seen.add(c)
                    order.append(c)
        lc.append(order)

    def csr(lists):
        start = np.zeros(len(lists) + 1, dtype=np.int32)
        start[1:] = np.cumsum([len(x) for x in lists])
        flat = np.array([v for x in lists for v in x] or [0], dtype=np.int32)
        return start, flat

    st_start, st_ptrs = csr(static)
    lc_start, lc_nts = csr(lc)
    return st_start, st_ptrs, lc_start, lc_nts


cdef class Rows:
    """A stack of Earley rows for one matcher."""

    def __cinit__(self, CGrammar g, LazyDFA dfa):
        self.g = g
        self.dfa = dfa
        self.items_cap = 1024
        self.items = <ItemC*>malloc(sizeof(ItemC) * self.items_cap)
        self.rows_cap = 64
        self.row_start = <int32_t*>malloc(sizeof(int32_t) * (self.rows_cap + 1))
        self.row_wait_start = <int32_t*>malloc(sizeof(int32_t) * (self.rows_cap + 1))
        self.wait_cap = 1024
        self.wait = <int32_t*>malloc(sizeof(int32_t) * self.wait_cap)
        self.row_lex_start = <int32_t*>malloc(sizeof(int32_t) * self.rows_cap)
        self.row_scanned = <uint64_t*>malloc(sizeof(uint64_t) * self.rows_cap * self.g.n_words)
        self.row_accepting = <uint8_t*>malloc(self.rows_cap)
        self.row_expected = <uint64_t*>malloc(sizeof(uint64_t) * self.rows_cap * self.g.n_words)
        self.seen_cap = 256
        self.seen_keys = <int64_t*>malloc(sizeof(int64_t) * self.seen_cap)
        self.seen_gen = <uint32_t*>calloc(self.seen_cap, sizeof(uint32_t))
        self.row_stamp = <uint64_t*>malloc(sizeof(uint64_t) * self.rows_cap)
        n_nt = len(self.g._keep[4]) - 1
        self.predicted_gen = <uint32_t*>malloc(sizeof(uint32_t) * max(1, n_nt))
        self.scratch_bits = <uint64_t*>malloc(sizeof(uint64_t) * self.g.n_words)
        if (self.items == NULL or self.row_start == NULL or self.wait == NULL or self.row_wait_start == NULL or self.row_lex_start == NULL
                or self.row_scanned == NULL or self.row_accepting == NULL
                or self.row_expected == NULL or self.seen_keys == NULL or self.seen_gen == NULL
                or self.row_stamp == NULL
                or self.predicted_gen == NULL or self.scratch_bits == NULL):
            raise MemoryError()
        memset(self.predicted_gen, 0, sizeof(uint32_t) * max(1, n_nt))
        self.gen = 0
        self.next_stamp = 2
        self.stamp_keys = <uint64_t*>calloc(STAMP_SLOTS * (self.g.n_words + 1), sizeof(uint64_t))
        self.stamp_vals = <uint64_t*>calloc(STAMP_SLOTS, sizeof(uint64_t))
        self.sc_keys = <uint64_t*>calloc(SC_SLOTS * self.g.n_words, sizeof(uint64_t))
        self.sc_vals = <int32_t*>malloc(sizeof(int32_t) * SC_SLOTS)
        if self.stamp_keys == NULL or self.stamp_vals == NULL or self.sc_keys == NULL or self.sc_vals == NULL:
            raise MemoryError()
        memset(self.sc_vals, 0xFF, sizeof(int32_t) * SC_SLOTS)
        self.leo_key = <uint64_t*>calloc(LEO_SLOTS, sizeof(uint64_t))
        self.leo_row = <int32_t*>malloc(sizeof(int32_t) * LEO_SLOTS)
        self.leo_sym = <int32_t*>malloc(sizeof(int32_t) * LEO_SLOTS)
        self.leo_ptr = <int32_t*>malloc(sizeof(int32_t) * LEO_SLOTS)
        self.leo_orig = <int32_t*>malloc(sizeof(int32_t) * LEO_SLOTS)
        if (self.leo_key == NULL or self.leo_row == NULL or self.leo_sym == NULL
                or self.leo_ptr == NULL or self.leo_orig == NULL):
            raise MemoryError()
        memset(self.leo_row, 0xFF, sizeof(int32_t) * LEO_SLOTS)
        with nogil:
            self.reset()     # takes the cache lock: never wait for it holding the GIL

    def __dealloc__(self):
        free(self.items)
        free(self.row_start)
        free(self.row_wait_start)
        free(self.wait)
        free(self.row_lex_start)
        free(self.row_scanned)
        free(self.row_accepting)
        free(self.row_expected)
        free(self.seen_keys)
        free(self.seen_gen)
        free(self.row_stamp)
        free(self.stamp_keys)
        free(self.stamp_vals)
        free(self.sc_keys)
        free(self.sc_vals)
        free(self.leo_key)
        free(self.leo_row)
        free(self.leo_sym)
        free(self.leo_ptr)
        free(self.leo_orig)
        free(self.predicted_gen)
        free(self.scratch_bits)

    cdef int reset(self) except -1 nogil:
        """Row 0: the prediction closure of ``$start -> . start``."""
        self.n_rows = 0
        self.row_start[0] = 0
        self.row_start[1] = 0
        self.row_wait_start[0] = 0
        self._begin_row(0)
        self._predict(0, 0)
        self._close_row(0)
        memset(self.row_scanned, 0, sizeof(uint64_t) * self.g.n_words)
        self.row_stamp[0] = 1
        self._finish_row(0)
        self.n_rows = 1
        self.n_rows_mem = 1
        return 0

    cdef int64_t held_bytes(self) noexcept nogil:
        """Bytes this matcher holds: every array of the row stack at its capacity
        (growth doubles, so up to half can be unused), plus ``owner_bytes``."""
        cdef int64_t W = self.g.n_words
        cdef int64_t rows = self.rows_cap
        return (self.items_cap * sizeof(ItemC) + self.wait_cap * sizeof(int32_t)
                + (rows + 1) * 2 * sizeof(int32_t)                        # row_start, row_wait_start
                + rows * (sizeof(int32_t) + 1 + sizeof(uint64_t))         # lex start, accepting, stamp
                + rows * W * 2 * sizeof(uint64_t)                         # row_scanned, row_expected
                + <int64_t>self.seen_cap * (sizeof(int64_t) + sizeof(uint32_t))
                + STAMP_SLOTS * (W + 2) * sizeof(uint64_t)
                + SC_SLOTS * (W * sizeof(uint64_t) + sizeof(int32_t))
                + LEO_SLOTS * (sizeof(uint64_t) + 4 * sizeof(int32_t))
                + max(1, self.g.n_nonterminals) * sizeof(uint32_t) + W * sizeof(uint64_t)
                + self.owner_bytes)

    cdef int charge(self, int64_t more) except -1 nogil:
        """Raise BudgetExceeded if growing by ``more`` bytes would pass the budget."""
        cdef int64_t used = self.held_bytes() + more
        if used > self.g.max_matcher_bytes:
            _raise_matcher_budget(used, self.g.max_matcher_bytes)
        return 0

    cdef int _begin_row(self, int32_t k) except -1 nogil:
        # a new generation empties the dedup table and the prediction stamps at once
        self.gen += 1
        if self.gen == 0:  # wrapped: clear stamps
            memset(self.predicted_gen, 0, sizeof(uint32_t) * max(1, self.g.n_nonterminals))
            memset(self.seen_gen, 0, sizeof(uint32_t) * self.seen_cap)
            self.gen = 1
        return 0

    cdef uint64_t _stamp_for(self, int32_t r, const uint64_t* scanned) except 0 nogil:
        """The stamp of the row built from row ``r`` by scanning ``scanned``.

        Stamps name row *contents*: a row is determined by its parent row and
        the scanned set, so rebuilding the same row gives it the same stamp
        again (while its entry survives in this bounded table; an evicted
        entry only costs a fresh stamp, never a wrong one).
        """
        cdef int W = self.g.n_words
        cdef uint64_t parent = self.row_stamp[r]
        cdef uint64_t h = parent * 0x9E3779B97F4A7C15ULL
        cdef int w
        for w in range(W):
            h = (h ^ scanned[w]) * 0xFF51AFD7ED558CCDULL
        cdef int64_t slot = <int64_t>((h >> 32) & (STAMP_SLOTS - 1))
        cdef uint64_t* key = &self.stamp_keys[slot * (W + 1)]
        if self.stamp_vals[slot] and key[0] == parent and memcmp(&key[1], scanned, sizeof(uint64_t) * W) == 0:
            return self.stamp_vals[slot]
        key[0] = parent
        memcpy(&key[1], scanned, sizeof(uint64_t) * W)
        self.stamp_vals[slot] = self.next_stamp
        self.next_stamp += 1
        return self.stamp_vals[slot]

    cdef int _grow_rows(self) except -1 nogil:
        cdef int32_t newcap = self.rows_cap * 2
        cdef int W = self.g.n_words
        self.charge(<int64_t>self.rows_cap * (2 * sizeof(int32_t) + sizeof(int32_t) + 1 + sizeof(uint64_t)
                                              + 2 * W * sizeof(uint64_t)))
        # (NULL ``what``: a bare MemoryError, as every allocation of the row stack raises)
        self.row_start = <int32_t*>grow(self.row_start, sizeof(int32_t) * (newcap + 1), NULL)
        self.row_wait_start = <int32_t*>grow(self.row_wait_start, sizeof(int32_t) * (newcap + 1), NULL)
        self.row_lex_start = <int32_t*>grow(self.row_lex_start, sizeof(int32_t) * newcap, NULL)
        self.row_scanned = <uint64_t*>grow(self.row_scanned, sizeof(uint64_t) * newcap * W, NULL)
        self.row_accepting = <uint8_t*>grow(self.row_accepting, newcap, NULL)
        self.row_expected = <uint64_t*>grow(self.row_expected, sizeof(uint64_t) * newcap * W, NULL)
        self.row_stamp = <uint64_t*>grow(self.row_stamp, sizeof(uint64_t) * newcap, NULL)
        self.rows_cap = newcap
        return 0

    cdef int _add(self, int32_t ptr, int32_t origin) except -1 nogil:
        """Add an item to the row under construction unless it is already there."""
        cdef int64_t key = (<int64_t>ptr << 32) | <uint32_t>origin
        cdef int32_t mask = self.seen_cap - 1
        cdef int32_t h = <int32_t>(((<uint64_t>key) * 0x9E3779B97F4A7C15ULL) >> 40) & mask
        cdef uint32_t gen = self.gen
        while self.seen_gen[h] == gen:
            if self.seen_keys[h] == key:
                return 0
            h = (h + 1) & mask
        cdef int32_t k = self.n_rows
        cdef int32_t end = self.row_start[k + 1]
        if end - self.row_start[k] >= self.g.max_items_per_row:
            _raise_row_budget(k, self.g.max_items_per_row)
        if end >= self.items_cap:
            self._grow_items(end + 1)
        self.items[end].ptr = ptr
        self.items[end].origin = origin
        self.row_start[k + 1] = end + 1
        self.seen_keys[h] = key
        self.seen_gen[h] = gen
        if (end + 1 - self.row_start[k]) * 2 > self.seen_cap:
            self._grow_seen(k)
        return 0

    cdef int _grow_items(self, int64_t need) except -1 nogil:
        """Room for ``need`` items, within the matcher's memory budget."""
        cdef int64_t newcap = grown(self.items_cap, need)
        self.charge((newcap - self.items_cap) * sizeof(ItemC))
        self.items = <ItemC*>grow(self.items, sizeof(ItemC) * newcap, NULL)
        self.items_cap = newcap
        return 0

    cdef int _grow_seen(self, int32_t k) except -1 nogil:
        self.charge(<int64_t>self.seen_cap * (sizeof(int64_t) + sizeof(uint32_t)))
        free(self.seen_keys)
        free(self.seen_gen)
        self.seen_cap *= 2
        self.seen_keys = <int64_t*>malloc(sizeof(int64_t) * self.seen_cap)
        self.seen_gen = <uint32_t*>calloc(self.seen_cap, sizeof(uint32_t))
        if self.seen_keys == NULL or self.seen_gen == NULL:
            with gil:
                raise MemoryError()
        cdef int32_t i, h, mask = self.seen_cap - 1
        cdef int64_t key
        for i in range(self.row_start[k], self.row_start[k + 1]):
            if self.items[i].origin == k:
                continue        # predicted items are not in the table (see _predict)
            key = (<int64_t>self.items[i].ptr << 32) | <uint32_t>self.items[i].origin
            h = <int32_t>(((<uint64_t>key) * 0x9E3779B97F4A7C15ULL) >> 40) & mask
            while self.seen_gen[h] == self.gen:
                h = (h + 1) & mask
            self.seen_keys[h] = key
            self.seen_gen[h] = self.gen
        return 0

    cdef int _predict(self, int32_t A, int32_t k) except -1 nogil:
        """Add what predicting nonterminal ``A`` adds to row ``k`` (see ``_prediction_tables``).

        These items all have origin ``k``; no other way of adding an item gives
        origin ``k`` (scans and completions keep an older origin), so they need
        no dedup beyond the per-nonterminal stamp, and ``_close_row`` skips them.
        """
        cdef int32_t q, B, j, end, n
        for q in range(self.g.lc_start[A], self.g.lc_start[A + 1]):
            B = self.g.lc_nts[q]
            if self.predicted_gen[B] == self.gen:
                continue
            self.predicted_gen[B] = self.gen
            n = self.g.static_start[B + 1] - self.g.static_start[B]
            end = self.row_start[k + 1]
            if end + n - self.row_start[k] > self.g.max_items_per_row:
                _raise_row_budget(k, self.g.max_items_per_row)
            if end + n >= self.items_cap:
                self._grow_items(end + n + 1)
            for j in range(n):
                self.items[end + j].ptr = self.g.static_ptrs[self.g.static_start[B] + j]
                self.items[end + j].origin = k
            self.row_start[k + 1] = end + n
        return 0

    cdef int64_t _leo_slot(self, int32_t row, int32_t sym) noexcept nogil:
        cdef uint64_t key = self.row_stamp[row] * 0x100000001B3ULL ^ <uint64_t>sym
        return <int64_t>((key * 0x9E3779B97F4A7C15ULL) >> 52) & (LEO_SLOTS - 1)

    cdef bint _leo_hit(self, int64_t slot, int32_t row, int32_t sym) noexcept nogil:
        return (self.leo_row[slot] == row and self.leo_sym[slot] == sym
                and self.leo_key[slot] == (self.row_stamp[row] * 0x100000001B3ULL ^ <uint64_t>sym))

    cdef bint _leo_top(self, int32_t j, int32_t A, int32_t* ptr_out, int32_t* orig_out) noexcept nogil:
        """Leo's optimisation: when row ``j`` holds exactly one item waiting on ``A`` and
        ``A`` is the last symbol of its rule (``B -> beta . A``), completing ``A``
        from ``j`` only completes that item, and so on down a deterministic chain;
        write the topmost completed item and return True.

        Each step of the chain is memoised per (row stamp, symbol), so a chain n
        deep costs O(1) amortised per completion and O(1) items per row instead of
        O(n).  Steps that stay in one row (rules predicted there) are bounded, so a
        cycle of unit rules falls back to plain completion."""
        cdef int32_t path_row[64]
        cdef int32_t path_sym[64]
        cdef int32_t n_path = 0, same_row = 0, found, q, cnt, it, k, stuck = -1
        cdef bint appended
        cdef int32_t top_ptr = -1, top_orig = -1, row = j, sym = A, prev_row
        cdef int64_t slot
        while True:
            slot = self._leo_slot(row, sym)
            if self._leo_hit(slot, row, sym):
                if self.leo_ptr[slot] >= 0:
                    top_ptr = self.leo_ptr[slot]
                    top_orig = self.leo_orig[slot]
                break
            appended = n_path < 64
            if appended:
                path_row[n_path] = row
                path_sym[n_path] = sym
                n_path += 1
            cnt = 0
            found = -1
            for q in range(self.row_wait_start[row], self.row_wait_start[row + 1]):
                it = self.wait[q]
                if self.g.rhs[self.items[it].ptr] == sym:
                    cnt += 1
                    found = it
                    if cnt > 1:
                        break
            if cnt != 1 or self.g.rhs[self.items[found].ptr + 1] >= 0:
                if appended:
                    stuck = n_path   # the last pair on the path has no chain of its own
                break
            top_ptr = self.items[found].ptr + 1
            top_orig = self.items[found].origin
            sym = self.g.rule_lhs[-self.g.rhs[top_ptr] - 1]
            prev_row = row
            row = top_orig      # the same row when the rule was predicted there
            if row == prev_row:
                same_row += 1
                if same_row > self.g.n_nonterminals:
                    top_ptr = -1    # a cycle of unit rules: complete the plain way
                    break
            else:
                same_row = 0
        for k in range(n_path):
            slot = self._leo_slot(path_row[k], path_sym[k])
            self.leo_key[slot] = self.row_stamp[path_row[k]] * 0x100000001B3ULL ^ <uint64_t>path_sym[k]
            self.leo_row[slot] = path_row[k]
            self.leo_sym[slot] = path_sym[k]
            self.leo_ptr[slot] = -1 if k + 1 == stuck else top_ptr
            self.leo_orig[slot] = top_orig
        if top_ptr < 0:
            return False
        ptr_out[0] = top_ptr
        orig_out[0] = top_orig
        return True

    cdef int _close_row(self, int32_t k) except -1 nogil:
        """Predict and complete until the row is closed (``n_rows`` must equal ``k``)."""
        cdef int32_t T = self.g.n_terminals
        cdef int32_t i = self.row_start[k]
        cdef int32_t ptr, sym, origin, A, j, jend, q, lptr, lorig
        while i < self.row_start[k + 1]:
            origin = self.items[i].origin
            if origin == k:
                i += 1          # a predicted item: its effects are in the prediction tables
                continue
            ptr = self.items[i].ptr
            sym = self.g.rhs[ptr]
            if sym < 0:
                A = self.g.rule_lhs[-sym - 1]
                if self._leo_top(origin, A, &lptr, &lorig):
                    # Leo: a deterministic right-recursive chain completes to its top item
                    self._add(lptr, lorig)
                    i += 1
                    continue
                # only the origin row's waiting items can advance (right recursion
                # makes rows long with completed items; never rescan those)
                jend = self.row_wait_start[origin + 1]
                for q in range(self.row_wait_start[origin], jend):
                    j = self.wait[q]
                    if self.g.rhs[self.items[j].ptr] == A:
                        self._add(self.items[j].ptr + 1, self.items[j].origin)
            elif sym >= T:
                A = sym - T
                if self.predicted_gen[A] != self.gen:
                    self._predict(A, k)
                if self.g.nullable[sym]:
                    self._add(ptr + 1, origin)
            i += 1
        return 0

    cdef int _finish_row(self, int32_t k) except -1 nogil:
        """Expected terminals, accepting flag and lexer start state of row ``k``."""
        cdef int W = self.g.n_words
        cdef uint64_t* exp = &self.row_expected[<int64_t>k * W]
        cdef int32_t i, sym, w
        cdef uint8_t acc = 0
        cdef uint64_t any = 0
        cdef int32_t nw = self.row_wait_start[k]
        cdef int64_t need = nw + (self.row_start[k + 1] - self.row_start[k])
        cdef int64_t newcap
        if need > self.wait_cap:
            newcap = need if need > self.wait_cap * 2 else self.wait_cap * 2
            self.charge((newcap - self.wait_cap) * sizeof(int32_t))
            self.wait = <int32_t*>grow(self.wait, sizeof(int32_t) * newcap, NULL)
            self.wait_cap = newcap
        for w in range(W):
            exp[w] = 0
        for i in range(self.row_start[k], self.row_start[k + 1]):
            sym = self.g.rhs[self.items[i].ptr]
            if sym >= self.g.n_terminals:
                self.wait[nw] = i
                nw += 1
            elif 0 <= sym:
                exp[sym >> 6] |= (<uint64_t>1) << (sym & 63)
            elif self.items[i].ptr == self.g.start_end_ptr and self.items[i].origin == 0:
                acc = 1
        self.row_accepting[k] = acc
        self.row_wait_start[k + 1] = nw
        for w in range(W):
            any |= exp[w]
        for w in range(W):
            self.scratch_bits[w] = exp[w] | (self.dfa.ignore_bits[w] if any else 0)
        if self.dfa.has_at_start:
            # at_start terminals (a hashbang) only in the document's very first lexeme:
            # after an ignored lexeme on row 0 the lexer restarts from row_lex_start[0]
            if k == 0:
                self.initial_lex = self._start_state(self.scratch_bits)
            any = 0
            for w in range(W):
                any |= exp[w] & ~self.dfa.at_start_bits[w]
            for w in range(W):
                self.scratch_bits[w] = ((exp[w] & ~self.dfa.at_start_bits[w])
                                        | (self.dfa.ignore_bits[w] if any else 0))
        self.row_lex_start[k] = self._start_state(self.scratch_bits)
        if k == 0 and not self.dfa.has_at_start:
            self.initial_lex = self.row_lex_start[0]
        return 0

    cdef int32_t _start_state(self, const uint64_t* allowed) except -2 nogil:
        """The lexer start state for ``allowed``: this stack's own direct-mapped cache,
        else the shared table (which takes the cache lock)."""
        cdef int W = self.g.n_words
        cdef uint64_t h = 1469598103934665603ULL
        cdef int w
        for w in range(W):
            h = (h ^ allowed[w]) * 1099511628211ULL
        cdef int64_t slot = <int64_t>((h >> 29) & (SC_SLOTS - 1))
        cdef uint64_t* key = &self.sc_keys[slot * W]
        if self.sc_vals[slot] >= 0 and memcmp(key, allowed, sizeof(uint64_t) * W) == 0:
            return self.sc_vals[slot]
        cdef int32_t sid = self.dfa.start_for(allowed)
        memcpy(key, allowed, sizeof(uint64_t) * W)
        self.sc_vals[slot] = sid
        return sid

    cdef int push_scan(self, int32_t lex_state) except -1 nogil:
        """End the pending lexeme (final lexer state ``lex_state``) on the top row.

        Returns 1 when a new row was pushed (possibly reused), 0 when only
        ``%ignore`` terminals accept the lexeme (the row stack is unchanged).
        """
        cdef int W = self.g.n_words
        cdef int32_t r = self.n_rows - 1
        cdef int32_t k = r + 1
        cdef int32_t i, sym, w
        cdef uint64_t any = 0
        cdef const uint64_t* acc = &self.dfa.c.accept[<int64_t>lex_state * W]
        cdef const uint64_t* exp = &self.row_expected[<int64_t>r * W]
        for w in range(W):
            self.scratch_bits[w] = acc[w] & exp[w]
            any |= self.scratch_bits[w]
        if not any:
            return 0
        if k < self.n_rows_mem and memcmp(&self.row_scanned[<int64_t>k * W], self.scratch_bits,
                                          sizeof(uint64_t) * W) == 0:
            self.n_rows = k + 1
            return 1
        if k >= self.rows_cap:
            self._grow_rows()
        # row k starts where row r ends (row_start[k] is already that value); rows from k
        # up are about to be overwritten: never reuse them, also if this build fails
        self.n_rows_mem = k
        self.n_rows = k
        self.row_start[k + 1] = self.row_start[k]
        self._begin_row(k)
        for i in range(self.row_start[r], self.row_start[r + 1]):
            sym = self.g.rhs[self.items[i].ptr]
            if 0 <= sym < self.g.n_terminals and (self.scratch_bits[sym >> 6] >> (sym & 63)) & 1:
                self._add(self.items[i].ptr + 1, self.items[i].origin)
        self._close_row(k)
        self.n_builds += 1
        memcpy(&self.row_scanned[<int64_t>k * W], self.scratch_bits, sizeof(uint64_t) * W)
        self.row_stamp[k] = self._stamp_for(r, &self.row_scanned[<int64_t>k * W])
        self._finish_row(k)
        self.n_rows = k + 1
        self.n_rows_mem = k + 1
        return 1

    def clone(self):
        """An independent copy of this row stack (for ``Matcher.copy``)."""
        cdef Rows r = Rows.__new__(Rows, self.g, self.dfa)
        cdef int W = self.g.n_words
        while r.rows_cap < self.rows_cap:
            r._grow_rows()
        if r.items_cap < self.items_cap:
            free(r.items)
            r.items = <ItemC*>malloc(sizeof(ItemC) * self.items_cap)
            if r.items == NULL:
                raise MemoryError()
            r.items_cap = self.items_cap
        cdef int32_t n = self.n_rows_mem
        if r.wait_cap < self.wait_cap:
            free(r.wait)
            r.wait = <int32_t*>malloc(sizeof(int32_t) * self.wait_cap)
            if r.wait == NULL:
                raise MemoryError()
            r.wait_cap = self.wait_cap
        memcpy(r.wait, self.wait, sizeof(int32_t) * self.row_wait_start[n])
        memcpy(r.row_wait_start, self.row_wait_start, sizeof(int32_t) * (n + 1))
        memcpy(r.items, self.items, sizeof(ItemC) * self.row_start[n])
        memcpy(r.row_start, self.row_start, sizeof(int32_t) * (n + 1))
        memcpy(r.row_lex_start, self.row_lex_start, sizeof(int32_t) * n)
        r.initial_lex = self.initial_lex
        memcpy(r.row_scanned, self.row_scanned, sizeof(uint64_t) * n * W)
        memcpy(r.row_stamp, self.row_stamp, sizeof(uint64_t) * n)
        memcpy(r.stamp_keys, self.stamp_keys, sizeof(uint64_t) * STAMP_SLOTS * (W + 1))
        memcpy(r.stamp_vals, self.stamp_vals, sizeof(uint64_t) * STAMP_SLOTS)
        r.next_stamp = self.next_stamp
        memcpy(r.row_accepting, self.row_accepting, n)
        memcpy(r.row_expected, self.row_expected, sizeof(uint64_t) * n * W)
        r.n_rows = self.n_rows
        r.n_rows_mem = n
        return r

    # ---- Python-visible helpers (tests, debugging) --------------------
    def py_items(self, int k):
        """Items of row ``k`` as ``(ptr, origin)`` pairs."""
        return [(self.items[i].ptr, self.items[i].origin)
                for i in range(self.row_start[k], self.row_start[k + 1])]

    @property
    def distinct_rows(self):
        return self.next_stamp - 2

    @property
    def size(self):
        return self.n_rows
