"""A fast reader of ``.lark`` grammar text, giving the tree Lark's own reader gives.

``lark.load_grammar._parse_grammar(text, name)`` reads grammar text with an
LALR parser for Lark's meta grammar (``TERMINALS`` / ``RULES`` at the top of
``lark/load_grammar.py``), builds the tree with its generic tree builder and
then rewrites ``terminal`` / ``nonterminal`` nodes into symbols
(``PrepareGrammar``).  On a large grammar most of that time is per-token and
per-node overhead of the generic machinery.  :func:`parse_grammar_text` reads
the same language with one scanner (C, ``_fast/_larklex.pyx``; a regex,
:func:`_lex_regex`, is its reference) and a recursive-descent parser written
for that one grammar, and builds the final tree directly.

Invariants:

* for every text it accepts, the result equals what lark 1.3's
  ``_parse_grammar(text, name, start)`` returns, node for node: the same tree
  data, children and order, ``lark.Tree`` nodes each with its own empty
  ``Meta`` (Lark's transform leaves every node so), ``Token`` leaves with the
  same type, value and all eight positions, ``Terminal`` (with ``filter_out``)
  and ``NonTerminal`` symbols; tests/test_lark_parse.py compares the two on
  every grammar we have and on random mutations of them;
* everything else raises :class:`Unsupported`: syntax errors of any kind,
  nesting deeper than :data:`MAX_DEPTH`, a start symbol other than
  ``"start"``, a non-``str`` text, and a regex or string literal that Lark's
  lexer finds only by backtracking into its escapes (``_SIGNIFICANT``).  Callers then run Lark's own function, so
  that error messages (and anything we do not read) stay exactly Lark's;
* tokens are those of Lark's basic lexer: at each position the first of the
  meta grammar's terminals, in the order Lark sorts them, that matches
  (first match, not longest); ``WS``, ``COMMENT`` and ``BACKSLASH`` are
  skipped.  The meta grammar is LALR(1) without conflicts and also LL(1), so a
  one-token-lookahead descent accepts exactly the token strings Lark accepts;
* importing this module does not import Lark.

:func:`install` puts :func:`parse_grammar_text` in front of Lark's function
(lark 1.3.x only), falling back to the original on :class:`Unsupported`.
"""

import os
import re
from bisect import bisect_left

from cfgmask._fast import _larklex

__all__ = ["Unsupported", "parse_grammar_text", "install", "MAX_DEPTH"]

# Nested ( ), [ ] and template arguments deeper than this are left to Lark,
# whose LALR parser has no recursion limit.
MAX_DEPTH = 100


class Unsupported(Exception):
    """The text is not certain to be read exactly as Lark reads it (a syntax
    error, most often); the caller should use Lark's own reader."""


# Meta-grammar terminals Lark keeps, in the order its basic lexer tries them
# (priority, then longest possible match, then longest pattern, then name);
# tests/test_lark_parse.py checks this order against Lark's own lexer.  Each
# regex matches the same text as Lark's, or (REGEXP, STRING) nothing.
_SIGNIFICANT = (
    # Lark's REGEXP and STRING are lazy loops, ``(\\/|\\\\|[^/])*?``: their
    # first attempt closes at the first quote not taken by a two-character
    # escape, which is what the atomic loops here match (a 3-tuple is
    # prefix, atomic loop, suffix) without a step per character: 20k-character
    # regexes are common.  Where that attempt fails Lark backtracks into the
    # escapes (``a: /x\/`` at the end of a text is the regex ``/x\/``); ours
    # then match nothing and the text is left to Lark.
    ("REGEXP", ("/(?!/)", r"(?:[^/\\]+|\\[/\\]?)*", "/[imslux]*")),
    ("STRING", ('"', r'(?:[^"\\\n]+|\\["\\]?)*', '"i?')),
    ("RULE", r"_?[a-z][_a-z0-9]*"),
    ("TERMINAL", r"_?[A-Z][_A-Z0-9]*"),
    ("_NL_OR", r"\r?\n\s*\|"),
    ("_NL", r"\r?\n\s*"),
    ("NUMBER", r"[+-]?\d+"),
    ("_OVERRIDE", r"%override"),
    ("_DECLARE", r"%declare"),
    ("_EXTEND", r"%extend"),
    ("_IGNORE", r"%ignore"),
    ("_IMPORT", r"%import"),
    ("RULE_MODIFIERS", r"(?:!\??|\?!?)(?=[_a-z])"),
    ("_DOTDOT", r"\.\."),
    ("_TO", r"->"),
    ("OP", r"[+*]|\?(?![a-z_])"),
    ("_DOT", r"\.(?!\.)"),
    ("_LBRA", r"\["),
    ("_LBRACE", r"\{"),
    ("_LPAR", r"\("),
    ("_OR", r"\|"),
    ("_RBRA", r"\]"),
    ("_RBRACE", r"\}"),
    ("_RPAR", r"\)"),
    ("TILDE", r"~"),
    ("_COLON", r":"),
    ("_COMMA", r","),
)
# The terminals Lark's lexer skips (COMMENT, BACKSLASH, WS, in its order).
# None of them can match where a terminal Lark tries before it matches, so
# skipping them first, atomically (no backtracking into a skipped run, as the
# lexer never revisits a token), gives Lark's token sequence.
_IGNORED = r"(?:\s*(?://|#)[^\n]*|\\ *\n|[ \t]+)"

