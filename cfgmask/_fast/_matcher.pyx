# cython: language_level=3
"""The byte stack and the token mask of one parse (:class:`MatcherCore`).

The state of a matcher is a stack indexed by *byte depth* (bytes consumed so
far, plus bytes pushed speculatively on top):

* ``st_lex[d]``   lexer state after ``d`` bytes (the pending lexeme);
* ``st_nrows[d]`` number of Earley rows after ``d`` bytes (the top row is the
  one the pending lexeme started in);
* ``st_byte[d]``  the ``d``-th byte (the word-boundary rule looks at it).

Pushing a byte is one table lookup unless the lexeme ends; popping is setting
``depth`` and truncating the row stack.

Masks come from the caches of the compiled grammar's :class:`Runtime`
(``_runtime.pyx``, where entries, groups and continuations are described).  A
mask is ``inside(q)``, plus for each group one parser scan (memoised per
row) and the cached continuation of the start state it leads to, recursively;
plus, when ``q`` may end at the token boundary, the same from the start state
of the next row, restricted to the first bytes that end ``q`` (once per state
scanned there).  A warm fill visits no trie node.

Threads.  A fill runs without the GIL and reads the caches without a lock.
Each matcher also has its own lock, so its methods are safe to call from
several threads; a batch fill (:func:`fill_rows`) runs rows on the runtime's
thread pool.

Errors.  Every method leaves the matcher exactly as before the call when it
raises (``BudgetExceeded``, ``MemoryError``): the byte stack is popped back and
a row that was being rebuilt is marked invalid.
"""

from libc.stdlib cimport malloc, free
from libc.string cimport memset, memcpy
from cpython.ref cimport PyObject

import os

cimport numpy as cnp

from cfgmask.errors import ConfigurationError

cnp.import_array()

from cfgmask._fast._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from cfgmask._fast._mem cimport raise_memory, grown, grow
from cfgmask._fast._lexer cimport lex_step, lex_end
from cfgmask._fast._earley cimport Rows
from cfgmask._fast._runtime cimport Runtime, TokSet, Group, Cont, Entry
from cfgmask._fast._sync cimport (cfg_rmutex, cfg_rmutex_init, cfg_rmutex_lock, cfg_rmutex_unlock,
                                  cfg_rmutex_destroy)


cdef extern from "_pool.h" nogil:
    ctypedef int (*cfg_task_fn)(void* ctx, int64_t i) except -1 nogil
    int cfg_pool_run(cfg_task_fn fn, void* ctx, int64_t n, int nt)


cdef enum:
    MEMO_SIZE = 4096     # memo slots per matcher (a power of two)


cdef inline uint32_t or_tokset_into(uint32_t* mask, const TokSet* ts, int32_t W,
                                    const uint32_t* filt) noexcept nogil:
    """OR ``ts`` (ANDed with ``filt`` unless NULL) into ``mask``; returns the OR of
    the bits written, so a fill knows whether anything is allowed without
    another pass over the row (at 131k tokens a pass is 16 KB)."""
    # the set's pointers in locals: a store into ``mask`` could otherwise alias
    # ``ts`` and force a reload per word, which stops the loops from vectorising
    cdef const uint32_t* bits = ts.bits
    cdef const int32_t* idx = ts.idx
    cdef int32_t k, n = ts.n
    cdef uint32_t x, acc = 0
    if n < 0:
        if filt == NULL:
            for k in range(W):
                x = bits[k]
                mask[k] |= x
                acc |= x
        else:
            for k in range(W):
                x = bits[k] & filt[k]
                mask[k] |= x
                acc |= x
    elif filt == NULL:
        for k in range(n):
            x = bits[k]
            mask[idx[k]] |= x
            acc |= x
    else:
        for k in range(n):
            x = bits[k] & filt[idx[k]]
            mask[idx[k]] |= x
            acc |= x
    return acc


cdef inline uint32_t _copy_row(uint32_t* mask, const uint32_t* src, int32_t W) noexcept nogil:
    """``mask[:W] = src[:W]``; returns the OR of the words (its own function, so that
    the accumulator is a register: a caller that passes ``&acc`` on would keep it in
    memory, and the loop would not vectorise)."""
    cdef int32_t k
    cdef uint32_t acc = 0
    for k in range(W):
        mask[k] = src[k]
        acc |= src[k]
    return acc


