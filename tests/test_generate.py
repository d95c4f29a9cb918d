"""``cfgmask.generate``: jump-forward decoding against the step-by-step path.

A tiny random Llama (hidden size 64) with the real SmolLM2 tokenizer plays
the model: its choices are arbitrary, which is what these checks want, and
the grammars have bounded values so that every path ends.  Oracles: every
output is replayed token by token into a fresh matcher (each token must be
allowed by that step's mask), complete documents must parse with Lark, and
forced text must be tokenised exactly as the tokenizer itself writes it.
The real default model runs in one ``slow`` test.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import cfgmask  # noqa: E402
from cfgmask import ConfigurationError, Grammar, Vocabulary  # noqa: E402
from cfgmask.generate import JumpTokenizer  # noqa: E402

# fixed keys and bounded values: any model finishes within a bounded number of tokens
FIXED = r'''
start: "{\"id\": " INT ", \"name\": " TAG ", \"active\": " BOOL ", \"tags\": [" TAG (", " TAG)~0..2 "]}"
INT: /[0-9]{1,3}/
BOOL: "true" | "false"
TAG: /"[a-z]{1,6}"/
'''
ONE_DOC = '{"name": "cfgmask", "tags": ["a", "b"], "n": 12}'
ONE = 'start: "' + ONE_DOC.replace('"', '\\"') + '"'


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
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
def model(tok):
    cfg = transformers.LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=4, intermediate_size=128, vocab_size=len(tok),
                                   max_position_embeddings=512, bos_token_id=1, eos_token_id=2,
                                   pad_token_id=2, tie_word_embeddings=False)
    torch.manual_seed(0)
    m = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # spread the logits: greedy choices are then not near-ties
        m.lm_head.weight.mul_(50.0)
    return m


@pytest.fixture(scope="module")
def compiled(tok, model):
    vocab = Vocabulary.from_hf(tok, vocab_size=model.config.vocab_size)
    return {name: cfgmask.compile(Grammar.from_lark(src), vocab) for name, src in (("fixed", FIXED), ("one", ONE))}


def replay(compiled, res):
    """Every token allowed by a fresh matcher's mask at its step; returns the matcher."""
    m = compiled.matcher()
    for i, t in enumerate(res.token_ids):
        assert t in set(m.allowed_tokens().tolist()), f"token {i} ({t}) not allowed after {m.prefix!r}"
        m.consume(t)
    assert m.prefix == res.data
    return m


def lark_parse(src, text):
    import lark
    lark.Lark(src, parser="earley", lexer="dynamic").parse(text)


def test_single_document_is_forced_without_model_calls(model, tok, compiled):
    jf = cfgmask.generate(model, tok, compiled["one"], "Go.", max_new_tokens=64)
    assert jf.text == ONE_DOC and jf.complete and jf.stop_reason == "eos"
    assert jf.model_calls == 0 and jf.sampled_tokens == 0
    assert jf.forced_tokens == len(jf.token_ids)
    # the forced text is the tokenizer's own tokenisation, then EOS
    assert jf.token_ids[:-1] == tok(ONE_DOC, add_special_tokens=False)["input_ids"]
    assert jf.token_ids[-1] in compiled["one"].vocab.eos_token_ids
    replay(compiled["one"], jf)
    step = cfgmask.generate(model, tok, compiled["one"], "Go.", max_new_tokens=64, jump_forward=False)
    assert step.text == ONE_DOC and step.complete
    assert step.forced_tokens == 0 and step.model_calls == len(step.token_ids) - 1
    replay(compiled["one"], step)


@pytest.mark.parametrize("prompt", ["Write it:", "Here is a user record", "Go."])
def test_forced_and_step_by_step_paths_yield_valid_documents(model, tok, compiled, prompt):
    c = compiled["fixed"]
    jf = cfgmask.generate(model, tok, c, prompt, max_new_tokens=80)
    step = cfgmask.generate(model, tok, c, prompt, max_new_tokens=80, jump_forward=False)
    for res in (jf, step):
        assert res.complete, f"bounded grammar not completed: {res.text!r}"
        m = replay(c, res)
        assert m.is_finished()
        lark_parse(FIXED, res.text)
    assert jf.forced_tokens > 0 and jf.model_calls < len(jf.token_ids) - 1
    assert jf.model_calls + jf.forced_tokens <= len(jf.token_ids)
    assert step.forced_tokens == 0 and step.model_calls == len(step.token_ids) - 1
    # every jump's tokens are the tokenizer's tokenisation of their text
    for start, toks, merged in jf.stats["jump_log"]:
        text = b"".join(c.vocab.token_bytes[t] for t in toks).decode("utf-8")
        assert toks == tok(text, add_special_tokens=False)["input_ids"], (text, toks)


