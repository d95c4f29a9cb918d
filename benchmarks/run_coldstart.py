#!/usr/bin/env python3
"""Cold start: a grammar this process and this cache have never seen, to its first mask (issue 23).

For each grammar, a fresh process with an empty ``CFGMASK_CACHE_DIR``:

1. the tokenizer is prepared for both engines (untimed, reported): cfgmask's
   ``Vocabulary.prepare()`` (its trie, first-byte sets and standard slices;
   ``--bare-vocab``: the trie and first-byte sets only), llguidance's
   ``LLTokenizer`` (its trie and its slices), and
   each engine compiles a one-rule grammar and fills its first mask, so that
   per-vocabulary work is done; module imports (Lark's loader, cfgmask's JSON
   Schema front end) are a once-per-process cost and are done here too;
2. **cold**: grammar text -> ``Grammar.from_lark`` (or ``from_json_schema``)
   -> ``compile`` -> first ``fill_bitmask``, then llguidance's
   ``grammar_from`` -> ``LLMatcher`` -> first fill, same text, same process;
3. **warm**: in another fresh process (empty cache again), a first, different
   grammar is compiled by both engines (untimed), then this grammar is timed
   as in 2: a new grammar in a process that already runs both engines.

Grammars: the bundled ones (``grammars/*.lark``, the SQL dialects composed
as ``Grammar.builtin`` composes them), Lark's own ``lark.lark``, the
third-party grammars listed in ``benchmarks/coldstart_grammars.json``
(source repository, commit, path and licence; the texts are read from a
mirror of each repository, ``--mirror-dir``, or from ``--grammar-dir``, and
never copied here) and the JSON schemas listed there.

The machine is shared and its timings noisy: each cell is the median of
``--repeat`` processes, and the ratio cfgmask / llguidance is taken within
each process before the median.  llguidance gets Lark text behind
``%llguidance {"allow_initial_skip": true}`` as in benchmarks/engines.py.

Run: ``python -m benchmarks.run_coldstart [--repeat 3] [--json out.json]``;
``--smoke`` (for CI): json.lark and one schema, one process each, JSON on
stdout, no llguidance needed.
"""

import argparse
import atexit
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MANIFEST = os.path.join(ROOT, "benchmarks", "coldstart_grammars.json")
LLG_PREFIX = '%llguidance {"allow_initial_skip": true}\n'
TRIVIAL = 'start: "a"\n'
WARMUP = ("grammars/json.lark", "lark-csv-example")  # the first grammar of a warm process


# ---------------------------------------------------------------- grammars

def _lark_lark():
    import importlib.util
    spec = importlib.util.find_spec("lark")
    return os.path.join(list(spec.submodule_search_locations)[0], "grammars", "lark.lark")


def grammar_specs(mirror_dir=None, grammar_dir=None, smoke=False):
    """``[(name, kind, source, start)]``: kind ``lark`` (source = text) or ``schema``."""
    with open(MANIFEST, encoding="utf-8") as f:
        manifest = json.load(f)
    out = []
    bundled = ["json", "sql", "javascript"] if not smoke else ["json"]
    for name in bundled:
        path = os.path.join(ROOT, "grammars", f"{name}.lark")
        out.append((f"grammars/{name}.lark", "lark", open(path, encoding="utf-8").read(), "start"))
    if not smoke:
        from pathlib import Path
        from cfgmask.frontends.sql_dialects import dialect_text
        for d in ("postgres", "mysql"):
            out.append((f"grammars/sql + sql_{d}", "lark",
                        dialect_text(d, Path(ROOT) / "grammars"), "start"))
        out.append(("lark.lark (Lark's own)", "lark", open(_lark_lark(), encoding="utf-8").read(),
                    "start"))
        for g in manifest["grammars"]:
            text = third_party_text(g, mirror_dir, grammar_dir)
            if text is None:
                print(f"# {g['name']}: not found (--mirror-dir / --grammar-dir); skipped",
                      file=sys.stderr)
                continue
            out.append((g["name"], "lark", text, g.get("start", "start")))
    schemas = manifest["schemas"]
    for name in (list(schemas) if not smoke else list(schemas)[:1]):
        out.append((name, "schema", json.dumps(schemas[name]), None))
    return out


