"""vLLM integration: cfgmask grammar masks as a vLLM 0.33 custom logits processor.

Load it once per engine, then opt in per request::

    from vllm import LLM, SamplingParams
    llm = LLM(model=PATH, logits_processors=["cfgmask.vllm:GrammarLogitsProcessor"])
    llm.generate(prompt, SamplingParams(max_tokens=256,
                                        extra_args={"cfgmask": {"grammar": "json"}}))

    $ vllm serve PATH --logits-processors cfgmask.vllm:GrammarLogitsProcessor
    # per request: "vllm_xargs": {"cfgmask": "{\\"grammar\\": \\"sql\\"}"}

``extra_args["cfgmask"]`` is ``{"grammar": NAME_OR_LARK_TEXT}`` (optionally
with ``"start": RULE``) or ``{"json_schema": SCHEMA}`` (a dict or its JSON
text; it needs ``Grammar.from_json_schema``).  Over HTTP ``vllm_xargs`` values
cannot be objects, so the same object may be given as its JSON text, and a
plain string means ``{"grammar": string}``.  Requests without the key are
left alone.  :meth:`GrammarLogitsProcessor.validate_params` runs at admission
and rejects a bad specification or a grammar that does not compile with a
plain ``ValueError`` carrying the error's type and text, whatever the build
raised (vLLM answers HTTP 400 for ``ValueError`` and 500 for anything else).

A bad or heavy request costs that request only:

* Grammars are built and compiled in a bounded pool of daemon threads
  (``CFGMASK_VLLM_COMPILE_THREADS``, default 2), never on the caller's
  thread; requests with the same grammar share one compile and its cached
  verdict.  A compile has a deadline (``CFGMASK_VLLM_COMPILE_TIMEOUT_S``,
  default 60 s, queueing included): past it, its requests fail and the
  compile is abandoned at its next checkpoint.
* ``validate_params`` (called on vLLM's event loop) waits at most
  ``CFGMASK_VLLM_ADMIT_WAIT_S`` (default 2 s) for the build, then refuses
  the request with a "still compiling, retry" ``ValueError``.
* In the worker a request's compile starts when it joins the batch; an engine
  step waits at most ``CFGMASK_VLLM_STEP_WAIT_S`` (default 10 s) for the
  compiles of its rows.  A row cannot skip a step (whatever it samples becomes
  output), so a row whose compile is still running then ends (EOS only).
* Any exception from one request's grammar in the worker (parsing, building,
  compiling, consuming, filling) ends that request as a dead end (below); it
  never reaches the engine step.

The knobs are environment variables read at each use.

vLLM 0.33 has two model runners with two logits-processor interfaces, and
picks one at start-up (Model Runner V2 by default on CUDA with Triton;
``VLLM_USE_V2_MODEL_RUNNER=0``, or a feature V2 lacks, selects V1).
:class:`GrammarLogitsProcessor` subclasses both base classes and serves
whichever runner constructs it:

* V1 (``vllm.v1.sample.logits_processor.LogitsProcessor``): built as
  ``(vllm_config, device, is_pin_memory)``; ``update_state(BatchUpdate)``
  reports removed, added and moved rows of the persistent batch (processed in
  that order); each added row carries a reference to the request's running
  list of output tokens; ``apply(logits)``.
* V2 (``vllm.v1.worker.gpu.sample.logits_processor.LogitsProcessor``): built
  as ``(vllm_config, req_states)``; ``add_request(slot, params)`` when a
  request takes a slot (slots are recycled; no removal call);
  ``apply(logits, ctx)`` with ``ctx.idx_mapping_np`` (batch row -> slot),
  ``ctx.input_ids``/``ctx.pos`` (the token fed at each row and its position)
  and ``req_states`` (prompt lengths, the token history on the device).

Invariants:

* Each row's matcher has consumed exactly the request's output tokens so far
  before its mask is computed.  Every step compares the number of output
  tokens the engine reports with the number consumed: new tokens are
  consumed, fewer tokens (discarded after a KV-load failure) are rolled
  back, and a row that comes back after preemption replays its history.
* All rows are filled on the host in one ``fill_bitmasks`` call per compiled
  grammar (rows may use different grammars), copied to the logits' device
  (pinned memory, non-blocking, on CUDA) and applied to the whole batch by
  one vectorised kernel (:func:`cfgmask.kernels.apply_token_bitmask_`); rows that
  did not opt in get an all-ones mask row and are unchanged.
* A finished grammar allows EOS only.  A dead end (no token allowed, a token
  the grammar rejects, a grammar that failed or timed out compiling in the
  worker, any exception from the request's grammar) ends the request: its row allows EOS only from then on and the reason is logged
  (logger ``cfgmask.vllm``) and kept in :attr:`GrammarLogitsProcessor.dead_ends`.
* Never NaN: after masking, a constrained row that has no finite logit left
  (an earlier stage such as ``logit_bias`` or ``min_tokens`` removed every
  token the grammar allows) gets logit 0 for EOS, on the device, without a
  sync; the next step reports the dead end.  Nothing is ever unconstrained.
* Compiled grammars are cached across requests by grammar text (and
  vocabulary), so requests with the same grammar share one
  :class:`~cfgmask.CompiledGrammar` and its caches.

Speculative decoding is refused (V1 refuses custom processors with it; V2
would give the processor one row per draft token, which needs per-draft
matchers).
"""

