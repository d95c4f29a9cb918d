"""Lexeme slices and the mask caches never change a mask (issue #8).

A slice bug is a hole: it ORs in tokens without looking at them.  The oracle
here is the runtime's plain path, which shares none of the caches: a full
trie walk with the parser (``Matcher._set_use_cache(False)``) on a grammar
compiled without slices.  At every position of real documents replayed
token by token, with two real tokenizers and the three bundled grammars, the
mask with slices, entries and continuations must equal that walk bit for bit.
The brute-force suite (test_masks_bruteforce.py) compiles its tiny grammars
with slices forced on as well.

Also checked: the forest holds every token exactly once, each slice's tokens
are exactly the tokens its automaton accepts as prefixes (recomputed in plain
Python), and each token of a slice is in its own trie.
"""

import functools

import numpy as np
import pytest

import cfgmask
from cfgmask.engine import slice_walk as W
from cfgmask.engine import slice_candidates as SC
from cfgmask.engine import slices as S
from cfgmask.engine.lexer import LexerSpec
from support import corpora
from support import vocabs as V

GRAMMARS = ("json", "sql", "javascript")
TOKENIZERS = {"smollm2": (V.smollm2_vocab, V.smollm2_tokenizer), "tekken": (V.tekken_vocab, None)}


def _encoder(name):
    if name == "smollm2":
        tok = V.smollm2_tokenizer()
        return lambda s: list(tok.encode(s, add_special_tokens=False, split_special_tokens=True))
    enc = V.tekken_encoding()
    return lambda s: [r + 1000 for r in enc.encode(s, allowed_special=set(), disallowed_special=())]


@functools.lru_cache(maxsize=None)
def compiled(grammar, tokenizer, slices="eager"):
    # "eager" by name: the comparisons need slices whatever CFGMASK_SLICES says
    vocab = TOKENIZERS[tokenizer][0]()
    return cfgmask.compile(cfgmask.Grammar.builtin(grammar), vocab, slices=slices)


