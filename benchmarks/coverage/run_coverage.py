#!/usr/bin/env python3
"""Coverage of the bundled grammars on the shared corpora.

For each document this records whether

* lark accepts it: ``lark.Lark(grammar, parser="earley", lexer="dynamic")``,
  the project's parse oracle (it tries every segmentation of the input);
* greedy lexing accepts it: tools/greedy_check.py, lark's Earley parser fed
  by a lexer that follows cfgmask's semantics (contextual maximal munch,
  scan-before-skip, word boundary) -- what a cfgmask matcher lets through;
* cfgmask itself accepts it: the compiled grammar with a vocabulary of the
  256 single bytes, fed the document byte by byte (needs the built
  package; the engine's verdict, whatever its current state);
* for JavaScript, ``node --check`` accepts it (when node is installed), so
  that files that are not standard JavaScript can be told apart.

Results go to benchmarks/coverage/results/<grammar>.json (one record per
document plus a summary); a markdown summary is printed.

usage:
  python3 benchmarks/coverage/run_coverage.py json|sql|javascript [options]
    --checkers lark,greedy,cfgmask,node   which checks to run (default: all)
    --timeout S                   per document and checker (default 300)
    --jobs N                      worker processes (default 1)
    --max-bytes N                 skip larger JavaScript files (default: none)
    --js-corpus DIR               materialised corpus (default $CFGMASK_JS_CORPUS
                                  or <corpora>/js/materialized)
Corpora: $CFGMASK_CORPORA or ../shared/corpora next to the repository.
"""
import argparse
import json
import multiprocessing as mp
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))
sys.path.insert(0, os.path.join(REPO, "tests"))

import corpora  # noqa: E402  (tests/corpora.py: corpus locations)

RESULTS = os.path.join(HERE, "results")


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
        from greedy_check import GreedyRecognizer
        _STATE["greedy"] = GreedyRecognizer(text)
    if "cfgmask" in checkers:
        sys.path.insert(0, REPO)
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


def _keep(rec, checkers):
    """JSON/SQL results keep the documents worth a look: any verdict other
    than ok, and JSONTestSuite's n_ and i_ files."""
    if any(rec.get(c) not in (None, "ok") for c in checkers):
        return True
    return rec["id"].startswith(("jsontestsuite/i_", "jsontestsuite/n_"))


def write_results(out, meta, summary, records, all_records):
    """One document record per line, so that diffs stay readable."""
    checkers = meta["checkers"]
    if not all_records:
        meta = dict(meta, documents_listed="only documents with a verdict other than ok, and "
                                           "JSONTestSuite n_/i_ files")
        records = [r for r in records if _keep(r, checkers)]
    with open(out, "w", encoding="utf-8") as f:
        f.write('{"meta": %s,\n"summary": %s,\n"documents": [\n' % (
            json.dumps(meta), json.dumps(summary, indent=1)))
        f.write(",\n".join(json.dumps(r, ensure_ascii=False) for r in records))
        f.write("\n]}\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grammar", choices=["json", "sql", "javascript"])
    ap.add_argument("--checkers", default="lark,greedy,cfgmask,node")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--max-bytes", type=int, default=None)
    ap.add_argument("--js-corpus", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    checkers = [c for c in args.checkers.split(",") if c]
    if args.grammar != "javascript":
        checkers = [c for c in checkers if c != "node"]
    docs = documents(args.grammar, args.js_corpus, args.max_bytes)
    t0 = time.time()
    records = run(args.grammar, checkers, args.timeout, args.jobs, docs,
                  progress=lambda line: print(line, flush=True))
    summary = summarize(args.grammar, records, checkers)
    out = args.out or os.path.join(RESULTS, args.grammar + ".json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    import lark
    meta = {"grammar": "grammars/%s.lark" % args.grammar, "lark": lark.__version__,
            "python": sys.version.split()[0], "checkers": checkers, "timeout_s": args.timeout,
            "max_bytes": args.max_bytes, "wall_s": round(time.time() - t0, 1),
            "date": time.strftime("%Y-%m-%d")}
    write_results(out, meta, summary, records, all_records=args.grammar == "javascript")
    print(json.dumps(summary, indent=1))
    print("wrote", out)


if __name__ == "__main__":
    main()