import collections
import concurrent.futures
import json
import logging
import os
import queue
import threading
import time

import numpy as np

from cfgmask.cache import BoundedMemo
from cfgmask.engine import compiler
from cfgmask.engine.lexer import LexerSpec
from cfgmask.engine.vocab import Vocabulary
from cfgmask.errors import CfgmaskError, ConfigurationError, DeadEnd, GrammarError
from cfgmask.grammar import Grammar

logger = logging.getLogger("cfgmask.vllm")

__all__ = ["GrammarLogitsProcessor", "GrammarSpec", "parse_spec", "load_grammar", "vllm_available"]

# ---------------------------------------------------------------- vLLM bases

try:  # the V1 runner's interface
    from vllm.v1.sample.logits_processor import LogitsProcessor as _V1Base
except Exception:  # vLLM absent (or unusable here): the class still works, duck-typed
    _V1Base = None
try:  # Model Runner V2's interface (import-light by design in vLLM)
    from vllm.v1.worker.gpu.sample.logits_processor.interface import LogitsProcessor as _V2Base
except Exception:
    _V2Base = None


def vllm_available():
    """True when vLLM's logits-processor base classes imported."""
    return _V1Base is not None or _V2Base is not None


_BASES = tuple(b for b in (_V1Base, _V2Base) if b is not None) or (object,)


# ------------------------------------------------------------ request specs

_SPEC_KEYS = {"grammar", "json_schema", "start"}


class GrammarSpec:
    """One request's grammar: ``kind`` is ``"builtin"``, ``"lark"`` or ``"json_schema"``.

    ``text`` is the builtin name, the Lark text or the schema's canonical JSON
    (sorted keys), ``start`` the start rule; ``key`` identifies the grammar
    for the caches.
    """

    __slots__ = ("kind", "text", "start", "schema")

    def __init__(self, kind, text, start="start", schema=None):
        self.kind, self.text, self.start, self.schema = kind, text, start, schema

    @property
    def key(self):
        return (self.kind, self.text, self.start)

    def __repr__(self):
        shown = self.text if len(self.text) <= 40 else self.text[:37] + "..."
        return f"GrammarSpec({self.kind}, {shown!r}, start={self.start!r})"


def parse_spec(extra_args):
    """The :class:`GrammarSpec` of a request's ``extra_args``, ``None`` if it has no ``"cfgmask"`` key.

    Raises ``ValueError`` with a message naming what is wrong.
    """
    if not extra_args or "cfgmask" not in extra_args:
        return None
    raw = extra_args["cfgmask"]
    if isinstance(raw, str):
        if raw.lstrip().startswith("{"):  # an object given as JSON text (HTTP vllm_xargs)
            try:
                raw = json.loads(raw)
            except (ValueError, RecursionError) as e:  # also Python's int-digit limit and deep nesting
                raise ValueError(f"cfgmask: extra_args['cfgmask'] is not valid JSON: {_short(e)}") from None
        else:
            raw = {"grammar": raw}
    if not isinstance(raw, dict):
        raise ValueError("cfgmask: extra_args['cfgmask'] must be an object such as {\"grammar\": \"json\"} "
                         f"or {{\"json_schema\": {{...}}}}, not {type(raw).__name__}")
    unknown = set(raw) - _SPEC_KEYS
    if unknown:
        raise ValueError(f"cfgmask: unknown option(s) {sorted(unknown)}; use 'grammar' (with 'start') "
                         "or 'json_schema'")
    has_g, has_s = "grammar" in raw, "json_schema" in raw
    if has_g == has_s:
        raise ValueError("cfgmask: give exactly one of 'grammar' (a builtin name or Lark text) and "
                         "'json_schema'")
    start = raw.get("start", "start")
    if not isinstance(start, str) or not start:
        raise ValueError("cfgmask: 'start' must be a rule name")
    if has_g:
        g = raw["grammar"]
        if not isinstance(g, str) or not g.strip():
            raise ValueError("cfgmask: 'grammar' must be a builtin name "
                             f"({', '.join(Grammar.builtin_names())}) or Lark grammar text")
        return GrammarSpec("builtin" if g in Grammar.builtin_names() else "lark", g, start)
    if "start" in raw:
        raise ValueError("cfgmask: 'start' applies to 'grammar', not to 'json_schema'")
    schema = raw["json_schema"]
    if isinstance(schema, str):  # never a path: a request must not name server files
        try:
            schema = json.loads(schema)
        except (ValueError, RecursionError) as e:
            raise ValueError(f"cfgmask: 'json_schema' is not valid JSON: {_short(e)}") from None
    if not isinstance(schema, (dict, bool)):
        raise ValueError(f"cfgmask: 'json_schema' must be a JSON object (or true/false), not "
                         f"{type(schema).__name__}")
    try:  # a dict from the Python API may hold what JSON cannot (huge ints, non-str keys, cycles)
        text = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError, OverflowError) as e:
        raise ValueError(f"cfgmask: 'json_schema' is not a JSON value: {type(e).__name__}: {_short(e)}") from None
    return GrammarSpec("json_schema", text, "start", schema)


