#!/usr/bin/env python3
"""Mask latency of cfgmask next to llguidance (and XGrammar for JSON), in one run
(docs/architecture.md, "How performance is measured").

For every (grammar, tokenizer) pair -- grammars json, sql, javascript;
tokenizers SmolLM2 49k, tekken 131k, Mistral SentencePiece v3 32k -- this
measures, for each engine:

* tokenizer preparation: building the engine's vocabulary from an already
  loaded tokenizer, up to a first mask of a one-rule grammar (so that per-
  vocabulary work is counted here);
* compile (grammar text -> compiled grammar) and time to first mask (grammar
  text -> first mask, on the prepared vocabulary): the median of
  ``--ttfm-repeats`` fresh compiles, and the first one of the process;
* mask latency, the wall time of one ``fill_bitmask`` call (each engine's
  public Python call that writes one int32 bitmask row), at every position
  while replaying real documents token by token (the document's own
  tokenization, no special tokens), a fresh matcher per document, plus one
  final mask that must allow EOS.  After one fresh compile, the first
  ``--cold`` documents (default 3) are *cold* (lazily built caches fill
  there) and the next ``--warm`` documents (default 37) are *warm*.

Rules of the measurement:

* cfgmask and llguidance load the same Lark text (``grammars/<name>.lark``;
  llguidance behind ``%llguidance {"allow_initial_skip": true}``); XGrammar
  runs for JSON only, with its built-in JSON grammar (benchmarks/engines.py).
* Documents come from benchmarks/workload.py.  Each candidate is first
  screened: every engine must accept all of its tokens and then EOS (on
  compiled grammars used for nothing else).  A document any engine refuses
  is skipped for all of them, so every engine replays the same documents;
  the refusals are counted per engine in the report (llguidance refuses some
  JavaScript that relies on ASI at a newline, XGrammar's built-in JSON
  refuses documents that are a bare scalar).
* Engines take turns document by document (the order rotates), so load from
  other work on the machine hits them alike; the garbage collector is off
  during replays.  Absolute times on a shared machine are noisy: read the
  ratios cfgmask / llguidance, measured in the same run.
* The run fails (exit status 1) if an engine refuses a token of a screened
  document during the measured replay, or does not allow EOS at its end.

Usage::

    python -m benchmarks.run_masks                  # everything (about 4 min on this 2-core machine)
    python -m benchmarks.run_masks --write          # ... and write docs/performance.md + README.md
    python -m benchmarks.run_masks --from-json benchmarks/results/masks.json   # re-render a saved run
    python -m benchmarks.run_masks --grammars sql --tokenizers smollm2 --warm 10   # a quick look
    python -m benchmarks.run_masks --smoke          # 1 cold + 1 warm document each (CI)
    python -m benchmarks.run_masks --write --plots  # ... and the plots in docs/img (benchmarks/plots.py)

``--json PATH`` keeps the raw numbers.  Corpora: ``$CFGMASK_CORPORA`` (else
``../shared/corpora``); the JavaScript corpus must be materialised first
(``python3 ../shared/corpora/js/get_js_corpus.py ~/.cache/cfgmask/js-corpus``).
"""

import argparse
import gc
import json
import os
import platform
import re
import shlex
import sys
import time

import numpy as np

from benchmarks import doc_blocks, workload
from benchmarks.engines import (ENGINES, GRAMMARS, TOKENIZER_LABELS, TOKENIZERS, Tok,
                                Unavailable, engine_versions)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DEFAULT_COLD = 3
DEFAULT_WARM = 37
DEFAULT_TTFM_REPEATS = 3
PERF_DOC = os.path.join(ROOT, "docs", "performance.md")
README = os.path.join(ROOT, "README.md")
BLOCK_TABLES = "run_masks:tables"
BLOCK_SUMMARY = "run_masks:summary"
RAW_RESULTS = os.path.join(ROOT, "benchmarks", "results", "masks.json")  # kept by --write

# the mask targets, as ratios cfgmask / llguidance (benchmark figures, never asserted in tests):
# ttfm and cold p90/p99 at most 1.0x (never slower than llguidance), warm p50/p99 at most 0.5x
# (twice as fast once the caches are warm)
TARGETS = (("ttfm", None, 1.0), ("cold", "p90", 1.0), ("cold", "p99", 1.0),
           ("warm", "p50", 0.5), ("warm", "p99", 0.5))


# -------------------------------------------------------------------- replay

