"""Replay real JSON documents through the bundled JSON grammar (test oracle c).

Two kinds of replay:

* **Token replay.**  Each corpus document is tokenized the way a model would
  see it (its own tokenization, ``add_special_tokens=False``) with SmolLM2's
  byte-level BPE and with Mistral's tekken, and fed to a fresh matcher one
  token at a time.  At every step the next token must be set in the bitmask
  before it is consumed; at the end the matcher must be accepting with the EOS
  bit set.  Documents whose top-level value is an object or an array also
  check the other direction at every step before the end: EOS must *not* be
  allowed while the document is still open (a hole there would let a model
  stop in the middle of a value).  A smaller sample also rolls back to
  random positions (past EOS too) and continues in a ``copy``: the masks must
  equal those of the first replay.
* **Byte replay of JSONTestSuite.**  A 257-token vocabulary (token ``i`` is the
  single byte ``i``, EOS is 256) turns token replay into byte replay, so the
  exact byte where the grammar refuses a file can be compared with
  ``jsontestsuite-expected.json`` (what a strict RFC 8259 recogniser does):
  ``y_`` files are accepted, ``n_`` files are refused at exactly their
  ``first_rejected_byte`` (by the mask and by ``consume``) or, when that is
  null, consume every byte but are not allowed to end.  ``i_`` files
  (implementation-defined) are checked against the same expectations; their
  outcomes are tabulated in ``docs/performance.md`` ("JSONTestSuite i_ files").

There are no exceptions: the bundled grammar is strict RFC 8259
(``JSON-text = ws value ws``), so files ending in whitespace are accepted and
corpus documents are replayed exactly as stored, trailing newline included.

The default run replays a fixed sample (documents capped in size); ``-m slow``
replays every document of both corpora.  The corpora are read from
``../shared/corpora/json`` (``CFGMASK_CORPORA`` overrides the root); tests
skip with the reason when they are missing.
"""

import functools
import json
import os
import random

import numpy as np
import pytest

import cfgmask
from cfgmask.errors import TokenRejected
from cfgmask.engine.vocab import Vocabulary

try:
    from support.corpora import corpora_dir
except ImportError:  # pragma: no cover - until support/corpora.py lands
    def corpora_dir():
        return os.environ.get("CFGMASK_CORPORA", os.path.join(
            os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
            "shared", "corpora"))

# ------------------------------------------------------------------ settings

SAMPLE_DOCS = 100            # jsonschemabench documents per tokenizer, default run
SAMPLE_JSTS_FILES = 20       # JSON Schema Test Suite files per tokenizer, default run
SAMPLE_MAX_BYTES = 4000      # size cap of sampled documents
SEED = 20250601              # sample choice is fixed so that failures reproduce
MAX_REPORTED = 8             # failures quoted in an assertion message


# ------------------------------------------------------------------- corpora

def json_corpus_dir():
    """``<corpora>/json``; skips when the corpus is absent."""
    path = os.path.join(corpora_dir(), "json")
    if not os.path.isdir(path):
        pytest.skip(f"JSON corpus not found at {path} (set CFGMASK_CORPORA to the corpora root)")
    return path


def _need_file(path):
    if not os.path.exists(path):
        pytest.skip(f"corpus file {path} is missing (set CFGMASK_CORPORA to the corpora root)")
    return path


@functools.lru_cache(maxsize=None)
def _jsonschemabench_docs(root):
    path = _need_file(os.path.join(root, "jsonschemabench-valid-sample.jsonl"))
    docs = []
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            rec = json.loads(line)
            docs.append((f"jsonschemabench:{line_no}:{rec.get('schema')}", rec["doc"]))
    return tuple(docs)


def jsonschemabench_docs():
    """``(name, text)`` of every document of ``jsonschemabench-valid-sample.jsonl``."""
    return _jsonschemabench_docs(json_corpus_dir())


@functools.lru_cache(maxsize=None)
def _jsts_docs(root):
    base = os.path.join(root, "json-schema-test-suite")
    if not os.path.isdir(base):
        pytest.skip(f"{base} is missing (set CFGMASK_CORPORA to the corpora root)")
    docs = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for fn in sorted(filenames):
            if fn.endswith(".json"):
                p = os.path.join(dirpath, fn)
                with open(p, "rb") as f:
                    docs.append((os.path.relpath(p, root), f.read().decode("utf-8")))
    return tuple(docs)