def _short(e, limit=300):
    """An exception's message, cut (it may quote a huge value from the request)."""
    m = str(e)
    return m if len(m) <= limit else m[:limit] + "..."


def _verdict(e):
    """The message a request gets for the exception its grammar raised (any type: fail closed)."""
    if isinstance(e, ValueError) and not isinstance(e, CfgmaskError) and str(e).startswith("cfgmask:"):
        return str(e)
    if isinstance(e, RecursionError):
        return f"cfgmask: RecursionError: the specification is nested too deeply ({_short(e)})"
    if isinstance(e, MemoryError):
        return f"cfgmask: MemoryError: compiling the specification ran out of memory ({_short(e)})"
    return f"cfgmask: {type(e).__name__}: {_short(e)}"


# ---- knobs (read at each use, like the disk cache's, so a server or a test can change them)

def _env_seconds(name, default):
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        v = float(raw)
    except ValueError:
        v = float("nan")
    if not v >= 0:
        logger.warning("cfgmask: ignoring %s=%r (not a number of seconds >= 0); using %s", name, raw, default)
        return default
    return min(v, 1e6)  # threading's waits refuse larger timeouts


def compile_timeout():
    """``CFGMASK_VLLM_COMPILE_TIMEOUT_S`` (default 60): the deadline of one grammar's compile."""
    return _env_seconds("CFGMASK_VLLM_COMPILE_TIMEOUT_S", 60.0)


def admit_wait():
    """``CFGMASK_VLLM_ADMIT_WAIT_S`` (default 2): the longest ``validate_params`` waits for a build."""
    return _env_seconds("CFGMASK_VLLM_ADMIT_WAIT_S", 2.0)


def step_wait():
    """``CFGMASK_VLLM_STEP_WAIT_S`` (default 10): the longest one engine step waits for a compile."""
    return _env_seconds("CFGMASK_VLLM_STEP_WAIT_S", 10.0)


def _compile_threads():
    raw = os.environ.get("CFGMASK_VLLM_COMPILE_THREADS", "").strip()
    try:
        n = int(raw) if raw else 2
    except ValueError:
        n = 0
    if not 1 <= n <= 64:
        logger.warning("cfgmask: ignoring CFGMASK_VLLM_COMPILE_THREADS=%r (not 1..64); using 2", raw)
        n = 2
    return n


class _Pool:
    """A bounded pool of daemon threads for compiles.

    Not ``ThreadPoolExecutor``: its threads are joined at interpreter exit, so
    one runaway compile (Python cannot stop a thread) would hang a shutdown.
    """

    def __init__(self, n):
        self.n = n
        self.queue = queue.SimpleQueue()
        self.threads = []
        self.lock = threading.Lock()

    def submit(self, fn, *args):
        fut = concurrent.futures.Future()
        self.queue.put((fut, fn, args))
        with self.lock:
            if len(self.threads) < self.n:
                t = threading.Thread(target=self._work, name=f"cfgmask-compile-{len(self.threads)}", daemon=True)
                t.start()
                self.threads.append(t)
        return fut

    def _work(self):
        while True:
            fut, fn, args = self.queue.get()
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args))
            except BaseException as e:  # noqa: BLE001 - handed to whoever waits on the future
                fut.set_exception(e)


_GRAMMARS = BoundedMemo(256)   # spec.key -> Grammar or the error message
_COMPILED = BoundedMemo(64)    # (spec.key, vocab fingerprint) -> CompiledGrammar or error
_CACHE_LOCK = threading.Lock()  # a memo look-up and _INFLIGHT together
_INFLIGHT = {}                  # (cache name, key) -> _Job of a compile still running
_POOL = None
_POOL_PID = None


