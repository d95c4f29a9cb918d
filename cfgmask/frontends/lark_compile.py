"""A faster ``lark.load_grammar.Grammar.compile`` for Lark 1.3.

:func:`compile_grammar` turns a loaded ``Grammar`` (rule trees, terminal
trees, ``%ignore`` names) into ``(terminals, rules, ignore)`` the way Lark's
own ``Grammar.compile`` does, without Lark's generic tree transformers (one
Python call per node per pass, a deep copy of every tree, ``literal_eval``
per string literal): each rule is walked once into plain tuples and the
EBNF-to-BNF and alternative-flattening steps work on those tuples.

Invariants:

* for every grammar it accepts, the result is identical to what
  ``grammar.compile(start, terminals_to_keep)`` of Lark 1.3.x returns: the
  same ``TerminalDef``s in the same order (name, pattern class, value, flags,
  raw, priority), including the names Lark gives anonymous terminals; the same
  ``Rule``s in the same order (origin, expansion symbols with ``filter_out``,
  alias, order, options with ``empty_indices``), including the helper rules
  Lark adds for ``*``, ``+``, ``~`` and template instances; the same ``%ignore``
  list (tests/test_lark_compile.py compares them field by field);
* wherever Lark's compile would raise, or where this module is not sure to
  behave exactly as Lark does (another Lark version, a construct it does not
  model, any unexpected exception), it raises :class:`Unsupported` and the
  caller runs Lark's own ``grammar.compile``, so the result or the error is
  then Lark's;
* the input ``Grammar`` is never modified (Lark's compile deep-copies it;
  here no node or symbol of it is mutated, and symbols whose ``filter_out``
  may change are copied).

Where Lark's passes have an order-dependent side effect (numbering of
``__ANON_n`` terminals, of ``__<rule>_plus_<n>`` helpers, creation of template
instances), Lark's in-place transformers call them level by level, deepest
level first and left to right within a level; the same order is reproduced by
sorting those nodes by (depth descending, position).

lark is imported inside the functions: importing this module must stay cheap.
"""

import re

__all__ = ["compile_grammar", "Unsupported"]


class Unsupported(Exception):
    """The fast compile cannot promise Lark's exact result here: run ``grammar.compile``."""


# A literal body needs Lark's exact unescaping (and literal_eval) only if it holds a
# backslash or a character Python's tokenizer might treat specially (\r, NUL, non-ASCII)
_NEEDS_EVAL = re.compile(r"[^\x20-\x7e\t]|\\")
_LITERAL_MEMO = {}          # (token type, token text) -> (pattern class, value, flags)
_LITERAL_MEMO_SIZE = 8192
_FLAG_CHARS = "imslux"      # lark.load_grammar._RE_FLAGS

_EXPR, _MAYBE, _PAT, _TPL = range(4)


class _Spec:
    """A node whose value depends on an order-dependent step (set in ``res`` once done)."""

    __slots__ = ("kind", "depth", "a", "b", "c", "res")

    def __init__(self, kind, depth, a, b=None, c=None):
        self.kind, self.depth, self.a, self.b, self.c = kind, depth, a, b, c
        self.res = None


def _neg_depth(spec):
    return -spec.depth


def _sym_key(syms):
    """A key equal for two symbol tuples exactly when Lark's ``Symbol.__eq__``
    makes them equal (kind and name), hashed and compared at C speed: Lark's
    ``__hash__`` and ``__eq__`` are Python methods, and deduplicating
    alternatives with them was ~20,000 calls for lg-sqlite's grammar."""
    return tuple([(s.name, s.is_term) for s in syms])


def _distinct(items, key):
    """``list(dict.fromkeys(items))``, the items compared by ``key(item)``: the
    first of each equal group, in order."""
    first = {}
    for item in items:
        first.setdefault(key(item), item)
    return list(first.values())


def _alt_key(alt):
    return (_sym_key(alt[0]), alt[1])


