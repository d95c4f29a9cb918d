# cython: language_level=3
"""Byte stack, token-trie walk and token masks.

The state of a matcher is a stack indexed by *byte depth* (bytes consumed so
far, plus the bytes a trie walk has pushed speculatively on top):

* ``st_lex[d]``   lexer state after ``d`` bytes (the pending lexeme);
* ``st_nrows[d]`` number of Earley rows after ``d`` bytes (the top row is the
  one the pending lexeme started in);
* ``st_byte[d]``  the ``d``-th byte (the word-boundary rule looks at it).

Pushing a byte is one table lookup unless the lexeme ends; popping is setting
``depth`` and truncating the row stack.  The pending lexeme is empty only at
depth 0, because every pushed byte belongs to a lexeme.

Masks.  A token whose bytes stay inside the pending lexeme is allowed or not
by the lexer state ``q`` alone, so each ``q`` gets a cache entry (built once
per compiled grammar by one lexer-only walk of the whole trie):

* ``inside``: tokens every byte of which ``q`` consumes;
* deep exits: trie nodes where a byte leaves an accepting lexeme mid-token,
  with the lexer state there; at mask time each such subtree is walked with the
  parser (the row built for one exit state is reused by the others);
* depth-0 exits: first bytes that end the pending lexeme right at the token
  boundary; those tokens are allowed exactly as from the start state ``s'`` of
  the row after scanning, so they come from ``s'``'s own entry, restricted to
  those first bytes.
"""

from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset, memcpy

import numpy as np
cimport numpy as cnp

cnp.import_array()

from cfgmask._fast._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from cfgmask._fast._lexer cimport LazyDFA, lex_step, lex_end
from cfgmask._fast._earley cimport CGrammar, Rows


cdef struct QCacheC:
    uint32_t* inside        # [words]
    uint32_t* fb_exit       # [words] tokens whose first byte ends q's lexeme
    uint32_t* fb_exit_nw    # same, minus first bytes in the word-boundary set
    int32_t n_exits
    int32_t* exit_node      # deep exits, sorted by exit_state
    int32_t* exit_state
    uint8_t* exit_prev      # byte before the exit node (its parent's byte)
    uint8_t* exit_first     # first byte of the token path
    uint8_t exit_byte[256]  # depth-0 exit bytes


