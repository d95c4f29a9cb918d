# cython: language_level=3
"""The mask caches of a compiled grammar (:class:`Runtime`), shared by every matcher.

A :class:`Runtime` holds the trie, the token forest, the token bytes, the
slices and the caches below; ``_matcher.pyx`` (the byte stack and the fill)
reads them through ``_runtime.pxd``.

* **entry** of lexer state ``q`` (one lexer-only walk of the token forest):
  ``inside`` = tokens every byte of which ``q`` consumes (slices whose language
  ``q`` contains are ORed in without a walk); the first bytes that end ``q``'s
  lexeme at the token boundary, split by the state scanned there (a trailing
  lookahead can drop terminals before some bytes); and **groups**: the trie
  nodes where a byte ends the lexeme inside a token, one group per
  accepting-terminal set;
* **continuation** of a group from the next lexeme's start state ``sp``: the
  tokens whose remaining bytes stay inside the next lexeme, and the groups where
  it ends again.  A cross slice (a space and a word) in a group is settled by one
  containment check of its tail from ``sp``.

Threads.  Every cache is filled on demand under one writer lock (the lexer's,
recursive because a cache build steps the lexer) and read without a lock: an
object is built completely, then published with a release store.  A fill runs
without the GIL.  Caches are bounded by ``max_cache_bytes``: when they grow past
it, the least recently used entries (with all their groups and continuations)
are freed at the start of the next fill, once no fill is running.
"""

from libc.stdlib cimport malloc, calloc, free, qsort
from libc.string cimport memset, memcpy

import numpy as np

from cfgmask.errors import BudgetExceeded
from cfgmask._fast._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from cfgmask._fast._mem cimport raise_memory, raise_oom, grown, grow, data_of
from cfgmask._fast._lexer cimport LazyDFA, lex_step, lex_end
from cfgmask._fast._earley cimport CGrammar
from cfgmask._fast._sync cimport (cfg_zalloc, cfg_zfree, cfg_rmutex_lock, cfg_rmutex_unlock,
                                  cfg_load_ptr, cfg_store_ptr, cfg_load_i32, cfg_store_i32,
                                  cfg_add_i64, cfg_yield)


cdef inline void or_tokset(uint32_t* mask, const TokSet* ts, int32_t W) noexcept nogil:
    cdef int32_t k
    if ts.n < 0:
        for k in range(W):
            mask[k] |= ts.bits[k]
    else:
        for k in range(ts.n):
            mask[ts.idx[k]] |= ts.bits[k]


cdef int _cmp_i64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0]
    cdef int64_t y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


cdef int _raise_cache_budget(int64_t used, int64_t limit) except -1 nogil:
    with gil:
        raise BudgetExceeded(
            f"the mask caches of this compiled grammar hold {used} bytes, more than twice "
            f"Limits.max_cache_bytes={limit}, within one fill: raise max_cache_bytes")


