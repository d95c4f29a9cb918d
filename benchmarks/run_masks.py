#!/usr/bin/env python3
"""Mask latency of cfgmask next to llguidance and XGrammar, in one run (DESIGN.md §5).

Mask latency is the wall time of one ``fill_bitmask`` call (each engine's
public Python call that writes an int32 bitmask row), measured at every
position while replaying real JSON documents token by token: the document's
own tokenization (``add_special_tokens=False``), a fresh matcher per document,
and at the end the mask is filled once more and must allow EOS.

* cfgmask and llguidance load the same ``grammars/json.lark`` text (llguidance
  with ``%llguidance {"allow_initial_skip": true}`` so that both accept the
  same language); XGrammar uses its built-in JSON grammar.
* Engines are interleaved document by document, so noise from other work on
  the machine hits them alike; compare the ratios, not the absolute times.
* Pass 1 starts from freshly compiled grammars: cfgmask's lazily built caches
  (union-automaton states, per-lexer-state masks) live in the
  ``CompiledGrammar`` and fill up during the first documents, so pass 1
  includes that warm-up.  Pass 2 replays the same documents again with the
  same compiled grammars.  llguidance compiles the grammar again for every
  ``LLMatcher`` (a fresh matcher per document, as serving engines use it);
  XGrammar shares its ``CompiledGrammar`` between matchers.

Run ``python3 benchmarks/run_masks.py`` (``--help`` for the options); it prints
Markdown tables (the ones in docs/performance.md).  The documents are the
JSONSchemaBench sample in ``../shared/corpora/json`` (``CFGMASK_CORPORA``
overrides the corpora root); by default 50 of them spread evenly over the file.
"""

import argparse
import base64
import gc
import json
import os
import platform
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import cfgmask  # noqa: E402

LLG_PREFIX = '%llguidance {"allow_initial_skip": true}\n'
FLOOR_P99_US = 2000.0
FLOOR_P50_RATIO = 10.0


# ------------------------------------------------------------------ corpus

def corpora_root():
    try:
        from tests.corpora import corpora_dir
        return str(corpora_dir())
    except Exception:  # pytest.skip outside pytest, or the helper is missing
        return os.environ.get("CFGMASK_CORPORA",
                              os.path.join(os.path.dirname(ROOT), "shared", "corpora"))


