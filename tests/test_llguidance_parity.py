"""cfgmask's masks equal llguidance's, bit for bit, on real JSON (test oracle b).

Both engines load the same grammar text (``grammars/json.lark``) and the same
vocabulary, replay corpus documents token by token, and at every position
(including the final one, where only EOS may follow) their bitmasks must be
identical.  llguidance 1.9.1 is an independent implementation of the same
semantics (greedy contextual lexing of Lark terminals + Earley), so any
difference is a bug in one of them -- unless it is one of the documented
semantic differences below, each implemented as a narrow, named filter whose
firings are counted and printed (``pytest -s`` shows the counts).

Vocabularies.  SmolLM2: cfgmask's ``Vocabulary.from_hf`` vs llguidance's own
``llguidance.hf.from_tokenizer`` of the same Hugging Face tokenizer.  Tekken:
cfgmask's ``Vocabulary.from_tekken`` vs an ``llguidance.LLTokenizer`` built
here from the base64 token bytes of ``tekken_240911.json`` (ids 0..999
special).  ``test_vocabularies_agree`` checks first that both sides see the
same bytes for every token id.

Documented differences
----------------------

``initial_skip`` -- leading ``%ignore`` material.  cfgmask (like Lark) allows
``%ignore`` terminals before the first lexeme; llguidance refuses them unless
the grammar says ``%llguidance {"allow_initial_skip": true}``.  The parity
replay uses the bundled grammar, whose whitespace is explicit (no %ignore),
and passes that option anyway, so the difference cannot fire there;
``test_initial_skip_is_the_only_default_difference`` runs llguidance's
default on a JSON grammar with %ignore'd whitespace and checks that the masks then differ only at the start, only by
tokens that begin with a JSON whitespace byte, and only in cfgmask's favour.

``llg_special_marker`` -- llguidance stores special tokens in its trie behind
a leading ``0xFF`` byte, so a *text* token whose bytes begin with ``0xFF``
(tekken id 1255 is the single byte ``0xFF``) is a special token to
llguidance.  ``0xFF`` never occurs in UTF-8, so the JSON grammar refuses such
tokens on both sides and the masks are unaffected; the vocabulary check
allows exactly these ids to differ.

``word_boundary`` -- the bundled SQL and JavaScript grammars start with a
``// %cfgmask word_boundary [...]`` pragma: cfgmask then refuses a lexeme
ending in a word byte directly followed by one starting with a word byte
(``SELECTa`` is never ``SELECT a``, ``within`` is never ``WITH in``).  To
Lark and llguidance the pragma is a comment, so they accept those
segmentations.  The SQL parity replay compiles the grammar for cfgmask with
``word_boundary=""`` (the same language as Lark's); with the pragma on,
``test_sql_word_boundary_only_removes_tokens`` checks that cfgmask's mask is
a subset of llguidance's at every position (the pragma only ever removes
tokens).  JavaScript is not compared here: llguidance scans a line break as
``%ignore``d whitespace where the grammar also expects ``NL`` (the ASI
terminal), and refuses many real files (benchmarks/run_masks.py counts them).

No other exception exists: EOS handling (EOS only when the start rule is
complete, nothing but EOS after the last lexeme of a complete document, only
EOS after EOS), special tokens (never allowed) and ids past the tokenizer are
compared bit for bit like everything else.
"""

import base64
import collections
import functools
import json
import os

import numpy as np
import pytest

import cfgmask

from tests.test_replay_json import (encode_smollm2, encode_tekken, jsonschemabench_docs,
                                    jsts_docs, sample)

llguidance = pytest.importorskip("llguidance")
import llguidance.numpy as llg_numpy  # noqa: E402

LLG_SPECIAL_MARKER = 0xFF
INITIAL_SKIP_OPTION = '%llguidance {"allow_initial_skip": true}\n'
JSON_WS = b" \t\n\r"

# default run: short documents (their positions are cheap to compare)
DEFAULT_DOCS = {"smollm2": 100, "tekken": 30}
DEFAULT_MAX_BYTES = 1500
# slow run: every jsonschemabench document up to this size, plus JSTS files
SLOW_MAX_BYTES = 20_000
MAX_REPORTED = 6

