"""Load Lark grammar text so that every failure is a :class:`GrammarError` and nothing hangs.

Lark loads a grammar in two steps.  ``lark.load_grammar.load_grammar`` parses
the text and resolves ``%import``s into a ``lark.load_grammar.Grammar`` (rule
trees, templates not yet expanded); its ``compile`` then turns that into
terminal definitions and BNF rules, and its ``ApplyTemplates`` step adds one
new rule per template instance it meets, visiting each new rule's body in
turn.  That loop ends only if the set of instances is finite: ``t{x}: x |
t{t{x}}`` makes ``t{"a"}``, ``t{t{"a"}}``, ... forever.

:func:`load` runs the first step, then expands the templates *symbolically*
on the rule trees before Lark does (:func:`check_templates`): instances are
hash-consed as ``(template, argument ids)``, so even names that would double
in length at every level cost O(1) each.  The simulation stops with a
:class:`GrammarError` at :data:`MAX_TEMPLATE_DEPTH` nested instances,
:data:`MAX_TEMPLATE_INSTANCES` instances or :data:`MAX_TEMPLATE_NAME_CHARS`
characters of instance names.  (Both steps run through our own copies where
they are sure to give Lark's result: :mod:`~cfgmask.frontends.lark_parse`
reads the text, :mod:`~cfgmask.frontends.lark_build` checks the definitions,
:mod:`~cfgmask.frontends.lark_compile` compiles them, each handing anything
else to Lark's own function.)  A rule whose sequences Lark would multiply
out into more than :data:`FACTOR_PRODUCTS_ABOVE` alternatives (``a? b? c?
...``) has those parts moved into rules of their own first
(:func:`factor_products`; lg-sqlite: 4,612 -> 972 BNF rules, its load 0.30 ->
0.14 s).  Only then does Lark's ``Grammar.compile`` run, so its own expansion
is known to be small.

``lark.Lark`` is not built: cfgmask reads only the compiled terminals, rules
and ``%ignore`` list, and building Lark's Earley parser on top (its grammar
analysis and one ``sre_parse`` + ``re.compile`` per terminal) cost more than
the compile itself (sql.lark: ~0.8 s of ~1 s).  The checks that construction
made are made here (:func:`_earley_would_refuse`), the regexes parsed once
with :func:`cfgmask.automata.parse_pattern`, whose trees the lexer's regex
compiler then reuses; where one fails, Lark's parser is built after all
(:func:`load_with_lark_parser`) so that the error is Lark's own.

Invariants:

* for every grammar within those bounds whose rules multiply out to at most
  :data:`FACTOR_PRODUCTS_ABOVE` alternatives per sequence (every bundled
  grammar) the result holds what the ``lark.Lark`` object ``lark.Lark(text,
  parser="earley", lexer="dynamic", ...)`` would hold in ``terminals``,
  ``rules``, ``ignore_tokens`` and ``grammar``, and a grammar that object
  refuses is refused (tests/test_lark_loader.py compares them); above it,
  the rules derive the same language through extra ``__<rule>_factor_<i>``
  rules (tests/test_lark_factor.py compares masks and parses with Lark's),
  and the one refusal of Lark's that cfgmask does not share is there: "Rules
  defined twice", which Lark raises when multiplying out repeats an
  alternative and a factored product never does;
* every exception out of :func:`load` is a :class:`GrammarError` naming the
  construct (``%import``, ``encoding``, ``regex syntax``, ``nesting depth``,
  ``template expansion``, ``lark``), with the original exception as
  ``__cause__``.

:func:`ungrouped_alternations` finds one place where Lark's reading of a
terminal differs from the obvious one (and from llguidance's): a regex with a
top-level ``|`` joined with other pieces, ``A: /x|y/ "z"``, which Lark
compiles to ``x|yz`` (lark-parser/lark#1633).  cfgmask keeps Lark's reading,
since Lark is the reference it is tested against, and warns.
"""

import re

from cfgmask.automata import parse_pattern, unescaped_characters
from cfgmask.automata.parse import min_width_is_zero
from cfgmask.automata.reparse import getwidth as regex_width, parse as parse_regex
from cfgmask.errors import GrammarError
from cfgmask.frontends import lark_build, lark_compile, lark_meta, lark_parse

