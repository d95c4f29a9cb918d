"""The compiled run time of cfgmask (Cython).

``_lexer``: the lazy union DFA table.  ``_earley``: grammar tables and the
Earley row stack.  ``_matcher``: the byte stack, the trie walk, the per-lexer-
state token caches and the Matcher itself.
"""
