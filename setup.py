"""Build the Cython runtime in cfgmask/_fast.

Compile-time code (grammar loading, regex -> DFA, tokenizer -> trie) is plain
Python except ``_thompson``, ``_automata`` and ``_minimal`` (the Thompson NFA, the subset construction, UTF-8
spelling, minimisation and numbering of the regex pipeline, and the products
and trimming of its set operations, whose Python versions stay as the tests'
reference) and ``_reparse`` (Python's regex parser
for the common syntax; ``re._parser`` is its reference); the rest is the
per-token runtime.

The compile-time Python modules listed in ``cfgmask/compiled_python.py``
(``MODULES``) are also translated unchanged by Cython into extension modules
beside their ``.py`` files; after building, ``_compiled_sources.json`` records
the source each was built from, and ``cfgmask.compiled_python`` imports a
module's extension only when its source is still that one.  Set
CFGMASK_PURE_PYTHON_BUILD=1 to build the runtime alone.
Set CFGMASK_DEBUG=1 to build with bounds checks on, which the test suite can
use to catch indexing bugs.
"""
import ast
import json
import os
import shutil
import sys
import sysconfig
import zlib

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def _check_compiler():
    cc = sysconfig.get_config_var("CC") or "cc"
    exe = os.environ.get("CC", cc).split()[0]
    if shutil.which(exe) is None:
        sys.exit(
            f"cfgmask: no C compiler found (looked for {exe!r}). The runtime is a Cython "
            "extension and must be compiled: install gcc (Debian: apt-get install build-essential "
            "python3-dev) or set CC."
        )


def _extensions():
    from Cython.Build import cythonize
    import numpy

    debug = os.environ.get("CFGMASK_DEBUG") == "1"
    directives = {
        "language_level": "3",
        "boundscheck": debug,
        "wraparound": False,
        "cdivision": True,
        "initializedcheck": debug,
        "nonecheck": False,
        "embedsignature": True,
    }
    mods = ["_lexer", "_earley", "_runtime", "_matcher", "_thompson", "_automata", "_minimal", "_reparse",
            "_slicewalk", "_larklex"]
    # no OpenMP: batch fills run on the runtime's own pool (_fast/_pool.h), which
    # sleeps instead of spinning; libgomp's spin policy is fixed by whoever loads it first
    exts = [
        Extension(
            f"cfgmask._fast.{m}",
            [f"cfgmask/_fast/{m}.pyx"],
            include_dirs=[numpy.get_include(), "cfgmask/_fast"],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
            extra_compile_args=(["-O3"] if not debug else ["-O0", "-g"]) + ["-pthread"],
            extra_link_args=["-pthread"],
        )
        for m in mods
    ]
    nthreads = min(4, os.cpu_count() or 1)
    exts = cythonize(exts, compiler_directives=directives, quiet=True, nthreads=nthreads)
    if os.environ.get("CFGMASK_PURE_PYTHON_BUILD") != "1":
        exts += cythonize(_python_extensions(), quiet=True, nthreads=nthreads, compiler_directives={
            "language_level": "3",
            # the sources are plain Python: annotations are documentation, not C
            # types (``x: int`` would refuse a numpy integer), and functions stay
            # introspectable like Python's (functools.wraps, pickling by name)
            "annotation_typing": False,
            "binding": True,
        })
    return exts


def _compiled_python_modules():
    """``MODULES`` of cfgmask/compiled_python.py, read without importing cfgmask."""
    with open("cfgmask/compiled_python.py", encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MODULES" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise RuntimeError("cfgmask/compiled_python.py has no MODULES")


def _python_extensions():
    # -O1 without debug info: -O2 ran as many instructions on javascript.lark's load
    # (callgrind, docs/compile.md) and took 1.6x as long to build; -g triples the size
    return [Extension(name, [name.replace(".", "/") + ".py"], extra_compile_args=["-O1", "-g0"])
            for name in _compiled_python_modules()]


class BuildExt(build_ext):
    """build_ext, then the record of which sources the compiled Python modules
    came from (cfgmask/compiled_python.py): written only after every extension
    is built, into the build tree and, for in-place builds, the source tree."""

    def run(self):
        super().run()
        compiled = set(_compiled_python_modules())
        modules = {e.name: zlib.crc32(open(e.name.replace(".", "/") + ".py", "rb").read())
                   for e in self.extensions if e.name in compiled}
        text = json.dumps({"modules": modules}, indent=1, sort_keys=True) + "\n"
        targets = [os.path.join(self.build_lib, "cfgmask")]
        if self.inplace or self.editable_mode:
            targets.append("cfgmask")
        for d in targets:
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "_compiled_sources.json"), "w", encoding="utf-8") as f:
                f.write(text)


if any(a in sys.argv for a in ("build_ext", "build", "bdist_wheel", "install", "develop", "editable_wheel")):
    _check_compiler()

setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildExt},
      # the extensions compile side by side (two cores: about half the build time)
      options={"build_ext": {"parallel": os.cpu_count() or 1}})
