"""Tokenizer -> token bytes: the :class:`Vocabulary` every mask is computed over.

A grammar constrains *bytes*; a model emits *token ids*.  ``Vocabulary`` is the
one place where the two meet: for every id it says which bytes the token
appends to the output, or that the token is not text at all.

Invariants (checked by the constructor, relied on by ``trie`` and the runtime):

* ``token_bytes[i]`` is a non-empty ``bytes`` object, or ``None``.  ``None``
  marks a special token (BOS, chat markers, control/unknown pieces, holes in
  the id space): it is never allowed by a mask.  An empty ``b""`` is stored as
  ``None`` too: a token that appends nothing cannot make progress and would
  let a model loop forever without leaving the grammar state.
* ``eos_token_ids`` is a sorted tuple of distinct ids in ``[0, n_tokens)``.
  They are allowed *only* by the end-of-sequence rule, never as text, so their
  ``token_bytes`` entry is ``None`` (an EOS id given with bytes is stored as
  ``None``).
* ``vocab_size >= n_tokens == len(token_bytes)``.  ``vocab_size`` is the width
  of the model's logits, which is often padded past the tokenizer (to a
  multiple of 64 or 128); ids in ``[n_tokens, vocab_size)`` are never allowed.
* The object is immutable after construction (``token_bytes`` is a tuple) and
  ``fingerprint()`` identifies its content for cache keys.

Loaders (each documents the tokenizer scheme it understands and raises
:class:`~cfgmask.errors.ConfigurationError` for anything else instead of
guessing):

* :meth:`Vocabulary.from_hf` -- a Hugging Face tokenizer (``transformers``
  fast/backend tokenizer or a raw ``tokenizers.Tokenizer``): byte-level BPE
  (GPT-2 byte <-> unicode map) or SentencePiece-style (``"▁"`` -> space,
  ``<0xNN>`` byte fallback).
* :meth:`Vocabulary.from_tiktoken` -- a ``tiktoken.Encoding``.
* :meth:`Vocabulary.from_tekken` -- Mistral's tekken JSON (tiktoken ranks
  shifted past 1000 special ids).
* :meth:`Vocabulary.from_sentencepiece` -- a ``sentencepiece`` model.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import itertools
import json
import numbers
import os
import re
import threading
from typing import Any, Iterable, Sequence

import numpy as np

from cfgmask.engine.prepared import PreparedVocab
from cfgmask.engine.trie import TokTrie
from cfgmask.errors import ConfigurationError

__all__ = ["Vocabulary", "bytes_to_unicode", "unicode_to_bytes"]

_FINGERPRINT_LABEL = b"cfgmask-vocabulary-v2"
_PREPARE_LOCK = threading.Lock()  # one PreparedVocab per Vocabulary, even with racing threads


def bytes_to_unicode():
    """The GPT-2 byte-level map: a list of 256 characters, one per byte value.

    Byte-level BPE stores every token as a string of "visible" characters, one
    per byte.  Bytes that are printable Latin-1 characters (``!``..``~``,
    ``¡``..``¬``, ``®``..``ÿ``: 188 of them) stand for themselves; the other 68
    (controls, space, DEL, NBSP, soft hyphen) are shifted to ``U+0100`` and up,
    in byte order, so that ``0x20`` (space) becomes ``"Ġ"`` (U+0120) and
    ``0x0A`` becomes ``"Ċ"`` (U+010A).
    """
    visible = set(range(0x21, 0x7F)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    out = []
    shifted = 0
    for b in range(256):
        if b in visible:
            out.append(chr(b))
        else:
            out.append(chr(0x100 + shifted))
            shifted += 1
    return out


def unicode_to_bytes():
    """Inverse of :func:`bytes_to_unicode`: a dict character -> byte value."""
    return {c: b for b, c in enumerate(bytes_to_unicode())}


_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>\Z")


# token ids are int32 in the runtime and (vocab_size + 31) // 32 must not overflow it
_MAX_VOCAB_SIZE = 2**31 - 32


def _is_int(x):
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


class Vocabulary:
    """Token id -> bytes, plus the EOS ids and the logits width.

    Parameters
    ----------
    token_bytes : sequence of ``bytes`` or ``None``
        ``token_bytes[i]`` is what token ``i`` appends to the output, or
        ``None`` for a special token (never allowed).  ``bytearray`` and
        ``memoryview`` entries are copied to ``bytes``; ``b""`` becomes
        ``None``.
    eos_token_ids : iterable of int
        Ids allowed only by the end-of-sequence rule.
    vocab_size : int, optional
        Width of the model's logits (default ``len(token_bytes)``); must not be
        smaller than ``len(token_bytes)``.

    Raises
    ------
    ConfigurationError
        For a wrong-typed entry, an EOS id outside ``[0, n_tokens)`` or a
        ``vocab_size`` smaller than the tokenizer.
    """

    __slots__ = ("token_bytes", "eos_token_ids", "vocab_size", "n_tokens", "_fingerprint",
                 "_flat_arrays", "_prepared")

    def __init__(self, token_bytes: Sequence[bytes | None], eos_token_ids: Iterable[int],
                 vocab_size: int | None = None) -> None:
        if isinstance(token_bytes, (bytes, str)):
            raise ConfigurationError(
                "token_bytes must be a sequence with one bytes-or-None entry per token id, "
                f"not a single {type(token_bytes).__name__}")
        try:
            items = list(token_bytes)
        except TypeError:
            raise ConfigurationError(
                f"token_bytes must be a sequence of bytes or None, got {type(token_bytes).__name__}"
            ) from None
        for i, tb in enumerate(items):
            if tb is None or type(tb) is bytes:
                if tb == b"":
                    items[i] = None
                continue
            if isinstance(tb, (bytes, bytearray, memoryview)):
                tb = bytes(tb)
                items[i] = tb if tb else None
                continue
            raise ConfigurationError(
                f"token_bytes[{i}] must be bytes or None, got {type(tb).__name__} ({tb!r:.60})")
        n_tokens = len(items)

        if vocab_size is None:
            vocab_size = n_tokens
        if not _is_int(vocab_size):
            raise ConfigurationError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
        vocab_size = int(vocab_size)
        if vocab_size > _MAX_VOCAB_SIZE:
            raise ConfigurationError(
                f"vocab_size={vocab_size} is too large: token ids are int32 and a bitmask row has "
                f"ceil(vocab_size/32) int32 words, so vocab_size must be at most {_MAX_VOCAB_SIZE}")
        if vocab_size < n_tokens:
            raise ConfigurationError(
                f"vocab_size={vocab_size} is smaller than the tokenizer ({n_tokens} token ids); "
                "it must be the width of the model's logits, which covers every token id")

        if eos_token_ids is None:
            eos_token_ids = ()
        elif _is_int(eos_token_ids):
            eos_token_ids = (eos_token_ids,)
        elif isinstance(eos_token_ids, (str, bytes)) or not hasattr(eos_token_ids, "__iter__"):
            raise ConfigurationError(f"eos_token_ids must be an int or a list of ints, got {eos_token_ids!r:.40}")
        eos = set()
        for e in eos_token_ids:
            if not _is_int(e):
                raise ConfigurationError(f"EOS token id {e!r} is not an int")
            e = int(e)
            if not 0 <= e < n_tokens:
                raise ConfigurationError(
                    f"EOS token id {e} is out of range: the tokenizer has ids 0..{n_tokens - 1}")
            eos.add(e)
        for e in eos:
            items[e] = None  # EOS is allowed by the end-of-sequence rule only

        self.token_bytes = tuple(items)
        self.eos_token_ids = tuple(sorted(eos))
        self.vocab_size = vocab_size
        self.n_tokens = n_tokens
        self._fingerprint = None
        self._flat_arrays = None
        self._prepared = None

    # ------------------------------------------------------------------ basics

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self):
        n_special = sum(1 for tb in self.token_bytes if tb is None)
        return (f"Vocabulary(n_tokens={self.n_tokens}, vocab_size={self.vocab_size}, "
                f"special={n_special}, eos={list(self.eos_token_ids)})")

    def __eq__(self, other):
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return (self.vocab_size == other.vocab_size and self.eos_token_ids == other.eos_token_ids
                and self.token_bytes == other.token_bytes)

    def __hash__(self):
        return hash(self.fingerprint())

    def __reduce__(self):
        # pickle the content only; the prepared tables are rebuilt (or loaded) on demand
        return (Vocabulary, (list(self.token_bytes), self.eos_token_ids, self.vocab_size))

    def fingerprint(self) -> str:
        """Hex sha256 of the content (token bytes, EOS ids, width), for cache keys.

        Hashes the id count, width and EOS ids, then every token's length
        (``-1`` for ``None``) as little-endian int64, then all token bytes back
        to back: the lengths delimit the bytes, so different splits of the
        same bytes never collide.  About 10 ms for 131k tokens.
        """
        if self._fingerprint is None:
            flat, offsets, special = self.token_arrays()
            lens = np.diff(offsets)
            lens[special.astype(bool)] = -1
            h = hashlib.sha256()
            h.update(_FINGERPRINT_LABEL)
            h.update(f"|{self.n_tokens}|{self.vocab_size}|{','.join(map(str, self.eos_token_ids))}|"
                     .encode())
            h.update(lens.astype("<i8").tobytes())
            h.update(flat.tobytes())
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def token_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(flat uint8, offsets int64[n+1], special uint8[n])``: all token bytes back to
        back, token ``i`` is ``flat[offsets[i]:offsets[i+1]]``, ``special[i]`` is 1 for
        ``None``.  Read-only, computed once."""
        if self._flat_arrays is None:
            tb = self.token_bytes
            n = self.n_tokens
            present = np.frombuffer(bytes(map(bool, tb)), dtype=bool)  # b"" never occurs
            text = list(filter(None, tb))
            lens = np.zeros(n, dtype=np.int64)
            lens[present] = np.fromiter(map(len, text), dtype=np.int64, count=len(text))
            offsets = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(lens, out=offsets[1:])
            flat = np.frombuffer(b"".join(text), dtype=np.uint8)
            special = (~present).astype(np.uint8)
            for a in (offsets, special):
                a.flags.writeable = False
            self._flat_arrays = (flat, offsets, special)
        return self._flat_arrays

    def prepared(self) -> PreparedVocab:
        """The :class:`~cfgmask.engine.prepared.PreparedVocab` of this vocabulary: the token
        trie and the other per-vocabulary tables, built (or loaded from the disk
        cache) on first use and shared by every grammar compiled against it."""
        if self._prepared is None:
            with _PREPARE_LOCK:
                if self._prepared is None:
                    self._prepared = PreparedVocab(self)
        return self._prepared

    def prepare(self) -> PreparedVocab:
        """Build now what is computed once per vocabulary, instead of in the first
        :func:`~cfgmask.compile` against it: the token trie, its tokens grouped by
        first byte, and the standard slices (the token sets of JSON string
        bodies, which JSON Schema grammars and JSON-like ``.lark`` grammars
        share).  A server calls it at start-up so that its first request does
        not pay for them; each comes from the disk cache when it is there.
        Idempotent; returns :meth:`prepared`."""
        p = self.prepared()
        p.trie  # noqa: B018 - built or loaded here
        p.first_byte_sets()
        p.standard_slices()
        return p

    def trie(self) -> TokTrie:
        """The :class:`~cfgmask.engine.trie.TokTrie` of this vocabulary (``prepared().trie``),
        built or loaded on first use and shared by every grammar compiled against it."""
        return self.prepared().trie

    def special_token_ids(self) -> list[int]:
        """Ids in ``[0, n_tokens)`` whose bytes are ``None`` (EOS included)."""
        return [i for i, tb in enumerate(self.token_bytes) if tb is None]

    # ------------------------------------------------------------ Hugging Face

    @classmethod
    def from_hf(cls, tokenizer: Any, vocab_size: int | None = None,
                eos_token_ids: Iterable[int] | None = None) -> Vocabulary:
        """Read a Hugging Face tokenizer.

        ``tokenizer`` is a ``transformers`` tokenizer backed by the Rust
        ``tokenizers`` library (``PreTrainedTokenizerFast`` / transformers 5's
        ``TokenizersBackend``, which is also what ``gguf_file=...`` loads) or
        a raw ``tokenizers.Tokenizer``.  The scheme is read from the
        tokenizer's JSON: a ``ByteLevel`` decoder means byte-level BPE; a
        ``Metaspace`` decoder, or a ``Sequence`` decoder that replaces
        ``"▁"`` with a space, means SentencePiece-style pieces, with
        ``<0xNN>`` pieces read as single bytes when the decoder has a
        ``ByteFallback`` step (a model with ``byte_fallback`` but a decoder
        without that step would decode them as the literal text ``<0xNN>``:
        refused).  Anything else raises ``ConfigurationError``.

        Special tokens -> ``None``: ``all_special_ids``, added tokens marked
        ``special``, and the model's ``unk_token``.  Non-special added tokens
        (user-defined words) are text, read the way the decoder reads them:
        the Rust decoder runs them through the same steps as model pieces, so
        with a ``ByteLevel`` decoder an added token whose characters are all
        in the byte map is mapped (``"é"`` -> ``b"\\xe9"``, as ``decode``
        does) and any other is its UTF-8 content; with a SentencePiece-style
        decoder ``"▁"`` becomes a space.

        A tokenizer without a Rust backend but with a ``sp_model`` (transformers
        5's ``SentencePieceBackend``) is read with SentencePiece's own rules
        (:meth:`from_sentencepiece`) plus its special ids.  Note that the
        generic Python ``decode`` of that class is lossy (it strips
        surrounding whitespace and prints byte pieces as ``<0xNN>``): decode
        its output with ``tokenizer.sp_model.decode``.

        ``eos_token_ids`` defaults to ``tokenizer.eos_token_id`` (none for a
        raw ``tokenizers.Tokenizer``).
        """
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None and hasattr(tokenizer, "to_str") and hasattr(tokenizer, "get_vocab"):
            backend = tokenizer  # a raw tokenizers.Tokenizer
        if backend is None:
            if hasattr(tokenizer, "sp_model"):
                return cls._from_hf_sentencepiece_backend(tokenizer, vocab_size, eos_token_ids)
            raise ConfigurationError(
                f"cannot read token bytes from {type(tokenizer).__name__}: expected a transformers "
                "tokenizer backed by the `tokenizers` library (it has .backend_tokenizer), a "
                "tokenizers.Tokenizer, or use Vocabulary.from_sentencepiece / from_tiktoken")
        spec = json.loads(backend.to_str())
        model = spec.get("model") or {}
        scheme, replacement, byte_fallback = _hf_scheme(spec)

        # id -> token string, from the model vocabulary and the added tokens
        raw_vocab = model.get("vocab")
        pieces = {}
        if isinstance(raw_vocab, dict):  # BPE, WordLevel
            for tok, i in raw_vocab.items():
                pieces[int(i)] = tok
        elif isinstance(raw_vocab, list):  # Unigram: [[piece, score], ...]
            for i, entry in enumerate(raw_vocab):
                pieces[i] = entry[0]
        else:
            raise ConfigurationError(
                f"tokenizer model {model.get('type')!r} has no readable vocabulary")
        special = set()
        added_text = {}
        for a in spec.get("added_tokens") or ():
            i = int(a["id"])
            if a.get("special", False):
                special.add(i)
            else:
                added_text[i] = a["content"]
        special.update(int(i) for i in (getattr(tokenizer, "all_special_ids", None) or ()))
        unk = model.get("unk_token")
        if isinstance(raw_vocab, dict) and isinstance(unk, str) and unk in raw_vocab:
            special.add(int(raw_vocab[unk]))
        if model.get("unk_id") is not None:  # Unigram
            special.add(int(model["unk_id"]))

        ids = set(pieces) | set(added_text) | special
        n_tokens = max(ids) + 1 if ids else 0
        try:
            n_tokens = max(n_tokens, len(tokenizer))
        except TypeError:
            pass
        token_bytes = [None] * n_tokens
        if scheme == "bytelevel":
            u2b = unicode_to_bytes()
            bad = []
            for i, tok in pieces.items():
                try:
                    token_bytes[i] = bytes([u2b[c] for c in tok])
                except KeyError:
                    bad.append((i, tok))
            bad = [(i, t) for i, t in bad if i not in special]
            if bad:
                raise ConfigurationError(
                    f"{len(bad)} byte-level BPE tokens use characters outside the GPT-2 byte map, "
                    f"e.g. {bad[:5]}; this tokenizer is not plain byte-level BPE")
            for i, text in added_text.items():
                # the decoder maps an added token through the byte map only
                # when every character is in it, else passes it through as text
                try:
                    token_bytes[i] = bytes([u2b[c] for c in text])
                except KeyError:
                    token_bytes[i] = text.encode("utf-8")
        else:
            for i, tok in itertools.chain(pieces.items(), added_text.items()):
                m = _BYTE_PIECE.match(tok) if byte_fallback else None
                if m is not None:
                    token_bytes[i] = bytes([int(m.group(1), 16)])
                else:
                    token_bytes[i] = tok.replace(replacement, " ").encode("utf-8")
        for i in special:
            if i < n_tokens:
                token_bytes[i] = None

        if eos_token_ids is None:
            eos = getattr(tokenizer, "eos_token_id", None)
            eos_token_ids = () if eos is None else (eos,)
        return cls(token_bytes, eos_token_ids, vocab_size)

    @classmethod
    def _from_hf_sentencepiece_backend(cls, tokenizer, vocab_size, eos_token_ids):
        # A transformers tokenizer that wraps a sentencepiece processor
        # (transformers 5's SentencePiece backend, slow tokenizers of v4).
        vocab = cls.from_sentencepiece(tokenizer.sp_model)
        try:
            n_tokens = len(tokenizer)
        except TypeError:
            n_tokens = vocab.n_tokens
        if n_tokens != vocab.n_tokens:
            raise ConfigurationError(
                f"{type(tokenizer).__name__} has {n_tokens} ids but its sentencepiece model has "
                f"{vocab.n_tokens}: added tokens on top of a sentencepiece model are not "
                "supported; use a fast tokenizer (tokenizer.json)")
        tb = list(vocab.token_bytes)
        for i in getattr(tokenizer, "all_special_ids", None) or ():
            if 0 <= i < len(tb):
                tb[i] = None
        if eos_token_ids is None:
            eos = getattr(tokenizer, "eos_token_id", None)
            eos_token_ids = () if eos is None else (eos,)
        return cls(tb, eos_token_ids, vocab_size)

    # ----------------------------------------------------------------- tiktoken

    @classmethod
    def from_tiktoken(cls, encoding: Any, eos_token_ids: Iterable[int] | None = None,
                      vocab_size: int | None = None, special_ids: Iterable[int] = ()) -> Vocabulary:
        """Read a ``tiktoken.Encoding``.

        Rank ``r`` of the mergeable ranks is token id ``r``; the encoding's
        special tokens (and any id in ``special_ids``) are ``None``; ids below
        ``encoding.n_vocab`` that are neither are holes, also ``None``.
        ``eos_token_ids`` defaults to ``encoding.eot_token`` (``<|endoftext|>``)
        when the encoding has one, else to none.
        """
        ranks = getattr(encoding, "_mergeable_ranks", None)
        if ranks is None:
            raise ConfigurationError(
                f"{type(encoding).__name__} is not a tiktoken.Encoding (no _mergeable_ranks)")
        specials = dict(getattr(encoding, "_special_tokens", {}) or {})
        n_tokens = max([encoding.n_vocab] + [r + 1 for r in ranks.values()]
                       + [i + 1 for i in specials.values()])
        token_bytes = [None] * n_tokens
        for tok, r in ranks.items():
            if token_bytes[r] is not None:
                raise ConfigurationError(f"tiktoken rank {r} is used by two different byte strings")
            token_bytes[r] = bytes(tok)
        for i in list(specials.values()) + list(special_ids):
            token_bytes[int(i)] = None
        if eos_token_ids is None:
            eos_token_ids = (specials["<|endoftext|>"],) if "<|endoftext|>" in specials else ()
        return cls(token_bytes, eos_token_ids, vocab_size)

    @classmethod
    def from_tekken(cls, path: str | os.PathLike | None = None, vocab_size: int | None = None) -> Vocabulary:
        """Read Mistral's tekken tokenizer JSON (default: ``tekken_240911.json``
        shipped in the ``mistral_common`` package, found without importing it).

        Layout: ids ``0 .. n_special-1`` are special tokens (``None``); the
        ``vocab`` list holds the tiktoken ranks with base64 ``token_bytes``, and
        rank ``r`` is id ``r + n_special``; only the first
        ``default_vocab_size - n_special`` ranks are used (the file holds
        more).  EOS is the ``</s>`` special token (id 2 in files without a
        ``special_tokens`` list).  ``vocab_size`` defaults to the file's
        ``default_vocab_size`` (131,072 for tekken_240911).
        """
        if path is None:
            path = _mistral_common_data("tekken_240911.json")
        try:
            with open(path, "r", encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            raise ConfigurationError(f"cannot read tekken file {path}: {e}") from None
        try:
            config = data["config"]
            n_special = int(config["default_num_special_tokens"])
            total = int(config["default_vocab_size"])
            entries = data["vocab"][: total - n_special]
        except (KeyError, TypeError) as e:
            raise ConfigurationError(
                f"{path} is not a tekken tokenizer file (missing {e})") from None
        if len(entries) != total - n_special:
            raise ConfigurationError(
                f"{path}: default_vocab_size={total} needs {total - n_special} ranks, "
                f"the file has {len(entries)}")
        token_bytes = [None] * total
        for r, entry in enumerate(entries):
            if entry["rank"] != r:
                raise ConfigurationError(f"{path}: vocab entry {r} has rank {entry['rank']}")
            token_bytes[n_special + r] = base64.b64decode(entry["token_bytes"])
        specials = data.get("special_tokens")
        if specials is None:
            eos = 2  # mistral_common's default special tokens: <unk>, <s>, </s>, [INST], ...
        else:
            eos = [t["rank"] for t in specials if t["token_str"] == "</s>"]
            if len(eos) != 1:
                raise ConfigurationError(f"{path}: no unique </s> special token")
            eos = eos[0]
        return cls(token_bytes, (eos,), total if vocab_size is None else vocab_size)

    # ------------------------------------------------------------ sentencepiece

    @classmethod
    def from_sentencepiece(cls, processor_or_path: Any, vocab_size: int | None = None,
                           eos_token_ids: Iterable[int] | None = None) -> Vocabulary:
        """Read a ``sentencepiece`` model (a ``SentencePieceProcessor`` or a path).

        Pieces: ``"▁"`` -> space; byte pieces ``<0xNN>`` -> that single byte;
        control, unknown and unused pieces -> ``None``.  Everything else is
        text (user-defined pieces included).  ``eos_token_ids`` defaults to
        ``eos_id()`` (none when the model has no EOS).
        """
        sp = processor_or_path
        if isinstance(sp, (str, bytes, os.PathLike)):
            try:
                import sentencepiece
            except ImportError:
                raise ConfigurationError(
                    "reading a sentencepiece model needs the `sentencepiece` package") from None
            path = os.fspath(sp)
            if not os.path.exists(path):
                raise ConfigurationError(f"sentencepiece model {path!r} does not exist")
            sp = sentencepiece.SentencePieceProcessor(model_file=path)
        if not hasattr(sp, "id_to_piece"):
            raise ConfigurationError(
                f"{type(sp).__name__} is not a sentencepiece.SentencePieceProcessor")
        n = sp.get_piece_size()
        token_bytes = [None] * n
        for i in range(n):
            if sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i):
                continue
            piece = sp.id_to_piece(i)
            if sp.is_byte(i):
                m = _BYTE_PIECE.match(piece)
                if m is None:
                    raise ConfigurationError(f"byte piece {i} is {piece!r}, expected <0xNN>")
                token_bytes[i] = bytes([int(m.group(1), 16)])
            else:
                token_bytes[i] = piece.replace("\u2581", " ").encode("utf-8")
        if eos_token_ids is None:
            eos = sp.eos_id()
            eos_token_ids = () if eos < 0 else (eos,)
        return cls(token_bytes, eos_token_ids, vocab_size)


