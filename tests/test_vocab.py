"""Vocabulary: token id -> bytes for the three real tokenizers, checked against
the tokenizers' own decoders over the whole vocabulary, plus the constructor's
validation rules."""

import base64
import json

import pytest

from cfgmask.errors import ConfigurationError
from cfgmask.engine.vocab import Vocabulary, bytes_to_unicode, unicode_to_bytes
from support.vocabs import (ASCII_TEXTS, MULTILINGUAL_TEXTS, smollm2_tokenizer, smollm2_vocab,
                              sp_model_path, sp_processor, sp_reference_token_bytes, sp_vocab,
                              tekken_encoding,
                              tekken_json_path, tekken_vocab)


def _is_utf8(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


# ------------------------------------------------------------------ constructor

def test_constructor_normalises_entries():
    v = Vocabulary([b"a", bytearray(b"bc"), memoryview(b"d"), None, b""], [3])
    assert v.token_bytes == (b"a", b"bc", b"d", None, None)
    assert all(type(tb) in (bytes, type(None)) for tb in v.token_bytes)
    assert v.n_tokens == 5 and v.vocab_size == 5 and len(v) == 5
    assert v.eos_token_ids == (3,)


def test_constructor_eos_is_never_text():
    # an EOS id given with bytes is allowed by the EOS rule only, so its bytes go
    v = Vocabulary([b"a", b"</s>", b"c"], [1, 1, 0])
    assert v.eos_token_ids == (0, 1)
    assert v.token_bytes == (None, None, b"c")


@pytest.mark.parametrize("bad", [[b"a", "b"], [b"a", 1], [b"a", [98]], "abc", b"abc", 7])
def test_constructor_rejects_wrong_types(bad):
    with pytest.raises(ConfigurationError):
        Vocabulary(bad, [])


@pytest.mark.parametrize("eos", [[3], [-1], [0, 10], ["1"], [1.0]])
def test_constructor_rejects_bad_eos(eos):
    with pytest.raises(ConfigurationError):
        Vocabulary([b"a", b"b", b"c"], eos)


@pytest.mark.parametrize("size", [2, -1, 3.0, "4", True])
def test_constructor_rejects_bad_vocab_size(size):
    with pytest.raises(ConfigurationError):
        Vocabulary([b"a", b"b", b"c"], [], vocab_size=size)


def test_vocab_size_wider_than_tokenizer():
    v = Vocabulary([b"a", None, b"c"], [1], vocab_size=8)
    assert v.n_tokens == 3 and v.vocab_size == 8 and len(v.token_bytes) == 3
    assert v.special_token_ids() == [1]


def test_fingerprint():
    base = Vocabulary([b"ab", b"c", None], [2])
    assert base.fingerprint() == Vocabulary([b"ab", b"c", None], [2]).fingerprint()
    assert base == Vocabulary([b"ab", b"c", None], [2])
    others = [
        Vocabulary([b"a", b"bc", None], [2]),          # same concatenation, other split
        Vocabulary([b"ab", b"c", None], []),
        Vocabulary([b"ab", b"c", None], [2], vocab_size=4),
        Vocabulary([b"ab", b"c", b"x"], [1]),
        Vocabulary([b"ab", None, None], [2]),
    ]
    prints = {o.fingerprint() for o in others} | {base.fingerprint()}
    assert len(prints) == len(others) + 1
    assert len(base.fingerprint()) == 64


# ------------------------------------------------------------- GPT-2 byte map

def test_byte_map_matches_hf_tokenizers():
    decoders = pytest.importorskip("tokenizers.decoders")
    pre_tokenizers = pytest.importorskip("tokenizers.pre_tokenizers")
    b2u = bytes_to_unicode()
    assert len(set(b2u)) == 256
    assert set(b2u) == set(pre_tokenizers.ByteLevel.alphabet())
    assert b2u[0x20] == "\u0120" and b2u[0x0A] == "\u010a" and b2u[ord("A")] == "A"
    assert unicode_to_bytes() == {c: b for b, c in enumerate(b2u)}
    dec = decoders.ByteLevel()
    for b in range(128):
        assert dec.decode([b2u[b]]) == chr(b)
    # every two-byte UTF-8 character, spelled in byte-map characters
    for cp in range(0x80, 0x800):
        enc = chr(cp).encode()
        assert dec.decode(["".join(b2u[x] for x in enc)]) == chr(cp)


# ------------------------------------------------------------- SmolLM2 (HF BPE)

def test_smollm2_layout():
    tok = smollm2_tokenizer()
    v = smollm2_vocab()
    assert v.n_tokens == len(tok) == 49152
    assert v.vocab_size == 49152
    assert v.eos_token_ids == (tok.eos_token_id,) == (2,)
    specials = set(tok.all_special_ids)
    specials |= {i for i, a in tok.added_tokens_decoder.items() if a.special}
    assert specials == set(range(17))
    assert [i for i, tb in enumerate(v.token_bytes) if tb is None] == sorted(specials)


def test_smollm2_every_token_matches_decode():
    tok = smollm2_tokenizer()
    v = smollm2_vocab()
    ids = [i for i, tb in enumerate(v.token_bytes) if tb is not None]
    decoded = tok.batch_decode([[i] for i in ids], clean_up_tokenization_spaces=False)
    mismatches = []
    n_partial = 0
    for i, text in zip(ids, decoded):
        tb = v.token_bytes[i]
        if _is_utf8(tb):
            ok = tb.decode("utf-8") == text
        else:  # HF replaces an incomplete character by U+FFFD, as Python does
            n_partial += 1
            ok = "\ufffd" in text and tb.decode("utf-8", "replace") == text
        if not ok:
            mismatches.append((i, tb, text))
    assert not mismatches, mismatches[:10]
    assert n_partial > 100  # byte-level BPE has many pieces that split a character


def test_smollm2_encode_concatenates_to_input():
    tok = smollm2_tokenizer()
    v = smollm2_vocab()
    partial_seen = set()
    for text in MULTILINGUAL_TEXTS + ASCII_TEXTS:
        ids = tok.encode(text, add_special_tokens=False)
        pieces = [v.token_bytes[i] for i in ids]
        assert None not in pieces
        assert b"".join(pieces) == text.encode("utf-8"), text
        partial_seen.update(i for i in ids if not _is_utf8(v.token_bytes[i]))
    assert len(partial_seen) >= 20  # the multilingual texts exercise split characters


def test_smollm2_vocab_size_wider():
    tok = smollm2_tokenizer()
    v = Vocabulary.from_hf(tok, vocab_size=49152 + 64)
    assert v.vocab_size == 49216 and v.n_tokens == 49152
    assert v.token_bytes == smollm2_vocab().token_bytes
    with pytest.raises(ConfigurationError, match="smaller than the tokenizer"):
        Vocabulary.from_hf(tok, vocab_size=49151)


def test_from_hf_raw_tokenizer_and_eos_override():
    tok = smollm2_tokenizer()
    raw = Vocabulary.from_hf(tok.backend_tokenizer)
    # a raw tokenizers.Tokenizer knows its special added tokens but not which one is EOS
    assert raw.eos_token_ids == ()
    assert raw.token_bytes == smollm2_vocab().token_bytes
    v = Vocabulary.from_hf(tok, eos_token_ids=[0, 2])
    assert v.eos_token_ids == (0, 2)


# --------------------------------------------------------- HF SentencePiece style

def _hf_from_sentencepiece(decoder_kind):
    """A transformers tokenizer built from the Mistral v3 SentencePiece pieces,
    shaped like real Llama/Mistral tokenizer.json files."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    from tokenizers import AddedToken, decoders, models, normalizers, pre_tokenizers
    sp = sp_processor()
    n = sp.get_piece_size()
    vocab = {sp.id_to_piece(i): i for i in range(n)}
    assert len(vocab) == n
    tk = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=[], byte_fallback=True,
                                         unk_token="<unk>", fuse_unk=True))
    if decoder_kind == "replace":  # Llama 2 style
        tk.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"),
                                              normalizers.Replace(" ", "\u2581")])
        tk.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                        decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    else:  # Metaspace style
        tk.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first",
                                                    split=False)
        meta = decoders.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
        tk.decoder = meta if decoder_kind == "metaspace" else decoders.Sequence(
            [decoders.ByteFallback(), meta])
    controls = [i for i in range(n) if sp.is_control(i) or sp.is_unknown(i)]
    tk.add_special_tokens([AddedToken(sp.id_to_piece(i), special=True, normalized=False)
                           for i in controls])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>",
                                                eos_token="</s>", unk_token="<unk>")


def test_hf_sentencepiece_byte_fallback_without_decoder_step_raises():
    # decoding would print <0xNN> pieces literally while encoding uses them for bytes
    hf = _hf_from_sentencepiece("metaspace")
    assert hf.decode([hf.convert_tokens_to_ids("<0x41>")]) == "<0x41>"
    with pytest.raises(ConfigurationError, match="no ByteFallback step"):
        Vocabulary.from_hf(hf)


@pytest.mark.parametrize("decoder_kind", ["replace", "metaspace+bytefallback"])
def test_hf_sentencepiece_style_matches_sentencepiece(decoder_kind):
    hf = _hf_from_sentencepiece(decoder_kind)
    v = Vocabulary.from_hf(hf)
    ref = sp_vocab()
    assert v.eos_token_ids == ref.eos_token_ids == (2,)
    diff = [(i, a, b) for i, (a, b) in enumerate(zip(v.token_bytes, ref.token_bytes)) if a != b]
    assert not diff, diff[:10]
    assert v.n_tokens == ref.n_tokens
    # and HF's own decoder agrees, token by token (anchored so no leading space is stripped)
    anchor = hf.convert_tokens_to_ids("a")
    ids = [i for i, tb in enumerate(v.token_bytes) if tb is not None]
    texts = hf.batch_decode([[anchor, i] for i in ids], clean_up_tokenization_spaces=False)
    bad = [(i, t) for i, t in zip(ids, texts)
           if t != (b"a" + v.token_bytes[i]).decode("utf-8", "replace")]
    assert not bad, bad[:10]


def test_hf_sentencepiece_backend_reads_sp_model():
    spb = pytest.importorskip("transformers.tokenization_utils_sentencepiece")
    tok = spb.SentencePieceBackend(vocab_file=sp_model_path(), bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")
    v = Vocabulary.from_hf(tok, vocab_size=32832)
    ref = sp_reference_token_bytes()
    diff = [(i, a, b) for i, (a, b) in enumerate(zip(v.token_bytes, ref)) if a != b]
    assert not diff and len(v.token_bytes) == len(ref), diff[:10]
    assert v.eos_token_ids == (2,) and v.vocab_size == 32832


def test_hf_unknown_scheme_raises():
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models
    tk = tokenizers.Tokenizer(models.WordPiece(vocab={"[UNK]": 0, "a": 1, "##b": 2},
                                               unk_token="[UNK]"))
    tk.decoder = decoders.WordPiece()
    with pytest.raises(ConfigurationError, match="unsupported tokenizer scheme"):
        Vocabulary.from_hf(tk)
    tk.decoder = None
    with pytest.raises(ConfigurationError, match="unsupported tokenizer scheme"):
        Vocabulary.from_hf(tk)
    tk = tokenizers.Tokenizer(models.BPE(vocab={"a": 0, "b": 1}, merges=[]))
    tk.decoder = decoders.Sequence([decoders.ByteLevel(), decoders.Replace("\u2581", " ")])
    with pytest.raises(ConfigurationError, match="ByteLevel decoder combined"):
        Vocabulary.from_hf(tk)
    with pytest.raises(ConfigurationError):
        Vocabulary.from_hf(object())


def test_hf_bytelevel_added_tokens_follow_the_decoder():
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import AddedToken, decoders, models
    tk = tokenizers.Tokenizer(models.BPE(vocab={"a": 0, "\u0120b": 1, "<|eot|>": 2}, merges=[]))
    tk.decoder = decoders.ByteLevel()
    tk.add_tokens([AddedToken("\u00e9 x", special=False), AddedToken("<think>", special=False),
                   AddedToken("\u00e9", special=False)])
    tk.add_special_tokens([AddedToken("<|eot|>", special=True)])
    v = Vocabulary.from_hf(tk, eos_token_ids=[2])
    # "é x" has a space, which is not a byte-map character: passed through as text;
    # "é" alone is the byte-map character for byte 0xE9, and decode treats it so
    assert v.token_bytes == (b"a", b" b", None, "\u00e9 x".encode(), b"<think>", b"\xe9")
    for i in (0, 1, 3, 4, 5):
        assert tk.decode([0, i, 0]) == (b"a" + v.token_bytes[i] + b"a").decode("utf-8", "replace")


def test_hf_bytelevel_unmappable_piece_raises():
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models
    tk = tokenizers.Tokenizer(models.BPE(vocab={"a": 0, "\u2603": 1}, merges=[]))
    tk.decoder = decoders.ByteLevel()
    with pytest.raises(ConfigurationError, match="outside the GPT-2 byte map"):
        Vocabulary.from_hf(tk)


# --------------------------------------------------------------- Mistral tekken

def test_from_tekken_without_mistral_common(monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "mistral_common" else real(name, *a))
    with pytest.raises(ConfigurationError, match="mistral-common"):
        Vocabulary.from_tekken()


def test_tekken_layout():
    v = tekken_vocab()
    assert v.n_tokens == v.vocab_size == 131072
    assert v.eos_token_ids == (2,)
    assert all(tb is None for tb in v.token_bytes[:1000])
    assert all(tb is not None for tb in v.token_bytes[1000:])
    # the first 256 ranks are the single bytes
    assert [v.token_bytes[1000 + b] for b in range(256)] == [bytes([b]) for b in range(256)]
    assert len(set(v.token_bytes[1000:])) == 130072  # no duplicate byte strings


def test_tekken_token_str_oracle():
    with open(tekken_json_path(), encoding="utf-8") as f:
        entries = json.load(f)["vocab"][:130072]
    v = tekken_vocab()
    for e in entries:
        tb = v.token_bytes[1000 + e["rank"]]
        assert tb == base64.b64decode(e["token_bytes"])
        if e["token_str"] is None:  # the file leaves it out for incomplete UTF-8
            assert not _is_utf8(tb), e
        else:
            assert tb.decode("utf-8") == e["token_str"], e


def test_tekken_matches_tiktoken():
    enc = tekken_encoding()
    v = tekken_vocab()
    vt = Vocabulary.from_tiktoken(enc)
    assert vt.eos_token_ids == () and vt.n_tokens == 130072
    assert vt.token_bytes == v.token_bytes[1000:]
    for r in range(0, 130072, 7):
        assert enc.decode_single_token_bytes(r) == v.token_bytes[1000 + r]
    for text in MULTILINGUAL_TEXTS + ASCII_TEXTS:
        ids = [r + 1000 for r in enc.encode(text)]
        assert b"".join(v.token_bytes[i] for i in ids) == text.encode("utf-8"), text


def test_from_tiktoken_specials_and_holes():
    tiktoken = pytest.importorskip("tiktoken")
    ranks = {bytes([b]): b for b in range(256)}
    ranks[b"ab"] = 256
    ranks[b" the"] = 257
    enc = tiktoken.Encoding(name="tiny", pat_str=r"\s*\S+|\s+", mergeable_ranks=ranks,
                            special_tokens={"<|endoftext|>": 260, "<|fim|>": 258})
    v = Vocabulary.from_tiktoken(enc)
    assert v.n_tokens == 261 == enc.n_vocab
    assert v.eos_token_ids == (260,)
    assert v.token_bytes[256] == b"ab" and v.token_bytes[257] == b" the"
    assert v.token_bytes[258:] == (None, None, None)  # special, hole, special
    v2 = Vocabulary.from_tiktoken(enc, eos_token_ids=[258], special_ids=[257], vocab_size=300)
    assert v2.eos_token_ids == (258,) and v2.vocab_size == 300
    assert v2.token_bytes[257] is None and v2.token_bytes[260] is None
    with pytest.raises(ConfigurationError):
        Vocabulary.from_tiktoken(object())


def test_from_tekken_special_tokens_list_and_errors(tmp_path):
    def entry(r, b):
        return {"rank": r, "token_bytes": base64.b64encode(b).decode(), "token_str": None}
    data = {
        "config": {"default_vocab_size": 6, "default_num_special_tokens": 3, "pattern": ".",
                   "num_vocab_tokens": 4, "version": "v7"},
        "vocab": [entry(0, b"a"), entry(1, b"b"), entry(2, b"ab"), entry(3, b"unused")],
        "special_tokens": [{"rank": 0, "token_str": "<unk>", "is_control": True},
                           {"rank": 1, "token_str": "</s>", "is_control": True},
                           {"rank": 2, "token_str": "<s>", "is_control": True}],
    }
    p = tmp_path / "tiny_tekken.json"
    p.write_text(json.dumps(data))
    v = Vocabulary.from_tekken(p)
    assert v.token_bytes == (None, None, None, b"a", b"b", b"ab")
    assert v.eos_token_ids == (1,) and v.vocab_size == 6
    assert Vocabulary.from_tekken(p, vocab_size=8).vocab_size == 8
    with pytest.raises(ConfigurationError):
        Vocabulary.from_tekken(tmp_path / "missing.json")
    data["config"]["default_vocab_size"] = 9  # more ranks than the file has
    p.write_text(json.dumps(data))
    with pytest.raises(ConfigurationError, match="needs 6 ranks"):
        Vocabulary.from_tekken(p)


# ------------------------------------------------- Mistral SentencePiece v3

def test_sp_layout():
    sp = sp_processor()
    v = sp_vocab()
    n = sp.get_piece_size()
    assert v.n_tokens == v.vocab_size == n == 32768
    assert v.eos_token_ids == (sp.eos_id(),) == (2,)
    none_ids = {i for i, tb in enumerate(v.token_bytes) if tb is None}
    assert none_ids == {i for i in range(n) if sp.is_control(i) or sp.is_unknown(i)}
    assert 0 in none_ids and 1 in none_ids and 2 in none_ids
    byte_ids = [i for i in range(n) if sp.is_byte(i)]
    assert sorted(v.token_bytes[i] for i in byte_ids) == [bytes([b]) for b in range(256)]
    assert v.token_bytes[sp.piece_to_id("\u2581the")] == b" the"


def test_sp_every_token_matches_decode():
    sp = sp_processor()
    v = sp_vocab()
    anchor = sp.piece_to_id("a")
    assert v.token_bytes[anchor] == b"a"
    ids = [i for i, tb in enumerate(v.token_bytes) if tb is not None]
    texts = sp.decode([[anchor, i] for i in ids])
    bad = [(i, v.token_bytes[i], t) for i, t in zip(ids, texts)
           if t != (b"a" + v.token_bytes[i]).decode("utf-8", "replace")]
    assert not bad, bad[:10]


def test_sp_byte_fallback_encode_concatenates_to_input():
    sp = sp_processor()
    v = sp_vocab()
    bytes_used = 0
    for text in MULTILINGUAL_TEXTS + ASCII_TEXTS:
        ids = sp.encode(text)
        bytes_used += sum(1 for i in ids if sp.is_byte(i))
        # SentencePiece adds a dummy-prefix space before the text
        assert b"".join(v.token_bytes[i] for i in ids) == b" " + text.encode("utf-8"), text
    assert bytes_used >= 20


def test_from_sentencepiece_path_and_errors(tmp_path):
    v = Vocabulary.from_sentencepiece(sp_model_path())
    ref = sp_reference_token_bytes()
    diff = [(i, a, b) for i, (a, b) in enumerate(zip(v.token_bytes, ref)) if a != b]
    assert not diff and len(v.token_bytes) == len(ref), diff[:10]
    assert v.eos_token_ids == (2,) and v.vocab_size == 32768
    with pytest.raises(ConfigurationError, match="does not exist"):
        Vocabulary.from_sentencepiece(str(tmp_path / "nope.model"))
    with pytest.raises(ConfigurationError):
        Vocabulary.from_sentencepiece(object())