def load_docs(n=50, select="spread", max_bytes=None, root=None):
    """``[(name, text)]``: ``n`` JSONSchemaBench documents.

    ``select="spread"`` takes every ``len/n``-th line (all sources of the
    sample are represented), ``"first"`` the first ``n`` lines.
    """
    path = os.path.join(root or corpora_root(), "json", "jsonschemabench-valid-sample.jsonl")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found: set CFGMASK_CORPORA to the corpora root")
    docs = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            rec = json.loads(line)
            if max_bytes is None or len(rec["doc"].encode("utf-8")) <= max_bytes:
                docs.append((f"line{i}:{rec.get('schema')}", rec["doc"]))
    if select == "first":
        return docs[:n]
    stride = max(1, len(docs) // n)
    return docs[::stride][:n]


# --------------------------------------------------------------- tokenizers

class Tok:
    """One tokenizer: how to encode documents, plus what each engine needs."""

    def __init__(self, name):
        self.name = name
        from tests import vocabs as tokenizers as T
        self.T = T
        if name == "smollm2":
            self.hf = T.smollm2_tokenizer()        # loading the GGUF is not timed
            self.encode = lambda s: list(self.hf.encode(s, add_special_tokens=False))
        elif name == "tekken":
            with open(T.tekken_json_path(), encoding="utf-8") as f:
                self.tekken = json.load(f)
            self.n_special = int(self.tekken["config"]["default_num_special_tokens"])
            enc = T.tekken_encoding()
            self.encode = lambda s: [r + self.n_special for r in
                                     enc.encode(s, allowed_special=set(), disallowed_special=())]
        else:
            raise KeyError(name)

    def tekken_tokens(self):
        total = int(self.tekken["config"]["default_vocab_size"])
        ns = self.n_special
        return ([f"<SPECIAL_{i}>".encode() for i in range(ns)]
                + [base64.b64decode(e["token_bytes"]) for e in self.tekken["vocab"][: total - ns]])


# ------------------------------------------------------------------ engines
# Each engine: prepare(tok) (timed: tokenizer preparation), compile() (timed:
# grammar compilation), matcher(), fill(m) -> writes self.bm, consume(m, t) ->
# bool, eos_ok(m) after the final fill, and allowed(t) on the last mask.

def _bit(row, t):
    return bool((int(row[t >> 5]) >> (t & 31)) & 1)


class CfgmaskEngine:
    name = "cfgmask"

    def prepare(self, tok):
        if tok.name == "smollm2":
            self.vocab = cfgmask.Vocabulary.from_hf(tok.hf)
        else:
            self.vocab = cfgmask.Vocabulary.from_tekken(tok.T.tekken_json_path())
        self.eos = self.vocab.eos_token_ids[0]

    def compile(self):
        grammar = cfgmask.Grammar.builtin("json")
        self.compiled = cfgmask.compile(grammar, self.vocab)
        self.bm = self.compiled.allocate_bitmask()
        self.row = self.bm[0]

    def matcher(self):
        return self.compiled.matcher()

    def fill(self, m):
        m.fill_bitmask(self.bm)

    def consume(self, m, t):
        return m.try_consume(t)

    def allowed(self, t):
        return _bit(self.row, t)


class LLGuidanceEngine:
    name = "llguidance"

    def __init__(self):
        import llguidance
        import llguidance.numpy
        self.llg = llguidance

    def prepare(self, tok):
        llg = self.llg
        if tok.name == "smollm2":
            import llguidance.hf
            self.lltok = llguidance.hf.from_tokenizer(tok.hf, eos_token=2)
        else:
            tokens = tok.tekken_tokens()

            class W:
                eos_token_id, bos_token_id = 2, 1
                special_token_ids = list(range(tok.n_special))

                def __init__(self):
                    self.tokens = tokens

                def __call__(self, s):
                    if isinstance(s, bytes):
                        s = s.decode("utf-8", errors="replace")
                    return tok.encode(s)

            self.lltok = llg.LLTokenizer(llg.TokenizerWrapper(W()))
        self.eos = self.lltok.eos_token

    def compile(self):
        text = open(cfgmask.Grammar.builtin_path("json"), encoding="utf-8").read()
        self.grammar = self.llg.grammar_from("lark", LLG_PREFIX + text)
        self.bm = self.llg.numpy.allocate_token_bitmask(1, self.lltok.vocab_size)
        self.row = self.bm[0]
        m = self.matcher()  # LLMatcher compiles the grammar
        assert not m.is_error(), m.get_error()
        self._first = m

    def matcher(self):
        if getattr(self, "_first", None) is not None:
            m, self._first = self._first, None
            return m
        return self.llg.LLMatcher(self.lltok, self.grammar, log_level=0)

    def fill(self, m):
        self.llg.numpy.fill_next_token_bitmask(m, self.bm)

    def consume(self, m, t):
        return m.consume_token(t)

    def allowed(self, t):
        return _bit(self.row, t)


class XGrammarEngine:
    name = "xgrammar"

    def __init__(self):
        import xgrammar
        self.xgr = xgrammar

    def prepare(self, tok):
        xgr = self.xgr
        if tok.name == "smollm2":
            self.info = xgr.TokenizerInfo.from_huggingface(tok.hf, stop_token_ids=[2])
        else:
            tokens = tok.tekken_tokens()
            vocab = [b"" if i < tok.n_special else tb for i, tb in enumerate(tokens)]
            self.info = xgr.TokenizerInfo(vocab, xgr.VocabType.RAW, vocab_size=len(vocab),
                                          stop_token_ids=[2])
        self.compiler = xgr.GrammarCompiler(self.info, max_threads=1, cache_enabled=False)
        self.eos = 2

    def compile(self):
        self.cg = self.compiler.compile_builtin_json_grammar()
        self.bm_t = self.xgr.allocate_token_bitmask(1, self.info.vocab_size)
        self.row = self.bm_t.numpy()[0]

    def matcher(self):
        return self.xgr.GrammarMatcher(self.cg)

    def fill(self, m):
        m.fill_next_token_bitmask(self.bm_t)

    def consume(self, m, t):
        return m.accept_token(t)

    def allowed(self, t):
        return _bit(self.row, t)


ENGINES = {"cfgmask": CfgmaskEngine, "llguidance": LLGuidanceEngine, "xgrammar": XGrammarEngine}


# ------------------------------------------------------------------- replay

class Series:
    """Per-mask latencies (ns) of one engine, split by pass and document."""

    def __init__(self):
        self.ns = {1: [], 2: []}
        self.first_doc_ns = []
        self.consume_ns = []
        self.refused = []      # (doc, position, token): engine refused a corpus token
        self.no_eos = []       # docs where EOS was not allowed at the end


def replay_doc(engine, ids, out, pass_no, doc_name, record_first=False):
    perf = time.perf_counter_ns
    lat = out.ns[pass_no]
    m = engine.matcher()
    for pos, t in enumerate(ids):
        t0 = perf()
        engine.fill(m)
        t1 = perf()
        lat.append(t1 - t0)
        if record_first:
            out.first_doc_ns.append(t1 - t0)
        ok = engine.consume(m, t)
        out.consume_ns.append(perf() - t1)
        if not ok:
            out.refused.append((doc_name, pos, t))
            return
    t0 = perf()
    engine.fill(m)
    t1 = perf()
    lat.append(t1 - t0)
    if record_first:
        out.first_doc_ns.append(t1 - t0)
    if not engine.allowed(engine.eos):
        out.no_eos.append(doc_name)


def stats_us(ns):
    a = np.asarray(ns, dtype=np.float64) / 1000.0
    if a.size == 0:
        return None
    return {"n": int(a.size), "p50": float(np.percentile(a, 50)), "p90": float(np.percentile(a, 90)),
            "p99": float(np.percentile(a, 99)), "max": float(a.max()), "mean": float(a.mean())}


def run(tokenizers=("smollm2", "tekken"), engines=("cfgmask", "llguidance", "xgrammar"),
        n_docs=50, select="spread", passes=2, max_bytes=None, log=print):
    """Benchmark; returns ``{tokenizer: {...results...}}``."""
    docs = load_docs(n_docs, select, max_bytes)
    results = {}
    for tname in tokenizers:
        t0 = time.perf_counter()
        tok = Tok(tname)
        log(f"[{tname}] tokenizer loaded in {time.perf_counter() - t0:.1f}s (not part of any timing)")
        token_docs = [(name, tok.encode(text)) for name, text in docs]
        n_tokens = sum(len(ids) for _, ids in token_docs)
        res = {"docs": len(docs), "tokens": n_tokens,
               "bytes": sum(len(t.encode("utf-8")) for _, t in docs), "engines": {}}
        active = []
        for ename in engines:
            try:
                eng = ENGINES[ename]()
            except ImportError as e:
                log(f"[{tname}] {ename} skipped: {e}")
                continue
            gc.collect()
            t0 = time.perf_counter()
            eng.prepare(tok)
            t1 = time.perf_counter()
            eng.compile()
            t2 = time.perf_counter()
            m = eng.matcher()
            eng.fill(m)
            t3 = time.perf_counter()
            eng._ttfm_matcher = m
            r = {"tokenizer_s": t1 - t0, "compile_s": t2 - t1, "first_mask_s": t3 - t2,
                 "time_to_first_mask_s": t3 - t1, "series": Series()}
            res["engines"][ename] = r
            active.append(eng)
            log(f"[{tname}] {ename}: tokenizer {t1 - t0:.3f}s, compile {t2 - t1:.4f}s, "
                f"first mask {1e3 * (t3 - t2):.2f} ms")
        # Fresh compiled grammars for the measured passes: the time-to-first-mask
        # probe above already warmed the start state, so recompile (untimed).
        for eng in active:
            eng.compile()
        gc.disable()
        try:
            for pass_no in range(1, passes + 1):
                for di, (dname, ids) in enumerate(token_docs):
                    for eng in active:
                        replay_doc(eng, ids, res["engines"][eng.name]["series"], pass_no, dname,
                                   record_first=(pass_no == 1 and di == 0))
                log(f"[{tname}] pass {pass_no} done")
        finally:
            gc.enable()
        for eng in active:
            r = res["engines"][eng.name]
            s = r["series"]
            r["pass1"] = stats_us(s.ns[1])
            r["pass2"] = stats_us(s.ns[2]) if passes > 1 else None
            r["first_doc"] = stats_us(s.first_doc_ns)
            r["consume_mean_us"] = float(np.mean(s.consume_ns)) / 1000.0 if s.consume_ns else None
            r["refused"] = s.refused
            r["no_eos"] = s.no_eos
            if eng.name == "cfgmask":
                r["cache"] = eng.compiled.cache_stats()
            del r["series"]
        results[tname] = res
    return results


# ------------------------------------------------------------------ report

def _fmt(x):
    if x is None:
        return "-"
    if x >= 1000:
        return f"{x / 1000:.2f} ms"
    return f"{x:.1f} µs" if x < 100 else f"{x:.0f} µs"


def report(results, passes=2):
    lines = []
    add = lines.append
    add(f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        f"cfgmask {cfgmask.__version__}" + _versions())
    add("")
    for tname, res in results.items():
        add(f"### JSON grammar, {tname}: {res['docs']} documents, {res['tokens']} tokens "
            f"({res['bytes']} bytes)")
        add("")
        add("| engine | tokenizer prep | grammar compile | first mask | time to first mask |")
        add("|---|---:|---:|---:|---:|")
        for ename, r in res["engines"].items():
            add(f"| {ename} | {r['tokenizer_s'] * 1e3:.0f} ms | {r['compile_s'] * 1e3:.2f} ms | "
                f"{r['first_mask_s'] * 1e3:.2f} ms | {r['time_to_first_mask_s'] * 1e3:.2f} ms |")
        add("")
        for key, label in (("pass1", "pass 1 (from a freshly compiled grammar)"),
                           ("pass2", "pass 2 (same documents again)"),
                           ("first_doc", "first document of pass 1 only")):
            if key == "pass2" and passes < 2:
                continue
            add(f"Mask latency, {label}:")
            add("")
            add("| engine | masks | p50 | p90 | p99 | max | mean |")
            add("|---|---:|---:|---:|---:|---:|---:|")
            for ename, r in res["engines"].items():
                s = r[key]
                if s is None:
                    continue
                add(f"| {ename} | {s['n']} | {_fmt(s['p50'])} | {_fmt(s['p90'])} | {_fmt(s['p99'])} "
                    f"| {_fmt(s['max'])} | {_fmt(s['mean'])} |")
            c, g = res["engines"].get("cfgmask"), res["engines"].get("llguidance")
            if c and g and c[key] and g[key]:
                add("| cfgmask / llguidance | | " + " | ".join(
                    f"{c[key][k] / g[key][k]:.2f}×" for k in ("p50", "p90", "p99", "max", "mean"))
                    + " |")
            add("")
        notes = []
        for ename, r in res["engines"].items():
            if r.get("consume_mean_us") is not None:
                notes.append(f"{ename} consume mean {_fmt(r['consume_mean_us'])}")
            if r["refused"]:
                notes.append(f"{ename} REFUSED {len(r['refused'])} corpus tokens, e.g. {r['refused'][:2]}")
            if r["no_eos"]:
                notes.append(f"{ename}: EOS not allowed at the end of {len(r['no_eos'])} documents")
        if "cfgmask" in res["engines"] and "cache" in res["engines"]["cfgmask"]:
            notes.append(f"cfgmask caches after the run: {res['engines']['cfgmask']['cache']}")
        add("Notes: " + "; ".join(notes) + ".")
        add("")
    add(floor_verdict(results))
    return "\n".join(lines)


def floor_verdict(results):
    """The project floor: p99 <= 2 ms and p50 <= 10x llguidance's p50, per tokenizer (pass 1)."""
    out = ["Floor (pass 1: p99 ≤ 2 ms and p50 ≤ 10× llguidance p50):"]
    all_ok = True
    for tname, res in results.items():
        c, g = res["engines"].get("cfgmask"), res["engines"].get("llguidance")
        if not (c and g and c["pass1"] and g["pass1"]):
            out.append(f"- {tname}: not measured")
            all_ok = False
            continue
        p99 = c["pass1"]["p99"]
        ratio = c["pass1"]["p50"] / g["pass1"]["p50"]
        ok = p99 <= FLOOR_P99_US and ratio <= FLOOR_P50_RATIO and not c["refused"] and not c["no_eos"]
        all_ok &= ok
        out.append(f"- {tname}: cfgmask p99 {_fmt(p99)} ({'≤' if p99 <= FLOOR_P99_US else '>'} 2 ms), "
                   f"p50 ratio {ratio:.2f}× ({'≤' if ratio <= FLOOR_P50_RATIO else '>'} 10×): "
                   f"{'MET' if ok else 'NOT MET'}")
    out.append(f"Overall: {'MET' if all_ok else 'NOT MET'}")
    return "\n".join(out)


def _versions():
    from importlib import metadata
    v = []
    for dist in ("llguidance", "xgrammar"):
        try:
            v.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    return ", " + ", ".join(v) if v else ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizers", default="smollm2,tekken")
    ap.add_argument("--engines", default="cfgmask,llguidance,xgrammar")
    ap.add_argument("--docs", type=int, default=50, help="number of documents (default 50)")
    ap.add_argument("--select", choices=("spread", "first"), default="spread")
    ap.add_argument("--max-bytes", type=int, default=None, help="skip documents larger than this")
    ap.add_argument("--passes", type=int, choices=(1, 2), default=2)
    ap.add_argument("--json", metavar="PATH", help="also write the raw results as JSON")
    args = ap.parse_args(argv)
    results = run(tuple(args.tokenizers.split(",")), tuple(args.engines.split(",")),
                  args.docs, args.select, args.passes, args.max_bytes,
                  log=lambda s: print(s, file=sys.stderr, flush=True))
    print(report(results, args.passes))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    return results


if __name__ == "__main__":
    main()