cdef class Runtime:
    """Everything a compiled grammar shares between its matchers."""
    cdef LazyDFA dfa
    cdef CGrammar g
    cdef object _keep
    cdef const uint8_t* node_byte
    cdef const int32_t* node_depth
    cdef const int32_t* node_token
    cdef const int32_t* node_subtree_end
    cdef const int32_t* token_same_next
    cdef const uint8_t* tok_bytes
    cdef const int64_t* tok_off
    cdef const uint8_t* tok_special
    cdef int32_t n_nodes
    cdef int32_t max_depth
    cdef int32_t n_tokens
    cdef int32_t vocab_size
    cdef int32_t words
    cdef int32_t* eos_ids
    cdef int32_t n_eos
    cdef uint8_t wb[256]
    cdef QCacheC* qc
    cdef int32_t qc_n
    cdef int32_t qc_cap
    cdef int32_t* qc_index
    cdef int32_t qc_index_cap

    def __cinit__(self, LazyDFA dfa, CGrammar g, trie, token_bytes_flat, token_offsets,
                  token_special, int vocab_size, eos_ids, word_boundary):
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
        self._keep = (nb, nd, nt, ne, ts, tb, to, tsp)
        cdef const uint8_t[::1] v_nb = nb
        cdef const int32_t[::1] v_nd = nd
        cdef const int32_t[::1] v_nt = nt
        cdef const int32_t[::1] v_ne = ne
        cdef const int32_t[::1] v_ts = ts
        cdef const uint8_t[::1] v_tb = tb
        cdef const int64_t[::1] v_to = to
        cdef const uint8_t[::1] v_tsp = tsp
        self.node_byte = &v_nb[0]
        self.node_depth = &v_nd[0]
        self.node_token = &v_nt[0]
        self.node_subtree_end = &v_ne[0]
        self.token_same_next = &v_ts[0] if ts.size else NULL
        self.tok_bytes = &v_tb[0]
        self.tok_off = &v_to[0]
        self.tok_special = &v_tsp[0] if tsp.size else NULL
        self.n_nodes = nb.shape[0]
        self.max_depth = int(nd.max()) if nd.size else 0
        self.n_tokens = tsp.shape[0]
        self.vocab_size = vocab_size
        self.words = (vocab_size + 31) // 32
        eos = [int(e) for e in eos_ids]
        self.n_eos = len(eos)
        self.eos_ids = <int32_t*>malloc(sizeof(int32_t) * max(1, self.n_eos))
        for i, e in enumerate(eos):
            self.eos_ids[i] = e
        for b in range(256):
            self.wb[b] = 0
        for b in word_boundary:
            self.wb[b] = 1
        self.qc_cap = 16
        self.qc_n = 0
        self.qc = <QCacheC*>malloc(sizeof(QCacheC) * self.qc_cap)
        self.qc_index_cap = 256
        self.qc_index = <int32_t*>malloc(sizeof(int32_t) * self.qc_index_cap)
        if self.qc == NULL or self.qc_index == NULL or self.eos_ids == NULL:
            raise MemoryError()
        for i in range(self.qc_index_cap):
            self.qc_index[i] = -1

    def __dealloc__(self):
        cdef int32_t i
        if self.qc != NULL:
            for i in range(self.qc_n):
                free(self.qc[i].inside)
                free(self.qc[i].fb_exit)
                free(self.qc[i].fb_exit_nw)
                free(self.qc[i].exit_node)
                free(self.qc[i].exit_state)
                free(self.qc[i].exit_prev)
                free(self.qc[i].exit_first)
            free(self.qc)
        free(self.qc_index)
        free(self.eos_ids)

    cdef inline void set_token(self, uint32_t* mask, int32_t tok) noexcept:
        while tok >= 0:
            mask[tok >> 5] |= (<uint32_t>1) << (tok & 31)
            tok = self.token_same_next[tok]

    cdef int _set_subtree(self, uint32_t* mask, int32_t node) noexcept:
        cdef int32_t i
        for i in range(node, self.node_subtree_end[node]):
            if self.node_token[i] >= 0:
                self.set_token(mask, self.node_token[i])
        return 0

    cdef int _clear_subtree(self, uint32_t* mask, int32_t node) noexcept:
        cdef int32_t i, tok
        for i in range(node, self.node_subtree_end[node]):
            tok = self.node_token[i]
            while tok >= 0:
                mask[tok >> 5] &= ~((<uint32_t>1) << (tok & 31))
                tok = self.token_same_next[tok]
        return 0

    cdef QCacheC* entry(self, int32_t q) except NULL:
        """The token cache of lexer state ``q``, built on first use."""
        cdef int32_t newcap, i
        if q >= self.qc_index_cap:
            newcap = self.qc_index_cap
            while newcap <= q:
                newcap *= 2
            p = <int32_t*>realloc(self.qc_index, sizeof(int32_t) * newcap)
            if p == NULL:
                raise MemoryError()
            self.qc_index = p
            for i in range(self.qc_index_cap, newcap):
                self.qc_index[i] = -1
            self.qc_index_cap = newcap
        if self.qc_index[q] < 0:
            self._build_entry(q)
        return &self.qc[self.qc_index[q]]

    cdef int _build_entry(self, int32_t q) except -1:
        cdef int32_t W = self.words
        cdef int32_t i, d, s, t, n = self.n_nodes
        cdef uint8_t b, first = 0
        cdef int32_t* ls = <int32_t*>malloc(sizeof(int32_t) * (self.max_depth + 2))
        cdef uint8_t* pb = <uint8_t*>malloc(self.max_depth + 2)
        cdef QCacheC e
        memset(&e, 0, sizeof(QCacheC))
        e.inside = <uint32_t*>malloc(sizeof(uint32_t) * W)
        e.fb_exit = <uint32_t*>malloc(sizeof(uint32_t) * W)
        e.fb_exit_nw = <uint32_t*>malloc(sizeof(uint32_t) * W)
        if ls == NULL or pb == NULL or e.inside == NULL or e.fb_exit == NULL or e.fb_exit_nw == NULL:
            raise MemoryError()
        memset(e.inside, 0, sizeof(uint32_t) * W)
        memset(e.fb_exit, 0, sizeof(uint32_t) * W)
        memset(e.fb_exit_nw, 0, sizeof(uint32_t) * W)
        ex_node, ex_state, ex_prev, ex_first = [], [], [], []
        cdef uint8_t q_acc = self.dfa.c.any_accept[q]
        try:
            ls[0] = q
            i = 1
            while i < n:
                d = self.node_depth[i]
                b = self.node_byte[i]
                s = ls[d - 1]
                pb[d] = b
                if d == 1:
                    first = b
                t = lex_step(self.dfa, s, b)
                if t != 0:
                    ls[d] = t
                    if self.node_token[i] >= 0:
                        self.set_token(e.inside, self.node_token[i])
                    i += 1
                    continue
                if self.dfa.c.any_accept[s]:
                    if d == 1:
                        if not self.dfa.c.any_accept[lex_end(self.dfa, s, self.dfa.c.class_of[b])]:
                            i = self.node_subtree_end[i]
                            continue
                        e.exit_byte[b] = 1
                        self._set_subtree(e.fb_exit, i)
                    else:
                        ex_node.append(i)
                        ex_state.append(s)
                        ex_prev.append(pb[d - 1])
                        ex_first.append(first)
                i = self.node_subtree_end[i]
        finally:
            free(ls)
            free(pb)
        # fb_exit_nw: the same tokens minus those starting with a word-boundary byte
        memcpy(e.fb_exit_nw, e.fb_exit, sizeof(uint32_t) * W)
        i = 1
        while i < n:
            if self.wb[self.node_byte[i]] and e.exit_byte[self.node_byte[i]]:
                self._clear_subtree(e.fb_exit_nw, i)
            i = self.node_subtree_end[i]
        order = sorted(range(len(ex_node)), key=lambda k: (ex_state[k], ex_node[k]))
        e.n_exits = len(order)
        cdef int32_t m = max(1, e.n_exits)
        e.exit_node = <int32_t*>malloc(sizeof(int32_t) * m)
        e.exit_state = <int32_t*>malloc(sizeof(int32_t) * m)
        e.exit_prev = <uint8_t*>malloc(m)
        e.exit_first = <uint8_t*>malloc(m)
        for i in range(e.n_exits):
            e.exit_node[i] = ex_node[order[i]]
            e.exit_state[i] = ex_state[order[i]]
            e.exit_prev[i] = ex_prev[order[i]]
            e.exit_first[i] = ex_first[order[i]]
        if self.qc_n == self.qc_cap:
            pq = <QCacheC*>realloc(self.qc, sizeof(QCacheC) * self.qc_cap * 2)
            if pq == NULL:
                raise MemoryError()
            self.qc = pq
            self.qc_cap *= 2
        self.qc[self.qc_n] = e
        self.qc_index[q] = self.qc_n
        self.qc_n += 1
        return 0

    def cache_stats(self):
        """(cached lexer states, total deep exits, lexer states) for docs and tests."""
        total = 0
        for i in range(self.qc_n):
            total += self.qc[i].n_exits
        return self.qc_n, total, self.dfa.c.n_states


