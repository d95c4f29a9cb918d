#!/usr/bin/env python3
"""Mask latency with slices eager, lazy, lazy-and-waited and off (issue 23, docs/compile.md).

One process per run (``CFGMASK_CACHE_DIR`` should be an empty directory):
SmolLM2, a fresh compile of GRAMMAR with the given MODE, then real documents
replayed token by token twice -- the first pass cold, the second warm --
timing every ``fill_bitmask``.  MODE: ``eager``, ``lazy`` (slices derived
in the background once the walk is hot), ``lazywait`` (lazy,
``wait_slices()`` after the first mask: a long-running process's steady
state) or ``off``.  Prints one JSON line (µs; ``before_*``: fills before the
lazy slices were published).

Run: ``for m in eager lazywait lazy off; do CFGMASK_CACHE_DIR=$(mktemp -d) python -m benchmarks.run_slices_lazy_masks sql $m; done``
"""
import sys, time, json, statistics, pickle
import numpy as np, cfgmask
from support import vocabs as V, corpora
grammar, mode = sys.argv[1], sys.argv[2]
tok = V.smollm2_tokenizer()
vocab = V.smollm2_vocab()
vocab.prepared().first_byte_sets()
if grammar == "sql":
    docs = corpora.spider_queries()[::50][:60]
elif grammar == "json":
    docs = [d for d in corpora.jsonschemabench_docs()[::97] if len(d) < 600][:40]
else:
    idx = corpora.js_corpus_index()
    small = sorted((r for r in idx if r["bytes"] < 6000), key=lambda r: r["sha256"])
    docs = [open(r["abspath"], encoding="utf-8").read()[:1500] for r in small[:30]]
ids = [tok.encode(d, add_special_tokens=False) for d in docs]
# "lazy" by name: True is the default ("auto"), which was lazy when this was written
slices = {"eager": "eager", "lazy": "lazy", "off": False, "lazywait": "lazy"}[mode]
t0 = time.perf_counter()
c = cfgmask.compile(cfgmask.Grammar.builtin(grammar), vocab, slices=slices)
buf = c.allocate_bitmask()
if mode == "lazywait":
    c.matcher().fill_bitmask(buf); c.wait_slices(); mode = "lazy"
lat, pub = [], None
for d in ids:
    m = c.matcher()
    for t in d:
        a = time.perf_counter()
        m.fill_bitmask(buf)
        b = time.perf_counter()
        ready = c.slices_ready() if mode == "lazy" else True
        if pub is None and ready:
            pub = len(lat)
        lat.append((b - a, ready))
        if not m.try_consume(t):
            break
cold_total = sum(x for x, _ in lat)
warm = []
for d in ids:
    m = c.matcher()
    for t in d:
        a = time.perf_counter(); m.fill_bitmask(buf); warm.append(time.perf_counter() - a)
        if not m.try_consume(t):
            break
before = [x for x, r in lat if not r]; after = [x for x, r in lat if r]
q = lambda xs, p: (sorted(xs)[min(len(xs) - 1, int(p * len(xs)))] * 1e6) if xs else float("nan")
print(json.dumps({"mode": mode, "n": len(lat), "published_at_fill": pub, "n_before": len(before),
    "before_p50_us": q(before, .5), "before_p99_us": q(before, .99), "before_max_us": q(before, 1),
    "after_p50_us": q(after, .5), "after_p99_us": q(after, .99), "all_p50": q([x for x,_ in lat], .5),
    "all_p99": q([x for x,_ in lat], .99), "total_s": sum(x for x,_ in lat), "warm_p50_us": q(warm, .5), "warm_p99_us": q(warm, .99), "warm_total_s": sum(warm), "published_s": (time.perf_counter()-t0)}))
