"""The token trie: every token's bytes as a path from the root, in flat arrays.

The runtime computes a mask by walking this trie with the lexer/parser as the
recogniser: try a node's byte; if it is rejected, skip the node's whole
subtree in one jump; if it is accepted, mark the node's token and descend.
For that loop the trie is stored as parallel NumPy arrays over nodes in
depth-first (pre-)order, children sorted by byte.

Layout: the arrays (``node_byte``, ``node_depth``, ``node_token``,
``node_subtree_end``, ``node_first_child`` over ``n`` nodes; ``token_same_next``,
``token_node`` over ``V`` = ``vocab_size`` ids) are tabled in docs/vocab.md
("TokTrie"), the one copy of that table.

Invariants:

* Node 0 is the root: depth 0, byte 0, no token, ``node_subtree_end[0] == n``.
* Pre-order: the subtree of node ``i`` is exactly ``i .. node_subtree_end[i]-1``;
  the first child of ``i`` (if any) is ``i + 1``; the next sibling of a child
  ``c`` is ``node_subtree_end[c]`` while that is below the parent's end; child
  bytes strictly increase along that chain.  So the nodes are the distinct
  non-empty prefixes of the token byte strings, in lexicographic order.
* ``node_depth[i + 1] <= node_depth[i] + 1``; after node ``i`` the walk pops
  ``node_depth[i] - node_depth[i + 1] + 1`` levels (``node_depth[n]`` taken as 0).
* Every non-empty token byte string ends at exactly one node.  Token ids with
  identical bytes (duplicates) share the node: ``node_token`` holds the
  smallest id and ``token_same_next`` chains the others in increasing order.
  A walk that accepts a node marks the whole chain.
* ``None`` tokens (specials, EOS) are not in the trie; the runtime adds EOS by
  its own rule.

Sizes: 13 bytes per node for the four walk arrays (17 with
``node_first_child``) and 8 bytes per token id; about 2 nodes per token on
the real vocabularies (measured per vocabulary in docs/vocab.md).

Build (vectorised, no per-node Python loop, linear in the total token bytes
whatever the longest token): sort the token ids by their bytes (Python's
sort, stable, so duplicates keep increasing ids); the pre-order of the trie is
then the sorted order of all distinct prefixes.  Compute each string's
longest common prefix (lcp) with its predecessor by comparing the pairs still
equal a window at a time, the window doubling each round (``_adjacent_lcp``).
A string whose lcp is its whole length duplicates its predecessor.  Each
distinct string ``g`` adds the nodes for its prefixes longer than ``lcp[g]``
-- consecutive indices (its *block*), the last one its own node -- so depths
and bytes are ``np.repeat`` arithmetic.  The subtree of a node at depth ``d``
owned by ``g`` ends at the first node of the first later string ``g'`` with
``lcp[g'] < d``; within a block that is a step function of ``d`` whose steps
are the strings hanging off the block, found with nearest-smaller-value
queries over the lcp array (``_subtree_ends``).  The sort dominates; building
the 131k tekken trie takes about 0.15 s of CPU (SmolLM2: 45 ms), and one
1 MB token about 25 ms (a per-depth loop used to take 13.5 s).
"""

import numpy as np

from cfgmask.errors import ConfigurationError

__all__ = ["TokTrie"]