# lark itself (~35 ms to import) is imported inside the functions that use it: a
# grammar the disk cache holds never needs it (frontends/grammar_cache.py)

__all__ = ["load", "ungrouped_alternations", "check_templates", "check_expansion_size",
           "MAX_TEMPLATE_DEPTH", "MAX_TEMPLATE_INSTANCES", "MAX_TEMPLATE_NAME_CHARS",
           "MAX_BNF_ALTERNATIVES", "factor_products", "FACTOR_PRODUCTS_ABOVE"]

# Real grammars nest template instances a few levels deep (``sep{item{x}, ","}``);
# a template that feeds itself a bigger argument grows by one level per round.
MAX_TEMPLATE_DEPTH = 32
MAX_TEMPLATE_INSTANCES = 10_000
MAX_TEMPLATE_NAME_CHARS = 1_000_000
# BNF alternatives Lark may generate for the whole grammar (javascript.lark: ~530);
# Lark needs ~4 s for 8,192 and ~46 s for 65,536
MAX_BNF_ALTERNATIVES = 20_000
# A sequence that multiplies out to more alternatives is split into rules of its
# own (factor_products); every bundled grammar stays below it (the most: 18)
FACTOR_PRODUCTS_ABOVE = 64
_REPEAT_BREAK_THRESHOLD = 50  # lark.load_grammar.REPEAT_BREAK_THRESHOLD (lark 1.3.1)


class LoadedGrammar:
    """The compiled grammar cfgmask reads: the attributes of ``lark.Lark`` it used.

    ``terminals`` (``TerminalDef``s), ``rules`` (``Rule``s) and
    ``ignore_tokens`` are what ``lark.load_grammar.Grammar.compile`` returns,
    exactly as ``lark.Lark`` stores them; ``grammar`` is the loaded
    (uncompiled) ``lark.load_grammar.Grammar``.
    """

    __slots__ = ("terminals", "rules", "ignore_tokens", "grammar")

    def __init__(self, terminals, rules, ignore_tokens, grammar):
        self.terminals, self.rules, self.ignore_tokens, self.grammar = \
            terminals, rules, ignore_tokens, grammar


def load(text, start, import_paths, source):
    """``(LoadedGrammar for text, the files it %imports)``; see the module docstring.

    The result holds what ``lark.Lark(text, parser="earley", lexer="dynamic")``
    would hold in ``terminals``, ``rules``, ``ignore_tokens`` and ``grammar``,
    without building the Earley parser (:func:`_earley_would_refuse` makes the
    checks its construction made).  The files let the grammar cache notice
    when an import changes."""
    from lark.exceptions import LarkError

    where = source or "grammar"
    # before load_grammar: its first call builds Lark's parser for .lark text; the LALR
    # table comes ready-made (lark_meta), the lexer's 30 terminal widths memoised;
    # lark_parse reads the text itself (4-6x faster), leaving to that parser only
    # what it is not sure to read as Lark does (syntax errors among them); lark_build
    # resolves terminal references in one walk
    lark_meta.install()
    lark_parse.install()
    lark_build.install()
    _memoise_lark_widths()
    try:
        loaded, used_files = lark_build.load_grammar(text, source or "<string>", list(import_paths))
    except Exception as e:  # noqa: BLE001 - every failure becomes a GrammarError
        raise _load_error(e, where, LarkError) from e
    try:
        instances = check_templates(loaded.rule_defs, where)
        sizes = {}
        loaded.rule_defs = factor_products(loaded.rule_defs, sizes=sizes)
        check_expansion_size(loaded.rule_defs, instances, where, sizes)
    except RecursionError as e:
        raise _nesting_error(where) from e
    starts = [start] if isinstance(start, str) else list(start)
    try:
        try:
            terminals, rules, ignore = lark_compile.compile_grammar(loaded, starts, set())
        except lark_compile.Unsupported:
            # Lark's own compile: its result, or its error (anything ours cannot
            # vouch for, every refusal among them)
            terminals, rules, ignore = loaded.compile(starts, set())
        refused = _earley_would_refuse(terminals, rules, starts)
    except Exception as e:  # noqa: BLE001
        raise _compile_error(e, loaded, start, where, LarkError) from e
    if refused:
        # Lark's Earley frontend refuses it (or a check here cannot tell):
        # build it to raise exactly what Lark raises
        parser = load_with_lark_parser(loaded, start, source)
        return LoadedGrammar(parser.terminals, parser.rules, parser.ignore_tokens,
                             parser.grammar), used_files
    return LoadedGrammar(terminals, rules, ignore, loaded), used_files


