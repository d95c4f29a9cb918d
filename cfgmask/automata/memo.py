"""The process-wide memo of terminal automata, keyed by pattern text.

Building a DFA is pure Python; grammars generated from JSON schemas reuse the
same few terminals (strings, numbers, keys) over and over.  Two tables:

* :data:`DFA_MEMO`, a :class:`~cfgmask.cache.BoundedMemo` of 4,096 entries
  aged from insertion (``"fifo"``): ``pattern -> (ByteDFA, build seconds or
  None)``, filled by :func:`~cfgmask.automata.compile_regex` and by
  :func:`remember_dfa` without an owner;
* :data:`PINNED_DFAS`: ``pattern -> [ByteDFA, owners]``, automata that
  ``compile_regex`` cannot build from their text (intersections written with
  lookaheads), kept while some owner (a grammar) is alive.

Invariants: an entry's automaton accepts exactly the full-match language of
its pattern (the caller of :func:`remember_dfa` guarantees it for automata
built elsewhere); automata are shared, never mutated; a pinned entry wins
over the memo; a build time is known only for an automaton ``compile_regex``
built itself.
"""

import weakref

from cfgmask.automata.dfa import ByteDFA
from cfgmask.automata.refusals import too_large
from cfgmask.cache import BoundedMemo

__all__ = ["DFA_MEMO", "PINNED_DFAS", "build_cost", "remember_dfa", "memoise", "memoised_dfa",
           "pinned_dfa", "remembered_dfa"]

DFA_MEMO = BoundedMemo(4096, order="fifo")   # pattern -> (ByteDFA, build seconds or None)
PINNED_DFAS = {}        # pattern -> [ByteDFA, owners]: automata compile_regex cannot build itself


def build_cost(pattern: str) -> float:
    """Seconds :func:`~cfgmask.automata.compile_regex` spent building the memoised automaton of
    ``pattern``; 0.0 when it did not build it (not met yet, evicted, or handed
    over by :func:`remember_dfa`, whose caller builds it again in any process).
    The lexer's disk cache uses it to tell what a fresh process would pay."""
    entry = DFA_MEMO.get(pattern)
    return 0.0 if entry is None or entry[1] is None else entry[1]


def remember_dfa(pattern: str, dfa: ByteDFA, owner=None) -> None:
    """Register ``dfa`` as the automaton of ``pattern`` for :func:`~cfgmask.automata.compile_regex`.

    The caller guarantees that ``dfa`` accepts exactly the full-match
    language of ``pattern`` (``cfgmask.frontends.json_schema`` builds some automata
    directly, faster than the regex pipeline).  Without ``owner`` the entry
    lives in the bounded memo.  With ``owner`` (an object that supports weak
    references, e.g. the :class:`~cfgmask.grammar.Grammar` that uses the
    terminal) the entry is pinned until every owner is garbage collected:
    that is for patterns whose automaton ``compile_regex`` could not rebuild
    from the text (intersections written with lookaheads).
    """
    if owner is None:
        memoise(pattern, dfa)
        return
    entry = PINNED_DFAS.get(pattern)
    if entry is None:
        entry = PINNED_DFAS[pattern] = [dfa, 0]
    entry[1] += 1
    weakref.finalize(owner, _unpin_dfa, pattern)


def _unpin_dfa(pattern):
    entry = PINNED_DFAS.get(pattern)
    if entry is not None:
        entry[1] -= 1
        if entry[1] <= 0:
            del PINNED_DFAS[pattern]


def memoise(pattern, dfa, build_s=None):
    """Keep ``dfa`` in :data:`DFA_MEMO` as the automaton of ``pattern`` (``build_s``:
    what building it took, when the pipeline built it)."""
    DFA_MEMO.put(pattern, (dfa, build_s))


def pinned_dfa(pattern):
    """The automaton pinned for ``pattern``, or None."""
    entry = PINNED_DFAS.get(pattern)
    return None if entry is None else entry[0]


def remembered_dfa(pattern):
    """The automaton :data:`DFA_MEMO` holds for ``pattern``, or None."""
    entry = DFA_MEMO.get(pattern)
    return None if entry is None else entry[0]


def memoised_dfa(pattern, name, max_states, rename=True):
    """The pinned or memoised automaton of ``pattern`` (pinned first), or None;
    a copy named ``name`` when ``rename``; a refusal when it has more than
    ``max_states`` states."""
    entry = PINNED_DFAS.get(pattern)      # (pinned_dfa and remembered_dfa, inlined: a hot path)
    if entry is None:
        entry = DFA_MEMO.get(pattern)
        if entry is None:
            return None
    dfa = entry[0]
    if dfa.n_states > max_states:
        raise too_large(name, max_states, "DFA")
    if rename and dfa.name != name:  # same tables, the caller's name for messages
        cls = type(dfa)
        renamed = cls.__new__(cls)
        for klass in cls.__mro__:
            for slot in getattr(klass, "__slots__", ()):
                setattr(renamed, slot, getattr(dfa, slot))
        renamed.name = name
        dfa = renamed
    return dfa