# Counts of documented exceptions that fired, by name (printed at the end).
EXCEPTION_COUNTS = collections.Counter()


def _tok():
    from support import vocabs as tokenizers
    return tokenizers


def json_grammar_text():
    with open(cfgmask.Grammar.builtin_path("json"), encoding="utf-8") as f:
        return f.read()


@pytest.fixture(scope="module", autouse=True)
def _print_exception_counts():
    yield
    print(f"\n[parity] documented exceptions fired in this module: {dict(EXCEPTION_COUNTS) or 'none'}")


# ---------------------------------------------------------------- tokenizers

@functools.lru_cache(maxsize=None)
def llg_tokenizer(name):
    """llguidance's tokenizer over the same vocabulary cfgmask uses for ``name``."""
    if name == "smollm2":
        from llguidance.hf import from_tokenizer
        vocab = _tok().smollm2_vocab()
        return from_tokenizer(_tok().smollm2_tokenizer(),
                                            eos_token=vocab.eos_token_ids[0])
    if name == "tekken":
        with open(_tok().tekken_json_path(), encoding="utf-8") as f:
            data = json.load(f)
        n_special = int(data["config"]["default_num_special_tokens"])
        total = int(data["config"]["default_vocab_size"])
        tokens = [f"<SPECIAL_{i}>".encode() for i in range(n_special)]
        tokens += [base64.b64decode(e["token_bytes"]) for e in data["vocab"][: total - n_special]]

        class TekkenForLLG:
            # the attributes llguidance.TokenizerWrapper reads
            eos_token_id = 2        # </s>
            bos_token_id = 1        # <s>
            special_token_ids = list(range(n_special))

            def __init__(self):
                self.tokens = tokens

            def __call__(self, s):  # only used by llguidance for forced tokens
                if isinstance(s, bytes):
                    s = s.decode("utf-8", errors="replace")
                return encode_tekken(s)

        return llguidance.LLTokenizer(llguidance.TokenizerWrapper(TekkenForLLG()))
    raise KeyError(name)


VOCABS = {"smollm2": lambda: _tok().smollm2_vocab(), "tekken": lambda: _tok().tekken_vocab()}
ENCODERS = {"smollm2": encode_smollm2, "tekken": encode_tekken}


def grammar_text(which):
    """``"json"``: the bundled grammar (explicit RFC 8259 whitespace, no %ignore);
    ``"json_ignore"``: a JSON grammar with %ignore'd whitespace (tests/grammars),
    where the ``initial_skip`` difference can show; ``"sql"`` and ``"sql_wb"``:
    the bundled SQL grammar, which cfgmask compiles without and with its
    word-boundary pragma (see ``word_boundary`` in the module doc)."""
    if which == "json":
        return json_grammar_text()
    if which in ("sql", "sql_wb"):
        with open(cfgmask.Grammar.builtin_path("sql"), encoding="utf-8") as f:
            return f.read()
    with open(os.path.join(os.path.dirname(__file__), "grammars", "json_small.lark")) as f:
        return f.read()


@functools.lru_cache(maxsize=None)
def cfg_compiled(name, which="json"):
    # "sql": word_boundary="" turns the cfgmask-only pragma off; None keeps it
    wb = "" if which == "sql" else None
    return cfgmask.compile(cfgmask.Grammar.from_lark(grammar_text(which), word_boundary=wb), VOCABS[name]())


@functools.lru_cache(maxsize=None)
def llg_grammar(initial_skip=True, which="json"):
    text = grammar_text("sql" if which == "sql_wb" else which)
    return llguidance.grammar_from("lark", (INITIAL_SKIP_OPTION if initial_skip else "") + text)


def llg_matcher(name, initial_skip=True, which="json"):
    m = llguidance.LLMatcher(llg_tokenizer(name), llg_grammar(initial_skip, which), log_level=0)
    assert not m.is_error(), m.get_error()
    return m


def _is_llg_marker_token(tb):
    """``llg_special_marker``: a text token llguidance files as special (see module doc)."""
    return tb is not None and tb[:1] == bytes([LLG_SPECIAL_MARKER])