class Series:
    """Per-mask latencies (ns) of one engine, by phase, plus what went wrong."""

    def __init__(self):
        self.ns = {"cold": [], "warm": []}
        self.docs = {"cold": 0, "warm": 0}
        self.consume_ns = []
        self.refused = []      # (doc, position, token): refused during the measured replay
        self.no_eos = []       # documents at whose end EOS was not allowed


def replay_doc(engine, compiled, ids, out, phase, doc_name):
    """Replay ``ids`` with a fresh matcher, timing every ``fill``; record into ``out``."""
    perf = time.perf_counter_ns
    lat = out.ns[phase]
    out.docs[phase] += 1
    m = engine.matcher(compiled)
    for pos, t in enumerate(ids):
        t0 = perf()
        engine.fill(m)
        t1 = perf()
        lat.append(t1 - t0)
        ok = engine.consume(m, t)
        out.consume_ns.append(perf() - t1)
        if not ok:
            out.refused.append((doc_name, pos, t))
            return
    t0 = perf()
    engine.fill(m)
    lat.append(perf() - t0)
    if not engine.eos_allowed():
        out.no_eos.append(doc_name)


def accepts(engine, compiled, ids, eos):
    """Does ``engine`` take every token of ``ids`` and then EOS?  (No masks filled.)"""
    m = engine.matcher(compiled)
    for t in ids:
        if not engine.consume(m, t):
            return False
    return bool(engine.consume(m, eos))


def screen(engines, grammar, tok, n, log=print, candidates=None):
    """The first ``n`` candidate documents every engine accepts, as ``[(name, ids, n_bytes)]``,
    and ``{engine: [refused document names]}`` over the candidates looked at."""
    docs = candidates if candidates is not None else workload.candidates(grammar)
    compiled = {e.name: e.compile(grammar) for e in engines}
    out, refused, looked = [], {e.name: [] for e in engines}, 0
    for name, text in docs:
        if len(out) >= n:
            break
        looked += 1
        ids = tok.encode(text)
        bad = [e.name for e in engines if not accepts(e, compiled[e.name], ids, e.eos)]
        for b in bad:
            refused[b].append(name)
        if not bad:
            out.append((name, ids, len(text.encode("utf-8"))))
    if len(out) < n:
        log(f"  only {len(out)} of the {n} documents asked for are accepted by every engine "
            f"({looked} candidates)")
    return out, refused, looked


def stats_us(ns):
    """p50/p90/p99/max/mean in µs of a list of ns (``None`` when empty)."""
    a = np.asarray(ns, dtype=np.float64) / 1000.0
    if a.size == 0:
        return None
    return {"n": int(a.size), "p50": float(np.percentile(a, 50)), "p90": float(np.percentile(a, 90)),
            "p99": float(np.percentile(a, 99)), "max": float(a.max()), "mean": float(a.mean())}


# the percentiles kept per engine and phase in the raw results (benchmarks/plots.py draws
# the latency CDFs from them): compact, and fine enough at the tail
CDF_PERCENTILES = [0.5] + list(range(1, 100)) + [99.5, 99.9]


def cdf_us(ns):
    """Latencies (µs, 4 significant digits) at ``CDF_PERCENTILES`` of a list of ns (``None`` when empty)."""
    if not ns:
        return None
    q = np.percentile(np.asarray(ns, dtype=np.float64) / 1000.0, CDF_PERCENTILES)
    return [float(f"{x:.4g}") for x in q]