cdef inline int32_t _memo_slot(int64_t key) noexcept nogil:
    return <int32_t>(((<uint64_t>key * 0x9E3779B97F4A7C15ULL) >> 40) & (MEMO_SIZE - 1))


# Vocabularies up to this many mask words (4,096 tokens) fill and consume with
# the GIL held.  Their warm step costs well under a microsecond, while letting
# the GIL go and taking it back costs about as much uncontended and several
# microseconds when another thread wants it: two threads replaying with a
# 128-token vocabulary took 1.6x the time of one.  Holding it is safe because
# the locks are GIL-aware (_sync.h): a thread that must wait lets the GIL go.
cdef enum:
    SMALL_FILL_WORDS = 128


cdef class MatcherCore:
    """One parse in progress: the byte stack over shared Runtime tables.

    Every Python-visible method takes the matcher's own lock (released GIL
    while waiting), so a matcher can be used from several threads; the
    methods that step the lexer or parser run without the GIL.
    """
    cdef Runtime rt
    cdef Rows rows
    cdef int32_t* st_lex
    cdef int32_t* st_nrows
    cdef int32_t* st_chars    # characters the pending lexeme has completed (counted terminals)
    cdef uint8_t* st_byte
    cdef int32_t depth
    cdef int32_t cap
    cdef int64_t* tokd        # byte depth before each consumed token (-1 - depth for EOS)
    cdef int64_t n_tok
    cdef int64_t cap_tok
    cdef bint finished
    cdef public bint use_cache
    # memo: (row stamp, accepting-set id) -> lexer start state after scanning that set
    # from that row; lets the mask path skip building rows it only needs the start of
    cdef int64_t* memo_key
    cdef int32_t* memo_val
    cdef uint8_t* memo_acc    # the scanned row completes the start rule (for the EOS check)
    cdef cfg_rmutex lock
    cdef bint lock_ok

    def __cinit__(self, Runtime rt, Rows rows):
        self.rt = rt
        self.rows = rows
        self.cap = 256
        self.st_lex = <int32_t*>malloc(sizeof(int32_t) * self.cap)
        self.st_nrows = <int32_t*>malloc(sizeof(int32_t) * self.cap)
        self.st_chars = <int32_t*>malloc(sizeof(int32_t) * self.cap)
        self.st_byte = <uint8_t*>malloc(self.cap)
        self.memo_key = <int64_t*>malloc(sizeof(int64_t) * MEMO_SIZE)
        self.memo_val = <int32_t*>malloc(sizeof(int32_t) * MEMO_SIZE)
        self.memo_acc = <uint8_t*>malloc(MEMO_SIZE)
        self.cap_tok = 64
        self.tokd = <int64_t*>malloc(sizeof(int64_t) * self.cap_tok)
        if (self.st_lex == NULL or self.st_nrows == NULL or self.st_byte == NULL or self.st_chars == NULL
                or self.memo_key == NULL or self.memo_val == NULL or self.memo_acc == NULL
                or self.tokd == NULL):
            raise_memory("matcher")
        if cfg_rmutex_init(&self.lock) != 0:
            raise_memory("matcher lock")
        self.lock_ok = True
        memset(self.memo_key, 0xFF, sizeof(int64_t) * MEMO_SIZE)
        self._account()
        self.use_cache = True
        self.depth = 0
        self.n_tok = 0
        self.finished = False

    def __dealloc__(self):
        if self.lock_ok:
            cfg_rmutex_destroy(&self.lock)
        free(self.st_lex)
        free(self.st_nrows)
        free(self.st_chars)
        free(self.st_byte)
        free(self.memo_key)
        free(self.memo_val)
        free(self.memo_acc)
        free(self.tokd)

    cdef inline void _lock(self) noexcept nogil:
        cfg_rmutex_lock(&self.lock)

    cdef inline void _unlock(self) noexcept nogil:
        cfg_rmutex_unlock(&self.lock)

    # ---- the byte stack --------------------------------------------------------
    cdef int _reset(self) except -1 nogil:
        self.rows.reset()
        self.depth = 0
        self.st_lex[0] = self.rows.initial_lex
        self.st_nrows[0] = 1
        self.st_chars[0] = 0
        self.st_byte[0] = 0
        self.n_tok = 0
        self.finished = False
        return 0

    cdef inline void _account(self) noexcept nogil:
        """Tell the row stack what this core holds, for Limits.max_matcher_bytes."""
        self.rows.owner_bytes = (<int64_t>self.cap * (3 * sizeof(int32_t) + 1)
                                 + self.cap_tok * sizeof(int64_t)
                                 + MEMO_SIZE * (sizeof(int64_t) + sizeof(int32_t) + 1))

    cdef int _reserve(self, int32_t need, bint check=True) except -1 nogil:
        """Byte stack room for depth ``need``.  Doubles, or grows to ``need`` only
        when doubling would pass the budget.  ``check=False`` (a fill's headroom for
        its speculative walk, freed bytes as soon as it ends): counted, never
        refused, so a matcher just refused a token can still fill its mask."""
        cdef int32_t newcap
        cdef int64_t per = 3 * sizeof(int32_t) + 1
        if need < self.cap:
            return 0
        newcap = <int32_t>grown(self.cap, <int64_t>need + 1)
        if self.rows.held_bytes() + (newcap - self.cap) * per > self.rows.g.max_matcher_bytes:
            newcap = need + 64
            if check:
                self.rows.charge((newcap - self.cap) * per)
        self.st_lex = <int32_t*>grow(self.st_lex, sizeof(int32_t) * newcap, "byte stack")
        self.st_nrows = <int32_t*>grow(self.st_nrows, sizeof(int32_t) * newcap, "byte stack")
        self.st_chars = <int32_t*>grow(self.st_chars, sizeof(int32_t) * newcap, "byte stack")
        self.st_byte = <uint8_t*>grow(self.st_byte, newcap, "byte stack")
        self.cap = newcap
        self._account()
        return 0

    cdef inline void _pop_to(self, int32_t d) noexcept nogil:
        self.depth = d
        self.rows.n_rows = self.st_nrows[d]

    cdef inline void _push(self, int32_t lex, int32_t nrows, uint8_t b, int32_t chars) noexcept nogil:
        cdef int32_t d = self.depth + 1
        self.st_lex[d] = lex
        self.st_nrows[d] = nrows
        self.st_chars[d] = chars
        self.st_byte[d] = b
        self.depth = d

    cdef inline int32_t _counted(self, int32_t* t, int32_t chars) except -1 nogil:
        """Characters completed after entering lexer state ``t[0]`` with ``chars``
        before; resaturates ``t[0]`` (``LazyDFA.resaturate``) when it counts."""
        chars += self.rt.dfa.c.char_end[t[0]]
        if self.rt.dfa.c.counted[t[0]]:
            t[0] = self.rt.dfa.resaturate(t[0], chars)
        return chars

    cdef int push_byte(self, uint8_t b) except -1 nogil:
        """1 if ``b`` is accepted (pushed), 0 if rejected (stack unchanged). Needs capacity."""
        cdef int32_t d = self.depth
        cdef int32_t s = self.st_lex[d]
        cdef int32_t t = lex_step(self.rt.dfa, s, b)
        cdef int32_t s0
        cdef int32_t chars = 0
        if t != 0:
            if self.rt.dfa.has_counters:
                chars = self._counted(&t, self.st_chars[d])
            self._push(t, self.st_nrows[d], b, chars)
            return 1
        if not self.rt.dfa.c.any_accept[s]:
            return 0
        if self.rt.wb[b] and self.rt.wb[self.st_byte[d]]:
            return 0
        s = lex_end(self.rt.dfa, s, self.rt.dfa.c.class_of[b])
        if not self.rt.dfa.c.any_accept[s]:
            return 0
        self.rows.push_scan(s)
        s0 = self.rows.row_lex_start[self.rows.n_rows - 1]
        t = lex_step(self.rt.dfa, s0, b)
        if t == 0:
            self.rows.n_rows = self.st_nrows[d]
            return 0
        if self.rt.dfa.has_counters:
            chars = self._counted(&t, 0)
        self._push(t, self.rows.n_rows, b, chars)
        return 1

    cdef int walk(self, int32_t lo, int32_t hi, uint32_t* mask) except -1 nogil:
        """Walk full-trie nodes ``[lo, hi)`` (one subtree, or siblings) from the top
        with the lexer and the parser: the plain path the caches are checked against."""
        cdef int32_t base = self.depth
        cdef int32_t off = base - (self.rt.node_depth[lo] - 1)
        cdef int32_t i = lo
        while i < hi:
            self._pop_to(self.rt.node_depth[i] - 1 + off)
            if self.push_byte(self.rt.node_byte[i]):
                if self.rt.node_token[i] >= 0:
                    self.rt.set_token(mask, self.rt.node_token[i])
                i += 1
            else:
                i = self.rt.node_subtree_end[i]
        self._pop_to(base)
        return 0

    cdef int32_t _scan_start(self, int32_t scan_state, bint need_row) except -2 nogil:
        """Lexer start state after scanning the lexeme accepted as ``scan_state`` on the
        top row.  Pushes the new row only when ``need_row`` or when it is not memoised;
        returns with ``rows.n_rows`` either unchanged or one more."""
        cdef int64_t key = self._memo_key(scan_state)
        cdef int32_t slot = _memo_slot(key)
        cdef int32_t sp
        if not need_row and self.memo_key[slot] == key:
            return self.memo_val[slot]
        self.rows.push_scan(scan_state)
        sp = self.rows.row_lex_start[self.rows.n_rows - 1]
        self.memo_key[slot] = key
        self.memo_val[slot] = sp
        self.memo_acc[slot] = self.rows.row_accepting[self.rows.n_rows - 1]
        return sp

    cdef inline int64_t _memo_key(self, int32_t scan_state) noexcept nogil:
        """What a scan from the top row depends on: the row's contents (its stamp) and
        the accepted terminal set."""
        return ((<int64_t>self.rows.row_stamp[self.rows.n_rows - 1]) << 24) | self.rt.dfa.c.accept_id[scan_state]

    cdef bint _scan_accepting(self, int32_t scan_state) except -1 nogil:
        """Whether scanning the lexeme accepted as ``scan_state`` on the top row completes
        the start rule (memoised with :meth:`_scan_start`); the rows are left as they were."""
        cdef int64_t key = self._memo_key(scan_state)
        cdef int32_t slot = _memo_slot(key)
        cdef int32_t n = self.rows.n_rows
        if self.memo_key[slot] == key:
            return self.memo_acc[slot]
        try:
            self._scan_start(scan_state, True)
            return self.rows.row_accepting[self.rows.n_rows - 1]
        finally:
            self.rows.n_rows = n

    cdef int _expand(self, Group** groups, int32_t n, uint32_t* mask, const uint32_t* filt,
                     uint32_t* acc) except -1 nogil:
        """Add the tokens of ``groups`` (lexemes ending inside a token) from the current rows,
        ANDed with ``filt`` unless it is NULL; ``acc`` collects the OR of the bits added.

        Per group: find the next lexeme's start state after scanning (memoised
        per row, so usually no row is built), OR the cached continuation for
        it, and recurse where the next lexeme ends inside the token again
        (that needs the row itself).  No trie node is visited on a warm cache.
        """
        cdef int32_t base = self.rows.n_rows
        cdef int32_t k, sp
        cdef Group* gr
        cdef Cont* c
        for k in range(n):
            gr = groups[k]
            sp = self._scan_start(gr.scan_state, False)
            if sp != 0:
                c = self.rt.cont(gr, sp)
                acc[0] |= or_tokset_into(mask, &c.bits, self.rt.words, filt)
                if c.n_groups:
                    if self.rows.n_rows == base:
                        self._scan_start(gr.scan_state, True)
                    self._expand(c.groups, c.n_groups, mask, filt, acc)
            self.rows.n_rows = base
        return 0

    cdef int fill(self, uint32_t* mask) except -1 nogil:
        """Write the allowed-token bitmask (``words`` uint32) for the current state;
        returns 1 if any bit is set, else 0.  Leaves the byte stack and the rows as
        it found them, also when it raises."""
        cdef int32_t d = self.depth
        cdef int r
        self.rt.enter_fill()
        try:
            r = self._fill(mask)
        finally:
            self._pop_to(d)
            self.rt.leave_fill()
        return r

    cdef int _fill(self, uint32_t* mask) except -1 nogil:
        cdef int32_t W = self.rt.words
        cdef int32_t d = self.depth
        cdef int32_t q = self.st_lex[d]
        cdef int32_t sp, w, base, k, se
        cdef Entry* e
        cdef Entry* e2
        cdef const uint32_t* fb
        cdef uint8_t prev = self.st_byte[d]
        cdef uint32_t acc = 0
        cdef const uint32_t* src
        cdef bint walked = False        # bits set by a trie walk: count them at the end
        if self.finished:
            memset(mask, 0, sizeof(uint32_t) * W)
            self._set_eos(mask)
            return 1 if self.rt.n_eos else 0
        self._reserve(d + self.rt.max_depth + 4, False)
        if not self.use_cache:
            memset(mask, 0, sizeof(uint32_t) * W)
            self.walk(1, self.rt.n_nodes, mask)
            walked = True
        else:
            e = self.rt.entry(q)
            if e.inside.n < 0:
                # dense: one pass writes the row (no memset first)
                src = e.inside.bits
                acc = _copy_row(mask, src, W)
            else:
                memset(mask, 0, sizeof(uint32_t) * W)
                acc = or_tokset_into(mask, &e.inside, W, NULL)
            if e.n_groups:
                self._expand(e.groups, e.n_groups, mask, NULL, &acc)
            # the pending lexeme may end right at the token boundary: per end state,
            # the tokens are those allowed from the next row's start state, restricted
            # to the first bytes that end the lexeme as that state (the filter is
            # applied to each token set as it is ORed in, so no scratch row is needed)
            for k in range(e.n_ends if d > 0 else 0):
                se = e.end_state[k]
                base = self.rows.n_rows
                sp = self._scan_start(se, False)    # memoised per row: usually no row is built
                if sp != 0:
                    e2 = self.rt.entry(sp)
                    fb = &(e.end_fb_nw if self.rt.wb[prev] else e.end_fb)[<int64_t>k * W]
                    acc |= or_tokset_into(mask, &e2.inside, W, fb)
                    if e2.n_groups:
                        if self.rows.n_rows == base:
                            self._scan_start(se, True)
                        self._expand(e2.groups, e2.n_groups, mask, fb, &acc)
                self._pop_to(d)
        if self._accepting():
            self._set_eos(mask)
            if self.rt.n_eos:
                return 1
        if walked:
            for w in range(W):
                acc |= mask[w]
        return 1 if acc else 0

    cdef void _set_eos(self, uint32_t* mask) noexcept nogil:
        cdef int32_t i, t
        for i in range(self.rt.n_eos):
            t = self.rt.eos_ids[i]
            mask[t >> 5] |= (<uint32_t>1) << (t & 31)

    cdef bint _accepting(self) except -1 nogil:
        """EOS rule: the pending lexeme is accepting and, scanned, completes the start rule."""
        cdef int32_t d = self.depth
        cdef int32_t s = self.st_lex[d]
        if self.finished:
            return True
        if d == 0:
            return self.rows.row_accepting[0]
        if not self.rt.dfa.c.any_accept[s]:
            return False
        s = lex_end(self.rt.dfa, s, self.rt.dfa.c.n_classes)
        if not self.rt.dfa.c.any_accept[s]:
            return False
        return self._scan_accepting(s)

    cdef int fill_ptr(self, uint32_t* out, int64_t width) except -1 nogil:
        """Fill one row at ``out`` (``width`` words, the tail zeroed); 1 if any bit is set."""
        cdef int32_t w
        cdef int r
        self._lock()
        try:
            r = self.fill(out)
        finally:
            self._unlock()
        for w in range(self.rt.words, width):
            out[w] = 0
        return r

    cdef int _push_tok(self, int64_t d) except -1 nogil:
        if self.n_tok == self.cap_tok:
            self.tokd = <int64_t*>grow(self.tokd, sizeof(int64_t) * self.cap_tok * 2, "token list")
            self.cap_tok *= 2
            self._account()     # counted, not checked: the token's bytes are already in
        self.tokd[self.n_tok] = d
        self.n_tok += 1
        return 0

    cdef int _try_consume(self, int64_t tok) except -1 nogil:
        """1 if token ``tok`` was consumed, 0 if the mask does not allow it (state unchanged)."""
        cdef int32_t d0 = self.depth
        cdef int64_t a, z, j
        cdef int i
        cdef bint done = False
        if self.finished:
            return 0
        for i in range(self.rt.n_eos):
            if self.rt.eos_ids[i] == tok:
                if self._accepting():
                    self._push_tok(-1 - d0)
                    self.finished = True
                    return 1
                return 0
        if tok < 0 or tok >= self.rt.n_tokens or self.rt.tok_special[tok]:
            return 0
        a = self.rt.tok_off[tok]
        z = self.rt.tok_off[tok + 1]
        try:
            self._reserve(d0 + <int32_t>(z - a) + 2)
            for j in range(a, z):
                if not self.push_byte(self.rt.tok_bytes[j]):
                    self._pop_to(d0)
                    done = True
                    return 0
            self._push_tok(d0)
            done = True
        finally:
            if not done:
                self._pop_to(d0)
        return 1

    # ---- Python API (the Matcher wrapper in compiler.py calls these) ----
    def fill_row(self, arr, Py_ssize_t row):
        """Fill row ``row`` of ``arr`` (int32, C-contiguous, writeable, 1-D or 2-D,
        rows at least ``words`` wide); True if any bit is set.  Checked on every
        call, so an array reshaped or frozen since the last call is refused."""
        cdef uint32_t* out = _row_pointer(arr, row, self.rt.words)
        cdef int64_t width = cnp.PyArray_DIMS(<cnp.ndarray>arr)[cnp.PyArray_NDIM(<cnp.ndarray>arr) - 1]
        cdef int r
        if self.rt.words <= SMALL_FILL_WORDS:
            r = self.fill_ptr(out, width)     # GIL kept: see SMALL_FILL_WORDS
        else:
            with nogil:
                r = self.fill_ptr(out, width)
        return r != 0

    def accepting(self):
        cdef bint r
        with nogil:
            self._lock()
            try:
                r = self._accepting()
            finally:
                self._unlock()
        return bool(r)

    def next_bytes(self):
        """The bytes that may come next (the byte-level mask), as a ``bytes`` object."""
        cdef int b
        cdef int32_t d
        cdef uint8_t ok[256]
        memset(ok, 0, 256)
        with nogil:
            self._lock()
            try:
                d = self.depth
                if not self.finished:
                    self._reserve(d + 3)
                    for b in range(256):
                        try:
                            if self.push_byte(<uint8_t>b):
                                ok[b] = 1
                        finally:
                            self._pop_to(d)
            finally:
                self._unlock()
        return bytes(b for b in range(256) if ok[b])

    def is_finished(self):
        return bool(self.finished)

    def try_consume(self, int64_t tok):
        """Consume token ``tok``; False (state unchanged) if the mask would not allow it."""
        cdef int r
        if self.rt.words <= SMALL_FILL_WORDS:
            r = self._locked_try_consume(tok)     # GIL kept: see SMALL_FILL_WORDS
        else:
            with nogil:
                r = self._locked_try_consume(tok)
        return r == 1

    cdef int _locked_try_consume(self, int64_t tok) except -1 nogil:
        self._lock()
        try:
            return self._try_consume(tok)
        finally:
            self._unlock()

    def consume_bytes(self, const uint8_t[::1] data):
        """Push raw bytes (for byte-level tests); returns how many were accepted."""
        cdef int64_t j = 0, n = data.shape[0]
        cdef int32_t d
        cdef bint ok
        with nogil:
            self._lock()
            try:
                self._reserve(self.depth + <int32_t>n + 2)
                while j < n:
                    d = self.depth
                    ok = False
                    try:
                        ok = self.push_byte(data[j]) == 1
                    finally:
                        if not ok and self.depth != d:
                            self._pop_to(d)      # an error inside the byte: undo it
                    if not ok:
                        break
                    j += 1
            finally:
                self._unlock()
        return j

    def reset(self):
        with nogil:
            self._lock()
            try:
                self._reset()
            finally:
                self._unlock()

    def rollback(self, int64_t n):
        cdef int64_t d
        with nogil:
            self._lock()
        try:
            if n < 0 or n > self.n_tok:
                raise ValueError(f"cannot roll back {n} tokens: {self.n_tok} consumed")
            if n == 0:
                return
            d = self.tokd[self.n_tok - n]
            self.n_tok -= n
            if d < 0:
                d = -1 - d
            self.finished = False
            self._pop_to(<int32_t>d)
        finally:
            self._unlock()

    def n_consumed(self):
        return self.n_tok

    def prefix(self):
        with nogil:
            self._lock()
        try:
            return bytes(self.st_byte[1:self.depth + 1]) if self.depth else b""
        finally:
            self._unlock()

    def rebind(self, Runtime rt):
        """Use ``rt`` for this core's next calls: a runtime of the same lexer,
        parser and vocabulary (a compile's lexeme slices, published after its
        first masks; ``cfgmask/engine/compiler.py``).  The byte stack, rows and memo
        hold lexer states and rows only, which both runtimes share, so nothing
        else changes; a mask never depends on the runtime that computed it.
        Taken under the core's lock, so never during a fill."""
        cdef Runtime old = self.rt
        if rt is old:
            return
        if (rt.dfa is not old.dfa or rt.g is not old.g or rt.words != old.words
                or rt.n_nodes != old.n_nodes or rt.n_tokens != old.n_tokens
                or rt.max_depth != old.max_depth or rt.vocab_size != old.vocab_size):
            raise ValueError("rebind: the runtime belongs to another grammar or vocabulary")
        with nogil:
            self._lock()
        try:
            self.rt = rt
        finally:
            self._unlock()
        old = None       # the old runtime may be freed here, outside the lock

    def copy(self):
        """An independent core in the same state (never the bytes of a fill in progress)."""
        cdef MatcherCore m
        with nogil:
            self._lock()
        try:
            m = MatcherCore.__new__(MatcherCore, self.rt, self.rows.clone())
            m._reserve(self.depth + 2)
            memcpy(m.st_lex, self.st_lex, sizeof(int32_t) * (self.depth + 1))
            memcpy(m.st_nrows, self.st_nrows, sizeof(int32_t) * (self.depth + 1))
            memcpy(m.st_chars, self.st_chars, sizeof(int32_t) * (self.depth + 1))
            memcpy(m.st_byte, self.st_byte, self.depth + 1)
            m.depth = self.depth
            if m.cap_tok < self.n_tok:
                m.tokd = <int64_t*>grow(m.tokd, sizeof(int64_t) * grown(m.cap_tok, self.n_tok), "token list")
                m.cap_tok = grown(m.cap_tok, self.n_tok)
            memcpy(m.tokd, self.tokd, sizeof(int64_t) * self.n_tok)
            m._account()
            m.n_tok = self.n_tok
            m.finished = self.finished
            m.use_cache = self.use_cache
            return m
        finally:
            self._unlock()

    def held_bytes(self):
        """Bytes counted against Limits.max_matcher_bytes (tests, docs)."""
        return self.rows.held_bytes()

    def row_sizes(self):
        """``[(items, predicted items)]`` per row on the stack (debugging, docs)."""
        out = []
        for k in range(self.rows.n_rows):
            items = self.rows.py_items(k)
            out.append((len(items), sum(1 for _p, o in items if o == k)))
        return out

    def row_stats(self):
        return self.rows.n_builds, self.rows.distinct_rows

    def row_items(self, int k):
        """Items ``(ptr, origin)`` of row ``k`` (debugging)."""
        return self.rows.py_items(k)

    def describe(self):
        """Readable state for DeadEnd messages."""
        with nogil:
            self._lock()
        try:
            d = self.depth
            return {"bytes": d, "rows": self.st_nrows[d], "lexer_state": self.st_lex[d],
                    "finished": bool(self.finished)}
        finally:
            self._unlock()


