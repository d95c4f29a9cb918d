"""Disk caches: the container format, prepared vocabularies, lexer tables, grammars.

The oracle for every cache is a fresh build with the cache turned off: a hit
must give identical arrays (and identical masks), and any damaged, stale or
foreign file must be rebuilt, never trusted.
"""

import os
import random
import subprocess
import sys
import threading

import numpy as np
import pytest

import cfgmask
from cfgmask import cache
from cfgmask.engine import lexer
from cfgmask.grammar import Grammar
from cfgmask.engine.prepared import registered_parts, subtree_byte_sets
from cfgmask.engine.trie import TokTrie
from cfgmask.engine.vocab import Vocabulary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def cdir(tmp_path, monkeypatch):
    """A fresh, empty cache directory for one test (and an empty in-memory lexer cache).

    Everything is persisted, however cheap: these tests are about the files
    (``test_cheap_lexer_tables_stay_in_memory`` checks the threshold)."""
    d = tmp_path / "cache"
    monkeypatch.setenv("CFGMASK_CACHE_DIR", str(d))
    monkeypatch.delenv("CFGMASK_CACHE", raising=False)
    monkeypatch.setattr(lexer, "_memory", cache.BoundedMemo(lexer._memory.size))
    monkeypatch.setattr(cache, "PERSIST_ABOVE_S", 0.0)
    return d


def _small_vocab(seed=0, n=300):
    rng = random.Random(seed)
    alphabet = b'ab {}[]":,0123456789 \n-.etrufalsn'
    toks = [bytes([b]) for b in sorted(set(alphabet))]
    while len(toks) < n:
        toks.append(bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 6))))
    return Vocabulary(toks + [None], eos_token_ids=[len(toks)], vocab_size=len(toks) + 7)


def _files(d, kind):
    cache.flush()       # stages write their entries on the cache's writer thread
    return sorted((d / kind).glob("*.cfgm")) if (d / kind).exists() else []


# ------------------------------------------------------------ container

def test_store_load_round_trip(cdir):
    key = {"what": "test", "n": 3}
    arrays = {"a": np.arange(10, dtype=np.int32), "b": np.zeros((0, 4), dtype=np.uint64),
              "c": np.array([[1, 2], [3, 4]], dtype="<u8"), "d": np.frombuffer(b"xyz", np.uint8)}
    assert cache.store("unit", key, {"hello": [1, "x"]}, arrays)
    meta, got = cache.load("unit", key)
    assert meta == {"hello": [1, "x"]}
    assert sorted(got) == sorted(arrays)
    for k, a in arrays.items():
        assert got[k].dtype == a.dtype and got[k].shape == a.shape and (got[k] == a).all()
        assert not got[k].flags.writeable
    assert cache.load("unit", {"what": "test", "n": 4}) is None   # another key: a miss
    assert cache.load("other", key) is None                       # another kind: a miss
    assert [p.name for p in (cdir / "unit").iterdir()] == [cache.entry_path("unit", key).name]


