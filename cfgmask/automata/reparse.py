"""``re._parser.parse``, through a compiled parser for the common syntax.

Every terminal regex is parsed at load time (the grammar loader's checks,
Lark's width measurement, the NFA builder), and Python's parser, pure Python,
was a measurable part of a cold start: ~50 ms of sql.lark's load, nearly all
of it its 7 generated identifier regexes of 14-17k characters (docs/compile.md,
"Regex parsing").  :func:`parse` answers with the tree of
:mod:`cfgmask._fast._reparse` where that parser covers the pattern, and
otherwise runs ``re._parser.parse`` itself.

Invariants: :func:`parse` returns what ``re._parser.parse(pattern, flags)``
returns -- an equal tree (items, opcodes, arguments, nesting) over an equal
``State`` -- and raises what it raises (the compiled parser gives up on every
pattern ``re`` refuses or warns about, so errors, their messages and
positions, and warnings are always ``re``'s own); ``re._parser`` is the
reference, ``tests/test_reparse.py`` compares the two.
``CFGMASK_PURE_REPARSE=1`` in the environment, read at every call, makes
:func:`parse` run ``re._parser.parse`` only.  This module and
:mod:`~cfgmask.automata.kernels` are the places :mod:`cfgmask.automata`
imports from ``_fast``; ``_fast._reparse`` imports nothing from cfgmask.
"""

import os

from cfgmask._fast import _reparse

try:  # Python >= 3.11
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - older Pythons
    import sre_parse

__all__ = ["parse", "compiled_parse", "getwidth", "PURE_ENV"]

PURE_ENV = "CFGMASK_PURE_REPARSE"


def compiled_parse(pattern, flags=0):
    """The compiled parser's tree for ``pattern``, or ``None`` where it gives up
    (or ``CFGMASK_PURE_REPARSE=1``); ``re._parser.parse`` then decides."""
    if os.environ.get(PURE_ENV) == "1":
        return None
    return _reparse.parse(pattern, flags)


def parse(pattern, flags=0):
    """``re._parser.parse(pattern, flags)``: the same tree, the same errors."""
    tree = compiled_parse(pattern, flags)
    return sre_parse.parse(pattern, flags) if tree is None else tree


def getwidth(tree):
    """``tree.getwidth()`` (``re._parser``'s widths, cached on the nodes as it caches
    them), computed by :func:`cfgmask._fast._reparse.getwidth`;
    ``CFGMASK_PURE_REPARSE=1`` runs ``re._parser``'s own."""
    if os.environ.get(PURE_ENV) == "1":
        return tree.getwidth()
    return _reparse.getwidth(tree)