_WIDTH_MEMO = {}          # regex text -> (min, max) width, as lark.utils.get_regexp_width gives
_WIDTH_MEMO_SIZE = 4096


def _memoise_lark_widths():
    """Make Lark's terminal compile measure each distinct regex once (installed once per process).

    ``Grammar.compile`` orders a terminal's alternatives by width
    (``PatternRE.min_width``/``max_width``), and each ``PatternRE`` measures
    itself with ``sre_parse``: javascript.lark's terminals ask 1,850 times for
    82 distinct regexes (0.75 s of its ~1.8 s compile).  ``get_regexp_width``
    is a pure function of the text, so ``lark.lexer``'s reference to it is
    replaced by a memoised one returning the same values (errors are not
    memoised; a new width is :func:`lark_regexp_width`'s); everything else
    Lark does is unchanged.
    """
    import lark.lexer
    current = lark.lexer.get_regexp_width
    if getattr(current, "_cfgmask_memo", False):
        return

    def get_regexp_width(expr):
        got = _WIDTH_MEMO.get(expr)
        if got is None:
            got = lark_regexp_width(expr, current)   # a list, or a tuple where `regex` measured it
            if len(_WIDTH_MEMO) >= _WIDTH_MEMO_SIZE:
                try:
                    _WIDTH_MEMO.pop(next(iter(_WIDTH_MEMO)), None)
                except (RuntimeError, StopIteration):  # another thread changed it meanwhile
                    pass
            _WIDTH_MEMO[expr] = got
        return list(got) if isinstance(got, list) else got

    get_regexp_width._cfgmask_memo = True
    get_regexp_width.__wrapped__ = current
    lark.lexer.get_regexp_width = get_regexp_width


def lark_regexp_width(expr, reference):
    """What ``reference`` (``lark.utils.get_regexp_width``) returns for ``expr``,
    with the regex parsed by :func:`cfgmask.automata.reparse.parse`.

    Lark measures ``[int(x) for x in sre_parse.parse(expr).getwidth()]`` and
    goes elsewhere only where that raises ``re.error`` or the text has a
    ``\\p{..}``; those cases are handed to ``reference`` itself, so values and
    exceptions are Lark's own (the tree, and so its width, is ``re``'s).
    """
    from lark.utils import categ_pattern
    if categ_pattern.search(expr):
        return reference(expr)
    try:
        tree = parse_regex(expr)
    except re.error:
        return reference(expr)
    return [int(x) for x in regex_width(tree)]   # re._parser's widths, computed in C


def load_with_lark_parser(loaded, start, source):
    """``lark.Lark`` for the loaded grammar, its Earley parser built (errors as :func:`load`'s).

    The reference :func:`load` is tested against, and its fallback where
    Lark's parser construction refuses the grammar."""
    import lark
    from lark.exceptions import LarkError
    where = source or "grammar"
    try:
        return lark.Lark(loaded, start=start, parser="earley", lexer="dynamic",
                         source_path=source or "<string>")
    except Exception as e:  # noqa: BLE001
        raise _compile_error(e, loaded, start, where, LarkError) from e