def _mistral_common_data(name):
    """Path of a data file of the installed ``mistral_common`` package (not imported)."""
    spec = importlib.util.find_spec("mistral_common")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(
            f"{name} ships with the mistral-common package, which is not installed "
            "(pip install --no-deps mistral-common), or pass the file's path")
    for d in spec.submodule_search_locations:
        p = os.path.join(d, "data", name)
        if os.path.exists(p):
            return p
    raise ConfigurationError(f"mistral_common is installed but has no data/{name}")


def _flatten_decoder(dec):
    if dec is None:
        return []
    if dec.get("type") == "Sequence":
        out = []
        for d in dec.get("decoders") or ():
            out.extend(_flatten_decoder(d))
        return out
    return [dec]


def _hf_scheme(spec):
    """(scheme, space replacement, byte_fallback) from a tokenizer.json dict."""
    model = spec.get("model") or {}
    decoders = _flatten_decoder(spec.get("decoder"))
    types = [d.get("type") for d in decoders]
    if "ByteLevel" in types:
        others = [t for t in types if t not in ("ByteLevel",)]
        if others:
            raise ConfigurationError(
                f"unsupported tokenizer: ByteLevel decoder combined with {others}; cfgmask cannot "
                "tell which bytes each token produces")
        if model.get("type") not in ("BPE", "WordLevel", "Unigram"):
            raise ConfigurationError(
                f"unsupported byte-level tokenizer model {model.get('type')!r}")
        return "bytelevel", None, False
    replacement = None
    for d in decoders:
        if d.get("type") == "Metaspace":
            replacement = d.get("replacement", "\u2581")
        elif d.get("type") == "Replace":
            pat = d.get("pattern") or {}
            if pat.get("String") == "\u2581" and d.get("content") == " ":
                replacement = "\u2581"
    allowed = {"Metaspace", "Replace", "ByteFallback", "Fuse", "Strip"}
    if replacement is not None and set(types) <= allowed:
        # <0xNN> pieces are bytes exactly when the decoder turns them into bytes
        byte_fallback = "ByteFallback" in types
        if model.get("byte_fallback") and not byte_fallback:
            raise ConfigurationError(
                "inconsistent tokenizer: the model has byte_fallback (it emits <0xNN> pieces for "
                "unknown bytes) but the decoder has no ByteFallback step, so decoding prints those "
                "pieces as the literal text '<0xNN>'; fix the tokenizer's decoder")
        return "sentencepiece", replacement, byte_fallback
    raise ConfigurationError(
        "unsupported tokenizer scheme: decoder "
        f"{types or None} with model {model.get('type')!r}; cfgmask reads byte-level BPE "
        "(ByteLevel decoder) and SentencePiece-style tokenizers (Metaspace decoder, or Replace "
        "'▁'->' ' with optional ByteFallback/Fuse/Strip). Build the Vocabulary from token "
        "bytes yourself: Vocabulary(token_bytes, eos_token_ids)")