def documents(grammar, n):
    if grammar == "json":
        docs = corpora.jsonschemabench_docs()
        return [d for d in docs[::97] if len(d) < 600][:n]
    if grammar == "sql":
        queries = corpora.spider_queries()
        return queries[::max(1, len(queries) // (4 * n))][:4 * n]   # queries are short: 4x as many
    index = corpora.js_corpus_index()
    small = sorted((r for r in index if r["bytes"] < 6000), key=lambda r: r["sha256"])
    return [open(r["abspath"], encoding="utf-8").read()[:700] for r in small[:n]]


def _replay_and_compare(grammar, tokenizer, n_docs, max_tokens, fast=None):
    fast = fast if fast is not None else compiled(grammar, tokenizer)
    plain = compiled(grammar, tokenizer, False)
    assert fast.slices is not None and fast.slices.n > 0, "no slices were built"
    encode = _encoder(tokenizer)
    words = fast.bitmask_words
    checked = 0
    for doc in documents(grammar, n_docs):
        ids = encode(doc)[:max_tokens]
        a = fast.matcher()
        b = plain.matcher()
        b._set_use_cache(False)
        for pos, t in enumerate(ids):
            ma, mb = V.filled_bitmask(a, words), V.filled_bitmask(b, words)
            if not np.array_equal(ma, mb):
                diff = np.flatnonzero(np.unpackbits((ma ^ mb).view(np.uint8), bitorder="little"))
                extra = [int(x) for x in diff if (ma.view(np.uint32)[x >> 5] >> (x & 31)) & 1]
                vocab = fast.vocab
                raise AssertionError(
                    f"{grammar}/{tokenizer}: masks differ after {a.prefix[-60:]!r} (token {pos}); "
                    f"holes {[vocab.token_bytes[x] for x in extra[:8]]}, "
                    f"missing {[vocab.token_bytes[x] for x in diff[:8] if x not in extra]}")
            checked += 1
            if not a.try_consume(t):
                break
            assert b.try_consume(t)
    return checked


@pytest.mark.parametrize("tokenizer", sorted(TOKENIZERS))
@pytest.mark.parametrize("grammar", GRAMMARS)
def test_masks_with_slices_equal_the_plain_walk(grammar, tokenizer):
    assert _replay_and_compare(grammar, tokenizer, n_docs=2, max_tokens=60) > 20


@pytest.mark.slow
@pytest.mark.parametrize("tokenizer", sorted(TOKENIZERS))
@pytest.mark.parametrize("grammar", GRAMMARS)
def test_masks_with_slices_equal_the_plain_walk_long(grammar, tokenizer):
    assert _replay_and_compare(grammar, tokenizer, n_docs=12, max_tokens=400) > 500


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_whole_subtree_accept_equals_the_plain_walk(grammar):
    # off by default; a compile of its own so the shared cached one stays default
    c = cfgmask.compile(cfgmask.Grammar.builtin(grammar), TOKENIZERS["smollm2"][0]())
    c._runtime.use_subtree_accept = True
    assert c._runtime.use_subtree_accept
    assert _replay_and_compare(grammar, "smollm2", n_docs=2, max_tokens=60, fast=c) > 20
    assert c.cache_stats()["whole_subtree_hits"] > 0, "whole-subtree accept never fired"


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_forest_and_membership(grammar):
    c = compiled(grammar, "smollm2")
    tab = c.slices
    forest_tokens = tab.forest["node_token"]
    ids = forest_tokens[forest_tokens >= 0]
    trie_ids = c.trie.node_token[c.trie.node_token >= 0]
    assert len(ids) == len(set(ids.tolist())) == len(trie_ids), "a token is missing or twice in the forest"
    assert set(ids.tolist()) == set(trie_ids.tolist())
    tb = c.vocab.token_bytes
    rng = np.random.default_rng(0)
    p = c.vocab.prepared()
    flat, off, special = p.token_bytes_flat, p.token_offsets, p.token_special
    for i, sl in enumerate(tab.slices):
        # membership recomputed in plain Python on a sample of all tokens
        member = W.token_membership(sl.dfa, flat, off, special, sl.lead)
        for t in rng.choice(len(tb), size=400, replace=False):
            b = tb[t]
            want = bool(b) and sl.dfa.run(b) >= 0 and (sl.lead is None or len(b) >= 2)
            assert member[t] == want, f"{sl.name}: token {b!r}"
        # a slice's tokens are members, and they sit in its own trie
        own = np.flatnonzero(tab.tokens[i])
        assert member[own].all(), f"{sl.name} holds a token its language does not accept"
        lo, hi = int(tab.trie_lo[i]), int(tab.trie_hi[i])
        in_trie = forest_tokens[lo:hi]
        assert set(own.tolist()) == set(in_trie[in_trie >= 0].tolist())


@pytest.mark.parametrize("grammar", GRAMMARS)
@pytest.mark.parametrize("tokenizer", ["smollm2", "tekken"])
def test_compiled_trie_walk_equals_the_references(grammar, tokenizer):
    """_fast/_slicewalk.pyx's pre-order walk against the level-by-level numpy walk
    and the token-by-token reference, for every candidate slice of the grammar
    (and each as a cross slice); the filtered tries against a bottom-up climb."""
    c = compiled(grammar, tokenizer)
    p, trie = c.prepared, c.trie
    flat, off, special = p.token_bytes_flat, p.token_offsets, p.token_special
    candidates = S.derived(c.grammar, c.lexer_spec)
    assert len(candidates) >= 3
    rng = np.random.default_rng(1)
    for sl in candidates:
        for lead in (sl.lead, 0x20):
            got = W.trie_membership(sl.dfa, trie, special, lead)
            assert (got == W.trie_membership_levels(sl.dfa, trie, special, lead)).all(), sl.name
            ref = W.token_membership(sl.dfa, flat, off, special, lead)
            in_trie = trie.token_node > 0
            assert (got == (ref & in_trie)).all(), sl.name
    parent, by_depth, depth_start = trie.levels()
    tokn = np.asarray(trie.node_token)
    for keep in [rng.random(trie.vocab_size) < f for f in (0.0, 0.001, 0.3, 1.0)] + \
            [W.trie_membership(sl.dfa, trie, special) for sl in candidates[:4]]:
        has = np.zeros(trie.n_nodes, dtype=np.bool_)
        has[tokn >= 0] = keep[tokn[tokn >= 0]]
        for d in range(trie.max_depth, 0, -1):      # reference: a kept node keeps its parent
            here = by_depth[depth_start[d]:depth_start[d + 1]]
            has[parent[here[has[here]]]] = True
        has[0] = True
        node_byte, depth, node_token, send = W.filtered_trie(trie, keep)
        for got, want in zip((node_byte, depth, node_token, send), W.filtered_trie_numpy(trie, keep)):
            assert got.dtype == want.dtype and (got == want).all()
        assert (node_byte == np.asarray(trie.node_byte)[has]).all()
        assert (depth == np.asarray(trie.node_depth)[has]).all()
        kept_ids = node_token[node_token >= 0]
        assert set(kept_ids.tolist()) == set(tokn[has & (tokn >= 0)][keep[tokn[has & (tokn >= 0)]]].tolist())
        before = np.concatenate([[0], np.cumsum(has)])
        assert (send == before[np.asarray(trie.node_subtree_end)[has]]).all()


def test_slices_off_and_on_agree_on_a_tiny_vocabulary_with_forced_slices():
    g = cfgmask.Grammar.builtin("sql")
    tokens = [bytes([b]) for b in range(128)] + [b" select", b" from", b" x", b"x", b"ab", b" 'a", b"'ab",
                                                  b" 12", b"12", b"--", b"-- x", b"  ", b" (", b"(x"] + [None]
    vocab = cfgmask.Vocabulary(tokens, eos_token_ids=[len(tokens) - 1])
    forced = cfgmask.compile(g, vocab, slices={"min_tokens": 2, "min_fraction": 0.0})
    assert forced.slices.n >= 3
    plain = cfgmask.compile(g, vocab, slices=False)
    text = b"SELECT a, b FROM t WHERE x = 'ab' AND y > 12 -- x\n;"
    a, b = forced.matcher(), plain.matcher()
    b._set_use_cache(False)
    for i in range(len(text) + 1):
        assert a.allowed_tokens().tolist() == b.allowed_tokens().tolist(), text[:i]
        if i < len(text):
            assert a.consume_bytes(text[i:i + 1]) == 1 and b.consume_bytes(text[i:i + 1]) == 1


@pytest.mark.parametrize("pattern", [r'"abc"', r"a+", r"(ab)*c", r"a{1,5}", r"[0-9]+(\.[0-9]+)?", r"x|y|zz",
                                     r'"(?:[^"\\]|\\.)*"', r"a{3}b?", r"a{1,100}", r"(a{1,70}b)+", r"[a-z]{2,80}"])
def test_has_cycle_is_infinite_language(pattern):
    # oracle (pumping lemma): a DFA with n states accepts infinitely many strings
    # iff it accepts one whose length is in [n, 2n)
    from cfgmask.automata import compile_regex, has_cycle
    dfa = compile_regex(pattern)
    n = dfa.n_states
    states, infinite = {0}, False
    for length in range(1, 2 * n):
        states = {int(t) for s in states for t in dfa.trans[s] if t >= 0}
        if length >= n and any(dfa.accepting[s] for s in states):
            infinite = True
            break
    assert has_cycle(dfa.trans) == infinite
    # the same on the terminal's table over a lexer's byte classes (what derive passes)
    spec = LexerSpec(cfgmask.Grammar.from_lark(f"start: T\nT: /{pattern}/\n"))
    assert has_cycle(spec.class_tables[0]) == infinite


@pytest.mark.parametrize("pattern, body", [
    (r'(?!"(?:a|b)"\Z)"(?:[^"\\]|\\.)*"', r'"(?:[^"\\]|\\.)*"'),
    (r'(?!(?:x+)\Z)(?!(?:y)\Z)(?:[a)]+)', r"[a)]+"),
    (r"(?![)(])x", "x"),
    (r"(?!\))(?:a)|(?:b)", "(?:a)|(?:b)"),     # the wrap is not one group: kept
    (r"(?=(?:a{1,3})\Z)[a-z]+", None),          # an intersection may be finite
    (r"abc", None), (r"(?!a)", None), (r"(?!a", None)])
def test_lookahead_body(pattern, body):
    assert SC._lookahead_body(pattern) == body


def test_difference_terminals_offer_the_candidates_of_their_whole_pattern():
    # the shortcut for "any other key" (Y minus a few keys) must offer exactly the
    # candidates that reading the whole pattern offers: its own prefix slice, Y's runs
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
              "additionalProperties": {"type": "string", "maxLength": 40}}
    g = cfgmask.Grammar.from_json_schema(schema)
    assert any(SC._lookahead_body(p) for p in g.terminal_patterns)
    spec = LexerSpec(g)
    SC._TERMINAL_SLICES.clear()
    fast = [(c.name, c.key()) for c in S.derive(g, spec)]
    SC._TERMINAL_SLICES.clear()
    body = SC._lookahead_body
    try:
        SC._lookahead_body = lambda p: None
        slow = [(c.name, c.key()) for c in S.derive(g, spec)]
    finally:
        SC._lookahead_body = body
        SC._TERMINAL_SLICES.clear()
    assert fast == slow and any(name.startswith("run[") for name, _ in fast)


def _keyed_schema():
    # several objects with "any other key" terminals, a pattern and numbers
    item = {"type": "object", "properties": {"id": {"type": "integer"}, "tag": {"type": "string"}},
            "additionalProperties": {"type": "string"}}
    return {"type": "object",
            "properties": {"name": {"type": "string", "pattern": "^[a-z]+$"}, "items": {"type": "array", "items": item},
                           "meta": {"type": "object", "properties": {"x": {"type": "number"}},
                                    "additionalProperties": {"type": "integer"}}},
            "additionalProperties": {"type": "boolean"}}


def test_lazy_prefix_slices_are_the_eager_ones_made_on_demand():
    """derive(lazy=True), what a JSON Schema grammar gets, leaves the prefix
    slices read off the lexer unmade; their first bytes need no automaton and
    equal the made automaton's; once made, the candidates are the eager
    derivation's, in its order, but for duplicates kept (the choice drops them)."""
    g = cfgmask.Grammar.from_json_schema(_keyed_schema())
    spec = LexerSpec(g)
    SC._TERMINAL_SLICES.clear()
    lazy = S.derive(g, spec, lazy=True)
    unmade = [c for c in lazy if not c.made()]
    assert len(unmade) >= 3 and all(c.name.startswith("P[") for c in unmade)
    firsts = [c.first_bytes().copy() for c in unmade]
    assert not any(c.made() for c in unmade)
    lazy_keys = [c.key() for c in lazy]
    assert all(c.made() for c in lazy)
    for c, first in zip(unmade, firsts):
        assert np.array_equal(first, np.asarray(c.dfa.trans[0]) >= 0)
    SC._TERMINAL_SLICES.clear()
    eager = S.derive(g, spec)
    SC._TERMINAL_SLICES.clear()
    assert list(dict.fromkeys(lazy_keys)) == [c.key() for c in eager]


def test_a_json_schema_compile_leaves_the_unviable_prefix_slices_unmade():
    """The choice reads only the viable candidates' digests (slices._LazyKeys):
    the "any other key" prefixes (first byte '"' alone, too few tokens) are
    never made, eager or auto, and the eager choice is the one among the
    eagerly derived candidates."""
    vocab = V.smollm2_vocab()
    prepared = vocab.prepared()
    g = cfgmask.Grammar.from_json_schema(_keyed_schema())
    SC._TERMINAL_SLICES.clear()
    S._DERIVED.clear()
    S._CANDIDATE_KEYS.clear()
    for when in ("auto", "eager"):
        c = cfgmask.compile(g, vocab, slices=when)
        cands = S.derived(g, c.lexer_spec)
        # (P[STRING] is the any-string body's, made once per process for every schema)
        quoted = [x for x in cands if x.name.startswith("P[KEY_OTHER")]
        assert len(quoted) >= 3 and all(x.first_bytes().sum() == 1 and x.first_bytes()[ord('"')]
                                        for x in quoted)
        assert not any(x.made() for x in quoted), when
    SC._TERMINAL_SLICES.clear()
    eager = S.derive(g, c.lexer_spec)
    SC._TERMINAL_SLICES.clear()
    idx, _own = S.choose(eager, prepared.trie, prepared.token_special, vocab.vocab_size)
    assert [s.key() for s in c.slices.slices] == [eager[i].key() for i in idx]


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_lexer_reads_follow_restrictions_and_makes_automata_like_its_dfas(grammar):
    spec = LexerSpec(cfgmask.Grammar.builtin(grammar))
    restricted = 0
    for t in range(spec.n_terminals):
        d = spec.dfa(t)
        assert spec.restricts_follow(t) == d.has_follow_restrictions
        restricted += d.has_follow_restrictions
        if not d.has_follow_restrictions and not spec.counted(t):
            made = spec.dfa_maker(t)()
            assert np.array_equal(made.trans, d.trans) and np.array_equal(made.accepting, d.accepting)
            assert (made.pattern, made.name) == (d.pattern, d.name)
    assert restricted or grammar != "javascript"


def test_choice_leaves_out_candidates_that_cannot_reach_the_threshold():
    # two schemas that differ only in their property names: their "any other key"
    # terminals start with '"', which starts too few SmolLM2 tokens to be kept, so
    # the second grammar reuses the first one's choice; the kept slices must be
    # what choosing among all candidates keeps
    vocab = V.smollm2_vocab()
    prepared = vocab.prepared()
    schemas = [{"type": "object", "properties": {k: {"type": "string"}, "n": {"type": "integer"}},
                "additionalProperties": {"type": "string"}} for k in ("alpha", "beta")]
    grammars = [cfgmask.Grammar.from_json_schema(s) for s in schemas]
    before = len(prepared.__dict__.get("_slice_choices", {}))
    for g in grammars:
        spec = LexerSpec(g)
        tables = S.for_grammar(g, spec, prepared)
        cands = S.derive(g, spec)
        idx, _own = S.choose(cands, prepared.trie, prepared.token_special, vocab.vocab_size)
        assert [s.key() for s in tables.slices] == [cands[i].key() for i in idx]
        assert any(SC._lookahead_body(p) for p in g.terminal_patterns)
    assert set(grammars[0].terminal_patterns) != set(grammars[1].terminal_patterns)
    assert len(prepared.__dict__["_slice_choices"]) - before <= 1


def test_patterns_taken_as_finite_are_finite():
    # _terminal_slices skips the cycle check for a pattern without a repeat or a
    # lookaround; every such pattern of the regex suite, the bundled grammars and a
    # JSON schema's terminals must compile to an automaton without a cycle
    from cfgmask.automata import compile_regex, has_cycle
    from cfgmask.errors import GrammarError
    from cfgmask.frontends.json_schema import compile_schema
    from tests.test_regex import PATTERNS as REGEX_SUITE
    patterns = [p for p in REGEX_SUITE if isinstance(p, str)]
    for name in ("json", "sql", "javascript"):
        patterns += cfgmask.Grammar.builtin(name).terminal_patterns
    schema = {"type": "object", "properties": {"a*b": {"enum": [1.5, "x+y", "{}"]},
                                               "n": {"type": "integer", "maximum": 99}}}
    patterns += compile_schema(cfgmask.Grammar, schema).terminal_patterns
    finite = [p for p in patterns if SC._MAYBE_INFINITE.search(p) is None]
    assert len(finite) > 20
    checked = 0
    for p in finite:
        try:
            dfa = compile_regex(p)
        except GrammarError:
            continue
        assert not has_cycle(dfa.trans), p
        checked += 1
    assert checked > 20


def _tables_arrays(tables):
    """The tables as stored, slice names left out (tables are shared by digest:
    the first grammar to lay them out names them)."""
    meta, arrays = S._to_arrays(tables)
    meta["slices"] = [dict(s, name=None) for s in meta["slices"]]
    return meta, {k: np.asarray(v) for k, v in arrays.items()}


@pytest.mark.parametrize("source", ["json.lark", "schema", "common"])
def test_standard_slices_are_what_json_grammars_keep(source, monkeypatch, tmp_path):
    """The standard candidates are the run slices json.lark, a JSON schema's
    string and Lark's common.ESCAPED_STRING derive (same digests), and a
    vocabulary prepared with them gives a compile the very tables (every array
    equal) it would build itself."""
    monkeypatch.setenv("CFGMASK_CACHE_DIR", str(tmp_path))
    label, make = {
        "json.lark": ("JSON string", lambda: cfgmask.Grammar.builtin("json")),
        "schema": ("JSON string", lambda: cfgmask.Grammar.from_json_schema(
            {"type": "object", "properties": {"a": {"type": "string"}}})),
        "common": ("Lark string", lambda: cfgmask.Grammar.from_lark(
            'start: "[" [ESCAPED_STRING ("," ESCAPED_STRING)*] "]"\n%import common.ESCAPED_STRING\n')),
    }[source]
    g = make()
    standard = {s.key() for s in S.standard_candidates() if s.name.startswith(f"run[{label}]")}
    derived = {s.key() for s in S.derive(g, LexerSpec(g))}
    assert len(standard) == 4 and standard <= derived     # json.lark's has its \\uXXXX digits too
    tokens, eos = V.smollm2_vocab().token_bytes, V.smollm2_vocab().eos_token_ids
    SC._RUN_SLICES.clear()       # the standard automata made again, not shared with the bare build
    bare = cfgmask.Vocabulary(tokens, eos)              # a new Vocabulary: its own memos
    built = cfgmask.compile(g, bare).slices
    monkeypatch.setenv("CFGMASK_CACHE_DIR", str(tmp_path / "other"))   # no disk entry to share
    ready = cfgmask.Vocabulary(tokens, eos)
    standard_tables = ready.prepare().standard_slices()
    got = cfgmask.compile(g, ready).slices
    labels = [c[0] for c in S.STANDARD_RUN_CLASSES]
    assert got is standard_tables[labels.index(label)]  # laid out once, at preparation
    (m1, a1), (m2, a2) = _tables_arrays(built), _tables_arrays(got)
    assert m1 == m2
    assert a1.keys() == a2.keys() and all(np.array_equal(a1[k], a2[k]) for k in a1)


def test_standard_slices_on_a_tiny_vocabulary():
    """Too few tokens for any slice: nothing prepared, compiles unchanged."""
    vocab = cfgmask.Vocabulary([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])
    assert vocab.prepare().standard_slices() == [None] * len(S.STANDARD_RUN_CLASSES)
    c = cfgmask.compile(cfgmask.Grammar.builtin("json"), vocab)
    m = c.matcher()
    assert m.allowed_tokens().tolist() == sorted(set(b"{[\"-0123456789tfn \t\n\r"))


@pytest.mark.parametrize("tokenizer", ["smollm2", "tekken"])
def test_partition_tries_equal_one_filtered_trie_per_part(tokenizer):
    """_fast/_slicewalk.partition_forest against filtered_trie_numpy of each part,
    on random partitions (some tokens in no part, empty parts, 1 to 33 parts)
    and on a real slice layout's partition."""
    trie = TOKENIZERS[tokenizer][0]().prepared().trie
    rng = np.random.default_rng(5)
    V = trie.vocab_size
    cases = [(rng.integers(0, k + 1, V).astype(np.uint8), k) for k in (1, 2, 8, 33)]
    cases.append((np.full(V, 3, np.uint8), 3))       # every part empty: the root alone
    c = compiled("json", tokenizer)
    if c.slices is not None:
        part = np.full(V, c.slices.n, np.uint8)
        for j in range(c.slices.n):
            part[c.slices.tokens[j]] = j
        cases.append((part, c.slices.n + 1))
    for part, k in cases:
        got = W.partition_tries(trie, part, k)
        assert len(got) == k
        wants = [W.filtered_trie_numpy(trie, part == p) for p in range(k)]
        for p in range(k):
            for a, b in zip(got[p], wants[p]):
                assert a.dtype == b.dtype and np.array_equal(a, b), (k, p)
        # the forest a slice layout reads: the same tries one after the other,
        # subtree ends counted in the forest's rows
        for a, b in zip(W.partition_forest(trie, part, k), W._forest_of(wants)):
            assert a.dtype == b.dtype and np.array_equal(a, b), k


def test_trie_membership_marks_duplicates_and_skips_specials():
    """The compiled walk marks every id of a duplicated byte string (the
    ``token_same_next`` chain) and skips special ids, also inside a chain,
    against the token-by-token reference, on random vocabularies and automata."""
    from cfgmask.automata.dfa import ByteDFA
    from cfgmask.engine.trie import TokTrie
    rng = np.random.default_rng(17)
    for _ in range(40):
        words = [bytes(rng.integers(97, 101, rng.integers(1, 6)).tolist()) for _ in range(60)]
        tb = [words[rng.integers(0, len(words))] if rng.random() > 0.1 else None for _ in range(300)]
        trie = TokTrie.from_token_bytes(tb)
        assert (np.asarray(trie.token_same_next) >= 0).any()        # duplicates are chained
        special = (rng.random(len(tb)) < 0.2).astype(np.uint8)
        n_states = int(rng.integers(1, 8))
        trans = rng.integers(-1, n_states, (n_states, 256)).astype(np.int32)
        trans[:, 97:101] = np.where(rng.random((n_states, 4)) < 0.8,
                                    rng.integers(0, n_states, (n_states, 4)), -1)
        dfa = ByteDFA(trans, np.ones(n_states, dtype=np.bool_))
        flat = np.frombuffer(b"".join(b or b"" for b in tb), np.uint8)
        offsets = np.concatenate([[0], np.cumsum([len(b or b"") for b in tb])]).astype(np.int64)
        for lead in (None, 0x61):
            got = W.trie_membership(dfa, trie, special, lead)
            assert (got == W.token_membership(dfa, flat, offsets, special, lead)).all()
            assert (got == W.trie_membership_levels(dfa, trie, special, lead)).all()


def _first_broken_node(depth, end):
    """The trie layout check, node by node (the reference of partition_forest's)."""
    n = len(depth)
    for i in range(n):
        if end[i] <= i or end[i] > n or depth[i] < 0 or (i > 0 and (depth[i] == 0 or depth[i] > depth[i - 1] + 1)):
            return i
    return None


def test_partition_forest_refuses_a_broken_layout_naming_the_first_broken_node():
    """The layout check (branch-free, with a second pass for the culprit) names
    the same node as the plain check, for each way a layout can break."""
    from cfgmask._fast._slicewalk import partition_forest as forest_c
    trie = V.smollm2_vocab().prepared().trie
    base = [np.array(a, copy=True) for a in (trie.node_byte, trie.node_depth, trie.node_token,
                                              trie.node_subtree_end)]
    part = np.zeros(trie.vocab_size, np.uint8)
    rng = np.random.default_rng(11)
    n = len(base[0])
    breaks = [("end", lambda i, d, e: e.__setitem__(i, i)), ("end", lambda i, d, e: e.__setitem__(i, n + 1)),
              ("depth", lambda i, d, e: d.__setitem__(i, -1)), ("depth", lambda i, d, e: d.__setitem__(i, 0)),
              ("depth", lambda i, d, e: d.__setitem__(i, d[i - 1] + 2)),
              ("depth", lambda i, d, e: d.__setitem__(i, np.iinfo(np.int32).max))]
    for what, brk in breaks:
        for i in sorted(set(rng.integers(1, n, 3).tolist()) | {n - 1}):
            b, d, t, e = (a.copy() for a in base)
            brk(i, d, e)
            want = _first_broken_node(d.tolist(), e.tolist())
            assert want is not None and want <= i
            with pytest.raises(ValueError, match=rf"node {want} breaks the trie layout"):
                forest_c(b, d, t, e, part, 1)
    b, d, t, e = (a.copy() for a in base)
    d[0] = -1
    with pytest.raises(ValueError, match="node 0 breaks"):
        forest_c(b, d, t, e, part, 1)


def _packed_walk(dfa, prepared, lead=None):
    """A slice automaton's tokens by the trie walk alone, packed as the memo keeps them."""
    V = prepared.vocab.vocab_size
    m = np.zeros(V, dtype=np.bool_)
    got = W.trie_membership(dfa, prepared.trie, prepared.token_special, lead)
    m[:min(V, len(got))] = got[:V]
    return np.packbits(m, bitorder="little")


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_run_slices_equal_their_regex_and_their_walk(grammar):
    """Every run candidate of a bundled grammar: its automaton, chained from one
    character's, equals the one compiled from the regex ``cls{1,k}`` / ``cls+``;
    a bounded run's tokens, taken from the unbounded run's by character count,
    equal the walk of its own automaton."""
    prepared = V.smollm2_vocab().prepared()
    g = cfgmask.Grammar.builtin(grammar)
    runs = [c for c in S.derive(g, LexerSpec(g)) if c.run is not None]
    assert any(c.run_of is not None for c in runs) and any(c.run_of is None for c in runs)
    V_ = prepared.vocab.vocab_size
    for c in runs:
        ref = SC._run_dfa_by_regex(*c.run)
        assert ref is not None and np.array_equal(c.dfa.trans, ref.trans), c.run
        assert np.array_equal(c.first_bytes(), np.asarray(ref.trans[0]) >= 0), c.run
        got = S._packed_membership(c, prepared.trie, prepared.token_special, V_, None)
        assert np.array_equal(got, _packed_walk(ref, prepared)), c.run


def test_unicode_and_refused_runs(monkeypatch):
    # a class of multi-byte characters chains its UTF-8 states; a run whose automaton
    # would pass the state limit is refused
    for cls in ("[a-zA-Z_$\\u0080-\\U0010ffff]", "[\\u00e9\\u4e00-\\u9fff]", "[\\x00-\\U0010ffff]"):
        for suffix, bound in (("+", None), ("{1,2}", 2), ("{1,16}", 16)):
            sl = SC.run_slice(cls, suffix)
            ref = SC._run_dfa_by_regex(cls, bound)
            assert sl is not None and np.array_equal(sl.dfa.trans, ref.trans), (cls, suffix)
    cls = "[\\u00e9\\u4e00-\\u9fff]"
    inner = SC._one_character(cls).n_states - 1      # states of one character but its end
    monkeypatch.setattr(SC, "_RUN_MAX_STATES", 12 * inner)
    monkeypatch.setattr(SC, "_RUN_SLICES", S.BoundedMemo(16, order="fifo"))
    assert SC.run_slice(cls, "{1,8}") is not None and SC.run_slice(cls, "{1,16}") is None
    assert SC._run_dfa_by_regex(cls, 16) is None       # the regex compile refuses it too


def test_prefix_slices_are_minimal_and_keep_their_tokens():
    """A prefix slice's automaton is the minimal one of the prefix language: sql.lark's
    identifiers, which exclude different keywords, share one prefix slice and one
    cross slice, and the minimal automaton keeps the tokens of the terminal's own."""
    prepared = V.smollm2_vocab().prepared()
    g = cfgmask.Grammar.builtin("sql")
    spec = LexerSpec(g)
    idents = [t for t, n in enumerate(g.terminal_names) if n.endswith("_IDENT") and n not in
              ("DQ_IDENT", "BACKTICK_IDENT", "BRACKET_IDENT") or n == "IDENT"]
    assert len(idents) >= 5
    prefixes = [SC.prefix_dfa(spec.dfa(t)) for t in idents]
    assert len({p.trans.tobytes() for p in prefixes}) == 1
    assert prefixes[0].n_states < min(spec.dfa(t).n_states for t in idents)
    for t, p in zip(idents, prefixes):
        raw = spec.dfa(t)
        whole = S.ByteDFA(raw.trans, np.ones(raw.n_states, dtype=np.bool_))
        assert np.array_equal(_packed_walk(p, prepared), _packed_walk(whole, prepared))
    names = [c.name for c in S.derive(g, spec)]
    assert sum(n.startswith("P[") and n.endswith("IDENT]") for n in names) == 4   # + DQ, backtick, bracket
    # a cross slice named by its tail's parts: the digest does not change once the
    # tail is made, and the tail is the prefix automaton with its first byte restricted
    cross = [c for c in S.derive(g, spec) if c.lead is not None]
    c = cross[0]
    key = S.Slice(c.name, None, lead=c.lead, tail_of=c._tail_of).key()
    base, row = c._tail_of
    assert np.array_equal(c.tail.trans[1:], base.dfa.trans[1:]) and np.array_equal(c.tail.trans[0], row)
    assert c.key() == key and c._digest() == key


def test_repeats_recorded_by_the_pipeline_equal_a_walk_of_the_tree():
    """The repeat classes the regex pipeline records while building a pattern's
    NFA are those a walk of the tree finds: the same classes and bounds, first
    occurrences in the same order (a body built several times repeats its
    inner repeats), for every pattern of the bundled grammars and the regex suite."""
    from cfgmask.automata import parse as P
    from cfgmask.automata import pipeline
    from tests.test_regex import PATTERNS as REGEX_SUITE

    def first_occurrences(xs):
        seen, out = set(), []
        for x in xs:
            if x not in seen:
                seen.add(x)
                out.append(x)
        return out

    patterns = [p for p in REGEX_SUITE if isinstance(p, str)]
    patterns += ["(?:[a-z]+x){3}[0-9]{2,5}", "(?:(?i:[a-c]+)|[x-z]{1,3})*", '"(?:[^"\\\\]|\\\\.)*"']
    for name in GRAMMARS:
        patterns += cfgmask.Grammar.builtin(name).terminal_patterns
    compared = 0
    for p in dict.fromkeys(patterns):
        P.REPEATS_SEEN.pop(p, None)
        try:
            pipeline.regex_to_dfa(p, "t")
        except Exception:   # noqa: BLE001 - refused patterns record nothing to compare
            continue
        recorded = P.REPEATS_SEEN.get(p)
        if recorded is None:
            continue        # a literal: no NFA, no record
        assert first_occurrences(recorded) == first_occurrences(P.repeat_classes_walked(p)), p
        compared += 1 if recorded else 0
    assert compared > 30


def test_count_bits_is_a_popcount():
    from cfgmask.engine.slices import _count_bits
    rng = np.random.default_rng(7)
    for n in (0, 1, 7, 6143, 16384):
        packed = rng.integers(0, 256, n, dtype=np.uint8)
        assert _count_bits(packed) == sum(bin(int(b)).count("1") for b in packed)


def _brute_byte_reps(trans, class_of):
    """Representative bytes by definition: the smallest alive byte of each
    (lexer class, automaton column) pair, the column compared as a tuple."""
    best = {}
    for b in range(256):
        column = tuple(int(x) for x in trans[:, b])
        if all(x < 0 for x in column):
            continue
        best.setdefault((class_of[b], column), b)
    return bytes(sorted(best.values()))


def test_byte_reps_equal_their_definition():
    """``Slice.byte_reps`` (what the runtime's containment product steps on),
    the compiled kernel and its Python reference, against the definition, on
    random automata with few distinct columns and random lexer partitions (up
    to 256 classes), for a slice and a cross slice's tail."""
    from cfgmask.automata.dfa import ByteDFA, byte_representatives_python
    from cfgmask.automata.kernels import compiled
    rng = np.random.default_rng(7)
    for trial in range(60):
        n = int(rng.integers(1, 6))
        columns = rng.integers(-1, n, size=(n, int(rng.integers(1, 6))))
        columns[:, 0] = -1                        # one column on which every state dies
        trans = columns[:, rng.integers(0, columns.shape[1], size=256)].astype(np.int32)
        dfa = ByteDFA(trans, np.ones(n, dtype=np.bool_), pattern="random", name="R")
        s = SC.Slice("R", dfa, lead=0x20, tail=dfa) if trial % 2 else SC.Slice("R", dfa)
        for k in (1, 3, 40, 256):
            class_of = bytes(rng.integers(0, k, size=256).astype(np.uint8).tolist())
            want = _brute_byte_reps(trans, class_of)
            assert s.byte_reps(class_of, tail=bool(trial % 2)) == want
            assert s.byte_reps(class_of, tail=bool(trial % 2)) == want   # memoised
            # the compiled kernel and its Python reference, on what the slice gives them
            alive, col_id = s._columns(bool(trial % 2))
            assert byte_representatives_python(alive, col_id, class_of) == want
            if compiled() is not None:
                assert compiled().byte_representatives(alive, col_id, class_of) == want
