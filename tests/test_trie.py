"""TokTrie: exact arrays for a hand-drawn vocabulary, random vocabularies
against a naive dict-of-dicts trie, and full real vocabularies."""

import random

import numpy as np
import pytest

from cfgmask.errors import ConfigurationError
from cfgmask.engine.trie import TokTrie
from cfgmask.engine.vocab import Vocabulary
from support.vocabs import ALL_VOCABS

A, B, C = ord("a"), ord("b"), ord("c")


def test_hand_drawn_vocabulary():
    """Ten ids; 4 is special, 7 is empty (both None), 5 duplicates 1, 9 is past
    the tokenizer (vocab_size 10 > 9 entries)::

        id:     0    1    2     3    4     5    6    7    8
        bytes:  a    ab   abc   b    None  ab   ac   b""  ba

        node  byte  depth  token  subtree_end
        0     -     0      -1     7            root
        1     a     1      0      5            ├─ a        (0)
        2     b     2      1      4            │  ├─ b     (1, 5)
        3     c     3      2      4            │  │  └─ c  (2)
        4     c     2      6      5            │  └─ c     (6)
        5     b     1      3      7            └─ b        (3)
        6     a     2      8      7               └─ a     (8)
    """
    vocab = Vocabulary([b"a", b"ab", b"abc", b"b", None, b"ab", b"ac", b"", b"ba"], [],
                       vocab_size=10)
    t = TokTrie.build(vocab)
    assert t.n_nodes == 7 and t.max_depth == 3 and t.vocab_size == 10 and t.n_trie_tokens == 7
    assert t.node_byte.tolist() == [0, A, B, C, C, B, A]
    assert t.node_depth.tolist() == [0, 1, 2, 3, 2, 1, 2]
    assert t.node_token.tolist() == [-1, 0, 1, 2, 6, 3, 8]
    assert t.node_subtree_end.tolist() == [7, 5, 4, 4, 5, 7, 7]
    assert t.node_first_child.tolist() == [1, 2, 3, -1, -1, 6, -1]
    assert t.token_same_next.tolist() == [-1, 5, -1, -1, -1, -1, -1, -1, -1, -1]
    assert t.token_node.tolist() == [1, 2, 3, 5, -1, 2, 4, -1, 6, -1]
    assert [a.dtype for a in (t.node_byte, t.node_depth, t.node_token, t.node_subtree_end,
                              t.token_same_next, t.token_node)] == [np.uint8] + [np.int32] * 5
    assert t.subtree_tokens(0) == [0, 1, 2, 3, 5, 6, 8]
    assert t.subtree_tokens(1) == [0, 1, 2, 5, 6]
    assert t.subtree_tokens(2) == [1, 2, 5]
    assert t.subtree_tokens(6) == [8]
    assert t.children(0) == [1, 5] and t.children(1) == [2, 4] and t.children(3) == []
    assert t.find(b"") == 0 and t.find(b"ab") == 2 and t.find(b"ac") == 4
    assert t.find(b"abd") == -1 and t.find(b"c") == -1 and t.find(b"bab") == -1
    assert [t.node_prefix(i) for i in range(7)] == [b"", b"a", b"ab", b"abc", b"ac", b"b", b"ba"]
    assert t.same_bytes_tokens(1) == [1, 5]
    with pytest.raises(ValueError):
        t.node_token[0] = 5  # arrays are read-only
    assert vocab.trie() is vocab.trie()  # built once per vocabulary
    assert vocab.trie().node_subtree_end.tolist() == t.node_subtree_end.tolist()


def test_extreme_bytes_sort_unsigned():
    """Byte 0x00 sorts first and 0xFF last; a lone root for an empty vocabulary::

        root ─┬─ 00 (2)
              └─ ff (0) ── 00 (1)
    """
    t = TokTrie.from_token_bytes([b"\xff", b"\xff\x00", b"\x00"])
    assert t.node_byte.tolist() == [0, 0x00, 0xFF, 0x00]
    assert t.node_token.tolist() == [-1, 2, 0, 1]
    assert t.node_subtree_end.tolist() == [4, 2, 4, 4]
    empty = TokTrie.from_token_bytes([None, b""], vocab_size=3)
    assert empty.n_nodes == 1 and empty.node_subtree_end.tolist() == [1]
    assert empty.token_node.tolist() == [-1, -1, -1] and empty.max_depth == 0


