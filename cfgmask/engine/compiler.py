"""Glue: Grammar + Vocabulary -> CompiledGrammar -> Matcher.

:func:`compile` runs every compile-time step (terminal automata, byte
classes, grammar tables, token trie) and wraps the Cython runtime.  A
:class:`CompiledGrammar` is immutable from the outside and can be shared by
many matchers and threads: its only mutable parts are lazily filled caches
(union-automaton transitions, per-lexer-state entries, continuations), which
the runtime fills under one lock and reads without one (``_fast/_runtime.pyx``).
Fills run without the GIL, so threads working on different matchers run in
parallel, and :meth:`CompiledGrammar.fill_bitmasks` fills a batch on several
threads.  Each matcher has its own lock: its methods may be called from any
thread.

A :class:`Matcher` is one decoding in progress.  Its methods are the public
API of docs/architecture.md ("Public API").
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable, Sequence

import numpy as np

from cfgmask._fast._earley import CGrammar, Rows
from cfgmask._fast._lexer import LazyDFA
from cfgmask._fast._matcher import MatcherCore, fill_rows as _fill_rows
from cfgmask._fast._runtime import Runtime
from cfgmask import gc_pause
from cfgmask.errors import BudgetExceeded, ConfigurationError, DeadEnd, TokenRejected
from cfgmask.grammar import Grammar
from cfgmask.engine import slices as _slices
from cfgmask.engine.lexer import LexerSpec
from cfgmask.engine.vocab import Vocabulary


class Limits:
    """Work limits per step; hitting one raises :class:`~cfgmask.BudgetExceeded`.

    ``max_items_per_row``: Earley items in one row (a JSON row holds ~10-40;
    right recursion stays bounded through Leo's optimisation; an ambiguous rule
    such as ``s: s s`` grows one item per origin per row).
    ``max_lexer_states``: states of the lazy union automaton.
    ``max_terminal_states``: DFA states of one terminal (``a{1,1000}`` guard).
    ``max_cache_bytes``: memory of a compiled grammar's mask caches; past it the
    least recently used entries are evicted before the next fill, and a single
    fill that needs more than twice of it raises.
    ``max_matcher_bytes``: everything one matcher allocates, counted at
    capacity: its Earley rows and their per-row arrays, the dedup, stamp and
    Leo tables, the byte stack (the rollback history) and the token list.
    Not counted: what the compiled grammar shares between matchers (mask
    caches: ``max_cache_bytes``; lexer states: ``max_lexer_states``; tables,
    trie and slices), and a fill's few bytes of walk headroom above the stack
    (counted, never refused).  See docs/reliability.md.
    """

    def __init__(self, max_items_per_row: int = 100_000, max_lexer_states: int = 200_000,
                 max_terminal_states: int = 20_000, max_cache_bytes: int = 256 << 20,
                 max_matcher_bytes: int = 256 << 20) -> None:
        self.max_items_per_row = _positive_limit("max_items_per_row", max_items_per_row)
        self.max_lexer_states = _positive_limit("max_lexer_states", max_lexer_states)
        self.max_terminal_states = _positive_limit("max_terminal_states", max_terminal_states)
        self.max_cache_bytes = _positive_limit("max_cache_bytes", max_cache_bytes, 2**62)
        self.max_matcher_bytes = _positive_limit("max_matcher_bytes", max_matcher_bytes, 2**62)

    def __repr__(self):
        return (f"Limits(max_items_per_row={self.max_items_per_row}, "
                f"max_lexer_states={self.max_lexer_states}, "
                f"max_terminal_states={self.max_terminal_states}, "
                f"max_cache_bytes={self.max_cache_bytes}, "
                f"max_matcher_bytes={self.max_matcher_bytes})")


# limits are stored in C int32 fields by the runtime
_LIMIT_MAX = 2**31 - 1


def _positive_limit(name, value, upper=_LIMIT_MAX):
    if not _is_integer(value):
        raise ConfigurationError(f"Limits: {name} must be an int, got {type(value).__name__} ({value!r:.40})")
    value = int(value)
    if not 1 <= value <= upper:
        raise ConfigurationError(f"Limits: {name} must be between 1 and {upper}, got {value}")
    return value


def _is_integer(x):
    """An ``int`` or numpy integer, not a bool."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _token_id(x, what="token id"):
    """``x`` as a Python int, if it is an integer: ``int``, a numpy integer, or a
    0-d integer numpy array / torch tensor.  Bools, floats and strings are refused
    (``int()`` would silently turn ``91.7``, ``"91"`` and ``True`` into ids)."""
    if type(x) is int:
        return x
    if _is_integer(x):
        return int(x)
    ndim = getattr(x, "ndim", None)
    if ndim == 0:
        if isinstance(x, np.ndarray):
            if x.dtype.kind in "iu":
                return int(x)
        else:
            torch = sys.modules.get("torch")
            if (torch is not None and isinstance(x, torch.Tensor) and not x.dtype.is_floating_point
                    and not x.dtype.is_complex and x.dtype != torch.bool):
                return int(x.item())
    raise ConfigurationError(
        f"{what} must be an integer (int, numpy integer or 0-d integer tensor), "
        f"got {type(x).__name__} ({x!r:.40})")


