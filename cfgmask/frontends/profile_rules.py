"""The rule-level restrictions of a generation profile (:mod:`cfgmask.frontends.profiles`):
SQL columns and statement kinds, JSON layouts; and the option checks they need.

These only remove rule alternatives or put a nonterminal whose terminals are
sub-languages of the original's in place of one, so the profile stays a
sublanguage of the full grammar lexeme by lexeme (the new terminals pass the
same subset and cut checks as the others in ``profiles.apply``).
"""

import re

from cfgmask.errors import ConfigurationError, GrammarError

__all__ = ["STATEMENT_KINDS", "READ_ONLY", "JSON_STYLES", "JSON_DEFAULT_STYLE", "JSON_KEY",
           "column_terminals", "name_alternatives", "named_rules", "reshape", "sql_rules", "json_rules",
           "json_layout_terminals", "as_tuple", "statement_kinds", "database_options"]

COLUMN_NAME = "COLUMN_NAME"              # bare column names, where `name` stands (IDENT)
COLUMN_EXPR = "COLUMN_EXPR"              # bare column names in expressions (EXPR_IDENT)
COLUMN_NAME_QUOTED = "COLUMN_NAME_QUOTED"
COLUMN_SYMBOL = "$column"
COLUMN_EXPR_SYMBOL = "$column_expr"
COLUMN_LIST_SYMBOL = "$column_list"

# statements= kinds of the SQL profile -> the statement rule they stand for
STATEMENT_KINDS = {"select": "select_stmt", "insert": "insert_stmt", "update": "update_stmt",
                   "delete": "delete_stmt", "create": "create_table_stmt"}
READ_ONLY = ("select",)  # SELECT, WITH ... SELECT and VALUES

JSON_STYLES = ("pretty", "compact", "flexible")
# compact, not pretty: on the demo's 6 JSON prompts (SmolLM2, 128 tokens) pretty
# passed 2/6 (3/6 at 160 tokens): its newlines and indents spend the budget and
# 4 outputs were cut; compact passed 6/6 (docs/generation.md, "JSON layout")
JSON_DEFAULT_STYLE = "compact"
JSON_INDENT = 2          # spaces per level (pretty), as json.dumps(indent=2)
JSON_MAX_DEPTH = 16      # deeper levels keep this level's indentation (as cfgmask.frontends.json_schema's pretty)
JSON_KEY = "KEY"
JSON_SPACE = "SP"


def _ws_name(k):
    return f"NL_{k}"


def column_terminals(spec, columns, grammar, need):
    """``COLUMN_NAME`` / ``COLUMN_EXPR`` (bare names, where the grammar's name / expression
    identifier accepts them; absent when none does) and ``COLUMN_NAME_QUOTED`` (every name
    in the dialect's quotes): ``{name: (pattern, original terminal)}``."""
    out = {}
    bare_terms = [(COLUMN_NAME, spec.name_terminal)]
    if spec.column_expr_terminal != spec.name_terminal:
        bare_terms.append((COLUMN_EXPR, spec.column_expr_terminal))
    for new, orig in bare_terms:
        rx = re.compile(grammar.terminal_patterns[grammar.terminal_names.index(need(orig, "column terminal"))])
        bare, _ = name_alternatives(columns, rx, spec.quote_char)
        if bare:
            out[new] = (bare, orig)
    _, quoted = name_alternatives(columns, None, spec.quote_char)
    out[COLUMN_NAME_QUOTED] = (quoted, need(spec.quoted_name_terminal, "quoted name terminal"))
    return out


def name_alternatives(names, bare_rx, quote_char):
    """``(bare, quoted)`` regex alternations of ``names``: bare (ASCII letters in any case) the
    names ``bare_rx`` fully matches (``None`` when there are none, or ``bare_rx`` is ``None``),
    quoted every name in ``quote_char`` quotes (a quote inside doubled)."""
    def any_case(name):
        return "".join(f"[{c.upper()}{c.lower()}]" if c.isascii() and c.isalpha() else re.escape(c)
                       for c in name)
    bare = sorted({t for t in names if bare_rx is not None and bare_rx.fullmatch(t)}, key=lambda t: (-len(t), t))
    q = quote_char
    quoted = "|".join(re.escape(q + t.replace(q, q + q) + q) for t in names)
    return ("|".join(any_case(t) for t in bare) if bare else None), quoted


def named_rules(g):
    """``g``'s rules as ``[(lhs name, [symbol names])]`` (rule 0 first)."""
    return [(g.symbol_name(int(g.rule_lhs[r])), [g.symbol_name(s) for s in g.rule_body(r)])
            for r in range(g.n_rules)]