def test_from_token_bytes_validation():
    with pytest.raises(ConfigurationError):
        TokTrie.from_token_bytes([b"a", "b"])
    with pytest.raises(ConfigurationError):
        TokTrie.from_token_bytes([b"a", b"b"], vocab_size=1)
    assert TokTrie.from_token_bytes([bytearray(b"ab")]).node_prefix(2) == b"ab"


# ------------------------------------------------------ naive reference trie

def _naive_check(token_bytes, vocab_size):
    """Compare a TokTrie with a dict-of-dicts trie built the obvious way."""
    t = TokTrie.from_token_bytes(token_bytes, vocab_size)
    root = {}
    for i, tb in enumerate(token_bytes):
        if not tb:
            continue
        node = root
        for b in tb:
            node = node.setdefault(b, {})
        node.setdefault(None, []).append(i)  # key None: tokens ending here

    # pre-order, children by byte: (prefix, tokens ending here, subtree tokens); an
    # explicit stack, because long tokens make the trie deeper than Python recursion
    order = []
    stack = [(root, b"")]
    while stack:
        node, prefix = stack.pop()
        order.append((prefix, node.get(None, [])))
        for b in sorted((k for k in node if k is not None), reverse=True):
            stack.append((node[b], prefix + bytes([b])))
    order = [(p, here, sorted(j for j, tb in enumerate(token_bytes) if tb and tb.startswith(p)))
             for p, here in order]

    assert t.n_nodes == len(order)
    for i, (prefix, here, subtree) in enumerate(order):
        assert t.node_depth[i] == len(prefix)
        assert t.node_byte[i] == (prefix[-1] if prefix else 0)
        assert t.node_prefix(i) == prefix
        assert t.node_token[i] == (min(here) if here else -1)
        assert t.subtree_tokens(i) == subtree  # every token with that prefix
        if here:
            assert t.same_bytes_tokens(here[0]) == sorted(here)
    assert [t.node_prefix(i) for i in range(t.n_nodes)] == sorted(p for p, _, _ in order)
    for i, tb in enumerate(token_bytes):
        if tb:
            assert t.node_prefix(t.token_node[i]) == tb
        else:
            assert t.token_node[i] == -1 and t.token_same_next[i] == -1
    assert (t.token_node[len(token_bytes):] == -1).all()
    assert t.max_depth == max([len(tb) for tb in token_bytes if tb] + [0])
    return t


@pytest.mark.parametrize("seed", range(60))
def test_random_vocabularies_match_naive_trie(seed):
    rng = random.Random(seed)
    alphabet = rng.choice([b"ab", b"abc", bytes([0, 1, 255]), bytes(range(256)), b"a \n"])
    n = rng.randint(0, 80)
    token_bytes = []
    for _ in range(n):
        r = rng.random()
        if r < 0.1:
            token_bytes.append(None)
        elif r < 0.15:
            token_bytes.append(b"")
        elif r < 0.3 and token_bytes and any(token_bytes):
            token_bytes.append(rng.choice([tb for tb in token_bytes if tb]))  # duplicate
        else:
            k = rng.randint(1, 7)
            token_bytes.append(bytes(rng.choice(alphabet) for _ in range(k)))
    t = _naive_check(token_bytes, n + rng.randint(0, 5))
    _check_first_byte_sets(t, token_bytes)


def _check_first_byte_sets(t, token_bytes):
    # the runtime's first-byte token sets, against grouping the token bytes by hand
    offsets, words, bits = t.first_byte_sets()
    assert offsets[0] == 0 and offsets[256] == len(words) == len(bits)
    for b in range(256):
        want = sorted(i for i, tb in enumerate(token_bytes) if tb and tb[0] == b)
        got = sorted(32 * int(w) + k for w, x in zip(words[offsets[b]:offsets[b + 1]], bits[offsets[b]:offsets[b + 1]])
                     for k in range(32) if (int(x) >> k) & 1)
        assert got == want, b
        assert list(words[offsets[b]:offsets[b + 1]]) == sorted(set(words[offsets[b]:offsets[b + 1]]))


# --------------------------------------------------------- real vocabularies

