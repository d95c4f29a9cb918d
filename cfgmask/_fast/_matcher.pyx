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

from libc.stdlib cimport malloc, calloc, realloc, free, qsort
from libc.string cimport memset, memcpy

import numpy as np
cimport numpy as cnp

cnp.import_array()

from cfgmask._fast._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from cfgmask._fast._lexer cimport LazyDFA, lex_step, lex_end
from cfgmask._fast._earley cimport CGrammar, Rows


cdef enum:
    MEMO_SIZE = 4096     # memo slots per matcher (a power of two)

cdef struct TokSet:
    int32_t n          # number of (word index, bits) pairs; -1 = dense (``bits`` has ``words`` entries)
    int32_t* idx
    uint32_t* bits


cdef struct Group:
    # Trie subtrees whose first byte ends a lexeme accepted by one terminal set.
    int32_t scan_state   # a lexer state accepting exactly that set (what push_scan needs)
    int32_t n_nodes
    int32_t* nodes       # forest nodes whose byte ends the lexeme and starts the next one
    int32_t n_cross
    int32_t* cross       # cross slices all of whose tokens' second bytes are in this group
    int32_t n_conts
    int32_t cap_conts
    int32_t* cont_key    # next-lexeme start state of each cached continuation
    void** cont_val      # Cont*


cdef struct Cont:
    # What a group's subtrees do from one next-lexeme start state.
    TokSet bits          # tokens whose remaining bytes stay inside the next lexeme
    int32_t n_groups
    Group** groups       # where the next lexeme ends again inside a token


cdef struct Entry:
    # Per lexer state q: everything of the mask that only depends on q.
    TokSet inside        # tokens every byte of which q consumes
    int32_t n_groups
    Group** groups       # tokens that end q's lexeme after their first byte
    uint32_t* fb_exit    # [words] tokens whose first byte ends q's lexeme; NULL if none
    uint32_t* fb_exit_nw # the same, minus first bytes in the word-boundary set
    uint8_t exit_byte[256]


from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC


cdef inline int64_t _now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec


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