def jsts_docs():
    """``(name, text)`` of every ``.json`` file of the JSON Schema Test Suite."""
    return _jsts_docs(json_corpus_dir())


def sample(docs, n, max_bytes=SAMPLE_MAX_BYTES, seed=SEED):
    """A fixed random sample of ``n`` documents of at most ``max_bytes`` UTF-8 bytes."""
    small = [d for d in docs if len(d[1].encode("utf-8")) <= max_bytes]
    rng = random.Random(seed)
    return rng.sample(small, min(n, len(small)))


# ---------------------------------------------------------------- tokenizers

def _tokenizer_helpers():
    # Imported lazily: the loaders skip when a tokenizer package is missing.
    from support import vocabs as tokenizers
    return tokenizers


@functools.lru_cache(maxsize=None)
def _tekken_n_special():
    with open(_tokenizer_helpers().tekken_json_path(), encoding="utf-8") as f:
        return int(json.load(f)["config"]["default_num_special_tokens"])


def encode_smollm2(text):
    # split_special_tokens: a document is plain text; "<filename>" in a JS file
    # (node-commander's hook.js) must not become SmolLM2's special token 6
    tok = _tokenizer_helpers().smollm2_tokenizer()
    return list(tok(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])


def encode_tekken(text):
    """Tekken ids of ``text`` (no BOS): tiktoken ranks shifted past the special ids."""
    enc = _tokenizer_helpers().tekken_encoding()
    off = _tekken_n_special()
    return [r + off for r in enc.encode(text, allowed_special=set(), disallowed_special=())]


TOKENIZERS = {
    "smollm2": (lambda: _tokenizer_helpers().smollm2_vocab(), encode_smollm2),
    "tekken": (lambda: _tokenizer_helpers().tekken_vocab(), encode_tekken),
}


@functools.lru_cache(maxsize=None)
def compiled_json(tokenizer_name):
    vocab = TOKENIZERS[tokenizer_name][0]()
    return cfgmask.compile(cfgmask.Grammar.builtin("json"), vocab)


def bit(bitmask_row, t):
    return bool((int(bitmask_row[t >> 5]) >> (t & 31)) & 1)


# -------------------------------------------------------------------- replay

def replay_tokens(compiled, ids, doc_bytes, check_no_early_eos):
    """Replay ``ids``; return None when everything holds, else a one-line reason."""
    vocab = compiled.vocab
    eos = vocab.eos_token_ids
    m = compiled.matcher()
    bm = compiled.allocate_bitmask()[0]
    for pos, t in enumerate(ids):
        bm[:] = 0
        m.fill_bitmask(bm)
        if not bit(bm, t):
            return (f"token {pos}/{len(ids)} id {t} {vocab.token_bytes[t]!r} is not in the mask "
                    f"after ...{m.prefix[-60:]!r}")
        # an object/array document is complete only at its closing bracket:
        # EOS before that (with more than trailing whitespace to come) is a hole
        if (check_no_early_eos and any(bit(bm, e) for e in eos)
                and doc_bytes[len(m.prefix):].strip(b" \t\r\n")):
            return f"EOS allowed inside the document at token {pos} after ...{m.prefix[-60:]!r}"
        try:
            m.consume(t)
        except TokenRejected as e:
            return f"token {pos} id {t} was in the mask but consume refused it: {e}"
    if m.prefix != doc_bytes:
        return f"consumed bytes differ from the document (tokenizer round trip?): {m.prefix[:80]!r}"
    bm[:] = 0
    m.fill_bitmask(bm)
    if not m.is_accepting():
        return f"not accepting at the end of the document (...{doc_bytes[-60:]!r})"
    if not all(bit(bm, e) for e in eos):
        return f"EOS bit not set at the end of the document (...{doc_bytes[-60:]!r})"
    return None


def replay_corpus(tokenizer_name, docs):
    compiled = compiled_json(tokenizer_name)
    encode = TOKENIZERS[tokenizer_name][1]
    failures = []
    n_tokens = 0
    for name, text in docs:
        ids = encode(text)
        n_tokens += len(ids)
        stripped = text.lstrip(" \t\r\n")
        reason = replay_tokens(compiled, ids, text.encode("utf-8"),
                               check_no_early_eos=stripped[:1] in ("{", "["))
        if reason is not None:
            failures.append(f"{name}: {reason}")
    assert not failures, (
        f"{len(failures)} of {len(docs)} documents failed token replay with {tokenizer_name} "
        f"({n_tokens} tokens):\n  " + "\n  ".join(failures[:MAX_REPORTED]))
    return n_tokens


