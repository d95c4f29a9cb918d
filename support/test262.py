"""The test262 parser tests (<corpora>/js/test262-parser-tests) and their checkers.

The corpus has three directories: pass/ (valid programs: must be accepted),
fail/ (not in the ECMAScript grammar: must be rejected) and early/ (in the
grammar but an early error: reported, neither is required).
``*.module.js`` files are modules, the others scripts.

* :class:`Checker`: each file fed byte by byte to cfgmask compiled with a
  vocabulary of the 256 single bytes, from the start rule of its goal;
* :func:`node_check`: ``node --check`` on a file (.cjs / .mjs);
* :func:`greedy_recognizers`: :mod:`support.greedy_check` from the same
  start rules;
* :func:`run` and :func:`summarize`: one record per file, and per directory.

benchmarks/coverage/run_test262.py writes the committed results from them,
tests/test_js_test262.py and tests/test_js_regex.py assert on them.
"""
import os
import shutil
import subprocess
import tempfile
import time

from support import corpora

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
    import cfgmask
    from support.greedy_check import GreedyRecognizer
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
