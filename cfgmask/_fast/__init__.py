"""The compiled run time of cfgmask (Cython).

``_lexer``: the lazy union DFA table.  ``_earley``: grammar tables and the
Earley row stack.  ``_runtime``: a compiled grammar's shared tables and mask
caches (per-lexer-state entries, groups, continuations).  ``_matcher``: the
byte stack, the trie walk, the fill and the batch fill of one matcher.
``_mem.pxd``: the one way to grow a C array and to point into a numpy array.
"""
