"""Glue: Grammar + Vocabulary -> CompiledGrammar -> Matcher.

:func:`compile` runs every compile-time step (terminal automata, byte
classes, grammar tables, token trie) and wraps the Cython runtime.  A
:class:`CompiledGrammar` is immutable from the outside and can be shared by
many matchers and threads: its only mutable parts are lazily filled caches
(union-automaton transitions, per-lexer-state token masks), which the runtime
only touches while holding the GIL.

A :class:`Matcher` is one decoding in progress.  Its methods are the public
API of DESIGN.md §3.
"""

import threading
import time

import numpy as np

from ._fast._earley import CGrammar, Rows
from ._fast._lexer import LazyDFA
from ._fast._matcher import MatcherCore, Runtime
from .errors import ConfigurationError, DeadEnd, TokenRejected
from .grammar import Grammar
from .lexer import LexerSpec, UnionBuilder
from .vocab import Vocabulary


class Limits:
    """Work limits per step; hitting one raises :class:`~cfgmask.BudgetExceeded`.

    ``max_items_per_row``: Earley items in one row (a JSON row holds ~10-40;
    deep right recursion grows one item per nesting level per row).
    ``max_lexer_states``: states of the lazy union automaton.
    ``max_terminal_states``: DFA states of one terminal (``a{1,1000}`` guard).
    """

    def __init__(self, max_items_per_row=100_000, max_lexer_states=200_000,
                 max_terminal_states=20_000):
        self.max_items_per_row = int(max_items_per_row)
        self.max_lexer_states = int(max_lexer_states)
        self.max_terminal_states = int(max_terminal_states)


def compile(grammar, vocab, *, limits=None, progress=None):
    """Compile ``grammar`` against ``vocab`` into a shareable :class:`CompiledGrammar`.

    ``grammar`` is a :class:`Grammar` (or Lark grammar text), ``vocab`` a
    :class:`Vocabulary`.  ``progress``, if given, is called with short
    status strings during the slow steps.
    """
    if isinstance(grammar, str):
        grammar = Grammar.from_lark(grammar)
    if not isinstance(grammar, Grammar):
        raise ConfigurationError(f"compile() needs a cfgmask.Grammar, got {type(grammar).__name__}")
    if not isinstance(vocab, Vocabulary):
        raise ConfigurationError(f"compile() needs a cfgmask.Vocabulary, got {type(vocab).__name__}")
    return CompiledGrammar(grammar, vocab, limits or Limits(), progress)