def compile(grammar: Grammar | str, vocab: Vocabulary, *, limits: Limits | None = None,
            progress: Callable[[str], Any] | None = None,
            slices: bool | str | dict = True) -> CompiledGrammar:
    """Compile ``grammar`` against ``vocab`` into a shareable :class:`CompiledGrammar`.

    ``grammar`` is a :class:`Grammar` (or Lark grammar text), ``vocab`` a
    :class:`Vocabulary`.  ``progress``, if given, is called with short
    status strings during the slow steps.  ``slices`` (default on) derives
    lexeme slices from the grammar's terminals (``cfgmask/engine/slices.py``); it
    never changes a mask, only how fast masks are computed.  ``False``
    turns them off; a dict of :func:`cfgmask.engine.slices.choose` options
    (``min_tokens``, ``min_fraction``, ``max_slices``) tunes them, which tests
    use to force slices onto tiny vocabularies.

    When: by default (``"auto"``) slices are derived before ``compile``
    returns, except that a grammar whose candidates hold the standard slices
    (the body of a JSON string, prepared with the vocabulary) next to others,
    and whose own choice is not known yet, starts on the standard tables and
    chooses its own like lazy ones below, once its walk is hot: json.lark and
    most JSON schemas (docs/compile.md).
    ``slices="eager"`` always derives them all before returning.
    ``slices="lazy"`` (issue 23) takes them off the critical
    path: the first masks use the plain forest walk, and once the runtime has
    walked ``SLICES_HOT_NODES`` forest nodes building its caches (the work
    slices save) a fill starts a background thread that derives them; they are
    published to every matcher at its next fill
    (:meth:`CompiledGrammar.wait_slices`).  Lazy is not the default because
    the first documents pay for it: measured in one run against llguidance,
    cold p99 masks went from 0.88-1.17x (eager) to 1.29-1.75x (lazy) on json
    and up to 1.23x on sql (docs/compile.md).  A dict's ``"hot_nodes"``
    changes that threshold (0: the first fill); a dict takes
    ``"when": "eager" (its default) | "lazy" | "manual"`` (manual: only
    :meth:`~CompiledGrammar.wait_slices` builds them, which tests use to
    publish them at a chosen point).  The environment variable
    ``CFGMASK_SLICES`` (``auto``, ``eager``, ``lazy``, ``0``; anything else
    raises :class:`ConfigurationError`) changes what ``True`` means.
    """
    if isinstance(grammar, str):
        grammar = Grammar.from_lark(grammar)
    if not isinstance(grammar, Grammar):
        raise ConfigurationError(f"compile() needs a cfgmask.Grammar, got {type(grammar).__name__}")
    if not isinstance(vocab, Vocabulary):
        raise ConfigurationError(f"compile() needs a cfgmask.Vocabulary, got {type(vocab).__name__}")
    if limits is None:
        limits = Limits()
    elif not isinstance(limits, Limits):
        raise ConfigurationError(f"limits must be a cfgmask.engine.compiler.Limits, got {type(limits).__name__}")
    if progress is not None and not callable(progress):
        raise ConfigurationError(f"progress must be callable, got {type(progress).__name__}")
    if not (isinstance(slices, (bool, dict)) or (isinstance(slices, str) and slices in _SLICE_WHEN)):
        raise ConfigurationError(f"slices must be True, False, 'auto', 'eager', 'lazy' or a dict of options, "
                                 f"got {slices!r:.40}")
    if isinstance(slices, dict) and slices.get("when", "eager") not in _SLICE_WHEN:
        raise ConfigurationError(f"slices['when'] must be one of {sorted(_SLICE_WHEN)}, got {slices['when']!r:.40}")
    try:
        return CompiledGrammar(grammar, vocab, limits, progress, use_slices=slices)
    except MemoryError as e:
        # a huge vocab_size or automaton: a cfgmask error, not a bare MemoryError
        raise BudgetExceeded(
            f"out of memory while compiling {grammar!r} for vocab_size={vocab.vocab_size} "
            f"({e or 'allocation failed'})") from e