def _damage(path, how):
    data = bytearray(path.read_bytes())
    if how == "truncate":
        data = data[: len(data) // 2]
    elif how == "truncate-header":
        data = data[:10]
    elif how == "empty":
        data = b""
    elif how == "flip-payload":
        data[-3] ^= 0x40
    elif how == "flip-header":
        data[30] ^= 0x01
    elif how == "magic":
        data[:8] = b"NOTCFGM\x01"
    elif how == "append":
        data += b"\0"
    path.write_bytes(bytes(data))


DAMAGES = ["truncate", "truncate-header", "empty", "flip-payload", "flip-header", "magic", "append"]


@pytest.mark.parametrize("how", DAMAGES)
def test_damaged_file_is_rejected(cdir, how):
    key = {"k": 1}
    cache.store("unit", key, {}, {"a": np.arange(1000, dtype=np.int64)})
    _damage(cache.entry_path("unit", key), how)
    before = dict(cache.stats)
    assert cache.load("unit", key) is None
    assert cache.stats["rejected"] == before["rejected"] + 1


def test_wrong_format_version_and_foreign_key_are_rejected(cdir, monkeypatch):
    key = {"k": 1}
    with monkeypatch.context() as m:
        m.setattr(cache, "FORMAT_VERSION", cache.FORMAT_VERSION + 1)
        cache.store("unit", key, {}, {"a": np.arange(5)})
    assert cache.load("unit", key) is None
    # a valid entry of key A copied to key B's file name: the full key is re-checked
    a, b = {"k": "A"}, {"k": "B"}
    cache.store("unit", a, {}, {"a": np.arange(5)})
    cache.entry_path("unit", b).write_bytes(cache.entry_path("unit", a).read_bytes())
    assert cache.load("unit", b) is None and cache.load("unit", a) is not None


def test_disable_and_directory_override(tmp_path, monkeypatch):
    monkeypatch.setenv("CFGMASK_CACHE_DIR", str(tmp_path / "x"))
    monkeypatch.setenv("CFGMASK_CACHE", "0")
    assert cache.cache_dir() is None and not cache.enabled()
    assert not cache.store("unit", {"k": 1}, {}, {"a": np.arange(3)})
    assert cache.load("unit", {"k": 1}) is None
    assert not (tmp_path / "x").exists()
    monkeypatch.setenv("CFGMASK_CACHE", "1")
    assert cache.cache_dir() == tmp_path / "x"
    monkeypatch.delenv("CFGMASK_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "cfgmask"


def test_unwritable_directory_is_not_an_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("CFGMASK_CACHE_DIR", str(blocker / "sub"))
    assert not cache.store("unit", {"k": 1}, {}, {"a": np.arange(3)})
    v = _small_vocab()
    assert v.prepared().part("trie").source == "built"   # and the build still works


def test_concurrent_writers_and_readers_never_see_a_partial_file(cdir):
    key = {"k": "shared"}
    payload = {"a": np.arange(200_000, dtype=np.int64)}
    errors, seen = [], []

    def writer():
        for _ in range(15):
            cache.store("unit", key, {"m": 1}, payload)

    def reader():
        for _ in range(60):
            got = cache.load("unit", key)
            if got is not None:
                seen.append(1)
                if not (got[1]["a"] == payload["a"]).all():
                    errors.append("wrong content")

    threads = [threading.Thread(target=writer) for _ in range(3)] + \
              [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cache.load("unit", key) is not None
    assert not list((cdir / "unit").glob(".tmp-*"))  # no temporary file left behind


def test_background_store_is_read_back_flushed_and_written_at_exit(cdir, tmp_path):
    """cached_build writes on the writer thread; a load of an entry whose write is
    pending waits for it, flush() waits for all of them, and a process that exits
    right after a compile still leaves its entries on disk."""
    key = {"k": "background"}
    payload = {"a": np.arange(200_000, dtype=np.int32)}
    built = []

    def build():
        built.append(1)
        return {"m": 1}, payload
    meta, arrays, source = cache.cached_build("unit", key, build)
    assert source == "built" and built == [1]
    got = cache.load("unit", key)           # no flush: waits for the pending write
    assert got is not None and got[0] == {"m": 1} and (got[1]["a"] == payload["a"]).all()
    for i in range(5):
        cache.store("unit", {"k": i}, {}, {"a": np.full(10, i, np.int32)}, background=True)
    assert cache.flush(timeout=30)
    assert len(_files(cdir, "unit")) == 6
    # a child process: compile, exit at once; its entries are on disk afterwards
    child = tmp_path / "child_cache"
    code = ("import cfgmask\n"
            "from cfgmask import cache\n"
            "cache.PERSIST_ABOVE_S = 0.0\n"
            "v = cfgmask.Vocabulary([b'a', b'b', None], eos_token_ids=[2])\n"
            "cfgmask.compile(cfgmask.Grammar.from_lark('start: (\"a\" | \"b\")+'), v)\n")
    env = dict(os.environ, CFGMASK_CACHE_DIR=str(child), PYTHONPATH=ROOT)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    assert _files(child, "lexer") and not list(child.rglob(".tmp-*"))


# --------------------------------------------------- prepared vocabulary

def _arrays_of(vocab, name):
    p = vocab.prepared().part(name)
    return p, {k: np.array(v) for k, v in p.arrays.items()}


def _assert_same(a, b):
    assert sorted(a) == sorted(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and (a[k] == b[k]).all(), k


@pytest.mark.parametrize("name", registered_parts())
def test_prepared_part_from_cache_equals_fresh_build(cdir, monkeypatch, name):
    v = _small_vocab(1)
    first, built = _arrays_of(v, name)
    assert first.source == "built"
    again, loaded = _arrays_of(Vocabulary(v.token_bytes, v.eos_token_ids, v.vocab_size), name)
    persisted = name != "tokens"
    assert again.source == ("disk" if persisted else "built")
    _assert_same(built, loaded)
    monkeypatch.setenv("CFGMASK_CACHE", "off")
    fresh, uncached = _arrays_of(Vocabulary(v.token_bytes, v.eos_token_ids, v.vocab_size), name)
    assert fresh.source == "built"
    _assert_same(built, uncached)


@pytest.mark.parametrize("how", DAMAGES + ["version"])
def test_damaged_prepared_part_is_rebuilt_identically(cdir, monkeypatch, how):
    v = _small_vocab(2)
    _, built = _arrays_of(v, "trie")
    path = _files(cdir, "vocab")[0]
    if how == "version":
        with monkeypatch.context() as m:
            m.setattr(cache, "FORMAT_VERSION", cache.FORMAT_VERSION + 1)
            cache.store("vocab", v.prepared().key("trie"), {}, built)  # a file of another format
    else:
        _damage(path, how)
    v2 = Vocabulary(v.token_bytes, v.eos_token_ids, v.vocab_size)
    p2, rebuilt = _arrays_of(v2, "trie")
    assert p2.source == "built"
    _assert_same(built, rebuilt)
    # the rebuild replaced the bad file: the next process loads it
    v3 = Vocabulary(v.token_bytes, v.eos_token_ids, v.vocab_size)
    p3, loaded = _arrays_of(v3, "trie")
    assert p3.source == "disk"
    _assert_same(built, loaded)


def test_different_vocabularies_never_share_an_entry(cdir):
    a = Vocabulary([b"a", b"b", b"ab"], [])
    variants = [Vocabulary([b"a", b"b", b"ab"], [], vocab_size=4),
                Vocabulary([b"a", b"b", b"ab", None], [3]),
                Vocabulary([b"a", b"b", b"ba"], []),
                Vocabulary([b"a", b"ba", b"b"], [])]
    keys = {cache.key_digest(v.prepared().key("trie")) for v in [a] + variants}
    assert len(keys) == 5
    for v in [a] + variants:
        t = v.trie()
        ref = TokTrie.from_token_bytes(v.token_bytes, v.vocab_size)
        assert t.node_subtree_end.tolist() == ref.node_subtree_end.tolist()
        assert t.token_node.tolist() == ref.token_node.tolist()


def test_trie_from_cache_is_not_copied_and_is_read_only(cdir):
    v = _small_vocab(3)
    v.trie()
    v2 = Vocabulary(v.token_bytes, v.eos_token_ids, v.vocab_size)
    t = v2.trie()
    assert v2.prepared().part("trie").source == "disk"
    assert t.node_byte.base is not None        # a view of the loaded file, not a copy
    with pytest.raises(ValueError):
        t.node_depth[0] = 1


def test_vocabulary_pickles_without_its_caches(cdir):
    import pickle
    v = _small_vocab(4)
    v.trie()
    w = pickle.loads(pickle.dumps(v))
    assert w == v and w.fingerprint() == v.fingerprint() and w._prepared is None


# ------------------------------------------------------ subtree byte sets

def _reference_sets(trie):
    out = []
    for i in range(trie.n_nodes):
        end = int(trie.node_subtree_end[i])
        out.append(frozenset(int(b) for b in trie.node_byte[i + 1:end]))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_subtree_byte_sets_match_brute_force(seed):
    rng = random.Random(seed)
    alphabet = rng.choice([b"ab", bytes(range(256)), b"a\x00\xff \n", b"xyz"])
    toks = [bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(rng.randint(0, 60))]
    if seed == 0:
        toks.append(bytes(range(256)) * 3)  # every byte, deep
    t = TokTrie.from_token_bytes(toks)
    node_set, table = subtree_byte_sets(t)
    assert node_set.shape == (t.n_nodes,) and table.shape[1] == 4 and table.dtype == np.uint64
    assert (table[0] == 0).all()                                    # row 0: the empty set
    as_ints = [sum(int(w) << (64 * k) for k, w in enumerate(row)) for row in table]
    assert as_ints == sorted(set(as_ints))                          # distinct, sorted
    for i, ref in enumerate(_reference_sets(t)):
        bits = as_ints[node_set[i]]
        assert frozenset(b for b in range(256) if bits >> b & 1) == ref


# ------------------------------------------------------- lexer tables

def _spec_arrays(spec):
    return ([t.tolist() for t in spec.class_tables], spec.accepting, spec.end_forbidden,
            spec.class_of_byte.tolist(), spec.n_classes, spec.ignore_mask,
            [(d.trans.tolist(), d.accepting.tolist(), d.follow_forbidden, d.follow_forbidden_at_eos)
             for d in spec.dfas])


@pytest.mark.parametrize("name", ["json", "sql"])
def test_lexer_tables_from_cache_equal_fresh_ones(cdir, monkeypatch, name):
    g = Grammar.builtin(name)
    built = lexer.LexerSpec(g)
    assert built.source == "built"
    monkeypatch.setattr(lexer, "_memory", cache.BoundedMemo(lexer._memory.size))
    disk = lexer.LexerSpec(g)
    assert disk.source == "disk"
    memory = lexer.LexerSpec(g)
    assert memory.source == "memory"
    monkeypatch.setenv("CFGMASK_CACHE", "0")
    monkeypatch.setattr(lexer, "_memory", cache.BoundedMemo(lexer._memory.size))
    fresh = lexer.LexerSpec(g)
    assert fresh.source == "built"
    ref = _spec_arrays(fresh)
    assert _spec_arrays(built) == ref and _spec_arrays(disk) == ref and _spec_arrays(memory) == ref


def test_lookahead_terminals_round_trip(cdir, monkeypatch):
    g = Grammar.from_lark('start: A B | C\nA: /ab(?!c)/\nB: /c|d(?=e)/\nC: /[a-e]+/\n')
    built = _spec_arrays(lexer.LexerSpec(g))
    monkeypatch.setattr(lexer, "_memory", cache.BoundedMemo(lexer._memory.size))
    assert _spec_arrays(lexer.LexerSpec(g)) == built


def test_cheap_lexer_tables_stay_in_memory(cdir, monkeypatch):
    from cfgmask import automata as regex
    monkeypatch.setattr(cache, "PERSIST_ABOVE_S", 3600.0)
    g = Grammar.from_lark('start: A B\nA: /q[a-z]{1,7}z/\nB: "!"\n')
    assert lexer.LexerSpec(g).source == "built" and not _files(cdir, "lexer")
    # what a fresh process would pay counts the automata found memoised
    assert regex.build_cost("q[a-z]{1,7}z") > 0
    monkeypatch.setattr(cache, "PERSIST_ABOVE_S", regex.build_cost("q[a-z]{1,7}z") / 2)
    monkeypatch.setattr(lexer, "_memory", cache.BoundedMemo(lexer._memory.size))
    assert lexer.LexerSpec(g).source == "built" and _files(cdir, "lexer")
    monkeypatch.setattr(lexer, "_memory", cache.BoundedMemo(lexer._memory.size))
    assert lexer.LexerSpec(g).source == "disk"


def test_lexer_errors_are_not_cached(cdir):
    g = Grammar.from_lark('start: A\nA: /a{1,50}/\n')
    with pytest.raises(cfgmask.GrammarError):
        lexer.LexerSpec(g, max_states=20)
    assert lexer.LexerSpec(g, max_states=100).n_states(0) == 51
    with pytest.raises(cfgmask.GrammarError):   # a smaller limit is another key: fails again
        lexer.LexerSpec(g, max_states=20)


# ------------------------------------------------------------ grammars

def _grammar_state(g):
    return {k: (v.tolist(), str(v.dtype)) if isinstance(v, np.ndarray) else v
            for k, v in vars(g).items()}


@pytest.mark.parametrize("name", ["json", "sql", "javascript"])
def test_grammar_from_cache_equals_lark(cdir, monkeypatch, name):
    first = Grammar.builtin(name)
    assert len(_files(cdir, "grammar")) == 1
    hit = Grammar.builtin(name)
    monkeypatch.setenv("CFGMASK_CACHE", "0")
    fresh = Grammar.builtin(name)
    assert _grammar_state(first) == _grammar_state(fresh) == _grammar_state(hit)
    assert hit.rules_text() == fresh.rules_text()


def test_changed_import_invalidates_the_grammar_entry(cdir, tmp_path):
    d = tmp_path / "g"
    d.mkdir()
    (d / "words.lark").write_text('WORD: "cat"\n')
    (d / "main.lark").write_text('%import .words.WORD\nstart: WORD\n')
    g1 = Grammar.from_file(d / "main.lark")
    assert Grammar.from_file(d / "main.lark").terminal_patterns == g1.terminal_patterns
    (d / "words.lark").write_text('WORD: "dog"\n')
    g2 = Grammar.from_file(d / "main.lark")
    assert "dog" in g2.terminal_patterns[0] and "cat" in g1.terminal_patterns[0]


def test_imports_from_lark_common_are_recorded(cdir):
    text = '%import common (INT, WS)\n%ignore WS\nstart: INT ("," INT)*\n'
    g = Grammar.from_lark(text)
    meta, _ = cache.load("grammar", __import__("cfgmask.frontends.grammar_cache").frontends.grammar_cache.grammar_key(
        text, "start", (), None, None))
    assert meta["imports"] and meta["imports"][0][0] in ("package", "file")
    assert _grammar_state(Grammar.from_lark(text)) == _grammar_state(g)


def test_loader_import_paths_bypass_the_cache(cdir, tmp_path):
    from lark.load_grammar import FromPackageLoader
    loader = FromPackageLoader("lark", ("grammars",))
    text = '%import common.INT\nstart: INT\n'
    g = Grammar.from_lark(text, import_paths=[loader])
    assert g.terminal_names == ["INT"] and not _files(cdir, "grammar")


def test_grammar_errors_are_not_cached(cdir):
    for _ in range(2):
        with pytest.raises(cfgmask.GrammarError):
            Grammar.from_lark("start: UNDEFINED_THING\n")
    assert not _files(cdir, "grammar")


# -------------------------------------------- masks with and without caches

@pytest.mark.parametrize("name,doc", [
    ("json", b'{"a": [1, -2.5e3, true, null], "b": "x\\n"}'),
    ("sql", b"SELECT a, count(*) FROM t WHERE b = 'x' GROUP BY a"),
])
def test_masks_are_identical_with_and_without_caches(cdir, monkeypatch, name, doc):
    from support.vocabs import sp_vocab
    vocab = sp_vocab()
    text = Grammar.builtin_path(name).read_text()

    def masks(vocab):
        c = cfgmask.compile(Grammar.from_lark(text, import_paths=[Grammar.builtin_path(name).parent]),
                            vocab)
        m = c.matcher()
        out = []
        for b in doc:
            out.append(m.allowed_tokens().tolist())
            assert m.consume_bytes(bytes([b])) == 1
        out.append(m.allowed_tokens().tolist())
        return out

    cold = masks(vocab)       # builds and stores everything
    monkeypatch.setattr(lexer, "_memory", cache.BoundedMemo(lexer._memory.size))
    warm = masks(Vocabulary(vocab.token_bytes, vocab.eos_token_ids, vocab.vocab_size))
    monkeypatch.setenv("CFGMASK_CACHE", "0")
    monkeypatch.setattr(lexer, "_memory", cache.BoundedMemo(lexer._memory.size))
    off = masks(Vocabulary(vocab.token_bytes, vocab.eos_token_ids, vocab.vocab_size))
    assert cold == warm == off
    assert _files(cdir, "vocab") and _files(cdir, "lexer") and _files(cdir, "grammar")


# --- the in-memory memo and the one look-up order (cache.BoundedMemo, cache.cached_build)

def test_bounded_memo_lru_keeps_what_is_used():
    m = cache.BoundedMemo(2)
    m.put("a", 1)
    m.put("b", 2)
    assert m.get("a") == 1          # a is now the newest
    m.put("c", 3)                   # evicts b, the least recently used
    assert m.keys() == ["a", "c"] and m.get("b") is None and len(m) == 2


def test_bounded_memo_fifo_ages_from_insertion():
    m = cache.BoundedMemo(2, order="fifo")
    m.put("a", 1)
    m.put("b", 2)
    assert m.get("a") == 1          # a hit does not refresh
    m.put("c", 3)
    assert m.keys() == ["b", "c"] and "a" not in m


@pytest.mark.parametrize("args", [(0,), (2, "random")])
def test_bounded_memo_rejects_bad_settings(args):
    with pytest.raises(ValueError):
        cache.BoundedMemo(*args)


def test_cached_build_memory_disk_built(cdir):
    calls = []
    arr = np.arange(5, dtype=np.int32)

    def build():
        calls.append(1)
        return {"n": 5}, {"a": arr}

    memo = cache.BoundedMemo(4)
    key = {"what": "test", "n": 5}
    meta, arrays, source = cache.cached_build("test", key, build, memo=memo)
    assert source == "built" and meta == {"n": 5} and len(calls) == 1
    assert cache.cached_build("test", key, build, memo=memo)[2] == "memory"
    memo.clear()
    meta, arrays, source = cache.cached_build("test", key, build, memo=memo,
                                              validate=lambda m, a: a["a"].shape == (5,))
    assert source == "disk" and np.array_equal(arrays["a"], arr) and len(calls) == 1
    # a disk entry failing the artefact's own check is rebuilt
    memo.clear()
    assert cache.cached_build("test", key, build, memo=memo, validate=lambda m, a: False)[2] == "built"
    assert len(calls) == 2


def test_cached_build_freezes_and_writes_in_place(cdir):
    """Built arrays come back read-only, as disk entries do (the memo shares them
    with every later compile); the background write reads a frozen array in
    place instead of copying it, and the entry reads back equal, strided,
    empty and 0-d arrays included (those are copied)."""
    base = np.arange(40, dtype=np.int64).reshape(8, 5)
    want = {"own": np.arange(1000, dtype=np.int32), "strided": base[:, 1].copy(),
            "empty": np.zeros(0, np.uint8), "scalar": np.array(7, dtype=np.int16),
            "table": np.arange(512, dtype=np.uint8).reshape(2, 256)}

    def build():
        return {"m": 1}, {"own": np.arange(1000, dtype=np.int32), "strided": base[:, 1],
                          "empty": np.zeros(0, np.uint8), "scalar": np.array(7, dtype=np.int16),
                          "table": np.arange(512, dtype=np.uint8).reshape(2, 256)}

    meta, arrays, source = cache.cached_build("test", {"k": "frozen"}, build)
    assert source == "built"
    assert all(not a.flags.writeable for a in arrays.values())
    with pytest.raises(ValueError):
        arrays["own"][0] = 1
    assert base.flags.writeable           # a view is frozen as a copy, its base untouched
    assert cache.flush(timeout=30)
    got = cache.load("test", {"k": "frozen"})
    assert got is not None and got[0] == {"m": 1}
    for name, a in want.items():
        assert got[1][name].dtype == a.dtype and np.array_equal(got[1][name], a), name


def test_cached_build_failure_and_persist(cdir):
    memo = cache.BoundedMemo(4)

    def bad():
        raise cfgmask.GrammarError("no")

    for _ in range(2):              # a failure is not remembered: it raises every time
        with pytest.raises(cfgmask.GrammarError):
            cache.cached_build("test", {"k": 1}, bad, memo=memo, memory_key="k")
    assert len(memo) == 0
    got = cache.cached_build("test", lambda: {"k": 2}, lambda: ({}, {}), memo=memo,
                             memory_key="k2", persist=lambda build_s: False)
    assert got[2] == "built" and not _files(cdir, "test")
    assert cache.cached_build("test", None, lambda: ({"m": 1}, {}), memo=memo, memory_key="k3")[2] == "built"
    assert cache.cached_build("test", None, lambda: 1 / 0, memo=memo, memory_key="k3")[2] == "memory"


def test_keys_name_texts_and_pattern_lists_by_digest_without_ambiguity():
    """The grammar and lexer keys hold digests, not the text and the patterns:
    any change of the text, and any other pattern list (split differently,
    reordered, one more), gives another key; the same inputs the same key."""
    from cfgmask.frontends import grammar_cache
    text = 'start: "a" B\nB: /b+/\n'
    key = grammar_cache.grammar_key(text, "start", [], None, None)
    assert key == grammar_cache.grammar_key(text, "start", [], None, None)
    assert "text" not in key and text not in cache._canonical(key)
    for other in (text.replace("b+", "b*"), text + " ", text.replace("a", "\udcff")):
        assert cache.key_digest(grammar_cache.grammar_key(other, "start", [], None, None)) != \
            cache.key_digest(key)
    base = lexer.lexer_tables_key(["ab", "c"], 100)
    assert base == lexer.lexer_tables_key(["ab", "c"], 100)
    digests = {cache.key_digest(lexer.lexer_tables_key(ps, 100))
               for ps in (["ab", "c"], ["a", "bc"], ["abc"], ["c", "ab"], ["ab", "c", ""], ["ab", "c\0"])}
    assert len(digests) == 6
    assert cache.key_digest(lexer.lexer_tables_key(["ab", "c"], 101)) != cache.key_digest(base)