cdef class Runtime:
    """Everything a compiled grammar shares between its matchers: the trie, the
    token forest, the token bytes, the slices and the mask caches."""

    def __cinit__(self, LazyDFA dfa, CGrammar g, trie, token_bytes_flat, token_offsets,
                  token_special, int vocab_size, eos_ids, word_boundary, slice_tables=None,
                  int64_t max_cache_bytes=1 << 29):
        self.dfa = dfa
        self.g = g
        nb = np.ascontiguousarray(trie.node_byte, dtype=np.uint8)
        nd = np.ascontiguousarray(trie.node_depth, dtype=np.int32)
        nt = np.ascontiguousarray(trie.node_token, dtype=np.int32)
        ne = np.ascontiguousarray(trie.node_subtree_end, dtype=np.int32)
        ts = np.ascontiguousarray(trie.token_same_next, dtype=np.int32)
        tb = np.ascontiguousarray(token_bytes_flat, dtype=np.uint8)
        if tb.size == 0:
            tb = np.zeros(1, dtype=np.uint8)
        to = np.ascontiguousarray(token_offsets, dtype=np.int64)
        tsp = np.ascontiguousarray(token_special, dtype=np.uint8)
        if ts.size == 0:
            ts = np.full(1, -1, dtype=np.int32)
        if tsp.size == 0:
            tsp = np.zeros(1, dtype=np.uint8)
        if slice_tables is not None:
            fo = slice_tables.forest
            fb = np.ascontiguousarray(fo["node_byte"], dtype=np.uint8)
            fd = np.ascontiguousarray(fo["node_depth"], dtype=np.int32)
            ft = np.ascontiguousarray(fo["node_token"], dtype=np.int32)
            fe = np.ascontiguousarray(fo["node_subtree_end"], dtype=np.int32)
        else:
            fb, fd, ft, fe = nb, nd, nt, ne
        self._keep = [nb, nd, nt, ne, ts, tb, to, tsp, fb, fd, ft, fe]
        self.node_byte = <const uint8_t*>data_of(nb)
        self.node_depth = <const int32_t*>data_of(nd)
        self.node_token = <const int32_t*>data_of(nt)
        self.node_subtree_end = <const int32_t*>data_of(ne)
        self.token_same_next = <const int32_t*>data_of(ts)
        self.tok_bytes = <const uint8_t*>data_of(tb)
        self.tok_off = <const int64_t*>data_of(to)
        self.tok_special = <const uint8_t*>data_of(tsp)
        self.f_byte = <const uint8_t*>data_of(fb)
        self.f_depth = <const int32_t*>data_of(fd)
        self.f_token = <const int32_t*>data_of(ft)
        self.f_send = <const int32_t*>data_of(fe)
        self.f_n = fb.shape[0]
        self.n_nodes = nb.shape[0]
        self.max_depth = trie.max_depth if nd.size else 0   # (the trie's, computed once)
        if dfa.has_counters and not 0 <= self.max_depth <= dfa.max_token_bytes:
            # its counters only keep the characters tokens this long can reach
            raise ValueError(f"the lexer was built for tokens of at most {dfa.max_token_bytes} "
                             f"bytes, this vocabulary has {self.max_depth}")
        self.n_tokens = len(token_offsets) - 1
        self.vocab_size = vocab_size
        self.words = (vocab_size + 31) // 32
        self.max_cache_bytes = max_cache_bytes
        eos = [int(e) for e in eos_ids]
        self.n_eos = len(eos)
        self.eos_ids = <int32_t*>malloc(sizeof(int32_t) * max(1, self.n_eos))
        if self.eos_ids == NULL:
            raise_memory("eos ids")
        for i, e in enumerate(eos):
            self.eos_ids[i] = e
        cdef int b, c
        for b in range(256):
            self.wb[b] = 0
        for b in word_boundary:
            self.wb[b] = 1
        memset(self.class_bytes, 0, sizeof(self.class_bytes))
        for b in range(256):
            c = dfa.c.class_of[b]
            self.class_bytes[c * 4 + (b >> 6)] |= (<uint64_t>1) << (b & 63)
        self.max_states = dfa.c.max_states
        self.entries = <Entry**>cfg_zalloc(<size_t>self.max_states * sizeof(Entry*))
        self.loop_bits = <uint64_t*>cfg_zalloc(<size_t>self.max_states * 4 * sizeof(uint64_t))
        self.loop_known = <uint8_t*>cfg_zalloc(<size_t>self.max_states)
        self.sl_known = <uint64_t*>cfg_zalloc(<size_t>self.max_states * sizeof(uint64_t))
        self.sl_in = <uint64_t*>cfg_zalloc(<size_t>self.max_states * sizeof(uint64_t))
        self.aid_cap = 256
        self.aid_state = <int32_t*>malloc(sizeof(int32_t) * self.aid_cap)
        self.ls = <int32_t*>malloc(sizeof(int32_t) * (self.max_depth + 2))
        self.pb = <uint8_t*>malloc(self.max_depth + 2)
        self.dense = <uint32_t*>calloc(max(1, self.words), sizeof(uint32_t))
        self.touched = <int32_t*>malloc(sizeof(int32_t) * max(1, self.words))
        self.ex_cap = 1024
        self.ex_keys = <int64_t*>malloc(sizeof(int64_t) * self.ex_cap)
        self.sub_bytes = NULL             # built when whole-subtree accept is switched on
        self.bfs_cap = 1024
        self.bfs = <int64_t*>malloc(sizeof(int64_t) * self.bfs_cap)
        self.seen_cap = 1024
        self.seen_pairs = <int64_t*>malloc(sizeof(int64_t) * self.seen_cap)
        self.seen_gen = <uint32_t*>calloc(self.seen_cap, sizeof(uint32_t))
        if (self.entries == NULL or self.loop_bits == NULL or self.loop_known == NULL
                or self.sl_known == NULL or self.sl_in == NULL or self.aid_state == NULL
                or self.ls == NULL or self.pb == NULL or self.dense == NULL or self.touched == NULL
                or self.ex_keys == NULL or self.bfs == NULL
                or self.seen_pairs == NULL or self.seen_gen == NULL):
            raise_memory(f"runtime tables for {self.max_states} lexer states")
        self._use_subtree_accept = False
        self._first_byte_sets(trie)
        self._setup_slices(slice_tables)
        self.cache_bytes = 0

    def __dealloc__(self):
        cdef int64_t i
        if self.entries != NULL:
            # not max_states (200,000 by default): reading every slot took 0.4 ms a grammar
            for i in range(self.entries_hi):
                if self.entries[i] != NULL:
                    self._free_entry(self.entries[i])
            cfg_zfree(self.entries)
        for i in range(256):
            if self.first_byte[i].n < 0:    # dense: owned; sparse ones point into the trie's arrays
                free(self.first_byte[i].bits)
        for i in range(self.n_slices):
            free(self.sl_bits[i].idx)
            free(self.sl_bits[i].bits)
        free(<void*>self.eos_ids)
        cfg_zfree(<void*>self.loop_bits)
        cfg_zfree(<void*>self.loop_known)
        cfg_zfree(<void*>self.sl_known)
        cfg_zfree(<void*>self.sl_in)
        free(<void*>self.aid_state)
        free(<void*>self.ls)
        free(<void*>self.pb)
        free(<void*>self.dense)
        free(<void*>self.touched)
        free(<void*>self.ex_keys)
        free(<void*>self.sub_bytes)
        free(<void*>self.bfs)
        free(<void*>self.seen_pairs)
        free(<void*>self.seen_gen)

    # ---- set-up ------------------------------------------------------------
    cdef int _setup_slices(self, tables) except -1:
        """Copy the slice tables (``cfgmask/engine/slices.py``) into flat C arrays."""
        cdef int32_t n = 0 if tables is None else tables.n
        cdef int32_t i, j, c, k
        self.n_slices = n
        if tables is None:
            self.rest_lo = 0
            self.rest_hi = self.f_n
        else:
            self.rest_lo = tables.rest_lo
            self.rest_hi = tables.rest_hi
        if n > MAX_SLICES:
            raise ValueError("at most 32 slices")
        # the per-slice arrays are the runtime's own (MAX_SLICES long), zero like calloc's
        if n == 0:
            return 0
        bits = tables.bits()
        cdef const int32_t[:, ::1] vb = bits
        cdef bytes class_of = bytes([self.dfa.c.class_of[c] for c in range(256)])
        for i in range(n):
            sl = tables.slices[i]
            self.sl_lo[i] = tables.trie_lo[i]
            self.sl_hi[i] = tables.trie_hi[i]
            self.sl_parent[i] = tables.parent[i]
            memcpy(self.dense, &vb[i, 0], sizeof(uint32_t) * self.words)
            for j in range(self.words):
                if self.dense[j]:
                    self.touched[self.n_touched] = j
                    self.n_touched += 1
            self._freeze(&self.sl_bits[i])
            d = np.ascontiguousarray(sl.dfa.trans, dtype=np.int32).reshape(-1)
            self._keep.append(d)
            self.sl_dfa[i] = <const int32_t*>data_of(d)
            self.sl_reps_n[i] = self._byte_reps(sl, False, class_of, &self.sl_reps[i * 256])
            self.sl_split[i] = -1
            if sl.lead is not None:
                d = np.ascontiguousarray(sl.tail.trans, dtype=np.int32).reshape(-1)
                self._keep.append(d)
                self.sl_tail[i] = <const int32_t*>data_of(d)
                self.tl_reps_n[i] = self._byte_reps(sl, True, class_of, &self.tl_reps[i * 256])
                # the own trie is root -> lead byte -> the starts of the tail
                c = self.sl_lo[i] + 1
                if c < self.sl_hi[i] and self.f_send[c] == self.sl_hi[i] and self.f_byte[c] == sl.lead:
                    self.sl_split[i] = c
                    k = 0
                    j = c + 1
                    while j < self.f_send[c]:
                        k += 1
                        j = self.f_send[j]
                    self.sl_split_children[i] = k
        return 0

    cdef int32_t _byte_reps(self, sl, bint tail, bytes class_of, uint8_t* out) except -1:
        """Copy the slice's byte representatives for this lexer (``Slice.byte_reps``)."""
        cdef bytes reps = sl.byte_reps(class_of, tail)
        cdef Py_ssize_t n = len(reps)
        if n:
            memcpy(out, <const char*>reps, n)
        return <int32_t>n

    property use_subtree_accept:
        """Whole-subtree accept (docs/architecture.md): allow every token below a trie node without
        walking it when the lexer state loops on every byte of the subtree.  Off by
        default: on the bundled grammars it cost more in checks than it saved
        (docs/architecture.md).  Switching it on builds the per-node byte sets
        (32 bytes per forest node), so a compile that never uses it pays nothing."""
        def __get__(self):
            return bool(self._use_subtree_accept)

        def __set__(self, bint on):
            if on and self.sub_bytes == NULL:
                self._subtree_bytes()
            self._use_subtree_accept = on

    cdef int _subtree_bytes(self) except -1:
        """``sub_bytes[i]``: the bytes of forest node ``i`` and of every node below it."""
        cdef int32_t n = self.f_n
        cdef uint64_t* sub = <uint64_t*>calloc(<size_t>max(1, n) * 4, sizeof(uint64_t))
        cdef int32_t* parent = <int32_t*>malloc(sizeof(int32_t) * max(1, n))
        cdef int32_t* stack = <int32_t*>malloc(sizeof(int32_t) * (self.max_depth + 2))
        cdef int32_t i, d, p, w
        if parent == NULL or stack == NULL or sub == NULL:
            free(parent)
            free(stack)
            free(sub)
            raise_memory("subtree byte sets")
        self.sub_bytes = sub
        stack[0] = 0
        for i in range(n):
            d = self.f_depth[i]
            parent[i] = stack[d - 1] if d > 0 else -1
            stack[d] = i
        for i in range(n - 1, -1, -1):
            if self.f_depth[i] == 0:
                continue
            self.sub_bytes[<int64_t>i * 4 + (self.f_byte[i] >> 6)] |= (<uint64_t>1) << (self.f_byte[i] & 63)
            p = parent[i]
            for w in range(4):
                self.sub_bytes[<int64_t>p * 4 + w] |= self.sub_bytes[<int64_t>i * 4 + w]
        free(parent)
        free(stack)
        return 0

    cdef int _first_byte_sets(self, trie) except -1:
        """``first_byte[b]``: the tokens starting with byte ``b``, from the trie's
        own grouping (computed once per vocabulary, cfgmask/engine/trie.py); dense when
        that is smaller, as :meth:`_freeze` decides.  Sparse sets point into the
        trie's arrays (kept alive in ``_keep``) instead of copying them: only
        the dense ones are owned (and freed) here."""
        offsets, words, bits = trie.first_byte_sets()
        wa = np.ascontiguousarray(words, dtype=np.int32)
        ba = np.ascontiguousarray(bits, dtype=np.uint32)
        self._keep.extend([wa, ba])
        cdef const int64_t[::1] vo = np.ascontiguousarray(offsets, dtype=np.int64)
        cdef const int32_t[::1] vw = wa
        cdef const uint32_t[::1] vb = ba
        cdef int32_t W = self.words
        cdef int64_t lo, hi, k, n
        cdef int b
        cdef TokSet* ts
        memset(self.first_byte, 0, sizeof(self.first_byte))
        for b in range(256):
            lo = vo[b]
            hi = vo[b + 1]
            n = hi - lo
            ts = &self.first_byte[b]
            if n * 2 >= W:
                ts.n = -1
                ts.bits = <uint32_t*>calloc(max(1, W), sizeof(uint32_t))
                if ts.bits == NULL:
                    raise_memory("token set")
                for k in range(lo, hi):
                    ts.bits[vw[k]] = vb[k]
            else:
                ts.n = <int32_t>n
                ts.idx = <int32_t*>&vw[lo] if n else NULL
                ts.bits = <uint32_t*>&vb[lo] if n else NULL
        return 0

    # ---- small helpers -------------------------------------------------------
    cdef void _free_entry(self, Entry* e) noexcept nogil:
        cdef int32_t k
        for k in range(e.n_owned):
            free(e.owned[k])
        free(e.owned)
        free(e.inside.idx)
        free(e.inside.bits)
        free(e.end_state)
        free(e.end_fb)
        free(e.end_fb_nw)
        free(e)

    cdef int _own(self, void* p, int64_t nbytes) except -1 nogil:
        """Hand ``p`` to the entry being built (freed with it)."""
        cdef Entry* e = self.cur_owner
        cdef void** q = NULL
        if p == NULL:
            raise_oom("mask cache")
        if e.n_owned == e.cap_owned:
            try:
                q = <void**>grow(e.owned, sizeof(void*) * (2 * e.cap_owned + 8), "mask cache")
            finally:
                if q == NULL:
                    free(p)
            e.owned = q
            e.cap_owned = 2 * e.cap_owned + 8
        e.owned[e.n_owned] = p
        e.n_owned += 1
        e.bytes += nbytes
        self.cache_bytes += nbytes
        if self.cache_bytes > 2 * self.max_cache_bytes:
            _raise_cache_budget(self.cache_bytes, self.max_cache_bytes)
        return 0

    # ---- build scratch: a dense bitmask plus the list of its non-zero words ---------
    cdef inline void _mark(self, int32_t tok) noexcept nogil:
        cdef int32_t w
        while tok >= 0:
            w = tok >> 5
            if self.dense[w] == 0:
                self.touched[self.n_touched] = w
                self.n_touched += 1
            self.dense[w] |= (<uint32_t>1) << (tok & 31)
            tok = self.token_same_next[tok]

    cdef void _mark_subtree(self, int32_t node) noexcept nogil:
        """Mark every token of forest node ``node``'s subtree."""
        cdef int32_t i
        for i in range(node, self.f_send[node]):
            if self.f_token[i] >= 0:
                self._mark(self.f_token[i])

    cdef void _mark_tokset(self, const TokSet* ts) noexcept nogil:
        cdef int32_t k, w
        if ts.n < 0:
            for w in range(self.words):
                if ts.bits[w]:
                    if self.dense[w] == 0:
                        self.touched[self.n_touched] = w
                        self.n_touched += 1
                    self.dense[w] |= ts.bits[w]
        else:
            for k in range(ts.n):
                w = ts.idx[k]
                if self.dense[w] == 0:
                    self.touched[self.n_touched] = w
                    self.n_touched += 1
                self.dense[w] |= ts.bits[k]

    cdef void _clear_scratch(self) noexcept nogil:
        cdef int32_t k
        for k in range(self.n_touched):
            self.dense[self.touched[k]] = 0
        self.n_touched = 0

    cdef int _freeze(self, TokSet* ts) except -1 nogil:
        """Move the scratch into ``ts`` (sparse when that is smaller) and clear it."""
        cdef int32_t W = self.words
        cdef int32_t k, w, nz = self.n_touched
        if nz * 2 >= W:
            ts.n = -1
            ts.idx = NULL
            ts.bits = <uint32_t*>malloc(sizeof(uint32_t) * max(1, W))
            if ts.bits == NULL:
                self._clear_scratch()
                raise_oom("token set")
            memcpy(ts.bits, self.dense, sizeof(uint32_t) * W)
            memset(self.dense, 0, sizeof(uint32_t) * W)
        else:
            ts.n = nz
            ts.idx = <int32_t*>malloc(sizeof(int32_t) * max(1, nz))
            ts.bits = <uint32_t*>malloc(sizeof(uint32_t) * max(1, nz))
            if ts.idx == NULL or ts.bits == NULL:
                free(ts.idx)
                free(ts.bits)
                ts.idx = NULL
                ts.bits = NULL
                ts.n = 0
                self._clear_scratch()
                raise_oom("token set")
            for k in range(nz):
                w = self.touched[k]
                ts.idx[k] = w
                ts.bits[k] = self.dense[w]
                self.dense[w] = 0
        self.n_touched = 0
        return 0

    cdef inline int64_t _tokset_bytes(self, const TokSet* ts) noexcept nogil:
        return 4 * self.words if ts.n < 0 else 8 * ts.n

    # ---- containment of slice languages ---------------------------------------
    cdef bint _contained(self, int32_t q, int32_t i, bint tail) except -1 nogil:
        """Whether every string of slice ``i``'s language (its tail's, for ``tail``)
        keeps a lexeme in state ``q`` alive: the product of the slice automaton and
        the lexer from ``(0, q)`` never reaches a dead lexer state.  Cached; only
        called under the lock."""
        cdef uint64_t bit = (<uint64_t>1) << (i + (32 if tail else 0))
        if self.sl_known[q] & bit:
            return (self.sl_in[q] & bit) != 0
        cdef const int32_t* tr = self.sl_tail[i] if tail else self.sl_dfa[i]
        cdef const uint8_t* reps = &self.tl_reps[i * 256] if tail else &self.sl_reps[i * 256]
        cdef int32_t nreps = self.tl_reps_n[i] if tail else self.sl_reps_n[i]
        cdef int64_t top = 0, pair
        cdef int32_t a, p, a2, p2, r
        cdef uint8_t b
        cdef bint ok = True
        self.slice_checks += 1
        if q == 0:
            ok = False
        else:
            self._seen_clear()
            self.bfs[0] = q          # the pair (0, q)
            top = 1
            self._seen_add(q)
            while top > 0 and ok:
                top -= 1
                pair = self.bfs[top]
                a = <int32_t>(pair >> 32)
                p = <int32_t>(pair & 0xFFFFFFFFLL)
                for r in range(nreps):
                    b = reps[r]
                    a2 = tr[<int64_t>a * 256 + b]
                    if a2 < 0:
                        continue
                    p2 = lex_step(self.dfa, p, b)
                    if p2 == 0:
                        ok = False
                        break
                    pair = ((<int64_t>a2) << 32) | p2
                    if self._seen_add(pair):
                        if top == self.bfs_cap:
                            self.bfs = <int64_t*>grow(self.bfs, sizeof(int64_t) * self.bfs_cap * 2,
                                                      "containment check")
                            self.bfs_cap *= 2
                        self.bfs[top] = pair
                        top += 1
        if ok:
            self.sl_in[q] |= bit
        self.sl_known[q] |= bit
        return ok

    cdef void _seen_clear(self) noexcept nogil:
        # a new generation empties the visited set without touching it
        self.seen_stamp += 1
        if self.seen_stamp == 0:
            memset(self.seen_gen, 0, sizeof(uint32_t) * self.seen_cap)
            self.seen_stamp = 1
        self.n_seen = 0

    cdef bint _seen_add(self, int64_t key) except -1 nogil:
        """Insert ``key`` into the product's visited set; False if it was there."""
        cdef int64_t mask = self.seen_cap - 1
        cdef int64_t h = <int64_t>(((<uint64_t>key) * 0x9E3779B97F4A7C15ULL) >> 20) & mask
        cdef int64_t i, j, oldcap
        cdef int64_t* old
        cdef uint32_t* oldgen
        cdef uint32_t g = self.seen_stamp
        while self.seen_gen[h] == g:
            if self.seen_pairs[h] == key:
                return False
            h = (h + 1) & mask
        self.seen_pairs[h] = key
        self.seen_gen[h] = g
        self.n_seen += 1
        if self.n_seen * 2 > self.seen_cap:
            old = self.seen_pairs
            oldgen = self.seen_gen
            oldcap = self.seen_cap
            self.seen_pairs = <int64_t*>malloc(sizeof(int64_t) * oldcap * 2)
            self.seen_gen = <uint32_t*>calloc(oldcap * 2, sizeof(uint32_t))
            if self.seen_pairs == NULL or self.seen_gen == NULL:
                free(self.seen_pairs)
                free(self.seen_gen)
                self.seen_pairs = old
                self.seen_gen = oldgen
                raise_oom("containment check")
            self.seen_cap = oldcap * 2
            mask = self.seen_cap - 1
            for i in range(oldcap):
                if oldgen[i] == g:
                    j = <int64_t>(((<uint64_t>old[i]) * 0x9E3779B97F4A7C15ULL) >> 20) & mask
                    while self.seen_gen[j] == g:
                        j = (j + 1) & mask
                    self.seen_pairs[j] = old[i]
                    self.seen_gen[j] = g
            free(old)
            free(oldgen)
        return True

    # ---- whole-subtree accept ------------------------------------------------
    cdef bint _loops_on_subtree(self, int32_t s, int32_t node) except -1 nogil:
        """True when ``s`` steps to itself on every byte of ``node``'s subtree, so every
        token below is allowed without walking it (whole-subtree accept)."""
        cdef int32_t c
        cdef int w
        cdef const uint64_t* sb
        cdef uint64_t* lb = &self.loop_bits[<int64_t>s * 4]
        if not self.loop_known[s]:
            for c in range(self.dfa.c.n_classes):
                if lex_step(self.dfa, s, self._class_rep(c)) == s:
                    for w in range(4):
                        lb[w] |= self.class_bytes[c * 4 + w]
            self.loop_known[s] = 1
        sb = &self.sub_bytes[<int64_t>node * 4]
        return ((sb[0] & ~lb[0]) | (sb[1] & ~lb[1]) | (sb[2] & ~lb[2]) | (sb[3] & ~lb[3])) == 0

    cdef inline uint8_t _class_rep(self, int32_t c) noexcept nogil:
        cdef int w, b
        for w in range(4):
            if self.class_bytes[c * 4 + w]:
                for b in range(64):
                    if (self.class_bytes[c * 4 + w] >> b) & 1:
                        return <uint8_t>(w * 64 + b)
        return 0

    # ---- cache builds (under the lock) ---------------------------------------------
    cdef int _add_exit(self, int32_t scan_state, int32_t node) except -1 nogil:
        cdef int32_t aid = self.dfa.c.accept_id[scan_state]
        cdef int32_t newcap
        if aid >= self.aid_cap:
            newcap = <int32_t>grown(self.aid_cap, <int64_t>aid + 1)
            self.aid_state = <int32_t*>grow(self.aid_state, sizeof(int32_t) * newcap, "exit list")
            self.aid_cap = newcap
        self.aid_state[aid] = scan_state
        if self.ex_n == self.ex_cap:
            self.ex_keys = <int64_t*>grow(self.ex_keys, sizeof(int64_t) * self.ex_cap * 2, "exit list")
            self.ex_cap *= 2
        self.ex_keys[self.ex_n] = ((<int64_t>aid) << 32) | node
        self.ex_n += 1
        return 0

    cdef int _lex_walk(self, int32_t lo, int32_t hi, int32_t q0, Entry* top) except -1 nogil:
        """Lexer-only walk of the sibling forest subtrees ``[lo, hi)`` from lexer state ``q0``.

        Tokens every byte of which the lexer consumes are marked in the
        scratch; nodes whose byte ends an accepting lexeme go to the exit list
        (``_add_exit``), keyed by the terminal set that accepts it.  Exits
        right at the first byte are only possible when ``q0`` is accepting,
        i.e. for an entry (``top``): they become its first-byte exits.
        """
        cdef const int32_t* depth = self.f_depth
        cdef const uint8_t* byte = self.f_byte
        cdef const int32_t* send = self.f_send
        cdef const int32_t* tokn = self.f_token
        cdef const int32_t* trans = self.dfa.c.trans
        cdef const uint8_t* cls = self.dfa.c.class_of
        cdef const uint8_t* anyacc = self.dfa.c.any_accept
        cdef int64_t nc = self.dfa.c.n_classes
        cdef int32_t off = depth[lo] - 1
        cdef int32_t i = lo, d, s, t, se
        cdef int64_t walked = 0
        cdef uint8_t b
        cdef int32_t* ls = self.ls
        cdef uint8_t* pb = self.pb
        cdef bint subtree_accept = self._use_subtree_accept
        ls[0] = q0
        pb[0] = 0
        while i < hi:
            d = depth[i] - off
            b = byte[i]
            s = ls[d - 1]
            if (subtree_accept and send[i] - i >= 4 and s != 0
                    and self._loops_on_subtree(s, i)):
                self._mark_subtree(i)
                self.whole_subtree_hits += 1
                i = send[i]
                continue
            walked += 1
            t = trans[s * nc + cls[b]] - 1      # under the lock: a plain read is current
            if t < 0:
                t = self.dfa.fill_locked(s, cls[b])
            if t != 0:
                ls[d] = t
                pb[d] = b
                if tokn[i] >= 0:
                    self._mark(tokn[i])
                i += 1
                continue
            if anyacc[s]:
                se = lex_end(self.dfa, s, cls[b])
                if anyacc[se]:
                    if d == 1:
                        if top != NULL:
                            top.exit_byte[b] = 1
                    elif not (self.wb[pb[d - 1]] and self.wb[b]):
                        self._add_exit(se, i)
            i = send[i]
        self.nodes_walked += walked
        return 0

    cdef int _groups_from_exits(self, int32_t* n_out, Group*** out) except -1 nogil:
        """Turn the exit list into groups (one per accepting-terminal set) and clear it."""
        cdef int64_t k, j, start
        cdef int32_t ng = 0, aid, m
        cdef Group* gr
        cdef Group** arr
        qsort(self.ex_keys, self.ex_n, sizeof(int64_t), _cmp_i64)
        k = 0
        while k < self.ex_n:
            aid = <int32_t>(self.ex_keys[k] >> 32)
            while k < self.ex_n and <int32_t>(self.ex_keys[k] >> 32) == aid:
                k += 1
            ng += 1
        n_out[0] = 0
        out[0] = NULL
        arr = <Group**>malloc(sizeof(Group*) * max(1, ng))
        self._own(arr, sizeof(Group*) * max(1, ng))
        k = 0
        ng = 0
        while k < self.ex_n:
            aid = <int32_t>(self.ex_keys[k] >> 32)
            start = k
            while k < self.ex_n and <int32_t>(self.ex_keys[k] >> 32) == aid:
                k += 1
            m = <int32_t>(k - start)
            gr = <Group*>calloc(1, sizeof(Group))
            self._own(gr, sizeof(Group))
            gr.nodes = <int32_t*>malloc(sizeof(int32_t) * m)
            self._own(gr.nodes, 4 * m)
            for j in range(m):
                gr.nodes[j] = <int32_t>(self.ex_keys[start + j] & 0xFFFFFFFFLL)
            gr.n_nodes = m
            gr.scan_state = self.aid_state[aid]
            gr.root = self.cur_owner
            self._take_cross_slices(gr)
            arr[ng] = gr
            ng += 1
        self.n_groups += ng
        self.ex_n = 0
        n_out[0] = ng
        out[0] = arr
        return 0

    cdef int _take_cross_slices(self, Group* gr) except -1 nogil:
        """When a group holds every child of a cross slice's lead node (the lead byte
        was a whole ignored lexeme and every tail starts a new one), replace those
        nodes by the slice: its continuation is then one containment check."""
        cdef int32_t i, c, lo, hi, cnt, j, m
        cdef int32_t* nodes = gr.nodes
        for i in range(self.n_slices):
            c = self.sl_split[i]
            if c < 0:
                continue
            lo = c + 1
            hi = self.f_send[c]
            cnt = 0
            for j in range(gr.n_nodes):
                if lo <= nodes[j] < hi and self.f_depth[nodes[j]] == self.f_depth[c] + 1:
                    cnt += 1
            if cnt == 0 or cnt != self.sl_split_children[i]:
                continue
            m = 0
            for j in range(gr.n_nodes):
                if not (lo <= nodes[j] < hi):
                    nodes[m] = nodes[j]
                    m += 1
            gr.n_nodes = m
            if gr.cross == NULL:
                gr.cross = <int32_t*>malloc(sizeof(int32_t) * max(1, self.n_slices))
                self._own(gr.cross, 4 * max(1, self.n_slices))
            gr.cross[gr.n_cross] = i
            gr.n_cross += 1
        return 0

    cdef int _walk_slices(self, int32_t q, Entry* top) except -1 nogil:
        """The lexer-only walk of the whole forest from ``q``: a slice whose language
        ``q`` contains is marked at once, the others' tries are walked; then the rest."""
        cdef int32_t i, p
        for i in range(self.n_slices):
            p = self.sl_parent[i]
            if (p < 0 or self._contained(q, p, False)) and self._contained(q, i, False):
                self._mark_tokset(&self.sl_bits[i])
                self.slice_hits += 1
            elif self.sl_lo[i] + 1 < self.sl_hi[i]:
                self._lex_walk(self.sl_lo[i] + 1, self.sl_hi[i], q, top)
        if self.rest_lo + 1 < self.rest_hi:
            self._lex_walk(self.rest_lo + 1, self.rest_hi, q, top)
        return 0

    cdef Entry* entry(self, int32_t q) except NULL nogil:
        """The cache entry of lexer state ``q``: a lock-free read when it exists,
        else built under the lock."""
        cdef Entry* e = <Entry*>cfg_load_ptr(<void**>&self.entries[q])
        if e != NULL:
            e.last_used = self.tick
            return e
        cfg_rmutex_lock(&self.dfa.lock)
        try:
            e = self.entries[q]
            if e == NULL:
                e = self._build_entry(q)
                self.n_entries += 1
                if q >= self.entries_hi:
                    self.entries_hi = q + 1
                cfg_store_ptr(<void**>&self.entries[q], e)
        finally:
            cfg_rmutex_unlock(&self.dfa.lock)
        e.last_used = self.tick
        return e

    cdef Entry* _build_entry(self, int32_t q) except NULL nogil:
        cdef Entry* e = <Entry*>calloc(1, sizeof(Entry))
        cdef Entry* saved = self.cur_owner
        cdef bint ok = False
        if e == NULL:
            raise_oom("mask cache entry")
        e.q = q
        self.cur_owner = e
        try:
            self.ex_n = 0
            self._walk_slices(q, e)
            self._freeze(&e.inside)
            e.bytes += sizeof(Entry) + self._tokset_bytes(&e.inside)
            self.cache_bytes += sizeof(Entry) + self._tokset_bytes(&e.inside)
            self._groups_from_exits(&e.n_groups, &e.groups)
            self._build_ends(e)
            ok = True
        finally:
            self.cur_owner = saved
            if not ok:
                self._clear_scratch()
                self.ex_n = 0
                self.cache_bytes -= e.bytes
                self._free_entry(e)
        return e

    cdef int _build_ends(self, Entry* e) except -1 nogil:
        """Split the first bytes that end ``e.q``'s lexeme by the state scanned there
        (``lex_end``: ``q`` itself unless a trailing lookahead drops a terminal before
        that byte), so a fill needs no parser walk for a restricted ``q``."""
        cdef int32_t W = self.words
        cdef int32_t q = e.q
        cdef int32_t se_of[256]
        cdef int32_t ends[256]
        cdef int32_t n = 0, k, se
        cdef int b
        cdef uint32_t* fb
        cdef uint32_t* fb_nw
        for b in range(256):
            se_of[b] = -1
            if e.exit_byte[b]:
                se_of[b] = lex_end(self.dfa, q, self.dfa.c.class_of[b])
        # distinct end states, in first-byte order (usually one)
        for b in range(256):
            if se_of[b] < 0:
                continue
            for k in range(n):
                if ends[k] == se_of[b]:
                    break
            else:
                ends[n] = se_of[b]
                n += 1
        if n == 0:
            return 0
        e.end_state = <int32_t*>malloc(sizeof(int32_t) * n)
        e.end_fb = <uint32_t*>calloc(<size_t>n * max(1, W), sizeof(uint32_t))
        e.end_fb_nw = <uint32_t*>calloc(<size_t>n * max(1, W), sizeof(uint32_t))
        if e.end_state == NULL or e.end_fb == NULL or e.end_fb_nw == NULL:
            raise_oom("mask cache entry")
        memcpy(e.end_state, ends, sizeof(int32_t) * n)
        for k in range(n):
            se = ends[k]
            fb = &e.end_fb[<int64_t>k * W]
            fb_nw = &e.end_fb_nw[<int64_t>k * W]
            for b in range(256):
                if se_of[b] == se and not self.wb[b]:
                    or_tokset(fb_nw, &self.first_byte[b], W)
            memcpy(fb, fb_nw, sizeof(uint32_t) * W)
            for b in range(256):
                if se_of[b] == se and self.wb[b]:
                    or_tokset(fb, &self.first_byte[b], W)
        e.n_ends = n
        e.bytes += (8 * W + 4) * n
        self.cache_bytes += (8 * W + 4) * n
        return 0

    cdef Cont* cont(self, Group* gr, int32_t sp) except NULL nogil:
        """The continuation of group ``gr`` when the next lexeme starts in state ``sp``."""
        cdef ContTable* t = <ContTable*>cfg_load_ptr(<void**>&gr.conts)
        cdef int32_t k, n
        if t != NULL:
            n = cfg_load_i32(&t.n)
            for k in range(n):
                if t.keys[k] == sp:
                    return <Cont*>t.vals[k]
        cdef Cont* c
        cfg_rmutex_lock(&self.dfa.lock)
        try:
            c = self._build_cont(gr, sp)
        finally:
            cfg_rmutex_unlock(&self.dfa.lock)
        return c

    cdef Cont* _build_cont(self, Group* gr, int32_t sp) except NULL nogil:
        cdef ContTable* t = gr.conts
        cdef ContTable* t2
        cdef int32_t k, i, cnode, newcap
        cdef Entry* saved = self.cur_owner
        cdef Cont* c
        if t != NULL:
            for k in range(t.n):
                if t.keys[k] == sp:
                    return <Cont*>t.vals[k]
        self.cur_owner = <Entry*>gr.root
        try:
            c = <Cont*>calloc(1, sizeof(Cont))
            self._own(c, sizeof(Cont))
            self.ex_n = 0
            try:
                for k in range(gr.n_nodes):
                    self._lex_walk(gr.nodes[k], self.f_send[gr.nodes[k]], sp, NULL)
                for k in range(gr.n_cross):
                    i = gr.cross[k]
                    cnode = self.sl_split[i]
                    if self._contained(sp, i, True):
                        self._mark_tokset(&self.sl_bits[i])
                        self.slice_hits += 1
                    else:
                        self._lex_walk(cnode + 1, self.f_send[cnode], sp, NULL)
                self._freeze(&c.bits)
            finally:
                if self.n_touched:       # only after an error: _freeze empties it
                    self._clear_scratch()
                    self.ex_n = 0
            if c.bits.idx != NULL:
                self._own(c.bits.idx, 4 * c.bits.n)
            self._own(c.bits.bits, self._tokset_bytes(&c.bits) - (4 * c.bits.n if c.bits.n > 0 else 0))
            self._groups_from_exits(&c.n_groups, &c.groups)
            # publish: append in place when there is room, else a larger copy
            if t != NULL and t.n < t.cap:
                t.keys[t.n] = sp
                t.vals[t.n] = c
                cfg_store_i32(&t.n, t.n + 1)
            else:
                newcap = 4 if t == NULL else 2 * t.cap
                t2 = <ContTable*>malloc(sizeof(ContTable) + newcap * (sizeof(int32_t) + sizeof(void*)))
                self._own(t2, sizeof(ContTable) + newcap * (sizeof(int32_t) + sizeof(void*)))
                t2.cap = newcap
                t2.vals = <void**>(<char*>t2 + sizeof(ContTable))
                t2.keys = <int32_t*>(<char*>t2.vals + newcap * sizeof(void*))
                t2.n = 0
                if t != NULL:
                    memcpy(t2.keys, t.keys, sizeof(int32_t) * t.n)
                    memcpy(t2.vals, t.vals, sizeof(void*) * t.n)
                    t2.n = t.n
                t2.keys[t2.n] = sp
                t2.vals[t2.n] = c
                t2.n += 1
                cfg_store_ptr(<void**>&gr.conts, t2)
            self.n_conts += 1
        finally:
            self.cur_owner = saved
        return c

    # ---- fills: LRU clock, eviction ------------------------------------------------
    cdef void enter_fill(self) noexcept nogil:
        """Register a running fill (blocks while an eviction runs); evict first when
        the caches are over budget."""
        if self.cache_bytes > self.max_cache_bytes:
            self._evict()
        while True:
            while cfg_load_i32(&self.evicting):
                cfg_yield()
            cfg_add_i64(&self.active, 1)
            if not cfg_load_i32(&self.evicting):
                break
            cfg_add_i64(&self.active, -1)
        self.tick += 1

    cdef void _evict(self) noexcept nogil:
        """Free least recently used entries until the caches hold half the budget.

        Runs only while no fill runs: new fills wait on ``evicting``, and the
        evictor waits for the running ones (it holds no lock meanwhile, so a
        running fill can still take the lock to finish a build)."""
        cdef int32_t q, n, k
        cdef int64_t* keys
        cdef Entry* e
        cfg_rmutex_lock(&self.dfa.lock)
        if cfg_load_i32(&self.evicting) or self.cache_bytes <= self.max_cache_bytes:
            cfg_rmutex_unlock(&self.dfa.lock)
            return
        cfg_store_i32(&self.evicting, 1)
        cfg_rmutex_unlock(&self.dfa.lock)
        while cfg_add_i64(&self.active, 0) != 0:
            cfg_yield()
        cfg_rmutex_lock(&self.dfa.lock)
        n = 0
        for q in range(self.entries_hi):
            if self.entries[q] != NULL:
                n += 1
        keys = <int64_t*>malloc(sizeof(int64_t) * max(1, n))
        if keys != NULL:
            k = 0
            for q in range(self.entries_hi):
                e = self.entries[q]
                if e != NULL:
                    keys[k] = (e.last_used << 24) | q
                    k += 1
            qsort(keys, n, sizeof(int64_t), _cmp_i64)
            k = 0
            while k < n and self.cache_bytes > self.max_cache_bytes // 2:
                q = <int32_t>(keys[k] & 0xFFFFFF)
                e = self.entries[q]
                self.entries[q] = NULL
                self.cache_bytes -= e.bytes
                self._free_entry(e)
                self.n_entries -= 1
                self.evictions += 1
                k += 1
            free(keys)
        cfg_store_i32(&self.evicting, 0)
        cfg_rmutex_unlock(&self.dfa.lock)

    def cache_stats(self):
        """Sizes of the mask caches, for docs and tests."""
        return {"cached_lexer_states": self.n_entries, "groups": self.n_groups,
                "continuations": self.n_conts, "lexer_states": self.dfa.c.n_states,
                "cache_bytes": self.cache_bytes, "max_cache_bytes": self.max_cache_bytes,
                "evictions": self.evictions, "nodes_walked": self.nodes_walked,
                "slices": self.n_slices, "slice_hits": self.slice_hits,
                "slice_checks": self.slice_checks, "whole_subtree_hits": self.whole_subtree_hits}