_SLICE_WHEN = ("eager", "lazy", "manual", "auto")
# Lazy slices are derived once the runtime has walked this many forest nodes
# building its caches: the work slices save.  json with SmolLM2 walks about
# 110,000 over 20 documents (and its masks are as fast without slices), sql
# passes it after about 10 fills, javascript after 5 (docs/compile.md).
SLICES_HOT_NODES = 500_000


def _slice_mode(use_slices):
    """``(when, choose options)`` of compile's ``slices`` argument; ``when`` is
    None for no slices."""
    if use_slices is False:
        return None, {}
    if isinstance(use_slices, str):
        return use_slices, {}
    if isinstance(use_slices, dict):
        options = dict(use_slices)
        options.pop("hot_nodes", None)
        # explicit options (tests forcing slices onto tiny vocabularies) mean eager
        # unless they say otherwise: a tiny vocabulary's walk is never hot
        return options.pop("when", "eager"), options
    env = os.environ.get("CFGMASK_SLICES", "").strip().lower()
    if env in ("0", "off", "false", "no"):
        return None, {}
    if env in ("", "1", "on", "true", "yes", "auto"):
        return "auto", {}
    if env in ("lazy", "eager"):
        return env, {}
    raise ConfigurationError(f"CFGMASK_SLICES must be auto, eager, lazy or 0, got {env!r:.40}")