@pytest.mark.parametrize("tokenizer_name", sorted(TOKENIZERS))
def test_jsonschemabench_sample(tokenizer_name):
    replay_corpus(tokenizer_name, sample(jsonschemabench_docs(), SAMPLE_DOCS))


@pytest.mark.parametrize("tokenizer_name", sorted(TOKENIZERS))
def test_json_schema_test_suite_sample(tokenizer_name):
    replay_corpus(tokenizer_name, sample(jsts_docs(), SAMPLE_JSTS_FILES))


@pytest.mark.slow
@pytest.mark.parametrize("tokenizer_name", sorted(TOKENIZERS))
def test_jsonschemabench_all(tokenizer_name):
    replay_corpus(tokenizer_name, jsonschemabench_docs())


@pytest.mark.slow
@pytest.mark.parametrize("tokenizer_name", sorted(TOKENIZERS))
def test_json_schema_test_suite_all(tokenizer_name):
    replay_corpus(tokenizer_name, jsts_docs())


ROLLBACK_DOCS = 20


@pytest.mark.parametrize("tokenizer_name", sorted(TOKENIZERS))
def test_rollback_and_copy_on_real_documents(tokenizer_name):
    """Masks after ``rollback`` (also past EOS) and in a ``copy`` equal the
    masks of the first replay at the same position."""
    compiled = compiled_json(tokenizer_name)
    encode = TOKENIZERS[tokenizer_name][1]
    eos = compiled.vocab.eos_token_ids[0]
    rng = random.Random(SEED)
    bm = compiled.allocate_bitmask()
    for name, text in sample(jsonschemabench_docs(), ROLLBACK_DOCS, max_bytes=1500):
        ids = encode(text)
        m = compiled.matcher()
        masks = []
        for t in ids + [eos]:
            bm[:] = 0
            m.fill_bitmask(bm)
            masks.append(bm.copy())
            m.consume(t)
        assert m.is_finished()
        for _ in range(3):
            k = rng.randrange(0, len(ids) + 1)
            m.rollback(m.n_consumed - k)
            assert m.prefix == text.encode("utf-8")[:len(m.prefix)]
            bm[:] = 0
            m.fill_bitmask(bm)
            assert np.array_equal(bm, masks[k]), f"{name}: mask after rollback to token {k} differs"
            cp = m.copy()
            for j in range(k, len(ids)):
                bm[:] = 0
                cp.fill_bitmask(bm)
                assert np.array_equal(bm, masks[j]), f"{name}: copy's mask at token {j} differs"
                cp.consume(ids[j])
            assert cp.is_accepting()
            m.consume_many(ids[k:] + [eos])
            assert m.is_finished()


# ------------------------------------------------- JSONTestSuite, byte level

BYTE_EOS = 256


@functools.lru_cache(maxsize=None)
def byte_compiled():
    """JSON compiled against the byte vocabulary: token ``i`` = byte ``i``, EOS = 256."""
    vocab = Vocabulary([bytes([i]) for i in range(256)] + [None], [BYTE_EOS])
    return cfgmask.compile(cfgmask.Grammar.builtin("json"), vocab)


@functools.lru_cache(maxsize=None)
def _jsontestsuite(root):
    d = os.path.join(root, "jsontestsuite")
    exp_path = _need_file(os.path.join(root, "jsontestsuite-expected.json"))
    if not os.path.isdir(d):
        pytest.skip(f"{d} is missing (set CFGMASK_CORPORA to the corpora root)")
    with open(exp_path, encoding="utf-8") as f:
        expected = json.load(f)
    files = {}
    for fn in sorted(os.listdir(d)):
        if fn.endswith(".json"):
            with open(os.path.join(d, fn), "rb") as f:
                files[fn] = f.read()
    return files, expected


def jsontestsuite():
    """``({file name: bytes}, expected)``; ``expected[name]`` has ``bytes``,
    ``first_rejected_byte`` (int or None) and ``accepted_at_eof``."""
    return _jsontestsuite(json_corpus_dir())


