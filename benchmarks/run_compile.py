#!/usr/bin/env python3
"""Grammar size and compile times of the bundled grammars, next to llguidance (the README's compile table).

For each grammar -- the bundled ``json``, ``sql`` and ``javascript``, and
Lark's own ``lark.lark`` (shipped with the ``lark`` package) as a grammar
nobody wrote for cfgmask -- it prints:

* rules (flattened, including the augmented start rule), terminals and the
  total number of DFA states of the terminals (``cfgmask check`` shows them
  per terminal);
* cfgmask's *load* (Lark text -> ``Grammar``), *compile* (``Grammar`` ->
  ``CompiledGrammar`` on a prepared vocabulary) and *first mask* (new
  matcher + first ``fill_bitmask``), and their sum, time to first mask;
* llguidance's time to first mask for the same text (``grammar_from`` +
  ``LLMatcher`` + first fill; the ``%llguidance`` prefix as in run_masks.py)
  and the ratio.

Times are the median of ``--repeats`` fresh loads (default 5); the engines
alternate.  The vocabulary (``--tokenizer``, default SmolLM2) is prepared once
before (benchmarks/engines.py), so nothing per-vocabulary is counted.
Absolute times on a shared machine are noisy; the ratio is measured in the
same run.

Usage::

    python -m benchmarks.run_compile            # prints the table (about 1 minute)
    python -m benchmarks.run_compile --write    # ... and writes it into README.md and docs/performance.md
"""

import argparse
import gc
import os
import shlex
import sys
import time

import numpy as np

import cfgmask
from benchmarks import doc_blocks
from benchmarks.engines import (TOKENIZER_LABELS, TOKENIZERS, CfgmaskEngine,
                                LLGuidanceEngine, Tok, Unavailable)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BLOCK = "run_compile:table"
DOCS = (os.path.join(ROOT, "README.md"), os.path.join(ROOT, "docs", "performance.md"))


def grammar_paths():
    """``[(label, path)]`` of the grammars in the table."""
    import lark
    out = [(f"`grammars/{n}.lark`", str(cfgmask.Grammar.builtin_path(n))) for n in ("json", "sql", "javascript")]
    out.insert(0, ("Lark's own `lark.lark`", os.path.join(os.path.dirname(lark.__file__), "grammars", "lark.lark")))
    return out


def dfa_states(grammar):
    """Total DFA states of the terminals, or ``None`` if this cfgmask version does not expose them."""
    try:
        from cfgmask.engine.lexer import LexerSpec
        spec = LexerSpec(grammar)
        return sum(int(spec.n_states(t)) for t in range(grammar.n_terminals))
    except (ImportError, AttributeError, TypeError):
        return None


def measure(path, cfg_vocab, llg, repeats):
    """One grammar: sizes, cfgmask's load/compile/first-mask medians and llguidance's ttfm."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    imports = [os.path.dirname(path)]
    bm = None
    load, comp, first, llg_ttfm = [], [], [], []
    llg_error = None
    for r in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        g = cfgmask.Grammar.from_lark(text, import_paths=imports, source=path)
        t1 = time.perf_counter()
        c = cfgmask.compile(g, cfg_vocab)
        t2 = time.perf_counter()
        if bm is None:
            bm = c.allocate_bitmask()
        c.matcher().fill_bitmask(bm)
        t3 = time.perf_counter()
        load.append(t1 - t0)
        comp.append(t2 - t1)
        first.append(t3 - t2)
        if llg is not None and llg_error is None:
            gc.collect()
            t0 = time.perf_counter()
            try:
                lc = llg._compile_text(text)
            except RuntimeError as e:
                llg_error = str(e)
                continue
            llg.fill(llg.matcher(lc))
            llg_ttfm.append(time.perf_counter() - t0)
    med = lambda xs: float(np.median(xs)) if xs else None  # noqa: E731
    return {"rules": g.n_rules, "terminals": g.n_terminals, "dfa_states": dfa_states(g),
            "load_s": med(load), "compile_s": med(comp), "first_mask_s": med(first),
            "ttfm_s": med([a + b + c for a, b, c in zip(load, comp, first)]),
            "llg_ttfm_s": med(llg_ttfm), "llg_error": llg_error}


def _ms(x):
    if x is None:
        return "-"
    x *= 1e3
    return f"{x:.0f} ms" if x >= 100 else (f"{x:.1f} ms" if x >= 1 else f"{x:.2f} ms")


def _first_line(msg, limit=100):
    msg = msg.replace("llguidance refused the grammar: ", "").splitlines()[0].replace("`", "'")
    return msg if len(msg) <= limit else msg[:limit] + "..."


def table(rows, tok_label, repeats):
    lines = [f"Grammar load + compile + first mask ({tok_label} vocabulary, already prepared; median of "
             f"{repeats}; ttfm = time to first mask = load + compile + first mask):", "",
             "| grammar | rules | terminals | DFA states | load | compile | first mask | ttfm "
             "| llguidance ttfm | cfgmask / llguidance |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, r in rows:
        ratio = f"{r['ttfm_s'] / r['llg_ttfm_s']:.1f}×" if r["llg_ttfm_s"] else "-"
        llg = _ms(r["llg_ttfm_s"]) if r["llg_error"] is None else "refused"
        states = "-" if r["dfa_states"] is None else f"{r['dfa_states']:,}"
        lines.append(f"| {label} | {r['rules']} | {r['terminals']} | {states} | {_ms(r['load_s'])} | "
                     f"{_ms(r['compile_s'])} | {_ms(r['first_mask_s'])} | {_ms(r['ttfm_s'])} | {llg} | {ratio} |")
    notes = [f"{label}: llguidance refused it: `{_first_line(r['llg_error'])}`" for label, r in rows
             if r["llg_error"]]
    if notes:
        lines += [""] + [f"* {n}" for n in notes]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--tokenizer", choices=TOKENIZERS, default="smollm2")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-llguidance", action="store_true")
    ap.add_argument("--write", action="store_true", help="write the table into README.md and docs/performance.md")
    args = ap.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    command = "python -m benchmarks.run_compile" + (" " + shlex.join(argv) if argv else "")
    started = time.perf_counter()
    tok = Tok(args.tokenizer)
    cfg = CfgmaskEngine()
    cfg.prepare(tok)
    llg = None
    if not args.no_llguidance:
        try:
            llg = LLGuidanceEngine()
            llg.prepare(tok)
        except Unavailable as e:
            print(f"llguidance skipped: {e}", file=sys.stderr)
            llg = None
    rows = []
    for label, path in grammar_paths():
        print(f"{label} ...", file=sys.stderr, flush=True)
        rows.append((label, measure(path, cfg.vocab, llg, args.repeats)))
    text = (doc_blocks.provenance(command, time.perf_counter() - started) + "\n\n"
            + table(rows, TOKENIZER_LABELS[args.tokenizer], args.repeats))
    print(text)
    if args.write:
        for path in DOCS:
            doc_blocks.replace_block(path, BLOCK, text)
        print("wrote " + ", ".join(os.path.relpath(p, ROOT) for p in DOCS), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
