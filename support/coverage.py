"""Coverage of the bundled grammars on the shared corpora: the documents and the checkers.

For each document this records whether

* lark accepts it: ``lark.Lark(grammar, parser="earley", lexer="dynamic")``,
  the project's parse oracle (it tries every segmentation of the input);
* greedy lexing accepts it: :mod:`support.greedy_check`, lark's Earley parser
  fed by a lexer that follows cfgmask's semantics (contextual maximal munch,
  scan-before-skip, word boundary) -- what a cfgmask matcher lets through;
* cfgmask itself accepts it: the compiled grammar with a vocabulary of the
  256 single bytes, fed the document byte by byte (needs the built
  package; the engine's verdict, whatever its current state);
* for JavaScript, ``node --check`` accepts it (when node is installed), so
  that files that are not standard JavaScript can be told apart.

:func:`run` checks the documents in worker processes and returns one record
per document; :func:`summarize` groups them.  benchmarks/coverage/run_coverage.py
writes the committed results from them, tests/test_grammars_full.py asserts on
them.  Corpora: $CFGMASK_CORPORA or ../shared/corpora next to the repository.
"""
import json
import multiprocessing as mp
import os
import shutil
import signal
import subprocess
import tempfile
import time

from support import corpora

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


# ------------------------------------------------------------ documents

def json_documents():
    """(id, text -- the raw bytes if not UTF-8 --, meta) for every JSON document."""
    root = corpora.corpora_dir() / "json"
    suite = root / "jsontestsuite"
    for p in sorted(suite.glob("*.json")):
        data = p.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data
        yield "jsontestsuite/" + p.name, text, {"kind": p.name[0], "bytes": len(data)}
    jsts = root / "json-schema-test-suite"
    for p in sorted(jsts.rglob("*.json")):
        yield "json-schema-test-suite/" + str(p.relative_to(jsts)), p.read_text("utf-8"), {
            "kind": "valid", "bytes": p.stat().st_size}
    with open(root / "jsonschemabench-valid-sample.jsonl", encoding="utf-8") as f:
        for n, line in enumerate(f):
            rec = json.loads(line)
            yield "jsonschemabench/%d" % n, rec["doc"], {"kind": "valid", "bytes": len(rec["doc"].encode())}


def sql_documents():
    root = corpora.corpora_dir() / "sql"
    for split in ("dev", "test"):
        with open(root / ("spider-%s-queries.json" % split), encoding="utf-8") as f:
            for n, rec in enumerate(json.load(f)):
                yield "spider-%s/%d" % (split, n), rec["query"], {
                    "kind": "valid", "db_id": rec["db_id"], "bytes": len(rec["query"].encode())}


def js_documents(corpus_dir, max_bytes=None):
    with open(os.path.join(corpus_dir, "index.json"), encoding="utf-8") as f:
        index = json.load(f)
    for rec in index:
        if max_bytes and rec["bytes"] > max_bytes:
            continue
        path = os.path.join(corpus_dir, rec["file"])
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        meta = {k: rec[k] for k in ("package", "path", "es", "sourceType", "bytes", "lines",
                                    "regex_literals", "template_chunks", "asi_insertions")}
        yield rec["file"], text, meta


# -------------------------------------------------------------- workers

_STATE = {}


def _init(grammar_name, checkers):
    text = open(os.path.join(REPO, "grammars", grammar_name + ".lark"), encoding="utf-8").read()
    import lark
    if "lark" in checkers:
        _STATE["lark"] = lark.Lark(text, parser="earley", lexer="dynamic")
    if "greedy" in checkers:
        from support.greedy_check import GreedyRecognizer
        _STATE["greedy"] = GreedyRecognizer(text)
    if "cfgmask" in checkers:
        import cfgmask
        vocab = cfgmask.Vocabulary([bytes([i]) for i in range(256)] + [b"<eos>"], eos_token_ids=[256])
        _STATE["cfgmask"] = cfgmask.compile(cfgmask.Grammar.from_lark(text), vocab)
    _STATE["checkers"] = checkers
    _STATE["timeout"] = None
    signal.signal(signal.SIGALRM, _alarm)


def _first_line(e):
    s = str(e).strip().splitlines()
    return s[0][:300] if s else type(e).__name__