class _Job:
    """One compile: its future (a Grammar/CompiledGrammar or the error message) and its deadline."""

    __slots__ = ("future", "deadline", "timeout")

    def __init__(self, future, deadline, timeout):
        self.future, self.deadline, self.timeout = future, deadline, timeout


class _CompileTimeout(Exception):
    pass


def _pool():
    global _POOL, _POOL_PID
    if _POOL is None or _POOL_PID != os.getpid():  # a forked child has none of the parent's threads
        _POOL, _POOL_PID = _Pool(_compile_threads()), os.getpid()
        _INFLIGHT.clear()
    return _POOL


def _job(name, cache, key, build):
    """The :class:`_Job` giving ``build(deadline)`` for ``key``: cached, already running, or started now.

    Requests with the same grammar share one compile.  Whatever ``build``
    raises becomes the grammar's cached error message (except MemoryError and
    a timeout, which may be the machine's and not the grammar's).
    """
    with _CACHE_LOCK:
        hit = cache.get(key)
        if hit is not None:
            fut = concurrent.futures.Future()
            fut.set_result(hit)
            return _Job(fut, float("inf"), 0.0)
        job = _INFLIGHT.get((name, key))
        if job is not None:
            return job
        timeout = compile_timeout()
        deadline = time.monotonic() + timeout
        job = _Job(None, deadline, timeout)

        def run():
            cacheable = True
            try:
                value = build(deadline)
            except _CompileTimeout:  # not cached: it may be the machine's load, not the grammar
                value, cacheable = _timeout_message(timeout), False
            except Exception as e:  # noqa: BLE001 - one grammar's failure is that grammar's verdict
                if not isinstance(e, CfgmaskError):
                    logger.warning("cfgmask: compiling a request's grammar raised %s", type(e).__name__,
                                   exc_info=e)
                value, cacheable = _verdict(e), not isinstance(e, MemoryError)
            with _CACHE_LOCK:
                if cacheable:
                    cache.put(key, value)
                _INFLIGHT.pop((name, key), None)
            return value
        job.future = _pool().submit(run)
        _INFLIGHT[(name, key)] = job
        return job


def _timeout_message(timeout):
    return (f"cfgmask: the grammar did not compile within {timeout:g} s (CFGMASK_VLLM_COMPILE_TIMEOUT_S); "
            "simplify it or raise the limit")


def _checkpoint(deadline):
    """A ``progress`` callback that abandons a compile past its deadline (frees the pool thread)."""
    def progress(_what):
        if time.monotonic() >= deadline:
            raise _CompileTimeout()
    return progress


def _build_grammar(spec, deadline):
    if spec.kind == "builtin":
        g = Grammar.from_file(Grammar.builtin_path(spec.text), start=spec.start)
    elif spec.kind == "lark":
        g = Grammar.from_lark(spec.text, start=spec.start)
    else:
        from_schema = getattr(Grammar, "from_json_schema", None)
        if from_schema is None:
            raise ConfigurationError(
                "'json_schema' needs Grammar.from_json_schema, which this cfgmask version does "
                "not have; send a Lark grammar with 'grammar' instead")
        g = from_schema(spec.schema)
    # terminal automata: regex constructs without an exact automaton fail here
    LexerSpec(g, progress=_checkpoint(deadline))
    return g


def _grammar_job(spec):
    return _job("grammar", _GRAMMARS, spec.key, lambda dl: _build_grammar(spec, dl))


def _compile_job(spec, vocab):
    def build(deadline):
        t0 = time.perf_counter()
        g = _GRAMMARS.get(spec.key)
        if g is None:  # built here, not through _grammar_job: a job must never wait on the pool
            g = _build_grammar(spec, deadline)
            _GRAMMARS.put(spec.key, g)
        elif isinstance(g, str):
            raise ValueError(g)
        c = compiler.compile(g, vocab, progress=_checkpoint(deadline))
        logger.info("cfgmask: compiled %r in %.2f s", spec, time.perf_counter() - t0)
        return c
    return _job("compiled", _COMPILED, (spec.key, vocab.fingerprint()), build)


def _await(job, wait_s):
    """``("ok", value)``, ``("error", message)``, ``("timeout", message)`` past the compile's deadline,
    or ``("pending", None)`` when ``wait_s`` ran out first (the compile goes on)."""
    fut = job.future
    if not fut.done():
        left = min(wait_s, job.deadline - time.monotonic())
        if left > 0:
            concurrent.futures.wait([fut], timeout=left)
    if fut.done():
        try:
            value = fut.result()
        except Exception as e:  # noqa: BLE001 - the pool hands back what run() could not catch
            return "error", _verdict(e)
        return ("error", value) if isinstance(value, str) else ("ok", value)
    if time.monotonic() >= job.deadline:
        return "timeout", _timeout_message(job.timeout)
    return "pending", None