def compile_grammar(grammar, start, terminals_to_keep):
    """``grammar.compile(start, terminals_to_keep)`` of Lark 1.3, or :class:`Unsupported`."""
    import lark
    if lark.__version__.split(".")[:2] != ["1", "3"]:
        raise Unsupported("lark %s: the fast compile models lark 1.3 only" % lark.__version__)
    try:
        return _Compiler(grammar).run(start, terminals_to_keep)
    except Unsupported:
        raise
    except Exception as e:  # noqa: BLE001 - RecursionError, a shape not modelled, ...: Lark decides
        raise Unsupported("%s: %s" % (type(e).__name__, e)) from e


_KEEP_ESCAPES = "Uuxnftr"    # escapes Lark's eval_escaping leaves to Python's own reading


def _unescape(x):
    """The text of a literal body as Lark's ``eval_escaping`` reads it (Unsupported where it raises).

    Lark walks the body a character at a time: an escaped backslash becomes
    two escaped backslashes, ``\\U \\u \\x \\n \\f \\t \\r`` stay, any other
    escape gets its backslash doubled, and Python evaluates the result.  Here
    the same rewrite is a few ``str.replace`` passes (escaped backslashes
    first, so that every backslash left escapes the character after it),
    not a Python loop over sql.lark's 15-22 KB identifier literals (19,930
    backslashes)."""
    if not _NEEDS_EVAL.search(x):
        return x
    if (len(x) - len(x.rstrip("\\"))) % 2:
        raise Unsupported("literal ends with a backslash")
    import ast
    hold = "\x00"
    if hold in x:
        raise Unsupported("NUL in a literal")     # Lark's own walk decides
    w = x.replace("\\\\", hold).replace("\\", "\\\\")
    for c in _KEEP_ESCAPES:
        w = w.replace("\\\\" + c, "\\" + c)
    w = w.replace(hold, "\\" * 4).replace('\\"', '"').replace("'", "\\'")
    try:
        s = ast.literal_eval("u'''%s'''" % w)
    except Exception as e:  # noqa: BLE001 - Lark raises (GrammarError or other)
        raise Unsupported("bad escaping in literal") from e
    if type(s) is not str:
        raise Unsupported("literal did not evaluate to text")
    return s


def _literal(tok):
    """``(pattern class, value, flags string)`` for a STRING/REGEXP token, as Lark reads it."""
    from lark.lexer import PatternRE, PatternStr
    typ = tok.type
    v = str(tok)
    key = (typ, v)
    got = _LITERAL_MEMO.get(key)
    if got is not None:
        return got
    if typ != "STRING" and typ != "REGEXP":
        raise Unsupported("literal of type %s" % typ)
    flag_start = max(v.rfind("/"), v.rfind('"')) + 1
    if flag_start <= 0:
        raise Unsupported("literal without delimiters")
    flags = v[flag_start:]
    if any(f not in _FLAG_CHARS for f in flags):
        raise Unsupported("unknown literal flag")
    if "\n" in v and (typ == "STRING" or "x" not in flags):
        raise Unsupported("newline in literal")
    body = v[:flag_start]
    if body[0] != body[-1] or body[0] not in '"/':
        raise Unsupported("literal delimiters do not match")
    s = _unescape(body[1:-1])
    if s == "":
        raise Unsupported("empty literal")
    if typ == "STRING":
        got = (PatternStr, s.replace("\\\\", "\\"), flags)
    else:
        got = (PatternRE, s, flags)
    if len(_LITERAL_MEMO) >= _LITERAL_MEMO_SIZE:
        _LITERAL_MEMO.clear()
    _LITERAL_MEMO[key] = got
    return got


def _range_regex(tree):
    a, b = tree.children
    if getattr(a, "type", None) != "STRING" or getattr(b, "type", None) != "STRING":
        raise Unsupported("range of non-strings")
    sa, sb = str(a)[1:-1], str(b)[1:-1]
    if len(_unescape(sa)) != 1 or len(_unescape(sb)) != 1:
        raise Unsupported("range ends are not single characters")
    return "[%s-%s]" % (sa, sb)


