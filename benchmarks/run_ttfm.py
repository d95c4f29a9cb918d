#!/usr/bin/env python3
"""Compile speed: ``cfgmask check``, time to first mask, vocabulary preparation, trie scaling.

Tables for docs/compile.md (Markdown on stdout, raw numbers with ``--json``):

1. ``cfgmask check`` for json, sql, javascript and Lark's own ``lark.lark``:
   the load / automata / total times the command prints, with an empty
   cache directory (first-ever run), with the cache it left (every later
   run), and -- with ``--baseline-src DIR``, a source tree of an older
   cfgmask -- that version, which has no caches.
2. Time to first mask (grammar text -> ``Grammar.from_file`` -> ``compile``
   -> first ``fill_bitmask``) on an already prepared vocabulary, each run in
   a fresh process: cache miss (grammar and lexer caches empty: the
   first-ever compile of that grammar) and cache hit.  Peers, each also the
   first compile in a fresh process, alternating with cfgmask's runs:
   llguidance (``grammar_from`` + ``LLMatcher`` + first fill, the same
   grammar text) and Lark alone (``lark.Lark(text)``).  Module imports are
   outside every timing; importing Lark, which only a miss pays, is listed.
3. regex -> DFA for every terminal of each grammar, this version against the
   ``--baseline-src`` version's ``regex.py`` in the same process (the DFAs
   are checked to be identical).
4. Vocabulary preparation in a fresh process: fingerprint, token trie and
   subtree byte sets, built (empty cache) or loaded from the disk cache.
6. The cache's payload checksum, crc32 against sha256.
5. ``TokTrie.build`` on the real vocabularies against the ``--baseline-src``
   version's ``trie.py`` (same arrays checked), and the build time for one huge
   token (issue 12, finding 11a), as a ratio to
   building SmolLM2's whole trie in the same run.

Every worker runs in its own process with ``CFGMASK_CACHE_DIR`` pointing to a
private temporary directory, so nothing touches ``~/.cache/cfgmask``.  The
vocabularies are passed to workers as token-byte dumps (loading SmolLM2's
tokenizer with transformers takes ~10 s, which is no part of any timing).
Timings on a shared machine are noisy: each figure is the median of
``--repeat`` runs (miss and hit runs alternate), and the ratios to the peers
measured in the same process are the numbers to compare.

Run: ``python -m benchmarks.run_ttfm`` (``--help`` for options).
"""

import argparse
import gc
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LLG_PREFIX = '%llguidance {"allow_initial_skip": true}\n'
GRAMMARS = ("json", "sql", "javascript")


def grammar_path(name):
    if name == "lark":
        import importlib.util
        spec = importlib.util.find_spec("lark")
        return os.path.join(list(spec.submodule_search_locations)[0], "grammars", "lark.lark")
    return os.path.join(ROOT, "grammars", f"{name}.lark")


# ------------------------------------------------------------ vocab dumps

def dump_vocab(name, path):
    """Write the token bytes of tokenizer ``name`` to ``path`` (for the workers)."""
    import numpy as np
    from support import vocabs
    v = {"smollm2": vocabs.smollm2_vocab, "tekken": vocabs.tekken_vocab, "sp": vocabs.sp_vocab}[name]()
    tb = v.token_bytes
    lens = np.array([-1 if t is None else len(t) for t in tb], dtype=np.int64)
    np.savez(path, flat=np.frombuffer(b"".join(t for t in tb if t), dtype=np.uint8), lens=lens,
             eos=np.array(v.eos_token_ids, dtype=np.int64), vocab_size=np.array(v.vocab_size))


def load_dump(path):
    import numpy as np
    from cfgmask.engine.vocab import Vocabulary
    d = np.load(path)
    flat = d["flat"].tobytes()
    out, pos = [], 0
    for n in d["lens"].tolist():
        if n < 0:
            out.append(None)
        else:
            out.append(flat[pos:pos + n])
            pos += n
    return out, [int(e) for e in d["eos"]], int(d["vocab_size"])