def test_sampling_is_seeded_and_valid(model, tok, compiled):
    c = compiled["fixed"]
    a = cfgmask.generate(model, tok, c, "Go.", max_new_tokens=80, temperature=1.0, seed=7)
    b = cfgmask.generate(model, tok, c, "Go.", max_new_tokens=80, temperature=1.0, seed=7)
    assert a.token_ids == b.token_ids
    for res in (a, b):
        replay(c, res)
        if res.complete:
            lark_parse(FIXED, res.text)


def test_budget_counts_forced_tokens(model, tok, compiled):
    res = cfgmask.generate(model, tok, compiled["one"], "Go.", max_new_tokens=3)
    assert len(res.token_ids) == 3 and res.stop_reason == "max_new_tokens" and not res.complete
    assert ONE_DOC.encode().startswith(res.data)
    replay(compiled["one"], res)


def test_jump_retokenises_across_the_sampled_token(tok, compiled):
    """``{`` sampled, then ``"id": `` forced: re-encoded together as the tokenizer writes it."""
    c = compiled["fixed"]
    vocab = c.vocab
    jt = JumpTokenizer(tok, vocab)
    brace = tok("{", add_special_tokens=False)["input_ids"]
    assert len(brace) == 1
    m = c.matcher()
    m.consume(brace[0])
    buf = c.allocate_bitmask(1)[0]
    toks, merged, _ = jt.jump(m, brace, 50, buf)
    text = jt.bytes_of(toks).decode()
    assert merged and text.startswith('{"')
    assert toks == tok(text, add_special_tokens=False)["input_ids"]
    assert m.prefix == text.encode()
    assert '{"id": '.startswith(text)
    if text != '{"id": ':  # the last forced token was held back: a longer allowed token extends it
        full = tok('{"id": ', add_special_tokens=False)["input_ids"]
        held = vocab.token_bytes[full[-1]]
        ext = [t for t in m.allowed_tokens().tolist()
               if vocab.token_bytes[t] and vocab.token_bytes[t].startswith(held) and vocab.token_bytes[t] != held]
        assert ext, "held back although nothing extends the last token"