def _earley_would_refuse(terminals, rules, starts):
    """Whether building Lark's Earley parser (dynamic lexer) might raise for the compiled grammar.

    That construction checks the rules (``GrammarAnalyzer``: no rule twice,
    every nonterminal and start defined) and every terminal's regex
    (``EarleyRegexpMatcher``: ``sre_parse`` width not 0, ``re.compile``).
    The regex is parsed here with :func:`cfgmask.automata.parse_pattern`, whose
    tree the lexer's regex compiler reuses, and a pattern with a look-behind
    is compiled with ``re.compile`` as Lark's matcher would (it checks that
    the look-behind has a fixed width); anything this check cannot settle
    as cheaply -- a parse error, a ``\\p{..}`` Lark rewrites before
    measuring -- answers True, and the caller then lets Lark decide.
    """
    from lark.utils import categ_pattern

    if len(set(rules)) != len(rules):
        return True
    # by name, as plain strings: a nonterminal equals another of the same name, and
    # comparing Lark's Symbol and Token objects (Python-level __eq__) was most of
    # this check (javascript.lark: 26,000 comparisons)
    origins = {str(r.origin.name) for r in rules}
    if any(str(s) not in origins for s in starts):
        return True
    for r in rules:
        for sym in r.expansion:
            if not sym.is_term and str(sym.name) not in origins:
                return True
    for t in terminals:
        rx = t.pattern.to_regexp()
        if categ_pattern.search(rx):
            return True
        try:
            parsed = parse_pattern(rx)
        except Exception:  # noqa: BLE001 - re.error, RecursionError, OverflowError, ...
            return True
        if min_width_is_zero(parsed):
            return True
        if "(?<" in rx:
            # a look-behind (or a look-alike): re.compile alone checks that it is fixed
            # width, and that is all Lark's construction would add (common.lark's
            # ESCAPED_STRING has one: every grammar importing it built Lark's parser, ~5 ms)
            try:
                re.compile(rx)
            except Exception:  # noqa: BLE001 - re.error, RecursionError, OverflowError, ...
                return True
    return False


def _compile_error(e, loaded, start, where, lark_error):
    """The :class:`GrammarError` for an exception out of Lark's compile or parser construction."""
    if isinstance(e, (re.error, RecursionError)) or _is_regex_module_error(e):
        bad = _bad_terminal(loaded, start)
        if bad is not None:
            name, pattern, err = bad
            shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
            if isinstance(err, RecursionError):
                return GrammarError(f"{where}: terminal {name} /{shown}/: the regex is nested too "
                                    "deeply (Python's recursion limit was hit)",
                                    where=name, construct="nesting depth")
            return GrammarError(f"{where}: terminal {name} /{shown}/: invalid regex ({err})",
                                where=name, construct="regex syntax")
    return _load_error(e, where, lark_error)


def _load_error(e, where, lark_error):
    if isinstance(e, GrammarError):
        return e
    if isinstance(e, lark_error):
        return GrammarError(f"{where}: {e}", where=where, construct="lark")
    if isinstance(e, RecursionError):
        return _nesting_error(where)
    if isinstance(e, UnicodeDecodeError):
        return GrammarError(f"{where}: an imported grammar file is not UTF-8 text ({e})",
                            where=where, construct="encoding")
    if isinstance(e, (FileNotFoundError, IsADirectoryError)) or (
            isinstance(e, OSError) and "Cannot find grammar" in str(e)):
        missing = getattr(e, "filename", None) or str(e)
        return GrammarError(f"{where}: %import: grammar file {missing} not found "
                            "(relative imports resolve next to the importing file; pass import_paths "
                            "or use Grammar.from_file)", where=str(missing), construct="%import")
    if isinstance(e, OSError):
        return GrammarError(f"{where}: %import: cannot read {getattr(e, 'filename', '')}: "
                            f"{e.strerror or e}", where=where, construct="%import")
    return GrammarError(f"{where}: Lark could not load the grammar ({type(e).__name__}: {e})",
                        where=where, construct="lark")


def _nesting_error(where):
    return GrammarError(f"{where}: the grammar is nested too deeply to load (Python's recursion "
                        "limit was hit; flatten deeply nested groups or rules)",
                        where=where, construct="nesting depth")


def _is_regex_module_error(e):
    return type(e).__name__ == "error" and type(e).__module__.startswith("regex")


def _bad_terminal(loaded, start):
    """``(name, pattern, error)`` of the first terminal ``re`` cannot compile, or ``None``."""
    try:
        terminals, _rules, _ignore = loaded.compile([start] if isinstance(start, str) else start, ())
    except Exception:  # noqa: BLE001 - only used to improve a message
        return None
    for t in terminals:
        pattern = t.pattern.to_regexp()
        try:
            re.compile(pattern)
        except (re.error, RecursionError, OverflowError) as err:
            return t.name, pattern, err
    return None