@pytest.mark.parametrize("name", sorted(VOCABS))
def test_vocabularies_agree(name):
    vocab = VOCABS[name]()
    llt = llg_tokenizer(name)
    assert llt.vocab_size == vocab.vocab_size
    assert list(vocab.eos_token_ids) == [llt.eos_token]
    diffs = []
    for i in range(vocab.vocab_size):
        tb = vocab.token_bytes[i] if i < len(vocab.token_bytes) else None
        special = llt.is_special_token(i)
        if tb is None:
            ok = special
        else:
            ok = not special and llt.decode_bytes([i]) == tb
            if not ok and _is_llg_marker_token(tb):
                EXCEPTION_COUNTS[f"llg_special_marker[{name}] (vocabulary)"] += 1
                ok = True
        if not ok:
            diffs.append((i, tb, special))
    assert not diffs, f"{len(diffs)} token ids differ between the vocabularies: {diffs[:10]}"


# -------------------------------------------------------------------- replay

def _ids(words, n_bits):
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:n_bits]
    return np.flatnonzero(bits)


def _describe(vocab, ids, limit=8):
    out = []
    for t in ids[:limit]:
        t = int(t)
        tb = vocab.token_bytes[t] if t < len(vocab.token_bytes) else "past tokenizer"
        out.append(f"{t}:{'special/EOS' if tb is None else repr(tb)}")
    more = f" (+{len(ids) - limit} more)" if len(ids) > limit else ""
    return ", ".join(out) + more


def compare_masks(name, docs, *, initial_skip=True, explain=None, which="json"):
    """Replay ``docs`` in both engines; return (positions compared, unexplained diffs).

    ``explain(pos, prefix, cfg_only, llg_only)`` returns the name of a
    documented exception that accounts for the difference, or None.
    """
    compiled = cfg_compiled(name, which)
    vocab = compiled.vocab
    V = vocab.vocab_size
    encode = ENCODERS[name]
    cfg_bm = compiled.allocate_bitmask()
    llg_bm = llg_numpy.allocate_token_bitmask(1, V)
    assert cfg_bm.shape == llg_bm.shape
    eos = vocab.eos_token_ids[0]
    failures = []
    positions = 0
    for doc_name, text in docs:
        # replayed exactly as stored: json.lark allows RFC 8259's trailing ws
        ids = encode(text) + [eos]
        cm = compiled.matcher()
        lm = llg_matcher(name, initial_skip, which)
        # the last step compares the masks after EOS (EOS only, on both sides)
        for pos, t in enumerate(ids + [None]):
            cfg_bm[:] = 0
            cm.fill_bitmask(cfg_bm)
            llg_numpy.fill_next_token_bitmask(lm, llg_bm)
            assert not lm.is_error(), f"{doc_name}: llguidance error: {lm.get_error()}"
            positions += 1
            if not np.array_equal(cfg_bm, llg_bm):
                diff = cfg_bm ^ llg_bm
                cfg_only = _ids(diff & cfg_bm, V)
                llg_only = _ids(diff & llg_bm, V)
                why = explain(pos, cm.prefix, cfg_only, llg_only, vocab) if explain else None
                if why is not None:
                    EXCEPTION_COUNTS[f"{why}[{name}]"] += 1
                else:
                    failures.append(
                        f"{doc_name} token {pos}/{len(ids) - 1} after ...{cm.prefix[-50:]!r}: "
                        f"cfgmask-only [{_describe(vocab, cfg_only)}] "
                        f"llguidance-only [{_describe(vocab, llg_only)}]")
                    break  # one report per document; later positions would repeat it
            if t is None:
                break
            cm.consume(t)
            assert lm.consume_token(t), f"{doc_name}: llguidance refused token {pos} ({t})"
    return positions, failures


def _run(name, docs, **kw):
    positions, failures = compare_masks(name, docs, **kw)
    fired = {k: v for k, v in EXCEPTION_COUNTS.items() if f"[{name}]" in k}
    print(f"\n[parity {name}] {len(docs)} documents, {positions} positions compared; "
          f"documented exceptions fired so far: {fired or 'none'}")
    assert not failures, (
        f"{len(failures)} of {len(docs)} documents have masks that differ from llguidance "
        f"({name}):\n  " + "\n  ".join(failures[:MAX_REPORTED]))
    return positions


