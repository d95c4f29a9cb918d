"""What the grammar IR and the front ends share about a flat context-free grammar.

The IR (:class:`cfgmask.grammar.Grammar`) computes ``nullable`` with
:func:`nullable` when it is built, and the grammar cache checks a stored
entry's ``nullable`` against it; front ends name rule 0's left side, the
augmented start symbol, :data:`START_SYMBOL_NAME`.  This module imports
nothing of cfgmask, so both sides may import it.
"""

import numpy as np

__all__ = ["START_SYMBOL_NAME", "nullable"]

START_SYMBOL_NAME = "$start"


def nullable(n_symbols, rules):
    """``nullable[s]`` for symbols ``0 .. n_symbols-1`` of ``rules`` (``[(lhs, [body symbols])]``):
    True iff ``s`` derives the empty string (a bool array)."""
    # worklist: each rule counts its body symbols not yet known nullable (linear time)
    null = [False] * n_symbols
    missing = []
    users = {}
    todo = []
    for r, (a, body) in enumerate(rules):
        missing.append(len(body))
        for s in body:
            users.setdefault(s, []).append(r)
        if not body and not null[a]:
            null[a] = True
            todo.append(a)
    while todo:
        s = todo.pop()
        for r in users.get(s, ()):
            missing[r] -= 1
            a = rules[r][0]
            if missing[r] == 0 and not null[a]:
                null[a] = True
                todo.append(a)
    return np.asarray(null, dtype=np.bool_)