class CompiledGrammar:
    """A grammar compiled against one vocabulary; create matchers with :meth:`matcher`.

    Slices off the critical path: with lazy slices the runtime is first built
    without them (the plain forest walk), and :meth:`_build_slices` later
    builds a second :class:`Runtime` over the slice tables and publishes it
    with one reference store into ``_runtime``.  Readers take no lock: a
    matcher reads ``_runtime`` once per fill and, when it is not the runtime
    its core uses, rebinds the core (``MatcherCore.rebind``, under the core's
    own lock).  Both runtimes share the lexer, the parser and the vocabulary,
    and a mask never depends on which runtime computed it (tests/test_slices.py,
    tests/test_slices_lazy.py), so matchers, their copies and batch rows may
    use either at any time.  ``_runtime`` changes once, from the runtime
    without slices (or over the vocabulary's standard slices, ``"auto"``) to
    the one with the grammar's own; if the build fails, the first runtime
    stays (always correct) and the error is kept in ``slice_error``."""

    def __init__(self, grammar, vocab, limits, progress=None, use_slices=True):
        # automata, tables and slices: many objects alive to the end, no cyclic garbage
        with gc_pause.paused():
            self._build(grammar, vocab, limits, progress, use_slices)

    def _build(self, grammar, vocab, limits, progress, use_slices):
        t0 = time.perf_counter()
        self.grammar = grammar
        self.vocab = vocab
        self.limits = limits
        self.lexer_spec = LexerSpec(grammar, max_states=limits.max_terminal_states, progress=progress)
        t1 = time.perf_counter()
        if progress is not None:
            progress("token trie")
        # built (or loaded from the disk cache) once per Vocabulary and shared
        self.prepared = vocab.prepared()
        self.trie = self.prepared.trie
        t_vocab = time.perf_counter()
        # a character counter (a long maxLength) only keeps what the longest token reaches
        self._dfa = LazyDFA(self.lexer_spec, max_states=limits.max_lexer_states,
                            max_token_bytes=self.trie.max_depth)
        self._cgrammar = CGrammar(grammar, limits.max_items_per_row, limits.max_matcher_bytes)
        t_parser = time.perf_counter()
        self.prepared.first_byte_sets()   # the runtime copies them; read from the cache if there
        t2 = time.perf_counter()
        p = self.prepared
        when, self._slice_options = _slice_mode(use_slices)
        self._hot_nodes = int(use_slices.get("hot_nodes", SLICES_HOT_NODES)) if isinstance(use_slices, dict) \
            else SLICES_HOT_NODES
        self._slices = None
        self.slice_error = None           # why lazily built slices stayed off, if they did
        self._slice_lock = threading.Lock()
        self._slice_done = threading.Event()
        # 0: to build (lazily); 1: building; 2: published, failed or not wanted
        self._slice_state = 0 if when in ("lazy", "manual") else 2
        self._slice_pid = os.getpid()    # the process whose thread builds them (see wait_slices)
        # a fill starts the background build once the runtime has walked _hot_nodes
        # forest nodes (checked on every fill while pending: two attributes)
        self._slices_pending = when == "lazy"
        if when == "eager":
            self._slices = _slices.for_grammar(grammar, self.lexer_spec, p, **self._slice_options)
        elif when == "auto":
            # eager, except that a grammar whose candidates hold the standard slices (a
            # JSON string's body) next to others starts on the prepared standard tables
            # and chooses its own once its walk is hot (slices.for_grammar_standard_first)
            self._slices, own_pending = _slices.for_grammar_standard_first(
                grammar, self.lexer_spec, p, **self._slice_options)
            if own_pending:
                self._slice_state = 0
                self._slices_pending = True
        if self._slice_state == 2:
            self._slice_done.set()
        t_runtime = time.perf_counter()
        self._runtime = self._new_runtime(self._slices)
        t3 = time.perf_counter()
        # automata: grammar -> terminal automata; tables: lexer and parser tables;
        # trie: the vocabulary's prepared trie (shared); slices; runtime: the C set-up
        self.timings = {"automata_s": t1 - t0, "tables_s": t_parser - t_vocab, "trie_s": t2 - t1,
                        "vocab_s": (t_vocab - t1) + (t2 - t_parser), "slices_s": t_runtime - t2,
                        "runtime_s": t3 - t_runtime, "total_s": t3 - t0}

    def _new_runtime(self, tables):
        p = self.prepared
        return Runtime(self._dfa, self._cgrammar, self.trie, p.token_bytes_flat,
                       p.token_offsets, p.token_special, self.vocab.vocab_size,
                       self.vocab.eos_token_ids, self.grammar.word_boundary,
                       tables, self.limits.max_cache_bytes)

    @property
    def slices(self) -> _slices.SliceTables | None:
        """The :class:`cfgmask.engine.slices.SliceTables` in use, or None (slices off, or
        their build failed: :attr:`slice_error`).  With lazy slices this waits
        until they are published (building them now if nothing has started)."""
        if self._slice_state != 2:
            self.wait_slices()
        return self._slices

    def slices_ready(self) -> bool:
        """True once lazy slices are published (or will never be: off, failed)."""
        return self._slice_done.is_set()

    def wait_slices(self, timeout: float | None = None) -> bool:
        """Publish the lazy slices: build them in this thread if no build has
        started, else wait up to ``timeout`` seconds for the one running.
        Returns :meth:`slices_ready`."""
        if self._slice_state == 1 and self._slice_pid != os.getpid():
            # a child forked while the parent's thread was building: no thread
            # builds here, so start again
            with self._slice_lock:
                if self._slice_state == 1 and self._slice_pid != os.getpid():
                    self._slice_done = threading.Event()
                    self._slice_state = 0
        if self._slice_state == 0:
            self._build_slices()
        return self._slice_done.wait(timeout)

    def _start_slices(self):
        """A fill's hook once the plain walk proved costly (``SLICES_HOT_NODES``
        forest nodes walked): derive the lazy slices on a daemon thread."""
        self._slices_pending = False
        with self._slice_lock:
            if self._slice_state != 0:
                return
            self._slice_state = 1
            self._slice_pid = os.getpid()
        threading.Thread(target=self._build_slices, args=(True,), name="cfgmask-slices",
                         daemon=True).start()

    def _build_slices(self, claimed=False):
        if not claimed:
            with self._slice_lock:
                if self._slice_state != 0:
                    return
                self._slice_state = 1
                self._slice_pid = os.getpid()
        self._slices_pending = False
        t0 = time.perf_counter()
        try:
            tables = _slices.for_grammar(self.grammar, self.lexer_spec, self.prepared, **self._slice_options)
            if tables is self._slices:
                # "auto" started on the standard tables and the grammar's choice is
                # exactly them: the runtime in use has them, and its warm caches
                self.timings["slices_lazy_s"] = time.perf_counter() - t0
                return
            rt = self._new_runtime(tables)
            old = self._runtime
            rt.use_subtree_accept = old.use_subtree_accept
            self._slices = tables
            # publication: the runtime is complete and never changes its tables;
            # matchers pick it up at their next fill (Matcher.fill_bitmask, fill_bitmasks)
            self._runtime = rt
            self.timings["slices_lazy_s"] = time.perf_counter() - t0
        except Exception as e:          # fail closed: without slices every mask is still exact
            self.slice_error = e
        finally:
            self._slice_state = 2
            self._slice_done.set()

    @property
    def vocab_size(self) -> int:
        return self.vocab.vocab_size

    @property
    def bitmask_words(self) -> int:
        """Number of int32 words per bitmask row: ``ceil(vocab_size / 32)``."""
        return (self.vocab.vocab_size + 31) // 32

    def matcher(self) -> Matcher:
        """A fresh :class:`Matcher` at the start of a document."""
        return Matcher(self)

    def allocate_bitmask(self, batch: int = 1) -> np.ndarray:
        """A zeroed ``int32 [batch, ceil(V/32)]`` array in the layout :meth:`Matcher.fill_bitmask` writes."""
        batch = _token_id(batch, "batch")
        if batch < 1:
            raise ConfigurationError(f"batch must be at least 1, got {batch}")
        return np.zeros((batch, self.bitmask_words), dtype=np.int32)

    def fill_bitmasks(self, matchers: Sequence[Matcher | None], bitmask: Any, *,
                      n_threads: int | None = None) -> None:
        """Fill row ``i`` of ``bitmask`` for ``matchers[i]`` (``None`` rows are left alone).

        The rows are filled without the GIL on up to ``n_threads`` threads
        (default: one per row; never more than the CPUs this process may run
        on, ``os.sched_getaffinity``; 1 fills them in order).  The threads are
        a persistent pool that sleeps between batches instead of spinning, so
        a batch on a machine whose cores are busy costs about what one thread
        costs (docs/performance.md, "Batch fills").
        Raises :class:`DeadEnd` naming the first row with no allowed token, or
        the first row's error after every row has finished.
        """
        if not isinstance(matchers, (list, tuple)):
            raise ConfigurationError(f"fill_bitmasks needs a list of matchers, got {type(matchers).__name__}")
        for i, m in enumerate(matchers):
            if m is not None and not isinstance(m, Matcher):
                raise ConfigurationError(f"fill_bitmasks: entry {i} is a {type(m).__name__}, not a Matcher")
        arr = _as_int32_rows(bitmask, self.bitmask_words)
        if arr.ndim != 2 or arr.shape[0] < len(matchers):
            raise ConfigurationError(f"bitmask needs shape [>= {len(matchers)}, W], got {arr.shape}")
        rt = self._runtime
        for i, m in enumerate(matchers):
            if m is not None:
                if m.compiled is not self:
                    raise ConfigurationError(f"matcher {i} belongs to another compiled grammar")
                if m._rt is not rt:
                    m._core.rebind(rt)
                    m._rt = rt
        if n_threads is None:
            n_threads = 0
        n_threads = _token_id(n_threads, "n_threads")
        if n_threads < 0:
            raise ConfigurationError(f"n_threads must be >= 0, got {n_threads}")
        dead = _fill_rows([None if m is None else m._core for m in matchers], arr, n_threads)
        if self._slices_pending and rt.nodes_walked >= self._hot_nodes:
            self._start_slices()
        if dead >= 0:
            core = matchers[dead]._core
            raise DeadEnd(f"row {dead}: no token is allowed after {core.prefix()[-80:]!r}",
                          state=core.describe(), prefix=core.prefix())

    def cache_stats(self) -> dict:
        return self._runtime.cache_stats()

    def __repr__(self):
        return f"<CompiledGrammar {self.grammar!r} vocab_size={self.vocab.vocab_size}>"