def reshape(g, rules, new_terminals=()):
    """A grammar with ``g``'s terminals (plus ``new_terminals``: ``{name: pattern}``) and the named
    ``rules`` (rule 0 the start rule); nonterminals no rule reaches from the start and real
    terminals no rule uses are left out.  Built as a ``type(g)``, with ``g``'s profile."""
    new_terminals = dict(new_terminals)
    by_lhs = {}
    for lhs, body in rules:
        by_lhs.setdefault(lhs, []).append(body)
    start = rules[0][0]
    reach, todo = {start}, [start]
    while todo:
        for body in by_lhs.get(todo.pop(), ()):
            for s in body:
                if s in by_lhs and s not in reach:
                    reach.add(s)
                    todo.append(s)
    rules = [(lhs, body) for lhs, body in rules if lhs in reach]
    used = {s for _, body in rules for s in body}
    missing = sorted(s for s in used if s not in by_lhs and s not in new_terminals and s not in g.terminal_names)
    if missing:
        raise GrammarError(f"profile rules use undefined symbols {', '.join(missing)}",
                           where=missing[0], construct="profile")
    old = [(n, p, f, ign, a) for n, p, f, ign, a in zip(g.terminal_names, g.terminal_patterns, g.terminal_flags,
                                                        g.terminal_is_ignore, g.terminal_at_start)]
    real = [t for t in old if not t[3] and t[0] in used] + \
        [(n, p, frozenset(), False, False) for n, p in new_terminals.items()]
    ign = [t for t in old if t[3]]
    terms = real + ign
    nts = [start] + [n for n in g.nonterminal_names if n in reach and n != start] + \
        sorted(n for n in reach if n not in g.nonterminal_names)
    sym = {n: i for i, n in enumerate(t[0] for t in terms)}
    sym.update({n: len(terms) + i for i, n in enumerate(nts)})
    return type(g)(terminal_names=[t[0] for t in terms], terminal_patterns=[t[1] for t in terms],
                   terminal_flags=[t[2] for t in terms], terminal_is_ignore=[t[3] for t in terms],
                   terminal_at_start=[bool(t[4]) for t in terms], nonterminal_names=nts,
                   rules=[(sym[lhs], [sym[s] for s in body]) for lhs, body in rules],
                   start=g.start, word_boundary=g.word_boundary, source=g.source,
                   rewritten_terminals={n: w for n, w in g.rewritten_terminals.items() if n in sym},
                   profile=g.profile)


def sql_rules(rules, spec, columns, statements, has_expr_terminal, where):
    """The named ``rules`` with column positions restricted (``columns``: the $column terminals
    exist) and only the ``statements`` kinds kept (``None``: all)."""
    out = []
    if statements is not None:
        keep = {STATEMENT_KINDS[k] for k in statements}
        rules = [(lhs, body) for lhs, body in rules
                 if lhs != spec.statement_rule or len(body) != 1 or body[0] in keep]
    if not columns:
        return rules
    bare = [s for s in columns if s != COLUMN_NAME_QUOTED]
    expr = COLUMN_EXPR_SYMBOL if has_expr_terminal else COLUMN_SYMBOL
    lists = set(spec.column_list_rules)
    by_lhs = {}
    for lhs, body in rules:
        by_lhs.setdefault(lhs, []).append(body)
    seen = set()
    for lhs, body in rules:
        if lhs == spec.column_ref_rule:
            if len(body) == 1:          # c
                body = [expr]
            elif len(body) == 3:        # x.c: the qualifier (a table or an alias) is not checked
                body = body[:2] + [COLUMN_SYMBOL]
            else:                       # s.t.c: left out
                continue
            seen.add(len(body))
        elif lhs in lists:
            body = [COLUMN_LIST_SYMBOL if s == "name_list" else COLUMN_SYMBOL if s == "name" else s for s in body]
        out.append((lhs, body))
    if seen != {1, 3}:
        raise GrammarError(f"{where}: rule {spec.column_ref_rule} has no 'name' and 'qualifier . name' "
                           "forms (SPECS column_ref_rule)", where=spec.column_ref_rule, construct="profile spec")
    missing = [r for r in lists if r not in by_lhs]
    if missing:
        raise GrammarError(f"{where}: the grammar has no rule {', '.join(missing)} (SPECS column_list_rules)",
                           where=missing[0], construct="profile spec")
    out += [(COLUMN_SYMBOL, [t]) for t in [x for x in bare if x == COLUMN_NAME] + [COLUMN_NAME_QUOTED]]
    if has_expr_terminal:
        out += [(COLUMN_EXPR_SYMBOL, [t]) for t in [x for x in bare if x == COLUMN_EXPR] + [COLUMN_NAME_QUOTED]]
    # $column_list: a copy of name_list (and its own helper rules) with name -> $column
    helpers = {n for n in by_lhs if n.startswith("__name_list")}
    rename = {"name_list": COLUMN_LIST_SYMBOL, "name": COLUMN_SYMBOL}
    rename.update({h: f"{COLUMN_LIST_SYMBOL}{h}" for h in helpers})
    for lhs in ["name_list", *sorted(helpers)]:
        for body in by_lhs.get(lhs, ()):
            out.append((rename[lhs], [rename.get(s, s) for s in body]))
    return out


