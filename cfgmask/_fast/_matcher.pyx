# cython: language_level=3
"""Byte stack, token masks and the mask caches.

The state of a matcher is a stack indexed by *byte depth* (bytes consumed so
far, plus bytes pushed speculatively on top):

* ``st_lex[d]``   lexer state after ``d`` bytes (the pending lexeme);
* ``st_nrows[d]`` number of Earley rows after ``d`` bytes (the top row is the
  one the pending lexeme started in);
* ``st_byte[d]``  the ``d``-th byte (the word-boundary rule looks at it).

Pushing a byte is one table lookup unless the lexeme ends; popping is setting
``depth`` and truncating the row stack.

Masks (all caches live in :class:`Runtime`, shared by every matcher of a
compiled grammar):

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

A mask is ``inside(q)``, plus for each group one parser scan (memoised per
row) and the cached continuation of the start state it leads to, recursively;
plus, when ``q`` may end at the token boundary, the same from the start state
of the next row, restricted to the first bytes that end ``q`` (once per state
scanned there).  A warm fill visits no trie node.

Threads.  Every cache is filled on demand under one writer lock (the lexer's,
recursive because a cache build steps the lexer) and read without a lock: an
object is built completely, then published with a release store.  A fill runs
without the GIL.  Caches are bounded by ``max_cache_bytes``: when they grow past
it, the least recently used entries (with all their groups and continuations)
are freed at the start of the next fill, once no fill is running.  Each
matcher also has its own lock, so its methods are safe to call from several
threads; a batch fill (:func:`fill_rows`) runs rows on OpenMP threads.

Errors.  Every method leaves the matcher exactly as before the call when it
raises (``BudgetExceeded``, ``MemoryError``): the byte stack is popped back and
a row that was being rebuilt is marked invalid.
"""

from libc.stdlib cimport malloc, calloc, free, qsort
from libc.string cimport memset, memcpy
from cpython.ref cimport PyObject

import numpy as np
cimport numpy as cnp

cnp.import_array()

from cfgmask._fast._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from cfgmask._fast._mem cimport raise_memory, raise_oom, grown, grow, data_of
from cfgmask._fast._lexer cimport LazyDFA, lex_step, lex_end
from cfgmask._fast._earley cimport CGrammar, Rows
from cfgmask._fast._sync cimport (cfg_zalloc, cfg_zfree, cfg_rmutex,
                                  cfg_rmutex_init, cfg_rmutex_lock, cfg_rmutex_unlock,
                                  cfg_rmutex_destroy, cfg_load_ptr, cfg_store_ptr, cfg_load_i32,
                                  cfg_store_i32, cfg_add_i64, cfg_yield)


cdef extern from "_pool.h" nogil:
    ctypedef int (*cfg_task_fn)(void* ctx, int64_t i) except -1 nogil
    int cfg_pool_run(cfg_task_fn fn, void* ctx, int64_t n, int nt)


cdef enum:
    MEMO_SIZE = 4096     # memo slots per matcher (a power of two)


cdef struct TokSet:
    int32_t n          # number of (word index, bits) pairs; -1 = dense (``bits`` has ``words`` entries)
    int32_t* idx
    uint32_t* bits


cdef struct ContTable:
    # Continuations of a group by next-lexeme start state.  Readers scan
    # keys[0:n]; a writer fills keys[n], vals[n] before it raises n (release),
    # or publishes a larger copy; old tables stay alive until their entry dies.
    int32_t n
    int32_t cap
    int32_t* keys
    void** vals          # Cont*


cdef struct Group:
    # Forest nodes whose byte ends a lexeme accepted by one terminal set.
    int32_t scan_state   # a lexer state accepting exactly that set (what push_scan needs)
    int32_t n_nodes
    int32_t* nodes       # the nodes whose byte ends the lexeme and starts the next one
    int32_t n_cross
    int32_t* cross       # cross slices all of whose tokens' second bytes are in this group
    ContTable* conts
    void* root           # the Entry that owns this group and everything built from it


