"""pytest setup for the benchmarks (``pytest benchmarks/ --benchmark-enable``).

* collects ``bench_*.py`` files (the project's ``testpaths`` is ``tests``, so
  benchmarks only run when asked for);
* session fixtures: tokenizers, prepared engines, compiled grammars and the
  screened documents, each built once.

Environment: ``CFGMASK_BENCH_DOCS`` documents per replay (default 10),
``CFGMASK_BENCH_TOKENIZERS`` / ``CFGMASK_BENCH_GRAMMARS`` (comma lists) narrow
the parametrisation, e.g. for the CI smoke pass.

The benchmark configuration is in ``pyproject.toml`` (``--benchmark-disable``
is in the default options: without ``--benchmark-enable`` every benchmark runs
once, as a smoke test).

Output (``--benchmark-enable``): one table per benchmark kind x grammar x
tokenizer (``masks replay · json / smollm2``, ...), its rows the engines, in
a time unit chosen per table; then a summary of cfgmask / peer ratios of
the medians.  The defaults set here (``--benchmark-columns=min,median,iqr,
rounds``, ``--benchmark-sort=name``) give way to any that are passed; any
``--benchmark-group-by`` other than ``group`` gives pytest-benchmark's own
grouping and row names.
"""

import os
import shlex

import pytest

from benchmarks import run_masks
from benchmarks.engines import ENGINES, Tok, Unavailable

BENCH_DOCS = int(os.environ.get("CFGMASK_BENCH_DOCS", "10"))


# ------------------------------------------------------------ grouped output

ENGINE_PARAMS = ("engine", "eng_name")  # bench_masks.py, bench_json_schema.py
PEERS = ("llguidance", "xgrammar")
# what the defaults below replace: pytest-benchmark's ten columns, rows sorted by speed
DEFAULT_OPTIONS = {"--benchmark-columns": ("benchmark_columns", ["min", "median", "iqr", "rounds"]),
                   "--benchmark-sort": ("benchmark_sort", "name")}


def _given(config, flag):
    args = list(config.invocation_params.args) + shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    return any(str(a) == flag or str(a).startswith(flag + "=") for a in args)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # before pytest-benchmark's own pytest_configure (trylast) reads the options
    if not hasattr(config.option, "benchmark_columns"):
        return
    for flag, (dest, value) in DEFAULT_OPTIONS.items():
        if not _given(config, flag):
            setattr(config.option, dest, value)


def bench_group(nodeid, params):
    """``(group title, row label)`` of one benchmark: engines of one workload share a group.

    ``benchmarks/bench_masks.py::test_replay[json-smollm2-cfgmask]`` ->
    ``("masks replay · json / smollm2", "cfgmask")``; a test without an
    engine parameter is its own row under its function's group.
    """
    path, _, func = nodeid.partition("::")
    mod = os.path.splitext(os.path.basename(path))[0]
    mod = mod[len("bench_"):] if mod.startswith("bench_") else mod
    func = func.split("[")[0]
    func = func[len("test_"):] if func.startswith("test_") else func
    params = dict(params or {})
    engine = next((params.pop(k) for k in ENGINE_PARAMS if k in params), None)
    if engine is None:
        label = "-".join(str(v) for v in params.values()) or func
        return f"{mod} {func}", label
    first = [params.pop(k) for k in ("grammar", "tokenizer", "name") if k in params]
    where = " / ".join(str(v) for v in first + list(params.values()))
    return f"{mod} {func} · {where}" if where else f"{mod} {func}", str(engine)


def pytest_collection_modifyitems(config, items):
    # the group travels in the marker, so --benchmark-json records it too
    for item in items:
        if "benchmark" not in getattr(item, "fixturenames", ()):
            continue
        mark = item.get_closest_marker("benchmark")
        kwargs = dict(mark.kwargs) if mark is not None else {}
        if "group" in kwargs:
            continue
        callspec = getattr(item, "callspec", None)
        kwargs["group"], _ = bench_group(item.nodeid, callspec.params if callspec else {})
        # prepended, so that it is the closest marker, keeping the test's own settings
        item.add_marker(pytest.mark.benchmark(**kwargs), append=False)


@pytest.hookimpl(tryfirst=True)
def pytest_benchmark_group_stats(config, benchmarks, group_by):
    """Group by the marker's group and name each row by its engine (default ``--benchmark-group-by``)."""
    if group_by != "group":
        return None  # pytest-benchmark's own grouping
    groups = {}
    for bench in benchmarks:
        group, label = bench_group(bench["fullname"], bench.get("params"))
        bench["name"] = label
        groups.setdefault(bench.get("group") or group, []).append(bench)
    return sorted(groups.items())


def _fmt_s(x):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x * 1e9:.3g} ns"


def _ratio(r):
    return f"{r:.2f}×" if r >= 0.1 else f"{r:.2g}×"  # 0.0012×, not 0.00×


def ratio_table(groups):
    """Lines of the cfgmask / peer summary of ``groups`` (``[(title, [bench dict])]``); empty without peers."""
    rows = []
    for title, benches in groups:
        med = {b["name"]: b["median"] for b in benches if b.get("source") in (None, False, "NOW")}
        if "cfgmask" not in med or not any(p in med for p in PEERS):
            continue
        c = med["cfgmask"]
        cells = [f"{_fmt_s(med[p])}  {_ratio(c / med[p])}" if med.get(p) else "-" for p in PEERS]
        rows.append([title, _fmt_s(c)] + cells)
    if not rows:
        return []
    head = ["benchmark", "cfgmask"] + [f"{p} (cfgmask/{p})" for p in PEERS]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    fmt = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa: E731
                              for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return (["cfgmask / peer, median per round (below 1: cfgmask is faster; measured in the same run)",
             fmt(head)] + [fmt(r) for r in rows])


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, config):
    # after pytest-benchmark's tables (its summary hook is not trylast)
    session = getattr(config, "_benchmarksession", None)
    groups = getattr(session, "groups", None)
    if not groups or getattr(session, "group_by", "group") != "group":
        return
    lines = ratio_table(groups)
    if lines:
        terminalreporter.write_line("")
        for line in lines:
            terminalreporter.write_line(line)


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
