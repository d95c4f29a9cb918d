"""Lark's ``load_grammar`` with a faster check of the loaded definitions.

``lark.load_grammar.load_grammar(text, source, import_paths, keep_all)``
reads the text and its ``%import``s into a ``GrammarBuilder``, whose
``build()`` first runs ``validate()`` and then lists the definitions as a
``Grammar``.  ``validate()`` asks of every definition: template parameters
that clash with a definition or repeat, template uses that name nothing or
pass the wrong number of arguments, symbols used (inside an ``expansion``)
but never defined, and ``%ignore`` names never defined.  It walks each
tree with Lark's generic ``find_data`` / ``scan_values`` iterators, about a
third of javascript.lark's whole load once the text was read and compiled
by our own code (:mod:`~cfgmask.frontends.lark_parse`,
:mod:`~cfgmask.frontends.lark_compile`).

:func:`load_grammar` answers the same questions with one direct walk per
tree.  Where every answer is "fine" it lists the definitions itself;
otherwise it calls Lark's ``validate()``, which raises the error Lark
raises, in Lark's order.  So:

Invariants:

* the result (``Grammar`` and used files) is what Lark's ``load_grammar``
  returns, and a grammar it refuses raises the same exception
  (tests/test_lark_build.py compares them);
* only with lark 1.3.x (the ``GrammarBuilder`` internals read here); with any
  other version Lark's own function runs.
"""

__all__ = ["load_grammar"]


def load_grammar(text, source, import_paths, global_keep_all_tokens=False):
    """``(Grammar, used files)`` as ``lark.load_grammar.load_grammar`` gives them."""
    import lark
    from lark import load_grammar as L

    if not lark.__version__.startswith("1.3"):
        return L.load_grammar(text, source, import_paths, global_keep_all_tokens)
    builder = L.GrammarBuilder(global_keep_all_tokens, import_paths)
    builder.load_grammar(text, source)
    if not _all_valid(builder):
        builder.validate()            # raises Lark's own error
    rule_defs, term_defs = [], []
    for name, d in builder._definitions.items():
        if d.is_term:
            term_defs.append((name, (d.tree, d.options)))
        else:
            rule_defs.append((name, d.params, d.tree, d.options))
    return L.Grammar(rule_defs, term_defs, builder._ignore_names), builder.used_files


def _all_valid(builder):
    """Whether ``GrammarBuilder.validate()`` would pass (see the module docstring)."""
    from lark import Tree
    from lark.grammar import Symbol

    defs = builder._definitions
    for _name, d in defs.items():
        params = d.params
        if len(set(params)) != len(params) or any(p in defs for p in params):
            return False
        if d.tree is None:            # %declare: nothing else is checked
            continue
        if not isinstance(d.tree, Tree) or d.tree.data != "expansions":
            return False              # Lark's own check asserts this shape
        # one walk: template uses anywhere, symbols anywhere below an `expansion`
        stack = [(d.tree, False)]
        while stack:
            node, inside = stack.pop()
            if node.data == "template_usage":
                head = node.children[0]
                if not isinstance(head, Symbol):
                    return False
                if head.name not in params:
                    target = defs.get(head.name)
                    if target is None or len(node.children) - 1 != len(target.params):
                        return False
            inside = inside or node.data == "expansion"
            for c in node.children:
                if isinstance(c, Tree):
                    stack.append((c, inside))
                elif inside and isinstance(c, Symbol) and c.name not in defs and c.name not in params:
                    return False
    return set(defs).issuperset(builder._ignore_names)