def third_party_text(g, mirror_dir, grammar_dir):
    if grammar_dir:
        p = os.path.join(grammar_dir, g["name"] + ".lark")
        if os.path.exists(p):
            return open(p, encoding="utf-8").read()
    if mirror_dir:
        git_dir = os.path.join(mirror_dir, g["repo"].replace("/", "+"), "repo")
        p = subprocess.run(["git", "--git-dir", git_dir, "show", f"{g['commit']}:{g['path']}"],
                           capture_output=True, text=True)
        if p.returncode == 0:
            return p.stdout
    return None


def with_start(text, start):
    """The text both engines load: ``start: <rule>`` appended when the start rule is another."""
    return text if start in (None, "start") else text + f"\nstart: {start}\n"


# ---------------------------------------------------------------- worker

class Engines:
    def __init__(self, dump, llg, bare_vocab=False):
        import numpy as np
        import cfgmask
        from cfgmask.engine.vocab import Vocabulary
        from benchmarks.run_ttfm import load_dump, llg_tokenizer
        self.np, self.cfgmask = np, cfgmask
        tb, eos, vs = load_dump(dump)
        t0 = time.perf_counter()
        self.vocab = Vocabulary(tb, eos, vs)
        prep = self.vocab.prepared()
        prep.trie, prep.token_bytes_flat  # noqa: B018 - prepared, untimed
        if hasattr(self.vocab, "prepare") and not bare_vocab:
            self.vocab.prepare()       # the trie, first bytes and standard slices
        elif hasattr(prep, "first_byte_sets"):
            prep.first_byte_sets()
        # what the tokenizer's preparation took (not part of any cell; reported)
        self.prepare_s = {"cfgmask": time.perf_counter() - t0}
        self.llg = None
        if llg:
            import llguidance
            import llguidance.numpy
            self.llg = llguidance
            t0 = time.perf_counter()
            self.lltok = llg_tokenizer(tb, eos)   # its slices are made here
            self.prepare_s["llguidance"] = time.perf_counter() - t0
        # imports are a once-per-process cost, untimed: Lark's loader and the
        # JSON Schema front end (a package of 15 modules, ~10 ms to import with
        # its bytecode cached, ~50 ms when it must be compiled)
        import lark.load_grammar  # noqa: F401
        import cfgmask.frontends.json_schema  # noqa: F401
        self.cfgmask_first(("trivial", "lark", TRIVIAL, "start"))
        if self.llg:
            self.llg_first(("trivial", "lark", TRIVIAL, "start"))
        # the preparation's own cache entries (the vocabulary's parts: several MB)
        # are written by the cache's writer thread; they belong to the preparation,
        # so they are on disk before anything is timed (without llguidance's
        # preparation in between, that thread was still writing during the first
        # timed compile: ~45 thread switches and ~5% of a small schema's time)
        from cfgmask import cache
        cache.flush()

    def cfgmask_first(self, spec):
        _name, kind, source, start = spec
        G = self.cfgmask.Grammar
        g = G.from_lark(with_start(source, start)) if kind == "lark" else \
            G.from_json_schema(source)
        c = self.cfgmask.compile(g, self.vocab)
        bm = c.allocate_bitmask()
        c.matcher().fill_bitmask(bm)
        return int(self.np.unpackbits(bm.view(self.np.uint8)).sum())

    def llg_first(self, spec):
        _name, kind, source, start = spec
        llg = self.llg
        if kind == "lark":
            grammar = llg.grammar_from("lark", LLG_PREFIX + with_start(source, start))
        else:
            grammar = llg.grammar_from("json_schema", source)
        m = llg.LLMatcher(self.lltok, grammar, log_level=0)
        bm = llg.numpy.allocate_token_bitmask(1, self.lltok.vocab_size)
        llg.numpy.fill_next_token_bitmask(m, bm)
        if m.is_error():
            raise RuntimeError(m.get_error())
        return int(self.np.unpackbits(bm.view(self.np.uint8)).sum())