cdef class Runtime:
    """Everything a compiled grammar shares between its matchers: the trie,
    the token bytes and the mask caches (entries, groups, continuations)."""
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
    # the forest (slices.py): every token once, in the filtered trie of its slice or the rest trie
    cdef const uint8_t* f_byte
    cdef const int32_t* f_depth
    cdef const int32_t* f_token
    cdef const int32_t* f_send
    cdef int32_t f_n
    cdef uint64_t* sub_bytes          # [f_n * 4] bytes on the edges of each forest node's subtree
    # slices
    cdef int32_t n_slices
    cdef int32_t* sl_lo               # own trie of slice i: forest nodes [lo, hi), lo its root
    cdef int32_t* sl_hi
    cdef int32_t* sl_parent           # a slice with a smaller language, or -1
    cdef int32_t* sl_lead             # cross slices: the ignore byte, else -1
    cdef int32_t* sl_split            # cross slices: forest node of the lead byte, else -1
    cdef int32_t* sl_split_children   # cross slices: number of children of the split node
    cdef TokSet* sl_bits              # all tokens of slice i
    cdef const int32_t** sl_dfa       # [n_states * 256] language of slice i (-1 dead), start 0
    cdef const int32_t** sl_tail      # cross slices: language after the lead byte
    cdef int32_t* sl_reps_n           # byte representatives for the containment product
    cdef uint8_t* sl_reps             # [n_slices * 256]
    cdef int32_t* tl_reps_n
    cdef uint8_t* tl_reps
    cdef int32_t rest_lo
    cdef int32_t rest_hi
    cdef uint64_t* sl_known           # [max lexer states] bit i: slice i checked; bit 32+i: tail i
    cdef uint64_t* sl_in              # [max lexer states] bit i: slice i contained; bit 32+i: tail i
    cdef int64_t* bfs                 # containment product scratch
    cdef int64_t bfs_cap
    cdef int64_t* seen_pairs
    cdef int64_t seen_cap
    cdef int64_t n_seen
    cdef uint32_t* seen_gen
    cdef uint32_t seen_stamp
    cdef public int64_t slice_hits
    cdef public int64_t slice_checks
    cdef int32_t n_nodes
    cdef int32_t max_depth
    cdef int32_t n_tokens
    cdef int32_t vocab_size
    cdef int32_t words
    cdef int32_t* eos_ids
    cdef int32_t n_eos
    cdef uint8_t wb[256]
    cdef uint64_t class_bytes[256 * 4]  # bytes of each byte class
    cdef TokSet first_byte[256]         # tokens whose first byte is b
    # caches
    cdef Entry** entries              # [entries_cap], by lexer state
    cdef int32_t entries_cap
    cdef int32_t n_entries
    cdef void** owned                 # every malloc'd cache object (Group*, Cont*), freed at the end
    cdef int64_t n_owned
    cdef int64_t owned_cap
    cdef int64_t n_groups
    cdef int64_t n_conts
    cdef int64_t cache_bytes
    cdef uint64_t* loop_bits          # [loop_cap * 4] bytes on which a lexer state loops to itself
    cdef uint8_t* loop_known
    cdef int32_t loop_cap
    cdef int32_t* aid_state           # accept-set id -> a lexer state with that accepting set
    cdef int32_t aid_cap
    # build scratch
    cdef int32_t* ls
    cdef uint8_t* pb
    cdef uint32_t* dense              # all zero between builds
    cdef int32_t* touched             # [words] indices of the non-zero words of dense
    cdef int32_t n_touched
    cdef int64_t* ex_keys
    cdef int64_t ex_n
    cdef int64_t ex_cap
    cdef public int64_t whole_subtree_hits
    cdef public int64_t nodes_walked
    cdef public int64_t entry_ns
    cdef public int64_t cont_ns
    cdef public int64_t cont_nodes
    cdef public int64_t cont_nodes_ignore
    cdef public bint use_subtree_accept

    def __cinit__(self, LazyDFA dfa, CGrammar g, trie, token_bytes_flat, token_offsets,
                  token_special, int vocab_size, eos_ids, word_boundary, slice_tables=None):
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
        if slice_tables is not None:
            fo = slice_tables.forest
            fb = np.ascontiguousarray(fo["node_byte"], dtype=np.uint8)
            fd = np.ascontiguousarray(fo["node_depth"], dtype=np.int32)
            ft = np.ascontiguousarray(fo["node_token"], dtype=np.int32)
            fe = np.ascontiguousarray(fo["node_subtree_end"], dtype=np.int32)
        else:
            fb, fd, ft, fe = nb, nd, nt, ne
        self._keep = [nb, nd, nt, ne, ts, tb, to, tsp, fb, fd, ft, fe]
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
        v_nb = fb
        v_nd = fd
        v_nt = ft
        v_ne = fe
        self.f_byte = &v_nb[0]
        self.f_depth = &v_nd[0]
        self.f_token = &v_nt[0]
        self.f_send = &v_ne[0]
        self.f_n = fb.shape[0]
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
        cdef int b, c
        for b in range(256):
            self.wb[b] = 0
        for b in word_boundary:
            self.wb[b] = 1
        memset(self.class_bytes, 0, sizeof(self.class_bytes))
        for b in range(256):
            c = dfa.c.class_of[b]
            self.class_bytes[c * 4 + (b >> 6)] |= (<uint64_t>1) << (b & 63)
        self.entries_cap = 256
        self.entries = <Entry**>calloc(self.entries_cap, sizeof(Entry*))
        self.owned_cap = 1024
        self.owned = <void**>malloc(sizeof(void*) * self.owned_cap)
        self.loop_cap = 256
        self.loop_bits = <uint64_t*>calloc(self.loop_cap * 4, sizeof(uint64_t))
        self.loop_known = <uint8_t*>calloc(self.loop_cap, 1)
        self.aid_cap = 256
        self.aid_state = <int32_t*>malloc(sizeof(int32_t) * self.aid_cap)
        self.ls = <int32_t*>malloc(sizeof(int32_t) * (self.max_depth + 2))
        self.pb = <uint8_t*>malloc(self.max_depth + 2)
        self.dense = <uint32_t*>calloc(max(1, self.words), sizeof(uint32_t))
        self.touched = <int32_t*>malloc(sizeof(int32_t) * max(1, self.words))
        self.ex_cap = 1024
        self.ex_keys = <int64_t*>malloc(sizeof(int64_t) * self.ex_cap)
        self.sub_bytes = <uint64_t*>calloc(<size_t>self.f_n * 4, sizeof(uint64_t))
        self.sl_known = <uint64_t*>calloc(dfa.c.max_states, sizeof(uint64_t))
        self.sl_in = <uint64_t*>calloc(dfa.c.max_states, sizeof(uint64_t))
        self.bfs_cap = 1024
        self.bfs = <int64_t*>malloc(sizeof(int64_t) * self.bfs_cap)
        self.seen_cap = 1024
        self.seen_pairs = <int64_t*>malloc(sizeof(int64_t) * self.seen_cap)
        self.seen_gen = <uint32_t*>calloc(self.seen_cap, sizeof(uint32_t))
        if (self.entries == NULL or self.owned == NULL or self.loop_bits == NULL
                or self.loop_known == NULL or self.aid_state == NULL or self.ls == NULL
                or self.pb == NULL or self.dense == NULL or self.touched == NULL or self.ex_keys == NULL
                or self.sub_bytes == NULL or self.eos_ids == NULL or self.sl_known == NULL
                or self.sl_in == NULL or self.bfs == NULL or self.seen_pairs == NULL
                or self.seen_gen == NULL):
            raise MemoryError()
        self._subtree_bytes()
        self.use_subtree_accept = False
        self._first_byte_sets()
        self._setup_slices(slice_tables)
        self.cache_bytes = 0

    cdef int _setup_slices(self, tables) except -1:
        """Copy the slice tables (``cfgmask/slices.py``) into flat C arrays."""
        cdef int32_t n = 0 if tables is None else tables.n
        cdef int32_t i, j, c, k
        cdef const int32_t[::1] v
        self.n_slices = n
        if tables is None:
            self.rest_lo = 0
            self.rest_hi = self.f_n
        else:
            self.rest_lo = tables.rest_lo
            self.rest_hi = tables.rest_hi
        if n > 32:
            raise ValueError("at most 32 slices")
        m = max(1, n)
        self.sl_lo = <int32_t*>calloc(m, sizeof(int32_t))
        self.sl_hi = <int32_t*>calloc(m, sizeof(int32_t))
        self.sl_parent = <int32_t*>calloc(m, sizeof(int32_t))
        self.sl_lead = <int32_t*>calloc(m, sizeof(int32_t))
        self.sl_split = <int32_t*>calloc(m, sizeof(int32_t))
        self.sl_split_children = <int32_t*>calloc(m, sizeof(int32_t))
        self.sl_bits = <TokSet*>calloc(m, sizeof(TokSet))
        self.sl_dfa = <const int32_t**>calloc(m, sizeof(int32_t*))
        self.sl_tail = <const int32_t**>calloc(m, sizeof(int32_t*))
        self.sl_reps_n = <int32_t*>calloc(m, sizeof(int32_t))
        self.sl_reps = <uint8_t*>calloc(m * 256, 1)
        self.tl_reps_n = <int32_t*>calloc(m, sizeof(int32_t))
        self.tl_reps = <uint8_t*>calloc(m * 256, 1)
        if (self.sl_lo == NULL or self.sl_hi == NULL or self.sl_parent == NULL or self.sl_lead == NULL
                or self.sl_split == NULL or self.sl_split_children == NULL or self.sl_bits == NULL
                or self.sl_dfa == NULL or self.sl_tail == NULL or self.sl_reps_n == NULL
                or self.sl_reps == NULL or self.tl_reps_n == NULL or self.tl_reps == NULL):
            raise MemoryError()
        if n == 0:
            return 0
        bits = tables.bits()
        cdef const int32_t[:, ::1] vb = bits
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
            v = d
            self.sl_dfa[i] = &v[0]
            self.sl_reps_n[i] = self._byte_reps(sl.dfa.trans, &self.sl_reps[i * 256])
            self.sl_lead[i] = -1
            self.sl_split[i] = -1
            if sl.lead is not None:
                self.sl_lead[i] = sl.lead
                d = np.ascontiguousarray(sl.tail.trans, dtype=np.int32).reshape(-1)
                self._keep.append(d)
                v = d
                self.sl_tail[i] = &v[0]
                self.tl_reps_n[i] = self._byte_reps(sl.tail.trans, &self.tl_reps[i * 256])
                # the own trie is root -> lead -> the starts of the tail
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

    cdef int32_t _byte_reps(self, trans, uint8_t* out) except -1:
        """Bytes that are distinct for the containment product: one per class of
        (lexer byte class, slice-automaton column)."""
        cols = np.ascontiguousarray(np.asarray(trans, dtype=np.int32).T)   # [256, n_states]
        seen = {}
        cdef int32_t n = 0
        cdef int b
        for b in range(256):
            if (cols[b] < 0).all():
                continue
            key = (self.dfa.c.class_of[b], cols[b].tobytes())
            if key not in seen:
                seen[key] = b
                out[n] = <uint8_t>b
                n += 1
        return n

    cdef bint _contained(self, int32_t q, int32_t i, bint tail) except -1:
        """Whether every string of slice ``i``'s language (its tail's, for ``tail``)
        keeps a lexeme in state ``q`` alive: the product of the slice automaton and
        the lexer from ``(0, q)`` never reaches a dead lexer state.  Cached."""
        cdef uint64_t bit = (<uint64_t>1) << (i + (32 if tail else 0))
        if self.sl_known[q] & bit:
            return (self.sl_in[q] & bit) != 0
        cdef const int32_t* tr = self.sl_tail[i] if tail else self.sl_dfa[i]
        cdef const uint8_t* reps = &self.tl_reps[i * 256] if tail else &self.sl_reps[i * 256]
        cdef int32_t nreps = self.tl_reps_n[i] if tail else self.sl_reps_n[i]
        cdef int64_t top = 0, pair, mask, h, newcap
        cdef int32_t a, p, a2, p2, r
        cdef uint8_t b
        cdef bint ok = True
        self.slice_checks += 1
        if q == 0:
            ok = False
        else:
            self._seen_clear()
            self.bfs[0] = q          # pair (0, q)
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
                            newcap = self.bfs_cap * 2
                            nb = <int64_t*>realloc(self.bfs, sizeof(int64_t) * newcap)
                            if nb == NULL:
                                raise MemoryError()
                            self.bfs = nb
                            self.bfs_cap = newcap
                        self.bfs[top] = pair
                        top += 1
        self.sl_known[q] |= bit
        if ok:
            self.sl_in[q] |= bit
        return ok

    cdef void _seen_clear(self) noexcept:
        # a new generation empties the visited set without touching it
        self.seen_stamp += 1
        if self.seen_stamp == 0:
            memset(self.seen_gen, 0, sizeof(uint32_t) * self.seen_cap)
            self.seen_stamp = 1
        self.n_seen = 0

    cdef bint _seen_add(self, int64_t key) except -1:
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
            self.seen_cap *= 2
            self.seen_pairs = <int64_t*>malloc(sizeof(int64_t) * self.seen_cap)
            self.seen_gen = <uint32_t*>calloc(self.seen_cap, sizeof(uint32_t))
            if self.seen_pairs == NULL or self.seen_gen == NULL:
                raise MemoryError()
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

    cdef void _subtree_bytes(self) noexcept:
        """``sub_bytes[i]``: the bytes of forest node ``i`` and of every node below it."""
        cdef int32_t n = self.f_n
        cdef int32_t* parent = <int32_t*>malloc(sizeof(int32_t) * max(1, n))
        cdef int32_t* stack = <int32_t*>malloc(sizeof(int32_t) * (self.max_depth + 2))
        cdef int32_t i, d, p, w
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

    cdef int _first_byte_sets(self) except -1:
        cdef int32_t i = 1, j
        memset(self.first_byte, 0, sizeof(self.first_byte))
        while i < self.n_nodes:
            for j in range(i, self.node_subtree_end[i]):
                if self.node_token[j] >= 0:
                    self._mark(self.node_token[j])
            self._freeze(&self.first_byte[self.node_byte[i]])
            i = self.node_subtree_end[i]
        return 0

    def __dealloc__(self):
        cdef int64_t i
        for i in range(256):
            free(self.first_byte[i].idx)
            free(self.first_byte[i].bits)
        if self.entries != NULL:
            for i in range(self.entries_cap):
                if self.entries[i] != NULL:
                    self._free_entry(self.entries[i])
            free(self.entries)
        if self.owned != NULL:
            for i in range(self.n_owned):
                free(self.owned[i])
            free(self.owned)
        free(self.eos_ids)
        free(self.loop_bits)
        free(self.loop_known)
        free(self.aid_state)
        free(self.ls)
        free(self.pb)
        free(self.dense)
        free(self.touched)
        free(self.ex_keys)
        free(self.sub_bytes)
        free(self.sl_known)
        free(self.sl_in)
        free(self.bfs)
        free(self.seen_pairs)
        free(self.seen_gen)
        if self.sl_bits != NULL:
            for i in range(self.n_slices):
                free(self.sl_bits[i].idx)
                free(self.sl_bits[i].bits)
        free(self.sl_bits)
        free(self.sl_lo)
        free(self.sl_hi)
        free(self.sl_parent)
        free(self.sl_lead)
        free(self.sl_split)
        free(self.sl_split_children)
        free(self.sl_dfa)
        free(self.sl_tail)
        free(self.sl_reps_n)
        free(self.sl_reps)
        free(self.tl_reps_n)
        free(self.tl_reps)

    cdef void _free_entry(self, Entry* e) noexcept:
        free(e.inside.idx)
        free(e.inside.bits)
        free(e.fb_exit)
        free(e.fb_exit_nw)
        free(e)

    # ---- small helpers ---------------------------------------------------
    cdef inline void set_token(self, uint32_t* mask, int32_t tok) noexcept nogil:
        while tok >= 0:
            mask[tok >> 5] |= (<uint32_t>1) << (tok & 31)
            tok = self.token_same_next[tok]

    cdef void _set_subtree(self, uint32_t* mask, int32_t node) noexcept nogil:
        cdef int32_t i
        for i in range(node, self.node_subtree_end[node]):
            if self.node_token[i] >= 0:
                self.set_token(mask, self.node_token[i])

    cdef void _clear_subtree(self, uint32_t* mask, int32_t node) noexcept nogil:
        cdef int32_t i, tok
        for i in range(node, self.node_subtree_end[node]):
            tok = self.node_token[i]
            while tok >= 0:
                mask[tok >> 5] &= ~((<uint32_t>1) << (tok & 31))
                tok = self.token_same_next[tok]

    cdef int _own(self, void* p) except -1:
        cdef void** q
        if p == NULL:
            raise MemoryError()
        if self.n_owned == self.owned_cap:
            q = <void**>realloc(self.owned, sizeof(void*) * self.owned_cap * 2)
            if q == NULL:
                raise MemoryError()
            self.owned = q
            self.owned_cap *= 2
        self.owned[self.n_owned] = p
        self.n_owned += 1
        return 0

    # ---- build scratch: a dense bitmask plus the list of its non-zero words -------
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

    cdef int _freeze(self, TokSet* ts) except -1:
        """Move the scratch into ``ts`` (sparse when that is smaller) and clear it."""
        cdef int32_t W = self.words
        cdef int32_t k, w, nz = self.n_touched
        if nz * 2 >= W:
            ts.n = -1
            ts.idx = NULL
            ts.bits = <uint32_t*>malloc(sizeof(uint32_t) * max(1, W))
            if ts.bits == NULL:
                raise MemoryError()
            memcpy(ts.bits, self.dense, sizeof(uint32_t) * W)
            memset(self.dense, 0, sizeof(uint32_t) * W)
            self.cache_bytes += 4 * W
        else:
            ts.n = nz
            ts.idx = <int32_t*>malloc(sizeof(int32_t) * max(1, nz))
            ts.bits = <uint32_t*>malloc(sizeof(uint32_t) * max(1, nz))
            if ts.idx == NULL or ts.bits == NULL:
                raise MemoryError()
            for k in range(nz):
                w = self.touched[k]
                ts.idx[k] = w
                ts.bits[k] = self.dense[w]
                self.dense[w] = 0
            self.cache_bytes += 8 * nz
        self.n_touched = 0
        return 0

    cdef bint _loops_on_subtree(self, int32_t s, int32_t node) except -1:
        """True when ``s`` steps to itself on every byte of ``node``'s subtree, so every
        token below is allowed without walking it (whole-subtree accept)."""
        cdef int32_t c, newcap
        cdef int w
        cdef const uint64_t* sb
        cdef uint64_t* lb
        if s >= self.loop_cap:
            newcap = self.loop_cap
            while newcap <= s:
                newcap *= 2
            lb = <uint64_t*>realloc(self.loop_bits, sizeof(uint64_t) * newcap * 4)
            if lb == NULL:
                raise MemoryError()
            self.loop_bits = lb
            p = <uint8_t*>realloc(self.loop_known, newcap)
            if p == NULL:
                raise MemoryError()
            self.loop_known = p
            memset(&self.loop_bits[<int64_t>self.loop_cap * 4], 0, sizeof(uint64_t) * (newcap - self.loop_cap) * 4)
            memset(&self.loop_known[self.loop_cap], 0, newcap - self.loop_cap)
            self.loop_cap = newcap
        if not self.loop_known[s]:
            for c in range(self.dfa.c.n_classes):
                if lex_step(self.dfa, s, self._class_rep(c)) == s:
                    for w in range(4):
                        self.loop_bits[<int64_t>s * 4 + w] |= self.class_bytes[c * 4 + w]
            self.loop_known[s] = 1
        sb = &self.sub_bytes[<int64_t>node * 4]
        lb = &self.loop_bits[<int64_t>s * 4]
        return ((sb[0] & ~lb[0]) | (sb[1] & ~lb[1]) | (sb[2] & ~lb[2]) | (sb[3] & ~lb[3])) == 0

    cdef inline uint8_t _class_rep(self, int32_t c) noexcept:
        cdef int w, b
        for w in range(4):
            if self.class_bytes[c * 4 + w]:
                for b in range(64):
                    if (self.class_bytes[c * 4 + w] >> b) & 1:
                        return <uint8_t>(w * 64 + b)
        return 0

    cdef int _add_exit(self, int32_t scan_state, int32_t node) except -1:
        cdef int32_t aid = self.dfa.c.accept_id[scan_state]
        cdef int32_t newcap
        if aid >= self.aid_cap:
            newcap = self.aid_cap
            while newcap <= aid:
                newcap *= 2
            p = <int32_t*>realloc(self.aid_state, sizeof(int32_t) * newcap)
            if p == NULL:
                raise MemoryError()
            self.aid_state = p
            self.aid_cap = newcap
        self.aid_state[aid] = scan_state
        if self.ex_n == self.ex_cap:
            q = <int64_t*>realloc(self.ex_keys, sizeof(int64_t) * self.ex_cap * 2)
            if q == NULL:
                raise MemoryError()
            self.ex_keys = q
            self.ex_cap *= 2
        self.ex_keys[self.ex_n] = ((<int64_t>aid) << 32) | node
        self.ex_n += 1
        return 0

    cdef int _lex_walk(self, int32_t lo, int32_t hi, int32_t q0, Entry* top) except -1:
        """Lexer-only walk of the sibling subtrees ``[lo, hi)`` from lexer state ``q0``.

        Tokens every byte of which the lexer consumes are marked in the
        scratch; nodes whose byte ends an accepting lexeme go to the exit list
        (``_add_exit``), keyed by the terminal set that accepts it.  Exits
        right at the first byte are only possible when ``q0`` is accepting,
        i.e. for an entry (``top``): they become its first-byte exits.
        """
        cdef LazyDFA dfa = self.dfa
        cdef const int32_t* depth = self.f_depth
        cdef const uint8_t* byte = self.f_byte
        cdef const int32_t* send = self.f_send
        cdef const int32_t* tokn = self.f_token
        cdef const int32_t* trans = dfa.c.trans
        cdef const uint8_t* cls = dfa.c.class_of
        cdef const uint8_t* anyacc = dfa.c.any_accept
        cdef int64_t nc = dfa.c.n_classes
        cdef int32_t off = depth[lo] - 1
        cdef int32_t i = lo, d, s, t, se
        cdef int64_t walked = 0
        cdef uint8_t b
        cdef int32_t* ls = self.ls
        cdef uint8_t* pb = self.pb
        cdef bint subtree_accept = self.use_subtree_accept
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
            t = trans[s * nc + cls[b]] - 1
            if t < 0:
                t = dfa.fill(s, b)
            if t != 0:
                ls[d] = t
                pb[d] = b
                if tokn[i] >= 0:
                    self._mark(tokn[i])
                i += 1
                continue
            if anyacc[s]:
                se = lex_end(dfa, s, cls[b])
                if anyacc[se]:
                    if d == 1:
                        if top != NULL:
                            top.exit_byte[b] = 1
                    elif not (self.wb[pb[d - 1]] and self.wb[b]):
                        self._add_exit(se, i)
            i = send[i]
        self.nodes_walked += walked
        return 0

    cdef int _groups_from_exits(self, int32_t* n_out, Group*** out) except -1:
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
        arr = <Group**>malloc(sizeof(Group*) * max(1, ng))
        if arr == NULL:
            raise MemoryError()
        self._own(arr)
        k = 0
        ng = 0
        while k < self.ex_n:
            aid = <int32_t>(self.ex_keys[k] >> 32)
            start = k
            while k < self.ex_n and <int32_t>(self.ex_keys[k] >> 32) == aid:
                k += 1
            m = <int32_t>(k - start)
            gr = <Group*>calloc(1, sizeof(Group))
            self._own(gr)
            gr.nodes = <int32_t*>malloc(sizeof(int32_t) * m)
            self._own(gr.nodes)
            for j in range(m):
                gr.nodes[j] = <int32_t>(self.ex_keys[start + j] & 0xFFFFFFFFLL)
            gr.n_nodes = m
            gr.scan_state = self.aid_state[aid]
            self._take_cross_slices(gr)
            arr[ng] = gr
            ng += 1
            self.cache_bytes += sizeof(Group) + 4 * m
        self.n_groups += ng
        self.ex_n = 0
        n_out[0] = ng
        out[0] = arr
        return 0

    cdef int _take_cross_slices(self, Group* gr) except -1:
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
                self._own(gr.cross)
            gr.cross[gr.n_cross] = i
            gr.n_cross += 1
        return 0

    cdef int _walk_slices(self, int32_t q, Entry* top) except -1:
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

    cdef Entry* entry(self, int32_t q) except NULL:
        """The cache entry of lexer state ``q``, built on first use (one lexer-only trie walk)."""
        cdef int32_t newcap
        if q >= self.entries_cap:
            newcap = self.entries_cap
            while newcap <= q:
                newcap *= 2
            p = <Entry**>realloc(self.entries, sizeof(Entry*) * newcap)
            if p == NULL:
                raise MemoryError()
            memset(&p[self.entries_cap], 0, sizeof(Entry*) * (newcap - self.entries_cap))
            self.entries = p
            self.entries_cap = newcap
        cdef int64_t t0
        if self.entries[q] == NULL:
            t0 = _now_ns()
            self.entries[q] = self._build_entry(q)
            self.n_entries += 1
            self.entry_ns += _now_ns() - t0
        return self.entries[q]

    cdef Entry* _build_entry(self, int32_t q) except NULL:
        cdef int32_t W = self.words
        cdef int32_t i, n = self.n_nodes
        cdef int b, any_fb = 0
        cdef Entry* e = <Entry*>calloc(1, sizeof(Entry))
        if e == NULL:
            raise MemoryError()
        try:
            self.ex_n = 0
            self._walk_slices(q, e)
            self._freeze(&e.inside)
            self._groups_from_exits(&e.n_groups, &e.groups)
            for b in range(256):
                any_fb |= e.exit_byte[b]
            if any_fb:
                e.fb_exit = <uint32_t*>calloc(max(1, W), sizeof(uint32_t))
                e.fb_exit_nw = <uint32_t*>calloc(max(1, W), sizeof(uint32_t))
                if e.fb_exit == NULL or e.fb_exit_nw == NULL:
                    raise MemoryError()
                for b in range(256):
                    if e.exit_byte[b] and not self.wb[b]:
                        or_tokset(e.fb_exit_nw, &self.first_byte[b], W)
                memcpy(e.fb_exit, e.fb_exit_nw, sizeof(uint32_t) * W)
                for b in range(256):
                    if e.exit_byte[b] and self.wb[b]:
                        or_tokset(e.fb_exit, &self.first_byte[b], W)
                self.cache_bytes += 8 * W
        except BaseException:
            self._free_entry(e)
            raise
        return e

    cdef Cont* cont(self, Group* gr, int32_t sp) except NULL:
        """The continuation of group ``gr`` when the next lexeme starts in state ``sp``."""
        cdef int32_t k, newcap
        for k in range(gr.n_conts):
            if gr.cont_key[k] == sp:
                return <Cont*>gr.cont_val[k]
        cdef int64_t t0 = _now_ns()
        cdef Cont* c = <Cont*>calloc(1, sizeof(Cont))
        self._own(c)
        self.ex_n = 0
        cdef int64_t w0 = self.nodes_walked
        for k in range(gr.n_nodes):
            self._lex_walk(gr.nodes[k], self.f_send[gr.nodes[k]], sp, NULL)
        cdef int32_t i, cnode
        for k in range(gr.n_cross):
            i = gr.cross[k]
            cnode = self.sl_split[i]
            if self._contained(sp, i, True):
                self._mark_tokset(&self.sl_bits[i])
                self.slice_hits += 1
            else:
                self._lex_walk(cnode + 1, self.f_send[cnode], sp, NULL)
        self.cont_nodes += self.nodes_walked - w0
        cdef int w
        cdef uint64_t nonign = 0
        for w in range(self.dfa.c.n_words):
            nonign |= self.dfa.c.accept[<int64_t>gr.scan_state * self.dfa.c.n_words + w] & ~self.dfa.ignore_bits[w]
        if not nonign:
            self.cont_nodes_ignore += self.nodes_walked - w0
        self._freeze(&c.bits)
        if c.bits.idx != NULL:
            self._own(c.bits.idx)
        self._own(c.bits.bits)
        self._groups_from_exits(&c.n_groups, &c.groups)
        if gr.n_conts == gr.cap_conts:
            newcap = max(4, 2 * gr.cap_conts)
            kk = <int32_t*>malloc(sizeof(int32_t) * newcap)
            vv = <void**>malloc(sizeof(void*) * newcap)
            self._own(kk)
            self._own(vv)
            if gr.n_conts:
                memcpy(kk, gr.cont_key, sizeof(int32_t) * gr.n_conts)
                memcpy(vv, gr.cont_val, sizeof(void*) * gr.n_conts)
            gr.cont_key = kk
            gr.cont_val = vv
            gr.cap_conts = newcap
        gr.cont_key[gr.n_conts] = sp
        gr.cont_val[gr.n_conts] = c
        gr.n_conts += 1
        self.n_conts += 1
        self.cache_bytes += sizeof(Cont) + 12
        self.cont_ns += _now_ns() - t0
        return c

    def cache_stats(self):
        """Sizes of the mask caches, for docs and tests."""
        return {"cached_lexer_states": self.n_entries, "groups": self.n_groups,
                "continuations": self.n_conts, "lexer_states": self.dfa.c.n_states,
                "cache_bytes": self.cache_bytes, "whole_subtree_hits": self.whole_subtree_hits,
                "nodes_walked": self.nodes_walked, "entry_ms": self.entry_ns / 1e6,
                "cont_ms": self.cont_ns / 1e6, "cont_nodes": self.cont_nodes,
                "cont_nodes_ignore": self.cont_nodes_ignore, "slices": self.n_slices,
                "slice_hits": self.slice_hits, "slice_checks": self.slice_checks}


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
    cdef uint32_t* tmp        # [words] scratch for the tokens that start a new lexeme
    # memo: (row stamp, accepting-set id) -> lexer start state after scanning that set
    # from that row; lets the mask path skip building rows it only needs the start of
    cdef int64_t* memo_key
    cdef int32_t* memo_val

    def __cinit__(self, Runtime rt, Rows rows):
        self.rt = rt
        self.rows = rows
        self.cap = 256
        self.st_lex = <int32_t*>malloc(sizeof(int32_t) * self.cap)
        self.st_nrows = <int32_t*>malloc(sizeof(int32_t) * self.cap)
        self.st_byte = <uint8_t*>malloc(self.cap)
        self.tmp = <uint32_t*>malloc(sizeof(uint32_t) * max(1, rt.words))
        self.memo_key = <int64_t*>malloc(sizeof(int64_t) * MEMO_SIZE)
        self.memo_val = <int32_t*>malloc(sizeof(int32_t) * MEMO_SIZE)
        if (self.st_lex == NULL or self.st_nrows == NULL or self.st_byte == NULL or self.tmp == NULL
                or self.memo_key == NULL or self.memo_val == NULL):
            raise MemoryError()
        memset(self.memo_key, 0xFF, sizeof(int64_t) * MEMO_SIZE)
        self.use_cache = True
        self.depth = 0
        self.tok_depths = []
        self.finished = False

    def __dealloc__(self):
        free(self.st_lex)
        free(self.st_nrows)
        free(self.st_byte)
        free(self.tmp)
        free(self.memo_key)
        free(self.memo_val)

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

    cdef int32_t _scan_start(self, int32_t scan_state, bint need_row) except -2:
        """Lexer start state after scanning the lexeme accepted as ``scan_state`` on the
        top row.  Pushes the new row only when ``need_row`` or when it is not memoised;
        returns with ``rows.n_rows`` either unchanged or one more."""
        cdef int32_t top = self.rows.n_rows - 1
        cdef int64_t key = ((<int64_t>self.rows.row_stamp[top]) << 24) | self.rt.dfa.c.accept_id[scan_state]
        cdef int32_t slot = <int32_t>(((<uint64_t>key * 0x9E3779B97F4A7C15ULL) >> 40) & (MEMO_SIZE - 1))
        cdef int32_t sp
        if not need_row and self.memo_key[slot] == key:
            return self.memo_val[slot]
        self.rows.push_scan(scan_state)
        sp = self.rows.row_lex_start[self.rows.n_rows - 1]
        self.memo_key[slot] = key
        self.memo_val[slot] = sp
        return sp

    cdef int _expand(self, Group** groups, int32_t n, uint32_t* mask) except -1:
        """Add the tokens of ``groups`` (lexemes ending inside a token) from the current rows.

        Per group: find the next lexeme's start state after scanning (memoised
        per row, so usually no row is built), OR the cached continuation for
        it, and recurse where the next lexeme ends inside the token again
        (that needs the row itself).  No trie node is visited on a warm cache.
        """
        cdef Runtime rt = self.rt
        cdef int32_t base = self.rows.n_rows
        cdef int32_t k, sp
        cdef Group* gr
        cdef Cont* c
        for k in range(n):
            gr = groups[k]
            sp = self._scan_start(gr.scan_state, False)
            if sp != 0:
                c = rt.cont(gr, sp)
                or_tokset(mask, &c.bits, rt.words)
                if c.n_groups:
                    if self.rows.n_rows == base:
                        self._scan_start(gr.scan_state, True)
                    self._expand(c.groups, c.n_groups, mask)
            self.rows.n_rows = base
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
        cdef int32_t sp, w
        cdef Entry* e
        cdef Entry* e2
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
            or_tokset(mask, &e.inside, W)
            if e.n_groups:
                self._expand(e.groups, e.n_groups, mask)
            if d > 0 and e.fb_exit != NULL and rt.dfa.c.restricted[q]:
                # a trailing lookahead makes the scan depend on the next byte: walk
                # the first-byte subtrees that end the lexeme with the parser
                self._walk_first_bytes(e.exit_byte, mask)
            elif d > 0 and e.fb_exit != NULL:
                # the pending lexeme may end right at the token boundary: the tokens
                # are those allowed from the next row's start state, restricted to
                # first bytes that end this lexeme
                self.rows.push_scan(q)
                sp = self.rows.row_lex_start[self.rows.n_rows - 1]
                if sp != 0:
                    e2 = rt.entry(sp)
                    memset(self.tmp, 0, sizeof(uint32_t) * W)
                    or_tokset(self.tmp, &e2.inside, W)
                    if e2.n_groups:
                        self._expand(e2.groups, e2.n_groups, self.tmp)
                    fb = e.fb_exit_nw if rt.wb[prev] else e.fb_exit
                    for w in range(W):
                        mask[w] |= self.tmp[w] & fb[w]
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

    def row_sizes(self):
        """``[(items, predicted items)]`` per row on the stack (debugging, docs)."""
        out = []
        for k in range(self.rows.n_rows):
            items = self.rows.py_items(k)
            out.append((len(items), sum(1 for _p, o in items if o == k)))
        return out

    def row_stats(self):
        return self.rows.n_builds, self.rows.distinct_rows

    def describe(self):
        """Readable state for DeadEnd messages."""
        d = self.depth
        return {"bytes": d, "rows": self.st_nrows[d], "lexer_state": self.st_lex[d],
                "finished": bool(self.finished)}