def _node_check(text, source_type):
    node = shutil.which("node")
    if node is None:
        return None, None
    suffix = ".mjs" if source_type == "module" else ".cjs"
    with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False, encoding="utf-8") as f:
        f.write(text)
        path = f.name
    try:
        r = subprocess.run([node, "--check", path], capture_output=True, text=True, timeout=60)
        msg = None
        if r.returncode != 0:
            lines = [x for x in r.stderr.splitlines() if "Error" in x]
            msg = lines[0][:300] if lines else r.stderr[-300:]
        return r.returncode == 0, msg
    finally:
        os.unlink(path)


def _cfgmask_check(compiled, text):
    from cfgmask.errors import TokenRejected
    m = compiled.matcher()
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    for i, b in enumerate(data):
        try:
            m.consume(b)
        except TokenRejected:
            line = data.count(b"\n", 0, i) + 1
            return False, "byte %d (0x%02x, line %d) rejected after %r" % (
                i, b, line, data[max(0, i - 30):i].decode("utf-8", "replace"))
    if not m.is_accepting():
        return False, "not complete at end of input"
    return True, None


def _check(job):
    doc_id, text, meta, timeout = job
    out = {"id": doc_id}
    out.update(meta)
    for name in _STATE["checkers"]:
        if isinstance(text, bytes) and name != "cfgmask":
            # lark and the greedy reference read text; cfgmask reads the bytes
            out[name] = "reject"
            out[name + "_error"] = "not UTF-8"
            continue
        t0 = time.perf_counter()
        if name == "node":
            ok, msg = _node_check(text, meta.get("sourceType"))
            if ok is None:
                continue
            out["node"] = "ok" if ok else "reject"
            if msg:
                out["node_error"] = msg
            continue
        signal.alarm(timeout)
        try:
            if name == "lark":
                _STATE["lark"].parse(text)
                out["lark"] = "ok"
            elif name == "cfgmask":
                ok, msg = _cfgmask_check(_STATE["cfgmask"], text)
                out["cfgmask"] = "ok" if ok else "reject"
                if msg:
                    out["cfgmask_error"] = msg
            else:
                ok, msg = _STATE["greedy"].check(text)
                out["greedy"] = "ok" if ok else "reject"
                if msg:
                    out["greedy_error"] = msg[:300]
        except _Timeout:
            out[name] = "timeout"
        except RecursionError:
            out[name] = "recursion"
        except Exception as e:  # lark errors and anything unexpected
            out[name] = "reject"
            out[name + "_error"] = _first_line(e)
        finally:
            signal.alarm(0)
        out[name + "_s"] = round(time.perf_counter() - t0, 3)
    return out


# ------------------------------------------------------------- summary

def summarize(grammar, records, checkers):
    groups = {}
    for r in records:
        if grammar == "json":
            key = r["id"].split("/")[0] + ("" if not r["id"].startswith("jsontestsuite") else " " + r["kind"] + "_")
        elif grammar == "sql":
            key = "spider"
        else:
            key = r["es"]
        groups.setdefault(key, []).append(r)
    summary = {}
    for key, recs in sorted(groups.items()):
        s = {"documents": len(recs), "bytes": sum(r.get("bytes", 0) or 0 for r in recs)}
        for c in checkers:
            vals = [r.get(c) for r in recs if c in r]
            if not vals:
                continue
            s[c] = {v: vals.count(v) for v in sorted(set(vals))}
            times = [r[c + "_s"] for r in recs if c + "_s" in r]
            if times:
                s[c + "_seconds"] = round(sum(times), 1)
        summary[key] = s
    return summary


def documents(grammar, js_corpus=None, max_bytes=None):
    if grammar == "json":
        return list(json_documents())
    if grammar == "sql":
        return list(sql_documents())
    return list(js_documents(js_corpus or str(corpora.js_corpus_dir()), max_bytes))


def run(grammar, checkers=("lark", "greedy"), timeout=300, jobs=1, docs=None,
        progress=None):
    """Check every document; returns the list of per-document records."""
    checkers = list(checkers)
    if grammar != "javascript":
        checkers = [c for c in checkers if c != "node"]
    if docs is None:
        docs = documents(grammar)
    jobs_ = [(d, t, m, timeout) for d, t, m in docs]
    records = []
    t0 = time.time()
    with mp.Pool(jobs, initializer=_init, initargs=(grammar, checkers)) as pool:
        for n, rec in enumerate(pool.imap(_check, jobs_, chunksize=1)):
            records.append(rec)
            if progress:
                brief = " ".join("%s=%s" % (c, rec.get(c)) for c in checkers)
                progress("[%d/%d %.0fs] %s %s" % (n + 1, len(jobs_), time.time() - t0, rec["id"], brief))
    return records
