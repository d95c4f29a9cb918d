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

Terminal references (``resolve_term_references``, called at the end of
``GrammarBuilder.load_grammar``): Lark replaces each terminal used inside a
terminal by that terminal's tree, sweeping every terminal tree again until a
sweep changes nothing, and then walks each tree once more to look for
recursion; a grammar that spells keywords letter by letter (``SELECT: S E L
E C T``) needed one sweep per level.  :func:`resolve_term_references` makes
the same replacements in one walk when the references are all defined
terminals and form no cycle, and otherwise calls Lark's function, which
raises its own error.  :func:`install` routes Lark's name to it, like
``lark_parse.install``.

Imports (``%import``): Lark copies every definition of the imported file
with ``copy.deepcopy`` before it drops the unused ones;
:func:`mangle_definition_tree` makes the same copies by a direct walk
(also routed by :func:`install`).
"""

import threading

from cfgmask.automata.dfa import graph_has_cycle

__all__ = ["load_grammar", "resolve_term_references", "mangle_definition_tree", "install"]


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


_install_lock = threading.Lock()


def wrap_lark_function(name, marker, make_wrapper):
    """Put ``make_wrapper(current)`` in the place of ``lark.load_grammar.<name>``,
    once per process (lark 1.3.x only): the wrapper serves every caller and
    hands what it leaves to ``current``, Lark's own function.  ``marker``: the
    attribute that tells a wrapper already in place.  Returns whether it is
    (``lark_parse.install``, :func:`install`)."""
    import lark
    from lark import load_grammar as L

    if not lark.__version__.startswith("1.3"):
        return False
    with _install_lock:
        current = getattr(L, name)
        if getattr(current, marker, False):
            return True
        wrapper = make_wrapper(current)
        wrapper.__wrapped__ = current
        wrapper.__doc__ = current.__doc__
        setattr(wrapper, marker, True)
        setattr(L, name, wrapper)
        return True


def install():
    """Route ``lark.load_grammar.resolve_term_references`` through
    :func:`resolve_term_references` and ``_mangle_definition_tree`` through
    :func:`mangle_definition_tree` (see :func:`wrap_lark_function`)."""

    def make(current):
        def wrapper(term_dict):
            return resolve_term_references(term_dict, current)
        return wrapper

    def make_mangle(current):
        def wrapper(exp, mangle):
            return mangle_definition_tree(exp, mangle, current)
        return wrapper
    done = wrap_lark_function("resolve_term_references", "_cfgmask_lark_build", make)
    return wrap_lark_function("_mangle_definition_tree", "_cfgmask_lark_build", make_mangle) and done


def mangle_definition_tree(exp, mangle, lark_mangle):
    """Lark's ``_mangle_definition_tree(exp, mangle)``: a copy of an imported
    definition's tree with every symbol renamed by ``mangle``.

    Lark deep-copies the tree with ``copy.deepcopy`` (a generic walk, most of
    an ``%import``'s cost: every definition of the imported file is copied
    before the unused ones are dropped) and then renames the symbols of the
    copy.  This copies the trees itself, renaming symbols as it goes, and
    leaves every other leaf (tokens) to ``deepcopy`` with one memo, so that
    shared subtrees and leaves stay shared as deepcopy keeps them; anything
    but a tree at the root goes to ``lark_mangle``."""
    from copy import deepcopy

    from lark import Tree
    from lark.grammar import Symbol

    if mangle is None:
        return exp
    if not isinstance(exp, Tree):
        return lark_mangle(exp, mangle)
    memo = {}

    def copy(tree):
        got = memo.get(id(tree))
        if got is None:
            children = []
            for c in tree.children:
                if isinstance(c, Tree):
                    children.append(copy(c))
                elif isinstance(c, Symbol):
                    children.append(c.renamed(mangle))
                else:
                    children.append(deepcopy(c, memo))
            # Tree.__deepcopy__: the same class and data, the meta shared
            got = memo[id(tree)] = type(tree)(tree.data, children, meta=tree._meta)
        return got
    return copy(exp)


def resolve_term_references(term_dict, lark_resolve):
    """Lark's ``resolve_term_references(term_dict)``: in each terminal tree, the
    child of every ``value`` node that names a terminal becomes that terminal's
    tree (the same object, so the trees share it), in place.

    One walk collects the references.  Where one names a rule or an undefined
    or ``%declare``d terminal, or where the terminals refer to each other in a
    cycle, nothing has been changed yet and ``lark_resolve`` (Lark's function)
    runs instead: it raises Lark's error for the first offender in Lark's
    order.  A terminal's tree may already hold resolved trees (those of
    ``%import``ed terminals); they are walked once each, by identity, as
    Lark's ``iter_subtrees`` does."""
    from lark import Tree
    from lark.grammar import Terminal

    refs = []                 # (value node, terminal name)
    uses = {}                 # terminal name -> names its tree refers to
    for name, tree in term_dict.items():
        if tree is None:      # %declare
            continue
        mine = uses.setdefault(name, set())
        seen = set()
        stack = [tree]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if node.data == "value":
                if len(node.children) != 1:
                    return lark_resolve(term_dict)
                item = node.children[0]
                if isinstance(item, Tree):
                    stack.append(item)
                    continue
                if not isinstance(item, Terminal) or term_dict.get(item.name) is None:
                    return lark_resolve(term_dict)     # a rule, undefined or %declare'd
                refs.append((node, item.name))
                mine.add(item.name)
                continue
            for c in node.children:
                if isinstance(c, Tree):
                    stack.append(c)
    if _has_cycle(uses):
        return lark_resolve(term_dict)
    for node, name in refs:
        node.children[0] = term_dict[name]
    return None


def _has_cycle(uses):
    """Whether the graph ``uses`` (name -> names, every name a key) has a cycle."""
    index = {name: i for i, name in enumerate(uses)}
    return graph_has_cycle([[index[b] for b in uses[a]] for a in uses])
