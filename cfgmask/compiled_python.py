"""Compile-time Python modules that the build also compiles with Cython, and the
import hook that chooses between the compiled and the source form of each.

Why: the Lark front end, the JSON Schema front end and the regex pipeline's
Python steps are flat profiles of small functions (no one step dominates, so
there is nothing left to move into a hand-written kernel), and most of a new
grammar's time to first mask.  Cython translates such a module's unchanged
``.py`` source into an extension module (pure-Python mode: no type
declarations), which runs the same code with less interpreter overhead:
javascript.lark's load in 0.76x the instructions, the JSON Schema front end
in 0.75x; first masks of new grammars in 0.55-1.0x the time (json.lark
0.8x; docs/compile.md, "What changed at stop 38").

Invariants:

* every module in :data:`MODULES` has one source, its ``.py`` file, which is
  also the reference: ``CFGMASK_PURE_PYTHON=1`` (read once, when ``cfgmask``
  is imported) imports all of them from source (tests/test_compiled_python.py
  compares the two forms' results);
* the compiled form is imported only when the build record
  (``_compiled_sources.json`` beside this file, written by ``setup.py`` after
  the extensions are built) names the module with the CRC-32 of the very
  source it was compiled from.  A source edited after the build (a
  developer's tree), a record that is missing, or a module the record does not
  name, is imported from source: a stale extension is never run;
* nothing outside :data:`MODULES` is affected, and without extensions
  (a tree nobody built) every module is imported from source as before.

The Cython runtime (``cfgmask/_fast``) is not part of this: its ``.pyx``
sources are typed kernels with Python references of their own.
"""

import importlib.abc
import importlib.util
import json
import os
import sys
import zlib

__all__ = ["MODULES", "RECORD", "install", "source_crc", "source_file", "use_source", "compiled_modules"]

# Modules that run before the first mask of a new grammar and whose time is
# spread over many small Python functions.  Not here: what a background thread
# runs while matchers fill masks (engine/slices*.py, engine/compiler.py: compiled
# code drops the GIL less often), the runtime glue and the integrations.
MODULES = (
    "cfgmask.grammar",
    "cfgmask.cache",
    "cfgmask.frontends.cfg",
    "cfgmask.frontends.grammar_cache",
    "cfgmask.frontends.lark_build",
    "cfgmask.frontends.lark_compile",
    "cfgmask.frontends.lark_frontend",
    "cfgmask.frontends.lark_loader",
    "cfgmask.frontends.lark_meta",
    "cfgmask.frontends.lark_parse",
    "cfgmask.frontends.json_schema.automata",
    "cfgmask.frontends.json_schema.budget",
    "cfgmask.frontends.json_schema.cases",
    "cfgmask.frontends.json_schema.keywords",
    "cfgmask.frontends.json_schema.loader",
    "cfgmask.frontends.json_schema.negation",
    "cfgmask.frontends.json_schema.nodes",
    "cfgmask.frontends.json_schema.normalize",
    "cfgmask.frontends.json_schema.numbers",
    "cfgmask.frontends.json_schema.emit",
    "cfgmask.frontends.json_schema.strings",
    "cfgmask.frontends.json_schema.typed",
    "cfgmask.frontends.json_schema.validate",
    "cfgmask.automata.determinize",
    "cfgmask.automata.dfa",
    "cfgmask.automata.minimize",
    "cfgmask.automata.nfa",
    "cfgmask.automata.parse",
    "cfgmask.automata.pipeline",
    "cfgmask.automata.reparse",
    "cfgmask.automata.setops",
    "cfgmask.automata.unicode_tables",
    "cfgmask.automata.utf8",
    "cfgmask.engine.lexer",
)

RECORD = "_compiled_sources.json"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def source_crc(path):
    """CRC-32 of a file's bytes (the build record's check; zlib's is ~1 GB/s)."""
    with open(path, "rb") as f:
        return zlib.crc32(f.read())


def source_file(path):
    """The ``.py`` source beside a module file: ``path`` itself for a ``.py``
    file or one without a source beside it, else (an extension compiled from
    it) the ``.py`` file of the same module name."""
    if path.endswith(".py"):
        return path
    source = os.path.join(os.path.dirname(path), os.path.basename(path).split(".", 1)[0] + ".py")
    return source if os.path.isfile(source) else path


def _read_record(directory=_PACKAGE_DIR):
    try:
        with open(os.path.join(directory, RECORD), encoding="utf-8") as f:
            record = json.load(f)
        return {str(k): int(v) for k, v in record["modules"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _source_path(fullname, path):
    """The ``.py`` file of ``fullname`` on the parent package's ``path``, or None."""
    leaf = fullname.rpartition(".")[2] + ".py"
    for d in path or ():
        candidate = os.path.join(d, leaf)
        if os.path.isfile(candidate):
            return candidate
    return None


def use_source(fullname, source, record, pure):
    """Whether ``fullname`` (source file ``source``) must be imported from source:
    ``pure`` asks for it, or the record does not vouch for the compiled form."""
    if pure:
        return True
    built_from = record.get(fullname)
    return built_from is None or built_from != source_crc(source)


class _SourceOrCompiled(importlib.abc.MetaPathFinder):
    """Sends a module of :data:`MODULES` to its ``.py`` file when the extension
    beside it may not be run (see the module docstring); otherwise leaves it to
    the standard finders, which prefer the extension."""

    def __init__(self, record, pure):
        self.record, self.pure = record, pure

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _MODULE_SET or path is None:
            return None
        source = _source_path(fullname, path)
        if source is None or not use_source(fullname, source, self.record, self.pure):
            return None
        return importlib.util.spec_from_file_location(fullname, source)


_MODULE_SET = frozenset(MODULES)


def install():
    """Put the finder first on ``sys.meta_path`` (once; ``cfgmask/__init__`` calls it)."""
    if any(isinstance(f, _SourceOrCompiled) for f in sys.meta_path):
        return
    pure = os.environ.get("CFGMASK_PURE_PYTHON", "").strip() == "1"
    sys.meta_path.insert(0, _SourceOrCompiled(_read_record(), pure))


def compiled_modules():
    """The modules of :data:`MODULES` imported so far in their compiled form."""
    return sorted(name for name in MODULES
                  if name in sys.modules and not str(getattr(sys.modules[name], "__file__", "")).endswith(".py"))