@pytest.mark.parametrize("name", sorted(ALL_VOCABS))
def test_real_vocabulary_round_trip(name):
    vocab = ALL_VOCABS[name]()
    t = TokTrie.build(vocab)
    n = t.n_nodes
    depth = t.node_depth.tolist()
    byte = t.node_byte.tolist()
    end = t.node_subtree_end.tolist()
    # spell every node's prefix in one pre-order pass
    prefixes = [b""] * n
    path = [b""]
    for i in range(1, n):
        d = depth[i]
        assert 1 <= d <= len(path)
        del path[d:]
        p = path[-1] + bytes([byte[i]])
        path.append(p)
        prefixes[i] = p
    # nodes are exactly the distinct prefixes of the tokens, in sorted order
    expected = {b""}
    for tb in vocab.token_bytes:
        if tb is not None:
            expected.update(tb[:k] for k in range(1, len(tb) + 1))
    assert prefixes == sorted(expected)
    # every token's node spells its bytes; specials and EOS are not in the trie
    for i, tb in enumerate(vocab.token_bytes):
        node = int(t.token_node[i])
        if tb is None:
            assert node == -1
        else:
            assert prefixes[node] == tb
            assert i in t.same_bytes_tokens(int(t.node_token[node]))
    for e in vocab.eos_token_ids:
        assert t.token_node[e] == -1
    assert t.vocab_size == vocab.vocab_size
    # subtree ends, by a monotonic stack: first later node not deeper
    ref_end = [n] * n
    stack = []
    for i in range(n):
        while stack and depth[stack[-1]] >= depth[i]:
            ref_end[stack.pop()] = i
        stack.append(i)
    assert end == ref_end
    assert t.max_depth == max(len(tb) for tb in vocab.token_bytes if tb)
    ratio = n / t.n_trie_tokens
    assert 1.0 < ratio < 3.0, ratio


# ------------------------------------------- long tokens (issue 12, finding 11a)
# The build is linear in the total token bytes; these shapes used to make a
# per-depth loop run once per byte of the longest token.  Timing lives in
# benchmarks/run_ttfm.py; here the shapes are checked for exactness.

def _long_token_vocabularies():
    rng = random.Random(7)
    noise = bytes(rng.choice(b"ab \n") for _ in range(500))
    yield "one long token among bytes", [bytes([i]) for i in range(256)] + [noise]
    yield "nested prefixes a, aa, aaa, ...", [b"a" * k for k in range(1, 300)]
    yield "long shared prefix", [noise + bytes([i]) for i in range(40)] + [noise[:1000], noise]
    yield "siblings with equal lcp", [b"x" * 50 + bytes([i]) + b"y" * (i % 7) for i in range(200)]
    yield "staircase", [b"ab" * k + b"c" for k in range(100)] + [b"ab" * k for k in range(1, 100)]
    yield "duplicates of a long token", [noise, None, noise, noise[:-1], noise]


@pytest.mark.parametrize("budget", [1 << 20, 16])
@pytest.mark.parametrize("case", list(_long_token_vocabularies()), ids=lambda c: c[0])
def test_long_tokens_match_naive_trie(case, budget, monkeypatch):
    # a small budget forces many narrow comparison windows in the lcp step
    monkeypatch.setattr("cfgmask.engine.trie._LCP_BUDGET", budget)
    _naive_check(case[1], len(case[1]) + 2)


def test_nearest_smaller_helpers_match_brute_force():
    from cfgmask.engine.trie import _next_le, _prev_lt
    rng = np.random.default_rng(3)
    for size in [1, 2, 3, 10, 100, 1000]:
        for hi in [1, 3, 50]:
            v = rng.integers(0, hi, size).astype(np.int64)
            nxt = [next((j for j in range(i + 1, size) if v[j] <= v[i]), size) for i in range(size)]
            prv = [next((j for j in range(i - 1, -1, -1) if v[j] < v[i]), -1) for i in range(size)]
            assert _next_le(v).tolist() == nxt
            assert _prev_lt(v).tolist() == prv


def test_node_dups_marks_exactly_the_nodes_whose_token_has_duplicates():
    """``TokTrie.node_dups`` (built from the chained ids) against its definition
    (``token_same_next`` of each node's ``node_token``), on random vocabularies
    with duplicates and missing tokens."""
    rng = np.random.default_rng(23)
    for _ in range(100):
        words = [bytes(rng.integers(97, 100, rng.integers(1, 5)).tolist()) for _ in range(30)]
        tb = [words[rng.integers(0, 30)] if rng.random() > 0.1 else None for _ in range(120)]
        trie = TokTrie.from_token_bytes(tb)
        tok = np.asarray(trie.node_token)
        want = np.zeros(trie.n_nodes, dtype=np.uint8)
        want[tok >= 0] = np.asarray(trie.token_same_next)[tok[tok >= 0]] >= 0
        assert want.any()
        assert np.array_equal(trie.node_dups(), want)
