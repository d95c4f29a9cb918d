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

from cfgmask.automata.dfa import ByteDFA, CountedDFA, column_classes, sorted_unique
from cfgmask.automata.kernels import compiled
from cfgmask.automata.memo import pinned_dfa, remember_dfa, remembered_dfa
from cfgmask.automata.minimize import minimize_and_trim, renumber_bfs
from cfgmask.cache import BoundedMemo

__all__ = ["CountedOperand", "ProductTooLarge", "PRODUCT_MAX_STATES", "SETOP_MEMO", "empty_dfa",
           "find_dfa", "intersect_all", "is_empty", "keep_states", "keep_states_python",
           "live_states", "live_states_python", "product", "product_classes_python",
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


def keep_states(trans, live, columns=None):
    """``trans`` restricted to the ``live`` states (``live[0]`` true), renumbered
    in order: every live state is reachable from 0 through live states, so
    compacting keeps 0 first.  ``columns``: take the result's columns from
    these (a table over byte classes spread to bytes).  In C
    (``_fast/_minimal.pyx``) unless ``CFGMASK_PURE_AUTOMATA=1``;
    :func:`keep_states_python` is the reference."""
    kernel = compiled()
    if kernel is None:
        return keep_states_python(trans, live, columns)
    return kernel.keep(trans, live, columns)


def keep_states_python(trans, live, columns=None):
    """:func:`keep_states` in NumPy, the reference."""
    new_id = np.where(live, np.cumsum(live) - 1, -1)
    trans = np.where(trans >= 0, new_id[np.maximum(trans, 0)], -1)[live].astype(np.int32)
    if columns is not None:
        trans = trans[:, columns]
    return np.ascontiguousarray(trans)


def live_states(trans, accepting):
    """Bool per state: can it reach an accepting state?  In C unless
    ``CFGMASK_PURE_AUTOMATA=1``; :func:`live_states_python` is the reference."""
    kernel = compiled()
    if kernel is None:
        return live_states_python(trans, accepting)
    return kernel.live(trans, accepting)


def live_states_python(trans, accepting):
    """:func:`live_states` in NumPy, the reference."""
    n = trans.shape[0]
    src, cols = np.nonzero(trans >= 0)
    dst = trans[src, cols]
    order = np.argsort(dst, kind="stable")
    src_sorted = src[order]
    starts = np.searchsorted(dst[order], np.arange(n + 1))
    live = np.array(accepting, dtype=bool)
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
    table, class_of, accepting, _, _ = _product_classes(a, b, mode, max_states)
    if minimize and len(accepting) <= _MINIMIZE_MAX_STATES:
        return trimmed_dfa(_spread(table, class_of), accepting, pattern, minimize)
    # trimmed over the byte classes, then spread to 256 columns: what
    # trimmed_dfa does to the full table, on a table a few columns wide
    live = live_states(table, accepting)
    if not live[0]:
        return empty_dfa(pattern)
    small = keep_states(table, live)
    dfa = ByteDFA(_spread(small, class_of), accepting[live], pattern=pattern)
    # its column classes, read off the narrow table (hashing 256 columns of a
    # 12,000-state product took the lexer 8 ms)
    ids = {}
    composed = column_classes(small)[0][class_of].tolist()
    dfa.set_column_class(np.fromiter((ids.setdefault(c, len(ids)) for c in composed), np.uint8, 256))
    return dfa


def product_table(a, b, mode, max_states=PRODUCT_MAX_STATES):
    """The reachable pairs of ``a`` x ``b``: ``(trans [n, 256], accepting, pa, pb)``,
    pair ``i`` = (``pa[i]``, ``pb[i]``), an index ``a.n_states`` / ``b.n_states``
    meaning "dead on that side"; not trimmed."""
    table, class_of, accepting, pa, pb = _product_classes(a, b, mode, max_states)
    return _spread(table, class_of), accepting, pa, pb


_MODES = {"and": 0, "minus": 1, "or": 2}


def _spread(table, class_of):
    """``table[:, class_of]``, C-contiguous (by :func:`keep_states`, which makes
    it in one pass where NumPy's gather is slow on big tables)."""
    return keep_states(table, np.ones(table.shape[0], dtype=bool), class_of)


def _product_classes(a, b, mode, max_states):
    """:func:`product_table` over the byte classes the two automata share
    (bytes that both send the same way stay together): ``(table [n, k],
    class_of [256], accepting, pa, pb)``, a product of two digit automata
    has about 13 columns.  The pairs come from C (``_fast/_minimal.pyx``)
    unless ``CFGMASK_PURE_AUTOMATA=1``; :func:`product_classes_python` is
    the reference."""
    if isinstance(a, CountedDFA) or isinstance(b, CountedDFA):
        raise CountedOperand()
    ca, cb = a.column_class(), b.column_class()
    _, reps, class_of = np.unique(ca.astype(np.int32) * 256 + cb, return_index=True,
                                  return_inverse=True)
    A, B = a.trans[:, reps], b.trans[:, reps]
    kernel = compiled()
    out = (kernel.product(A, B, _MODES[mode], max_states) if kernel is not None
           else product_classes_python(A, B, mode, max_states))
    if out is None:
        raise ProductTooLarge(max_states)
    table, pa, pb = out
    acc_a = np.concatenate([a.accepting, [False]])[pa]
    acc_b = np.concatenate([b.accepting, [False]])[pb]
    if mode == "and":
        accepting = acc_a & acc_b
    elif mode == "minus":
        accepting = acc_a & ~acc_b
    else:
        accepting = acc_a | acc_b
    return table, class_of.ravel(), accepting, pa, pb


def product_classes_python(A, B, mode, max_states):
    """The reachable pairs of the tables ``A`` ``[na, k]`` and ``B`` ``[nb, k]``
    (-1 dead; the same column classes), numbered level by level breadth first,
    a level's new pairs in increasing pair code ``a * (nb + 1) + b``:
    ``(table [n, k], pa, pb)`` with ``na`` / ``nb`` for "dead on that side",
    or None past ``max_states`` pairs.  The reference of the C kernel;
    each level reads all its pairs' rows at once."""
    na, nb = A.shape[0], B.shape[0]
    k = A.shape[1]
    # explicit non-accepting sinks (index na / nb) stand for "dead on this side"
    A = np.vstack([A, np.full((1, k), na, np.int32)])
    A = np.where(A < 0, na, A)
    B = np.vstack([B, np.full((1, k), nb, np.int32)])
    B = np.where(B < 0, nb, B)
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
            return None
    n = len(pa)
    table = np.full((n, k), -1, np.int32)
    for fr, mapped in rows:
        table[fr] = mapped
    return table, np.asarray(pa, np.int64), np.asarray(pb, np.int64)


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
