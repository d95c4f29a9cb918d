"""The switch between the regex pipeline's compiled kernels and their Python references.

The Thompson NFA (:mod:`~cfgmask.automata.nfa`, without lookaheads), the
subset construction (:mod:`~cfgmask.automata.determinize`, without
lookaheads), the UTF-8 spelling (:mod:`~cfgmask.automata.utf8`), the
trimming, minimisation and breadth-first numbering
(:mod:`~cfgmask.automata.minimize`), the column classes
(:mod:`~cfgmask.automata.dfa`, with its cycle search) and the products of
set operations with their trimming (:mod:`~cfgmask.automata.setops`) run in C, in :mod:`cfgmask._fast._thompson`,
:mod:`cfgmask._fast._automata` and :mod:`cfgmask._fast._minimal`, because they were most of a cold compile
(docs/architecture.md, "Compiled compile steps").  Their Python versions stay:
they define the results, the tests compare the two
(``tests/test_automata_compiled.py``), and ``CFGMASK_PURE_AUTOMATA=1`` in the
environment, read at every call, makes the pipeline use them.

Invariant: this module (and :mod:`~cfgmask.automata.reparse`, for the regex
parser) is where :mod:`cfgmask.automata` imports from ``_fast``, and the
kernel modules import nothing from cfgmask.
Like the run-time extensions, they are required (``setup.py`` builds them);
there is no silent fallback.  They are not in ``CODE_MODULES`` (the disk
cache's code fingerprint): they compute what the references in the
fingerprinted modules define, and hashing their shared objects (a few MB)
would cost every cold process milliseconds.
"""

import os
from types import SimpleNamespace

from cfgmask._fast import _automata, _minimal, _thompson

__all__ = ["KERNELS", "PURE_ENV", "compiled"]

PURE_ENV = "CFGMASK_PURE_AUTOMATA"

#: the compiled kernels by name (each documents its Python reference)
KERNELS = SimpleNamespace(thompson=_thompson.thompson, subsets=_automata.subsets,
                          subsets_flat=_automata.subsets_flat,
                          utf8=_automata.utf8,
                          minimal=_minimal.minimal, bfs=_minimal.bfs,
                          column_classes=_minimal.column_classes,
                          byte_representatives=_minimal.byte_representatives,
                          product=_minimal.product, live=_minimal.live, keep=_minimal.keep,
                          cycle=_minimal.cycle, stacked_columns=_minimal.stacked_columns)


def compiled():
    """:data:`KERNELS`, or ``None`` when ``CFGMASK_PURE_AUTOMATA=1`` asks for
    the Python references."""
    return None if os.environ.get(PURE_ENV) == "1" else KERNELS