# ---------------------------------------------------------------- templates

def check_templates(rule_defs, where="grammar"):
    """Expand Lark's templates symbolically; raise :class:`GrammarError` if it would not stop.

    ``rule_defs`` are ``lark.load_grammar.Grammar.rule_defs``: ``(name,
    params, tree, options)``, ``params`` non-empty for a template.  Mirrors
    ``ApplyTemplates``/``_ReplaceSymbols``: every ``template_usage`` node met
    in a rule (its arguments first) makes an instance, a parameter used as a
    value or as the template name is replaced by the argument, and every
    instance's body is visited in turn.  Returns the number of instances.
    """
    from lark import Tree
    from lark.grammar import Symbol

    templates = {name: (tuple(params), tree) for name, params, tree, _o in rule_defs if params}
    if not templates:
        return {}
    term_id = {}    # key -> id; key ("sym", name) | ("lit", text) | ("inst", template, arg ids)
    keys = []
    depth = []
    name_len = []
    todo = []
    total_chars = [0]

    def intern(key, d, n):
        i = term_id.get(key)
        if i is None:
            i = term_id[key] = len(keys)
            keys.append(key)
            depth.append(d)
            name_len.append(n)
        return i

    def render(i, limit=100):
        """The instance's Lark name, cut after about ``limit`` characters."""
        parts, size = [], [0]

        def go(j):
            if size[0] > limit:
                return
            key = keys[j]
            text = key[1] if key[0] != "inst" else key[1] + "{"
            parts.append(text)
            size[0] += len(text)
            if key[0] == "inst":
                for k, a in enumerate(key[2]):
                    if k:
                        parts.append(",")
                    go(a)
                parts.append("}")
        go(i)
        out = "".join(parts)
        return out if size[0] <= limit else out[:limit] + "..."

    def usages(tree):
        """The template_usage nodes of ``tree`` that are not inside another one's arguments."""
        stack = [tree]
        while stack:
            node = stack.pop()
            if not isinstance(node, Tree):
                continue
            if node.data == "template_usage":
                yield node
                continue
            stack.extend(reversed(node.children))

    def value(node, env):
        child = node.children[0] if isinstance(node, Tree) and node.data == "value" and \
            len(node.children) == 1 else node
        if isinstance(child, Symbol):
            return env[child.name] if child.name in env else intern(("sym", child.name), 0, len(child.name))
        if isinstance(child, Tree) and child.data == "template_usage":
            return usage(child, env)
        text = " ".join(str(c) for c in child.children) if isinstance(child, Tree) else str(child)
        return intern(("lit", text), 0, len(text))

    def usage(node, env):
        head = node.children[0]
        hname = getattr(head, "name", str(head))
        if hname in env:  # a parameter used as the template name
            hkey = keys[env[hname]]
            hname = hkey[1] if hkey[0] == "sym" else None
        args = tuple(value(c, env) for c in node.children[1:])
        tpl = templates.get(hname)
        if tpl is None or len(tpl[0]) != len(args):
            return intern(("sym", f"?{hname}"), 0, 1)  # Lark itself reports the misuse
        key = ("inst", hname, args)
        i = term_id.get(key)
        if i is not None:
            return i
        d = 1 + max(depth[a] for a in args)
        n = len(hname) + 1 + sum(name_len[a] for a in args) + len(args)
        i = intern(key, d, n)
        total_chars[0] += n
        if d > MAX_TEMPLATE_DEPTH:
            raise GrammarError(
                f"{where}: template {hname}: expansion does not terminate or nests instances more "
                f"than {MAX_TEMPLATE_DEPTH} deep (at {render(i)}); a template that uses itself with "
                "a bigger argument, like t{x}: x | t{t{x}}, creates a new rule forever",
                where=hname, construct="template expansion")
        if len(todo) + 1 > MAX_TEMPLATE_INSTANCES or total_chars[0] > MAX_TEMPLATE_NAME_CHARS or \
                n > MAX_TEMPLATE_NAME_CHARS:
            raise GrammarError(
                f"{where}: template {hname}: expansion is too large (more than "
                f"{MAX_TEMPLATE_INSTANCES} instances or {MAX_TEMPLATE_NAME_CHARS} characters of "
                f"instance names, at {render(i)})", where=hname, construct="template expansion")
        todo.append(i)
        return i

    for name, params, tree, _o in rule_defs:
        if not params:
            for node in usages(tree):
                usage(node, {})
    done = 0
    while done < len(todo):
        _inst, hname, args = keys[todo[done]]
        done += 1
        params, tree = templates[hname]
        env = dict(zip(params, args))
        for node in usages(tree):
            usage(node, env)
    counts = {}
    for i in todo:
        counts[keys[i][1]] = counts.get(keys[i][1], 0) + 1
    return counts


