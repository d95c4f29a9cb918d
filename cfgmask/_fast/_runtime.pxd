# The shared mask caches of a compiled grammar (_runtime.pyx): the cache structs and
# the Runtime fields and methods that _matcher.pyx cimports.
from cfgmask._fast._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from cfgmask._fast._lexer cimport LazyDFA
from cfgmask._fast._earley cimport CGrammar
from cfgmask._fast._sync cimport cfg_add_i64


cdef enum:
    MAX_SLICES = 32      # sl_known/sl_in keep slice i in bit i and its tail in bit 32 + i


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
    cdef int32_t sl_lo[MAX_SLICES]               # own trie of slice i: forest nodes [lo, hi), lo its root
    cdef int32_t sl_hi[MAX_SLICES]
    cdef int32_t sl_parent[MAX_SLICES]           # a slice with a smaller language, or -1
    cdef int32_t sl_split[MAX_SLICES]            # cross slices: forest node of the lead byte, else -1
    cdef int32_t sl_split_children[MAX_SLICES]   # cross slices: number of children of the split node
    cdef TokSet sl_bits[MAX_SLICES]              # all tokens of slice i
    cdef const int32_t* sl_dfa[MAX_SLICES]       # [n_states * 256] language of slice i (-1 dead), start 0
    cdef const int32_t* sl_tail[MAX_SLICES]      # cross slices: language after the lead byte
    cdef int32_t sl_reps_n[MAX_SLICES]           # byte representatives for the containment product
    cdef uint8_t sl_reps[MAX_SLICES * 256]
    cdef int32_t tl_reps_n[MAX_SLICES]
    cdef uint8_t tl_reps[MAX_SLICES * 256]
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

    cdef int _setup_slices(self, tables) except -1
    cdef int32_t _byte_reps(self, sl, bint tail, bytes class_of, uint8_t* out) except -1
    cdef int _subtree_bytes(self) except -1
    cdef int _first_byte_sets(self, trie) except -1
    cdef void _free_entry(self, Entry* e) noexcept nogil
    cdef int _own(self, void* p, int64_t nbytes) except -1 nogil
    cdef inline void _mark(self, int32_t tok) noexcept nogil
    cdef void _mark_subtree(self, int32_t node) noexcept nogil
    cdef void _mark_tokset(self, const TokSet* ts) noexcept nogil
    cdef void _clear_scratch(self) noexcept nogil
    cdef int _freeze(self, TokSet* ts) except -1 nogil
    cdef inline int64_t _tokset_bytes(self, const TokSet* ts) noexcept nogil
    cdef bint _contained(self, int32_t q, int32_t i, bint tail) except -1 nogil
    cdef void _seen_clear(self) noexcept nogil
    cdef bint _seen_add(self, int64_t key) except -1 nogil
    cdef bint _loops_on_subtree(self, int32_t s, int32_t node) except -1 nogil
    cdef inline uint8_t _class_rep(self, int32_t c) noexcept nogil
    cdef int _add_exit(self, int32_t scan_state, int32_t node) except -1 nogil
    cdef int _lex_walk(self, int32_t lo, int32_t hi, int32_t q0, Entry* top) except -1 nogil
    cdef int _groups_from_exits(self, int32_t* n_out, Group*** out) except -1 nogil
    cdef int _take_cross_slices(self, Group* gr) except -1 nogil
    cdef int _walk_slices(self, int32_t q, Entry* top) except -1 nogil
    cdef Entry* entry(self, int32_t q) except NULL nogil
    cdef Entry* _build_entry(self, int32_t q) except NULL nogil
    cdef int _build_ends(self, Entry* e) except -1 nogil
    cdef Cont* cont(self, Group* gr, int32_t sp) except NULL nogil
    cdef Cont* _build_cont(self, Group* gr, int32_t sp) except NULL nogil
    cdef void enter_fill(self) noexcept nogil
    cdef void _evict(self) noexcept nogil

    # inline: a matcher's walk and fill call these from the other module
    cdef inline void set_token(self, uint32_t* mask, int32_t tok) noexcept nogil:
        while tok >= 0:
            mask[tok >> 5] |= (<uint32_t>1) << (tok & 31)
            tok = self.token_same_next[tok]

    cdef inline void leave_fill(self) noexcept nogil:
        cfg_add_i64(&self.active, -1)