@pytest.mark.parametrize("name", sorted(VOCABS))
def test_parity_jsonschemabench_sample(name):
    docs = sample(jsonschemabench_docs(), DEFAULT_DOCS[name], max_bytes=DEFAULT_MAX_BYTES)
    assert len(docs) == DEFAULT_DOCS[name]
    _run(name, docs)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(VOCABS))
def test_parity_jsonschemabench_all(name):
    docs = [d for d in jsonschemabench_docs() if len(d[1].encode("utf-8")) <= SLOW_MAX_BYTES]
    _run(name, docs)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(VOCABS))
def test_parity_json_schema_test_suite(name):
    docs = [d for d in jsts_docs() if len(d[1].encode("utf-8")) <= SLOW_MAX_BYTES]
    _run(name, docs)


# ----------------------------------------------------------------- SQL

SQL_DOCS = {"smollm2": 40, "tekken": 20}
SQL_SEED = 20251201


def spider_sample(n):
    import random
    from support import corpora
    queries = corpora.spider_queries()  # skips when the corpus is missing
    return [(f"spider[{i}]", queries[i]) for i in random.Random(SQL_SEED).sample(range(len(queries)), n)]


@pytest.mark.parametrize("name", sorted(VOCABS))
def test_parity_spider_sample(name):
    """Spider queries, bundled sql.lark (word-boundary pragma off for cfgmask):
    bit-for-bit equal masks at every position."""
    _run(name, spider_sample(SQL_DOCS[name]), which="sql")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(VOCABS))
def test_parity_spider_all(name):
    from support import corpora
    _run(name, [(f"spider[{i}]", q) for i, q in enumerate(corpora.spider_queries())], which="sql")


def _explain_word_boundary(pos, prefix, cfg_only, llg_only, vocab):
    """``word_boundary``: the pragma only removes tokens, never adds one."""
    return None if len(cfg_only) else "word_boundary"


def test_sql_word_boundary_only_removes_tokens():
    name = "smollm2"
    before = EXCEPTION_COUNTS[f"word_boundary[{name}]"]
    _, failures = compare_masks(name, spider_sample(10), explain=_explain_word_boundary, which="sql_wb")
    assert not failures, "\n  ".join(failures[:MAX_REPORTED])
    # it does remove tokens (e.g. " within" at the start: WITH directly followed by "in")
    assert EXCEPTION_COUNTS[f"word_boundary[{name}]"] > before


# ------------------------------------------------- documented difference 1

def _explain_initial_skip(pos, prefix, cfg_only, llg_only, vocab):
    """``initial_skip``: before any non-whitespace byte, cfgmask additionally
    allows tokens that start with JSON whitespace; llguidance allows nothing
    cfgmask refuses."""
    if len(llg_only) or prefix.strip(JSON_WS):
        return None
    if all(vocab.token_bytes[int(t)] is not None and vocab.token_bytes[int(t)][:1] in
           [bytes([c]) for c in JSON_WS] for t in cfg_only):
        return "initial_skip"
    return None


@pytest.mark.parametrize("name", sorted(VOCABS))
def test_initial_skip_is_the_only_default_difference(name):
    docs = sample(jsonschemabench_docs(), 10, max_bytes=DEFAULT_MAX_BYTES)
    # documents led by whitespace exercise the cfgmask-only path further
    docs = docs + [(f"ws+{n}", "\n  \t" + t) for n, t in docs[:3]]
    before = EXCEPTION_COUNTS[f"initial_skip[{name}]"]
    _, failures = compare_masks(name, docs[:10], initial_skip=False, explain=_explain_initial_skip,
                                which="json_ignore")
    assert not failures, "\n  ".join(failures[:MAX_REPORTED])
    # it fires exactly once per document (the first mask), never later
    assert EXCEPTION_COUNTS[f"initial_skip[{name}]"] - before == 10
    # with leading whitespace llguidance refuses the document's first token:
    # cfgmask accepts it (the whitespace-led documents replay in cfgmask alone)
    compiled = cfg_compiled(name, "json_ignore")
    for doc_name, text in docs[10:]:
        m = compiled.matcher()
        m.consume_many(ENCODERS[name](text))
        assert m.is_accepting(), doc_name
