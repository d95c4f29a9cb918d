# cython: language_level=3
"""The lazy union automaton (see ``cfgmask/engine/lexer.py`` for what a state is), in C.

A union state is the tuple of still-live ``(terminal, terminal-DFA state)``
pairs, terminals ascending; an "ended" state (the lexeme ended before a byte a
trailing lookahead forbids) is the same with a leading ``-1``.  States are
interned by their key in a hash table, so each is created once per compiled
grammar, and every transition is computed once, in C, on first use.

Invariants:

* state 0 is dead (the empty key): it steps to itself and accepts nothing;
* ``trans[s * n_classes + c]`` holds the next state plus one, and ``0``
  means "not computed yet" (the arrays come zeroed from calloc);
* every per-state array is allocated once for ``max_states`` states, so a
  pointer into it is never invalidated: the tables only ever gain entries;
* a start state (the pairs ``(t, 0)`` of an allowed set) never accepts,
  because no terminal matches the empty string;
* every non-dead state can still reach an accepting state (each terminal DFA
  is trimmed), so "live" and "not dead" are the same thing;
* equal accepting-terminal sets get equal ``accept_id`` (0 = the empty set):
  the mask caches group lexeme ends by it;
* threads: reading a transition takes no lock.  A missing one is computed
  under ``lock`` (shared with the mask caches of ``_runtime.pyx``), the new
  state's arrays are written first and the transition is published last with
  a release store, so a reader that sees it sees the whole state.  The key
  pool, the state hash and the start-state table are only touched under the
  lock.
"""

from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset, memcpy, memcmp

import numpy as np

from cfgmask._fast._types cimport int32_t, int64_t, uint8_t, uint64_t
from cfgmask._fast._mem cimport grown, grow
from cfgmask._fast._hash cimport hash_ints
from cfgmask._fast._sync cimport (cfg_zalloc, cfg_zfree, cfg_rmutex_init,
                                  cfg_rmutex_lock, cfg_rmutex_unlock,
                                  cfg_rmutex_destroy, cfg_store_i32)


cdef inline uint64_t _hash_words(const uint64_t* w, int n) noexcept nogil:
    cdef uint64_t h = 1469598103934665603ULL
    cdef int i
    for i in range(n):
        h ^= w[i]
        h *= 1099511628211ULL
        h ^= h >> 29
    return h


cdef int _raise_too_many_states(int32_t limit) except -1 nogil:
    # a helper, so that the functions calling it hold no Python object (which would
    # make every return take the GIL)
    with gil:
        from cfgmask.errors import BudgetExceeded
        raise BudgetExceeded(f"lexer: more than {limit} union-automaton states "
                             "(raise Limits.max_lexer_states, or make terminals overlap less)")