def llg_tokenizer(token_bytes, eos):
    import llguidance
    tokens = [t if t is not None else f"<special_{i}>".encode() for i, t in enumerate(token_bytes)]
    by_bytes = {t: i for i, t in enumerate(token_bytes) if t is not None}
    longest = max(len(t) for t in by_bytes)

    class W:
        eos_token_id = eos[0] if eos else 0
        bos_token_id = None
        special_token_ids = [i for i, t in enumerate(token_bytes) if t is None]

        def __init__(self):
            self.tokens = tokens

        def __call__(self, s):  # greedy longest match; llguidance only uses it for forced text
            if isinstance(s, str):
                s = s.encode("utf-8")
            ids, i = [], 0
            while i < len(s):
                for k in range(min(longest, len(s) - i), 0, -1):
                    t = by_bytes.get(s[i:i + k])
                    if t is not None:
                        ids.append(t)
                        i += k
                        break
                else:
                    i += 1
            return ids

    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(W()))


# ---------------------------------------------------------------- workers

def worker_ttfm(args):
    """One grammar, one process: cfgmask ttfm by phase, then the peers."""
    import numpy as np
    t_import = time.perf_counter()
    import cfgmask
    import cfgmask.engine.compiler  # noqa: F401 - module imports are a once-per-process cost,
    import cfgmask.grammar   # noqa: F401   reported apart from the timings below
    try:
        import cfgmask.engine.slices    # noqa: F401
    except ImportError:          # an older cfgmask (--baseline-src) has no slices
        pass
    from cfgmask.engine.vocab import Vocabulary
    import_s = time.perf_counter() - t_import
    lark_import_s = None
    if args.get("case") == "miss":  # a miss imports Lark; time that apart too
        t_import = time.perf_counter()
        import lark  # noqa: F401
        import lark.load_grammar  # noqa: F401
        lark_import_s = time.perf_counter() - t_import
    tb, eos, vs = load_dump(args["dump"])
    vocab = Vocabulary(tb, eos, vs)
    if hasattr(vocab, "prepared"):
        prep = vocab.prepared()
        prep.trie, prep.token_bytes_flat  # noqa: B018 - the prepared vocabulary, not timed
        if hasattr(vocab, "prepare"):   # trie, first bytes, standard slices
            vocab.prepare()
        elif hasattr(prep, "first_byte_sets"):
            prep.first_byte_sets()
        parts = prep.loaded()
    else:  # an older cfgmask (--baseline-src): its trie, cached on the Vocabulary
        vocab.trie()
        parts = {}
    path = grammar_path(args["grammar"])
    out = {"import_s": import_s, "vocab_parts": parts, "cfgmask": os.path.dirname(cfgmask.__file__)}
    if lark_import_s is not None:
        out["lark_import_s"] = lark_import_s
    gc.collect()  # every engine starts without a pending collection of the imports' garbage
    c0 = time.process_time()
    t0 = time.perf_counter()
    g = cfgmask.Grammar.from_file(path)
    t1 = time.perf_counter()
    c = cfgmask.compile(g, vocab)
    t2 = time.perf_counter()
    m = c.matcher()
    bm = c.allocate_bitmask()
    m.fill_bitmask(bm)
    t3 = time.perf_counter()
    out["ttfm_cpu_s"] = time.process_time() - c0
    out.update(grammar_s=t1 - t0, lexer_s=c.timings["automata_s"],
               compile_rest_s=(t2 - t1) - c.timings["automata_s"], first_mask_s=t3 - t2,
               ttfm_s=t3 - t0, lexer_source=getattr(c.lexer_spec, "source", "n/a"),
               allowed=int(np.unpackbits(bm.view(np.uint8)).sum()))
    return out


def worker_peers(args):
    """The peers' first compile of the grammar in a fresh process (imports untimed)."""
    import lark
    import lark.load_grammar  # noqa: F401
    path = grammar_path(args["grammar"])
    text = open(path, encoding="utf-8").read()
    out = {}
    gc.collect()
    t0 = time.perf_counter()
    lark.Lark(text, start="start", parser="earley", lexer="dynamic",
              import_paths=[os.path.dirname(path)], source_path=path)
    out["lark_s"] = time.perf_counter() - t0
    if args.get("llguidance"):
        try:
            import llguidance
            import llguidance.numpy
        except ImportError as e:
            out["llguidance_error"] = str(e)
            return out
        tb, eos, _ = load_dump(args["dump"])
        lltok = llg_tokenizer(tb, eos)
        gc.collect()
        t0 = time.perf_counter()
        grammar = llguidance.grammar_from("lark", LLG_PREFIX + text)
        lm = llguidance.LLMatcher(lltok, grammar, log_level=0)
        lbm = llguidance.numpy.allocate_token_bitmask(1, lltok.vocab_size)
        llguidance.numpy.fill_next_token_bitmask(lm, lbm)
        out["llguidance_s"] = time.perf_counter() - t0
        if lm.is_error():
            out["llguidance_error"] = lm.get_error()
    return out


