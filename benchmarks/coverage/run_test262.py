#!/usr/bin/env python3
"""grammars/javascript.lark on the test262 parser tests, checked by cfgmask.

The corpus (<corpora>/js/test262-parser-tests) has three directories:
pass/ (valid programs: must be accepted), fail/ (not in the ECMAScript
grammar: must be rejected) and early/ (in the grammar but an early error:
reported, neither is required). ``*.module.js`` files are modules, the
others scripts; each is checked from the grammar's start rule for its goal
(``--script-start``, ``--module-start``).

Each file is fed byte by byte to cfgmask compiled with a vocabulary of the
256 single bytes (the engine's own verdict, fast); ``--node`` also runs
``node --check`` on every file (.cjs / .mjs), so that the corpus verdicts
and the engine the project samples against can be compared; ``--greedy``
runs tools/greedy_check.py (lark's Earley parser under cfgmask's lexing
rules, on characters) from the same start rules, about a minute.

Results: benchmarks/coverage/results/test262.json (summary, and one record
per file whose verdict differs from the one its directory wants).

usage:
  python3 benchmarks/coverage/run_test262.py [--limit N] [--node] [--greedy] [--out PATH]
    [--grammar PATH] [--script-start RULE] [--module-start RULE] [--dirs pass,fail,early]
Corpora: $CFGMASK_CORPORA or ../shared/corpora next to the repository.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

import corpora  # noqa: E402

RESULTS = os.path.join(HERE, "results")
DIRS = ("pass", "fail", "early")
# What each directory wants from a grammar that is exactly the ECMAScript
# syntactic grammar (early errors are outside it).
WANT = {"pass": "ok", "fail": "reject", "early": None}


def corpus_dir():
    return corpora.corpora_dir() / "js" / "test262-parser-tests"


def files(dirs=DIRS, limit=None):
    """(dir, name, bytes) per file, sorted; ``limit`` takes every k-th file
    of each directory (a deterministic sample)."""
    root = corpus_dir()
    for d in dirs:
        names = sorted(p.name for p in (root / d).glob("*.js"))
        if limit and limit < len(names):
            step = len(names) / limit
            names = [names[int(i * step)] for i in range(limit)]
        for n in names:
            yield d, n, (root / d / n).read_bytes()


def is_module(name):
    return name.endswith(".module.js")


class Checker:
    """cfgmask matchers for the two goals, 256 single-byte vocabulary."""

    def __init__(self, grammar_path=None, script_start="script", module_start="module"):
        import cfgmask
        path = grammar_path or str(cfgmask.Grammar.builtin_path("javascript"))
        vocab = cfgmask.Vocabulary([bytes([i]) for i in range(256)] + [b"<eos>"], eos_token_ids=[256])
        self.compiled = {}
        self.compile_s = {}
        for goal, start in (("script", script_start), ("module", module_start)):
            t0 = time.perf_counter()
            g = cfgmask.Grammar.from_file(path, start=start)
            self.compiled[goal] = cfgmask.compile(g, vocab)
            self.compile_s[goal] = round(time.perf_counter() - t0, 2)

    def check(self, data, module):
        """(accepted, message)."""
        from cfgmask.errors import TokenRejected
        m = self.compiled["module" if module else "script"].matcher()
        for i, b in enumerate(data):
            try:
                m.consume(b)
            except TokenRejected:
                return False, "byte %d (0x%02x) rejected after %r" % (
                    i, b, data[max(0, i - 30):i].decode("utf-8", "replace"))
        if not m.is_accepting():
            return False, "not complete at end of input"
        return True, None


def node_check(data, module):
    node = shutil.which("node")
    if node is None:
        return None
    with tempfile.NamedTemporaryFile("wb", suffix=".mjs" if module else ".cjs", delete=False) as f:
        f.write(data)
        path = f.name
    try:
        r = subprocess.run([node, "--check", path], capture_output=True, timeout=60)
        return r.returncode == 0
    finally:
        os.unlink(path)


def greedy_recognizers(grammar_path=None, script_start="script", module_start="module"):
    sys.path.insert(0, os.path.join(REPO, "tools"))
    import cfgmask
    from greedy_check import GreedyRecognizer
    text = open(grammar_path or str(cfgmask.Grammar.builtin_path("javascript")), encoding="utf-8").read()
    return {"script": GreedyRecognizer(text, start=script_start),
            "module": GreedyRecognizer(text, start=module_start)}


def run(checker, dirs=DIRS, limit=None, node=False, progress=None, greedy=None):
    records = []
    for d, name, data in files(dirs, limit):
        mod = is_module(name)
        t0 = time.perf_counter()
        ok, msg = checker.check(data, mod)
        rec = {"dir": d, "file": name, "goal": "module" if mod else "script",
               "cfgmask": "ok" if ok else "reject", "cfgmask_s": round(time.perf_counter() - t0, 4)}
        if msg:
            rec["cfgmask_error"] = msg
        if node:
            n = node_check(data, mod)
            if n is not None:
                rec["node"] = "ok" if n else "reject"
        if greedy:
            try:
                ok_g = greedy["module" if mod else "script"].check(data.decode("utf-8"))[0]
            except UnicodeDecodeError:
                ok_g = False
            rec["greedy"] = "ok" if ok_g else "reject"
        records.append(rec)
        if progress:
            progress(rec)
    return records


def summarize(records):
    out = {}
    for d in DIRS:
        recs = [r for r in records if r["dir"] == d]
        if not recs:
            continue
        s = {"files": len(recs), "accepted": sum(r["cfgmask"] == "ok" for r in recs)}
        s["rejected"] = s["files"] - s["accepted"]
        s["accepted_pct"] = round(100.0 * s["accepted"] / s["files"], 2)
        for other in ("node", "greedy"):
            if any(other in r for r in recs):
                s[other + "_accepted"] = sum(r.get(other) == "ok" for r in recs)
                s[other + "_disagree"] = sum(r.get(other) != r["cfgmask"] for r in recs if other in r)
        out[d] = s
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grammar", default=None)
    ap.add_argument("--script-start", default="script")
    ap.add_argument("--module-start", default="module")
    ap.add_argument("--dirs", default=",".join(DIRS))
    ap.add_argument("--limit", type=int, default=None, help="files per directory (a spread sample)")
    ap.add_argument("--node", action="store_true", help="also run node --check on every file")
    ap.add_argument("--greedy", action="store_true", help="also run tools/greedy_check.py on every file")
    ap.add_argument("--out", default=None)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if not corpus_dir().exists():
        sys.exit("test262 parser tests not found at %s; set CFGMASK_CORPORA" % corpus_dir())
    t0 = time.time()
    checker = Checker(args.grammar, args.script_start, args.module_start)
    dirs = [d for d in args.dirs.split(",") if d]

    def progress(rec):
        want = WANT[rec["dir"]]
        if not args.quiet and want and rec["cfgmask"] != want:
            print("%s/%s: %s %s" % (rec["dir"], rec["file"], rec["cfgmask"], rec.get("cfgmask_error", "")),
                  flush=True)

    greedy = greedy_recognizers(args.grammar, args.script_start, args.module_start) if args.greedy else None
    records = run(checker, dirs, args.limit, args.node, progress, greedy)
    summary = summarize(records)
    meta = {"grammar": args.grammar or "grammars/javascript.lark", "script_start": args.script_start,
            "module_start": args.module_start, "limit": args.limit, "compile_s": checker.compile_s,
            "check_s": round(sum(r["cfgmask_s"] for r in records), 1),
            "wall_s": round(time.time() - t0, 1), "date": time.strftime("%Y-%m-%d"),
            "command": "python3 benchmarks/coverage/run_test262.py " + " ".join(argv or sys.argv[1:])}
    # Keep the files whose verdict is not the one their directory wants (and
    # every early/ file, whose verdict is informative either way).
    kept = [r for r in records if WANT[r["dir"]] is None or r["cfgmask"] != WANT[r["dir"]]
            or r.get("greedy", r["cfgmask"]) != r["cfgmask"]]
    out = args.out or os.path.join(RESULTS, "test262.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write('{"meta": %s,\n"summary": %s,\n"documents": [\n' % (json.dumps(meta), json.dumps(summary, indent=1)))
        f.write(",\n".join(json.dumps(r, ensure_ascii=False) for r in kept))
        f.write("\n]}\n")
    print(json.dumps({"meta": meta, "summary": summary}, indent=1))
    print("wrote", out)


if __name__ == "__main__":
    main()