def load_grammar(spec):
    """The :class:`~cfgmask.Grammar` of ``spec`` (cached), with its terminal automata checked.

    Raises ``ValueError`` carrying the error text (any exception the build
    raised, with its type) when the grammar cannot be compiled to an exact
    mask, or when it has not compiled within ``CFGMASK_VLLM_COMPILE_TIMEOUT_S``.
    """
    state, value = _await(_grammar_job(spec), float("inf"))
    if state != "ok":
        raise ValueError(value)
    return value


def _compiled(spec, vocab):
    """The :class:`CompiledGrammar` of ``spec`` against ``vocab``, shared by every request using it."""
    state, value = _await(_compile_job(spec, vocab), float("inf"))
    if state != "ok":
        raise ValueError(value)
    return value


# --------------------------------------------------------------- row state

class _Row:
    """One request's state: its matcher, and how many of its output tokens it has seen.

    ``n`` counts output tokens accounted for: consumed by the matcher, or
    (``extra``) seen after the grammar had finished (``ignore_eos``).
    ``job`` is the compile the row waits for (``compiled`` is ``None`` until
    it is done).
    """

    __slots__ = ("spec", "compiled", "matcher", "n", "extra", "dead", "tokens", "job")

    def __init__(self, spec, compiled=None, dead=None, tokens=None, job=None):
        self.spec = spec
        self.compiled = compiled
        self.matcher = compiled.matcher() if compiled is not None else None
        self.n = 0
        self.extra = 0
        self.dead = dead      # the reason, once the request hit a dead end
        self.tokens = tokens  # V1: the request's running output-token list
        self.job = job


