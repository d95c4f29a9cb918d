"""Which documents the mask benchmarks replay, per grammar
(docs/architecture.md, "How performance is measured").

``candidates(grammar)`` returns ``[(name, text)]`` in the order the
benchmark takes them; a run takes the first documents that every engine
accepts (see run_masks.py), so the list is longer than any run needs.  The
order is fixed (no randomness), so two runs on the same corpora replay the
same documents:

* ``json``: ``json/jsonschemabench-valid-sample.jsonl`` (2,445 LLM-written
  documents, field ``doc``), in *spread* order: every ``len/n``-th line first
  (``n`` = 40, so the first 40 cover all sources of the sample), then the
  lines after those, and so on;
* ``sql``: the 1,748 Spider queries (``sql/spider-{dev,test}-queries.json``,
  dev then test), in the same spread order;
* ``javascript``: the Debian JavaScript corpus materialised by
  ``python3 <corpora>/js/get_js_corpus.py ~/.cache/cfgmask/js-corpus``
  (``$CFGMASK_JS_CORPUS`` overrides the directory): the files of
  ``JS_MIN_BYTES``..``JS_MAX_BYTES`` bytes (moderate size, so that a
  document is about a thousand tokens and a run stays short; 156 of the 469
  files, ES5 and ES2015+ alike), ordered by their sha256 (a fixed shuffle
  that mixes packages and ECMAScript levels).

The corpora root is ``$CFGMASK_CORPORA``, else ``../shared/corpora`` next to
the repository (support/corpora.py).  A missing corpus raises
:class:`FileNotFoundError` with the path and how to get it.
"""

import json
import os

from support import corpora

SPREAD = 40
JS_MIN_BYTES = 2_000
JS_MAX_BYTES = 5_000


def spread(items, n=SPREAD):
    """``items`` reordered so that the first ``n`` are spread evenly over the list."""
    stride = max(1, len(items) // n)
    return [items[k] for off in range(stride) for k in range(off, len(items), stride)]


def _need(path, what, hint="set CFGMASK_CORPORA to the corpora root"):
    if not os.path.exists(path):
        raise FileNotFoundError(f"{what} not found at {path}: {hint}")
    return path


def json_candidates():
    path = _need(corpora.corpora_dir() / "json" / "jsonschemabench-valid-sample.jsonl", "JSONSchemaBench")
    docs = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            rec = json.loads(line)
            docs.append((f"jsonschemabench:{i}", rec["doc"]))
    return spread(docs)


def sql_candidates():
    docs = []
    for split in ("dev", "test"):
        path = _need(corpora.corpora_dir() / "sql" / f"spider-{split}-queries.json", "Spider")
        with open(path, encoding="utf-8") as f:
            docs.extend((f"spider-{split}:{i}", rec["query"]) for i, rec in enumerate(json.load(f)))
    return spread(docs)


def js_candidates(min_bytes=JS_MIN_BYTES, max_bytes=JS_MAX_BYTES):
    root = corpora.js_corpus_dir()
    getter = corpora.corpora_dir() / "js" / "get_js_corpus.py"
    index = _need(root / "index.json", "the Debian JS corpus",
                  f"materialise it with 'python3 {getter} {root}' or set CFGMASK_JS_CORPUS")
    with open(index, encoding="utf-8") as f:
        recs = [r for r in json.load(f) if min_bytes <= r["bytes"] <= max_bytes]
    recs.sort(key=lambda r: r["sha256"])
    docs = []
    for r in recs:
        with open(root / r["file"], encoding="utf-8") as f:
            docs.append((f"{r['es']}:{r['file']}", f.read()))
    return docs


CANDIDATES = {"json": json_candidates, "sql": sql_candidates, "javascript": js_candidates}


def candidates(grammar):
    """``[(name, text)]`` for ``grammar`` in benchmark order (see the module doc)."""
    return CANDIDATES[grammar]()


def describe(grammar):
    """One line naming the documents of ``grammar``, for the reports."""
    return {
        "json": "JSONSchemaBench sample (jsonschemabench-valid-sample.jsonl), spread over the file",
        "sql": "Spider queries (dev + test), spread over the list",
        "javascript": (f"Debian JS corpus files of {JS_MIN_BYTES:,}-{JS_MAX_BYTES:,} bytes, "
                       "in sha256 order"),
    }[grammar]