def _alternatives(node, extra, limit):
    """How many BNF alternatives Lark's ``EBNF_to_BNF`` and ``SimplifyRule_Visitor``
    make of rule-tree ``node`` (duplicates not removed, so an upper bound), capped
    at ``limit + 1``; the alternatives of the recursive rules that ``+``, ``*``
    and long ``~`` repeats add are summed into ``extra[0]``."""
    from lark import Tree
    return _count_alternatives(node, extra, limit + 1, Tree)


def _count_alternatives(node, extra, top, Tree):
    # module-level recursion: a nested function calling itself is a reference
    # cycle per call (one per rule), left for the cyclic collector
    if not isinstance(node, Tree):
        return 1
    d, ch = node.data, node.children
    if d == "expansions":
        return min(top, sum(_count_alternatives(c, extra, top, Tree) for c in ch))
    if d == "expansion":
        n = 1
        for c in ch:
            n = min(top, n * _count_alternatives(c, extra, top, Tree))
        return n
    if d == "alias":
        return _count_alternatives(ch[0], extra, top, Tree)
    if d == "maybe":
        return min(top, _count_alternatives(ch[0], extra, top, Tree) + 1)
    if d == "expr":
        c = _count_alternatives(ch[0], extra, top, Tree)
        op = str(ch[1])
        if op == "?":
            return min(top, c + 1)
        if op in ("+", "*"):
            extra[0] += 2 * c  # a new recursive rule: c alternatives, twice
            return 1 if op == "+" else 2
        if op == "~":
            lo, hi = _repeat_bounds(ch)
            if hi < _REPEAT_BREAK_THRESHOLD:  # written out inline: sum of c**n
                return min(top, sum(min(top, c ** n) for n in range(lo, hi + 1)))
            extra[0] += 2 * c * _REPEAT_BREAK_THRESHOLD  # split into helper rules
            return 1
    return 1  # a symbol, literal, range or template usage


def _repeat_bounds(expr_children):
    """``(lo, hi)`` of a ``~`` repeat's ``expr`` node children."""
    lo = int(expr_children[2])
    return lo, int(expr_children[3]) if len(expr_children) > 3 else lo


def check_expansion_size(rule_defs, instances, where="grammar", sizes=None):
    """Raise :class:`GrammarError` if Lark's conversion to BNF would make too many alternatives.

    Lark turns each rule into plain alternatives by multiplying out what a
    sequence contains: ``a? b? c?`` becomes 8 alternatives, ``("a"|"b") ~ 16``
    65,536 (repeats below 50 are written out), and its loading time grows
    with that number (46 s for 65,536).  :func:`factor_products` has already
    moved the parts of every big product into rules of their own, so what is
    left to refuse is a template body (a template is expanded per use, and
    not factored) that multiplies out too far.  The count follows
    ``EBNF_to_BNF`` and ``SimplifyRule_Visitor`` (:func:`_alternatives`);
    ``instances`` (from :func:`check_templates`) says how many times each
    template body is expanded; ``sizes`` (from :func:`factor_products`) holds
    the rules already counted.
    """
    limit = MAX_BNF_ALTERNATIVES
    total = 0
    for name, params, tree, _o in rule_defs:
        copies = instances.get(name, 0) if params else 1
        if not copies:
            continue
        got = sizes.get(id(tree)) if sizes else None
        if got is None:
            extra = [0]
            got = _alternatives(tree, extra, limit) + extra[0]
        n = min(limit + 1, got * copies)
        total += n
        if n > limit or total > limit:
            raise GrammarError(
                f"{where}: rule {name} makes more than {limit} alternatives when Lark converts the "
                "grammar to BNF (optional parts, alternatives and repeats inside one rule multiply: "
                "a? b? c? is 8 alternatives, (\"a\"|\"b\") ~ 16 is 65,536); move groups into "
                "rules of their own", where=name, construct="expansion size")
    return total


