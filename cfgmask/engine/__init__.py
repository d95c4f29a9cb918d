"""The engine: a :class:`~cfgmask.grammar.Grammar` and a tokenizer in, masks out.

Read in this order: ``lexer`` (terminal automata -> the lexer tables the
runtime steps through), ``vocab`` (tokenizer -> token bytes), ``trie`` (token
bytes -> flat token trie), ``prepared`` (everything computed once per
vocabulary), ``slices`` (token sets the mask adds in bulk), ``compiler``
(all of it -> :class:`~cfgmask.engine.compiler.CompiledGrammar` ->
:class:`~cfgmask.engine.compiler.Matcher`, the Python face of the Cython
runtime in :mod:`cfgmask._fast`).

May import: :mod:`cfgmask.errors`, :mod:`cfgmask.cache`, :mod:`cfgmask.grammar`
(the IR), :mod:`cfgmask.automata` and :mod:`cfgmask._fast`.  Never a front
end (a grammar reaches the engine as IR, whatever its source), an
integration or the application.
"""