def worker_prep(args):
    """Vocabulary preparation in a fresh process."""
    t0 = time.perf_counter()
    from cfgmask.engine.vocab import Vocabulary
    tb, eos, vs = load_dump(args["dump"])
    t1 = time.perf_counter()
    gc.collect()
    t1 = time.perf_counter()
    vocab = Vocabulary(tb, eos, vs)
    t2 = time.perf_counter()
    vocab.fingerprint()
    t3 = time.perf_counter()
    prep = vocab.prepared()
    prep.trie
    t4 = time.perf_counter()
    prep.part("subtree_bytes")
    t5 = time.perf_counter()
    return {"load_dump_s": t1 - t0, "vocabulary_s": t2 - t1, "fingerprint_s": t3 - t2,
            "trie_s": t4 - t3, "subtree_bytes_s": t5 - t4, "parts": prep.loaded()}


def run_worker(task, args, cache_dir, extra_env=None, src=None):
    # the worker runs by path: its cfgmask comes from the first PYTHONPATH entry
    # that has one, ``src`` (an older tree) before this tree
    env = dict(os.environ, CFGMASK_CACHE_DIR=cache_dir,
               PYTHONPATH=os.pathsep.join([src, ROOT] if src else [ROOT]))
    env.pop("CFGMASK_CACHE", None)
    env.update(extra_env or {})
    p = subprocess.run([sys.executable, __file__, "--worker", task, json.dumps(args)],
                       capture_output=True, text=True, env=env, cwd=ROOT)
    if p.returncode != 0:
        raise RuntimeError(f"worker {task} {args} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- sections

_CHECK_TIME = re.compile(r"load ([\d.]+) ms, automata ([\d.]+) ms, total ([\d.]+) ms")


def run_check(name, cache_dir, src=None):
    env = dict(os.environ, CFGMASK_CACHE_DIR=cache_dir)
    env.pop("CFGMASK_CACHE", None)
    env["PYTHONPATH"] = src or ROOT
    import resource
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "cfgmask", "check", grammar_path(name)],
                       capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    m = _CHECK_TIME.search(p.stdout)
    if p.returncode != 0 or m is None:
        raise RuntimeError(f"cfgmask check {name} failed ({src or 'this tree'}):\n{p.stdout[-500:]}"
                           f"{p.stderr[-2000:]}")
    load, automata, total = (float(x) for x in m.groups())
    return {"load_ms": load, "automata_ms": automata, "total_ms": total, "process_s": wall,
            "process_cpu_s": cpu}


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def section_check(grammars, repeat, baseline, tmp, log):
    rows = {}
    for name in grammars:
        runs = {"miss": [], "hit": [], "baseline": []}
        for r in range(repeat):
            d = os.path.join(tmp, f"check-{name}-{r}")
            runs["miss"].append(run_check(name, d))
            runs["hit"].append(run_check(name, d))
            if baseline:
                runs["baseline"].append(run_check(name, os.path.join(tmp, "unused"), baseline))
        rows[name] = {k: {f: med([x[f] for x in v]) for f in v[0]} for k, v in runs.items() if v}
        log(f"check {name}: {rows[name]}")
    return rows


