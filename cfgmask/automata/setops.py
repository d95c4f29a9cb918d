"""Operations on byte DFAs: products (intersection, difference, union), trimming,
and set operations registered under an exact regex text.

Every function returns a :class:`~cfgmask.automata.dfa.ByteDFA` with the
invariants the lexer needs: start state 0, ``-1`` = dead, trimmed (every state
can still reach an accepting state; the empty language is one non-accepting
state), no follow restrictions.  They are not always minimal
(:func:`trimmed_dfa` minimises small automata only); minimality only saves
union-automaton states at run time.

The operands must have no follow restrictions, and a
:class:`~cfgmask.automata.dfa.CountedDFA` is refused (:class:`CountedOperand`):
its table alone is a superset of its language.  A product with more than
``max_states`` reachable pairs is refused (:class:`ProductTooLarge`).

:func:`union`, :func:`intersect_all` and :func:`subtract` name their result by
a pattern text that is an *exact* Python regex for its language (``(?:A|B)``,
``(?=(?:A)\\Z)(?:B)``, ``(?!(?:B)\\Z)(?:A)``), look it up first
(:func:`find_dfa`: pinned automata, then the results of earlier set
operations, then the regex memo) and register the result
(:func:`register_dfa`), so that the same operation is computed once per
process and a grammar that uses the text stays self-describing.
"""

import numpy as np

from cfgmask.automata.dfa import ByteDFA, CountedDFA, sorted_unique
from cfgmask.automata.memo import pinned_dfa, remember_dfa, remembered_dfa
from cfgmask.automata.minimize import minimize_and_trim, renumber_bfs
from cfgmask.cache import BoundedMemo

__all__ = ["CountedOperand", "ProductTooLarge", "PRODUCT_MAX_STATES", "SETOP_MEMO", "empty_dfa",
           "find_dfa", "intersect_all", "is_empty", "keep_states", "live_states", "product",
           "product_table", "register_dfa", "subtract", "trimmed_dfa", "union"]

# the lexer's default per-terminal limit (compiler.Limits.max_terminal_states)
PRODUCT_MAX_STATES = 20_000
_MINIMIZE_MAX_STATES = 300


class CountedOperand(Exception):
    """A :class:`~cfgmask.automata.dfa.CountedDFA` operand: its table alone is a
    superset of its language, so no product is built from it."""


class ProductTooLarge(Exception):
    """A product would have more than ``limit`` states."""

    def __init__(self, limit):
        super().__init__(f"the product has more than {limit} states")
        self.limit = limit


# ------------------------------------------------------------------ basics

def empty_dfa(pattern="(?!)"):
    """The automaton of the empty language (one non-accepting state)."""
    return ByteDFA(np.full((1, 256), -1, np.int32), np.zeros(1, bool), pattern=pattern)


def is_empty(dfa):
    """Does ``dfa`` (trimmed) accept nothing?"""
    return not bool(dfa.accepting.any())


def trimmed_dfa(trans, accepting, pattern, minimize=True):
    """Trim, minimise (``minimize``, small ones) and renumber breadth-first from 0.

    Minimising goes through the regex pipeline's own minimiser (byte
    classes, Moore rounds finished by Hopcroft).  Minimality only saves
    union-automaton states at run time, and Hopcroft's pure-Python rounds
    cost about 5 ms per thousand states of a long product, so big ones are
    only trimmed.
    """
    trans = np.asarray(trans, np.int32)
    accepting = np.asarray(accepting, bool)
    if minimize and len(accepting) <= _MINIMIZE_MAX_STATES:
        no_follow = [0] * len(accepting)
        trans, accepting, _ = minimize_and_trim(trans, accepting, no_follow, moore_min_states=0)
        if not accepting.any():
            return empty_dfa(pattern)
        trans, accepting, _ = renumber_bfs(trans, accepting, no_follow[:len(accepting)])
        return ByteDFA(trans, accepting, pattern=pattern)
    live = live_states(trans, accepting)
    if not live[0]:
        return empty_dfa(pattern)
    return ByteDFA(keep_states(trans, live), accepting[live], pattern=pattern)


def keep_states(trans, live):
    """``trans`` restricted to the ``live`` states (``live[0]`` true), renumbered
    in order: every live state is reachable from 0 through live states, so
    compacting keeps 0 first."""
    new_id = np.where(live, np.cumsum(live) - 1, -1)
    trans = np.where(trans >= 0, new_id[np.maximum(trans, 0)], -1)[live].astype(np.int32)
    return np.ascontiguousarray(trans)


def live_states(trans, accepting):
    """Bool per state: can it reach an accepting state?"""
    n = trans.shape[0]
    src, cols = np.nonzero(trans >= 0)
    dst = trans[src, cols]
    order = np.argsort(dst, kind="stable")
    src_sorted = src[order]
    starts = np.searchsorted(dst[order], np.arange(n + 1))
    live = accepting.copy()
    frontier = np.flatnonzero(live)
    while frontier.size:
        preds = np.concatenate([src_sorted[starts[s]:starts[s + 1]] for s in frontier.tolist()])
        preds = sorted_unique(preds)
        preds = preds[~live[preds]]
        live[preds] = True
        frontier = preds
    return live


# -------------------------------------------------------------- products

def product(a, b, mode, pattern, minimize=True, max_states=PRODUCT_MAX_STATES):
    """``a`` and ``b`` (``"and"``), ``a`` and not ``b`` (``"minus"``) or either (``"or"``)."""
    trans, accepting, _, _ = product_table(a, b, mode, max_states)
    return trimmed_dfa(trans, accepting, pattern, minimize)


