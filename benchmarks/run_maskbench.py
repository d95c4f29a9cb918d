#!/usr/bin/env python3
"""MaskBench (the mask benchmark of JSONSchemaBench) for cfgmask, llguidance and XGrammar.

Data: ``maskbench/data/*.json`` of https://github.com/guidance-ai/jsonschemabench
at commit ``ba103c73756198dd9b149ddc7db7867da7a077f6`` (2026-02-12): 11,306
files, each ``{"schema", "tests": [{"data", "valid"}]}``.  The data is read
from ``--data`` (default ``~/.cache/cfgmask-maskbench/<commit>/data``); when
that folder is missing it is extracted there from a git directory of the
repository (``--jsb-git``, or ``$JSONSCHEMABENCH_GIT``), never into this
repository.  A file whose blob is missing from a partial clone is skipped and
counted (``missing``).

Metrics, as ``maskbench/maskbench/runner.py`` defines them:

* **TTFM** (time to first mask): schema -> a matcher ready for its first mask.
  cfgmask: ``compile_schema`` + ``cfgmask.compile`` + ``matcher()``;
  llguidance: ``LLMatcher(tokenizer, {"json_schema": schema})``; XGrammar:
  ``GrammarCompiler.compile_json_schema`` (its own cache off).
* **TBM** (time between masks): for every token of every test instance
  (``json.dumps(data, ensure_ascii=False)``, default separators ``", "`` and
  ``": "``, tokenized without special tokens) the time of computing the mask
  *plus* committing the token, in microseconds; a test stops at its first
  refused token.  As in MaskBench, the end of input is not checked (EOS).
* per schema, one outcome per engine: **pass**; **compile error** (the
  engine refused the schema); **validation error** (a valid instance
  refused); **invalidation error** (an invalid instance accepted; a schema
  with both counts here: MaskBench's scripts keep the last failing test);
  **timeout** (the schema did not finish within ``--timeout`` seconds: the
  child process running it is killed and a fresh one started, so a stalled
  schema is counted, never waited on); **crash** (the child died otherwise).

Engines run one after another on each schema in the same child process
(interleaved, so noise on a shared machine hits them alike), single-threaded,
with their MaskBench configurations: llguidance's JSON defaults (flexible
whitespace), XGrammar ``any_whitespace=False, strict_mode=True``, cfgmask
``whitespace="flexible"``, ``strict=True``, canonical escapes.  Tokenizer:
Mistral tekken (131,072 ids, the 128k vocabulary available offline here;
MaskBench itself used Llama-3.1's 128k tokenizer).  cfgmask's disk cache is
an empty temporary folder (``CFGMASK_CACHE_DIR``); its in-process automaton
memo stays warm across schemas, as in a server (``--cold`` clears it before
each schema).

Percentiles are MaskBench's (``sorted[int(n * p / 100)]``); TTFM percentiles
are over compiled schemas plus each timeout counted at the time limit.

Samples: ``--sample N`` (default 300) takes a deterministic stratified sample:
every category (the file-name prefix: Github_easy, Kubernetes, ...) gets a
share of N proportional to its size, at least one, the files of a category
ordered by the SHA-1 of their name.  ``--full`` runs every file (11,305
schemas: hours on one core).  ``--smoke`` runs 5 small schemas with a short
timeout and checks that the runner works (exit status 1 if an engine could
not run at all); without the MaskBench data it takes 5 of the 200 public
JSONSchemaBench schemas in the shared corpora (``$CFGMASK_CORPORA``).

    python -m benchmarks.run_maskbench --smoke
    python -m benchmarks.run_maskbench --sample 300 --out /tmp/maskbench.json --plots docs/img
    python -m benchmarks.run_maskbench --full --timeout 60 --out /tmp/maskbench-full.json
    python -m benchmarks.run_maskbench --plots-from /tmp/maskbench-full.json --plots docs/img

Output: a JSON results file (``--out``; meta, per-engine summary, per-schema
outcomes and timings), every TBM beside it (``<out>.masks.npz``) and a
printed table.  ``--plots DIR`` draws the TBM and TTFM CDF per engine
(``maskbench-tbm.png``, ``maskbench-ttfm.png``) when matplotlib is installed
(``pip install cfgmask[bench]``); ``--plots-from RESULTS`` draws them again
from those files (TTFM alone for a run without the ``.npz``).
"""

