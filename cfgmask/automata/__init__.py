"""Byte-level automata: Python regexes -> exact minimal byte DFAs, and operations on them.

This package owns every finite automaton cfgmask builds, from a terminal's
regex text to the :class:`ByteDFA` the lexer tables are made of.  One module
per stage, in the order of the pipeline (:mod:`~cfgmask.automata.pipeline`
says what each guarantees):

==================  ===========================================================
``parse``           Python regex syntax (``re._parser``): opcodes, flags, the
                    code points of one character, repeated classes, the
                    parse-tree memo
``unicode_tables``  sets of Unicode scalar values as range tuples, computed
                    with Python's own ``re``
``nfa``             parse tree -> Thompson NFA over characters, lookahead
                    constraints on the next byte
``determinize``     NFA -> DFA over code point atoms (subset construction)
``minimize``        trimming, minimisation (Moore, Hopcroft), BFS numbering
``utf8``            code point atoms -> UTF-8 byte edges
``dfa``             :class:`ByteDFA`, :class:`CountedDFA`, column and byte
                    classes, cycle test
``memo``            the process-wide memo of automata by pattern text
``pipeline``        :func:`compile_regex`: the stages above, memoised
``setops``          products, trimming, set operations under exact pattern
                    texts
``refusals``        the :class:`~cfgmask.errors.GrammarError` of each refusal
``kernels``         the switch to the C kernels of ``determinize``, ``minimize``,
                    ``utf8``, ``dfa`` and ``setops`` (``CFGMASK_PURE_AUTOMATA=1``:
                    the Python references)
==================  ===========================================================

The names below are the package's public API; the rest of cfgmask imports
them from here (or from the module that defines them), never a ``_private``
name.

May import: :mod:`cfgmask.errors`, :mod:`cfgmask.cache`, numpy, the
standard library and (in ``kernels`` only) the compile-time kernels
``cfgmask._fast._automata`` and ``cfgmask._fast._minimal``, which import
nothing from cfgmask.  Never the front ends (:mod:`cfgmask.frontends`), the
engine (:mod:`cfgmask.engine`), the run time (the rest of ``_fast``) or
:mod:`cfgmask.grammar`: the automata know regexes and bytes, not grammars.
"""

from cfgmask.automata.determinize import progress
from cfgmask.automata.dfa import (ByteDFA, CountedDFA, byte_classes, byte_representatives,
                                  column_classes, has_cycle)
from cfgmask.automata.memo import build_cost, remember_dfa
from cfgmask.automata.minimize import minimize_and_trim, renumber_bfs
from cfgmask.automata.parse import (class_regex, parse_pattern, repeat_classes, sre_parse,
                                    unescaped_characters)
from cfgmask.automata.pipeline import DEFAULT_MAX_STATES, compile_regex, regex_to_dfa

#: the modules whose source decides what :func:`compile_regex` builds: part of the
#: key of every disk-cache entry made from its automata (``cache.code_fingerprint``)
CODE_MODULES = ("cfgmask.automata.determinize", "cfgmask.automata.dfa", "cfgmask.automata.minimize",
                "cfgmask.automata.nfa", "cfgmask.automata.parse", "cfgmask.automata.pipeline",
                "cfgmask.automata.refusals", "cfgmask.automata.unicode_tables",
                "cfgmask.automata.utf8")

# The set operations serve the JSON Schema front end only: loaded on first use,
# so that a Lark grammar's compile does not pay their import (1.4 ms here).
_SETOPS = ("CountedOperand", "ProductTooLarge", "empty_dfa", "find_dfa", "intersect_all", "is_empty",
           "keep_states", "live_states", "product", "product_table", "register_dfa", "subtract",
           "trimmed_dfa", "union")


def __getattr__(name):
    if name in _SETOPS:
        from cfgmask.automata import setops
        value = getattr(setops, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cfgmask.automata' has no attribute {name!r}")


__all__ = [
    "CODE_MODULES",
    # regex -> DFA
    "compile_regex", "regex_to_dfa", "DEFAULT_MAX_STATES", "parse_pattern", "progress",
    "remember_dfa", "build_cost",
    # the automata
    "ByteDFA", "CountedDFA", "byte_classes", "byte_representatives", "column_classes", "has_cycle",
    # regex text
    "sre_parse", "unescaped_characters", "repeat_classes", "class_regex",
    # tables
    "minimize_and_trim", "renumber_bfs",
    # operations
    "empty_dfa", "is_empty", "trimmed_dfa", "keep_states", "live_states", "product",
    "product_table", "union", "intersect_all", "subtract", "find_dfa", "register_dfa",
    "CountedOperand", "ProductTooLarge",
]