def section_ttfm(tokenizers, grammars, repeat, dumps, tmp, llg, log, baseline=None):
    rows = {}
    for tname in tokenizers:
        base = os.path.join(tmp, f"vocab-{tname}")
        run_worker("prep", {"dump": dumps[tname]}, base)  # the prepared vocabulary, on disk
        for g in grammars:
            miss, hit, peers, before = [], [], [], []
            for r in range(repeat):
                if baseline:
                    before.append(run_worker("ttfm", {"dump": dumps[tname], "grammar": g,
                                                      "case": "miss"},
                                             os.path.join(tmp, f"before-{tname}-{g}-{r}"),
                                             src=baseline))
                d = os.path.join(tmp, f"ttfm-{tname}-{g}-{r}")
                shutil.copytree(base, d)
                miss.append(run_worker("ttfm", {"dump": dumps[tname], "grammar": g,
                                                "case": "miss"}, d))
                peers.append(run_worker("peers", {"dump": dumps[tname], "grammar": g,
                                                  "llguidance": llg}, d))
                hit.append(run_worker("ttfm", {"dump": dumps[tname], "grammar": g,
                                               "case": "hit"}, d))
            for x, p in zip(miss + hit + before, peers * 3):
                x.update(p)
            assert all(x["cfgmask"].startswith(baseline) for x in before), before
            assert all(x["cfgmask"].startswith(ROOT) for x in miss + hit), miss
            assert all(x["lexer_source"] == "built" for x in miss), miss
            # tables that build in less than cache.PERSIST_ABOVE_S stay in memory only
            # (json.lark's, since the compiled regex kernels): a hit rebuilds them
            assert all(x["lexer_source"] in ("disk", "built") for x in hit), hit
            assert len({x["allowed"] for x in miss + hit}) == 1
            rows[(tname, g)] = {case: {k: med([x[k] for x in xs]) for k in xs[0] if k.endswith("_s")}
                                for case, xs in (("miss", miss), ("hit", hit), ("before", before))
                                if xs}
            for x in miss + hit:
                if "llguidance_error" in x:
                    rows[(tname, g)]["llguidance_error"] = x["llguidance_error"]
            log(f"ttfm {tname} {g}: miss {1e3 * rows[(tname, g)]['miss']['ttfm_s']:.1f} ms, "
                f"hit {1e3 * rows[(tname, g)]['hit']['ttfm_s']:.1f} ms")
    return rows


def section_prep(tokenizers, repeat, dumps, tmp, log):
    rows = {}
    for tname in tokenizers:
        cold, warm = [], []
        for r in range(repeat):
            d = os.path.join(tmp, f"prep-{tname}-{r}")
            cold.append(run_worker("prep", {"dump": dumps[tname]}, d))
            warm.append(run_worker("prep", {"dump": dumps[tname]}, d))
        assert all(x["parts"]["trie"][0] == "built" for x in cold)
        assert all(x["parts"]["trie"][0] == "disk" for x in warm)
        keys = [k for k in cold[0] if k.endswith("_s")]
        rows[tname] = {"built": {k: med([x[k] for x in cold]) for k in keys},
                       "disk": {k: med([x[k] for x in warm]) for k in keys}}
        log(f"prep {tname}: {rows[tname]}")
    return rows


def section_regex(grammars, repeat, baseline, log):
    """regex -> DFA per grammar, this version vs ``baseline``'s regex.py, same process."""
    import importlib.util
    import cfgmask
    from cfgmask import automata as regex
    old = None
    if baseline:
        spec = importlib.util.spec_from_file_location(
            "cfgmask._baseline_regex", os.path.join(baseline, "cfgmask", "regex.py"))
        old = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(old)  # its relative imports resolve to this cfgmask
    rows = {}
    for name in grammars:
        g = cfgmask.Grammar.from_file(grammar_path(name))
        pats = list(zip(g.terminal_names, g.terminal_patterns))
        new_t, old_t = {}, {}
        for _ in range(max(repeat, 3)):
            for n, p in pats:
                regex.memo.DFA_MEMO.clear()
                t0 = time.process_time()
                a = regex.compile_regex(p, n)
                new_t[n] = min(new_t.get(n, 1e9), time.process_time() - t0)
                if old is not None:
                    t0 = time.process_time()
                    b = old.compile_regex(p, n)
                    old_t[n] = min(old_t.get(n, 1e9), time.process_time() - t0)
                    assert (a.trans.shape == b.trans.shape and (a.trans == b.trans).all()
                            and a.follow_forbidden == b.follow_forbidden), n
        worst = max(new_t, key=new_t.get)
        rows[name] = {"terminals": len(pats), "new_s": sum(new_t.values()),
                      "old_s": sum(old_t.values()) if old_t else None,
                      "worst": worst, "worst_new_s": new_t[worst],
                      "worst_old_s": old_t.get(worst)}
        r = rows[name]
        log(f"regex {name}: {r['terminals']} terminals in {r['new_s'] * 1e3:.1f} ms, slowest "
            f"{r['worst']} ({r['worst_new_s'] * 1e3:.1f} ms)")
    if old is not None:  # identity (untimed) over the test grammars' terminals too
        import glob
        checked = 0
        for path in sorted(glob.glob(os.path.join(ROOT, "tests", "grammars", "*.lark"))):
            g = cfgmask.Grammar.from_file(path)
            for n, p in zip(g.terminal_names, g.terminal_patterns):
                a, b = regex.compile_regex(p, n), old.compile_regex(p, n)
                assert (a.trans.shape == b.trans.shape and (a.trans == b.trans).all()
                        and a.follow_forbidden == b.follow_forbidden
                        and a.follow_forbidden_at_eos == b.follow_forbidden_at_eos), (path, n)
                checked += 1
        rows["_identical_test_grammar_terminals"] = checked
    return rows


