"""Front ends: text in some language -> the grammar IR (:class:`~cfgmask.grammar.Grammar`).

Lark grammars (the Lark loader and its normalisation, the ``%cfgmask``
pragmas), the bundled grammars with their generation profiles and SQL
dialects, SQL schemas, and JSON Schema (``json_schema``).

May import: :mod:`cfgmask.errors`, :mod:`cfgmask.cache`,
:mod:`cfgmask.automata` and each other.  Never the engine, the runtime, an
integration or the application: a front end's output is IR, and the IR is all
the engine sees.
"""
