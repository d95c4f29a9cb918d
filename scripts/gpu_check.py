#!/usr/bin/env python3
"""Check and time the grammar mask on a CUDA device (about 1-3 minutes).

    python -m scripts.gpu_check                 # on a CUDA machine, from the repository root
    python -m scripts.gpu_check --no-model      # skip the real-model generation timing
    python -m scripts.gpu_check --device cpu    # dry run of every code path on the CPU

What it does:

1. Random bitmasks: the CUDA torch kernel (and the Triton kernel when triton
   imports) must write bit-for-bit the same logits as the CPU kernels, for
   several batch sizes, vocabulary widths (including widths that are not a
   multiple of 32 and masks narrower than the logits), densities and dtypes.
2. Real masks: the JSON grammar compiled against the SmolLM2 tokenizer (or,
   when transformers/the tokenizer is unavailable, a synthetic 49,152-token
   byte vocabulary), replayed over JSON documents; every mask applied on CUDA
   must equal the CPU result, and the whole ``GrammarLogitsProcessor`` on CUDA
   (pinned buffer, non-blocking copy) must equal the CPU processor step by step.
3. Timing tables: the apply kernel alone (CUDA events, median of many calls)
   and the whole processor per decoding step (host wall time incl. the sync).
4. Optionally the real default model on CUDA: ms/token of ``generate``
   unconstrained vs constrained (the first run converts the GGUF once, ~1 min).

Exit status 0 when every comparison matched, 1 when one did not, 2 when the
environment cannot run the check (no CUDA, cfgmask not importable).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

T_START = time.perf_counter()
FAILURES = []

DOCS = [
    '{"name": "Whiskers", "age": 3, "colors": ["black", "white"], "indoor": true, "weight_kg": 4.5}',
    '[1, -2.5e+3, 0, 1E-7, "x", null, false, {"a": {"b": [[], {}]}}]',
    '{\n  "id": 12345,\n  "user": {"email": "a@b.co", "tags": ["α", "βγ", "日本語", "😀"]},\n'
    '  "escapes": "quote \\" backslash \\\\ tab \\t unicode \\u00e9"\n}',
    '"just a string with spaces and punctuation: ,;:{}[]"',
    '{"items": [{"sku": "A-1", "qty": 2, "price": 9.99}, {"sku": "B-22", "qty": 10, "price": 0.5}], '
    '"total": 24.98, "paid": false, "notes": null}',
    '  {"deep": [[[[[[[[1]]]]]]]], "k": "v"}',
]


def log(msg=""):
    print(msg, flush=True)


def elapsed():
    return time.perf_counter() - T_START


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        log(f"  MISMATCH: {what}")
    return ok


def table(head, rows):
    widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    fmt = lambda r: "| " + " | ".join(str(c).rjust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([fmt(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [fmt(r) for r in rows])


def import_cfgmask():
    try:
        import cfgmask  # noqa: F401
        from cfgmask._fast import _matcher  # noqa: F401
        return
    except ImportError as e:
        log(f"cfgmask runtime not importable ({e}); building it: python setup.py build_ext --inplace")
    r = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=ROOT,
                       capture_output=True, text=True)
    if r.returncode != 0:
        log(r.stdout[-2000:] + r.stderr[-2000:])
        log("cannot build the cfgmask runtime here")
        sys.exit(2)
    import importlib
    importlib.invalidate_caches()
    try:
        import cfgmask  # noqa: F401
        from cfgmask._fast import _matcher  # noqa: F401
    except ImportError as e:  # run by path, with no cfgmask installed: this tree is not on the path
        log(f"cfgmask still not importable ({e}): run this check from the repository root as "
            "python -m scripts.gpu_check")
        sys.exit(2)


def bits_equal(a, b):
    """Bit-for-bit equality of two float tensors (``-0.0`` vs ``0.0`` and NaN payloads count)."""
    import torch
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    a, b = a.detach().cpu().contiguous(), b.detach().cpu().contiguous()
    view = {torch.float32: torch.int32, torch.float64: torch.int64, torch.float16: torch.int16,
            torch.bfloat16: torch.int16}[a.dtype]
    return torch.equal(a.view(view), b.view(view))


def random_bitmask(B, W, density, gen):
    import torch
    bits = torch.rand(B, W * 32, generator=gen) < density
    words = (bits.view(B, W, 32).to(torch.int64) << torch.arange(32)).sum(-1)
    return ((words + 2 ** 31) % 2 ** 32 - 2 ** 31).to(torch.int32)


# ------------------------------------------------------------ 1. random masks

def check_random(dev, kernels):
    import torch
    from cfgmask.hf import apply_token_bitmask_
    log("\n== 1. random masks: device kernels vs CPU kernels ==")
    gen = torch.Generator().manual_seed(0)
    n = 0
    cases = [(1, 49152, None), (8, 49152, None), (32, 131072, None), (3, 1000, None), (2, 1100, 32),
             (4, 1000, 40), (1, 33, None), (64, 32000, None)]
    for B, V, W in cases:
        W = W or (V + 31) // 32
        for density in (0.0005, 0.5, 0.9995):
            bm = random_bitmask(B, W, density, gen)
            # guarantee every row has one allowed token within V
            bm[:, 0] |= 1
            for dtype in (torch.float32, torch.bfloat16, torch.float16):
                lg = torch.randn(B, V, generator=gen).to(dtype)
                ref = apply_token_bitmask_(lg.clone(), bm, kernel="torch")
                if dtype != torch.bfloat16:
                    check(bits_equal(apply_token_bitmask_(lg.clone(), bm, kernel="numpy"), ref),
                          f"cpu numpy vs cpu torch B={B} V={V} W={W} d={density} {dtype}")
                for k in kernels:
                    if k == "numpy" and dtype == torch.bfloat16:
                        continue
                    got = apply_token_bitmask_(lg.to(dev, copy=True), bm.to(dev), kernel=k)
                    check(bits_equal(got, ref), f"{dev} {k} vs cpu B={B} V={V} W={W} d={density} {dtype}")
                    n += 1
    # non-contiguous logits rows (a slice of a wider tensor) fall back correctly
    lg = torch.randn(4, 50000, generator=gen)
    bm = random_bitmask(4, 1563, 0.3, gen)
    ref = apply_token_bitmask_(lg[:, :50000].clone(), bm, kernel="torch")
    for k in kernels:
        big = torch.randn(4, 50016, generator=gen).to(dev)
        big[:, :50000] = lg.to(dev)
        view = big[:, :50000]
        apply_token_bitmask_(view, bm.to(dev), kernel=k)
        check(bits_equal(view, ref), f"{dev} {k} on a strided view")
        n += 1
    log(f"  {n} device comparisons, {len(FAILURES)} mismatches so far")


# -------------------------------------------------------------- 2. real masks

def load_vocab():
    """(Vocabulary, encode, name): SmolLM2 if it can be read, else a synthetic byte vocabulary."""
    import cfgmask
    try:
        import transformers
        from cfgmask import models
        gguf = models.default_gguf_path()
        d = models.converted_dir(gguf)
        if (d / "tokenizer.json").is_file():
            tok = transformers.AutoTokenizer.from_pretrained(str(d), local_files_only=True)
        else:
            tok = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                                             local_files_only=True)
        vocab = cfgmask.Vocabulary.from_hf(tok)
        return vocab, (lambda s: tok.encode(s, add_special_tokens=False)), "SmolLM2 (49,152)", tok
    except Exception as e:  # noqa: BLE001 - any reason falls back to the synthetic vocabulary
        log(f"  (SmolLM2 tokenizer unavailable: {type(e).__name__}: {str(e)[:120]}; using a synthetic vocabulary)")
    import random
    rng = random.Random(0)
    toks = [None, None] + [bytes([b]) for b in range(256)]
    alphabet = b'abcdefghijklmnopqrstuvwxyz0123456789 "{}[]:,.-_\n\t'
    seen = set(toks[2:])
    while len(toks) < 49152:
        t = bytes(rng.choice(alphabet) for _ in range(rng.randint(2, 8)))
        if t not in seen:
            seen.add(t)
            toks.append(t)
    vocab = cfgmask.Vocabulary(toks, eos_token_ids=[1])
    index = {t: i for i, t in enumerate(toks) if t}

    def encode(s):
        data, out, i = s.encode(), [], 0
        while i < len(data):
            for L in range(8, 0, -1):
                j = index.get(data[i:i + L])
                if j is not None:
                    out.append(j)
                    i += L
                    break
        return out
    return vocab, encode, "synthetic bytes (49,152)", None


def corpus_docs(limit):
    docs = list(DOCS)
    for base in (ROOT / "shared", ROOT.parent / "shared"):
        p = base / "corpora" / "json" / "jsonschemabench-valid-sample.jsonl"
        if p.is_file():
            with open(p, encoding="utf-8") as f:
                for i, line in enumerate(f):
                    if i % 50 == 0:
                        docs.append(json.loads(line)["doc"])
                    if len(docs) >= limit:
                        break
            break
    return docs[:limit]


def check_real(dev, kernels, compiled, encode, eos, docs):
    import numpy as np
    import torch
    from cfgmask.hf import GrammarLogitsProcessor, apply_token_bitmask_
    log("\n== 2. real masks (JSON grammar, replayed documents) ==")
    V = compiled.vocab.vocab_size
    masks = []
    for doc in docs:
        m = compiled.matcher()
        for t in encode(doc) + [eos]:
            bm = compiled.allocate_bitmask(1)
            m.fill_bitmask(bm, 0)
            masks.append(bm[0].copy())
            m.consume(t)
    masks = torch.from_numpy(np.stack(masks))
    gen = torch.Generator().manual_seed(1)
    n = 0
    for i in range(0, masks.shape[0], 64):
        bm = masks[i:i + 64].contiguous()
        lg = torch.randn(bm.shape[0], V, generator=gen)
        ref = apply_token_bitmask_(lg.clone(), bm, kernel="torch")
        check(bits_equal(apply_token_bitmask_(lg.clone(), bm, kernel="numpy"), ref), f"cpu numpy real masks {i}")
        for k in kernels:
            check(bits_equal(apply_token_bitmask_(lg.to(dev, copy=True), bm.to(dev), kernel=k), ref),
                  f"{dev} {k} real masks {i}")
            n += 1
    log(f"  {masks.shape[0]} real masks, {n} batched device comparisons")

    # the whole processor, batch of documents as rows (finished rows then get padding)
    seqs = [encode(d) + [eos] for d in docs[:8]]
    L = max(len(s) for s in seqs)
    seqs = [s + [eos] * (L - len(s)) for s in seqs]
    B = len(seqs)
    for k in kernels:
        pc = GrammarLogitsProcessor(compiled, batch_size=B, pad_token_id=eos, kernel="torch")
        pd = GrammarLogitsProcessor(compiled, batch_size=B, pad_token_id=eos, kernel=k)
        x = torch.full((B, 5), 7, dtype=torch.long)
        same = True
        for step in range(L):
            lg = torch.randn(B, V, generator=gen)
            a = pc(x, lg.clone())
            b = pd(x.to(dev), lg.to(dev))
            same &= bits_equal(a, b)
            x = torch.cat([x, torch.tensor([[s[step]] for s in seqs])], 1)
        check(same, f"processor on {dev} ({k}) vs processor on cpu, {B} rows x {L} steps")
        outs = pd.finish(x.to(dev))
        check(all(done for _, done in outs), f"processor on {dev} ({k}): every document completes")
    log(f"  processor: {B} rows x {L} steps compared for kernels {', '.join(kernels)}")
    return masks


# ------------------------------------------------------------------ 3. timing

def time_apply(dev, kernels, masks):
    import torch
    from cfgmask.hf import apply_token_bitmask_
    log("\n== 3a. apply kernel alone (median per call) ==")
    rows = []
    gen = torch.Generator().manual_seed(2)
    cuda = dev.type == "cuda"
    for V in (49152, 131072):
        W = (V + 31) // 32
        for B in (1, 8, 32, 128):
            bm = random_bitmask(B, W, 0.01, gen).to(dev)
            lg = torch.randn(B, V, generator=gen).to(dev)
            row = [V, B]
            for k in kernels:
                for _ in range(5):
                    apply_token_bitmask_(lg, bm, kernel=k)
                ts = []
                for _ in range(50 if cuda else 20):
                    if cuda:
                        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        e0.record()
                        apply_token_bitmask_(lg, bm, kernel=k)
                        e1.record()
                        e1.synchronize()
                        ts.append(e0.elapsed_time(e1) * 1e3)
                    else:
                        t0 = time.perf_counter()
                        apply_token_bitmask_(lg, bm, kernel=k)
                        ts.append((time.perf_counter() - t0) * 1e6)
                row.append(f"{statistics.median(ts):.1f}")
            rows.append(row)
    log(table(["V", "B"] + [f"{k} us" for k in kernels], rows))


def time_processor(dev, kernels, compiled, encode, eos, docs):
    import torch
    from cfgmask.hf import GrammarLogitsProcessor
    log("\n== 3b. whole processor per decoding step (host wall time, synced) ==")
    V = compiled.vocab.vocab_size
    seqs_all = [encode(d) + [eos] for d in docs]
    rows = []
    cuda = dev.type == "cuda"
    for B in (1, 8, 32):
        seqs = [seqs_all[i % len(seqs_all)] for i in range(B)]
        L = min(64, max(len(s) for s in seqs))
        seqs = [(s + [eos] * L)[:L] for s in seqs]
        for k in kernels:
            proc = GrammarLogitsProcessor(compiled, batch_size=B, pad_token_id=eos, kernel=k,
                                          check_rows=True)
            x = torch.full((B, 5), 7, dtype=torch.long, device=dev)
            base = torch.randn(B, V, device=dev)
            ts = []
            for step in range(L):
                lg = base.clone()
                if cuda:
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                proc(x, lg)
                if cuda:
                    torch.cuda.synchronize()
                ts.append((time.perf_counter() - t0) * 1e6)
                # a row that already consumed EOS is padded, as generate does
                col = [eos if proc.finished[r] else seqs[r][step] for r in range(B)]
                x = torch.cat([x, torch.tensor(col, device=dev).view(B, 1)], 1)
            st = proc.stats
            rows.append([B, k, L, f"{statistics.median(ts):.0f}", f"{statistics.mean(ts):.0f}",
                         f"{1e6 * st['fill_s'] / st['steps']:.0f}", f"{1e6 * st['apply_s'] / st['steps']:.0f}"])
    log(table(["B", "kernel", "steps", "median us/step", "mean us/step", "fill us", "copy+apply us"], rows))


# ------------------------------------------------------------ 4. real model

def time_model(dev, tokens=32):
    import torch
    import cfgmask
    from cfgmask import models
    from cfgmask.hf import GrammarLogitsProcessor
    log("\n== 4. default model (SmolLM2-135M-Instruct): generate, greedy ==")
    try:
        t0 = time.perf_counter()
        model, tok, info = models.load(device=dev, progress=lambda m: log(f"  {m}"))
        log(f"  loaded in {time.perf_counter() - t0:.1f} s (converted now: {info['converted']})")
    except Exception as e:  # noqa: BLE001
        log(f"  skipped: {type(e).__name__}: {e}")
        return
    grammar = cfgmask.Grammar.from_file(cfgmask.Grammar.builtin_path("json"), start="object")
    vocab = cfgmask.Vocabulary.from_hf(tok, vocab_size=model.config.vocab_size)
    compiled = cfgmask.compile(grammar, vocab)
    msgs = [{"role": "system", "content": "Reply with JSON only."},
            {"role": "user", "content": "Give me a JSON object describing a cat: name, age, colors, toys, bio."}]
    enc = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    enc = {k: v.to(dev) for k, v in enc.items()}
    res = {"unconstrained": [], "constrained": []}
    mask = []
    text = None
    for rnd in range(4):
        for lane in ("unconstrained", "constrained"):
            kw = {}
            proc = None
            if lane == "constrained":
                proc = GrammarLogitsProcessor(compiled, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
                kw["logits_processor"] = [proc]
            torch.cuda.synchronize() if dev.type == "cuda" else None
            t0 = time.perf_counter()
            out = model.generate(**enc, max_new_tokens=tokens, do_sample=False, pad_token_id=tok.pad_token_id,
                                 eos_token_id=tok.eos_token_id, **kw)
            torch.cuda.synchronize() if dev.type == "cuda" else None
            dt = time.perf_counter() - t0
            n = out.shape[1] - enc["input_ids"].shape[1]
            if rnd > 0:  # round 0 warms up
                res[lane].append(1e3 * dt / n)
                if proc is not None:
                    mask.append(1e6 * (proc.stats["fill_s"] + proc.stats["apply_s"]) / proc.stats["steps"])
            if proc is not None:
                text = proc.finish(out)[0][0].decode("utf-8", "replace")
    u, c = statistics.median(res["unconstrained"]), statistics.median(res["constrained"])
    log(table(["lane", "ms/token"], [["unconstrained", f"{u:.2f}"], ["constrained", f"{c:.2f}"]]))
    log(f"  overhead ratio {c / u:.3f}; processor {statistics.median(mask):.0f} us/step "
        f"({100 * statistics.median(mask) / (1e3 * u):.1f}% of an unconstrained step)")
    log(f"  constrained output ({tokens} tokens): {text!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu for a dry run")
    ap.add_argument("--no-model", action="store_true", help="skip the real-model timing")
    ap.add_argument("--docs", type=int, default=24, help="JSON documents to replay (default 24)")
    args = ap.parse_args()

    import torch
    log(f"torch {torch.__version__}, CUDA available: {torch.cuda.is_available()}")
    dev = torch.device(args.device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            log("no CUDA device: nothing to check (use --device cpu for a dry run)")
            return 2
        log(f"device: {torch.cuda.get_device_name(dev)}")
    import_cfgmask()
    from cfgmask.hf import triton_available
    kernels = ["torch"]
    if dev.type == "cuda":
        if triton_available():
            import triton
            log(f"triton {triton.__version__}")
            kernels.append("triton")
        else:
            log("triton not importable: checking the torch kernel only")
    else:
        kernels.append("numpy")

    check_random(dev, kernels)
    import cfgmask
    vocab, encode, vname, _ = load_vocab()
    t0 = time.perf_counter()
    compiled = cfgmask.compile(cfgmask.Grammar.builtin("json"), vocab)
    log(f"\nvocabulary: {vname}; JSON grammar compiled in {time.perf_counter() - t0:.2f} s")
    docs = corpus_docs(args.docs)
    eos = vocab.eos_token_ids[0]
    masks = check_real(dev, kernels, compiled, encode, eos, docs)
    time_apply(dev, kernels, masks)
    time_processor(dev, kernels, compiled, encode, eos, docs)
    if not args.no_model:
        if elapsed() > 150:
            log(f"\n(skipping the real-model timing: {elapsed():.0f} s used already)")
        else:
            time_model(dev)
    log(f"\n{'ALL MATCHED' if not FAILURES else f'{len(FAILURES)} MISMATCHES'} ({elapsed():.0f} s)")
    return 0 if not FAILURES else 1


if __name__ == "__main__":
    sys.exit(main())