def time_to_first_mask(eng, grammar):
    """``(compile_s, first_mask_s)``: grammar text -> compiled, then matcher + first fill."""
    t0 = time.perf_counter()
    c = eng.compile(grammar)
    t1 = time.perf_counter()
    eng.fill(eng.matcher(c))
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def run_pair(active, grammar, tok, n_cold, n_warm, ttfm_repeats, log=print):
    """Measure one (grammar, tokenizer) pair with the prepared engines ``active``."""
    res = {"grammar": grammar, "tokenizer": tok.name, "engines": {}}
    # time to first mask: fresh compiles, engines alternating
    ttfm = {e.name: [] for e in active}
    for r in range(ttfm_repeats):
        for e in (active if r % 2 == 0 else active[::-1]):
            gc.collect()
            ttfm[e.name].append(time_to_first_mask(e, grammar))
    t0 = time.perf_counter()
    docs, refused, looked = screen(active, grammar, tok, n_cold + n_warm, log)
    log(f"  screened {looked} candidates in {time.perf_counter() - t0:.1f} s: {len(docs)} documents, "
        f"refused: " + ", ".join(f"{k} {len(v)}" for k, v in refused.items()))
    res.update({"screened": looked, "refused": refused, "docs_cold": [d[0] for d in docs[:n_cold]],
                "docs_warm": [d[0] for d in docs[n_cold:]],
                "tokens": {"cold": sum(len(d[1]) for d in docs[:n_cold]),
                           "warm": sum(len(d[1]) for d in docs[n_cold:])},
                "bytes": {"cold": sum(d[2] for d in docs[:n_cold]),
                          "warm": sum(d[2] for d in docs[n_cold:])}})
    # one fresh compile per engine for the measured replay
    compiled = {e.name: e.compile(grammar) for e in active}
    series = {e.name: Series() for e in active}
    gc.collect()
    gc.disable()
    t0 = time.perf_counter()
    try:
        for i, (name, ids, _) in enumerate(docs):
            phase = "cold" if i < n_cold else "warm"
            k = i % len(active)
            for e in active[k:] + active[:k]:
                replay_doc(e, compiled[e.name], ids, series[e.name], phase, name)
    finally:
        gc.enable()
    log(f"  replayed {len(docs)} documents x {len(active)} engines in {time.perf_counter() - t0:.1f} s")
    for e in active:
        s = series[e.name]
        comp = [c for c, _ in ttfm[e.name]]
        tot = [c + f for c, f in ttfm[e.name]]
        res["engines"][e.name] = {
            "prep_s": e.prep_s, "compile_s": float(np.median(comp)),
            "first_mask_s": float(np.median([f for _, f in ttfm[e.name]])),
            "ttfm_s": float(np.median(tot)), "ttfm_first_s": tot[0],
            "cold": stats_us(s.ns["cold"]), "warm": stats_us(s.ns["warm"]),
            "cdf_us": {"cold": cdf_us(s.ns["cold"]), "warm": cdf_us(s.ns["warm"])},
            "consume_mean_us": float(np.mean(s.consume_ns)) / 1000.0 if s.consume_ns else None,
            "refused_in_run": s.refused, "no_eos": s.no_eos, "notes": e.notes(compiled[e.name])}
    return res


def run(grammars=GRAMMARS, tokenizers=TOKENIZERS, engines=("cfgmask", "llguidance", "xgrammar"),
        n_cold=DEFAULT_COLD, n_warm=DEFAULT_WARM, ttfm_repeats=DEFAULT_TTFM_REPEATS, log=print):
    """Benchmark every (grammar, tokenizer) pair; returns the results as a dict."""
    started = time.perf_counter()
    results = {"pairs": [], "skipped": [], "config": {
        "grammars": list(grammars), "tokenizers": list(tokenizers), "engines": list(engines),
        "cold": n_cold, "warm": n_warm, "ttfm_repeats": ttfm_repeats,
        "cdf_percentiles": CDF_PERCENTILES}}
    for tname in tokenizers:
        t0 = time.perf_counter()
        try:
            tok = Tok(tname)
        except Unavailable as e:
            log(f"[{tname}] skipped: {e}")
            results["skipped"].append(f"tokenizer {tname}: {e}")
            continue
        log(f"[{tname}] tokenizer loaded in {time.perf_counter() - t0:.1f} s (not part of any timing)")
        prepared = []
        for ename in engines:
            try:
                eng = ENGINES[ename]()
            except Unavailable as e:
                log(f"[{tname}] {ename} skipped: {e}")
                results["skipped"].append(f"engine {ename}: {e}")
                continue
            gc.collect()
            t0 = time.perf_counter()
            eng.prepare(tok)
            eng.prep_s = time.perf_counter() - t0
            log(f"[{tname}] {ename}: tokenizer prepared in {eng.prep_s:.2f} s")
            prepared.append(eng)
        for grammar in grammars:
            active = []
            for e in prepared:
                why = e.unsupported(grammar, tok)
                if why:
                    results["skipped"].append(f"{e.name} ({grammar} / {tname}): {why}")
                else:
                    active.append(e)
            log(f"[{tname} / {grammar}] engines: {', '.join(e.name for e in active)}")
            try:
                pair = run_pair(active, grammar, tok, n_cold, n_warm, ttfm_repeats, log)
            except FileNotFoundError as e:
                log(f"[{tname} / {grammar}] skipped: {e}")
                results["skipped"].append(f"{grammar}: {e}")
                continue
            results["pairs"].append(pair)
        del prepared
        gc.collect()
    results["seconds"] = time.perf_counter() - started
    return results