class _MaskBatch:
    """The host/device work shared by both runner interfaces: sync, fill, apply."""

    def __init__(self, vocab, eos_ids, device, pin_memory):
        import torch
        self.torch = torch
        self.vocab = vocab
        self.eos_ids = [int(e) for e in eos_ids]
        if not self.eos_ids:
            raise ConfigurationError("cfgmask.vllm needs at least one EOS token id")
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.pin = bool(pin_memory) and self.device.type == "cuda"
        self.dead_ends = collections.deque(maxlen=256)
        self.stats = {"steps": 0, "rows": 0, "fill_s": 0.0, "apply_s": 0.0}
        self._cap = self._words = 0
        self._copy_done = None

    # ---- rows ------------------------------------------------------------
    def new_row(self, spec, tokens=None):
        """A row for ``spec``; its compile runs in the pool (the engine step goes on meanwhile)."""
        row = _Row(spec, tokens=tokens)
        try:
            row.job = _compile_job(spec, self.vocab)
        except Exception as e:  # noqa: BLE001 - even the pool failing ends this request only
            self.kill(row, f"grammar failed to compile in the worker: {_verdict(e)}", e)
            return row
        if row.job.future.done():
            self.settle([row])
        return row

    def settle(self, rows):
        """Give every row still waiting for its compile a matcher, or end it.

        The step waits at most ``CFGMASK_VLLM_STEP_WAIT_S`` in all (and no row
        past its compile's deadline); a row whose compile is still running
        then ends, since a row cannot skip a step: whatever token it samples
        becomes output.
        """
        waiting = [r for r in rows if r is not None and r.job is not None and r.dead is None]
        if not waiting:
            return
        budget = step_wait()
        end = time.monotonic() + budget
        for r in waiting:
            state, value = _await(r.job, max(0.0, end - time.monotonic()))
            r.job = None
            if state == "ok":
                try:
                    r.matcher = value.matcher()
                    r.compiled = value
                except Exception as e:  # noqa: BLE001
                    self.kill(r, f"grammar failed in the worker: {_verdict(e)}", e)
            elif state == "pending":
                self.kill(r, f"cfgmask: the grammar is still compiling after {budget:g} s in the worker "
                             "(CFGMASK_VLLM_STEP_WAIT_S); the compile goes on, so a retry finds it ready")
            else:
                self.kill(r, f"grammar failed to compile in the worker: {value}")

    def kill(self, row, reason, exc=None):
        row.dead = reason
        row.job = None
        self.dead_ends.append(reason)
        foreign = exc is not None and not isinstance(exc, CfgmaskError)
        logger.warning("cfgmask: request ended by a dead end (only EOS allowed from now on): %s", reason,
                       exc_info=exc if foreign else None)

    def sync(self, row, n_total, fetch):
        """Bring ``row`` to ``n_total`` output tokens; ``fetch(i, j)`` returns tokens ``[i, j)``."""
        if row.dead is not None:
            row.n = n_total
            return
        try:
            self._sync(row, n_total, fetch)
        except Exception as e:  # noqa: BLE001 - a matcher failure (a budget, a bug) ends this request only
            self.kill(row, f"the grammar failed while consuming the output: {_verdict(e)}", e)
            row.n = n_total

    def _sync(self, row, n_total, fetch):
        if n_total < row.n:  # tokens were discarded (KV-load failure): roll back
            drop = row.n - n_total
            k = min(drop, row.extra)
            row.extra -= k
            if drop - k:
                row.matcher.rollback(drop - k)
            row.n = n_total
            return
        if n_total == row.n:
            return
        m = row.matcher
        for t in fetch(row.n, n_total):
            t = int(t)
            if t < 0:  # an async-scheduling placeholder: not sampled yet
                break
            if m.is_finished():
                row.extra += 1  # ignore_eos: the engine keeps going, the mask stays EOS-only
            elif not m.try_consume(t):
                why = "EOS" if t in self.eos_ids else f"token {t} ({m.describe_token(t)})"
                self.kill(row, f"{why} is not allowed after {m.prefix[-80:]!r}: an engine stage after "
                               "the mask (or one that removed every allowed token before it) chose it")
                row.n += 1
                return
            row.n += 1

    # ---- masks -----------------------------------------------------------
    def _buffers(self, rows, words):
        torch = self.torch
        if rows > self._cap or words != self._words:
            cap = max(rows, 2 * self._cap if words == self._words else rows, 8)
            self._host = torch.zeros((cap, words), dtype=torch.int32, pin_memory=self.pin)
            self._host_np = self._host.numpy()
            self._dev = (self._host if self.device.type == "cpu"
                         else torch.zeros((cap, words), dtype=torch.int32, device=self.device))
            self._copy_done = torch.cuda.Event() if self.device.type == "cuda" else None
            eos = np.zeros(words, dtype=np.int32)
            eu = eos.view(np.uint32)
            for t in self.eos_ids:
                if 0 <= t < 32 * words:
                    eu[t >> 5] |= np.uint32(1 << (t & 31))
            self._eos_row = eos
            self._cap, self._words = cap, words
        return self._host_np

    def _dead_rows(self, ms, rows, host):
        for b, m in enumerate(ms):  # every row was filled; the empty ones are the dead ends
            if m is not None and not host[b].any():
                self.kill(rows[b], f"no token of the vocabulary can continue {m.prefix[-80:]!r}")
                host[b] = self._eos_row

    def apply(self, logits, rows):
        """Mask ``logits`` ``[B, V]`` in place; ``rows[b]`` is row ``b``'s :class:`_Row` or ``None``."""
        from cfgmask.kernels import apply_token_bitmask_
        torch = self.torch
        t0 = time.perf_counter()
        B, V = logits.shape
        # a row is as wide as the wider of the logits and the vocabulary (the kernel ignores the excess)
        words = max((V + 31) // 32, (self.vocab.vocab_size + 31) // 32)
        host_all = self._buffers(B, words)
        if self._copy_done is not None:
            self._copy_done.synchronize()  # the previous copy out of the pinned buffer has finished
        host = host_all[:B]
        groups = {}
        constrained = []
        for b, r in enumerate(rows):
            if r is None:
                host[b] = -1  # not opted in: every token allowed, logits unchanged
                continue
            constrained.append(b)
            if r.dead is not None or r.matcher is None or r.matcher.is_finished():
                host[b] = self._eos_row  # (no matcher: not settled, which apply's callers prevent)
                continue
            ms = groups.get(id(r.compiled))
            if ms is None:
                ms = groups[id(r.compiled)] = (r.compiled, [None] * B)
            ms[1][b] = r.matcher
        for compiled, ms in groups.values():
            try:
                compiled.fill_bitmasks(ms, host)
            except DeadEnd:
                self._dead_rows(ms, rows, host)
            except Exception:  # noqa: BLE001 - find the failing rows one by one; the others go on
                for b, m in enumerate(ms):
                    if m is None:
                        continue
                    one = [None] * B
                    one[b] = m
                    try:
                        compiled.fill_bitmasks(one, host)
                    except DeadEnd:
                        self._dead_rows(one, rows, host)
                    except Exception as e:  # noqa: BLE001
                        self.kill(rows[b], f"the grammar failed while computing the mask: {_verdict(e)}", e)
                        host[b] = self._eos_row
        t1 = time.perf_counter()
        if not constrained:
            return logits
        if self.device.type == "cpu" or logits.device.type == "cpu":
            mask = self._host[:B]
        else:
            self._dev[:B].copy_(self._host[:B], non_blocking=True)
            if self._copy_done is not None:
                self._copy_done.record()
            mask = self._dev[:B]
        apply_token_bitmask_(logits, mask)
        # never NaN: a constrained row with nothing finite left gets EOS (no host sync)
        eos = self.eos_ids[0]
        if eos < V:
            sel = torch.zeros(B, dtype=torch.bool)
            sel[constrained] = True
            sel = sel.to(logits.device, non_blocking=True)
            empty = (logits.amax(dim=1) == float("-inf")) & sel
            logits[:, eos] = torch.where(empty, torch.zeros((), dtype=logits.dtype, device=logits.device),
                                         logits[:, eos])
        st = self.stats
        st["steps"] += 1
        st["rows"] += len(constrained)
        st["fill_s"] += t1 - t0
        st["apply_s"] += time.perf_counter() - t1
        return logits


# --------------------------------------------------------------- processor

def _load_vocab(vllm_config):
    """The :class:`~cfgmask.Vocabulary` of the engine's tokenizer, at the logits width."""
    from transformers import AutoTokenizer
    mc = vllm_config.model_config
    tok = AutoTokenizer.from_pretrained(
        mc.tokenizer, revision=getattr(mc, "tokenizer_revision", None),
        trust_remote_code=bool(getattr(mc, "trust_remote_code", False)))
    width = int(mc.get_vocab_size())
    eos = set()
    if tok.eos_token_id is not None:
        eos.add(int(tok.eos_token_id))
    try:  # the generation config's EOS ids are what vLLM stops on too
        gen = mc.try_get_generation_config() or {}
        ge = gen.get("eos_token_id")
        eos.update(int(e) for e in ([ge] if isinstance(ge, int) else (ge or [])))
    except Exception:  # noqa: BLE001 - optional metadata
        pass
    n = len(tok)
    return Vocabulary.from_hf(tok, vocab_size=max(width, n), eos_token_ids=sorted(e for e in eos if e < n))


class GrammarLogitsProcessor(*_BASES):
    """vLLM logits processor applying cfgmask grammars to the requests that ask for one.

    See the module docstring for the request format and the two runner
    interfaces.  ``vocab`` (a :class:`~cfgmask.Vocabulary`) replaces loading
    the engine's tokenizer; vLLM never passes it (tests and tools do).

    Attributes: ``dead_ends`` (recent dead-end reasons), ``stats``
    (``steps``, ``rows``, ``fill_s`` host time syncing and filling masks,
    ``apply_s`` copy and kernel launch).
    """

    def __init__(self, vllm_config, *args, vocab=None):
        if len(args) == 2:      # V1: (vllm_config, device, is_pin_memory)
            self.runner = "v1"
            device, pin = args
            self.req_states = None
        elif len(args) == 1:    # V2: (vllm_config, req_states)
            self.runner = "v2"
            self.req_states = args[0]
            device = getattr(self.req_states, "device", None)
            pin = device is not None and str(device).startswith("cuda")
        else:
            raise TypeError("GrammarLogitsProcessor(vllm_config, device, is_pin_memory) (V1 runner) or "
                            "(vllm_config, req_states) (V2 runner)")
        if getattr(vllm_config, "speculative_config", None) is not None:
            raise ValueError("cfgmask.vllm.GrammarLogitsProcessor does not support speculative decoding")
        if vocab is None:
            vocab = _load_vocab(vllm_config)
        # the per-vocabulary work (trie, standard slices) at start-up, not in the first request
        vocab.prepare()
        self.vocab = vocab
        self._batch = _MaskBatch(vocab, vocab.eos_token_ids, device, pin)
        self._rows = {}  # V1: batch index -> _Row; V2: request slot -> _Row

    # ---- both runners ------------------------------------------------------
    @classmethod
    def validate_params(cls, sampling_params):
        """Reject a bad ``extra_args["cfgmask"]`` or a grammar that does not compile.

        Raises plain ``ValueError`` for every failure, whatever the build
        raised: vLLM's validator turns ``ValueError`` (and only that) into
        HTTP 400, anything else into a 500.  vLLM calls this on its event
        loop, so the build runs in the compile pool and this waits at most
        ``CFGMASK_VLLM_ADMIT_WAIT_S``; a grammar still compiling then is
        refused (the build goes on, and a retry finds its verdict cached).
        """
        try:
            spec = parse_spec(getattr(sampling_params, "extra_args", None))
            if spec is None:
                return
            wait = admit_wait()
            state, value = _await(_grammar_job(spec), wait)
        except Exception as e:  # noqa: BLE001 - a bad request is a 400, never a 500
            raise ValueError(_verdict(e)) from e
        if state == "pending":
            raise ValueError(f"cfgmask: the grammar is still compiling after {wait:g} s "
                             "(CFGMASK_VLLM_ADMIT_WAIT_S); the compile goes on in the background "
                             f"(for at most {compile_timeout():g} s, CFGMASK_VLLM_COMPILE_TIMEOUT_S): "
                             "retry the request")
        if state != "ok":
            raise ValueError(value)

    def is_argmax_invariant(self):
        """False: masking changes the argmax."""
        return False

    @property
    def dead_ends(self):
        return list(self._batch.dead_ends)

    @property
    def stats(self):
        return self._batch.stats

    def _row_for(self, params, tokens=None):
        """The request's row, ``None`` if it did not opt in; never raises (a bad request ends itself)."""
        try:
            spec = parse_spec(getattr(params, "extra_args", None))
            if spec is None:
                return None
            return self._batch.new_row(spec, tokens)
        except Exception as e:  # noqa: BLE001 - fail closed: this request only, not the engine step
            row = _Row(None, tokens=tokens)
            self._batch.kill(row, _verdict(e), e)
            return row

    # ---- V1 runner -----------------------------------------------------------
    def update_state(self, batch_update):
        """V1: follow the persistent batch (removed, then added, then moved rows)."""
        if batch_update is None:
            return
        rows = self._rows
        for idx in batch_update.removed:
            rows.pop(idx, None)
        for idx, params, _prompt_ids, output_ids in batch_update.added:
            row = self._row_for(params, output_ids)
            if row is None:
                rows.pop(idx, None)  # the slot's previous occupant is gone
            else:
                rows[idx] = row
        for a, b, direction in batch_update.moved:
            ra, rb = rows.pop(a, None), rows.pop(b, None)
            if ra is not None:
                rows[b] = ra
            if getattr(direction, "name", direction) == "SWAP" and rb is not None:
                rows[a] = rb

    # ---- V2 runner -----------------------------------------------------------
    def add_request(self, req_idx, sampling_params):
        """V2: a request takes slot ``req_idx``; True when it opted in."""
        row = self._row_for(sampling_params)
        if row is None:
            self._rows.pop(req_idx, None)
            return False
        self._rows[req_idx] = row
        return True

    def apply_staged_writes(self):
        """V2: nothing is staged (all state lives on the host)."""

    # ---- apply -----------------------------------------------------------------
    def apply(self, logits, ctx=None):
        """Mask ``logits`` in place (V1: ``apply(logits)``; V2: ``apply(logits, ctx)``)."""
        if ctx is None:
            return self._apply_v1(logits)
        return self._apply_v2(logits, ctx)

    def _apply_v1(self, logits):
        if not self._rows:
            return logits
        B = logits.shape[0]
        rows = [None] * B
        for idx, row in self._rows.items():
            if idx < B:
                rows[idx] = row
        self._batch.settle(rows)  # rows whose compile was still running: a matcher, or the end
        for row in rows:
            if row is None:
                continue
            toks = row.tokens if row.tokens is not None else []
            n = len(toks)
            while n > row.n and toks[n - 1] == -1:  # async placeholders at the end
                n -= 1
            self._batch.sync(row, n, lambda i, j, t=toks: t[i:j])
        return self._batch.apply(logits, rows)

    def _apply_v2(self, logits, ctx):
        slots = np.asarray(ctx.idx_mapping_np)
        B = logits.shape[0]
        if B != len(slots):
            raise RuntimeError("cfgmask.vllm: more logits rows than requests (speculative decoding?) "
                               "is not supported")
        rows = [self._rows.get(int(s)) for s in slots]
        active = [b for b, r in enumerate(rows) if r is not None]
        if not active:
            return logits
        self._batch.settle(rows)
        torch = self._batch.torch
        # one device->host copy: the token fed at each row and its position
        hist = torch.stack((ctx.input_ids.to(torch.int64), ctx.pos.to(torch.int64))).cpu().numpy()
        prompt_len = self.req_states.prompt_len.np
        for b in active:
            row, s = rows[b], int(slots[b])
            P = int(prompt_len[s])
            p = int(hist[1, b])
            n_total = max(0, p + 1 - P)  # output tokens that exist: positions P..p
            last = int(hist[0, b])

            def fetch(i, j, s=s, P=P, last=last, n_total=n_total):
                if j == n_total and i == n_total - 1:
                    return [last]
                got = self.req_states.all_token_ids.gpu[s, P + i:P + min(j, n_total - 1)].tolist()
                return got + ([last] if j == n_total else [])

            self._batch.sync(row, n_total, fetch)
        return self._batch.apply(logits, rows)