TOKEN_ORDER = ("REGEXP", "STRING", "COMMENT", "RULE", "TERMINAL", "_NL_OR", "_NL",
               "BACKSLASH", "NUMBER", "WS", "_OVERRIDE", "_DECLARE", "_EXTEND",
               "_IGNORE", "_IMPORT", "RULE_MODIFIERS", "_DOTDOT", "_TO", "OP", "_DOT",
               "_LBRA", "_LBRACE", "_LPAR", "_OR", "_RBRA", "_RBRACE", "_RPAR",
               "TILDE", "_COLON", "_COMMA")


def _layout():
    """The scanner's source and the name of each capturing group's token.

    A token's kind is the number of its group (``m.lastindex``: the group
    closed last).  Atomic parts are written ``(?=(X))\\N`` (a lookahead never
    backtracks), which also works before Python 3.11.  END matches the end
    of the text after skipped input, ERR any other character: with these
    every position yields a match, so ``finditer`` never skips text."""
    names = [None]

    def atomic(body):
        names.append(None)
        return "(?=(%s))\\%d" % (body, len(names) - 1)

    source = atomic("(?:%s)*" % _IGNORED) + "(?:"
    alts = []
    for name, rx in _SIGNIFICANT + (("$END", r"\Z"), (None, r"[\s\S]")):
        names.append(name)  # before the groups inside it, as numbered
        if isinstance(rx, tuple):
            rx = rx[0] + atomic(rx[1]) + rx[2]
        alts.append("(%s)" % rx)
    return source + "|".join(alts) + ")", tuple(names)


_SOURCE, _NAMES = _layout()
_KIND = {name: n for n, name in enumerate(_NAMES) if name is not None}
ERR = len(_NAMES) - 1
# the kind numbers in token order, END and ERR last: the order the compiled
# scanner (``_fast/_larklex.pyx``) takes them in
_CODES = tuple(_KIND[n] for n, _ in _SIGNIFICANT + (("$END", 0),)) + (ERR,)
(REGEXP, STRING, RULE, TERMINAL, NL_OR, NL, NUMBER, OVERRIDE, DECLARE, EXTEND,
 IGNORE, IMPORT, RULE_MODIFIERS, DOTDOT, TO, OP, DOT, LBRA, LBRACE, LPAR, OR,
 RBRA, RBRACE, RPAR, TILDE, COLON, COMMA, END) = _CODES[:-1]
PURE_ENV = "CFGMASK_PURE_LARK_LEX"     # "1": the scanner regex (the reference) instead of C

# Kinds that can begin an ``expr`` (FIRST(atom)).
_ATOM_START = frozenset((LPAR, LBRA, TERMINAL, RULE, STRING, REGEXP))

_scanners = None