class Matcher:
    """Tracks one output against the grammar, token by token.

    All parse state lives in the Cython core; this wrapper validates arguments
    and turns status codes into exceptions.  ``fill_bitmask`` raises
    :class:`DeadEnd` when no token (EOS included) is allowed.

    Token ids must be integers (``int``, numpy integers, 0-d integer arrays or
    tensors); anything else raises :class:`ConfigurationError`.  An id outside
    ``[0, vocab_size)`` is simply not allowed (:class:`TokenRejected`).

    After EOS the matcher is finished and its mask is the EOS ids only, so
    consuming an EOS id again is allowed: a no-op that keeps it finished.
    Every successful consume counts as one token for :attr:`n_consumed` and
    :meth:`rollback`, repeated EOS included (rolling back all of them and the
    first EOS makes the matcher unfinished again).
    """

    def __init__(self, compiled, _core=None, _eos_extra=0, _rt=None):
        self.compiled = compiled
        if _core is None:
            _rt = compiled._runtime
            _core = MatcherCore(_rt, Rows(compiled._cgrammar, compiled._dfa))
            _core.reset()
        self._core = _core
        self._rt = _rt            # the runtime the core uses (None: unknown, rebind at the next fill)
        self._words = compiled.bitmask_words
        self._vocab_size = compiled.vocab.vocab_size
        self._eos = frozenset(compiled.vocab.eos_token_ids)
        self._eos_extra = _eos_extra  # EOS ids consumed after the matcher finished

    # ---- masks ----------------------------------------------------------
    def fill_bitmask(self, bitmask: Any, row: int = 0) -> None:
        """Write the allowed-token mask into ``bitmask[row]`` (int32, bit ``t & 31`` of word ``t >> 5``).

        ``bitmask`` is a C-contiguous numpy int32 array ``[B, W]`` or ``[W]``
        (or a CPU torch tensor sharing memory) with ``W >= ceil(vocab_size/32)``;
        every word of the row is written (words past ``ceil(vocab_size/32)`` are zeroed).  Raises :class:`DeadEnd`
        when no token (EOS included) is allowed.
        """
        if type(row) is not int:
            row = _token_id(row, "row")
        arr = bitmask if type(bitmask) is np.ndarray else _as_int32_rows(bitmask, self._words)
        c = self.compiled
        rt = c._runtime           # read once: lazy slices are published by replacing it
        if rt is not self._rt:
            self._core.rebind(rt)
            self._rt = rt
        # the core checks dtype, shape, strides, writability and the row on every call
        any_allowed = self._core.fill_row(arr, row)
        if c._slices_pending and rt.nodes_walked >= c._hot_nodes:
            c._start_slices()
        if not any_allowed:
            raise DeadEnd(
                f"no token is allowed after {self._core.prefix()[-80:]!r} "
                f"(state {self._core.describe()}): the vocabulary cannot continue this prefix",
                state=self._core.describe(), prefix=self._core.prefix())

    def allowed_tokens(self) -> np.ndarray:
        """The allowed token ids as a sorted numpy int32 array."""
        buf = np.zeros(self._words, dtype=np.int32)
        self.fill_bitmask(buf)
        bits = np.unpackbits(buf.view(np.uint8), bitorder="little")
        ids = np.flatnonzero(bits[: self._vocab_size]).astype(np.int32)
        return ids

    # ---- state changes ---------------------------------------------------
    def consume(self, token_id: int) -> None:
        """Advance by one token; raises :class:`TokenRejected` (state unchanged) if it is not allowed."""
        tok = _token_id(token_id)
        if not self._try(tok):
            raise TokenRejected(
                f"token {tok} ({self.describe_token(tok)}) is not allowed after "
                f"{self._core.prefix()[-80:]!r}" + (" (the matcher is finished: only EOS is allowed)"
                                                     if self._core.is_finished() else ""),
                token_id=tok, position=self.n_consumed)

    def consume_many(self, token_ids: Any) -> None:
        """Consume several tokens; on a rejection the tokens before it stay consumed and it raises."""
        if isinstance(token_ids, (str, bytes, bytearray)):
            raise ConfigurationError(f"consume_many needs token ids, not {type(token_ids).__name__} "
                                     "(raw bytes go to consume_bytes)")
        if getattr(token_ids, "ndim", None) == 1 and _integer_dtype(token_ids):
            token_ids = token_ids.tolist()  # a 1-D integer array or tensor
        try:
            it = iter(token_ids)
        except TypeError:
            raise ConfigurationError(
                f"consume_many needs an iterable of token ids, got {type(token_ids).__name__}") from None
        for t in it:
            self.consume(t)

    def try_consume(self, token_id: int) -> bool:
        """Like :meth:`consume` but returns False instead of raising (a bad id type still raises)."""
        return self._try(_token_id(token_id))

    def _try(self, tok):
        if not 0 <= tok < self._vocab_size:
            return False  # also keeps ids >= 2**31 away from the C int argument
        if self._core.is_finished():
            if tok in self._eos:
                self._eos_extra += 1
                return True
            return False
        return self._core.try_consume(tok)

    def consume_bytes(self, data: bytes | bytearray | memoryview) -> int:
        """Push raw bytes (not tokens); returns how many were accepted. For tests and tools."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ConfigurationError(f"consume_bytes needs bytes, got {type(data).__name__}")
        return self._core.consume_bytes(np.frombuffer(bytes(data), dtype=np.uint8))

    def rollback(self, n_tokens: int) -> None:
        """Undo the last ``n_tokens`` consumed tokens (EOS included, see the class docstring)."""
        n = _token_id(n_tokens, "rollback count")
        total = self.n_consumed
        if not 0 <= n <= total:
            raise ConfigurationError(f"cannot roll back {n} tokens: {total} consumed")
        extra = min(n, self._eos_extra)
        self._eos_extra -= extra
        self._core.rollback(n - extra)

    def reset(self) -> None:
        """Back to the start of a document."""
        self._core.reset()
        self._eos_extra = 0

    def copy(self) -> Matcher:
        """An independent matcher in the same state."""
        return Matcher(self.compiled, self._core.copy(), self._eos_extra)

    # ---- queries ---------------------------------------------------------
    def is_accepting(self) -> bool:
        """True when EOS is allowed now (the output so far is a complete document)."""
        return self._core.accepting()

    def is_finished(self) -> bool:
        """True once EOS has been consumed."""
        return self._core.is_finished()

    def next_bytes(self) -> bytes:
        """The bytes that may come next (a byte-level mask; EOS not included)."""
        return self._core.next_bytes()

    def forced_bytes(self, limit: int = 256) -> bytes:
        """The bytes every valid continuation starts with (up to ``limit``).

        Stops where more than one byte is possible or EOS is allowed.  A
        generation loop can tokenize and append these without calling the
        model (constrained decoding that skips forward).
        """
        limit = _token_id(limit, "limit")
        probe = self._core.copy()
        out = bytearray()
        while len(out) < limit and not probe.accepting():
            nxt = probe.next_bytes()
            if len(nxt) != 1:
                break
            probe.consume_bytes(np.frombuffer(nxt, dtype=np.uint8))
            out += nxt
        return bytes(out)

    @property
    def prefix(self) -> bytes:
        """The output bytes consumed so far."""
        return self._core.prefix()

    @property
    def n_consumed(self) -> int:
        """Tokens consumed so far (each EOS included); what :meth:`rollback` can undo."""
        return self._core.n_consumed() + self._eos_extra

    def describe_token(self, tok: int) -> str:
        """Token ``tok`` for a message: its bytes' ``repr``, ``"EOS"``, ``"special"`` or
        ``"out of vocabulary"``."""
        tb = self.compiled.vocab.token_bytes
        if 0 <= tok < len(tb):
            if tok in self._eos:
                return "EOS"
            return repr(tb[tok]) if tb[tok] is not None else "special"
        return "out of vocabulary"

    # test hook: compare the cached mask path against a plain full-trie walk
    def _set_use_cache(self, flag):
        self._core.use_cache = bool(flag)


def _integer_dtype(arr):
    """True for a numpy array or torch tensor of integers (bool excluded)."""
    if getattr(arr, "dtype", None) is None:
        return False
    kind = getattr(arr.dtype, "kind", None)
    if kind is not None:  # numpy
        return kind in "iu"
    return not (arr.dtype.is_floating_point or arr.dtype.is_complex or str(arr.dtype) == "torch.bool")


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