cdef class LazyDFA:
    """Transition table of the union automaton of a grammar's terminals, filled on demand."""

    def __cinit__(self, spec, int max_states=200000, int max_token_bytes=-1):
        cdef int32_t T = spec.n_terminals
        cdef int nc = spec.n_classes
        cdef int nw = spec.n_words
        cdef int b, w, t
        if max_states < 2:
            raise ValueError("max_states must be at least 2")
        if cfg_rmutex_init(&self.lock) != 0:
            raise MemoryError("cannot create the cache lock")
        self.lock_ok = True
        self.n_terms = T
        self.c.n_classes = nc
        self.c.n_words = nw
        self.c.max_states = max_states
        cdef const uint8_t[::1] v_cls = np.ascontiguousarray(spec.class_of_byte, dtype=np.uint8)
        for b in range(256):
            self.c.class_of[b] = v_cls[b]
        # terminal tables: one flat array each for all terminals (a few numpy calls
        # per grammar, not per terminal); keep them alive, store raw pointers
        self.fw = (nc + 1 + 63) // 64
        trans, acc, offsets, forb, forb_bits = spec.flat_tables()
        trans = np.ascontiguousarray(trans, dtype=np.int32)
        acc = np.ascontiguousarray(acc, dtype=np.uint8)
        forb = np.ascontiguousarray(forb, dtype=np.int32)
        forb_bits = np.ascontiguousarray(forb_bits, dtype=np.uint64)
        if trans.size == 0:
            trans = np.zeros((1, max(1, nc)), dtype=np.int32)
        if acc.size == 0:
            acc = np.zeros(1, dtype=np.uint8)
        self._keep = (trans, acc, forb, forb_bits)
        self.term_trans = <const int32_t**>malloc(sizeof(int32_t*) * max(1, T))
        self.term_acc = <const uint8_t**>malloc(sizeof(uint8_t*) * max(1, T))
        self.term_forb = <const int32_t**>malloc(sizeof(int32_t*) * max(1, T))
        if self.term_trans == NULL or self.term_acc == NULL or self.term_forb == NULL:
            raise MemoryError()
        cdef const int32_t[:, ::1] v_trans = trans
        cdef const uint8_t[::1] v_acc = acc
        cdef const int32_t[::1] v_forb = forb
        cdef const uint64_t[::1] v_u64 = forb_bits
        cdef const uint8_t[::1] v_char_end
        cdef const int32_t[::1] v_min_chars
        cdef int64_t lo, hi
        for t in range(T):
            lo = offsets[t]
            hi = offsets[t + 1]
            self.term_trans[t] = &v_trans[lo, 0] if hi > lo else NULL
            self.term_acc[t] = &v_acc[lo] if hi > lo else &v_acc[0]
            self.term_forb[t] = &v_forb[lo] if hi > lo else &v_forb[0]
        self.forb_bits = &v_u64[0]
        self.count_limit = <int32_t*>calloc(max(1, T), sizeof(int32_t))
        self.count_offset = <int32_t*>calloc(max(1, T), sizeof(int32_t))
        self.term_nq = <int32_t*>calloc(max(1, T), sizeof(int32_t))
        self.term_char_end = <const uint8_t**>calloc(max(1, T), sizeof(uint8_t*))
        self.term_min_chars = <const int32_t**>calloc(max(1, T), sizeof(int32_t*))
        if (self.count_limit == NULL or self.count_offset == NULL or self.term_nq == NULL
                or self.term_char_end == NULL
                or self.term_min_chars == NULL):
            raise MemoryError()
        self.max_token_bytes = max_token_bytes
        counters = spec.counter_tables()
        self.has_counters = counters is not None
        for t in range(T):
            self.count_limit[t] = -1
            self.term_nq[t] = offsets[t + 1] - offsets[t]
        if counters is not None:
            limit = np.ascontiguousarray(counters[0], dtype=np.int32)
            char_end = np.ascontiguousarray(counters[1], dtype=np.uint8)
            min_chars = np.ascontiguousarray(counters[2], dtype=np.int32)
            self._keep = self._keep + (char_end, min_chars)
            v_char_end = char_end
            v_min_chars = min_chars
            self.min_count_offset = 2 ** 30
            for t in range(T):
                lo = offsets[t]
                hi = offsets[t + 1]
                if limit[t] >= 0 and hi > lo:
                    # Count only the last characters a token can reach: with tokens of at
                    # most max_token_bytes bytes, the first (bound - keep) characters of a
                    # lexeme cannot bring any token near the bound, so states that differ
                    # only there are one state (the matcher resets the count while it is
                    # in them: resaturate).  Without a vocabulary every character counts.
                    keep = limit[t]
                    if max_token_bytes >= 0:
                        keep = min(keep, max_token_bytes + int(min_chars[lo:hi].max()) + 1)
                    self.count_limit[t] = keep
                    self.count_offset[t] = limit[t] - keep
                    if 0 < limit[t] - keep < self.min_count_offset:
                        self.min_count_offset = limit[t] - keep
                    self.term_char_end[t] = &v_char_end[lo]
                    self.term_min_chars[t] = &v_min_chars[lo]
        # per-state tables, sized once
        self.c.trans = <int32_t*>cfg_zalloc(<size_t>max_states * nc * sizeof(int32_t))
        self.c.accept = <uint64_t*>cfg_zalloc(<size_t>max_states * nw * sizeof(uint64_t))
        self.c.any_accept = <uint8_t*>cfg_zalloc(max_states)
        self.c.accept_id = <int32_t*>cfg_zalloc(<size_t>max_states * sizeof(int32_t))
        self.c.restricted = <uint8_t*>cfg_zalloc(max_states)
        self.c.end_trans = <int32_t*>cfg_zalloc(<size_t>max_states * (nc + 1) * sizeof(int32_t))
        if self.has_counters:
            self.c.char_end = <uint8_t*>cfg_zalloc(max_states)
            self.c.counted = <uint8_t*>cfg_zalloc(max_states)
            self.zeroed = <int32_t*>cfg_zalloc(<size_t>max_states * sizeof(int32_t))
            if self.c.char_end == NULL or self.c.counted == NULL or self.zeroed == NULL:
                raise MemoryError(f"cannot reserve lexer tables for {max_states} states")
        self.key_off = <int64_t*>cfg_zalloc(<size_t>max_states * sizeof(int64_t))
        self.key_len = <int32_t*>cfg_zalloc(<size_t>max_states * sizeof(int32_t))
        self.key_buf = <int32_t*>malloc(sizeof(int32_t) * (2 * T + 2))
        self.pool_cap = 1024
        self.key_pool = <int32_t*>malloc(sizeof(int32_t) * self.pool_cap)
        self.h_cap = 1024
        self.h_vals = <int32_t*>calloc(self.h_cap, sizeof(int32_t))
        self.h_hash = <uint64_t*>calloc(self.h_cap, sizeof(uint64_t))
        self.aset_cap = 256
        self.aset_keys = <uint64_t*>calloc(self.aset_cap * nw, sizeof(uint64_t))
        self.aset_vals = <int32_t*>calloc(self.aset_cap, sizeof(int32_t))
        self.start_cap = 64
        self.start_count = 0
        self.start_keys = <uint64_t*>malloc(sizeof(uint64_t) * self.start_cap * nw)
        self.start_vals = <int32_t*>malloc(sizeof(int32_t) * self.start_cap)
        self.ignore_bits = <uint64_t*>malloc(sizeof(uint64_t) * nw)
        self.at_start_bits = <uint64_t*>malloc(sizeof(uint64_t) * nw)
        if (self.c.trans == NULL or self.c.accept == NULL or self.c.any_accept == NULL
                or self.c.accept_id == NULL or self.c.restricted == NULL or self.c.end_trans == NULL
                or self.key_off == NULL or self.key_len == NULL or self.key_buf == NULL
                or self.key_pool == NULL or self.h_vals == NULL or self.h_hash == NULL
                or self.aset_keys == NULL or self.aset_vals == NULL
                or self.start_keys == NULL or self.start_vals == NULL or self.ignore_bits == NULL
                or self.at_start_bits == NULL):
            raise MemoryError(f"cannot reserve lexer tables for {max_states} states")
        for b in range(self.start_cap):
            self.start_vals[b] = -1
        ignore_mask = int(spec.ignore_mask)
        for w in range(nw):
            self.ignore_bits[w] = <uint64_t>((ignore_mask >> (64 * w)) & 0xFFFFFFFFFFFFFFFF)
        at_start_mask = int(spec.at_start_mask)
        self.has_at_start = at_start_mask != 0
        for w in range(nw):
            self.at_start_bits[w] = <uint64_t>((at_start_mask >> (64 * w)) & 0xFFFFFFFFFFFFFFFF)
        # the empty accepting set is id 0; the empty key is the dead state 0
        self._aset_id(self.c.accept)    # row 0 of accept is all zero
        self._intern(self.key_buf, 0)
        for b in range(nc):
            self.c.trans[b] = 1     # dead -> dead

    def __dealloc__(self):
        if self.lock_ok:
            cfg_rmutex_destroy(&self.lock)
        free(self.term_trans)
        free(self.term_acc)
        free(self.term_forb)
        free(self.count_limit)
        free(self.count_offset)
        cfg_zfree(self.c.char_end)
        cfg_zfree(self.c.counted)
        cfg_zfree(self.zeroed)
        free(self.term_nq)
        free(self.term_char_end)
        free(self.term_min_chars)
        cfg_zfree(self.c.trans)
        cfg_zfree(self.c.accept)
        cfg_zfree(self.c.any_accept)
        cfg_zfree(self.c.accept_id)
        cfg_zfree(self.c.restricted)
        cfg_zfree(self.c.end_trans)
        cfg_zfree(self.key_off)
        cfg_zfree(self.key_len)
        free(self.key_buf)
        free(self.key_pool)
        free(self.h_vals)
        free(self.h_hash)
        free(self.aset_keys)
        free(self.aset_vals)
        free(self.start_keys)
        free(self.start_vals)
        free(self.ignore_bits)
        free(self.at_start_bits)

    # ---- interning --------------------------------------------------------
    cdef int32_t _aset_id(self, const uint64_t* bits) except -2 nogil:
        """Id of an accepting-terminal set (``n_words`` words), assigned on first sight."""
        cdef int nw = self.c.n_words
        cdef int64_t mask, i, j, newcap
        cdef uint64_t* nk
        cdef int32_t* nv
        if (self.n_asets + 1) * 2 > self.aset_cap:
            newcap = self.aset_cap * 2
            nk = <uint64_t*>calloc(newcap * nw, sizeof(uint64_t))
            nv = <int32_t*>calloc(newcap, sizeof(int32_t))
            if nk == NULL or nv == NULL:
                with gil:
                    raise MemoryError()
            for i in range(self.aset_cap):
                if self.aset_vals[i]:
                    j = <int64_t>(_hash_words(&self.aset_keys[i * nw], nw) & <uint64_t>(newcap - 1))
                    while nv[j]:
                        j = (j + 1) & (newcap - 1)
                    memcpy(&nk[j * nw], &self.aset_keys[i * nw], sizeof(uint64_t) * nw)
                    nv[j] = self.aset_vals[i]
            free(self.aset_keys)
            free(self.aset_vals)
            self.aset_keys = nk
            self.aset_vals = nv
            self.aset_cap = newcap
        mask = self.aset_cap - 1
        i = <int64_t>(_hash_words(bits, nw) & <uint64_t>mask)
        while self.aset_vals[i]:
            if memcmp(&self.aset_keys[i * nw], bits, sizeof(uint64_t) * nw) == 0:
                return self.aset_vals[i] - 1
            i = (i + 1) & mask
        memcpy(&self.aset_keys[i * nw], bits, sizeof(uint64_t) * nw)
        self.aset_vals[i] = self.n_asets + 1
        self.n_asets += 1
        return self.n_asets - 1

    cdef int32_t _base(self, int32_t t, int32_t st) noexcept nogil:
        """Terminal ``t``'s automaton state in its state ``st`` (they differ for a counter)."""
        if self.has_counters and self.count_limit[t] >= 0:
            return st % self.term_nq[t]
        return st

    cdef int32_t _term_step(self, int32_t t, int32_t st, int cls) noexcept nogil:
        """Terminal ``t``'s state after a byte of class ``cls`` from ``st``; -1 dead.
        A counter dies once the characters completed plus the fewest still needed
        to accept exceed its limit, so a live state can always still accept."""
        cdef int nc = self.c.n_classes
        cdef int32_t nq, q, n, nxt
        if not self.has_counters or self.count_limit[t] < 0:
            return self.term_trans[t][<int64_t>st * nc + cls]
        nq = self.term_nq[t]
        q = st % nq
        n = st // nq
        nxt = self.term_trans[t][<int64_t>q * nc + cls]
        if nxt < 0:
            return -1
        n += self.term_char_end[t][nxt]
        if n + self.term_min_chars[t][nxt] > self.count_limit[t]:
            return -1
        return n * nq + nxt

    cdef void _count_flags(self, int32_t s, const int32_t* key, int32_t n) noexcept nogil:
        """``char_end[s]`` and ``counted[s]`` of a new state from its key."""
        cdef int32_t j, t, q, nq
        cdef uint8_t ce = 0, cnt = 0
        for j in range(n & 1, n, 2):
            t = key[j]
            if self.count_limit[t] < 0:
                continue
            nq = self.term_nq[t]
            q = key[j + 1] % nq
            if self.term_char_end[t][q]:
                ce = 1
            if key[j + 1] >= nq and self.count_offset[t] > 0:
                cnt = 1
        self.c.char_end[s] = ce
        self.c.counted[s] = cnt

    cdef int32_t resaturate(self, int32_t s, int32_t n) except -2 nogil:
        """The state ``s`` stands for when its lexeme has completed ``n`` characters:
        each counted terminal's count becomes ``max(0, n - count_offset)``, its true
        count among the characters it keeps (see ``__cinit__``).  ``s`` itself when
        nothing changes; only states with ``counted[s]`` can change."""
        cdef int32_t r
        cfg_rmutex_lock(&self.lock)
        try:
            r = self._resaturate(s, n)
        finally:
            cfg_rmutex_unlock(&self.lock)
        return r

    cdef int32_t _resaturate(self, int32_t s, int32_t n) except -2 nogil:
        cdef int32_t klen = self.key_len[s]
        cdef const int32_t* key = &self.key_pool[self.key_off[s]]
        cdef int32_t j, t, st, q, u, nq, target, r
        cdef bint changed = False
        cdef bint all_zero = n <= self.min_count_offset
        if all_zero and self.zeroed[s]:
            return self.zeroed[s] - 1
        if klen & 1:
            self.key_buf[0] = key[0]
        for j in range(klen & 1, klen, 2):
            t = key[j]
            st = key[j + 1]
            if self.count_limit[t] >= 0 and self.count_offset[t] > 0:
                nq = self.term_nq[t]
                q = st % nq
                u = st // nq
                target = n - self.count_offset[t]
                if target < 0:
                    target = 0
                if target != u:
                    st = target * nq + q
                    changed = True
            self.key_buf[j] = t
            self.key_buf[j + 1] = st
        if not changed:
            return s
        r = self._intern(self.key_buf, klen)
        if all_zero:
            self.zeroed[s] = r + 1
        return r

    cdef int32_t _intern(self, const int32_t* key, int32_t n) except -2 nogil:
        """The state with key ``key[:n]``, created (with its accepting set) if new."""
        cdef uint64_t h = hash_ints(key, n)
        cdef int64_t mask = self.h_cap - 1
        cdef int64_t i = <int64_t>(h & <uint64_t>mask)
        cdef int32_t s, j, t, st, f
        cdef int64_t off, newcap
        cdef bint ended = n & 1
        cdef uint64_t any = 0
        cdef uint8_t restricted = 0
        cdef uint64_t* acc
        while self.h_vals[i]:
            s = self.h_vals[i] - 1
            if (self.h_hash[i] == h and self.key_len[s] == n
                    and memcmp(&self.key_pool[self.key_off[s]], key, sizeof(int32_t) * n) == 0):
                return s
            i = (i + 1) & mask
        s = self.c.n_states
        if s >= self.c.max_states:
            _raise_too_many_states(self.c.max_states)
        # store the key
        if self.pool_n + n > self.pool_cap:
            newcap = grown(self.pool_cap, self.pool_n + n)
            self.key_pool = <int32_t*>grow(self.key_pool, sizeof(int32_t) * newcap, NULL)
            self.pool_cap = newcap
        off = self.pool_n
        memcpy(&self.key_pool[off], key, sizeof(int32_t) * n)
        self.pool_n += n
        self.key_off[s] = off
        self.key_len[s] = n
        # accepting set, lookahead restriction
        acc = &self.c.accept[<int64_t>s * self.c.n_words]
        for j in range(ended, n, 2):
            t = key[j]
            st = self._base(t, key[j + 1])
            if self.term_acc[t][st]:
                acc[t >> 6] |= (<uint64_t>1) << (t & 63)
                if self.term_forb[t][st] >= 0:
                    restricted = 1
        for j in range(self.c.n_words):
            any |= acc[j]
        if self.has_counters:
            self._count_flags(s, key, n)
        self.c.any_accept[s] = 1 if any else 0
        self.c.restricted[s] = 0 if ended else restricted
        self.c.accept_id[s] = self._aset_id(acc)
        self.c.n_states = s + 1
        # insert (grow the hash at 50% load)
        self.h_vals[i] = s + 1
        self.h_hash[i] = h
        if (<int64_t>s + 1) * 2 > self.h_cap:
            self._grow_hash()
        return s

    cdef int _grow_hash(self) except -1 nogil:
        cdef int64_t newcap = self.h_cap * 2
        cdef int32_t* nv = <int32_t*>calloc(newcap, sizeof(int32_t))
        cdef uint64_t* nh = <uint64_t*>calloc(newcap, sizeof(uint64_t))
        cdef int64_t i, j
        if nv == NULL or nh == NULL:
            with gil:
                raise MemoryError()
        for i in range(self.h_cap):
            if self.h_vals[i]:
                j = <int64_t>(self.h_hash[i] & <uint64_t>(newcap - 1))
                while nv[j]:
                    j = (j + 1) & (newcap - 1)
                nv[j] = self.h_vals[i]
                nh[j] = self.h_hash[i]
        free(self.h_vals)
        free(self.h_hash)
        self.h_vals = nv
        self.h_hash = nh
        self.h_cap = newcap
        return 0

    # ---- transitions --------------------------------------------------------
    cdef int32_t fill(self, int32_t s, uint8_t b) except -2 nogil:
        """Compute and store the transition of ``s`` on ``b``'s class (under the lock)."""
        cdef int32_t r
        cfg_rmutex_lock(&self.lock)
        try:
            r = self.fill_locked(s, self.c.class_of[b])
        finally:
            cfg_rmutex_unlock(&self.lock)
        return r

    cdef int32_t fill_locked(self, int32_t s, int cls) except -2 nogil:
        """:meth:`fill` for byte class ``cls``, the caller holding the lock (a cache build)."""
        cdef int nc = self.c.n_classes
        cdef int32_t known = self.c.trans[<int64_t>s * nc + cls]
        if known:
            return known - 1        # another thread computed it meanwhile
        cdef int32_t n = self.key_len[s]
        cdef const int32_t* key = &self.key_pool[self.key_off[s]]
        cdef int32_t j, t, nxt, m = 0
        cdef int32_t r
        if n & 1:
            r = 0                       # an ended state is only scanned, never stepped
        else:
            for j in range(0, n, 2):
                t = key[j]
                nxt = self._term_step(t, key[j + 1], cls)
                if nxt >= 0:
                    self.key_buf[m] = t
                    self.key_buf[m + 1] = nxt
                    m += 2
            r = self._intern(self.key_buf, m)
        cfg_store_i32(&self.c.trans[<int64_t>s * nc + cls], r + 1)
        return r

    cdef int32_t fill_end(self, int32_t s, int cls) except -2 nogil:
        """The state whose accepting terminals are those of ``s`` that may end before
        a byte of class ``cls`` (``n_classes``: end of input); 0 if none."""
        cdef int32_t r
        cfg_rmutex_lock(&self.lock)
        try:
            r = self._fill_end(s, cls)
        finally:
            cfg_rmutex_unlock(&self.lock)
        return r

    cdef int32_t _fill_end(self, int32_t s, int cls) except -2 nogil:
        cdef int32_t known = self.c.end_trans[<int64_t>s * (self.c.n_classes + 1) + cls]
        if known:
            return known - 1
        cdef int32_t n = self.key_len[s]
        cdef int32_t j, t, st, f, m = 1
        cdef int32_t r
        # re-read the key pointer after each intern (the pool may move)
        cdef const int32_t* key = &self.key_pool[self.key_off[s]]
        self.key_buf[0] = -1
        for j in range(n & 1, n, 2):
            t = key[j]
            st = key[j + 1]
            if not self.term_acc[t][self._base(t, st)]:
                continue
            f = self.term_forb[t][self._base(t, st)]
            if f >= 0 and (self.forb_bits[<int64_t>f * self.fw + (cls >> 6)] >> (cls & 63)) & 1:
                continue
            self.key_buf[m] = t
            self.key_buf[m + 1] = st
            m += 2
        r = self._intern(self.key_buf, m) if m > 1 else 0
        cfg_store_i32(&self.c.end_trans[<int64_t>s * (self.c.n_classes + 1) + cls], r + 1)
        return r

    cdef int32_t start_for(self, const uint64_t* allowed) except -2 nogil:
        """Start state of the union automaton for ``allowed`` (n_words uint64), under
        the lock (each row stack keeps its own cache in front of this table)."""
        cdef int32_t r
        cfg_rmutex_lock(&self.lock)
        try:
            r = self._start_for(allowed)
        finally:
            cfg_rmutex_unlock(&self.lock)
        return r

    cdef int32_t _start_for(self, const uint64_t* allowed) except -2 nogil:
        cdef int n = self.c.n_words
        cdef uint64_t h = _hash_words(allowed, n)
        cdef int32_t mask = self.start_cap - 1
        cdef int32_t i = <int32_t>(h & mask)
        cdef int32_t t, m = 0
        while self.start_vals[i] >= 0:
            if memcmp(&self.start_keys[<int64_t>i * n], allowed, sizeof(uint64_t) * n) == 0:
                return self.start_vals[i]
            i = (i + 1) & mask
        for t in range(self.n_terms):
            if (allowed[t >> 6] >> (t & 63)) & 1:
                self.key_buf[m] = t
                self.key_buf[m + 1] = 0
                m += 2
        cdef int32_t sid = self._intern(self.key_buf, m)
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

    cdef int _grow_starts(self) except -1 nogil:
        cdef int n = self.c.n_words
        cdef int32_t oldcap = self.start_cap
        cdef uint64_t* okeys = self.start_keys
        cdef int32_t* ovals = self.start_vals
        cdef int32_t newcap = oldcap * 2
        cdef int32_t i, j, mask = newcap - 1
        self.start_keys = <uint64_t*>malloc(sizeof(uint64_t) * newcap * n)
        self.start_vals = <int32_t*>malloc(sizeof(int32_t) * newcap)
        if self.start_keys == NULL or self.start_vals == NULL:
            with gil:
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
        cdef int32_t r
        with nogil:
            r = lex_step(self, s, <uint8_t>b)
        return r

    def py_start(self, allowed_mask):
        cdef int n = self.c.n_words
        cdef int32_t r
        cdef uint64_t* buf = <uint64_t*>malloc(sizeof(uint64_t) * n)
        try:
            for w in range(n):
                buf[w] = <uint64_t>((allowed_mask >> (64 * w)) & 0xFFFFFFFFFFFFFFFF)
            with nogil:
                r = self.start_for(buf)
            return r
        finally:
            free(buf)

    def py_accepting(self, int s):
        return bool(self.c.any_accept[s])

    def key(self, int s):
        """The key of state ``s``: ``(terminal, state)`` pairs (``-1`` first for an ended state)."""
        if not 0 <= s < self.c.n_states:
            raise IndexError(s)
        with nogil:
            cfg_rmutex_lock(&self.lock)
        try:
            return tuple(self.key_pool[self.key_off[s] + j] for j in range(self.key_len[s]))
        finally:
            cfg_rmutex_unlock(&self.lock)

    def describe(self, int s, names):
        """Readable form of state ``s`` with terminal ``names``: ``{NAME@state, ...}``."""
        k = self.key(s)
        return "{" + ", ".join(f"{names[k[i]]}@{k[i + 1]}" for i in range(len(k) & 1, len(k), 2)) + "}"

    @property
    def n_states(self):
        return self.c.n_states