cdef uint32_t* _row_pointer(arr, Py_ssize_t row, int32_t words) except NULL:
    """Validate ``arr`` for a fill (on every call: cheap flag and shape reads) and
    return the address of row ``row``."""
    if not cnp.PyArray_Check(arr):
        raise ConfigurationError(f"bitmask must be a numpy int32 array, got {type(arr).__name__}")
    cdef cnp.ndarray a = <cnp.ndarray>arr
    cdef int nd = cnp.PyArray_NDIM(a)
    if cnp.PyArray_TYPE(a) != cnp.NPY_INT32:
        raise ConfigurationError(f"bitmask must have dtype int32, got {arr.dtype}")
    if nd != 1 and nd != 2:
        raise ConfigurationError(f"bitmask must be 1-D or 2-D, got shape {arr.shape}")
    if not cnp.PyArray_IS_C_CONTIGUOUS(a):
        raise ConfigurationError("bitmask must be C-contiguous")
    if not cnp.PyArray_ISWRITEABLE(a):
        raise ConfigurationError("bitmask must be writeable")
    cdef Py_ssize_t width = cnp.PyArray_DIMS(a)[nd - 1]
    cdef Py_ssize_t rows = cnp.PyArray_DIMS(a)[0] if nd == 2 else 1
    if width < words:
        raise ConfigurationError(f"bitmask rows need at least {words} int32 words, got {width}")
    if not 0 <= row < rows:
        raise ConfigurationError(f"row {row} out of range for a bitmask of {rows} rows")
    return <uint32_t*>cnp.PyArray_DATA(a) + row * width


