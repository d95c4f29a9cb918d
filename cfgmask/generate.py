"""cfgmask's own generation loop, with jump-forward decoding.

:func:`generate` decodes one sequence under a grammar with a Hugging Face
causal LM and its KV cache.  Where the grammar allows only one continuation
(:meth:`Matcher.forced_bytes` is non-empty), the loop appends that text
without sampling it and feeds all of its tokens to the model in one forward
call, so a fixed-key JSON document costs fewer model calls than tokens.

Invariants:

* Every output token is consumed by the matcher before the next mask is
  computed, forced tokens included, so every mask is exact and the output is
  always a prefix of a document of the grammar.
* Forced text is tokenised the way the tokenizer itself tokenises text
  (``tokenizer(text, add_special_tokens=False, split_special_tokens=True)``),
  never by a greedy walk over the vocabulary.  Two boundaries are re-tokenised
  so that the model never sees a split it would not produce itself (the
  SGLang jump-forward pitfall):

  - *before*: the token sampled just before the forced text has not been fed
    to the model yet, so it is taken back and re-encoded together with the
    forced bytes (``{`` + ``"name": "`` becomes ``{"``, ``name``, ``":``,
    `` "``, as the tokenizer writes ``{"name": "``);
  - *after*: the last forced token is held back, to be sampled under the
    mask, when the grammar allows a longer token that starts with its bytes
    (`` "`` may become `` ""`` when an empty string can follow).

  A tokenisation is used only if its bytes are exactly the wanted bytes and
  the matcher accepts every token; otherwise the step falls back to plain
  sampling (the mask is exact either way).
* The only token allowed once the grammar is complete and nothing can follow
  is EOS: with jump-forward on it is appended without a model call.
* Nothing here changes what is allowed: with ``jump_forward=False`` the same
  loop samples every token under the same masks (the step-by-step baseline),
  and ``grammar=None`` runs it unconstrained (the speed baseline).
"""

import bisect
import inspect
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cfgmask.cache import BoundedMemo
from cfgmask.engine.compiler import CompiledGrammar, compile as compile_grammar
from cfgmask.engine.vocab import Vocabulary
from cfgmask.errors import ConfigurationError
from cfgmask.grammar import Grammar

__all__ = ["generate", "GenerateResult", "JumpTokenizer"]


@dataclass
class GenerateResult:
    """What :func:`generate` returns.

    ``text`` is the output decoded as UTF-8 (EOS excluded), ``data`` the same
    bytes raw.  ``token_ids`` are the output tokens (EOS included when it was
    generated).  ``forced_tokens`` counts the tokens appended without sampling,
    ``sampled_tokens`` those the model chose, ``model_calls`` the forward passes
    after the prompt.  ``complete`` means the grammar consumed EOS; ``accepting``
    that the output is a complete document (EOS allowed or consumed).
    ``stop_reason`` is ``"eos"`` or ``"max_new_tokens"``.  Times are in seconds:
    ``time_s`` in total, ``prefill_s`` for the prompt, ``mask_s`` for masks,
    forced bytes and re-tokenisation on the host.
    """

    text: str
    token_ids: list
    forced_tokens: int
    model_calls: int
    sampled_tokens: int = 0
    complete: bool = False
    accepting: bool = False
    stop_reason: str = ""
    data: bytes = b""
    jumps: int = 0
    time_s: float = 0.0
    prefill_s: float = 0.0
    mask_s: float = 0.0
    prompt_tokens: int = 0
    stats: dict = field(default_factory=dict)

    @property
    def n_tokens(self):
        return len(self.token_ids)


# ------------------------------------------------------------------ caches

_CACHE_MAX = 8
_VOCABS = BoundedMemo(_CACHE_MAX, "fifo")     # id(tokenizer) -> (tokenizer, width, Vocabulary)
_COMPILED = BoundedMemo(_CACHE_MAX, "fifo")   # (grammar key, vocab fingerprint) -> CompiledGrammar
_JUMPERS = BoundedMemo(_CACHE_MAX, "fifo")    # (id(tokenizer), vocab fingerprint) -> (tokenizer, JumpTokenizer)