def failures(results):
    """Lines describing refusals/EOS failures during the measured replays (empty: all good)."""
    out = []
    for p in results["pairs"]:
        for ename, r in p["engines"].items():
            tag = f"{p['grammar']}/{p['tokenizer']}/{ename}"
            if r["refused_in_run"]:
                out.append(f"{tag}: refused {len(r['refused_in_run'])} screened documents, "
                           f"e.g. {r['refused_in_run'][:2]}")
            if r["no_eos"]:
                out.append(f"{tag}: EOS not allowed at the end of {r['no_eos'][:3]}")
    return out


# -------------------------------------------------------------------- report

def fmt_us(x):
    """A latency in µs, with a unit, 3 significant digits."""
    if x is None:
        return "-"
    if x >= 1000:
        return f"{x / 1000:.2f} ms"
    return f"{x:.1f} µs" if x < 100 else f"{x:.0f} µs"


def _num(x):
    """A bare number with about 3 significant digits (summary cells)."""
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def _ratio(a, b):
    return a / b if a is not None and b else None


def _ratio_s(r):
    return "-" if r is None else f"{r:.2f}×"


def pair_value(pair, ename, phase, key):
    r = pair["engines"].get(ename)
    if r is None:
        return None
    if phase == "ttfm":
        return r["ttfm_s"] * 1e3
    return r[phase][key] if r.get(phase) else None