cdef struct Cont:
    TokSet bits          # tokens whose remaining bytes stay inside the next lexeme
    int32_t n_groups
    Group** groups       # where the next lexeme ends again inside a token


cdef struct Entry:
    # Per lexer state q: everything of the mask that only depends on q.
    TokSet inside        # tokens every byte of which q consumes
    int32_t n_groups
    Group** groups       # tokens that end q's lexeme after their first byte
    # Lexemes ending at the token boundary, split by the state that is scanned
    # (a trailing lookahead makes it depend on the next byte): end k scans
    # end_state[k] for the tokens of end_fb[k * words:] (end_fb_nw: minus first
    # bytes in the word-boundary set).  n_ends is 0 when no first byte ends q.
    int32_t n_ends
    int32_t* end_state
    uint32_t* end_fb
    uint32_t* end_fb_nw
    uint8_t exit_byte[256]
    int32_t q
    int64_t last_used    # fill tick of the last use (for LRU eviction)
    int64_t bytes        # memory held by the entry and everything it owns
    void** owned         # every allocation of its groups and continuations
    int32_t n_owned
    int32_t cap_owned


cdef inline void or_tokset(uint32_t* mask, const TokSet* ts, int32_t W) noexcept nogil:
    cdef int32_t k
    if ts.n < 0:
        for k in range(W):
            mask[k] |= ts.bits[k]
    else:
        for k in range(ts.n):
            mask[ts.idx[k]] |= ts.bits[k]


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


cdef int _cmp_i64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0]
    cdef int64_t y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


cdef int _raise_cache_budget(int64_t used, int64_t limit) except -1 nogil:
    with gil:
        from cfgmask.errors import BudgetExceeded
        raise BudgetExceeded(
            f"the mask caches of this compiled grammar hold {used} bytes, more than twice "
            f"Limits.max_cache_bytes={limit}, within one fill: raise max_cache_bytes")


# Vocabularies up to this many mask words (4,096 tokens) fill and consume with
# the GIL held.  Their warm step costs well under a microsecond, while letting
# the GIL go and taking it back costs about as much uncontended and several
# microseconds when another thread wants it: two threads replaying with a
# 128-token vocabulary took 1.6x the time of one.  Holding it is safe because
# the locks are GIL-aware (_sync.h): a thread that must wait lets the GIL go.
cdef enum:
    SMALL_FILL_WORDS = 128