def factor_products(rule_defs, limit=None, sizes=None):
    """``rule_defs`` with every big product of a rule moved into rules of its own.

    Lark multiplies out a sequence's optional parts, groups and short
    repeats: a rule with ten optional clauses becomes 1,024 alternatives
    (lg-sqlite's ``create_trigger_stmt``: 1,920; its load took 0.27 s, most of it
    that expansion and the deduplication after it).  Wherever a sequence
    (``expansion``) or a written-out repeat (``x ~ n..m``) of a non-template
    rule would make more than ``limit`` (:data:`FACTOR_PRODUCTS_ABOVE`)
    alternatives, each of its parts with more than one alternative becomes a
    new rule ``__<rule>_factor_<i>`` whose body is that part, so the sequence
    makes one alternative and the parts a sum.  The language is unchanged:
    a nonterminal derives exactly what its body derives.  Working bottom-up,
    an inner product is settled before the one around it.  Rules below the
    limit, and so the rules of every bundled grammar, are left exactly as Lark
    writes them.

    Not factored: template bodies (they may use the template's parameters, and
    :func:`check_expansion_size` bounds them), and parts holding an ``->``
    alias (Lark's reading of an alias inside a group is its own; they stay
    where Lark puts them).  Each new rule follows its rule in the list, so
    Lark meets the literals in nearly the order it would have.  ``sizes``, a
    dict, receives ``id(tree) -> alternatives`` (those of its helper rules
    included) of each rule left as it is, for :func:`check_expansion_size`.
    """
    from lark import Token, Tree
    from lark.grammar import NonTerminal, RuleOptions

    limit = FACTOR_PRODUCTS_ABOVE if limit is None else limit
    names = {str(d[0]) for d in rule_defs}
    out = []
    for definition in rule_defs:
        name, params, tree, options = definition
        if params:
            out.append(definition)
            continue
        extra = [0]
        n = _alternatives(tree, extra, max(limit, MAX_BNF_ALTERNATIVES))
        if n <= limit:
            if sizes is not None:
                sizes[id(tree)] = n + extra[0]
            out.append(definition)
            continue
        helpers = []
        keep = bool(options and options.keep_all_tokens)

        def part_rule(node, name=name, helpers=helpers, keep=keep):
            i = len(helpers)
            while f"__{name}_factor_{i}" in names:
                i += 1
            part = f"__{name}_factor_{i}"
            names.add(part)
            helpers.append((Token("RULE", part), (),
                            Tree("expansions", [Tree("expansion", [node])]),
                            RuleOptions(keep_all_tokens=keep)))
            return Tree("value", [NonTerminal(part)])

        out.append((name, params, _factor(tree, limit, part_rule), options))
        out += helpers
    return out


def _factor(node, limit, part_rule):
    """``node`` rewritten bottom-up so that no product in it exceeds ``limit``
    (see :func:`factor_products`); ``part_rule(subtree)`` makes a new rule of a
    part and returns the tree that refers to it."""
    from lark import Tree

    if not isinstance(node, Tree) or node.data in ("value", "literal", "range", "template_usage"):
        return node
    children = [_factor(c, limit, part_rule) for c in node.children]
    if any(a is not b for a, b in zip(children, node.children)):
        node = Tree(node.data, children)
    d = node.data
    if d == "expansion":
        parts = [_alternatives(c, [0], limit) for c in children]
        product = 1
        for n in parts:
            product = min(limit + 1, product * n)
        if product > limit:
            node = Tree("expansion", [part_rule(c) if n > 1 and not _has_alias(c) else c
                                      for c, n in zip(children, parts)])
    elif d == "expr" and str(children[1]) == "~":
        lo, hi = _repeat_bounds(children)
        atom = children[0]
        if (hi < _REPEAT_BREAK_THRESHOLD and _alternatives(node, [0], limit) > limit
                and _alternatives(atom, [0], limit) > 1 and not _has_alias(atom)):
            node = Tree("expr", [part_rule(atom)] + children[1:])
    return node


