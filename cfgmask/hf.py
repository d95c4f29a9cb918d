"""Hugging Face integration: a ``LogitsProcessor`` that applies grammar masks.

Usage::

    compiled = cfgmask.compile(cfgmask.Grammar.builtin("json"),
                               cfgmask.Vocabulary.from_hf(tokenizer, vocab_size=model.config.vocab_size))
    proc = GrammarLogitsProcessor(compiled)
    out = model.generate(**inputs, logits_processor=[proc], max_new_tokens=256)

How it follows ``generate``:

* One :class:`~cfgmask.Matcher` per row.  The first call of a generation
  sees ``input_ids`` = the (left-padded) prompt: it records the prompt and
  consumes nothing.
* Every call brings each row's matcher to *exactly* ``input_ids[r, P:]``
  (``P`` = prompt length): it keeps the longest common prefix with what the
  row has seen, rolls the matcher back to it and consumes the rest.  The
  common step (the previous input plus one column) is one device comparison
  and one ``consume`` per row.  So the same step called twice gives the same
  mask, and assisted / prompt-lookup decoding
  (``generate(..., prompt_lookup_num_tokens=4)`` or ``assistant_model=``
  sharing this processor) is exact: draft tokens are checked against the
  masks, each draft position is masked for its own prefix, and rejected
  drafts are rolled back at the next call.
* A consumed token the grammar does not allow raises
  :class:`~cfgmask.TokenRejected` (a processor running after this one, beam
  search picking a ``-inf`` token, or draft tokens from an assistant that
  does not run this processor); the row stays in sync with the tokens before
  it, and the next call resynchronises.
* The processor never restarts on its own: a call whose batch size differs,
  or whose first ``P`` columns are not the recorded prompt, raises
  :class:`~cfgmask.ConfigurationError`.  Call :meth:`GrammarLogitsProcessor.reset`
  between two ``generate`` calls that share a processor (or use one per call).
* A row that consumed EOS is finished.  ``generate`` keeps feeding it pad
  tokens; its mask allows only EOS and pad (never an all ``-inf`` row, which
  would turn into NaN probabilities).
* Beam search (``num_beams > 1``) is not supported: it can pick tokens the
  mask forbade (then :class:`~cfgmask.TokenRejected`); with ``batch_size``
  given it is refused at the first step.
* The mask width is the logits width: ids beyond the compiled vocabulary are
  never allowed.
* A row where no token at all is allowed raises :class:`~cfgmask.DeadEnd`.
  A row where the mask allows tokens but an *earlier* processor (top-k,
  top-p, bad words, ...) already set all of them to ``-inf`` raises
  :class:`~cfgmask.ConfigurationError` with that explanation
  (``generate`` runs user processors after its own warpers; pass
  ``top_k=0, top_p=1.0`` or rely on temperature only).  Nothing is ever left
  unconstrained.

Mask application: the int32 bitmask ``[B, ceil(V/32)]`` (bit ``t & 31`` of
word ``t >> 5``, the llguidance/XGrammar layout) is filled on the CPU, in
pinned memory when the logits live on CUDA, copied non-blocking to the
logits' device and applied by :func:`~cfgmask.kernels.apply_token_bitmask_`
(``cfgmask/kernels.py``: a vectorised torch kernel on any device, numpy on the
CPU, Triton opt-in on CUDA; re-exported here with :func:`unpack_bitmask` and
:func:`triton_available`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np
import torch

from cfgmask.errors import ConfigurationError, DeadEnd, TokenRejected
from cfgmask.kernels import apply_token_bitmask_, rowwise, triton_available, unpack_bitmask

try:  # transformers is optional: the processor is a plain callable either way
    from transformers import LogitsProcessor as _LogitsProcessorBase
except ImportError:  # pragma: no cover
    _LogitsProcessorBase = object

if TYPE_CHECKING:
    from cfgmask.engine.compiler import CompiledGrammar, Matcher

__all__ = ["GrammarLogitsProcessor", "apply_token_bitmask_", "unpack_bitmask", "triton_available"]


# ------------------------------------------------------------------ processor

def _is_id(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _as_id_set(x, what="token id"):
    """``None``, an id, or a list / tensor of ids -> a set of ints (anything else is refused)."""
    if x is None:
        return set()
    if isinstance(x, torch.Tensor):
        if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
            raise ConfigurationError(f"{what} must be integer ids, got a {x.dtype} tensor")
        x = x.flatten().tolist()
    if _is_id(x):
        return {int(x)}
    if isinstance(x, (list, tuple, set, frozenset)) and all(_is_id(i) for i in x):
        return {int(i) for i in x}
    raise ConfigurationError(f"{what} must be an int or a list of ints, got {x!r:.60}")


class GrammarLogitsProcessor(_LogitsProcessorBase):
    """Constrain ``model.generate`` to a compiled grammar (see the module docstring).

    Parameters
    ----------
    compiled : cfgmask.CompiledGrammar
        Shared, read-only; each row gets its own matcher.
    batch_size : int, optional
        Number of rows ``generate`` runs (batch x ``num_return_sequences``).
        When given, any other row count is refused (this is how beam search,
        which multiplies the rows by ``num_beams``, is caught at the first step).
    eos_token_id, pad_token_id : int or list of int, optional
        Ids a finished row may receive besides the vocabulary's EOS ids
        (``generate`` appends ``pad_token_id`` to finished rows; it defaults to
        EOS).  They never extend what the grammar allows before the end.
    kernel : ``"auto"`` | ``"torch"`` | ``"numpy"`` | ``"triton"``
        Mask kernel (see :func:`apply_token_bitmask_`); ``"auto"`` is numpy
        on the CPU and torch on CUDA.  ``"triton"`` is opt-in.
    check_rows : bool
        After masking, verify that every row keeps a finite logit (catches an
        earlier top-k/top-p that removed every allowed token).  One extra pass
        over the logits.
    track_stats : bool
        Record per step whether the incoming top-1 token was disallowed
        (``stats["overruled"]``); costs one device sync per step.

    Attributes
    ----------
    matchers : list of Matcher
        One per row of the current generation (after the first call).
    stats : dict
        ``steps``, ``row_steps``, ``fill_s`` (host time filling masks),
        ``apply_s`` (copy + kernel launch), ``overruled``, ``overrule_checked``,
        ``resyncs`` (calls that were not "one new column") and ``rolled_back``
        (tokens undone by them).
    """

    def __init__(self, compiled: CompiledGrammar, batch_size: int | None = None,
                 eos_token_id: int | Iterable[int] | None = None,
                 pad_token_id: int | Iterable[int] | None = None, *,
                 kernel: str = "auto", check_rows: bool = True, track_stats: bool = False) -> None:
        if not hasattr(compiled, "matcher") or not hasattr(compiled, "vocab"):
            raise ConfigurationError(
                f"GrammarLogitsProcessor needs a cfgmask.CompiledGrammar, got {type(compiled).__name__}")
        if kernel not in ("auto", "torch", "numpy", "triton"):
            raise ConfigurationError(f"kernel must be 'auto', 'torch', 'numpy' or 'triton', got {kernel!r}")
        if batch_size is not None and (not _is_id(batch_size) or batch_size < 1):
            raise ConfigurationError(f"batch_size must be a positive int, got {batch_size!r:.40}")
        self.compiled = compiled
        self.batch_size = None if batch_size is None else int(batch_size)
        self.vocab_eos = set(int(e) for e in compiled.vocab.eos_token_ids)
        self.pad_ids = _as_id_set(pad_token_id, "pad_token_id")
        self.end_ids = self.vocab_eos | _as_id_set(eos_token_id, "eos_token_id") | self.pad_ids
        self.kernel = kernel
        self.check_rows = bool(check_rows)
        self.track_stats = bool(track_stats)
        self.stats = {}
        self.reset()

    # ---- state ---------------------------------------------------------
    def reset(self) -> None:
        """Forget the current generation; the next call starts a new one.

        Call it between two ``generate`` calls that share this processor (or
        use one processor per call): a call that does not continue the
        generation being followed raises :class:`~cfgmask.ConfigurationError`.
        """
        self._rows = None          # one _Row per batch row
        self._prompt = None        # the first call's input_ids (the prompt), on its device
        self._prompt_len = 0
        self._ids = None           # the last call's input_ids when every row is in sync with it
        self.stats = {"steps": 0, "row_steps": 0, "fill_s": 0.0, "apply_s": 0.0,
                      "overruled": 0, "overrule_checked": 0, "resyncs": 0, "rolled_back": 0}

    @property
    def prompt_len(self) -> int:
        return self._prompt_len

    @property
    def matchers(self) -> list[Matcher] | None:
        """One :class:`~cfgmask.Matcher` per row of the generation being followed (``None`` before it)."""
        return None if self._rows is None else [row.matcher for row in self._rows]

    @property
    def finished(self) -> list[bool] | None:
        """Per row: it consumed EOS, or ``generate`` stopped it (then only EOS/pad may follow)."""
        return None if self._rows is None else [row.end is not None for row in self._rows]

    @property
    def stopped(self) -> list[bool] | None:
        """Per row: ``generate`` stopped it (an end id the grammar did not allow) before the grammar completed."""
        return None if self._rows is None else [row.stopped for row in self._rows]

    def _start(self, input_ids):
        B, L = input_ids.shape
        if self.batch_size is not None and B != self.batch_size:
            raise ConfigurationError(
                f"GrammarLogitsProcessor was built for batch_size={self.batch_size} but generate passed "
                f"{B} rows; num_beams > 1 (beam search) is not supported, and num_return_sequences "
                "multiplies the rows (pass batch_size=batch*num_return_sequences)")
        self._rows = [_Row(self.compiled.matcher()) for _ in range(B)]
        self._prompt = input_ids.detach().clone()
        self._prompt_len = L
        self._ids = self._prompt

    def _sync(self, input_ids):
        """Bring every row's matcher to exactly ``input_ids[r, prompt_len:]``.

        Per row: keep the longest common prefix with what the row has seen,
        roll the matcher back to it, then consume the rest.  The common case
        (the previous input plus one column) is one device comparison.
        """
        B, L = input_ids.shape
        rows = self._rows
        if B != len(rows):
            raise ConfigurationError(
                f"this processor follows a generation of {len(rows)} rows but was called with {B}: "
                "call reset() before using it for another generate call (or create one processor per "
                "call); num_beams > 1 (beam search) and num_return_sequences change the row count")
        P = self._prompt_len
        prev = self._ids
        self._ids = None  # until every row is in sync with input_ids (an error may stop half way)
        if (prev is not None and prev.device == input_ids.device and L == prev.shape[1] + 1
                and torch.equal(input_ids[:, :-1], prev)):
            for r, tok in enumerate(input_ids[:, -1].tolist()):
                self._feed(r, rows[r], (tok,))
            return
        # general resync: a rollback, the same step again, several new columns, ...
        if L < P or self._prompt.device != input_ids.device or \
                not torch.equal(input_ids[:, :P], self._prompt):
            raise ConfigurationError(
                f"input_ids {tuple(input_ids.shape)} do not start with the prompt of the generation "
                f"this processor follows ({B} x {P} tokens): a new generate call needs reset() first "
                "(or a new processor); the processor never restarts on its own")
        self.stats["resyncs"] += 1
        for r, ids in enumerate(input_ids[:, P:].tolist()):
            row = rows[r]
            hist = row.hist
            n = min(len(ids), len(hist))
            k = 0
            while k < n and ids[k] == hist[k]:
                k += 1
            if k < len(hist):
                self.stats["rolled_back"] += len(hist) - k
                row.truncate(k)
            if k < len(ids):
                self._feed(r, row, ids[k:])

    def _feed(self, r, row, tokens):
        """Append ``tokens`` to row ``r``; raises :class:`TokenRejected` at the first one not allowed
        (the row stays in sync with the tokens before it)."""
        m = row.matcher
        for tok in tokens:
            if row.end is not None:
                if tok in self.end_ids:
                    row.hist.append(tok)  # generate pads finished rows
                    continue
                raise TokenRejected(
                    f"row {r} is finished (after {m.prefix[-60:]!r}) but got token {tok}, which is not "
                    "EOS or padding", token_id=tok, position=m.n_consumed)
            if m.try_consume(tok):
                row.hist.append(tok)
                row.fed += 1
                if m.is_finished():
                    row.end = row.fed
                continue
            if tok in self.end_ids:
                # generate stopped this row (a stopping criterion, not the grammar) and pads it
                row.end = row.fed
                row.stopped = True
                row.hist.append(tok)
                continue
            raise TokenRejected(
                f"row {r}: token {tok} at position {len(row.hist)} was not allowed by the grammar mask "
                f"(after {m.prefix[-60:]!r}); another logits processor running after this one, beam "
                "search (which can pick -inf tokens), or draft tokens from an assistant that does not "
                "run this processor changed the choice",
                token_id=tok, position=m.n_consumed)

    # ---- buffers -------------------------------------------------------
    def _buffers(self, B, V, device):
        W = (V + 31) // 32
        key = (B, W, str(device))
        if getattr(self, "_buf_key", None) != key:
            cuda = device.type == "cuda"
            self._host = torch.zeros((B, W), dtype=torch.int32, pin_memory=cuda)
            self._host_np = self._host.numpy()
            self._dev = self._host if device.type == "cpu" else torch.zeros((B, W), dtype=torch.int32,
                                                                             device=device)
            self._copy_done = torch.cuda.Event() if cuda else None
            end = np.zeros(W, dtype=np.int32)
            endu = end.view(np.uint32)
            for t in self.end_ids:
                if 0 <= t < V:
                    endu[t >> 5] |= np.uint32(1 << (t & 31))
            self._end_row = end
            self._buf_key = key
        return self._host_np

    # ---- the call ------------------------------------------------------
    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if not isinstance(input_ids, torch.Tensor) or not isinstance(scores, torch.Tensor):
            raise ConfigurationError(
                f"expected torch tensors input_ids and scores, got {type(input_ids).__name__} and "
                f"{type(scores).__name__}")
        if input_ids.dtype.is_floating_point or input_ids.dtype.is_complex or input_ids.dtype == torch.bool:
            raise ConfigurationError(f"input_ids must hold integer token ids, got {input_ids.dtype}")
        if scores.dim() != 2 or input_ids.dim() != 2 or scores.shape[0] != input_ids.shape[0]:
            raise ConfigurationError(
                f"expected input_ids [B, L] and scores [B, V], got {tuple(input_ids.shape)} and "
                f"{tuple(scores.shape)}")
        B, L = input_ids.shape
        V = scores.shape[1]
        if V < self.compiled.vocab.n_tokens:
            raise ConfigurationError(
                f"the logits have {V} columns but the vocabulary has {self.compiled.vocab.n_tokens} "
                "tokens: compile against this model's tokenizer")
        t0 = time.perf_counter()
        if self._rows is None:
            self._start(input_ids)
        else:
            self._sync(input_ids)
            self._ids = input_ids.detach().clone()

        host = self._buffers(B, V, scores.device)
        if self._copy_done is not None:
            self._copy_done.synchronize()  # the previous copy out of the pinned buffer is done
        host.fill(0)
        for r, row in enumerate(self._rows):
            if row.end is not None:
                host[r] = self._end_row
                continue
            try:
                row.matcher.fill_bitmask(host, r)
            except DeadEnd as e:
                raise DeadEnd(f"row {r}: {e}", state=e.state, prefix=e.prefix) from None
        t1 = time.perf_counter()

        if self.track_stats:
            top1 = rowwise(scores, "argmax").tolist()
            hu = host.view(np.uint32)
            for r, t in enumerate(top1):
                if self._rows[r].end is None:
                    self.stats["overrule_checked"] += 1
                    if not (int(hu[r, t >> 5]) >> (t & 31)) & 1:
                        self.stats["overruled"] += 1

        if scores.device.type == "cpu":
            mask = self._host
        else:
            self._dev.copy_(self._host, non_blocking=True)
            if self._copy_done is not None:
                self._copy_done.record()
            mask = self._dev
        # out of place, like transformers' own processors: prompt-lookup decoding passes the
        # same logits tensor for every draft position and would see earlier masks in it
        scores = scores.clone()
        apply_token_bitmask_(scores, mask, kernel=self.kernel)
        if self.check_rows:
            # one vectorised reduction; a row whose maximum is -inf has nothing left to choose
            dead = rowwise(scores, "max") == float("-inf")
            if dead.any():
                rows = [int(r) for r in np.flatnonzero(np.asarray(dead.tolist()))]
                raise ConfigurationError(
                    f"rows {rows}: every token the grammar allows had already been set to -inf by an "
                    "earlier logits processor (generate runs top_k/top_p/min_p and bad-word filters "
                    "before user processors); sample with top_k=0, top_p=1.0 (temperature is fine)")
        st = self.stats
        st["steps"] += 1
        st["row_steps"] += sum(1 for row in self._rows if row.end is None)
        st["fill_s"] += t1 - t0
        st["apply_s"] += time.perf_counter() - t1
        return scores

    # ---- results -------------------------------------------------------
    def finish(self, sequences: Any) -> list[tuple[bytes, bool]]:
        """Consume the last column of ``generate``'s output, which no processor call saw.

        ``generate`` stops right after appending the final token (EOS or the
        ``max_new_tokens``-th), so the matchers are one token behind its
        output.  Call this with ``output`` (or ``output.sequences``) to bring
        them up to date (the same resynchronisation as a step, so it also
        follows assisted decoding's last rollback); returns :meth:`outputs`.
        """
        if self._rows is None:
            raise ConfigurationError("finish() before any generation step")
        if hasattr(sequences, "sequences"):
            sequences = sequences.sequences
        if not isinstance(sequences, torch.Tensor) or sequences.dim() != 2 or \
                sequences.shape[0] != len(self._rows):
            raise ConfigurationError(
                f"finish() needs generate's output sequences [{len(self._rows)}, L], got "
                f"{tuple(getattr(sequences, 'shape', ())) or type(sequences).__name__}")
        sequences = sequences.to(self._prompt.device)
        self._sync(sequences)
        self._ids = sequences.detach().clone()
        return self.outputs()

    def outputs(self) -> list[tuple[bytes, bool]]:
        """Per row: ``(bytes consumed, complete)``; complete means EOS was consumed by the grammar."""
        if self._rows is None:
            return []
        return [(row.matcher.prefix, row.end is not None and not row.stopped) for row in self._rows]


class _Row:
    """What the processor knows about one batch row.

    ``hist`` holds every column after the prompt that the row has been seen
    with; the matcher has consumed ``hist[:fed]``, one matcher token each.
    ``end`` is ``None`` while the row is live; once it consumed EOS it is
    ``fed`` (the EOS is ``hist[end - 1]``); once ``generate`` stopped it with
    an end id the grammar did not allow, it is the index of that id in
    ``hist`` and ``stopped`` is set.  Columns after the end are padding.
    """

    __slots__ = ("matcher", "hist", "fed", "end", "stopped")

    def __init__(self, matcher):
        self.matcher = matcher
        self.hist = []
        self.fed = 0
        self.end = None
        self.stopped = False

    def truncate(self, k):
        """Keep only the first ``k`` columns (``k < len(hist)``), rolling the matcher back."""
        del self.hist[k:]
        if self.end is not None:
            end_token_kept = k >= (self.end + 1 if self.stopped else self.end)
            if end_token_kept:
                return
            self.end = None
            self.stopped = False
        if k < self.fed:
            self.matcher.rollback(self.fed - k)
            self.fed = k