def _remember(cache, key, value):
    cache.put(key, value)
    return value


def _logits_width(model):
    emb = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if emb is not None and getattr(emb, "weight", None) is not None:
        return int(emb.weight.shape[0])
    return int(model.config.vocab_size)


def _vocab_for(tokenizer, width):
    hit = _VOCABS.get(id(tokenizer))
    if hit is not None and hit[0] is tokenizer and hit[1] == width:
        return hit[2]
    vocab = Vocabulary.from_hf(tokenizer, vocab_size=max(width, len(tokenizer)))
    return _remember(_VOCABS, id(tokenizer), (tokenizer, width, vocab))[2]


def _compiled_for(grammar, tokenizer, width):
    """``grammar`` (name, Grammar or CompiledGrammar) compiled against ``tokenizer``."""
    if isinstance(grammar, CompiledGrammar):
        if grammar.vocab.n_tokens > width:
            raise ConfigurationError(
                f"the compiled grammar's vocabulary has {grammar.vocab.n_tokens} tokens but the model's "
                f"logits have {width} columns: compile against this model's tokenizer")
        return grammar
    if isinstance(grammar, str):
        key = ("builtin", grammar)
        if grammar not in Grammar.builtin_names():
            raise ConfigurationError(
                f"grammar {grammar!r} is not a builtin name ({', '.join(Grammar.builtin_names())}); "
                "pass a cfgmask.Grammar for Lark text or a file")
        g = None
    elif isinstance(grammar, Grammar):
        key, g = ("grammar", grammar), grammar  # the object itself: kept alive, never confused
    else:
        raise ConfigurationError(
            f"grammar must be a builtin name, a cfgmask.Grammar or a CompiledGrammar, not {type(grammar).__name__}")
    vocab = _vocab_for(tokenizer, width)
    ck = (key, vocab.fingerprint())
    hit = _COMPILED.get(ck)
    if hit is None:
        hit = _remember(_COMPILED, ck, compile_grammar(g if g is not None else Grammar.builtin(grammar), vocab))
    return hit


# ------------------------------------------------------- forced-text tokens