def test_hold_back_when_a_longer_token_is_allowed(tok):
    """`` "`` before a string that may be empty: `` ""`` is allowed, so `` "`` is not forced."""
    vocab = Vocabulary.from_hf(tok)
    g = Grammar.from_lark(r'start: "[1," " " /"[a-z]*"/ "]"')
    c = cfgmask.compile(g, vocab)
    ids = tok(' ""', add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        pytest.skip('this tokenizer has no single \' ""\' token')
    jt = JumpTokenizer(tok, vocab)
    m = c.matcher()
    buf = c.allocate_bitmask(1)[0]
    res = jt.jump(m, [], 50, buf)
    assert res is not None
    toks, merged, filled = res
    text = jt.bytes_of(toks).decode()
    assert text == "[1," and not merged and filled  # ' "' held back, the mask is ready
    assert ids[0] in set(m.allowed_tokens().tolist())


def test_extensions_index(tok):
    vocab = Vocabulary.from_hf(tok)
    jt = JumpTokenizer(tok, vocab)
    for probe in (b'"', b" ", b"na", b"\xff", b"zzzzzzzz"):
        want = sorted(i for i, tb in enumerate(vocab.token_bytes)
                      if tb is not None and tb.startswith(probe) and tb != probe)
        assert sorted(jt.extensions(probe).tolist()) == want


def test_inputs_and_errors(model, tok, compiled):
    c = compiled["one"]
    ids = tok("Go.", add_special_tokens=False)["input_ids"]
    a = cfgmask.generate(model, tok, c, ids, max_new_tokens=8)
    b = cfgmask.generate(model, tok, c, torch.tensor([ids]), max_new_tokens=8)
    assert a.token_ids == b.token_ids
    g = Grammar.from_lark(ONE)
    r1 = cfgmask.generate(model, tok, g, "Go.", max_new_tokens=64)
    r2 = cfgmask.generate(model, tok, g, "Go.", max_new_tokens=64)
    assert r1.text == r2.text == ONE_DOC
    with pytest.raises(ConfigurationError):
        cfgmask.generate(model, tok, 42, "Go.", max_new_tokens=4)
    with pytest.raises(ConfigurationError):
        cfgmask.generate(model, tok, "not-a-builtin", "Go.", max_new_tokens=4)
    with pytest.raises(ConfigurationError):
        cfgmask.generate(model, tok, c, [], max_new_tokens=4)
    small = cfgmask.compile(g, Vocabulary([b"a"] * (model.config.vocab_size + 5) + [None], eos_token_ids=[0]))
    with pytest.raises(ConfigurationError, match="columns"):
        cfgmask.generate(model, tok, small, "Go.", max_new_tokens=4)


def test_unconstrained_baseline_runs_the_same_loop(model, tok):
    res = cfgmask.generate(model, tok, None, "Go.", max_new_tokens=6)
    assert len(res.token_ids) <= 6 and res.forced_tokens == 0
    assert res.model_calls == len(res.token_ids) - 1
    # same tokens as transformers' own greedy generate
    enc = tok.apply_chat_template([{"role": "user", "content": "Go."}], add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)
    out = model.generate(**enc, max_new_tokens=6, do_sample=False, pad_token_id=2, eos_token_id=2)
    assert out[0, enc["input_ids"].shape[1]:].tolist() == res.token_ids


@pytest.mark.slow
def test_default_model_fixed_key_json():
    """The real default model, greedy: jump-forward and step-by-step both give parseable JSON."""
    import json
    from cfgmask import models
    try:
        lm, tk, _ = models.load(progress=None)
    except ConfigurationError as e:
        pytest.skip(str(e))
    g = Grammar.from_lark(r'''
start: "{\"name\": " STRING ", \"age\": " INT ", \"is_cat\": " BOOL "}"
STRING: /"[A-Za-z ]{1,20}"/
INT: /[0-9]{1,2}/
BOOL: "true" | "false"
''')
    prompt = "Give me a JSON object describing a cat: name, age and whether it is a cat."
    system = "You are a helpful assistant. Reply with JSON only."
    for jump in (True, False):
        res = cfgmask.generate(lm, tk, g, prompt, system=system, max_new_tokens=48, jump_forward=jump)
        assert res.complete, res.text
        doc = json.loads(res.text)
        assert set(doc) == {"name", "age", "is_cat"}
        if jump:
            assert res.forced_tokens > 0 and res.model_calls < len(res.token_ids)


# ------------------------------------------------ argument checks (issue 26)

@pytest.mark.parametrize("value", [2.7, "5", True, None, -1])
def test_max_new_tokens_must_be_an_int(model, tok, compiled, value):
    with pytest.raises(ConfigurationError, match="max_new_tokens"):
        cfgmask.generate(model, tok, compiled["one"], "Go.", max_new_tokens=value)


def test_max_new_tokens_numpy_int_is_an_int(model, tok, compiled):
    res = cfgmask.generate(model, tok, compiled["one"], "Go.", max_new_tokens=np.int64(64))
    assert res.text == ONE_DOC


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -0.5, "1", True])
def test_bad_temperature(model, tok, compiled, value):
    with pytest.raises(ConfigurationError, match="temperature"):
        cfgmask.generate(model, tok, compiled["one"], "Go.", max_new_tokens=4, temperature=value)


@pytest.mark.parametrize("value", [1.5, "3", 2 ** 64])
def test_bad_seed(model, tok, compiled, value):
    with pytest.raises(ConfigurationError, match="seed"):
        cfgmask.generate(model, tok, compiled["one"], "Go.", max_new_tokens=4, temperature=1.0, seed=value)


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf")])
def test_bad_repetition_penalty(model, tok, compiled, value):
    with pytest.raises(ConfigurationError, match="repetition_penalty"):
        cfgmask.generate(model, tok, compiled["one"], "Go.", max_new_tokens=4, repetition_penalty=value)


def test_logits_narrower_than_the_tokenizer(tok):
    """A model whose logits have fewer columns than the tokenizer has tokens: the width message,
    not the bitmask-words one (for a name, a Grammar and a CompiledGrammar alike)."""
    cfg = transformers.LlamaConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                   num_key_value_heads=2, intermediate_size=32, vocab_size=len(tok) - 100,
                                   max_position_embeddings=64, bos_token_id=1, eos_token_id=2, pad_token_id=2)
    narrow = transformers.LlamaForCausalLM(cfg).eval()
    for grammar in ("json", Grammar.from_lark(ONE)):
        with pytest.raises(ConfigurationError, match=f"{len(tok) - 100} columns") as e:
            cfgmask.generate(narrow, tok, grammar, "Go.", max_new_tokens=4)
        assert "int32 words" not in str(e.value) and str(len(tok)) in str(e.value)