class CompiledGrammar:
    """A grammar compiled against one vocabulary; create matchers with :meth:`matcher`."""

    def __init__(self, grammar, vocab, limits, progress=None):
        t0 = time.perf_counter()
        self.grammar = grammar
        self.vocab = vocab
        self.limits = limits
        self.lexer_spec = LexerSpec(grammar, max_states=limits.max_terminal_states, progress=progress)
        t1 = time.perf_counter()
        self._builder = UnionBuilder(self.lexer_spec, max_states=limits.max_lexer_states)
        self._dfa = LazyDFA(self._builder, self.lexer_spec.class_of_byte, self.lexer_spec.n_classes,
                            self.lexer_spec.n_words, self.lexer_spec.ignore_mask)
        self._cgrammar = CGrammar(grammar, limits.max_items_per_row)
        if progress is not None:
            progress("token trie")
        # built (or loaded from the disk cache) once per Vocabulary and shared
        self.prepared = vocab.prepared()
        self.trie = self.prepared.trie
        t2 = time.perf_counter()
        p = self.prepared
        self._runtime = Runtime(self._dfa, self._cgrammar, self.trie, p.token_bytes_flat,
                                p.token_offsets, p.token_special, vocab.vocab_size,
                                vocab.eos_token_ids, grammar.word_boundary)
        self._lock = threading.Lock()
        self.timings = {"automata_s": t1 - t0, "trie_s": t2 - t1, "total_s": time.perf_counter() - t0}

    @property
    def vocab_size(self):
        return self.vocab.vocab_size

    @property
    def bitmask_words(self):
        """Number of int32 words per bitmask row: ``ceil(vocab_size / 32)``."""
        return (self.vocab.vocab_size + 31) // 32

    def matcher(self):
        """A fresh :class:`Matcher` at the start of a document."""
        return Matcher(self)

    def allocate_bitmask(self, batch=1):
        """A zeroed ``int32 [batch, ceil(V/32)]`` array in the layout :meth:`Matcher.fill_bitmask` writes."""
        return np.zeros((batch, self.bitmask_words), dtype=np.int32)

    def fill_bitmasks(self, matchers, bitmask):
        """Fill row ``i`` of ``bitmask`` for ``matchers[i]`` (``None`` rows are left alone).

        Validates the array once and takes the lock once for the whole batch;
        raises :class:`DeadEnd` naming the first row with no allowed token.
        """
        arr = _as_int32_rows(bitmask, self.bitmask_words)
        if arr.ndim != 2 or arr.shape[0] < len(matchers):
            raise ConfigurationError(f"bitmask needs shape [>= {len(matchers)}, W], got {arr.shape}")
        dead = None
        with self._lock:
            for i, m in enumerate(matchers):
                if m is None:
                    continue
                if m.compiled is not self:
                    raise ConfigurationError(f"matcher {i} belongs to another compiled grammar")
                if not m._core.fill_row(arr, i) and dead is None:
                    dead = i
        if dead is not None:
            core = matchers[dead]._core
            raise DeadEnd(f"row {dead}: no token is allowed after {core.prefix()[-80:]!r}",
                          state=core.describe(), prefix=core.prefix())

    def cache_stats(self):
        n_cached, n_exits, n_states = self._runtime.cache_stats()
        return {"cached_lexer_states": n_cached, "deep_exits": n_exits, "lexer_states": n_states}

    def __repr__(self):
        return f"<CompiledGrammar {self.grammar!r} vocab_size={self.vocab.vocab_size}>"