class JumpTokenizer:
    """Canonical tokens for forced text, with both boundaries re-tokenised.

    Built once per (tokenizer, vocabulary).  ``index`` sorts the tokens'
    bytes, so that the tokens extending a byte string form one contiguous
    range (the *after*-boundary check).
    """

    def __init__(self, tokenizer, vocab):
        self.tokenizer = tokenizer
        self.vocab = vocab
        self.token_bytes = vocab.token_bytes
        pairs = sorted((tb, i) for i, tb in enumerate(vocab.token_bytes) if tb is not None)
        self._keys = [p[0] for p in pairs]
        self._ids = np.array([p[1] for p in pairs], dtype=np.int64)
        self._split_ok = True

    def encode(self, text):
        """``text`` as the tokenizer writes it: plain text, no special tokens."""
        tok = self.tokenizer
        if self._split_ok:
            try:
                return list(tok(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])
            except TypeError:
                self._split_ok = False
        return list(tok.encode(text, add_special_tokens=False))

    def bytes_of(self, ids):
        """The bytes ``ids`` append, or ``None`` if one of them is special."""
        out = []
        for t in ids:
            tb = self.token_bytes[t] if 0 <= t < len(self.token_bytes) else None
            if tb is None:
                return None
            out.append(tb)
        return b"".join(out)

    def extensions(self, data):
        """Ids of the tokens whose bytes start with ``data`` and are longer."""
        keys = self._keys
        lo = bisect.bisect_right(keys, data)
        hi = lo
        stripped = data.rstrip(b"\xff")
        if stripped:
            upper = stripped[:-1] + bytes([stripped[-1] + 1])
            hi = bisect.bisect_left(keys, upper, lo)
        else:  # data is all 0xff bytes: every later key extends it
            hi = len(keys)
        return self._ids[lo:hi]

    def jump(self, matcher, prev, room, bitmask):
        """Tokens to append without sampling, or ``None``.

        ``matcher`` has consumed ``prev``, the output tokens not yet fed to the
        model (the token just sampled, or nothing).  Reads
        ``matcher.forced_bytes()`` and returns ``(tokens, merged, filled)``: when
        ``merged`` is true, ``tokens`` replace ``prev`` (``prev`` + forced bytes
        re-encoded together), otherwise they follow it.  At most ``room``
        tokens are returned beyond the replaced ones.  On success the matcher
        has consumed exactly the new output; on ``None`` it is in the state it
        started in.
        ``bitmask`` (int32 ``[ceil(V/32)]``) is scratch space for the mask used
        by the hold-back check; the third item of the result is True when it
        was left holding the mask of the matcher's final state.
        """
        f = matcher.forced_bytes()
        if not f or room <= 0:
            return None
        prev = list(prev)
        prev_bytes = self.bytes_of(prev) if prev else b""
        if prev_bytes is None:
            return None
        for merge in ((True, False) if prev else (False,)):
            head = prev_bytes if merge else b""
            text = _utf8_prefix(head + f)
            want = text.encode("utf-8")
            if len(want) <= len(head) or not want.startswith(head):
                continue
            toks = self.encode(text)
            if not toks or self.bytes_of(toks) != want:
                continue  # the tokenizer does not write these bytes back (e.g. a dummy-prefix space)
            if merge:
                matcher.rollback(len(prev))
            done = 0
            for t in toks:
                if not matcher.try_consume(t):
                    break
                done += 1
            if done < len(toks):  # a tokenisation the grammar does not take: undo, try the next
                matcher.rollback(done)
                if merge:
                    matcher.consume_many(prev)
                continue
            # after-boundary: hold back the last token when a longer allowed token extends it
            # (only a token wholly inside the forced text: the sampled one is never taken back)
            filled = False
            start_last = len(self.bytes_of(toks[:-1]))
            if start_last >= len(head) and (len(toks) > 1 or not merge):
                matcher.rollback(1)
                matcher.fill_bitmask(bitmask)
                if _allowed_among(bitmask.view(np.uint32), self.extensions(self.token_bytes[toks[-1]])):
                    toks = toks[:-1]
                    filled = True
                else:
                    matcher.consume(toks[-1])
            limit = room + (len(prev) if merge else 0)
            if len(toks) > limit:
                matcher.rollback(len(toks) - limit)
                toks = toks[:limit]
                filled = False
            if not toks or (merge and toks == prev):
                return None  # nothing new: the matcher is back where it was
            return toks, merge, filled
        return None


def _jumper_for(tokenizer, vocab):
    key = (id(tokenizer), vocab.fingerprint())
    hit = _JUMPERS.get(key)
    if hit is not None and hit[0] is tokenizer:
        return hit[1]
    return _remember(_JUMPERS, key, (tokenizer, JumpTokenizer(tokenizer, vocab)))[1]