class TokTrie:
    """Flat pre-order token trie built from a :class:`~cfgmask.engine.vocab.Vocabulary`.

    Build with :meth:`build` (a Vocabulary) or :meth:`from_token_bytes` (a
    list of ``bytes``/``None``).  All arrays are read-only NumPy arrays; see
    the module docstring for the layout.
    """

    __slots__ = ("node_byte", "node_depth", "node_token", "node_subtree_end", "node_first_child",
                 "token_same_next", "token_node", "n_nodes", "max_depth", "vocab_size",
                 "n_trie_tokens", "_first_byte_sets", "_first_byte_counts", "_levels", "_char_counts",
                 "_node_dups")

    def __init__(self, node_byte, node_depth, node_token, node_subtree_end, token_same_next,
                 token_node, node_first_child=None, _owned=False):
        # _owned: the arrays were made by _build and nobody else holds them (no copies)
        def frozen(a, dtype):
            return _frozen(a, dtype, _owned)
        self.node_byte = frozen(node_byte, np.uint8)
        self.node_depth = frozen(node_depth, np.int32)
        self.node_token = frozen(node_token, np.int32)
        self.node_subtree_end = frozen(node_subtree_end, np.int32)
        self.token_same_next = frozen(token_same_next, np.int32)
        self.token_node = frozen(token_node, np.int32)
        n = len(self.node_byte)
        if not (n >= 1 and len(self.node_depth) == n and len(self.node_token) == n
                and len(self.node_subtree_end) == n
                and len(self.token_same_next) == len(self.token_node)):
            raise ConfigurationError("TokTrie arrays have inconsistent lengths")
        self.n_nodes = n
        self.vocab_size = len(self.token_node)
        self.max_depth = int(self.node_depth.max())
        self.n_trie_tokens = int(np.count_nonzero(self.token_node >= 0))
        if node_first_child is None:
            idx = np.arange(n, dtype=np.int32)
            node_first_child = np.where(self.node_subtree_end > idx + 1, idx + 1, -1)
        self.node_first_child = frozen(node_first_child, np.int32)
        if len(self.node_first_child) != n:
            raise ConfigurationError("TokTrie arrays have inconsistent lengths")
        self._first_byte_sets = None
        self._first_byte_counts = None
        self._levels = None
        self._char_counts = None
        self._node_dups = None

    def node_dups(self):
        """uint8[n]: 1 where the node's token has duplicates (``token_same_next``
        of its ``node_token`` is set), so a walk marking tokens follows the chain
        only there.  Computed once per trie."""
        if self._node_dups is None:
            # from the few chained ids, not a gather over every node (100k nodes: ~6M
            # instructions with boolean indexing, a noticeable part of json.lark's compile)
            chained = np.flatnonzero(self.token_same_next >= 0)
            dups = np.zeros(self.n_nodes, dtype=np.uint8)
            dups[self.token_node[chained]] = 1
            dups.flags.writeable = False
            self._node_dups = dups
        return self._node_dups

    def levels(self):
        """``(parent int32[n], by_depth int32[n], depth_start int64[max_depth + 2])``:
        each node's parent (-1 for the root), and the nodes sorted by depth, those
        of depth ``d`` at ``by_depth[depth_start[d]:depth_start[d + 1]]``.
        Computed once per trie; level-by-level walks (slice membership) use it."""
        if self._levels is None:
            n = self.n_nodes
            depth = self.node_depth.astype(np.int64)
            # pre-order: a node's parent is the last node before it one level up
            parent = np.full(n, -1, dtype=np.int32)
            by_depth = np.argsort(depth, kind="stable").astype(np.int32)
            depth_start = np.searchsorted(depth[by_depth], np.arange(self.max_depth + 2)).astype(np.int64)
            for d in range(1, self.max_depth + 1):
                here = by_depth[depth_start[d]:depth_start[d + 1]]
                up = by_depth[depth_start[d - 1]:depth_start[d]]
                parent[here] = up[np.searchsorted(up, here, side="right") - 1]
            self._levels = (parent, by_depth, depth_start)
        return self._levels

    def char_counts(self):
        """int32[V]: for each token in the trie, how many of its bytes are not UTF-8
        continuation bytes (``0x80-0xBF``), i.e. how many characters it starts; 0
        for a token not in the trie.  A token that is a prefix of a UTF-8 string
        has that many characters, its last one possibly cut off.  Computed once
        per trie (bounded run slices read it: :mod:`cfgmask.engine.slices`)."""
        if self._char_counts is None:
            parent, by_depth, depth_start = self.levels()
            starts = ((self.node_byte.astype(np.int32) & 0xC0) != 0x80).astype(np.int32)
            count = np.zeros(self.n_nodes, dtype=np.int32)
            for d in range(1, self.max_depth + 1):
                here = by_depth[depth_start[d]:depth_start[d + 1]]
                count[here] = count[parent[here]] + starts[here]
            node = self.token_node
            out = np.where(node > 0, count[np.maximum(node, 0)], 0).astype(np.int32)
            out.flags.writeable = False
            self._char_counts = out
        return self._char_counts

    def first_byte_sets(self):
        """The trie's tokens grouped by first byte, as sparse bitmask words.

        ``(offsets int64[257], word int32[n], bits uint32[n])``: the tokens whose
        bytes start with ``b`` are the set bits of ``bits[k]`` in mask word
        ``word[k]`` for ``offsets[b] <= k < offsets[b+1]`` (words increasing).
        Computed once per trie; every compiled grammar of the vocabulary copies
        it (the runtime's first-byte token sets) instead of walking all nodes.
        """
        if self._first_byte_sets is None:
            tok = np.flatnonzero(self.token_node > 0).astype(np.int64)   # node 0 is the root
            depth = self.node_depth
            tops = np.flatnonzero(depth == 1)                              # first-byte nodes, in order
            top = tops[np.searchsorted(tops, self.token_node[tok], side="right") - 1]
            first = self.node_byte[top].astype(np.int64)
            n_words = (self.vocab_size + 31) // 32
            key = first * n_words + (tok >> 5)
            order = np.argsort(key, kind="stable")
            key, tok = key[order], tok[order]
            starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else np.zeros(0, np.int64)
            bits = np.bitwise_or.reduceat((np.uint32(1) << (tok & 31).astype(np.uint32)), starts) \
                if key.size else np.zeros(0, np.uint32)
            ukey = key[starts]
            offsets = np.searchsorted(ukey // n_words, np.arange(257), side="left").astype(np.int64)
            self._first_byte_sets = (offsets, (ukey % n_words).astype(np.int32), bits.astype(np.uint32))
        return self._first_byte_sets

    def first_byte_counts(self):
        """int64[256]: how many of the trie's tokens start with each byte (computed
        once per trie, from :meth:`first_byte_sets`)."""
        if self._first_byte_counts is None:
            offsets, _words, bits = self.first_byte_sets()
            ones = np.unpackbits(bits.view(np.uint8), bitorder="little").reshape(-1, 32).sum(axis=1)
            csum = np.r_[0, np.cumsum(ones)]
            counts = (csum[offsets[1:]] - csum[offsets[:-1]]).astype(np.int64)
            counts.flags.writeable = False
            self._first_byte_counts = counts
        return self._first_byte_counts

    @classmethod
    def from_arrays(cls, arrays):
        """A trie from its arrays (a dict keyed by the attribute names, as stored
        in the prepared-vocabulary cache).  Read-only arrays of the right dtype
        are used as they are, without a copy."""
        t = cls(arrays["node_byte"], arrays["node_depth"], arrays["node_token"],
                arrays["node_subtree_end"], arrays["token_same_next"], arrays["token_node"],
                node_first_child=arrays.get("node_first_child"))
        return t

    # ------------------------------------------------------------------ build

    @classmethod
    def build(cls, vocabulary):
        """The trie of a :class:`~cfgmask.engine.vocab.Vocabulary` (``V = vocab_size``)."""
        return cls._build(vocabulary.token_bytes, vocabulary.vocab_size)

    @classmethod
    def from_token_bytes(cls, token_bytes, vocab_size=None):
        """The trie of ``token_bytes`` (``bytes`` or ``None`` per id; ``b""`` is
        treated as ``None``).  ``vocab_size`` (default ``len(token_bytes)``)
        sizes the per-token arrays."""
        token_bytes = list(token_bytes)
        V = len(token_bytes) if vocab_size is None else int(vocab_size)
        if V < len(token_bytes):
            raise ConfigurationError(
                f"vocab_size={V} is smaller than len(token_bytes)={len(token_bytes)}")
        for i, tb in enumerate(token_bytes):
            if tb is not None and type(tb) is not bytes:
                if isinstance(tb, (bytearray, memoryview)):
                    token_bytes[i] = bytes(tb)
                else:
                    raise ConfigurationError(
                        f"token_bytes[{i}] must be bytes or None, got {type(tb).__name__}")
        return cls._build(token_bytes, V)

    @classmethod
    def _build(cls, token_bytes, V):
        # token_bytes: validated sequence of bytes/None; V >= len(token_bytes)
        ids = [i for i, tb in enumerate(token_bytes) if tb]
        ids.sort(key=token_bytes.__getitem__)  # stable: duplicates keep increasing ids
        strs = list(map(token_bytes.__getitem__, ids))
        token_node = np.full(V, -1, dtype=np.int32)
        same_next = np.full(V, -1, dtype=np.int32)
        m = len(ids)
        if m == 0:
            return cls(np.zeros(1, np.uint8), [0], [-1], [1], same_next, token_node)
        idarr = np.array(ids, dtype=np.int64)
        lens = np.fromiter(map(len, strs), dtype=np.int64, count=m)
        off = np.zeros(m, dtype=np.int64)
        np.cumsum(lens[:-1], out=off[1:])
        buf = np.frombuffer(b"".join(strs), dtype=np.uint8)
        lcp = _adjacent_lcp(buf, off, lens)

        # duplicates: a string that is a prefix of its (smaller-or-equal) predecessor
        dup = lcp == lens
        same_next[idarr[:-1][dup[1:]]] = idarr[1:][dup[1:]]
        keep = ~dup
        group = np.cumsum(keep) - 1             # sorted position -> distinct string
        d_len, d_lcp, d_off = lens[keep], lcp[keep], off[keep]
        d_id = idarr[keep]

        # each distinct string adds the nodes for its prefixes longer than lcp
        counts = d_len - d_lcp
        last = np.cumsum(counts)                # its own (deepest) node; root is node 0
        first = last - counts + 1
        n = int(last[-1]) + 1
        if n >= 2 ** 31:
            raise ConfigurationError(f"token trie has {n} nodes, more than int32 indices allow")
        owner = np.repeat(np.arange(len(counts)), counts)
        depth = np.arange(1, n) - first[owner] + d_lcp[owner] + 1
        node_depth = np.zeros(n, dtype=np.int32)
        node_depth[1:] = depth
        node_byte = np.zeros(n, dtype=np.uint8)
        node_byte[1:] = buf[d_off[owner] + depth - 1]
        del owner, depth
        node_token = np.full(n, -1, dtype=np.int32)
        node_token[last] = d_id
        token_node[idarr] = last[group]
        subtree_end = np.empty(n, dtype=np.int32)
        subtree_end[0] = n
        subtree_end[1:] = _subtree_ends(d_lcp, d_len, first, n)
        return cls(node_byte, node_depth, node_token, subtree_end, same_next, token_node,
                   _owned=True)

    # ---------------------------------------------------------------- queries

    @property
    def nbytes(self):
        """Bytes held by all arrays."""
        return sum(getattr(self, a).nbytes for a in (
            "node_byte", "node_depth", "node_token", "node_subtree_end", "node_first_child",
            "token_same_next", "token_node"))

    def __repr__(self):
        return (f"TokTrie(n_nodes={self.n_nodes}, tokens={self.n_trie_tokens}, "
                f"vocab_size={self.vocab_size}, max_depth={self.max_depth})")

    def same_bytes_tokens(self, token_id):
        """``token_id`` and the later ids with the same bytes (its duplicate chain)."""
        out = []
        t = int(token_id)
        while t >= 0:
            out.append(t)
            t = int(self.token_same_next[t])
        return out

    def subtree_tokens(self, node):
        """Sorted ids of every token whose bytes end in the subtree of ``node``
        (i.e. the tokens whose bytes start with the node's prefix)."""
        node = int(node)
        end = int(self.node_subtree_end[node])
        out = []
        for t in self.node_token[node:end]:
            if t >= 0:
                out.extend(self.same_bytes_tokens(t))
        out.sort()
        return out

    def children(self, node):
        """Child node indices of ``node`` in byte order."""
        node = int(node)
        end = int(self.node_subtree_end[node])
        out = []
        c = node + 1
        while c < end:
            out.append(c)
            c = int(self.node_subtree_end[c])
        return out

    def find(self, prefix):
        """Node whose path spells ``prefix`` (root for ``b""``), or -1."""
        node = 0
        for b in prefix:
            end = int(self.node_subtree_end[node])
            c = node + 1
            while c < end and self.node_byte[c] < b:
                c = int(self.node_subtree_end[c])
            if c >= end or self.node_byte[c] != b:
                return -1
            node = c
        return node

    def node_prefix(self, node):
        """The bytes spelled by the path from the root to ``node``.

        Walks back to the parent of each level (the nearest earlier node one
        level up), so this is for tests and debugging, not for hot loops."""
        node = int(node)
        d = int(self.node_depth[node])
        out = bytearray(d)
        while d > 0:
            out[d - 1] = self.node_byte[node]
            d -= 1
            while int(self.node_depth[node]) != d:
                node -= 1
        return bytes(out)


ARRAYS = ("node_byte", "node_depth", "node_token", "node_subtree_end", "node_first_child",
          "token_same_next", "token_node")


def check_forest(node_byte, node_depth, node_token, node_subtree_end, vocab_size):
    """Whether flat pre-order trie arrays (one trie, or a forest of tries laid end
    to end, each root at depth 0) are safe for the runtime's walks
    (``_fast/_runtime.pyx``), which index with them unchecked:

    * ``node_byte`` uint8, ``node_depth``, ``node_token``, ``node_subtree_end``
      int32, all one-dimensional of one length ``n``, ``1 <= n < 2**31``;
    * depth 0 at node 0, ``node_depth[i + 1] <= node_depth[i] + 1`` (a walk
      pushes one byte at a time and reads the state one level up), no negative
      depth;
    * ``i < node_subtree_end[i] <= n`` (every jump moves forward and stays in
      bounds) and the node jumped to is no deeper than ``i`` (a walk reads the
      state one level above it, pushed on the way down);
    * node ``j`` ends exactly ``node_depth[j - 1] - node_depth[j] + 1``
      subtrees (the levels a walk pops there; ``node_depth[n]`` taken as 0);
    * ``node_token`` is -1 or a token id ``< vocab_size``.

    Linear-time array checks (``_next_le`` of the depths costs as much as
    building the trie), yet they pin ``node_subtree_end`` down exactly: going
    left to right, the subtrees still open before node ``j`` are one per depth
    ``0 .. node_depth[j - 1]``; those that may end at ``j`` (started before it,
    no shallower than it) are exactly the ones the count asks for, so all of
    them end there, as in the pre-order.
    """
    arrs = (node_byte, node_depth, node_token, node_subtree_end)
    if not all(isinstance(a, np.ndarray) and a.ndim == 1 for a in arrs):
        return False
    if not (node_byte.dtype == np.uint8 and node_depth.dtype == np.int32
            and node_token.dtype == np.int32 and node_subtree_end.dtype == np.int32):
        return False
    n = len(node_byte)
    if not (1 <= n < 2 ** 31 and len(node_depth) == n and len(node_token) == n
            and len(node_subtree_end) == n):
        return False
    if node_depth[0] != 0 or int(node_depth.min()) < 0 or (n > 1 and int(np.diff(node_depth).max()) > 1):
        return False
    if int(node_token.min()) < -1 or int(node_token.max()) >= vocab_size:
        return False
    se = node_subtree_end
    if int(se.max()) > n or (se <= np.arange(n, dtype=np.int32)).any():
        return False
    depth_after = np.append(node_depth, np.int32(0))      # node_depth[n] = 0
    if (depth_after[se] > node_depth).any():
        return False
    ends = np.bincount(se, minlength=n + 1)[1:]
    return bool((ends == depth_after[:-1] - depth_after[1:] + 1).all())


def check_arrays(arrays, vocab_size):
    """Whether ``arrays`` (the ``trie`` part of a prepared vocabulary, read from the
    disk cache) are a :class:`TokTrie` of ``vocab_size`` token ids the runtime can
    walk safely: exactly the arrays of :data:`ARRAYS`, of their dtypes, and

    * the node arrays pass :func:`check_forest` and node 0 is the only root
      (depth 0, byte 0, no token);
    * ``node_first_child[i]`` is ``i + 1`` when the node has children, else -1;
    * ``token_same_next`` and ``token_node`` int32[vocab_size];
      ``token_same_next[t]`` is -1 or a larger id with the same node (the
      runtime follows the chain unchecked: increasing ids end it);
      ``token_node[t]`` is -1 or a non-root node whose ``node_token`` is a
      token id no larger than ``t`` (the head of its chain).
    """
    if set(arrays) != set(ARRAYS):
        return False
    nb, nd, nt, ne = (arrays[k] for k in ("node_byte", "node_depth", "node_token", "node_subtree_end"))
    fc, sn, tn = arrays["node_first_child"], arrays["token_same_next"], arrays["token_node"]
    V = int(vocab_size)
    if not check_forest(nb, nd, nt, ne, V):
        return False
    n = len(nb)
    if nb[0] != 0 or nt[0] != -1 or (n > 1 and int(nd[1:].min()) < 1):
        return False
    if not all(isinstance(a, np.ndarray) and a.dtype == np.int32 and a.ndim == 1 for a in (fc, sn, tn)):
        return False
    if len(fc) != n or len(sn) != V or len(tn) != V:
        return False
    nxt = np.arange(1, n + 1, dtype=np.int32)
    if not (fc == np.where(ne > nxt, nxt, np.int32(-1))).all():
        return False
    ids = np.arange(V, dtype=np.int32)
    if ((sn != -1) & (sn <= ids)).any() or int(sn.max(initial=-1)) >= V:
        return False
    if ((tn != -1) & (tn < 1)).any() or int(tn.max(initial=-1)) >= n:
        return False
    in_trie = tn >= 0
    head = nt[tn[in_trie]]                            # smallest id of each token's node
    if not ((head >= 0) & (head <= ids[in_trie])).all():
        return False
    chained = sn >= 0
    return bool((tn[sn[chained]] == tn[chained]).all())


def _frozen(a, dtype, owned=False):
    """``a`` as a read-only contiguous array nobody else can write: a copy unless
    it is already read-only and owns its memory or views an immutable ``bytes``
    (what the disk cache returns), or ``owned`` says the caller gives it away."""
    a = np.ascontiguousarray(np.asarray(a, dtype=dtype))
    if owned and a.base is None:
        a.flags.writeable = False
        return a
    if not a.flags.writeable:
        base = a
        while isinstance(base, np.ndarray) and base.base is not None:
            base = base.base
        if base is a or isinstance(base, bytes):
            return a
    a = a.copy()
    a.flags.writeable = False
    return a


# ------------------------------------------------------------- build helpers
#
# Both helpers are linear in the total token bytes (plus O(G log G) in the
# number G of distinct strings), whatever the longest token: finding 11a of
# issue 12 was a 1 MB token making a per-depth loop run a million rounds.

_LCP_BUDGET = 1 << 20  # bytes compared per round (bounds the temporary index arrays)


def _adjacent_lcp(buf, off, lens):
    """``lcp[j]``: longest common prefix of sorted strings ``j - 1`` and ``j`` (``lcp[0] = 0``).

    The strings are ``buf[off[j]:off[j] + lens[j]]``.  Pairs still equal are
    compared a window at a time; the window doubles every round (capped so that
    one round touches at most ``_LCP_BUDGET`` bytes), so a pair with common
    prefix ``L`` costs O(L) work in O(log L) rounds and the total work is at
    most about twice the sum of the common prefixes.
    """
    m = len(lens)
    lcp = np.zeros(m, dtype=np.int64)
    # zero padding past the end, so that a window never needs clipping: an
    # active pair has k <= lim, and positions at or past lim count as unequal
    buf = np.concatenate([buf, np.zeros(_LCP_BUDGET + 1, dtype=np.uint8)])
    act = np.arange(1, m)
    lim = np.minimum(lens[:-1], lens[1:])   # a common prefix is never longer
    a_off, b_off = off[:-1], off[1:]
    k = 0
    width = 1
    while act.size:
        if width == 1:
            eq = (buf[a_off + k] == buf[b_off + k]) & (lim > k)
            same = eq
            stop = ~same
            lcp[act[stop]] = k
        else:
            cols = np.arange(k, k + width)
            eq = (buf[a_off[:, None] + cols] == buf[b_off[:, None] + cols]) & (cols < lim[:, None])
            same = eq.all(axis=1)
            stop = ~same
            lcp[act[stop]] = k + np.argmin(eq[stop], axis=1)
        act, lim, a_off, b_off = act[same], lim[same], a_off[same], b_off[same]
        k += width
        width = max(1, min(2 * width, _LCP_BUDGET // max(1, act.size)))
    return lcp


def _first_not_above(values, strict=False):
    """``out[i]``: the first ``p > i`` with ``values[p] <= values[i]`` (``<`` when
    ``strict``), or ``len(values)`` when there is none.

    Binary lifting over a sparse table of range minima: ``log2(G)`` vectorised
    rounds, each skipping a block of ``2**k`` values when its minimum is above
    the threshold.  O(G log G) time and int32 memory for ``G`` values.
    """
    G = len(values)
    a = values.astype(np.int32)
    thr = a - 1 if strict else a
    K = max(1, G.bit_length())
    levels = [np.concatenate([a, np.full(1 << K, np.iinfo(np.int32).max, dtype=np.int32)])]
    for k in range(1, K + 1):
        prev, half = levels[-1], 1 << (k - 1)
        levels.append(np.minimum(prev[:-half], prev[half:]))
    pos = np.arange(1, G + 1, dtype=np.int64)
    for k in range(K, -1, -1):
        skip = np.take(levels[k], pos, mode="clip") > thr  # past the end: padding, skipped
        pos += skip.astype(np.int64) << k
    return np.minimum(pos, G)


def _next_le(values):
    """``nxt[g]``: the first ``g' > g`` with ``values[g'] <= values[g]``, or ``len(values)``."""
    return _first_not_above(values)


def _prev_lt(values):
    """``prv[g]``: the last ``g' < g`` with ``values[g'] < values[g]``, or -1."""
    G = len(values)
    return G - 1 - _first_not_above(values[::-1], strict=True)[::-1]


def _subtree_ends(lcp, lens, first, n):
    """``node_subtree_end[1:]`` from the distinct sorted strings (see ``_build``).

    String ``g`` owns the consecutive nodes at depths ``lcp[g]+1 .. lens[g]``
    (its "block", starting at node ``first[g]``).  The subtree of its node at
    depth ``d`` ends at the first node of the first later string ``g'`` with
    ``lcp[g'] < d``.  Within a block that answer is a step function of ``d``
    whose steps are the strings hanging off the block: the *children* ``c`` of
    ``g`` (``g`` is the last earlier string with ``lcp < lcp[c]``), in
    increasing order and with non-increasing ``lcp``.  From the shallow end:
    depths ``lcp[g]+1 .. lcp[c_m]`` end where the first later string with
    ``lcp <= lcp[g]`` starts; depths ``lcp[c_k]+1 .. lcp[c_(k-1)]`` end at
    ``c_k`` (children with equal ``lcp`` leave empty steps; the smallest id
    keeps the step); the deepest step ends at ``c_1``.  Sorting these steps by
    (block, lower depth) and ``np.repeat`` gives every node's answer in node
    order: O(G log G + n) for ``G`` strings and ``n`` nodes.
    """
    G = len(lcp)
    starts = np.append(first, n)              # string G stands for "the end"
    term = _next_le(lcp)                      # the step at the shallow end of each block
    child = np.flatnonzero(lcp > 0)[::-1]     # strings hanging off another block, largest first
    parent = _prev_lt(lcp)[child]
    order = np.argsort(parent, kind="stable")  # by block, then child id descending
    child, parent = child[order], parent[order]
    # entries per block, shallow to deep: the terminator, then its children
    n_child = np.bincount(parent, minlength=G)
    before = np.zeros(G, dtype=np.int64)
    np.cumsum(n_child[:-1], out=before[1:])
    E = G + len(child)
    value = np.empty(E, dtype=np.int64)
    lower = np.empty(E, dtype=np.int64)
    t_pos = np.arange(G) + before
    c_pos = np.arange(len(child)) + parent + 1
    value[t_pos], lower[t_pos] = term, lcp
    value[c_pos], lower[c_pos] = child, lcp[child]
    upper = np.empty(E, dtype=np.int64)
    upper[:-1] = lower[1:]
    upper[t_pos + n_child] = lens            # a block's deepest step ends at its own length
    return np.repeat(starts[value], upper - lower)