def _width_key(p):
    return (-p.max_width, -p.min_width, -len(p.value))


class _Compiler:
    def __init__(self, grammar):
        import lark.load_grammar as lg
        from lark.grammar import NonTerminal, Rule, RuleOptions, Symbol, Terminal
        from lark.lexer import PatternRE, PatternStr, TerminalDef
        from lark.tree import Tree
        from lark.utils import is_id_continue, is_id_start, small_factors
        self.g = grammar
        self.Tree, self.Symbol = Tree, Symbol
        self.Terminal, self.NonTerminal, self.Rule, self.RuleOptions = Terminal, NonTerminal, Rule, RuleOptions
        self.PatternStr, self.PatternRE, self.TerminalDef = PatternStr, PatternRE, TerminalDef
        self.is_id_continue, self.is_id_start, self.small_factors = is_id_continue, is_id_start, small_factors
        self.EMPTY = lg._EMPTY
        self.names_table = lg._TERMINAL_NAMES
        self.repeat_break = lg.REPEAT_BREAK_THRESHOLD
        self.small_factor = lg.SMALL_FACTOR_THRESHOLD

    # ------------------------------------------------------------------ driver
    def run(self, start, terminals_to_keep):
        from copy import copy
        g = self.g
        terminals = self._compile_terminals(g.term_defs)

        self.terminals = terminals
        self.term_set = {t.name for t in terminals}
        # later definitions of an equal pattern win, as in Lark's dict
        self.term_reverse = {(type(t.pattern), t.pattern.value, t.pattern.flags): t.name
                             for t in terminals}
        self.anon_i = 0
        self.ebnf_i = 0
        self.cache = {}
        self.new_rules = []
        self.created = set()

        templates = {}
        queue = []
        for name, params, tree, options in g.rule_defs:
            if len(params):
                templates[name] = (params, tree, options)
            else:
                queue.append((name, tree, options, None))
        self.templates = templates
        self.queue = queue

        rules = []
        i = 0
        while i < len(queue):    # grows with template instances
            name, tree, options, subst = queue[i]
            i += 1
            rules.append((name, self._rule(name, tree, options, subst), options))
        rules += self.new_rules
        if len(rules) != len({r[0] for r in rules}):
            raise Unsupported("rule name collision")

        RuleOptions, Rule, NonTerminal, EMPTY = self.RuleOptions, self.Rule, self.NonTerminal, self.EMPTY
        compiled = []
        dropped = set()
        for name, tree, options in rules:
            items = self._top(tree)
            seen = {}
            keep_all = options is not None and options.keep_all_tokens
            for order, (syms, alias) in enumerate(items):
                if alias and name.startswith("_"):
                    raise Unsupported("alias on an inlined rule")
                exp_options = options
                for x in syms:
                    if x is EMPTY:
                        exp_options = copy(options) if options is not None else RuleOptions()
                        exp_options.empty_indices = tuple(y is EMPTY for y in syms)
                        syms = tuple(y for y in syms if y is not EMPTY)
                        break
                if keep_all:
                    for sym in syms:
                        if sym.is_term:
                            sym.filter_out = False
                rule = Rule(NonTerminal(name), list(syms), order, alias, exp_options)
                key = _sym_key(syms)
                if key in seen:
                    if syms:
                        raise Unsupported("rules defined twice")
                    dropped.add(id(rule))     # an empty duplicate: Lark keeps the first
                else:
                    seen[key] = True
                compiled.append(rule)
        if dropped:
            compiled = [r for r in compiled if id(r) not in dropped]

        compiled = self._used_rules(compiled, start)

        if terminals_to_keep != "*":
            used = {s.name for r in compiled for s in r.expansion if s.is_term}
            ignore = g.ignore
            terminals = [t for t in terminals
                         if t.name in used or t.name in ignore or t.name in terminals_to_keep]
        return terminals, compiled, g.ignore

    @staticmethod
    def _used_rules(compiled, start):
        """Lark's repeated 'drop rules nobody else refers to' (its greatest fixpoint), by counting."""
        refs = {}
        for r in compiled:
            o = r.origin.name
            for s in r.expansion:
                if not s.is_term and s.name != o:
                    refs[s.name] = refs.get(s.name, 0) + 1
        starts = set(start)
        by_origin = {}
        for r in compiled:
            by_origin.setdefault(r.origin.name, []).append(r)
        dead = set()
        work = [n for n in by_origin if n not in starts and not refs.get(n)]
        while work:
            n = work.pop()
            if n in dead:
                continue
            dead.add(n)
            for r in by_origin[n]:
                for s in r.expansion:
                    if not s.is_term and s.name != n:
                        left = refs[s.name] - 1
                        refs[s.name] = left
                        if not left and s.name not in starts and s.name in by_origin:
                            work.append(s.name)
        if not dead:
            return compiled
        return [r for r in compiled if r.origin.name not in dead]

    # --------------------------------------------------------------- terminals
    def _compile_terminals(self, term_defs):
        TerminalDef = self.TerminalDef
        self.tmemo = {}
        used = set()
        out = []
        for name, (tree, priority) in term_defs:
            if tree is None:   # %declare
                continue
            if self._single_empty_expansion(tree):
                raise Unsupported("empty terminal %s" % name)
        for name, (tree, priority) in term_defs:
            if not tree:
                continue
            p = self._tpat(tree)
            if id(p) in used:    # shared through a reference: Lark's are separate objects
                p = type(p)(p.value, p.flags, p.raw)
            used.add(id(p))
            out.append(TerminalDef(name, p, priority))
        return out

    def _single_empty_expansion(self, tree):
        """Whether the tree (references excluded: each adds an expansion) has one expansion, empty."""
        Tree = self.Tree
        count = 0
        empty = False
        stack = [tree]
        while stack:
            t = stack.pop()
            if t.data == "value":
                continue
            if t.data == "expansion":
                count += 1
                if not t.children:
                    empty = True
            stack.extend(c for c in t.children if isinstance(c, Tree))
        return count == 1 and empty

    def _tpat(self, t):
        """The Pattern Lark's TerminalTreeToPattern makes of a terminal tree."""
        PatternRE, PatternStr = self.PatternRE, self.PatternStr
        if not isinstance(t, self.Tree):
            raise Unsupported("unexpected leaf in terminal")
        data = t.data
        ch = t.children
        if data == "expansions":
            if len(ch) == 1:
                return self._tpat(ch[0])
            ps = [self._tpat(c) for c in ch]
            ps.sort(key=_width_key)
            return PatternRE("(?:%s)" % "|".join([p.to_regexp() for p in ps]))
        if data == "expansion":
            if not ch:
                return PatternStr("")
            if len(ch) == 1:
                return self._tpat(ch[0])
            return PatternRE("".join([self._tpat(c).to_regexp() for c in ch]))
        if data == "value":
            (c,) = ch
            if isinstance(c, self.Tree) and c.data == "expansions":
                # a resolved reference to another terminal's tree (shared object)
                got = self.tmemo.get(id(c))
                if got is None:
                    got = self.tmemo[id(c)] = (c, self._tpat(c))
                return got[1]
            return self._tpat(c)
        if data == "literal":
            (tok,) = ch
            cls, value, flags = _literal(tok)
            return cls(value, flags, raw=str(tok))
        if data == "range":
            return PatternRE(_range_regex(t))
        if data == "expr":
            inner = self._tpat(ch[0])
            op = ch[1]
            if op == "~":
                if len(ch) == 3:
                    op = "{%d}" % int(ch[2])
                elif len(ch) == 4:
                    mn, mx = int(ch[2]), int(ch[3])
                    if mx < mn:
                        raise Unsupported("bad range in terminal")
                    op = "{%d,%d}" % (mn, mx)
                else:
                    raise Unsupported("expr shape")
            elif len(ch) != 2:
                raise Unsupported("expr shape")
            return PatternRE("(?:%s)%s" % (inner.to_regexp(), op), inner.flags)
        if data == "maybe":
            (c,) = ch
            inner = self._tpat(c)
            return PatternRE("(?:%s)?" % inner.to_regexp(), inner.flags)
        raise Unsupported("%s in a terminal" % data)

    # ------------------------------------------------------------------- rules
    def _rule(self, name, tree, options, subst):
        """One rule's tree after Lark's literal, anonymous-terminal, template and EBNF steps."""
        if tree is None or not isinstance(tree, self.Tree) or tree.data != "expansions":
            raise Unsupported("rule %s has no expansions tree" % name)
        keep = options is not None and options.keep_all_tokens
        self.keep = keep
        self.subst = subst
        self.pats, self.tpls, self.exprs = [], [], []
        root = self._conv(tree, 0, True)
        if self.pats:
            self._name_patterns(self.pats, keep)
        if self.tpls:
            self._apply_templates(self.tpls)
        if self.exprs:
            self.prefix = name
            self.rule_options = self.RuleOptions(keep_all_tokens=True) if keep else None
            exprs = self.exprs
            exprs.sort(key=_neg_depth)
            for spec in exprs:
                spec.res = self._ebnf(spec)
        return self._mat(root)

    def _conv(self, t, d, top=False):
        """A rule (sub)tree as tuples, with order-dependent nodes as _Spec (recorded by kind)."""
        Tree = self.Tree
        if not isinstance(t, Tree):
            return self._sym(t)
        data = t.data
        ch = t.children
        d1 = d + 1
        if data == "expansion":
            return ("expansion",) + tuple([self._conv(c, d1) for c in ch])
        if data == "value":
            (c,) = ch
            if isinstance(c, Tree):
                return self._conv(c, d)   # the value node disappears (ValidateSymbols)
            return self._sym(c)
        if data == "expansions":
            if not ch:
                raise Unsupported("empty expansions")
            return ("expansions",) + tuple([self._conv(c, d1, top) for c in ch])
        if data == "alias":
            if not top:
                raise Unsupported("alias inside a group")
            exp, target = ch
            if not isinstance(exp, Tree) or exp.data != "expansion" or \
                    type(target) is not self.NonTerminal:
                raise Unsupported("alias shape")
            return ("alias", self._conv(exp, d1), target.name)
        if data == "expr":
            if len(ch) < 2:
                raise Unsupported("expr shape")
            spec = _Spec(_EXPR, d, self._conv(ch[0], d1), ch[1], ch[2:])
            self.exprs.append(spec)
            return spec
        if data == "maybe":
            (c,) = ch
            spec = _Spec(_MAYBE, d, self._conv(c, d1))
            self.exprs.append(spec)
            return spec
        if data == "literal":
            (tok,) = ch
            spec = _Spec(_PAT, d, _literal(tok), str(tok))
            self.pats.append(spec)
            return spec
        if data == "range":
            spec = _Spec(_PAT, d, (self.PatternRE, _range_regex(t), ""), None)
            self.pats.append(spec)
            return spec
        if data == "template_usage":
            head = ch[0]
            if not isinstance(head, self.Symbol):
                raise Unsupported("template usage shape")
            if self.subst is not None and head.name in self.subst:
                head = self.subst[head.name]
            spec = _Spec(_TPL, d, head, [self._conv(c, d1) for c in ch[1:]])
            self.tpls.append(spec)
            return spec
        raise Unsupported("%s in a rule" % data)

    def _sym(self, s):
        subst = self.subst
        if subst is not None and s.name in subst:
            return subst[s.name]       # the argument object itself, shared as in Lark
        t = type(s)
        if t is self.Terminal:
            return self.Terminal(s.name, s.filter_out)   # a copy: keep_all_tokens may clear it
        if t is self.NonTerminal:
            return s
        raise Unsupported("unexpected leaf %r" % (s,))

    def _name_patterns(self, pats, keep):
        """Lark's PrepareAnonTerminals: a Terminal for each literal, defining anonymous ones."""
        PatternStr = self.PatternStr
        term_set, term_reverse = self.term_set, self.term_reverse
        pats.sort(key=_neg_depth)
        for spec in pats:
            cls, value, flags = spec.a
            key = (cls, value, frozenset(flags))
            name = term_reverse.get(key)
            if name is None and cls is PatternStr:
                name = self.names_table.get(value)
                if name is None and value and self.is_id_continue(value) and \
                        self.is_id_start(value[0]) and value.upper() not in term_set:
                    name = value.upper()
                if name in term_set:
                    name = None
            if name is None:
                name = "__ANON_%d" % self.anon_i
                self.anon_i += 1
            if name not in term_set:
                term_set.add(name)
                term_reverse[key] = name
                self.terminals.append(self.TerminalDef(name, cls(value, flags, raw=spec.b)))
            spec.res = self.Terminal(name, filter_out=False if keep else cls is PatternStr)

    def _apply_templates(self, tpls):
        """Lark's ApplyTemplates: each usage names an instance rule, queued on first use."""
        from copy import copy
        tpls.sort(key=_neg_depth)
        Spec = _Spec
        for spec in tpls:
            head = spec.a
            args = [a.res if type(a) is Spec else a for a in spec.b]
            for a in args:
                if not isinstance(a, self.Symbol):
                    raise Unsupported("template argument is not a symbol")
            tname = head.name
            result = "%s{%s}" % (tname, ",".join([a.name for a in args]))
            if result not in self.created:
                self.created.add(result)
                got = self.templates.get(tname)
                if got is None:
                    raise Unsupported("template %s not defined" % tname)
                params, body, options = got
                if len(params) != len(args):
                    raise Unsupported("template %s: wrong number of arguments" % tname)
                self.queue.append((result, body, copy(options), dict(zip(params, args))))
            spec.res = self.NonTerminal(result)

    # -------------------------------------------------------------------- EBNF
    def _mat(self, n):
        t = type(n)
        if t is tuple:
            mat = self._mat
            return tuple([mat(c) for c in n])
        if t is _Spec:
            return n.res
        return n

    def _ebnf(self, spec):
        rule = self._mat(spec.a)
        if spec.kind == _MAYBE:
            size = self._size(rule, self.keep)
            return ("expansions", rule, ("expansion",) + (self.EMPTY,) * size)
        op = spec.b
        op = getattr(op, "value", op)
        args = spec.c
        if op == "?" and not args:
            return ("expansions", rule, ("expansion",))
        if op == "+" and not args:
            return self._recurse("plus", rule)
        if op == "*" and not args:
            return ("expansions", self._recurse("star", rule), ("expansion",))
        if op == "~":
            if len(args) == 1:
                mn = mx = int(args[0])
            elif len(args) == 2:
                mn, mx = int(args[0]), int(args[1])
                if mx < mn or mn < 0:
                    raise Unsupported("bad repeat range")
            else:
                raise Unsupported("expr shape")
            return self._repeats(rule, mn, mx)
        raise Unsupported("operator %r" % (op,))

    def _size(self, n, keep):
        """Lark's FindRuleSize: how many children [..] stands for when it matches."""
        t = type(n)
        if t is tuple:
            tag = n[0]
            if tag == "expansion":
                return sum([self._size(c, keep) for c in n[1:]])
            if tag == "expansions":
                return max([self._size(c, keep) for c in n[1:]])
            raise Unsupported("%s inside [..]" % tag)
        if t is self.NonTerminal:
            return 0 if n.name.startswith("_") else 1
        if t is self.Terminal:
            return 1 if keep or not n.filter_out else 0
        if n is self.EMPTY:
            return 0
        raise Unsupported("unexpected symbol")

    def _new_rule(self, key, kind, tree_of):
        name = "__%s_%s_%d" % (self.prefix, kind, self.ebnf_i)
        self.ebnf_i += 1
        nt = self.NonTerminal(name)
        self.new_rules.append((name, tree_of(nt), self.rule_options))
        self.cache[key] = nt
        return nt

    def _recurse(self, kind, rule):
        got = self.cache.get(rule)
        if got is not None:
            return got
        return self._new_rule(rule, kind, lambda nt: ("expansions", ("expansion", rule),
                                                      ("expansion", nt, rule)))

    def _repeat(self, a, b, target, atom):
        key = (a, b, target, atom)
        got = self.cache.get(key)
        if got is not None:
            return got
        return self._new_rule(key, "repeat_a%d_b%d" % (a, b),
                              lambda nt: ("expansions", ("expansion",) + (target,) * a + (atom,) * b))

    def _repeat_opt(self, a, b, target, target_opt, atom):
        key = (a, b, target, atom, "opt")
        got = self.cache.get(key)
        if got is not None:
            return got
        alts = tuple([("expansion",) + (target,) * i + (target_opt,) for i in range(a)]
                     + [("expansion",) + (target,) * a + (atom,) * i for i in range(b)])
        return self._new_rule(key, "repeat_a%d_b%d_opt" % (a, b), lambda nt: ("expansions",) + alts)

    def _repeats(self, rule, mn, mx):
        if mx < self.repeat_break:
            return ("expansions",) + tuple([("expansion",) + (rule,) * n for n in range(mn, mx + 1)])
        factors = self.small_factors
        limit = self.small_factor
        mn_target = rule
        for a, b in factors(mn, limit):
            mn_target = self._repeat(a, b, mn_target, rule)
        if mx == mn:
            return mn_target
        diff_factors = factors(mx - mn + 1, limit)
        diff_target = rule
        diff_opt = ("expansion",)
        for a, b in diff_factors[:-1]:
            diff_opt = self._repeat_opt(a, b, diff_target, diff_opt, rule)
            diff_target = self._repeat(a, b, diff_target, rule)
        a, b = diff_factors[-1]
        diff_opt = self._repeat_opt(a, b, diff_target, diff_opt, rule)
        return ("expansions", ("expansion", mn_target, diff_opt))

    # ------------------------------------------------------------ flattening
    def _top(self, tree):
        """The rule's alternatives ``(symbols, alias)`` as Lark's SimplifyRule + RuleTreeToText give them."""
        if type(tree) is not tuple or tree[0] != "expansions":
            raise Unsupported("rule root")
        out = []
        self._top_into(tree, out)
        return _distinct(out, _alt_key)

    def _top_into(self, tree, out):
        alts = self._alts
        for c in tree[1:]:
            if type(c) is not tuple:
                raise Unsupported("bare symbol at the top of a rule")
            tag = c[0]
            if tag == "expansions":
                self._top_into(c, out)
            elif tag == "alias":
                name = c[2]
                out.extend([(syms, name) for syms in alts(c[1])])
            else:
                out.extend([(syms, None) for syms in alts(c)])

    def _alts(self, n):
        """The alternatives (symbol tuples) of a node: products left-major, unions in order."""
        if type(n) is not tuple:
            return [(n,)]
        tag = n[0]
        if tag == "expansion":
            res = [()]
            plain = []
            for c in n[1:]:
                if type(c) is not tuple:
                    plain.append(c)
                    continue
                sub = self._alts(c)
                if plain:
                    pre = tuple(plain)
                    res = [r + pre for r in res]
                    plain = []
                if len(sub) == 1:
                    one = sub[0]
                    res = [r + one for r in res]
                else:
                    sub = _distinct(sub, _sym_key)
                    res = [r + x for r in res for x in sub]
            if plain:
                pre = tuple(plain)
                res = [r + pre for r in res]
            return res
        if tag == "expansions":
            out = []
            for c in n[1:]:
                out.extend(self._alts(c))
            return out
        raise Unsupported("%s inside a group" % tag)