def _utf8_prefix(data):
    """The longest prefix of ``data`` that decodes as UTF-8, decoded."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        return data[: e.start].decode("utf-8")


def _allowed_among(mask_u32, ids):
    if len(ids) == 0:
        return False
    words = mask_u32[ids >> 5]
    return bool(((words >> (ids & 31).astype(np.uint32)) & 1).any())


# ------------------------------------------------------------------ prompts

def _prompt_ids(tokenizer, prompt, system, chat_template):
    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    if isinstance(prompt, dict) or hasattr(prompt, "keys"):
        prompt = prompt["input_ids"]
    if torch is not None and isinstance(prompt, torch.Tensor):
        if prompt.dim() == 2:
            if prompt.shape[0] != 1:
                raise ConfigurationError(f"generate() decodes one sequence; got a batch of {prompt.shape[0]}")
            prompt = prompt[0]
        return [int(t) for t in prompt.tolist()]
    if isinstance(prompt, str):
        messages = ([{"role": "system", "content": system}] if system else []) + \
            [{"role": "user", "content": prompt}]
        if chat_template and getattr(tokenizer, "chat_template", None):
            enc = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                return_dict=True)
            return [int(t) for t in enc["input_ids"]]
        return [int(t) for t in tokenizer(prompt)["input_ids"]]
    if isinstance(prompt, (list, tuple)) and prompt and isinstance(prompt[0], dict):
        enc = tokenizer.apply_chat_template(list(prompt), add_generation_prompt=True, tokenize=True,
                                            return_dict=True)
        return [int(t) for t in enc["input_ids"]]
    if isinstance(prompt, (list, tuple)) and all(isinstance(t, (int, np.integer)) for t in prompt):
        return [int(t) for t in prompt]
    raise ConfigurationError(
        "prompt must be a string, a list of chat messages, a list of token ids or a [1, L] tensor")


# -------------------------------------------------------------------- model

class _Model:
    """The forward passes: prompt, then chunks of tokens, through one KV cache."""

    def __init__(self, model):
        import torch
        self.torch = torch
        self.model = model
        self.device = next(model.parameters()).device
        try:
            params = inspect.signature(model.forward).parameters
        except (TypeError, ValueError):
            params = {}
        self.keep = {"logits_to_keep": 1} if "logits_to_keep" in params else {}
        self.cache = None
        self.calls = 0
        self.seconds = 0.0

    def __call__(self, ids):
        torch = self.torch
        t0 = time.perf_counter()
        inp = torch.tensor([ids], dtype=torch.long, device=self.device)
        with torch.inference_mode():
            out = self.model(input_ids=inp, past_key_values=self.cache, use_cache=True, **self.keep)
        self.cache = out.past_key_values
        self.calls += 1
        logits = out.logits[0, -1].float()
        if logits.device.type != "cpu":
            logits = logits.to("cpu")
        self.seconds += time.perf_counter() - t0
        return logits


# --------------------------------------------------------------- the loop

def generate(model: Any, tokenizer: Any, grammar: str | Grammar | CompiledGrammar | None,
             prompt: Any, *, max_new_tokens: int, temperature: float = 0.0, seed: int | None = None,
             jump_forward: bool = True, system: str | None = None, chat_template: bool = True,
             repetition_penalty: float = 1.0, eos_token_id: int | list[int] | None = None) -> GenerateResult:
    """Generate one constrained output with jump-forward decoding.

    Parameters
    ----------
    model, tokenizer
        A Hugging Face causal LM and its tokenizer (the model's KV cache is used).
    grammar
        A builtin name (``"json"``, ``"sql"``, ``"javascript"``), a
        :class:`~cfgmask.Grammar`, a :class:`~cfgmask.CompiledGrammar` compiled
        against ``tokenizer``, or ``None`` for no constraint (the baseline).
        Names and grammars are compiled once and cached.
    prompt
        A user message (wrapped in the chat template when the tokenizer has
        one and ``chat_template`` is true, after ``system`` if given), a list
        of chat messages, a list of token ids, or a ``[1, L]`` tensor.
    max_new_tokens : int
        Budget of output tokens, forced ones included.
    temperature : float
        0 decodes greedily; otherwise samples from ``softmax(logits / T)``
        (no top-k/top-p).  ``seed`` seeds that sampling.
    jump_forward : bool
        Append forced text without sampling (default).  False samples every
        token under the same masks.
    repetition_penalty : float
        Transformers' repetition penalty over prompt and output (1 = off).
    eos_token_id : int or list of int, optional
        End ids for the unconstrained baseline (default: the tokenizer's).

    Returns a :class:`GenerateResult`.  Raises :class:`~cfgmask.DeadEnd` when
    no token can continue the output, and :class:`~cfgmask.ConfigurationError`
    before any work for a ``max_new_tokens`` that is not an int (``2.7``,
    ``"5"``, ``True``), a negative or non-finite ``temperature`` or
    ``repetition_penalty``, or a model whose logits are narrower than the
    tokenizer's vocabulary.
    """
    import torch
    from cfgmask.kernels import apply_token_bitmask_

    max_new_tokens, temperature, repetition_penalty = _check_args(max_new_tokens, temperature,
                                                                  repetition_penalty, seed)
    t_start = time.perf_counter()
    width = _logits_width(model)
    if grammar is not None and not _is_compiled(grammar) and len(tokenizer) > width:
        # else Vocabulary.from_hf sizes the masks for the tokenizer and the first fill
        # fails with "bitmask rows need at least N int32 words"
        raise ConfigurationError(
            f"the model's logits have {width} columns but the tokenizer has {len(tokenizer)} tokens: "
            "this tokenizer does not belong to this model")
    compiled = None if grammar is None else _compiled_for(grammar, tokenizer, width)
    ids = _prompt_ids(tokenizer, prompt, system, chat_template)
    if not ids:
        raise ConfigurationError("the prompt is empty")
    gen = None
    if temperature and temperature > 0:
        gen = torch.Generator().manual_seed(int(seed) if seed is not None else 0)

    fwd = _Model(model)
    logits = fwd(ids)
    prefill_s = time.perf_counter() - t_start
    fwd.calls = 0

    out = []            # output tokens
    pending = []        # output tokens not yet fed to the model (the tail of ``out``)
    seen = set(ids) if repetition_penalty != 1.0 else None
    sampled = forced = jumps = 0
    mask_s = 0.0
    stop = "max_new_tokens"

    if compiled is not None:
        m = compiled.matcher()
        vocab = compiled.vocab
        eos_ids = list(vocab.eos_token_ids)
        words = (width + 31) // 32
        host = np.zeros(words, dtype=np.int32)
        mask_t = torch.from_numpy(host)
        jumper = _jumper_for(tokenizer, vocab) if jump_forward else None
    else:
        m = None
        eos_ids = _end_ids(eos_token_id, tokenizer, model)
    mask_state = [None]  # matcher version the host mask was filled for
    jump_log = []        # (index in the output, tokens, merged with the sampled token)
    version = [0]

    def consume(t):
        m.consume(t)
        version[0] += 1

    def fill():
        if mask_state[0] != version[0]:
            m.fill_bitmask(host)
            mask_state[0] = version[0]

    def try_jump():
        nonlocal forced, jumps
        res = jumper.jump(m, pending, max_new_tokens - len(out), host)
        version[0] += 1
        mask_state[0] = None  # the scratch mask may have been overwritten
        if res is None:
            return
        toks, merged, filled = res
        if filled:  # it holds the mask of the matcher's state now
            mask_state[0] = version[0]
        if merged:
            del out[len(out) - len(pending):]
            forced += len(toks) - len(pending)
            pending[:] = toks
        else:
            forced += len(toks)
            pending.extend(toks)
        out.extend(toks)
        jumps += 1
        jump_log.append((len(out) - len(toks), list(toks), merged))

    while len(out) < max_new_tokens:
        if m is not None:
            if m.is_finished():
                stop = "eos"
                break
            if jump_forward:
                t0 = time.perf_counter()
                try_jump()
                eos_only = (bool(eos_ids) and len(out) < max_new_tokens and m.is_accepting()
                            and not m.next_bytes())
                if eos_only:  # the document is complete and nothing can follow: no model call
                    consume(eos_ids[0])
                    out.append(eos_ids[0])
                    forced += 1
                mask_s += time.perf_counter() - t0
                if eos_only:
                    stop = "eos"
                    break
                if len(out) >= max_new_tokens:
                    break
        if pending:
            if seen is not None:
                seen.update(pending)
            logits = fwd(pending)
            pending = []
        scores = logits
        if seen is not None:
            scores = _repetition_penalty(scores.clone(), seen, repetition_penalty)
        if m is not None:
            t0 = time.perf_counter()
            fill()
            if scores is logits:
                scores = scores.clone()
            apply_token_bitmask_(scores, mask_t[: (scores.shape[-1] + 31) // 32], kernel="auto")
            mask_s += time.perf_counter() - t0
        t = _choose(scores, temperature, gen)
        sampled += 1
        out.append(t)
        if m is not None:
            consume(t)
            if m.is_finished():
                stop = "eos"
                break
        elif t in eos_ids:
            stop = "eos"
            break
        pending = [t]

    if m is not None:
        data = m.prefix
        complete = m.is_finished()
        accepting = complete or m.is_accepting()
    else:
        body = out[:-1] if stop == "eos" else out
        data = tokenizer.decode(body, skip_special_tokens=True).encode("utf-8")
        complete = accepting = stop == "eos"
    total = time.perf_counter() - t_start
    return GenerateResult(
        text=data.decode("utf-8", errors="replace"), token_ids=out, forced_tokens=forced,
        model_calls=fwd.calls, sampled_tokens=sampled, complete=complete, accepting=accepting,
        stop_reason=stop, data=data, jumps=jumps, time_s=total, prefill_s=prefill_s, mask_s=mask_s,
        prompt_tokens=len(ids), stats={"model_s": fwd.seconds, "jump_log": jump_log})


def _is_compiled(grammar):
    return isinstance(grammar, CompiledGrammar)


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_real(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _check_args(max_new_tokens, temperature, repetition_penalty, seed):
    """The numeric arguments, checked before any work (no silent ``int(2.7)``, ``int("5")``, ``int(True)``)."""
    if not _is_int(max_new_tokens) or max_new_tokens < 0:
        raise ConfigurationError(f"max_new_tokens must be an int >= 0, not {max_new_tokens!r}")
    if temperature is None:
        temperature = 0.0
    if not _is_real(temperature) or not np.isfinite(temperature) or temperature < 0:
        raise ConfigurationError(f"temperature must be a finite number >= 0 (0: greedy), not {temperature!r}")
    if not _is_real(repetition_penalty) or not np.isfinite(repetition_penalty) or repetition_penalty <= 0:
        raise ConfigurationError(f"repetition_penalty must be a finite number > 0 (1: off), "
                                 f"not {repetition_penalty!r}")
    if seed is not None and (not _is_int(seed) or not -2 ** 63 <= seed < 2 ** 64):
        raise ConfigurationError(f"seed must be an int in [-2**63, 2**64) or None, not {seed!r}")
    return int(max_new_tokens), float(temperature), float(repetition_penalty)


def _end_ids(eos_token_id, tokenizer, model):
    if eos_token_id is None:
        eos_token_id = getattr(tokenizer, "eos_token_id", None)
        if eos_token_id is None:
            eos_token_id = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if eos_token_id is None:
        return []
    if isinstance(eos_token_id, (list, tuple, set)):
        return [int(e) for e in eos_token_id]
    return [int(eos_token_id)]


def _repetition_penalty(scores, seen, penalty):
    import torch
    idx = torch.tensor(sorted(seen), dtype=torch.long)
    idx = idx[idx < scores.shape[-1]]
    vals = scores[idx]
    scores[idx] = torch.where(vals < 0, vals * penalty, vals / penalty)
    return scores


def _choose(scores, temperature, gen):
    import torch
    if not temperature or temperature <= 0:
        # numpy argmax: torch's parallel reductions stall on a busy CPU (see cfgmask.kernels.rowwise)
        return int(np.argmax(scores.numpy()))
    probs = torch.softmax(scores / float(temperature), dim=-1)
    return int(torch.multinomial(probs, 1, generator=gen)[0])


# ``cfgmask.generate`` is both this module and the function: importing the
# submodule rebinds the package attribute to the module, so the module itself
# is made callable and ``cfgmask.generate(...)`` works whichever came first.
class _CallableModule(__import__("types").ModuleType):
    def __call__(self, *args, **kwargs):
        return generate(*args, **kwargs)


__import__("sys").modules[__name__].__class__ = _CallableModule
