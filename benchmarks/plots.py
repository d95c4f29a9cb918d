#!/usr/bin/env python3
"""Plots of a saved ``run_masks.py`` run: mask-latency CDFs and time to first mask.

Reads the raw results that ``run_masks.py --write`` keeps in
``benchmarks/results/masks.json`` (or ``--json PATH``) and writes, into
``docs/img/`` by default:

* ``mask-latency-cdf.png``: one panel per grammar x tokenizer, the
  cumulative distribution of per-mask latency for each engine (cfgmask,
  llguidance, XGrammar where it runs), warm documents solid, cold dashed;
  drawn from the percentile grid ``run_masks.py`` stores (0.5, 1..99, 99.5,
  99.9), so the curve stops at p99.9, not at the maximum;
* ``time-to-first-mask.png``: grammar text -> first mask on a prepared
  vocabulary (median of the run's fresh compiles), per grammar, tokenizer
  and engine, on a log scale.

Usage::

    python -m benchmarks.plots                          # benchmarks/results/masks.json -> docs/img/
    python -m benchmarks.plots --json /tmp/run.json --out /tmp/img
    python -m benchmarks.run_masks --write --plots      # measure, write the tables and the plots

Needs matplotlib (``pip install 'cfgmask[bench]'``).
"""

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RAW_RESULTS = os.path.join(ROOT, "benchmarks", "results", "masks.json")
IMG_DIR = os.path.join(ROOT, "docs", "img")
CDF_PNG = "mask-latency-cdf.png"
TTFM_PNG = "time-to-first-mask.png"

ENGINE_ORDER = ("cfgmask", "llguidance", "xgrammar")
COLORS = {"cfgmask": "#1f77b4", "llguidance": "#ff7f0e", "xgrammar": "#2ca02c"}
TOKENIZER_SHORT = {"smollm2": "SmolLM2 49k", "tekken": "tekken 131k", "sp": "SentencePiece 32k"}


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("plots need matplotlib: pip install 'cfgmask[bench]'") from None
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path):
    # no Software/date metadata, so that a re-render of the same results gives the same file
    fig.savefig(path, dpi=100, metadata={"Software": None}, pil_kwargs={"optimize": True})


def _caption(results):
    commit = results.get("commit", "?")  # doc_blocks.git_commit(): "commit abc1234 [+ local changes]"
    return f"benchmarks/run_masks.py, {results.get('date', '?')}, {commit}"


def plot_cdfs(results, path):
    """One panel per (grammar, tokenizer): per-mask latency CDFs of every engine."""
    plt = _pyplot()
    from matplotlib import ticker
    pcts = results["config"].get("cdf_percentiles")
    pairs = results["pairs"]
    if not pcts or not any("cdf_us" in r for p in pairs for r in p["engines"].values()):
        raise SystemExit("these results have no latency percentiles (cdf_us): re-run benchmarks/run_masks.py")
    grammars = list(dict.fromkeys(p["grammar"] for p in pairs))
    toks = list(dict.fromkeys(p["tokenizer"] for p in pairs))
    fig, axes = plt.subplots(len(grammars), len(toks), figsize=(4.2 * len(toks), 3.2 * len(grammars)),
                             squeeze=False, sharey=True)
    for p in pairs:
        ax = axes[grammars.index(p["grammar"])][toks.index(p["tokenizer"])]
        for ename in ENGINE_ORDER:
            r = p["engines"].get(ename)
            if not r or "cdf_us" not in r:
                continue
            for phase, style, width in (("warm", "-", 1.8), ("cold", "--", 1.0)):
                q = r["cdf_us"].get(phase)
                if q:
                    ax.plot(q, pcts, style, color=COLORS[ename], lw=width,
                            label=f"{ename} {phase}")
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        ax.set_ylim(0, 100)
        ax.grid(True, which="major", alpha=0.3)
        ax.set_title(f"{p['grammar']}, {TOKENIZER_SHORT.get(p['tokenizer'], p['tokenizer'])}", fontsize=10)
        if ax in axes[-1]:
            ax.set_xlabel("mask latency (µs, log scale)")
        if ax is axes[grammars.index(p["grammar"])][0]:
            ax.set_ylabel("percentile of masks")
    handles, labels = [], []
    for row in axes:
        for ax in row:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 6), fontsize=9, frameon=False)
    fig.suptitle("Per-mask latency CDF (left and higher is faster); " + _caption(results),
                 fontsize=9, y=0.005, va="bottom")
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))
    _save(fig, path)
    plt.close(fig)


def plot_ttfm(results, path):
    """Time to first mask per grammar: bars per tokenizer and engine, log scale."""
    plt = _pyplot()
    from matplotlib import ticker
    pairs = results["pairs"]
    grammars = list(dict.fromkeys(p["grammar"] for p in pairs))
    toks = list(dict.fromkeys(p["tokenizer"] for p in pairs))
    engines = [e for e in ENGINE_ORDER if any(e in p["engines"] for p in pairs)]
    fig, axes = plt.subplots(1, len(grammars), figsize=(4.4 * len(grammars), 3.6), squeeze=False, sharey=True)
    width = 0.8 / len(engines)
    for gi, g in enumerate(grammars):
        ax = axes[0][gi]
        for ei, ename in enumerate(engines):
            xs, ys = [], []
            for ti, t in enumerate(toks):
                p = next((p for p in pairs if p["grammar"] == g and p["tokenizer"] == t), None)
                r = p and p["engines"].get(ename)
                if r:
                    xs.append(ti + (ei - (len(engines) - 1) / 2) * width)
                    ys.append(r["ttfm_s"] * 1e3)
            if xs:
                bars = ax.bar(xs, ys, width, color=COLORS[ename], label=ename)
                ax.bar_label(bars, labels=[f"{y:.3g}" for y in ys], fontsize=7, padding=1)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        ax.set_xticks(range(len(toks)), [TOKENIZER_SHORT.get(t, t) for t in toks], fontsize=8)
        ax.set_title(g, fontsize=10)
        ax.grid(True, axis="y", which="major", alpha=0.3)
        if gi == 0:
            ax.set_ylabel("time to first mask (ms, log scale)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=9, frameon=False)
    fig.suptitle("Grammar text -> first mask on a prepared vocabulary (median; lower is faster); "
                 + _caption(results), fontsize=8, y=0.005, va="bottom")
    fig.tight_layout(rect=(0, 0.04, 1, 0.92))
    _save(fig, path)
    plt.close(fig)


def write_plots(results, out_dir=IMG_DIR, log=print):
    """Write both plots of ``results`` (a run_masks.py results dict) into ``out_dir``; returns the paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = [os.path.join(out_dir, CDF_PNG), os.path.join(out_dir, TTFM_PNG)]
    plot_cdfs(results, paths[0])
    plot_ttfm(results, paths[1])
    for p in paths:
        log(f"wrote {os.path.relpath(p, ROOT) if p.startswith(ROOT) else p}")
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--json", default=RAW_RESULTS, metavar="PATH",
                    help="results of run_masks.py --write or --json (default: %(default)s)")
    ap.add_argument("--out", default=IMG_DIR, metavar="DIR", help="output directory (default: %(default)s)")
    args = ap.parse_args(argv)
    with open(args.json, encoding="utf-8") as f:
        results = json.load(f)
    write_plots(results, args.out, log=lambda s: print(s, file=sys.stderr))
    return 0


if __name__ == "__main__":
    sys.exit(main())
