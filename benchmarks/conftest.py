"""pytest setup for the benchmarks (``pytest benchmarks/ --benchmark-enable``).

* collects ``bench_*.py`` files (the project's ``testpaths`` is ``tests``, so
  benchmarks only run when asked for);
* puts the repository root on ``sys.path`` so that ``tests.vocabs`` and
  ``benchmarks.run_masks`` import;
* session fixtures: tokenizers, prepared engines, compiled grammars and the
  screened documents, each built once.

Environment: ``CFGMASK_BENCH_DOCS`` documents per replay (default 10),
``CFGMASK_BENCH_TOKENIZERS`` / ``CFGMASK_BENCH_GRAMMARS`` (comma lists) narrow
the parametrisation, e.g. for the CI smoke pass.

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
from benchmarks.engines import ENGINES, Tok, Unavailable  # noqa: E402

BENCH_DOCS = int(os.environ.get("CFGMASK_BENCH_DOCS", "10"))


def pytest_collect_file(file_path, parent):
    # a file named on the command line is collected by pytest itself
    if (file_path.suffix == ".py" and file_path.name.startswith("bench_")
            and not parent.session.isinitpath(file_path)):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


_TOKS, _ENGINES, _COMPILED, _DOCS = {}, {}, {}, {}


def _skip_unavailable(fn, *args):
    try:
        return fn(*args)
    except (Unavailable, FileNotFoundError) as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def get_tok():
    def get(name):
        if name not in _TOKS:
            _TOKS[name] = _skip_unavailable(Tok, name)
        return _TOKS[name]
    return get


@pytest.fixture(scope="session")
def get_engine(get_tok):
    """``get_engine(engine, tokenizer, grammar)``: a prepared engine (cached per tokenizer)."""
    def get(ename, tname, grammar):
        tok = get_tok(tname)
        key = (ename, tname)
        if key not in _ENGINES:
            eng = _skip_unavailable(ENGINES[ename])
            eng.prepare(tok)
            _ENGINES[key] = eng
        eng = _ENGINES[key]
        why = eng.unsupported(grammar, tok)
        if why:
            pytest.skip(why)
        return eng
    return get


@pytest.fixture(scope="session")
def get_compiled(get_engine):
    """``get_compiled(engine, tokenizer, grammar)``: ``(engine, compiled)`` (cached)."""
    def get(ename, tname, grammar):
        eng = get_engine(ename, tname, grammar)
        key = (ename, tname, grammar)
        if key not in _COMPILED:
            _COMPILED[key] = eng.compile(grammar)
        return eng, _COMPILED[key]
    return get


@pytest.fixture(scope="session")
def get_docs(get_tok, get_engine):
    """``get_docs(tokenizer, grammar)``: ``[(name, ids, n_bytes)]``, ``BENCH_DOCS`` documents
    that cfgmask and llguidance (and XGrammar for JSON) all accept (run_masks.screen)."""
    def get(tname, grammar):
        key = (tname, grammar)
        if key not in _DOCS:
            engines = []
            for ename in ENGINES:
                try:
                    engines.append(get_engine(ename, tname, grammar))
                except pytest.skip.Exception:
                    continue
            docs, _, _ = _skip_unavailable(run_masks.screen, engines, grammar, get_tok(tname), BENCH_DOCS,
                                           lambda s: None)
            _DOCS[key] = docs
        return _DOCS[key]
    return get