def _compiled():
    global _scanners
    if _scanners is None:
        # Racing threads compile equal patterns; either result serves.
        _scanners = (re.compile(_SOURCE), re.compile("\n"))
    return _scanners


def _lex(src):
    """``(kinds, starts, ends)`` of the tokens Lark's lexer keeps (the span of each
    token's text), the last one END: by the compiled scanner
    (``_fast/_larklex.pyx``: the scanner regex took ~540 instructions a byte,
    25 ms of javascript.lark's 358 KB), or by :func:`_lex_regex`, its
    reference, when ``CFGMASK_PURE_LARK_LEX=1`` (read at every call);
    tests/test_lark_parse.py compares the two."""
    if os.environ.get(PURE_ENV) == "1":
        kinds, starts, ends = _lex_regex(src)
    else:
        kinds, starts, ends = _larklex.scan(src, _CODES)
    if ERR in kinds:
        raise Unsupported("no token at offset %d" % starts[kinds.index(ERR)])
    return kinds, starts, ends


def _lex_regex(src):
    """:func:`_lex` by one ``re.finditer`` of the scanner regex (each token's kind
    is the group that closed last, ``m.lastindex``)."""
    kinds, starts, ends = [], [], []
    for m in _compiled()[0].finditer(src):
        k = m.lastindex
        s, e = m.span(k)
        kinds.append(k)
        starts.append(s)
        ends.append(e)
    return kinds, starts, ends


def parse_grammar_text(text, name=None, start="start"):
    """The tree ``lark.load_grammar._parse_grammar(text, name, start)`` returns
    (lark 1.3), or :class:`Unsupported`.  ``name`` only appears in Lark's
    error messages, which this function never produces."""
    if type(text) is not str or start != "start":
        raise Unsupported("only str text and start='start'")
    try:
        return _parse(text)
    except (RecursionError, IndexError) as e:
        raise Unsupported(repr(e)) from None