def _has_alias(node):
    from lark import Tree
    return isinstance(node, Tree) and any(t.data == "alias" for t in node.iter_subtrees())


def _has_top_level_bar(rx):
    """Whether the Python regex ``rx`` has a ``|`` outside every group and class."""
    depth = 0
    for _, c in unescaped_characters(rx):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            return True
    return False


def ungrouped_alternations(parser, prune=True):
    """``[(terminal, piece, Lark's pattern)]`` for every terminal of the loaded
    grammar (a :class:`LoadedGrammar` or ``lark.Lark``) in which a regex ``piece`` with a top-level ``|`` is joined
    with other pieces (directly, in parentheses or through a terminal it
    references), so that Lark's pattern is ``x|yz`` where ``(?:x|y)z`` was meant.

    Lark's translation (``TerminalTreeToPattern``) groups a piece under
    ``?``/``*``/``+``/``~`` or with flags and groups the alternatives of the
    grammar's own ``|``, but a sequence joins its items as they are, and a
    one-item sequence or a one-alternative group passes its item through
    unchanged.  A regex literal is the only item that can bring a top-level
    ``|`` into a join (a joined sequence inside one is reported where it is
    joined first), so this looks for those on the resolved terminal trees.

    Terminals share subtrees (a referenced terminal's tree is shared by every
    terminal that uses it), and one walk per terminal visited them again each
    time: lg-sqlite's keyword terminals, spelled from one-letter terminals,
    cost about 7 ms.  So one walk over all trees first marks the subtrees that
    hold a joined bar piece, visiting each once, and only terminals that hold
    one are walked in Lark's order for the report.  ``prune=False`` walks
    every terminal (the tests' reference: the same list).
    """
    from lark import Token, Tree

    bar_of = {}   # regex literal -> its body if it has a top-level "|" and no flags

    def bar_piece(node):
        while isinstance(node, Tree) and (node.data in ("value", "literal")
                                          or node.data in ("expansions", "expansion")
                                          and len(node.children) == 1):
            node = node.children[0]
        if not (isinstance(node, Token) and node.type == "REGEXP"):
            return None
        if node.value not in bar_of:
            end = node.value.rindex("/")
            body = node.value[1:end]
            flagged = end != len(node.value) - 1   # Lark wraps it in (?flags:...)
            bar_of[node.value] = body if not flagged and _has_top_level_bar(body) else None
        return bar_of[node.value]

    holds_bar = {}   # id(subtree) -> whether a joined bar piece lies in it

    def joins_bar(node):
        return (node.data == "expansion" and len(node.children) > 1
                and any(bar_piece(c) is not None for c in node.children))

    def marks(root):
        # post-order without recursion (a deep tree must not hit the recursion
        # limit); `entered` guards a cycle, which Lark refuses before this point
        stack, entered = [root], set()
        while stack:
            node = stack[-1]
            if id(node) in holds_bar:
                stack.pop()
                continue
            if id(node) not in entered:
                entered.add(id(node))
                stack.extend(c for c in node.children if isinstance(c, Tree)
                             and id(c) not in holds_bar and id(c) not in entered)
                continue
            stack.pop()
            holds_bar[id(node)] = joins_bar(node) or any(
                holds_bar.get(id(c), False) for c in node.children if isinstance(c, Tree))
        return holds_bar[id(root)]

    joined = {t.name: t.pattern.to_regexp() for t in parser.terminals}
    out = []
    for name, (tree, _priority) in parser.grammar.term_defs:
        if name not in joined:   # dropped by Lark: unused
            continue
        if prune and not marks(tree):
            continue
        pieces = [piece for sub in tree.iter_subtrees()
                  if sub.data == "expansion" and len(sub.children) > 1
                  for piece in map(bar_piece, sub.children) if piece is not None]
        out.extend((name, piece, joined[name]) for piece in dict.fromkeys(pieces))
    return out