import argparse
import atexit
import collections
import hashlib
import json
import multiprocessing as mp
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

JSB_COMMIT = "ba103c73756198dd9b149ddc7db7867da7a077f6"
JSB_REPO = "https://github.com/guidance-ai/jsonschemabench"
ENGINES = ("cfgmask", "llguidance", "xgrammar")
OUTCOMES = ("pass", "compile_error", "validation_error", "invalidation_error", "timeout", "crash")
PERCENTILES = (50, 90, 99, 99.9)
SMOKE = ("Github_trivial---o10018.json", "Kubernetes---kb_100_Normalized.json",
         "Snowplow---sp_10_Normalized.json", "Glaiveai2K---analyze_health_data_4ad104b4.json",
         "BFCL_simple_0.json")


# ------------------------------------------------------------------------ data

def default_data_dir():
    return os.path.join(os.path.expanduser("~"), ".cache", "cfgmask-maskbench", JSB_COMMIT, "data")


def extract(git_dir, dest):
    """Write ``maskbench/data/*.json`` of :data:`JSB_COMMIT` from ``git_dir`` into ``dest``."""
    out = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", JSB_COMMIT,
                          "maskbench/data/"], capture_output=True, text=True, check=True).stdout
    entries = [(line.split()[2], line.split("\t", 1)[1]) for line in out.splitlines()]
    tmp = dest + ".part"
    os.makedirs(tmp, exist_ok=True)
    missing = []
    with subprocess.Popen(["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE) as p:
        for sha, name in entries:
            p.stdin.write(sha.encode() + b"\n")
            p.stdin.flush()
            header = p.stdout.readline().decode().split()
            if header[-1] == "missing":
                missing.append(os.path.basename(name))
                continue
            data = p.stdout.read(int(header[2]))
            p.stdout.read(1)
            with open(os.path.join(tmp, os.path.basename(name)), "wb") as f:
                f.write(data)
        p.stdin.close()
    with open(os.path.join(tmp, "MISSING.txt"), "w") as f:
        f.write("".join(m + "\n" for m in missing))
    os.replace(tmp, dest)


def data_files(data_dir, git_dir):
    if not os.path.isdir(data_dir):
        git_dir = git_dir or os.environ.get("JSONSCHEMABENCH_GIT")
        if not git_dir:
            sys.exit(f"MaskBench data not found at {data_dir}: pass --data DIR, or --jsb-git with a "
                     f"git directory of {JSB_REPO} (commit {JSB_COMMIT})")
        print(f"extracting maskbench/data from {git_dir} into {data_dir} ...", file=sys.stderr)
        extract(git_dir, data_dir)
    names = sorted(f for f in os.listdir(data_dir) if f.endswith(".json"))
    missing_path = os.path.join(data_dir, "MISSING.txt")
    missing = open(missing_path).read().split() if os.path.exists(missing_path) else []
    return names, missing


def category(name):
    if "---" in name:
        return name.split("---")[0]
    return name[: -len(".json")].rsplit("_", 1)[0]


def format_sample(data_dir, names, n, max_bytes=200_000):
    """``n`` schemas (of at most ``max_bytes``) whose text asserts one of the
    formats cfgmask checks (``strings.FORMATS``), drawn with a fixed seed: the
    compiles the formats' table computed ahead serves (docs/json-schema.md,
    "Formats computed ahead")."""
    from cfgmask.frontends.json_schema.strings import FORMATS
    found = re.compile(r'"format"\s*:\s*"([^"]+)"')
    hits = []
    for name in sorted(names):
        path = os.path.join(data_dir, name)
        if os.path.getsize(path) > max_bytes:
            continue
        with open(path, encoding="utf-8") as f:
            if set(found.findall(f.read())) & set(FORMATS):
                hits.append(name)
    random.Random(1).shuffle(hits)
    return hits[:n]


def stratified_sample(names, n):
    """``n`` names (about), every category in proportion to its size, at least one each."""
    by_cat = collections.defaultdict(list)
    for name in names:
        by_cat[category(name)].append(name)
    total = len(names)
    picked = []
    for cat in sorted(by_cat):
        files = sorted(by_cat[cat], key=lambda s: hashlib.sha1(s.encode()).hexdigest())
        k = max(1, round(n * len(files) / total))
        picked += files[:k]
    return sorted(picked)


# --------------------------------------------------------------------- engines

class Cfgmask:
    def __init__(self, tok, cold):
        import numpy as np

        import cfgmask
        from cfgmask.frontends.json_schema import compile_schema
        self.cfgmask, self.compile_schema, self.cold = cfgmask, compile_schema, cold
        self.vocab = cfgmask.Vocabulary.from_tekken(tok.path)
        self.bm = np.zeros((1, (self.vocab.vocab_size + 31) // 32), np.int32)
        if hasattr(self.vocab, "prepare"):  # the tokenizer prepared, as LLTokenizer is
            self.vocab.prepare()
        c = cfgmask.compile(cfgmask.Grammar.from_lark('start: "a"\n'), self.vocab)
        c.matcher().fill_bitmask(self.bm)   # per-vocabulary work done here, not in the first TTFM

    def compile(self, schema):
        if self.cold:
            from benchmarks.run_json_schema import clear_cfgmask_caches
            clear_cfgmask_caches()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = self.compile_schema(self.cfgmask.Grammar, schema, whitespace="flexible")
        self.compiled = self.cfgmask.compile(g, self.vocab)
        return self.compiled.matcher()

    def reset(self, first):
        return first if first is not None else self.compiled.matcher()

    def step(self, m, t):
        m.fill_bitmask(self.bm)
        if not (int(self.bm[0, t >> 5]) >> (t & 31)) & 1:
            return False
        return m.try_consume(t)


class LLGuidance:
    def __init__(self, tok):
        import llguidance
        import llguidance.numpy

        from benchmarks.engines import LLGuidanceEngine
        e = LLGuidanceEngine()
        e.prepare(tok)
        self.llg, self.lltok = llguidance, e.lltok
        self.bm = llguidance.numpy.allocate_token_bitmask(1, self.lltok.vocab_size)

    def compile(self, schema):
        m = self.llg.LLMatcher(self.lltok, json.dumps({"grammars": [{"json_schema": schema}]}),
                               log_level=0)
        if m.is_error():
            raise ValueError(m.get_error())
        self.m0 = m
        return m

    def reset(self, first):
        return self.m0.deep_copy()

    def step(self, m, t):
        self.llg.numpy.fill_next_token_bitmask(m, self.bm, 0)
        if not (int(self.bm[0, t >> 5]) >> (t & 31)) & 1:
            if m.is_error():
                raise ValueError(m.get_error())
            return False
        m.consume_token(t)
        return True


class XGrammar:
    def __init__(self, tok):
        from benchmarks.engines import XGrammarEngine
        e = XGrammarEngine()
        e.prepare(tok)
        self.xgr, self.compiler, self.bm = e.xgr, e.compiler, e.bm_t

    def compile(self, schema):
        self.compiled = self.compiler.compile_json_schema(json.dumps(schema), any_whitespace=False,
                                                          strict_mode=True)
        return None

    def reset(self, first):
        return self.xgr.GrammarMatcher(self.compiled)

    def step(self, m, t):
        m.fill_next_token_bitmask(self.bm)
        return m.accept_token(t)


def make_engine(name, tok, cold):
    if name == "cfgmask":
        return Cfgmask(tok, cold)
    if name == "llguidance":
        return LLGuidance(tok)
    return XGrammar(tok)


def run_one(engine, tok, doc):
    """One engine on one MaskBench file: the runner.py loop."""
    tests = doc.get("tests", [])
    rec = {"num_tests": len(tests)}
    t0 = time.perf_counter_ns()
    try:
        first = engine.compile(doc["schema"])
    except Exception as e:  # noqa: BLE001 - any refusal is a compile error
        rec["outcome"] = "compile_error"
        rec["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        return rec, []
    rec["ttfm_us"] = (time.perf_counter_ns() - t0) / 1000
    masks = []
    refused_valid = accepted_invalid = 0
    for i, test in enumerate(tests):
        tokens = tok.encode(json.dumps(test["data"], indent=None, ensure_ascii=False))
        accepted = True
        try:
            m = engine.reset(first if i == 0 else None)
            for t in tokens:
                t2 = time.perf_counter_ns()
                ok = engine.step(m, t)
                masks.append((time.perf_counter_ns() - t2) / 1000)
                if not ok:
                    accepted = False
                    break
        except Exception as e:  # noqa: BLE001 - MaskBench counts it against the test
            rec.setdefault("error", f"test #{i}: {type(e).__name__}: {str(e)[:200]}")
            accepted = False
        if accepted and not test["valid"]:
            accepted_invalid += 1
        elif not accepted and test["valid"]:
            refused_valid += 1
    rec["valid_refused"], rec["invalid_accepted"] = refused_valid, accepted_invalid
    rec["outcome"] = ("invalidation_error" if accepted_invalid else
                      "validation_error" if refused_valid else "pass")
    rec["num_tokens"] = len(masks)
    return rec, masks


def worker(conn, engines, cold):
    """Child process: prepare the engines once, then answer ``(path, engine)`` jobs."""
    try:
        from benchmarks.engines import Tok
        tok = Tok("tekken")
        eng = {name: make_engine(name, tok, cold) for name in engines}
    except Exception as e:  # noqa: BLE001
        conn.send(("error", f"{type(e).__name__}: {e}"))
        return
    conn.send(("ready", None))
    while True:
        job = conn.recv()
        if job is None:
            return
        path, name = job
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        conn.send(("done", run_one(eng[name], tok, doc)))


class Child:
    """The child process, restarted after a timeout or a crash."""

    def __init__(self, engines, cold, ready_timeout=600):
        self.engines, self.cold, self.ready_timeout = engines, cold, ready_timeout
        self.ctx = mp.get_context("spawn")
        self.proc = None

    def start(self):
        self.conn, child_conn = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=worker, args=(child_conn, self.engines, self.cold),
                                     daemon=True)
        self.proc.start()
        child_conn.close()
        if not self.conn.poll(self.ready_timeout):
            self.kill()
            raise RuntimeError("the benchmark child did not get ready (tokenizer preparation)")
        kind, msg = self.conn.recv()
        if kind != "ready":
            self.kill()
            raise RuntimeError(f"the benchmark child failed to start: {msg}")

    def kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
            self.proc = None

    def run(self, path, name, timeout):
        """``(record, masks)``; a timeout or a crash kills the child (restarted on next use)."""
        if self.proc is None:
            self.start()
        t0 = time.monotonic()
        try:
            self.conn.send((path, name))
            if self.conn.poll(timeout):
                kind, payload = self.conn.recv()
                return payload
            outcome = "timeout"
        except (EOFError, BrokenPipeError, ConnectionResetError):
            outcome = "crash"
        code = self.proc.exitcode if self.proc is not None else None
        self.kill()
        return {"outcome": outcome, "seconds": round(time.monotonic() - t0, 1),
                "exitcode": code}, []

    def close(self):
        if self.proc is not None:
            try:
                self.conn.send(None)
                self.proc.join(5)
            except (BrokenPipeError, OSError):
                pass
            self.kill()


# --------------------------------------------------------------------- summary

def tail_report(engine, masks, owners, p):
    """Which schemas hold ``engine``'s masks at or above percentile ``p`` (MaskBench's
    percentile), most first: where a TBM tail comes from."""
    if not masks:
        return f"{engine}: no masks"
    threshold = pick(sorted(masks), p)
    counts = collections.Counter(o for m, o in zip(masks, owners) if m >= threshold)
    lines = [f"{engine}: {sum(counts.values())} masks at or above p{p:g} = {threshold:.0f} us, "
             f"in {len(counts)} schemas:"]
    lines += [f"  {c:5d}  {name}" for name, c in counts.most_common(20)]
    return "\n".join(lines)


def pick(xs, p):
    """MaskBench's percentile: ``sorted(xs)[int(len * p / 100)]`` (capped)."""
    if not xs:
        return None
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


def summarize(records, masks, engines, timeout):
    out = {}
    for name in engines:
        recs = [r[name] for r in records.values() if name in r]
        counts = collections.Counter(r["outcome"] for r in recs)
        tbm = sorted(masks[name])
        ttfm = sorted([r["ttfm_us"] for r in recs if "ttfm_us" in r] +
                      [timeout * 1e6] * counts["timeout"])
        s = {"schemas": len(recs), **{k: counts.get(k, 0) for k in OUTCOMES},
             "tokens": len(tbm)}
        for label, xs in (("tbm_us", tbm), ("ttfm_us", ttfm)):
            s[label] = {f"p{p}": pick(xs, p) for p in PERCENTILES}
            s[label]["mean"] = sum(xs) / len(xs) if xs else None
        out[name] = s
    return out


def _fmt_us(x):
    if x is None:
        return "-"
    if x >= 1e6:
        return f"{x / 1e6:.2f} s"
    if x >= 1e4:
        return f"{x / 1e3:.0f} ms"
    if x >= 1e3:
        return f"{x / 1e3:.1f} ms"
    return f"{x:.0f} µs" if x >= 10 else f"{x:.1f} µs"


def table(summary, engines):
    rows = [("schemas", "schemas")] + [(k, k.replace("_", " ")) for k in OUTCOMES] + [("tokens", "tokens")]
    lines = ["| metric | " + " | ".join(engines) + " |", "|:--|" + "--:|" * len(engines)]
    for key, label in rows:
        lines.append(f"| {label} | " + " | ".join(f"{summary[e][key]:,}" for e in engines) + " |")
    for metric, label in (("tbm_us", "TBM"), ("ttfm_us", "TTFM")):
        for p in [f"p{p}" for p in PERCENTILES] + ["mean"]:
            lines.append(f"| {label} {p} | " +
                         " | ".join(_fmt_us(summary[e][metric][p]) for e in engines) + " |")
    return "\n".join(lines)


def plots(records, masks, engines, timeout, folder):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
    except ImportError:
        print("matplotlib is not installed: no plots (pip install cfgmask[bench])", file=sys.stderr)
        return []
    os.makedirs(folder, exist_ok=True)
    written = []
    for metric, title in (("tbm", "TBM: time to compute a mask and commit a token"),
                          ("ttfm", "TTFM: time to first mask (compile)")):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        drawn = 0
        for name in engines:
            if metric == "tbm":
                xs = np.sort(np.asarray(masks[name], dtype=float))
            else:
                recs = [r[name] for r in records.values() if name in r]
                xs = np.sort(np.asarray([r["ttfm_us"] for r in recs if "ttfm_us" in r] +
                                        [timeout * 1e6] * sum(r["outcome"] == "timeout" for r in recs),
                                        dtype=float))
            if len(xs) == 0:
                continue
            ax.plot(np.maximum(xs, 0.1), np.arange(1, len(xs) + 1) / len(xs), label=name)
            drawn += 1
        if not drawn:   # no data for this metric (a redraw without masks): keep the old file
            plt.close(fig)
            continue
        ax.set_xscale("log")
        ax.set_xlabel("microseconds (log)")
        ax.set_ylabel("fraction at most x")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        path = os.path.join(folder, f"maskbench-{metric}.png")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def masks_path(results):
    """The per-mask TBM file beside a results file (``x.json[.gz]`` -> ``x.masks.npz``)."""
    base = results[:-3] if results.endswith(".gz") else results
    return (base[:-5] if base.endswith(".json") else base) + ".masks.npz"


def save_masks(results, masks):
    """Every TBM in microseconds per engine (float32, compressed): the TBM CDF of a
    run can be drawn again later (``--plots-from``)."""
    import numpy as np
    np.savez_compressed(masks_path(results),
                        **{e: np.asarray(xs, dtype=np.float32) for e, xs in masks.items()})


def redraw(results, folder):
    """The plots of an earlier run: TTFM from its results file, TBM from its
    ``.masks.npz`` when there is one."""
    import gzip

    import numpy as np
    try:
        with (gzip.open if results.endswith(".gz") else open)(results, "rt", encoding="utf-8") as f:
            data = json.load(f)
        engines, timeout, records = data["meta"]["engines"], data["meta"]["timeout_s"], data["schemas"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"--plots-from: {results} is not a run_maskbench results file ({type(e).__name__}: {e})")
    masks = {e: [] for e in engines}
    if os.path.exists(masks_path(results)):
        with np.load(masks_path(results)) as z:
            masks = {e: z[e].tolist() if e in z else [] for e in engines}
    else:
        print(f"no {masks_path(results)}: TTFM only", file=sys.stderr)
    for p in plots(records, masks, engines, timeout, folder):
        print(f"plot: {p}")
    return 0


def git_commit():
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "-uno", "--", "cfgmask"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("+uncommitted changes in cfgmask/" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


# ------------------------------------------------------------------------ main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--sample", type=int, default=300, help="stratified sample size (default 300)")
    mode.add_argument("--full", action="store_true", help="every schema")
    mode.add_argument("--smoke", action="store_true", help="5 small schemas, short timeout")
    mode.add_argument("--format-sample", type=int, metavar="N",
                      help="N schemas that assert a format cfgmask checks (a deterministic draw)")
    ap.add_argument("--files", nargs="*", help="these MaskBench file names only")
    ap.add_argument("--engines", default=",".join(ENGINES), help="comma-separated subset of "
                    + ", ".join(ENGINES))
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per schema and engine")
    ap.add_argument("--data", default=default_data_dir(), help="folder of MaskBench *.json files")
    ap.add_argument("--jsb-git", help="git directory of jsonschemabench to extract the data from")
    ap.add_argument("--out", help="results JSON (default: a file in the temporary folder)")
    ap.add_argument("--plots", help="folder for the CDF plots (needs matplotlib)")
    ap.add_argument("--cold", action="store_true", help="clear cfgmask's automaton memo per schema")
    ap.add_argument("--tail", type=float, default=None, metavar="P",
                    help="also print, per engine, the schemas holding its masks at or above "
                         "percentile P (e.g. 99.9), with how many each")
    ap.add_argument("--plots-from", metavar="RESULTS",
                    help="draw the plots (into --plots) from an earlier --out file and its "
                         ".masks.npz beside it (TTFM only without it), running nothing")
    args = ap.parse_args(argv)
    if args.plots_from:
        if not os.path.isfile(args.plots_from):
            ap.error(f"--plots-from: no results file {args.plots_from!r}")
        return redraw(args.plots_from, args.plots or ".")

    engines = tuple(e for e in args.engines.split(",") if e)
    unknown = set(engines) - set(ENGINES)
    if unknown:
        ap.error(f"unknown engines: {', '.join(sorted(unknown))}")
    if args.smoke and not os.path.isdir(args.data) and not (args.jsb_git or
                                                            os.environ.get("JSONSCHEMABENCH_GIT")):
        # CI without the MaskBench data: the 200 public JSONSchemaBench schemas
        # (same file layout) in the shared corpora
        args.data = os.path.join(os.environ.get("CFGMASK_CORPORA", os.path.join(
            os.path.dirname(ROOT), "shared", "corpora")), "json", "jsonschemabench-public")
    if args.format_sample is not None and args.format_sample < 1:
        ap.error(f"--format-sample needs at least 1 schema, got {args.format_sample}")
    names, missing = data_files(args.data, args.jsb_git)
    if args.files:
        chosen, how = sorted(args.files), "files"
    elif args.smoke:
        chosen, how = [n for n in SMOKE if n in names], "smoke"
        if len(chosen) < len(SMOKE):   # another folder: one file from each of 5 categories
            firsts = {}
            for n in sorted(names, key=lambda s: hashlib.sha1(s.encode()).hexdigest()):
                firsts.setdefault(category(n), n)
            cats = sorted(firsts)
            chosen = sorted({firsts[cats[i * len(cats) // len(SMOKE)]] for i in range(len(SMOKE))})
        args.timeout = min(args.timeout, 30.0)
    elif args.full:
        chosen, how = names, "full"
    elif args.format_sample is not None:
        chosen = format_sample(args.data, names, args.format_sample)
        how = f"{len(chosen)} schemas asserting a format"
    else:
        chosen, how = stratified_sample(names, args.sample), f"stratified sample of {args.sample}"

    cache_dir = tempfile.mkdtemp(prefix="cfgmask-maskbench-cache-")
    atexit.register(shutil.rmtree, cache_dir, True)   # scratch: never left in /tmp
    os.environ["CFGMASK_CACHE_DIR"] = cache_dir  # inherited by the child: an empty cache
    child = Child(engines, args.cold)
    records, masks = {}, {e: [] for e in engines}
    owners = {e: [] for e in engines}     # the schema of each mask, for --tail
    t_start = time.monotonic()
    try:
        for i, name in enumerate(chosen):
            path = os.path.join(args.data, name)
            records[name] = {}
            for eng in engines:
                rec, ms = child.run(path, eng, args.timeout)
                records[name][eng] = rec
                masks[eng].extend(ms)
                owners[eng].extend([name] * len(ms))
            line = " ".join(f"{e}={records[name][e]['outcome']}" for e in engines)
            print(f"[{i + 1}/{len(chosen)}] {name}: {line}", file=sys.stderr, flush=True)
    finally:
        child.close()
    summary = summarize(records, masks, engines, args.timeout)
    if args.tail is not None:
        for eng in engines:
            print(tail_report(eng, masks[eng], owners[eng], args.tail))
    from benchmarks.engines import engine_versions
    meta = {"jsonschemabench": {"repo": JSB_REPO, "commit": JSB_COMMIT, "data": args.data,
                                "files": len(names), "missing_blobs": missing},
            "selection": how, "schemas": len(chosen), "engines": list(engines),
            "versions": engine_versions(), "cfgmask_git": git_commit(),
            "tokenizer": "Mistral tekken_240911 (131,072 ids)", "timeout_s": args.timeout,
            "cold_memo": args.cold, "cfgmask_cache_dir": "empty temporary folder",
            "wall_s": round(time.monotonic() - t_start, 1),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out = args.out or os.path.join(tempfile.gettempdir(), f"maskbench-{how.split()[0]}.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "summary": summary, "schemas": records}, f, indent=1)
    save_masks(out, masks)
    print(f"\nMaskBench ({how}, {len(chosen)} schemas, jsonschemabench {JSB_COMMIT[:12]}, "
          f"cfgmask {meta['cfgmask_git']}, timeout {args.timeout:g} s, {meta['wall_s']:.0f} s)\n")
    print(table(summary, engines))
    print(f"\nresults: {out}")
    if args.plots:
        for p in plots(records, masks, engines, args.timeout, args.plots):
            print(f"plot: {p}")
    ran = all(summary[e]["schemas"] and summary[e]["crash"] < summary[e]["schemas"] for e in engines)
    return 0 if ran else 1


if __name__ == "__main__":
    sys.exit(main())
