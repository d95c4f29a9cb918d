"""The compiled run time of cfgmask (Cython).

``_lexer``: the lazy union DFA table.  ``_earley``: grammar tables and the
Earley row stack.  ``_runtime``: a compiled grammar's shared tables and mask
caches (per-lexer-state entries, groups, continuations).  ``_matcher``: the
byte stack, the trie walk, the fill and the batch fill of one matcher.
``_mem.pxd``: the one way to grow a C array and to point into a numpy array.

Compile-time steps that a profile showed dominating a cold compile, each with
a Python reference the tests compare it with (docs/architecture.md, "Compiled
compile steps"): ``_automata`` and ``_minimal`` (subset construction, UTF-8
spelling, minimisation, the set operations' products and trimming; imported
only through ``cfgmask.automata.kernels``),
``_reparse`` (Python's regex parser for the common syntax;
``cfgmask.automata.reparse``) and ``_slicewalk`` (the slices' trie walks;
``cfgmask.engine.slice_walk``).
"""