def product_table(a, b, mode, max_states=PRODUCT_MAX_STATES):
    """The reachable pairs of ``a`` x ``b``: ``(trans [n, 256], accepting, pa, pb)``,
    pair ``i`` = (``pa[i]``, ``pb[i]``), an index ``a.n_states`` / ``b.n_states``
    meaning "dead on that side"; not trimmed.

    Built over the byte classes the two automata share (bytes that both send
    the same way stay together), so each breadth-first level reads a few
    columns instead of 256: a product of two digit automata has about 13.
    """
    if isinstance(a, CountedDFA) or isinstance(b, CountedDFA):
        raise CountedOperand()
    na, nb = a.n_states, b.n_states
    ca, cb = a.column_class(), b.column_class()
    _, reps, class_of = np.unique(ca.astype(np.int32) * 256 + cb, return_index=True,
                                  return_inverse=True)
    # explicit non-accepting sinks (index na / nb) stand for "dead on this side"
    A = np.vstack([a.trans[:, reps], np.full((1, len(reps)), na, np.int32)])
    A = np.where(A < 0, na, A)
    B = np.vstack([b.trans[:, reps], np.full((1, len(reps)), nb, np.int32)])
    B = np.where(B < 0, nb, B)
    a_acc = np.concatenate([a.accepting, [False]])
    b_acc = np.concatenate([b.accepting, [False]])
    width = nb + 1
    ids = {0: 0}
    pa, pb = [0], [0]
    rows = []
    frontier = np.array([0], np.int64)
    while frontier.size:
        ta = A[np.asarray(pa, np.int64)[frontier]]
        tb = B[np.asarray(pb, np.int64)[frontier]]
        if mode == "and":
            ok = (ta != na) & (tb != nb)
        elif mode == "minus":
            ok = ta != na
        else:
            ok = (ta != na) | (tb != nb)
        codes = np.where(ok, ta.astype(np.int64) * width + tb, -1)
        new = []
        level, inverse = np.unique(codes, return_inverse=True)
        level_ids = np.empty(len(level), np.int64)
        for i, code in enumerate(level.tolist()):
            if code < 0:
                level_ids[i] = -1
                continue
            sid = ids.get(code)
            if sid is None:
                sid = ids[code] = len(pa)
                pa.append(code // width)
                pb.append(code % width)
                new.append(sid)
            level_ids[i] = sid
        rows.append((frontier, level_ids[inverse.reshape(codes.shape)]))
        frontier = np.asarray(new, np.int64)
        if len(pa) > max_states:
            raise ProductTooLarge(max_states)
    n = len(pa)
    trans = np.full((n, len(reps)), -1, np.int32)
    for fr, mapped in rows:
        trans[fr] = mapped
    trans = trans[:, class_of.ravel()]
    pa, pb = np.asarray(pa), np.asarray(pb)
    acc_a, acc_b = a_acc[pa], b_acc[pb]
    if mode == "and":
        accepting = acc_a & acc_b
    elif mode == "minus":
        accepting = acc_a & ~acc_b
    else:
        accepting = acc_a | acc_b
    return trans, accepting, pa, pb


# ------------------------------------------------ set operations by pattern text

def union(a, a_text, b, b_text, owner):
    """``a`` or ``b``, registered under ``(?:A|B)`` (exact whenever A and B are)."""
    text = f"(?:{a_text}|{b_text})"
    cached = find_dfa(text)
    if cached is None:
        cached = product(a, b, "or", text)
    register_dfa(text, cached, owner)
    return cached, text


def intersect_all(dfas, texts, owner):
    """Intersection of ``dfas`` (``texts`` their patterns), pinned under an exact lookahead text."""
    if len(dfas) == 1:
        return dfas[0], texts[0]
    text = "".join(f"(?=(?:{t})\\Z)" for t in texts[1:]) + f"(?:{texts[0]})"
    cached = find_dfa(text)
    if cached is not None:
        register_dfa(text, cached, owner)
        return cached, text
    dfa = dfas[0]
    for other in dfas[1:]:
        dfa = product(dfa, other, "and", text)
    register_dfa(text, dfa, owner)
    return dfa, text


def subtract(a, a_text, b, b_text, owner):
    """``a`` minus ``b``, pinned under ``(?!(?:B)\\Z)(?:A)``."""
    text = f"(?!(?:{b_text})\\Z)(?:{a_text})"
    cached = find_dfa(text)
    if cached is None:
        cached = product(a, b, "minus", text)
    register_dfa(text, cached, owner)
    return cached, text


# Results of set operations, keyed by their (exact) pattern text, so that the
# same intersection or difference is computed once per process.
SETOP_MEMO = BoundedMemo(1024, order="fifo")


def find_dfa(text):
    """The automaton known for the exact pattern ``text``: pinned, else the result of
    a set operation, else the regex memo's; None when none is."""
    dfa = pinned_dfa(text)
    if dfa is not None:
        return dfa
    hit = SETOP_MEMO.get(text)
    if hit is not None:
        return hit
    return remembered_dfa(text)


def register_dfa(text, dfa, owner):
    """Keep ``dfa`` as the automaton of ``text``: in :data:`SETOP_MEMO`, and in the
    regex memo (``owner`` None) or in ``owner``, a list of ``(text, dfa)`` whose
    keeper pins them with :func:`~cfgmask.automata.memo.remember_dfa` for as
    long as the grammar using them lives."""
    SETOP_MEMO.put(text, dfa)
    if owner is None:
        remember_dfa(text, dfa)
    else:
        owner.append((text, dfa))