cdef class Runtime:
    """Everything a compiled grammar shares between its matchers: the trie, the
    token forest, the token bytes, the slices and the mask caches."""
    cdef LazyDFA dfa
    cdef CGrammar g
    cdef list _keep
    # the full trie (reference walk, first-byte sets)
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
    cdef uint64_t class_bytes[256 * 4]  # bytes of each byte class
    cdef TokSet first_byte[256]         # tokens whose first byte is b
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
    # caches (written under dfa.lock)
    cdef Entry** entries              # [max lexer states]
    cdef int32_t entries_hi           # every non-NULL entry has an index below this (set under the lock)
    cdef int32_t max_states
    cdef Entry* cur_owner             # the entry whose tree a build is adding to
    cdef int64_t cache_bytes
    cdef int64_t max_cache_bytes
    cdef int64_t tick                 # fills started (LRU clock)
    cdef int64_t active               # fills running now
    cdef int32_t evicting             # 1 while an eviction waits for fills to drain or runs
    cdef uint64_t* loop_bits          # [max states * 4] bytes on which a lexer state loops to itself
    cdef uint8_t* loop_known
    cdef int32_t* aid_state           # accept-set id -> a lexer state with that accepting set
    cdef int32_t aid_cap
    # build scratch (only used under the lock)
    cdef int32_t* ls
    cdef uint8_t* pb
    cdef uint32_t* dense              # all zero between builds
    cdef int32_t* touched             # [words] indices of the non-zero words of dense
    cdef int32_t n_touched
    cdef int64_t* ex_keys
    cdef int64_t ex_n
    cdef int64_t ex_cap
    cdef int64_t* bfs
    cdef int64_t bfs_cap
    cdef int64_t* seen_pairs
    cdef uint32_t* seen_gen
    cdef uint32_t seen_stamp
    cdef int64_t seen_cap
    cdef int64_t n_seen
    # statistics
    cdef public int64_t n_entries
    cdef public int64_t n_groups
    cdef public int64_t n_conts
    cdef public int64_t nodes_walked
    cdef public int64_t whole_subtree_hits
    cdef public int64_t slice_hits
    cdef public int64_t slice_checks
    cdef public int64_t evictions
    cdef bint _use_subtree_accept     # see the use_subtree_accept property

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
        if self.sl_bits != NULL:
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
        free(<void*>self.sl_bits)
        free(<void*>self.sl_lo)
        free(<void*>self.sl_hi)
        free(<void*>self.sl_parent)
        free(<void*>self.sl_split)
        free(<void*>self.sl_split_children)
        free(<void*>self.sl_dfa)
        free(<void*>self.sl_tail)
        free(<void*>self.sl_reps_n)
        free(<void*>self.sl_reps)
        free(<void*>self.tl_reps_n)
        free(<void*>self.tl_reps)

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
        if n > 32:
            raise ValueError("at most 32 slices")
        m = max(1, n)
        self.sl_lo = <int32_t*>calloc(m, sizeof(int32_t))
        self.sl_hi = <int32_t*>calloc(m, sizeof(int32_t))
        self.sl_parent = <int32_t*>calloc(m, sizeof(int32_t))
        self.sl_split = <int32_t*>calloc(m, sizeof(int32_t))
        self.sl_split_children = <int32_t*>calloc(m, sizeof(int32_t))
        self.sl_bits = <TokSet*>calloc(m, sizeof(TokSet))
        self.sl_dfa = <const int32_t**>calloc(m, sizeof(int32_t*))
        self.sl_tail = <const int32_t**>calloc(m, sizeof(int32_t*))
        self.sl_reps_n = <int32_t*>calloc(m, sizeof(int32_t))
        self.sl_reps = <uint8_t*>calloc(m * 256, 1)
        self.tl_reps_n = <int32_t*>calloc(m, sizeof(int32_t))
        self.tl_reps = <uint8_t*>calloc(m * 256, 1)
        if (self.sl_lo == NULL or self.sl_hi == NULL or self.sl_parent == NULL
                or self.sl_split == NULL or self.sl_split_children == NULL or self.sl_bits == NULL
                or self.sl_dfa == NULL or self.sl_tail == NULL or self.sl_reps_n == NULL
                or self.sl_reps == NULL or self.tl_reps_n == NULL or self.tl_reps == NULL):
            raise_memory("slice tables")
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
    cdef inline void set_token(self, uint32_t* mask, int32_t tok) noexcept nogil:
        while tok >= 0:
            mask[tok >> 5] |= (<uint32_t>1) << (tok & 31)
            tok = self.token_same_next[tok]

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
                t = self.dfa._fill(s, cls[b])
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

    cdef inline void leave_fill(self) noexcept nogil:
        cfg_add_i64(&self.active, -1)

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
    from cfgmask.errors import ConfigurationError
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

    The threads are a persistent pool that sleeps instead of spinning
    (``_pool.h``), so a batch on a busy machine costs about what one thread
    costs: rows go to whichever thread is running."""
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
            from cfgmask.errors import ConfigurationError
            raise ConfigurationError(f"bitmask needs shape [>= {n}, W], got {arr.shape}")
    base = _row_pointer(arr, 0, words)
    width = cnp.PyArray_DIMS(<cnp.ndarray>arr)[1] if cnp.PyArray_NDIM(<cnp.ndarray>arr) == 2 else 0
    if cnp.PyArray_NDIM(<cnp.ndarray>arr) != 2:
        from cfgmask.errors import ConfigurationError
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
    import os
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