def json_rules(rules, style):
    """The named rules of json.lark's profile with one layout: ``compact`` (no whitespace) or
    ``pretty`` (json.dumps(indent=2)'s: a line break and the level's indentation after ``{``,
    ``[`` and ``,`` and before ``}`` and ``]``, ``": "`` after a key, nothing else)."""
    head = [(lhs, body) for lhs, body in rules if lhs.startswith("$")]
    # the start rule (start, or another rule chosen as the start) at the top level
    top = {"start": "value", "value": "value", "object": "object", "array": "array", "member": "member"}
    if style == "pretty":
        top = {k: f"{v}_0" for k, v in top.items()}
    out = [(lhs, [top.get(s, s) for s in body]) for lhs, body in head]
    scalars = [["STRING"], ["NUMBER"], ["TRUE"], ["FALSE"], ["NULL"]]
    if style == "compact":
        out += [("value", ["object"]), ("value", ["array"])] + [("value", b) for b in scalars]
        out += [("object", ["LBRACE", "RBRACE"]), ("object", ["LBRACE", "members", "RBRACE"]),
                ("members", ["member"]), ("members", ["members", "COMMA", "member"]),
                ("member", [JSON_KEY, "COLON", "value"]),
                ("array", ["LSQB", "RSQB"]), ("array", ["LSQB", "items", "RSQB"]),
                ("items", ["value"]), ("items", ["items", "COMMA", "value"])]
        return out
    D = JSON_MAX_DEPTH
    for d in range(D + 1):
        c = min(d + 1, D)  # the children's level
        i, o = _ws_name(d + 1), _ws_name(d)
        out += [(f"value_{d}", [f"object_{d}"]), (f"value_{d}", [f"array_{d}"])]
        out += [(f"value_{d}", b) for b in scalars]
        out += [(f"object_{d}", ["LBRACE", "RBRACE"]), (f"object_{d}", ["LBRACE", i, f"members_{d}", o, "RBRACE"]),
                (f"members_{d}", [f"member_{d}"]), (f"members_{d}", [f"members_{d}", "COMMA", i, f"member_{d}"]),
                (f"member_{d}", [JSON_KEY, "COLON", JSON_SPACE, f"value_{c}"]),
                (f"array_{d}", ["LSQB", "RSQB"]), (f"array_{d}", ["LSQB", i, f"items_{d}", o, "RSQB"]),
                (f"items_{d}", [f"value_{c}"]), (f"items_{d}", [f"items_{d}", "COMMA", i, f"value_{c}"])]
    return out


def json_layout_terminals(style, key_pattern):
    """``{name: (pattern, original terminal)}`` of the JSON layout's new terminals
    (``key_pattern``: the key terminal's, the string terminal's capped at the key length)."""
    out = {JSON_KEY: (key_pattern, "STRING")}
    if style == "pretty":
        out[JSON_SPACE] = ("[ ]", "_WS")
        for k in range(JSON_MAX_DEPTH + 2):
            out[_ws_name(k)] = ("\\n" + (f"[ ]{{{JSON_INDENT * k}}}" if k else ""), "_WS")
    return out


def as_tuple(value, what):
    """``tuple(value)``, or the option named in a ConfigurationError when it is no collection."""
    try:
        return tuple(value)
    except TypeError:
        raise ConfigurationError(f"{what} must be a list of names, not {value!r:.40}") from None


def statement_kinds(statements, spec, grammar, base):
    """``statements`` checked: a tuple of :data:`STATEMENT_KINDS` the grammar has (``"all"``: all of them)."""
    if not spec.statement_rule:
        raise ConfigurationError(f"the {base} profile takes no statements")
    if isinstance(statements, str):
        statements = [k.strip() for k in statements.split(",") if k.strip()]
    statements = as_tuple(statements, "statements")
    have = set()
    for r in range(grammar.n_rules):
        if grammar.symbol_name(int(grammar.rule_lhs[r])) == spec.statement_rule:
            have.update(grammar.symbol_name(s) for s in grammar.rule_body(r))
    kinds = tuple(k for k, rule in STATEMENT_KINDS.items() if rule in have)
    if "all" in statements:
        return kinds
    bad = [k for k in statements if k not in kinds]
    if bad or not statements:
        raise ConfigurationError(f"statements: {', '.join(map(repr, bad)) or 'none given'}; choose from "
                                 f"{', '.join(kinds)} or all")
    return statements


def database_options(database, statements=None):
    """The :func:`apply` options of the schema-aware SQL profile: ``tables`` and ``columns`` of
    ``database`` (see :func:`cfgmask.frontends.sql_schema.read_schema`) and ``statements``, read-only
    (:data:`READ_ONLY`) unless given."""
    # imported here: sql_schema imports sqlite3 (~2.5 ms), and database= is rare
    from cfgmask.frontends.sql_schema import read_schema
    schema = read_schema(database)
    return dict(tables=schema.table_names, columns=schema.column_names,
                statements=READ_ONLY if statements is None else statements)