class Matcher:
    """Tracks one output against the grammar, token by token.

    All state lives in the Cython core; this wrapper validates arguments and
    turns status codes into exceptions.  ``fill_bitmask`` raises
    :class:`DeadEnd` when no token (EOS included) is allowed.
    """

    def __init__(self, compiled, _core=None):
        self.compiled = compiled
        if _core is None:
            _core = MatcherCore(compiled._runtime, Rows(compiled._cgrammar, compiled._dfa))
            _core.reset()
        self._core = _core
        self._words = compiled.bitmask_words
        self._checked = self._checked_arr = None  # last validated bitmask (skip re-checking it)

    # ---- masks ----------------------------------------------------------
    def fill_bitmask(self, bitmask, row=0):
        """Write the allowed-token mask into ``bitmask[row]`` (int32, bit ``t & 31`` of word ``t >> 5``).

        ``bitmask`` is a C-contiguous numpy int32 array ``[B, W]`` or ``[W]``
        (or a CPU torch tensor sharing memory) with ``W >= ceil(vocab_size/32)``;
        every word of the row is written (words past ``ceil(vocab_size/32)`` are zeroed).  Raises :class:`DeadEnd`
        when no token (EOS included) is allowed.
        """
        if bitmask is not self._checked:
            arr = _as_int32_rows(bitmask, self._words)
            self._checked, self._checked_arr = bitmask, arr
        arr = self._checked_arr
        if arr.ndim == 1:
            if row != 0:
                raise ConfigurationError("a 1-D bitmask has only row 0")
        elif not 0 <= row < arr.shape[0]:
            raise ConfigurationError(f"row {row} out of range for a bitmask of {arr.shape[0]} rows")
        with self.compiled._lock:
            any_allowed = self._core.fill_row(arr, row)
        if not any_allowed:
            raise DeadEnd(
                f"no token is allowed after {self._core.prefix()[-80:]!r} "
                f"(state {self._core.describe()}): the vocabulary cannot continue this prefix",
                state=self._core.describe(), prefix=self._core.prefix())

    def allowed_tokens(self):
        """The allowed token ids as a sorted numpy int32 array."""
        buf = np.zeros(self._words, dtype=np.int32)
        self.fill_bitmask(buf)
        bits = np.unpackbits(buf.view(np.uint8), bitorder="little")
        ids = np.flatnonzero(bits[: self.compiled.vocab.vocab_size]).astype(np.int32)
        return ids

    # ---- state changes ---------------------------------------------------
    def consume(self, token_id):
        """Advance by one token; raises :class:`TokenRejected` (state unchanged) if it is not allowed."""
        tok = int(token_id)
        with self.compiled._lock:
            ok = self._core.try_consume(tok)
        if not ok:
            raise TokenRejected(
                f"token {tok} ({self._token_repr(tok)}) is not allowed after "
                f"{self._core.prefix()[-80:]!r}", token_id=tok, position=self._core.n_consumed())

    def consume_many(self, token_ids):
        """Consume several tokens; on a rejection the tokens before it stay consumed and it raises."""
        for t in token_ids:
            self.consume(t)

    def try_consume(self, token_id):
        """Like :meth:`consume` but returns False instead of raising."""
        with self.compiled._lock:
            return self._core.try_consume(int(token_id))

    def consume_bytes(self, data):
        """Push raw bytes (not tokens); returns how many were accepted. For tests and tools."""
        with self.compiled._lock:
            return self._core.consume_bytes(np.frombuffer(bytes(data), dtype=np.uint8))

    def rollback(self, n_tokens):
        """Undo the last ``n_tokens`` consumed tokens (EOS included)."""
        self._core.rollback(int(n_tokens))

    def reset(self):
        """Back to the start of a document."""
        with self.compiled._lock:
            self._core.reset()

    def copy(self):
        """An independent matcher in the same state."""
        return Matcher(self.compiled, self._core.copy())

    # ---- queries ---------------------------------------------------------
    def is_accepting(self):
        """True when EOS is allowed now (the output so far is a complete document)."""
        with self.compiled._lock:
            return self._core.accepting()

    def is_finished(self):
        """True once EOS has been consumed."""
        return self._core.is_finished()

    def next_bytes(self):
        """The bytes that may come next (a byte-level mask; EOS not included)."""
        with self.compiled._lock:
            return self._core.next_bytes()

    def forced_bytes(self, limit=256):
        """The bytes every valid continuation starts with (up to ``limit``).

        Stops where more than one byte is possible or EOS is allowed.  A
        generation loop can tokenize and append these without calling the
        model (constrained decoding that skips forward).
        """
        probe = self._core.copy()
        out = bytearray()
        with self.compiled._lock:
            while len(out) < limit and not probe.accepting():
                nxt = probe.next_bytes()
                if len(nxt) != 1:
                    break
                probe.consume_bytes(np.frombuffer(nxt, dtype=np.uint8))
                out += nxt
        return bytes(out)

    @property
    def prefix(self):
        """The output bytes consumed so far."""
        return self._core.prefix()

    @property
    def n_consumed(self):
        return self._core.n_consumed()

    def _token_repr(self, tok):
        tb = self.compiled.vocab.token_bytes
        if 0 <= tok < len(tb):
            return repr(tb[tok]) if tb[tok] is not None else "special"
        return "out of vocabulary"

    # test hook: compare the cached mask path against a plain full-trie walk
    def _set_use_cache(self, flag):
        self._core.use_cache = bool(flag)


def _as_int32_rows(bitmask, words):
    if not isinstance(bitmask, np.ndarray):
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None and isinstance(bitmask, torch.Tensor):
            if bitmask.device.type != "cpu":
                raise ConfigurationError("fill_bitmask needs a CPU tensor (fill on CPU, then copy to the device)")
            bitmask = bitmask.numpy()
        else:
            raise ConfigurationError(f"bitmask must be a numpy int32 array, got {type(bitmask).__name__}")
    if bitmask.dtype != np.int32:
        raise ConfigurationError(f"bitmask must have dtype int32, got {bitmask.dtype}")
    if bitmask.ndim not in (1, 2):
        raise ConfigurationError(f"bitmask must be 1-D or 2-D, got shape {bitmask.shape}")
    if bitmask.shape[-1] < words:
        raise ConfigurationError(f"bitmask rows need at least {words} int32 words, got {bitmask.shape[-1]}")
    if not bitmask.flags.c_contiguous:
        raise ConfigurationError("bitmask must be C-contiguous")
    if not bitmask.flags.writeable:
        raise ConfigurationError("bitmask must be writeable")
    return bitmask