def _parse(text):
    from lark.grammar import NonTerminal, Terminal
    from lark.lexer import Token
    from lark.tree import Meta, Tree

    src = text + "\n"  # as Lark does
    kinds, starts, ends = _lex(src)
    if len(kinds) < 2:
        raise Unsupported("no items")  # start: _item+
    kinds.append(END)  # lookahead past the end stays in range
    newlines = [m.start() for m in _compiled()[1].finditer(src)]
    names = _NAMES

    def text_of(i):
        return src[starts[i]:ends[i]]

    def tok(i):
        k = kinds[i]
        s, e = starts[i], ends[i]
        value = src[s:e]
        n = bisect_left(newlines, s)
        col = s - (newlines[n - 1] + 1 if n else 0) + 1
        if k == REGEXP and "\n" in value:
            n2 = bisect_left(newlines, e)
            return Token(names[k], value, s, n + 1, col, n2 + 1, e - newlines[n2 - 1], e)
        return Token(names[k], value, s, n + 1, col, n + 1, col + e - s, e)

    def template_usage(i, depth):
        # kinds[i] is RULE, kinds[i + 1] LBRACE
        if depth >= MAX_DEPTH:
            raise Unsupported("nesting too deep")
        args = [NonTerminal(text_of(i))]
        i += 2
        while True:
            k = kinds[i]
            if k == TERMINAL:
                nm = text_of(i)
                v = Tree("value", [Terminal(nm, nm[0] == "_")], Meta())
                i += 1
            elif k == RULE:
                if kinds[i + 1] == LBRACE:
                    v, i = template_usage(i, depth + 1)
                else:
                    v = Tree("value", [NonTerminal(text_of(i))], Meta())
                    i += 1
            elif k == STRING and kinds[i + 1] == DOTDOT:
                if kinds[i + 2] != STRING:
                    raise Unsupported("expected a string after ..")
                v = Tree("value", [Tree("range", [tok(i), tok(i + 2)], Meta())], Meta())
                i += 3
            elif k == STRING or k == REGEXP:
                v = Tree("value", [Tree("literal", [tok(i)], Meta())], Meta())
                i += 1
            else:
                raise Unsupported("expected a value")
            args.append(v)
            k = kinds[i]
            if k == RBRACE:
                return Tree("value", [Tree("template_usage", args, Meta())], Meta()), i + 1
            if k != COMMA:
                raise Unsupported("expected , or }")
            i += 1

    def expansions(i, depth):
        alts = []
        while True:
            exprs = []
            k = kinds[i]
            while k in _ATOM_START:
                if k == TERMINAL:
                    nm = text_of(i)
                    atom = Tree("value", [Terminal(nm, nm[0] == "_")], Meta())
                    i += 1
                elif k == RULE:
                    if kinds[i + 1] == LBRACE:
                        atom, i = template_usage(i, depth)
                    else:
                        atom = Tree("value", [NonTerminal(text_of(i))], Meta())
                        i += 1
                elif k == STRING and kinds[i + 1] == DOTDOT:
                    if kinds[i + 2] != STRING:
                        raise Unsupported("expected a string after ..")
                    atom = Tree("value", [Tree("range", [tok(i), tok(i + 2)], Meta())], Meta())
                    i += 3
                elif k == STRING or k == REGEXP:
                    atom = Tree("value", [Tree("literal", [tok(i)], Meta())], Meta())
                    i += 1
                else:
                    if depth >= MAX_DEPTH:
                        raise Unsupported("nesting too deep")
                    atom, i = expansions(i + 1, depth + 1)
                    if k == LPAR:
                        if kinds[i] != RPAR:
                            raise Unsupported("expected )")
                    else:
                        if kinds[i] != RBRA:
                            raise Unsupported("expected ]")
                        atom = Tree("maybe", [atom], Meta())
                    i += 1
                k = kinds[i]
                if k == OP:
                    atom = Tree("expr", [atom, tok(i)], Meta())
                    i += 1
                    k = kinds[i]
                elif k == TILDE:
                    if kinds[i + 1] != NUMBER:
                        raise Unsupported("expected a number after ~")
                    if kinds[i + 2] == DOTDOT:
                        if kinds[i + 3] != NUMBER:
                            raise Unsupported("expected a number after ..")
                        atom = Tree("expr", [atom, tok(i), tok(i + 1), tok(i + 3)], Meta())
                        i += 4
                    else:
                        atom = Tree("expr", [atom, tok(i), tok(i + 1)], Meta())
                        i += 2
                    k = kinds[i]
                exprs.append(atom)
            alt = Tree("expansion", exprs, Meta())
            if k == TO:
                if kinds[i + 1] != RULE:
                    raise Unsupported("expected a rule name after ->")
                alt = Tree("alias", [alt, NonTerminal(text_of(i + 1))], Meta())
                i += 2
                k = kinds[i]
            alts.append(alt)
            if k == OR or k == NL_OR:
                i += 1
            else:
                return Tree("expansions", alts, Meta()), i

    def body(i):
        # _COLON expansions _NL
        if kinds[i] != COLON:
            raise Unsupported("expected :")
        exps, i = expansions(i + 1, 0)
        if kinds[i] != NL:
            raise Unsupported("expected end of line")
        return exps, i + 1

    def rule(i):
        mods = []
        if kinds[i] == RULE_MODIFIERS:
            mods.append(tok(i))
            i += 1
        if kinds[i] != RULE:
            raise Unsupported("expected a rule name")
        rname = tok(i)
        i += 1
        params = []
        if kinds[i] == LBRACE:
            while True:
                if kinds[i + 1] != RULE:
                    raise Unsupported("expected a template parameter")
                params.append(tok(i + 1))
                i += 2
                if kinds[i] == RBRACE:
                    break
                if kinds[i] != COMMA:
                    raise Unsupported("expected , or }")
            i += 1
        prio = []
        if kinds[i] == DOT:
            if kinds[i + 1] != NUMBER:
                raise Unsupported("expected a priority")
            prio.append(tok(i + 1))
            i += 2
        exps, i = body(i)
        return Tree("rule", [Tree("rule_modifiers", mods, Meta()), rname,
                             Tree("template_params", params, Meta()),
                             Tree("priority", prio, Meta()), exps], Meta()), i

    def term(i):
        kids = [tok(i)]
        i += 1
        if kinds[i] == DOT:
            if kinds[i + 1] != NUMBER:
                raise Unsupported("expected a priority")
            kids.append(tok(i + 1))
            i += 2
        exps, i = body(i)
        kids.append(exps)
        return Tree("term", kids, Meta()), i

    def definition(i):
        k = kinds[i]
        if k == RULE or k == RULE_MODIFIERS:
            return rule(i)
        if k == TERMINAL:
            return term(i)
        raise Unsupported("expected a rule or terminal definition")

    def name(i):
        k = kinds[i]
        if k != RULE and k != TERMINAL:
            raise Unsupported("expected a name")
        return tok(i)

    def import_(i):
        path = "import_lib"
        if kinds[i] == DOT:
            path = "import_rel"
            i += 1
        parts = [name(i)]
        i += 1
        while kinds[i] == DOT:
            parts.append(name(i + 1))
            i += 2
        kids = [Tree(path, parts, Meta())]
        k = kinds[i]
        if k == LPAR:
            listed = [name(i + 1)]
            i += 2
            while kinds[i] == COMMA:
                listed.append(name(i + 1))
                i += 2
            if kinds[i] != RPAR:
                raise Unsupported("expected , or )")
            kids.append(Tree("name_list", listed, Meta()))
            i += 1
        elif k == TO:
            kids.append(name(i + 1))
            i += 2
        if kinds[i] != NL:
            raise Unsupported("expected end of line")
        return Tree("import", kids, Meta()), i + 1

    def declare(i):
        syms = []
        while True:
            k = kinds[i]
            if k == TERMINAL:
                nm = text_of(i)
                syms.append(Terminal(nm, nm[0] == "_"))
            elif k == RULE:
                syms.append(NonTerminal(text_of(i)))
            else:
                break
            i += 1
        if not syms or kinds[i] != NL:
            raise Unsupported("expected names, then end of line")
        return Tree("declare", syms, Meta()), i + 1

    try:
        return Tree("start", _items(kinds, rule, term, import_, expansions, declare, definition), Meta())
    finally:
        # the helpers call each other through their closure cells, a cycle that
        # only the cyclic collector frees: emptied here, the lists it holds (a
        # span per token) die now, not in a collection of ~20 ms after
        # javascript.lark's load
        starts.clear()
        ends.clear()
        kinds.clear()
        newlines.clear()


