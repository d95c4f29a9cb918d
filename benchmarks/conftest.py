"""pytest setup for the benchmarks (``pytest benchmarks/ --benchmark-enable``).

* collects ``bench_*.py`` files (the project's ``testpaths`` is ``tests``, so
  benchmarks only run when asked for);
* puts the repository root on ``sys.path`` so that ``tests.vocabs`` and
  ``benchmarks.run_masks`` import;
* session fixtures: the documents, tokenizers and prepared engines, built once.

The benchmark configuration is in ``pyproject.toml`` (``--benchmark-disable``
is in the default options: without ``--benchmark-enable`` every benchmark runs
once, as a smoke test).
"""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import run_masks  # noqa: E402

BENCH_DOCS = int(os.environ.get("CFGMASK_BENCH_DOCS", "20"))


def pytest_collect_file(file_path, parent):
    # a file named on the command line is collected by pytest itself
    if (file_path.suffix == ".py" and file_path.name.startswith("bench_")
            and not parent.session.isinitpath(file_path)):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


@pytest.fixture(scope="session")
def bench_docs():
    """``[(name, text)]``: JSONSchemaBench documents spread over the file."""
    try:
        return run_masks.load_docs(BENCH_DOCS)
    except FileNotFoundError as e:
        pytest.skip(str(e))


_TOKS = {}
_ENGINES = {}


@pytest.fixture(scope="session")
def get_tok():
    def get(name):
        if name not in _TOKS:
            _TOKS[name] = run_masks.Tok(name)
        return _TOKS[name]
    return get


@pytest.fixture(scope="session")
def get_engine(get_tok):
    """``get_engine(engine, tokenizer)``: a prepared, compiled engine (cached)."""
    def get(ename, tname):
        key = (ename, tname)
        if key not in _ENGINES:
            try:
                eng = run_masks.ENGINES[ename]()
            except ImportError as e:
                pytest.skip(f"{ename} is not installed: {e}")
            eng.prepare(get_tok(tname))
            eng.compile()
            _ENGINES[key] = eng
        return _ENGINES[key]
    return get