cdef class MatcherCore:
    """One parse in progress: the byte stack over shared Runtime tables."""
    cdef Runtime rt
    cdef Rows rows
    cdef int32_t* st_lex
    cdef int32_t* st_nrows
    cdef uint8_t* st_byte
    cdef int32_t depth
    cdef int32_t cap
    cdef list tok_depths      # byte depth before each consumed token (and -1 for EOS)
    cdef bint finished
    cdef public bint use_cache

    def __cinit__(self, Runtime rt, Rows rows):
        self.rt = rt
        self.rows = rows
        self.cap = 256
        self.st_lex = <int32_t*>malloc(sizeof(int32_t) * self.cap)
        self.st_nrows = <int32_t*>malloc(sizeof(int32_t) * self.cap)
        self.st_byte = <uint8_t*>malloc(self.cap)
        if self.st_lex == NULL or self.st_nrows == NULL or self.st_byte == NULL:
            raise MemoryError()
        self.use_cache = True
        self.depth = 0
        self.tok_depths = []
        self.finished = False

    def __dealloc__(self):
        free(self.st_lex)
        free(self.st_nrows)
        free(self.st_byte)

    cpdef reset(self):
        self.rows.reset()
        self.depth = 0
        self.st_lex[0] = self.rows.row_lex_start[0]
        self.st_nrows[0] = 1
        self.st_byte[0] = 0
        self.tok_depths = []
        self.finished = False

    cdef int _reserve(self, int32_t need) except -1:
        cdef int32_t newcap
        if need < self.cap:
            return 0
        newcap = self.cap
        while newcap <= need:
            newcap *= 2
        p1 = <int32_t*>realloc(self.st_lex, sizeof(int32_t) * newcap)
        if p1 == NULL:
            raise MemoryError()
        self.st_lex = p1
        p2 = <int32_t*>realloc(self.st_nrows, sizeof(int32_t) * newcap)
        if p2 == NULL:
            raise MemoryError()
        self.st_nrows = p2
        p3 = <uint8_t*>realloc(self.st_byte, newcap)
        if p3 == NULL:
            raise MemoryError()
        self.st_byte = p3
        self.cap = newcap
        return 0

    cdef inline void _pop_to(self, int32_t d) noexcept:
        self.depth = d
        self.rows.n_rows = self.st_nrows[d]

    cdef inline void _push(self, int32_t lex, int32_t nrows, uint8_t b) noexcept:
        cdef int32_t d = self.depth + 1
        self.st_lex[d] = lex
        self.st_nrows[d] = nrows
        self.st_byte[d] = b
        self.depth = d

    cdef int push_byte(self, uint8_t b) except -1:
        """1 if ``b`` is accepted (pushed), 0 if rejected (stack unchanged). Needs capacity."""
        cdef int32_t d = self.depth
        cdef int32_t s = self.st_lex[d]
        cdef LazyDFA dfa = self.rt.dfa
        cdef int32_t t = lex_step(dfa, s, b)
        cdef int32_t s0
        if t != 0:
            self._push(t, self.st_nrows[d], b)
            return 1
        if not dfa.c.any_accept[s]:
            return 0
        if self.rt.wb[b] and self.rt.wb[self.st_byte[d]]:
            return 0
        s = lex_end(dfa, s, dfa.c.class_of[b])
        if not dfa.c.any_accept[s]:
            return 0
        self.rows.push_scan(s)
        s0 = self.rows.row_lex_start[self.rows.n_rows - 1]
        t = lex_step(dfa, s0, b)
        if t == 0:
            self.rows.n_rows = self.st_nrows[d]
            return 0
        self._push(t, self.rows.n_rows, b)
        return 1

    cdef int walk(self, int32_t lo, int32_t hi, uint32_t* mask) except -1:
        """Walk trie nodes ``[lo, hi)`` (one subtree, or siblings) from the current top."""
        cdef Runtime rt = self.rt
        cdef int32_t base = self.depth
        cdef int32_t off = base - (rt.node_depth[lo] - 1)
        cdef int32_t i = lo
        while i < hi:
            self._pop_to(rt.node_depth[i] - 1 + off)
            if self.push_byte(rt.node_byte[i]):
                if rt.node_token[i] >= 0:
                    rt.set_token(mask, rt.node_token[i])
                i += 1
            else:
                i = rt.node_subtree_end[i]
        self._pop_to(base)
        return 0

    cdef int _walk_exits(self, QCacheC* e, uint32_t* mask, const uint8_t* only_first, uint8_t prev) except -1:
        """Walk the deep-exit subtrees of ``e`` from the current top (optionally filtered by first byte)."""
        cdef Runtime rt = self.rt
        cdef int32_t base = self.depth
        cdef int32_t nrows = self.st_nrows[base]
        cdef int32_t k, node
        for k in range(e.n_exits):
            if only_first != NULL:
                if not only_first[e.exit_first[k]]:
                    continue
                if rt.wb[prev] and rt.wb[e.exit_first[k]]:
                    continue
            node = e.exit_node[k]
            self._push(e.exit_state[k], nrows, e.exit_prev[k])
            self.walk(node, rt.node_subtree_end[node], mask)
            self._pop_to(base)
        return 0

    cdef int _walk_first_bytes(self, const uint8_t* first, uint32_t* mask) except -1:
        """Walk, from the current top, the root subtrees whose byte is in ``first``."""
        cdef Runtime rt = self.rt
        cdef int32_t i = 1
        while i < rt.n_nodes:
            if first[rt.node_byte[i]]:
                self.walk(i, rt.node_subtree_end[i], mask)
            i = rt.node_subtree_end[i]
        return 0

    cdef int fill(self, uint32_t* mask) except -1:
        """Write the allowed-token bitmask (``words`` uint32) for the current state."""
        cdef Runtime rt = self.rt
        cdef int32_t W = rt.words
        cdef int32_t d = self.depth
        cdef int32_t q = self.st_lex[d]
        cdef int32_t nr = self.st_nrows[d]
        cdef int32_t sp, w
        cdef QCacheC* e
        cdef QCacheC* e2
        cdef const uint32_t* fb
        cdef uint8_t prev = self.st_byte[d]
        memset(mask, 0, sizeof(uint32_t) * W)
        if self.finished:
            self._set_eos(mask)
            return 0
        self._reserve(d + rt.max_depth + 4)
        if not self.use_cache:
            self.walk(1, rt.n_nodes, mask)
        else:
            e = rt.entry(q)
            memcpy(mask, e.inside, sizeof(uint32_t) * W)
            self._walk_exits(e, mask, NULL, 0)
            if d > 0 and rt.dfa.c.any_accept[q] and rt.dfa.c.restricted[q]:
                # a trailing lookahead makes the scan depend on the next byte: walk
                # the first-byte subtrees that end the lexeme with the parser
                self._walk_first_bytes(e.exit_byte, mask)
            elif d > 0 and rt.dfa.c.any_accept[q]:
                # the pending lexeme may end right at the token boundary
                self.rows.push_scan(q)
                sp = self.rows.row_lex_start[self.rows.n_rows - 1]
                if sp != 0:
                    e2 = rt.entry(sp)
                    e = rt.entry(q)  # entry(sp) may have moved the cache array
                    fb = e.fb_exit_nw if rt.wb[prev] else e.fb_exit
                    for w in range(W):
                        mask[w] |= e2.inside[w] & fb[w]
                    self._push(sp, self.rows.n_rows, prev)
                    self._walk_exits(e2, mask, e.exit_byte, prev)
                self._pop_to(d)
        if self._accepting():
            self._set_eos(mask)
        return 0

    cdef void _set_eos(self, uint32_t* mask) noexcept:
        cdef int32_t i, t
        for i in range(self.rt.n_eos):
            t = self.rt.eos_ids[i]
            mask[t >> 5] |= (<uint32_t>1) << (t & 31)

    cdef bint _accepting(self) except -1:
        """EOS rule: the pending lexeme is accepting and, scanned, completes the start rule."""
        cdef int32_t d = self.depth
        cdef int32_t s = self.st_lex[d]
        cdef bint acc
        if self.finished:
            return True
        if d == 0:
            return self.rows.row_accepting[0]
        if not self.rt.dfa.c.any_accept[s]:
            return False
        s = lex_end(self.rt.dfa, s, self.rt.dfa.c.n_classes)
        if not self.rt.dfa.c.any_accept[s]:
            return False
        self.rows.push_scan(s)
        acc = self.rows.row_accepting[self.rows.n_rows - 1]
        self._pop_to(d)
        return acc

    # ---- Python API (the Matcher wrapper in compiler.py calls these) ----
    def fill_row(self, cnp.ndarray arr, Py_ssize_t row):
        """Fill row ``row`` of a validated C-contiguous int32 array; True if any bit is set.

        The caller (``Matcher.fill_bitmask``) has checked dtype, contiguity and
        width; going through the raw data pointer avoids acquiring a buffer per call.
        """
        cdef Py_ssize_t width = arr.shape[arr.ndim - 1]
        cdef uint32_t* out = <uint32_t*>cnp.PyArray_DATA(arr) + row * width
        cdef int32_t w
        cdef uint32_t any = 0
        self.fill(out)
        for w in range(self.rt.words):
            any |= out[w]
        for w in range(self.rt.words, width):
            out[w] = 0
        return any != 0

    def accepting(self):
        return bool(self._accepting())

    def next_bytes(self):
        """The bytes that may come next (the byte-level mask), as a ``bytes`` object."""
        cdef int b
        cdef int32_t d = self.depth
        out = bytearray()
        if self.finished:
            return bytes(out)
        self._reserve(d + 3)
        for b in range(256):
            if self.push_byte(<uint8_t>b):
                out.append(b)
                self._pop_to(d)
        return bytes(out)

    def is_finished(self):
        return bool(self.finished)

    def try_consume(self, int tok):
        """Consume token ``tok``; False (state unchanged) if the mask would not allow it."""
        cdef Runtime rt = self.rt
        cdef int32_t d0 = self.depth
        cdef int64_t a, z, j
        if self.finished:
            return False
        for i in range(rt.n_eos):
            if rt.eos_ids[i] == tok:
                if self._accepting():
                    self.tok_depths.append(-1 - d0)
                    self.finished = True
                    return True
                return False
        if tok < 0 or tok >= rt.n_tokens or rt.tok_special[tok]:
            return False
        a = rt.tok_off[tok]
        z = rt.tok_off[tok + 1]
        self._reserve(d0 + (z - a) + 2)
        for j in range(a, z):
            if not self.push_byte(rt.tok_bytes[j]):
                self._pop_to(d0)
                return False
        self.tok_depths.append(d0)
        return True

    def consume_bytes(self, const uint8_t[::1] data):
        """Push raw bytes (for byte-level tests); returns how many were accepted."""
        cdef int32_t d0 = self.depth
        cdef int64_t j
        self._reserve(d0 + data.shape[0] + 2)
        for j in range(data.shape[0]):
            if not self.push_byte(data[j]):
                return j
        return data.shape[0]

    def rollback(self, int n):
        if n < 0 or n > len(self.tok_depths):
            raise ValueError(f"cannot roll back {n} tokens: {len(self.tok_depths)} consumed")
        if n == 0:
            return
        # wraparound is off in this module: index from the front
        k = len(self.tok_depths) - n
        d = self.tok_depths[k]
        del self.tok_depths[k:]
        if d < 0:
            d = -1 - d
        self.finished = False
        self._pop_to(d)

    def n_consumed(self):
        return len(self.tok_depths)

    def prefix(self):
        return bytes(self.st_byte[i] for i in range(1, self.depth + 1))

    def copy(self):
        cdef MatcherCore m = MatcherCore.__new__(MatcherCore, self.rt, self.rows.clone())
        m._reserve(self.depth + 2)
        memcpy(m.st_lex, self.st_lex, sizeof(int32_t) * (self.depth + 1))
        memcpy(m.st_nrows, self.st_nrows, sizeof(int32_t) * (self.depth + 1))
        memcpy(m.st_byte, self.st_byte, self.depth + 1)
        m.depth = self.depth
        m.tok_depths = list(self.tok_depths)
        m.finished = self.finished
        m.use_cache = self.use_cache
        return m

    def describe(self):
        """Readable state for DeadEnd messages."""
        d = self.depth
        return {"bytes": d, "rows": self.st_nrows[d], "lexer_state": self.st_lex[d],
                "finished": bool(self.finished)}