def section_trie(tokenizers, repeat, baseline, log):
    """TokTrie.build on the real vocabularies, this version vs ``baseline``'s trie.py."""
    import importlib.util
    from cfgmask.engine.trie import TokTrie
    from support import vocabs
    spec = importlib.util.spec_from_file_location(
        "cfgmask._baseline_trie", os.path.join(baseline, "cfgmask", "trie.py"))
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    rows = {}
    for tname in tokenizers:
        v = {"smollm2": vocabs.smollm2_vocab, "tekken": vocabs.tekken_vocab,
             "sp": vocabs.sp_vocab}[tname]()
        new_t, old_t = [], []
        for _ in range(max(3, repeat)):
            t0 = time.process_time()
            a = TokTrie.build(v)
            new_t.append(time.process_time() - t0)
            t0 = time.process_time()
            b = old.TokTrie.build(v)
            old_t.append(time.process_time() - t0)
        assert (a.node_subtree_end == b.node_subtree_end).all() and (a.token_node == b.token_node).all()
        rows[tname] = {"new_s": min(new_t), "old_s": min(old_t), "nodes": a.n_nodes}
        log(f"trie {tname}: {rows[tname]}")
    return rows


def section_hash(log):
    """The payload checksum: zlib.crc32 against sha256 on 8 MB (about tekken's parts)."""
    import hashlib
    import zlib
    data = os.urandom(8_000_000)
    best = {}
    for _ in range(7):
        for name, f in (("crc32", lambda: zlib.crc32(data)),
                        ("sha256", lambda: hashlib.sha256(data).digest())):
            t0 = time.process_time()
            f()
            best[name] = min(best.get(name, 1e9), time.process_time() - t0)
    log(f"hash: {best}")
    return best