def _timed(fn, spec):
    gc.collect()
    t0 = time.perf_counter()
    try:
        allowed = fn(spec)
    except Exception as e:  # noqa: BLE001 - reported per grammar
        return {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    return {"s": time.perf_counter() - t0, "allowed": allowed}


def worker(args):
    specs = {s[0]: s for s in grammar_specs(args.get("mirror_dir"), args.get("grammar_dir"),
                                              args.get("smoke", False))}
    e = Engines(args["dump"], args["llg"], args.get("bare_vocab", False))
    if args.get("first"):  # warm: another grammar first, untimed
        first = specs[args["first"]]
        e.cfgmask_first(first)
        if e.llg:
            e.llg_first(first)
    spec = specs[args["grammar"]]
    out = {"cfgmask": _timed(e.cfgmask_first, spec)}
    if e.llg:
        out["llguidance"] = _timed(e.llg_first, spec)
    out["prepare_s"] = e.prepare_s
    return out


def run_worker(args):
    with tempfile.TemporaryDirectory(prefix="cfgmask-coldstart-") as cache:
        env = dict(os.environ, CFGMASK_CACHE_DIR=cache, PYTHONPATH=ROOT)
        env.pop("CFGMASK_CACHE", None)
        p = subprocess.run([sys.executable, __file__, "--worker", json.dumps(args)],
                           capture_output=True, text=True, env=env, cwd=ROOT)
    if p.returncode != 0:
        return {"cfgmask": {"error": f"worker failed: {p.stderr[-500:]}"}}
    return json.loads(p.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- driver

def _summary(runs, llg):
    out = {}
    ok = [r for r in runs if "s" in r["cfgmask"]]
    if not ok:
        out["cfgmask_error"] = runs[0]["cfgmask"].get("error")
        lt = [r["llguidance"]["s"] for r in runs if "s" in r.get("llguidance", {})]
        if lt:
            out["llguidance_ms"] = 1e3 * statistics.median(lt)
        return out
    out["cfgmask_ms"] = 1e3 * statistics.median(r["cfgmask"]["s"] for r in ok)
    if llg:
        both = [r for r in ok if "s" in r.get("llguidance", {})]
        if both:
            out["llguidance_ms"] = 1e3 * statistics.median(r["llguidance"]["s"] for r in both)
            out["ratio"] = statistics.median(r["cfgmask"]["s"] / r["llguidance"]["s"] for r in both)
        else:
            out["llguidance_error"] = next((r.get("llguidance", {}).get("error") for r in ok), None)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tokenizer", default="smollm2", choices=("smollm2", "tekken", "sp"))
    ap.add_argument("--mirror-dir", default=os.environ.get("CFGMASK_MIRROR_DIR", "/work/.mirror"))
    ap.add_argument("--grammar-dir", default=None)
    ap.add_argument("--only", nargs="*", help="grammar names to run")
    ap.add_argument("--no-llguidance", action="store_true")
    ap.add_argument("--bare-vocab", action="store_true",
                    help="prepare cfgmask's vocabulary without its standard slices (Vocabulary.prepare)")
    ap.add_argument("--smoke", action="store_true", help="json.lark and one schema, once; JSON only")
    ap.add_argument("--json", help="write the raw results here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(json.loads(a.worker))))
        return 0
    llg = not a.no_llguidance
    if llg:
        try:
            import llguidance  # noqa: F401
        except ImportError:
            llg = False
    repeat = 1 if a.smoke else a.repeat
    specs = grammar_specs(a.mirror_dir, a.grammar_dir, a.smoke)
    names = [s[0] for s in specs if not a.only or s[0] in a.only]
    tmp = tempfile.mkdtemp(prefix="cfgmask-coldstart-")
    atexit.register(shutil.rmtree, tmp, True)   # scratch: never left in /tmp
    dump = os.path.join(tmp, f"{a.tokenizer}.npz")
    from benchmarks.run_ttfm import dump_vocab
    dump_vocab(a.tokenizer, dump)
    base = {"dump": dump, "llg": llg, "mirror_dir": a.mirror_dir, "grammar_dir": a.grammar_dir,
            "smoke": a.smoke, "bare_vocab": a.bare_vocab}
    lines = {s[0]: (s[2].count("\n") + 1 if s[1] == "lark" else None) for s in specs}
    rows = {}
    for name in names:
        first = WARMUP[0] if name != WARMUP[0] else WARMUP[1]
        if first not in lines:
            first = next(n for n in lines if n != name)
        cold = [run_worker(dict(base, grammar=name)) for _ in range(repeat)]
        warm = [run_worker(dict(base, grammar=name, first=first)) for _ in range(repeat)]
        rows[name] = {"lines": lines[name], "cold": _summary(cold, llg),
                      "warm": _summary(warm, llg), "warm_after": first,
                      "prepare_ms": _prepare_ms(cold + warm)}
        if not a.smoke:
            print(f"# {name}: {rows[name]}", file=sys.stderr)
    result = {"tokenizer": a.tokenizer, "repeat": repeat, "llguidance": llg, "rows": rows,
              "commit": _commit(), "bare_vocab": a.bare_vocab}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    if a.smoke:
        print(json.dumps(result))
        bad = [n for n, r in rows.items() if "cfgmask_ms" not in r["cold"]]
        return 1 if bad else 0
    print(table(result))
    return 0


def _prepare_ms(runs):
    """Median tokenizer preparation per engine over ``runs`` (ms)."""
    out = {}
    for eng in ("cfgmask", "llguidance"):
        xs = [r["prepare_s"][eng] for r in runs if eng in r.get("prepare_s", {})]
        if xs:
            out[eng] = 1e3 * statistics.median(xs)
    return out


def _commit():
    p = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                       text=True)
    return p.stdout.strip() or None


def _reason(err):
    """A short reason for a refusal, for the table."""
    err = str(err or "")
    for key, short in (("look-around", "look-around"), ("params not supported", "templates"),
                       ("zero-width", "zero-width terminal (Lark refuses it)"),
                       ("has no definition", "%declare'd terminal (post-lexer)")):
        if key in err:
            return short
    return err.split("\n")[0][:40]


def _cell(r):
    if "cfgmask_ms" not in r:
        llg = f"{r['llguidance_ms']:.1f}" if "llguidance_ms" in r else ""
        return [f"refused: {_reason(r.get('cfgmask_error'))}", llg, ""]
    llg = f"{r['llguidance_ms']:.1f}" if "llguidance_ms" in r else \
        f"refused: {_reason(r.get('llguidance_error'))}"
    ratio = f"{r['ratio']:.1f}x" if "ratio" in r else ""
    return [f"{r['cfgmask_ms']:.1f}", llg, ratio]


def table(result):
    out = ["| grammar | lines | cold cfgmask ms | cold llguidance ms | cold ratio "
           "| warm cfgmask ms | warm llguidance ms | warm ratio |",
           "|---|--:|--:|--:|--:|--:|--:|--:|"]
    for name, r in result["rows"].items():
        out.append("| " + " | ".join([f"`{name}`", str(r["lines"] or "JSON schema")]
                                     + _cell(r["cold"]) + _cell(r["warm"])) + " |")
    ratios = [r[k]["ratio"] for r in result["rows"].values() for k in ("cold", "warm")
              if "ratio" in r[k]]
    if ratios:
        out.append("")
        out.append(f"Ratios over {len(ratios)} grammar x setting pairs: median "
                   f"{statistics.median(ratios):.1f}x, worst {max(ratios):.1f}x.")
    prep = {eng: [r["prepare_ms"][eng] for r in result["rows"].values() if eng in r.get("prepare_ms", {})]
            for eng in ("cfgmask", "llguidance")}
    if prep["cfgmask"]:
        out.append("Tokenizer preparation (untimed above; median over the processes): "
                   + ", ".join(f"{eng} {statistics.median(v):.0f} ms" for eng, v in prep.items() if v)
                   + (" (cfgmask without its standard slices: --bare-vocab)" if not result.get("bare_vocab")
                      else " (--bare-vocab: no standard slices)") + ".")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