cdef struct FillJob:
    PyObject** ptrs
    int* status
    uint32_t* base
    int64_t width


cdef int _fill_task(void* ctx, int64_t i) except -1 nogil:
    """One row of a batch (a pool task): status 2 while running, stays 2 if it raised."""
    cdef FillJob* job = <FillJob*>ctx
    if job.ptrs[i] == NULL:
        return 0
    job.status[i] = 2
    job.status[i] = (<MatcherCore>job.ptrs[i]).fill_ptr(job.base + i * job.width, job.width)
    return 0


def fill_rows(list cores, arr, int n_threads=0):
    """Fill row ``i`` of ``arr`` for ``cores[i]`` (``None`` rows are skipped), the rows
    on up to ``n_threads`` threads without the GIL (0: one per row; never more
    than the CPUs this process may run on).  Returns the index of the first row
    where nothing is allowed, or -1.  An error in any row is raised after every
    row has finished.

    The threads are a persistent pool that sleeps instead of spinning (a
    worker stays awake, yielding, for at most 50 us after a batch: ``_pool.h``),
    so a batch on a busy machine costs about what one thread costs: rows go to
    whichever thread is running."""
    cdef Py_ssize_t n = len(cores)
    cdef Py_ssize_t i
    cdef uint32_t* base
    cdef int64_t width
    cdef int nt
    cdef FillJob job
    if n == 0:
        return -1
    first = next((c for c in cores if c is not None), None)
    if first is None:
        return -1
    cdef int32_t words = (<MatcherCore>first).rt.words
    if cnp.PyArray_Check(arr) and cnp.PyArray_NDIM(<cnp.ndarray>arr) == 2:
        if cnp.PyArray_DIMS(<cnp.ndarray>arr)[0] < n:
                    raise ConfigurationError(f"bitmask needs shape [>= {n}, W], got {arr.shape}")
    base = _row_pointer(arr, 0, words)
    width = cnp.PyArray_DIMS(<cnp.ndarray>arr)[1] if cnp.PyArray_NDIM(<cnp.ndarray>arr) == 2 else 0
    if cnp.PyArray_NDIM(<cnp.ndarray>arr) != 2:
            raise ConfigurationError("fill_rows needs a 2-D bitmask")
    cdef PyObject** ptrs = <PyObject**>malloc(sizeof(PyObject*) * n)
    cdef int* status = <int*>malloc(sizeof(int) * n)
    if ptrs == NULL or status == NULL:
        free(ptrs)
        free(status)
        raise MemoryError()
    errors = [None] * n
    try:
        for i in range(n):
            c = cores[i]
            ptrs[i] = NULL if c is None else <PyObject*>c
            status[i] = 3                  # 3: not run; 2: running or raised; 1/0: allowed / nothing
        cpus = _cpu_count()
        nt = min(n_threads, cpus) if n_threads > 0 else min(<int>n, cpus)
        if nt > 1 and n > 1:
            job.ptrs = ptrs
            job.status = status
            job.base = base
            job.width = width
            with nogil:
                cfg_pool_run(_fill_task, &job, n, nt)
        for i in range(n):
            if ptrs[i] != NULL and status[i] >= 2:
                status[i] = _fill_one(<MatcherCore>ptrs[i], base + i * width, width, errors, i)
        for e in errors:
            if e is not None:
                raise e
        for i in range(n):
            if ptrs[i] != NULL and status[i] == 0:
                return i
        return -1
    finally:
        free(ptrs)
        free(status)


cdef int _fill_one(MatcherCore m, uint32_t* out, int64_t width, list errors, Py_ssize_t i):
    try:
        with nogil:
            r = m.fill_ptr(out, width)
        return r
    except BaseException as e:
        errors[i] = e
        return -1


cdef int _cpu_count():
    # the CPUs this process may run on (taskset, cgroup cpusets), not the machine's
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