def summary_table(results):
    """The README table: per (tokenizer, grammar), cfgmask / llguidance and their ratio."""
    lines = ["| tokenizer | grammar | docs (cold + warm) | ttfm ms | cold p90 µs | cold p99 µs "
             "| warm p50 µs | warm p99 µs | targets missed |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for p in results["pairs"]:
        cells, missed = [], []
        for phase, key, target in TARGETS:
            c, g = pair_value(p, "cfgmask", phase, key), pair_value(p, "llguidance", phase, key)
            if c is None or g is None:
                cells.append("-")
                continue
            r = c / g
            cells.append(f"{_num(c)} / {_num(g)} = {r:.2f}×")
            if r > target:
                missed.append(f"{phase}{' ' + key if key else ''}")
        nd = f"{len(p['docs_cold'])} + {len(p['docs_warm'])}"
        lines.append(f"| {TOKENIZER_LABELS[p['tokenizer']]} | {p['grammar']} | {nd} | " + " | ".join(cells)
                     + f" | {', '.join(missed) or 'none'} |")
    return "\n".join(lines)


def pair_tables(p):
    """The full tables of one (grammar, tokenizer) pair."""
    lines = []
    add = lines.append
    engines = list(p["engines"])
    c, g = p["engines"].get("cfgmask"), p["engines"].get("llguidance")
    ntok = p["tokens"]["cold"] + p["tokens"]["warm"]
    nbytes = p["bytes"]["cold"] + p["bytes"]["warm"]
    add(f"### {p['grammar']}, {TOKENIZER_LABELS[p['tokenizer']]}")
    add("")
    skipped = ", ".join(f"{k} {len(v)}" for k, v in p["refused"].items())
    add(f"{workload.describe(p['grammar'])}: {len(p['docs_cold'])} cold + {len(p['docs_warm'])} warm "
        f"documents, {ntok:,} tokens ({nbytes:,} bytes); {p['screened']} candidates screened, "
        f"refused by: {skipped} (a document any engine refuses is skipped for all).")
    add("")
    add("| engine | tokenizer prep | compile | first mask | time to first mask | ttfm, first in process |")
    add("|---|---:|---:|---:|---:|---:|")
    for e in engines:
        r = p["engines"][e]
        add(f"| {e} | {r['prep_s'] * 1e3:.0f} ms | {r['compile_s'] * 1e3:.1f} ms | "
            f"{r['first_mask_s'] * 1e3:.2f} ms | {r['ttfm_s'] * 1e3:.1f} ms | {r['ttfm_first_s'] * 1e3:.1f} ms |")
    if c and g:
        add("| cfgmask / llguidance | " + " | ".join(_ratio_s(_ratio(c[k], g[k])) for k in (
            "prep_s", "compile_s", "first_mask_s", "ttfm_s", "ttfm_first_s")) + " |")
    add("")
    add("| engine | phase | masks | p50 | p90 | p99 | max | mean |")
    add("|---|---|---:|---:|---:|---:|---:|---:|")
    for phase in ("cold", "warm"):
        for e in engines:
            s = p["engines"][e][phase]
            if s:
                add(f"| {e} | {phase} | {s['n']:,} | {fmt_us(s['p50'])} | {fmt_us(s['p90'])} | "
                    f"{fmt_us(s['p99'])} | {fmt_us(s['max'])} | {fmt_us(s['mean'])} |")
        if c and g and c[phase] and g[phase]:
            add(f"| **cfgmask / llguidance** | {phase} | | " + " | ".join(
                f"**{_ratio_s(c[phase][k] / g[phase][k])}**" for k in ("p50", "p90", "p99", "max", "mean"))
                + " |")
    notes = []
    for e in engines:
        r = p["engines"][e]
        if r["consume_mean_us"] is not None:
            notes.append(f"{e} consume mean {fmt_us(r['consume_mean_us'])}")
        for k, v in r["notes"].items():
            notes.append(f"{e} {k} after the run: {v}")
    for e, names in p["refused"].items():
        if names:
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            notes.append(f"{e} refused {', '.join(names[:3])}{more}")
    add("")
    add("Notes: " + "; ".join(notes) + ".")
    return "\n".join(lines)


def machine_line():
    v = engine_versions()
    load = ""
    if hasattr(os, "getloadavg"):
        load = f", load average {os.getloadavg()[0]:.1f} at the end"
    return (f"Machine: {platform.machine()}, {os.cpu_count()} CPUs{load}, Python "
            f"{platform.python_version()}; " + ", ".join(f"{k} {x}" for k, x in v.items()) + ".")


def _not_measured(results):
    """``results["skipped"]`` grouped by reason: ``engine (a / b, c / d): reason``."""
    groups = {}
    for s in results["skipped"]:
        head, _, why = s.partition(": ")
        name, _, where = head.partition(" (")
        groups.setdefault((name, why), []).append(where.rstrip(")"))
    out = []
    for (name, why), where in groups.items():
        where = [w for w in where if w]
        out.append(f"Not measured: {name}{' (' + ', '.join(where) + ')' if where else ''}: {why}.")
    return out + [""] if out else []


def report(results, command):
    """The Markdown written into docs/performance.md (and printed)."""
    lines = [doc_blocks.provenance(command, results.get("seconds"), results.get("date"), results.get("commit")), "",
             results.get("machine") or machine_line(), ""]
    lines += ["Summary: each cell is cfgmask / llguidance = ratio (below 1 means cfgmask is faster). "
              "ttfm = time to first mask (grammar text -> first mask on a prepared vocabulary, median "
              f"of {results['config']['ttfm_repeats']}); cold = the first {results['config']['cold']} "
              "documents after a fresh compile, warm = the documents after them. Targets (the 'targets missed' column): "
              "ttfm, cold p90 and cold p99 ≤ 1.0×, warm p50 and warm p99 ≤ 0.5×.", "",
              summary_table(results), ""]
    lines += _not_measured(results)
    for p in results["pairs"]:
        lines += [pair_tables(p), ""]
    bad = failures(results)
    if bad:
        lines += ["**Replay failures** (an engine refused a screened document or EOS at its end):", ""]
        lines += [f"* {b}" for b in bad] + [""]
    return "\n".join(lines)


def readme_summary(results, command):
    return "\n".join([
        doc_blocks.provenance(command, results.get("seconds"), results.get("date"), results.get("commit")) + " Each cell is cfgmask / llguidance "
        "= ratio, measured in the same run with the engines alternating document by document; "
        "ttfm = grammar text -> first mask on a prepared vocabulary; cold = the first "
        f"{results['config']['cold']} documents after a compile, warm = the next "
        f"{results['config']['warm']}. Documents: JSONSchemaBench, Spider, Debian JavaScript files "
        "of 2-5 kB. Full tables, XGrammar and how to reproduce: docs/performance.md.", "",
        summary_table(results)])


def dump_results(results, f):
    """``results`` as indented JSON, each list of numbers (the percentile grids) on one line."""
    text = json.dumps(results, indent=1, default=str)
    f.write(re.sub(r"\[\s+([-0-9.eE+,\s]+?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--grammars", default=",".join(GRAMMARS), help="default: %(default)s")
    ap.add_argument("--tokenizers", default=",".join(TOKENIZERS), help="default: %(default)s")
    ap.add_argument("--engines", default="cfgmask,llguidance,xgrammar", help="default: %(default)s")
    ap.add_argument("--cold", type=int, default=DEFAULT_COLD, help="cold documents (default %(default)s)")
    ap.add_argument("--warm", type=int, default=DEFAULT_WARM, help="warm documents (default %(default)s)")
    ap.add_argument("--ttfm-repeats", type=int, default=DEFAULT_TTFM_REPEATS,
                    help="fresh compiles timed for time to first mask (default %(default)s)")
    ap.add_argument("--smoke", action="store_true",
                    help="1 cold + 1 warm document, 1 ttfm repeat: checks that everything runs")
    ap.add_argument("--json", metavar="PATH", help="also write the raw results as JSON")
    ap.add_argument("--write", action="store_true",
                    help="write the tables into docs/performance.md and the summary into README.md, and "
                         "the raw results into benchmarks/results/masks.json (only for a full run: all "
                         "grammars and tokenizers, default document counts)")
    ap.add_argument("--write-partial", action="store_true", help="allow --write for any other run")
    ap.add_argument("--plots", nargs="?", const=os.path.join(ROOT, "docs", "img"), metavar="DIR",
                    help="also draw the latency CDFs and time to first mask (benchmarks/plots.py; needs "
                         "matplotlib) into DIR (default docs/img)")
    ap.add_argument("--from-json", metavar="PATH",
                    help="do not measure: render (and --write) the results a --json run saved")
    args = ap.parse_args(argv)
    if args.smoke:
        args.cold, args.warm, args.ttfm_repeats = 1, 1, 1
    grammars = tuple(x for x in args.grammars.split(",") if x)
    tokenizers = tuple(x for x in args.tokenizers.split(",") if x)
    engines = tuple(x for x in args.engines.split(",") if x)
    for kind, given, known in (("grammar", grammars, GRAMMARS), ("tokenizer", tokenizers, TOKENIZERS),
                               ("engine", engines, tuple(ENGINES))):
        unknown = [x for x in given if x not in known]
        if unknown:
            ap.error(f"unknown {kind} {', '.join(unknown)}; choose from {', '.join(known)}")
    argv = sys.argv[1:] if argv is None else argv
    command = "python -m benchmarks.run_masks" + (" " + shlex.join(argv) if argv else "")
    if args.from_json:
        with open(args.from_json, encoding="utf-8") as f:
            results = json.load(f)
        command = results["command"]
        cfg = results["config"]
        grammars, tokenizers, engines = cfg["grammars"], cfg["tokenizers"], cfg["engines"]
        args.cold, args.warm = cfg["cold"], cfg["warm"]
    full = (set(grammars) == set(GRAMMARS) and set(tokenizers) == set(TOKENIZERS)
            and {"cfgmask", "llguidance"} <= set(engines)
            and (args.cold, args.warm) == (DEFAULT_COLD, DEFAULT_WARM))
    if args.write and not full and not args.write_partial:
        ap.error("--write replaces the published tables: run it with the default grammars, tokenizers "
                 "and document counts, or add --write-partial")
    if not args.from_json:
        date, commit = doc_blocks.today(), doc_blocks.git_commit()  # of the code that is measured
        results = run(grammars, tokenizers, engines, args.cold, args.warm, args.ttfm_repeats,
                      log=lambda s: print(s, file=sys.stderr, flush=True))
        results.update(command=command, date=date, commit=commit, machine=machine_line())
    text = report(results, command)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            dump_results(results, f)
    if args.write:
        if not args.from_json:
            os.makedirs(os.path.dirname(RAW_RESULTS), exist_ok=True)
            with open(RAW_RESULTS, "w") as f:
                dump_results(results, f)
        doc_blocks.replace_block(PERF_DOC, BLOCK_TABLES, text)
        doc_blocks.replace_block(README, BLOCK_SUMMARY, readme_summary(results, command))
        print(f"wrote {os.path.relpath(PERF_DOC, ROOT)} and {os.path.relpath(README, ROOT)}", file=sys.stderr)
    if args.plots:
        from benchmarks import plots
        plots.write_plots(results, args.plots, log=lambda s: print(s, file=sys.stderr))
    bad = failures(results)
    for b in bad:
        print(f"REPLAY FAILURE: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