def section_big_tokens(sizes_mb, log):
    import random
    from cfgmask.engine.prepared import subtree_byte_sets
    from cfgmask.engine.trie import TokTrie
    from support import vocabs
    smol = vocabs.smollm2_vocab()
    ref = []
    for _ in range(3):
        t0 = time.process_time()
        TokTrie.build(smol)
        ref.append(time.process_time() - t0)
    rows = {"smollm2_trie_cpu_s": min(ref), "tokens": {}}
    rng = random.Random(0)
    for mb in sizes_mb:
        big = bytes(rng.choice(b"ab \n{}") for _ in range(int(mb * 1_000_000)))
        toks = [bytes([i]) for i in range(256)] + [big, big[: len(big) // 2] + b"\x00"]
        t0 = time.process_time()
        t = TokTrie.from_token_bytes(toks)
        t1 = time.process_time()
        subtree_byte_sets(t)
        t2 = time.process_time()
        rows["tokens"][mb] = {"trie_cpu_s": t1 - t0, "subtree_bytes_cpu_s": t2 - t1,
                              "nodes": t.n_nodes}
        log(f"big token {mb} MB: trie {t1 - t0:.3f} s CPU, byte sets {t2 - t1:.3f} s CPU")
    return rows


# ----------------------------------------------------------------- report

def ms(x):
    return f"{1e3 * x:.1f}" if x == x else "-"


def report(res, out=None):
    def out(line="", end="\n", _buf=[]):  # noqa: B006 - joins the pieces of one table row
        _buf.append(line)
        if end == "\n":
            print("".join(_buf))
            _buf.clear()

    if "check" in res:
        out("\n### `cfgmask check` (ms, median; load includes importing Lark on a miss; process "
            "CPU: the whole command, Python start-up and imports included)\n")
        base = any("baseline" in r for r in res["check"].values())
        head = ("| grammar | miss: load | automata | total | process CPU | hit: load | automata | "
                "total | process CPU |")
        if base:
            head += " before: total | process CPU | before/hit (total) |"
        out(head)
        out("|" + "---|" * (head.count("|") - 1))
        for name, r in res["check"].items():
            line = (f"| {name} | {r['miss']['load_ms']:.1f} | {r['miss']['automata_ms']:.1f} | "
                    f"{r['miss']['total_ms']:.1f} | {ms(r['miss']['process_cpu_s'])} | "
                    f"{r['hit']['load_ms']:.1f} | {r['hit']['automata_ms']:.1f} | "
                    f"{r['hit']['total_ms']:.1f} | {ms(r['hit']['process_cpu_s'])} |")
            if base:
                b = r["baseline"]["total_ms"]
                line += (f" {b:.1f} | {ms(r['baseline']['process_cpu_s'])} | "
                         f"{b / r['hit']['total_ms']:.0f}x |")
            out(line)
        if base:
            out("\nbefore/miss (first-ever run of this version vs the old one): "
                + ", ".join(f"{n} {r['baseline']['total_ms'] / r['miss']['total_ms']:.1f}x"
                            for n, r in res["check"].items()))
    if "ttfm" in res:
        out("\n### Time to first mask on a prepared vocabulary (ms, median, fresh process each)\n")
        out("Module imports are not included (importing Lark, paid once per process on a miss "
            "only, is listed apart).\n")
        out("| tokenizer | grammar | case | grammar load | lexer tables | rest of compile | "
            "first mask | **ttfm** | ttfm CPU | Lark alone | llguidance ttfm | ttfm / llguidance | "
            "import lark |")
        out("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for key, r in res["ttfm"].items():
            tname, g = key.split("/") if isinstance(key, str) else key
            for case in ("before", "miss", "hit"):
                if case not in r:
                    continue
                x = r[case]
                llg = x.get("llguidance_s", float("nan"))
                ratio = f"{x['ttfm_s'] / llg:.2f}" if llg == llg else "-"
                out(f"| {tname} | {g} | {case} | {ms(x['grammar_s'])} | {ms(x['lexer_s'])} | "
                    f"{ms(x['compile_rest_s'])} | {ms(x['first_mask_s'])} | **{ms(x['ttfm_s'])}** | "
                    f"{ms(x['ttfm_cpu_s'])} | {ms(x['lark_s'])} | {ms(llg)} | {ratio} | "
                    f"{ms(x['lark_import_s']) if 'lark_import_s' in x else '-'} |")
    if "regex" in res:
        out("\n### regex -> DFA, all terminals of a grammar (CPU ms, best of runs, warm "
            "Unicode tables; identical DFAs checked)\n")
        out("| grammar | terminals | before | after | before/after | slowest terminal: before | after |")
        out("|---|---|---|---|---|---|---|")
        for name, r in res["regex"].items():
            if name.startswith("_"):
                continue
            o = r["old_s"]
            out(f"| {name} | {r['terminals']} | {ms(o) if o else '-'} | {ms(r['new_s'])} | "
                f"{o / r['new_s']:.1f}x | " if o else f"| - | ", end="")
            out(f"{r['worst']} {ms(r['worst_old_s']) if r['worst_old_s'] else '-'} | "
                f"{ms(r['worst_new_s'])} |")
        if "_identical_test_grammar_terminals" in res["regex"]:
            n = sum(r["terminals"] for k, r in res["regex"].items() if not k.startswith("_"))
            out(f"\nIdentical DFAs before and after: all {n} terminals above and "
                f"{res['regex']['_identical_test_grammar_terminals']} of tests/grammars/*.lark.")
    if "prep" in res:
        out("\n### Vocabulary preparation in a fresh process (ms, median)\n")
        out("| tokenizer | case | `Vocabulary(...)` | fingerprint + flat bytes | trie | "
            "subtree byte sets | prepared total |")
        out("|---|---|---|---|---|---|---|")
        for tname, r in res["prep"].items():
            for case in ("built", "disk"):
                x = r[case]
                tot = x["fingerprint_s"] + x["trie_s"] + x["subtree_bytes_s"]
                out(f"| {tname} | {case} | {ms(x['vocabulary_s'])} | {ms(x['fingerprint_s'])} | "
                    f"{ms(x['trie_s'])} | {ms(x['subtree_bytes_s'])} | {ms(tot)} |")
    if "trie" in res:
        out("\n### `TokTrie.build` on real vocabularies (CPU ms, best of runs, same process)\n")
        out("| tokenizer | nodes | before | after | after/before |")
        out("|---|---|---|---|---|")
        for tname, r in res["trie"].items():
            out(f"| {tname} | {r['nodes']:,} | {ms(r['old_s'])} | {ms(r['new_s'])} | "
                f"{r['new_s'] / r['old_s']:.2f} |")
    if "hash" in res:
        h = res["hash"]
        out(f"\nCache payload checksum on 8 MB (CPU, best of 7): crc32 {ms(h['crc32'])} ms, "
            f"sha256 {ms(h['sha256'])} ms ({h['sha256'] / h['crc32']:.1f}x).")
    if "big" in res:
        b = res["big"]
        out(f"\n### One huge token (CPU time; SmolLM2's whole trie: {ms(b['smollm2_trie_cpu_s'])} ms "
            "in the same run)\n")
        out("| token | trie nodes | trie build | / SmolLM2 trie | subtree byte sets |")
        out("|---|---|---|---|---|")
        for mb, x in b["tokens"].items():
            out(f"| {mb} MB (+ one half its size, + 256 bytes) | {x['nodes']:,} | "
                f"{x['trie_cpu_s']:.3f} s | {x['trie_cpu_s'] / b['smollm2_trie_cpu_s']:.1f}x | "
                f"{x['subtree_bytes_cpu_s']:.3f} s |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizers", default="smollm2,tekken")
    ap.add_argument("--grammars", default=",".join(GRAMMARS))
    ap.add_argument("--check-grammars", default="json,sql,javascript,lark")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sections", default="check,ttfm,regex,prep,trie,hash,big")
    ap.add_argument("--big-token-mb", default="1,10")
    ap.add_argument("--baseline-src", help="source tree of an older cfgmask for the check table")
    ap.add_argument("--no-llguidance", action="store_true")
    ap.add_argument("--json", help="write the raw results here")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        task, args = a.worker[0], json.loads(a.worker[1])
        print(json.dumps({"ttfm": worker_ttfm, "peers": worker_peers,
                          "prep": worker_prep}[task](args)))
        return

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    sections = a.sections.split(",")
    tokenizers = [t for t in a.tokenizers.split(",") if t]
    res = {}
    with tempfile.TemporaryDirectory(prefix="cfgmask-ttfm-") as tmp:
        dumps = {}
        if {"ttfm", "prep"} & set(sections):
            for t in tokenizers:
                dumps[t] = os.path.join(tmp, f"{t}.npz")
                dump_vocab(t, dumps[t])
        if "check" in sections:
            res["check"] = section_check(a.check_grammars.split(","), a.repeat, a.baseline_src,
                                         tmp, log)
        if "ttfm" in sections:
            rows = section_ttfm(tokenizers, a.grammars.split(","), a.repeat, dumps, tmp,
                                not a.no_llguidance, log, a.baseline_src)
            res["ttfm"] = {f"{k[0]}/{k[1]}": v for k, v in rows.items()}
        if "regex" in sections:
            res["regex"] = section_regex(a.check_grammars.split(","), a.repeat, a.baseline_src, log)
        if "prep" in sections:
            res["prep"] = section_prep(tokenizers, a.repeat, dumps, tmp, log)
        if "trie" in sections and a.baseline_src:
            res["trie"] = section_trie(tokenizers + ["sp"], a.repeat, a.baseline_src, log)
        if "hash" in sections:
            res["hash"] = section_hash(log)
        if "big" in sections:
            res["big"] = section_big_tokens([float(x) for x in a.big_token_mb.split(",")], log)
    import platform
    print(f"\n{platform.node()} {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; Python "
          f"{platform.python_version()}")
    report(res)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