def byte_replay(data):
    """Feed ``data`` byte by byte; return ``(first_refused_index or None, eos_allowed_at_end)``.

    Checks on the way that the mask and ``consume`` agree at every byte and
    that a refused byte leaves the matcher unchanged.
    """
    compiled = byte_compiled()
    m = compiled.matcher()
    bm = compiled.allocate_bitmask()[0]
    for k, b in enumerate(data):
        bm[:] = 0
        m.fill_bitmask(bm)
        in_mask = bit(bm, b)
        try:
            m.consume(b)
            consumed = True
        except TokenRejected:
            consumed = False
        assert in_mask == consumed, (
            f"byte {k} ({bytes([b])!r}): mask says {in_mask}, consume says {consumed}")
        if not consumed:
            assert m.prefix == data[:k], "a refused byte changed the matcher"
            return k, False
    bm[:] = 0
    m.fill_bitmask(bm)
    eos = bit(bm, BYTE_EOS)
    assert eos == m.is_accepting(), "EOS bit and is_accepting() disagree"
    return None, eos


def _outcome_str(first_rejected, accepted):
    if first_rejected is not None:
        return f"refused at byte {first_rejected}"
    return "accepted" if accepted else "all bytes consumed, EOS refused"


def expected_outcome(data, exp):
    """What cfgmask must do with ``data``: ``(first_refused_byte, eos_allowed_at_end)``,
    exactly what the strict RFC 8259 recogniser of the expected file does."""
    return exp["first_rejected_byte"], exp["accepted_at_eof"]


def _check_files(prefix):
    files, expected = jsontestsuite()
    names = [n for n in files if n.startswith(prefix)]
    assert names, f"no {prefix}* files in the JSONTestSuite corpus"
    bad = []
    for name in names:
        exp = expected[name]
        assert exp["bytes"] == len(files[name]), f"{name}: expected-file size mismatch"
        got = byte_replay(files[name])
        k, acc = expected_outcome(files[name], exp)
        if got != (k, acc):
            bad.append(f"{name}: got {_outcome_str(*got)}, expected {_outcome_str(k, acc)}"
                       f" (file starts {files[name][:40]!r})")
    return names, bad


def test_jsontestsuite_y_files_accepted():
    """Every y_ file is accepted (whole file, then EOS)."""
    names, bad = _check_files("y_")
    _, expected = jsontestsuite()
    # The expected file must agree with the suite's own naming for y_ files.
    assert all(expected[n]["first_rejected_byte"] is None and expected[n]["accepted_at_eof"]
               for n in names)
    assert not bad, f"{len(bad)} of {len(names)} y_ files not accepted:\n  " + "\n  ".join(bad)


def test_jsontestsuite_n_files_rejected_at_the_expected_byte():
    names, bad = _check_files("n_")
    _, expected = jsontestsuite()
    assert not any(expected[n]["accepted_at_eof"] for n in names)
    assert not bad, (f"{len(bad)} of {len(names)} n_ files not refused where expected:\n  "
                     + "\n  ".join(bad))


def test_jsontestsuite_i_files_match_strict_rfc8259():
    """The bundled grammar is strict RFC 8259 over UTF-8 input, so the
    implementation-defined files follow the strict recogniser too (big numbers
    accepted: the grammar has no size limits; invalid UTF-8, UTF-16 and BOMs
    refused).  docs/performance.md lists each file's outcome."""
    names, bad = _check_files("i_")
    assert not bad, (f"{len(bad)} of {len(names)} i_ files differ from the strict recogniser:\n  "
                     + "\n  ".join(bad))


def jsontestsuite_i_table():
    """Markdown rows ``| file | bytes | outcome |`` for the ``i_`` files (docs helper)."""
    files, _ = jsontestsuite()
    rows = []
    for name in sorted(n for n in files if n.startswith("i_")):
        rows.append(f"| `{name}` | {len(files[name])} | {_outcome_str(*byte_replay(files[name]))} |")
    return rows


if __name__ == "__main__":  # python -m tests.test_replay_json: print the i_ table
    print("| file | bytes | cfgmask (bundled json.lark) |\n|---|---:|---|")
    print("\n".join(jsontestsuite_i_table()))
