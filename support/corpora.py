"""Where the shared evaluation corpora live, and pytest helpers that skip
cleanly when one is missing.

The corpora are third-party data: they are read in place and never copied
into the repository.

* ``corpora_dir()``: ``$CFGMASK_CORPORA``, else ``<repo>/../shared/corpora``.
* ``js_corpus_dir()``: the JavaScript files listed in
  ``<corpora>/js/debian-js-selection.json`` once materialised with
  ``python3 <corpora>/js/get_js_corpus.py DEST`` (apt-get download, ~25 s):
  ``$CFGMASK_JS_CORPUS``, else ``~/.cache/cfgmask/js-corpus``.

Each ``require_*`` helper returns the path or calls ``pytest.skip`` with a
message that names the path and the variable to set.
"""
import json
import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

__all__ = [
    "corpora_dir", "js_corpus_dir", "require", "require_js_corpus",
    "jsontestsuite_files", "json_schema_test_suite_files", "jsonschemabench_docs",
    "spider_queries", "js_corpus_index",
]


def corpora_dir():
    return Path(os.environ.get("CFGMASK_CORPORA", REPO.parent / "shared" / "corpora"))


def js_corpus_dir():
    default = Path.home() / ".cache" / "cfgmask" / "js-corpus"
    return Path(os.environ.get("CFGMASK_JS_CORPUS", default))


def require(relpath, what=None):
    """``corpora_dir() / relpath``, or skip the test if it does not exist."""
    import pytest

    path = corpora_dir() / relpath
    if not path.exists():
        pytest.skip("corpus %s not found at %s; set CFGMASK_CORPORA" % (what or relpath, path))
    return path


def require_js_corpus():
    """The materialised JavaScript corpus directory, or skip."""
    import pytest

    path = js_corpus_dir()
    if not (path / "index.json").exists():
        pytest.skip(
            "corpus js (Debian JavaScript files) not found at %s; materialise it with "
            "'python3 %s %s' or set CFGMASK_JS_CORPUS"
            % (path, corpora_dir() / "js" / "get_js_corpus.py", path))
    return path


# ----------------------------------------------------------- loaders

def jsontestsuite_files():
    """Sorted JSONTestSuite test files (y_, n_, i_), as Paths."""
    root = require("json/jsontestsuite", "json/jsontestsuite")
    return sorted(p for p in root.glob("*.json") if p.name[:2] in ("y_", "n_", "i_"))


def json_schema_test_suite_files():
    root = require("json/json-schema-test-suite", "json/json-schema-test-suite")
    return sorted(root.rglob("*.json"))


def jsonschemabench_docs():
    path = require("json/jsonschemabench-valid-sample.jsonl", "jsonschemabench")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["doc"] for line in f]


def spider_queries():
    """All 1,748 Spider queries (dev then test), as strings."""
    out = []
    for split in ("dev", "test"):
        path = require("sql/spider-%s-queries.json" % split, "sql/spider")
        with open(path, encoding="utf-8") as f:
            out.extend(rec["query"] for rec in json.load(f))
    return out


def js_corpus_index():
    """Records of the materialised JavaScript corpus (with a ``text`` loader)."""
    root = require_js_corpus()
    with open(root / "index.json", encoding="utf-8") as f:
        index = json.load(f)
    for rec in index:
        rec["abspath"] = str(root / rec["file"])
    return index
