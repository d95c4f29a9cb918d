#!/usr/bin/env python3
"""Slices off the critical path (issue 23, item 2): time to first mask and peak RSS.

Each run is a fresh process with an empty ``CFGMASK_CACHE_DIR`` (a private
temporary directory): SmolLM2's vocabulary is built from a token-byte dump
and prepared (not timed), then grammar file -> ``Grammar.from_file`` ->
``compile(slices=MODE)`` -> first ``fill_bitmask`` is timed.  MODE is
``eager`` (slices derived before compile returns: the old default), ``lazy``
(the default now: derived on a background thread after the first mask and
published when built) or ``off``.  Also reported: the compile's own
``slices_s``, the time until the lazy slices were published (waited for
after the first mask), and the peak RSS of the process (``ru_maxrss``) at the
end, slices built in every mode but ``off``.

``--before-src DIR`` adds the mode ``before``: the ``cfgmask`` package in DIR
(a copy of the tree before this change, its compiled extensions included)
with its default slices, in runs that alternate with the others.

Run: ``python -m benchmarks.run_slices_lazy [--repeat 3] [--modes eager,lazy,off] [--before-src DIR] [grammar ...]``
"""

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DUMP = os.path.join(tempfile.gettempdir(), "cfgmask-smollm2-token-bytes.pkl")


def _dump():
    if not os.path.exists(DUMP):
        from support import vocabs
        v = vocabs.smollm2_vocab()
        with open(DUMP + ".tmp", "wb") as f:
            pickle.dump((list(v.token_bytes), list(v.eos_token_ids), v.vocab_size), f)
        os.replace(DUMP + ".tmp", DUMP)


def worker(grammar, mode):
    import resource
    import time
    import cfgmask
    with open(DUMP, "rb") as f:
        tb, eos, vs = pickle.load(f)
    vocab = cfgmask.Vocabulary(tb, eos, vs)
    prep = vocab.prepared()
    prep.trie, prep.token_bytes_flat  # noqa: B018 - prepared, not timed
    prep.first_byte_sets()
    path = os.path.join(ROOT, "grammars", f"{grammar}.lark")
    # "lazy" by name: True is the default ("auto" since stop 35), lazy when this was written
    slices = {"eager": "eager", "lazy": "lazy", "off": False, "before": True}[mode]
    import cfgmask.engine.compiler
    if not hasattr(cfgmask.engine.compiler.CompiledGrammar, "wait_slices"):
        slices = bool(slices)    # a version before lazy slices: True was eager
    t0 = time.perf_counter()
    g = cfgmask.Grammar.from_file(path)
    c = cfgmask.compile(g, vocab, slices=slices)
    m = c.matcher()
    buf = c.allocate_bitmask()
    m.fill_bitmask(buf)
    t1 = time.perf_counter()
    published = None
    if mode == "lazy":
        c.wait_slices()
        published = time.perf_counter() - t0
    n = 0 if c.slices is None else c.slices.n
    print(json.dumps({"ttfm_s": t1 - t0, "compile_slices_s": c.timings["slices_s"], "published_s": published,
                      "n_slices": n, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("grammars", nargs="*", default=["json", "sql", "javascript"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--modes", default="eager,lazy,off")
    ap.add_argument("--worker", nargs=2)
    ap.add_argument("--before-src")
    a = ap.parse_args()
    if a.worker:
        return worker(*a.worker)
    _dump()
    modes = a.modes.split(",") + (["before"] if a.before_src else [])
    print("| grammar | mode | time to first mask (median) | slices published | peak RSS | slices |")
    print("|---|---|---|---|---|---|")
    for g in a.grammars:
        res = {m: [] for m in modes}
        for _ in range(a.repeat):
            for mode in modes:        # modes alternate, so load drifts hit each alike
                with tempfile.TemporaryDirectory() as d:
                    env = dict(os.environ, CFGMASK_CACHE_DIR=d)
                    if mode == "before":
                        env["PYTHONPATH"] = a.before_src
                    out = subprocess.run([sys.executable, __file__, "--worker", g, mode], env=env,
                                         capture_output=True, text=True, check=True)
                res[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
        for mode in modes:
            r = res[mode]
            med = lambda k: statistics.median(x[k] for x in r)  # noqa: E731
            pub = "" if mode != "lazy" else f"{med('published_s') * 1e3:.0f} ms"
            print(f"| {g} | {mode} | {med('ttfm_s') * 1e3:.0f} ms | {pub} | {med('peak_rss_mb'):.0f} MB "
                  f"| {r[0]['n_slices']} |", flush=True)


if __name__ == "__main__":
    main()