def _items(kinds, rule, term, import_, expansions, declare, definition):
    """The grammar's items (``_parse``'s top level), each read by its helper."""
    from lark.tree import Meta, Tree

    items = []
    i = 0
    while True:
        k = kinds[i]
        if k == NL:
            i += 1
            continue
        if k == END:
            break
        if k == RULE or k == RULE_MODIFIERS:
            item, i = rule(i)
        elif k == TERMINAL:
            item, i = term(i)
        elif k == IMPORT:
            item, i = import_(i + 1)
        elif k == IGNORE:
            exps, i = expansions(i + 1, 0)
            if kinds[i] != NL:
                raise Unsupported("expected end of line")
            item = Tree("ignore", [exps], Meta())
            i += 1
        elif k == DECLARE:
            item, i = declare(i + 1)
        elif k == OVERRIDE or k == EXTEND:
            inner, i = definition(i + 1)
            item = Tree("override" if k == OVERRIDE else "extend", [inner], Meta())
        else:
            raise Unsupported("expected a definition or directive")
        items.append(item)
    if i != len(kinds) - 2:  # only the END match and the sentinel remain
        raise Unsupported("trailing tokens")
    return items


def install():
    """Route ``lark.load_grammar._parse_grammar`` through :func:`parse_grammar_text`
    (lark 1.3.x only), Lark's own function serving every text it leaves.  Once
    per process; returns whether the wrapper is in place."""
    from cfgmask.frontends.lark_build import wrap_lark_function

    def make(original):
        def _parse_grammar(text, name, start="start"):
            try:
                return parse_grammar_text(text, name, start)
            except Unsupported:
                pass
            # Outside the handler, so Lark's errors carry no chained context.
            return original(text, name, start)
        return _parse_grammar
    return wrap_lark_function("_parse_grammar", "_cfgmask_lark_parse", make)
