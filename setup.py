"""Build the Cython runtime in cfgmask/_fast.

Compile-time code (grammar loading, regex -> DFA, tokenizer -> trie) is plain
Python except ``_thompson``, ``_automata`` and ``_minimal`` (the Thompson NFA, the subset construction, UTF-8
spelling, minimisation and numbering of the regex pipeline, and the products
and trimming of its set operations, whose Python versions stay as the tests'
reference) and ``_reparse`` (Python's regex parser
for the common syntax; ``re._parser`` is its reference); the rest is the
per-token runtime.
Set CFGMASK_DEBUG=1 to build with bounds checks on, which the test suite can
use to catch indexing bugs.
"""
import os
import shutil
import sys
import sysconfig

from setuptools import Extension, setup


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
            "_slicewalk"]
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
    return cythonize(exts, compiler_directives=directives, quiet=True)


if any(a in sys.argv for a in ("build_ext", "build", "bdist_wheel", "install", "develop", "editable_wheel")):
    _check_compiler()

setup(ext_modules=_extensions())
