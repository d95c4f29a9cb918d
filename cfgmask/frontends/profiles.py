"""Generation profiles: the part of a bundled grammar's language a chat model should write.

A bundled grammar accepts everything its language accepts, which is right for
validation and wrong for generation: comments, unbounded whitespace and
quoted names that run on for lines are escape hatches a small model takes.
The ``generate`` profile of a bundled grammar is the same grammar (the same
rules and the same terminals, by name) with

* **no comments**: the comment terminals are dropped from ``%ignore``;
* **bounded whitespace**: every whitespace terminal is replaced by one space,
  or one line break followed by at most ``max_indent`` spaces (JavaScript
  also allows one blank line), and a whitespace lexeme may not be followed by
  more whitespace, so runs never grow (a second ``%ignore`` lexeme cannot
  start where the first one could have gone on);
* **length caps** (options ``max_quoted_ident``, ``max_string``; ``None``
  turns a cap off): at most that many characters inside quoted identifiers
  and string literals, and their negated classes (``[^']``) refuse raw line
  breaks;
* **an optional markdown fence** (option ``fence``): ```` ```sql ```` /
  ```` ```js ```` / ```` ```json ```` (or a bare ```` ``` ````) plus a line
  break before the document, a line break plus ```` ``` ```` after it (each
  fence takes the whitespace in front of it), because chat models write one.
  :meth:`Profile.strip_fence` (and :meth:`Grammar.document
  <cfgmask.grammar.Grammar.document>`) give the document without it;
* **known tables** (SQL, option ``tables``): table references may only name
  the given tables;
* **known columns and statement kinds** (SQL, options ``columns``,
  ``statements``, or both from a schema with ``database``): column
  references may only name the given columns, and only the given statement
  kinds may be written (``database`` makes it read-only by default);
* **one JSON layout** (option ``whitespace``): ``compact`` (the default) or
  ``pretty`` replace json.lark's rules by depth-indexed copies with each
  ``_WS?`` removed or made the one whitespace lexeme the layout puts there;
  ``flexible`` is the bounded whitespace above.

What changes per grammar is the small table :data:`SPECS` (which terminals
are comments, whitespace, quoted identifiers and strings, and which rules
name tables); everything else is derived from the loaded full grammar, so a
grammar edit that keeps those names keeps its profile, and one that removes a
name fails loudly (:class:`~cfgmask.GrammarError` naming it and this module).

Invariant (the profile is a sublanguage of the full grammar, lexeme by
lexeme): for every document ``d`` the profile accepts, ``strip_fence(d)`` is
accepted by the full grammar with the same lexemes, scanned as the same
terminals.  The rules are the full grammar's (plus the fence rule, and with
``tables`` a ``$table`` rule whose terminals are sub-languages of the name
terminals ``qualified_name`` derives), so it suffices that greedy lexing cuts
and names the lexemes the same way; :func:`apply` checks, with the
terminals' byte automata, and refuses to build the profile otherwise:

1. *inclusion*: each replaced or added terminal accepts a subset of its
   original's lexemes (exact automaton inclusion, follow restrictions
   included);
2. *same cuts*: wherever a lexeme of a profile terminal may end while an
   original replaced terminal could still go on, the next byte is forbidden
   by a trailing lookahead that :func:`apply` adds (``(?![ \\n])`` after a
   whitespace lexeme, ``(?!')`` after a capped ``'...'`` that could continue
   as ``''``) or by the grammar's word boundary; a non-ASCII continuation
   (which a lookahead cannot express) is refused unless no profile terminal
   can start with that character;
3. *no hidden comments*: a dropped comment opens with two bytes ``ab``
   (``--``, ``//``, ``/*``); no profile lexeme may start with ``ab``, and a
   terminal that accepts the single byte ``a`` gets ``(?!b)``, so ``ab`` never
   stands where the full grammar would start a comment (``SELECT (1 --2)``
   would otherwise be ``1 - -2`` here and a comment there);
4. *same terminal, not ignored*: where a profile ``%ignore`` lexeme is also a
   lexeme of an original terminal (JavaScript: a line break is ``NL`` wherever
   ``NL`` is expected), the replaced terminal accepts it too.

One more guard is not about the full grammar but about the language's own
engine: JavaScript's tokenizer reads ``--`` and ``++`` as one token wherever
they stand, while contextual lexing splits ``x)--y`` into ``x) - -y``; so a
one-character ``-`` / ``+`` lexeme gets ``(?!-)`` / ``(?!\\+)`` (``SPECS
unsplit``).

(The JavaScript grammar's white space is ASCII and its non-ASCII spaces
are the terminal ``USP``, one character per lexeme, so a space lexeme never
takes the first byte of a following non-ASCII character: ``x = あ`` and
``x = µ`` lex as Lark and JavaScript read them.  The profile keeps only
U+00A0 of ``USP``.)

``tests/test_profiles.py`` checks the result end to end: documents sampled
under the profile's masks, fence stripped, must parse with the full grammar
(Lark and cfgmask) and pass the language's engine (``json.loads``, SQLite,
``node --check``).
"""

import re
from dataclasses import dataclass, field, replace

from cfgmask.errors import ConfigurationError, GrammarError
from cfgmask.frontends.cfg import START_SYMBOL_NAME
from cfgmask.frontends.profile_checks import (byte_class, check_ignore_overlap, check_subset,
                                              lookahead_guards, terminal_dfa)
from cfgmask.frontends.profile_rules import (JSON_DEFAULT_STYLE, JSON_KEY, JSON_STYLES, READ_ONLY,
                                             STATEMENT_KINDS, as_tuple, column_terminals, database_options,
                                             json_layout_terminals, json_rules, name_alternatives, named_rules,
                                             reshape, sql_rules, statement_kinds)

__all__ = ["Profile", "ProfileSpec", "SPECS", "PROFILE_NAMES", "apply", "strip_fence", "cap_pattern",
           "JSON_WHITESPACE", "JSON_STYLES", "JSON_DEFAULT_STYLE", "STATEMENT_KINDS", "READ_ONLY",
           "database_options"]

PROFILE_NAMES = ("full", "generate")

# Defaults of the generation profile's options.
MAX_INDENT = 24          # spaces after a line break
MAX_QUOTED_IDENT = 64    # characters inside "..." `...` [...] (SQL)
MAX_STRING = 64          # characters inside a string literal
MAX_KEY = 32             # characters inside a JSON key (whitespace "pretty" and "compact")

# The whitespace the JSON profile's "flexible" style allows at each place
# json.lark has `_WS?` ("compact", the default, and "pretty" are one
# layout each: _json_rules).  `%(indent)d` is replaced by max_indent.  It must
# stay a subset of json.lark's `_WS` (apply() checks).
JSON_WHITESPACE = r"[ ]|\n[ ]{0,%(indent)d}"

# One space, or a line break plus indentation (SQL: no blank lines; one
# statement reads fine without them).
_SPACE_OR_LINE = r"[ ]|\n[ ]{0,%(indent)d}"
# JavaScript: also one blank line between statements.  NL and NL_EOS (a line break
# where ASI may apply) is exactly the line-break part, so that a line break
# is NL here wherever it is NL in the full grammar (invariant 4).
_JS_WS = r"[ ]|\n\n?[ ]{0,%(indent)d}"
_JS_NL = r"\n\n?[ ]{0,%(indent)d}"
# A trailing negative-lookahead guard, as a not_before pragma leaves it on a
# pattern: a rewritten whitespace terminal keeps its original's (NL_EOS).
_TRAILING_GUARD = re.compile(r".*(\(\?!\[(?:\\.|[^\]\\])*\]\))", re.S)

FENCE_OPEN = "FENCE_OPEN"
FENCE_CLOSE = "FENCE_CLOSE"
# The closing fence takes the whitespace in front of it (what a whitespace
# lexeme may be, plus the line break): a body lexeme followed by whitespace
# and then the fence must not have to end its whitespace before a line break,
# which the whitespace terminals' lookahead forbids.  So the body never ends
# with whitespace, and the model can always close the fence.
_FENCE_CLOSE = r"(?:[ ]|\n\n?[ ]{0,%(indent)d})?\n```"
# Likewise the opening fence takes whitespace in front of it (a leading
# %ignore lexeme would otherwise stand before the fence).
_FENCE_LEAD = r"(?:[ ]|\n\n?[ ]{0,%(indent)d})?"
DOCUMENT_SYMBOL = "$document"


@dataclass(frozen=True)
class ProfileSpec:
    """Which terminals of a bundled grammar the generation profile touches (by name)."""

    fence_tags: tuple                      # info strings accepted after the opening ```
    comments: tuple = ()                   # %ignore terminals to drop
    whitespace: dict = field(default_factory=dict)  # terminal -> bounded pattern (%(indent)d)
    quoted_identifiers: tuple = ()         # capped at max_quoted_ident
    strings: tuple = ()                    # capped at max_string
    # two-character tokens the language's engine always reads as one (its
    # tokenizer is not contextual): a one-character lexeme may not be followed
    # by the second character ("x)--y" is "x) - -y" to the grammar, "x)-- y" to node)
    unsplit: tuple = ()
    # tables= option: in these rules, table_symbol names a table; the names are
    # name_terminal lexemes (bare) or quoted_name_terminal lexemes (quoted)
    table_rules: tuple = ()
    table_symbol: str = ""
    name_terminal: str = ""
    quoted_name_terminal: str = ""
    quote_char: str = '"'                  # how quoted_name_terminal quotes a table name
    # terminals that end every document they occur in (nothing but the fence
    # or EOS follows them in the profile, and the fence is stripped), so no
    # byte after them needs forbidding for the full grammar's cuts
    final: tuple = ()
    # database= / columns= option (SQL): column_ref_rule's bodies `c` and `x.c` name a
    # column (its bare identifier terminal in expressions is column_expr_terminal);
    # in column_list_rules, name_list and name are columns; statements= keeps the
    # alternatives of statement_rule that are the allowed kinds (STATEMENT_KINDS)
    column_ref_rule: str = ""
    column_expr_terminal: str = ""
    column_list_rules: tuple = ()
    statement_rule: str = ""
    # whitespace= option (JSON): the grammar's rules are replaced by one layout (_json_rules)
    layouts: bool = False


# The per-grammar specification, in one place (adjust here when a grammar's
# terminal names change).
SPECS = {
    "json": ProfileSpec(
        fence_tags=("json", "JSON"),
        whitespace={"_WS": JSON_WHITESPACE},
        strings=("STRING",),
        layouts=True,
    ),
    "sql": ProfileSpec(
        fence_tags=("sql", "sqlite", "SQL"),
        comments=("LINE_COMMENT", "BLOCK_COMMENT"),
        # the final ";" carries the trailing whitespace and comments of the full grammar
        whitespace={"WS": _SPACE_OR_LINE, "FINAL_SEMICOLON": ";"},
        final=("FINAL_SEMICOLON",),
        quoted_identifiers=("DQ_IDENT", "BACKTICK_IDENT", "BRACKET_IDENT"),
        strings=("SQ_STRING",),
        table_rules=("table_or_subquery", "insert_stmt", "update_stmt", "delete_stmt", "in_rhs"),
        table_symbol="qualified_name",
        name_terminal="IDENT",
        quoted_name_terminal="DQ_IDENT",
        column_ref_rule="column_ref",
        column_expr_terminal="EXPR_IDENT",
        column_list_rules=("join_constraint", "_column_list_opt", "set_item"),
        statement_rule="statement",
    ),
    "javascript": ProfileSpec(
        fence_tags=("js", "javascript", "JavaScript"),
        comments=("LINE_COMMENT", "BLOCK_COMMENT"),
        # USP (the non-ASCII spaces: NBSP, BOM, Zs, LS/PS) cannot be dropped
        # like a comment (identifiers share its first two bytes); the profile
        # keeps only NBSP of it
        whitespace={"WS": _JS_WS, "NL": _JS_NL, "NL_EOS": _JS_NL, "USP": "\u00a0"},
        strings=("STRING", "STRING_STRICT"),
        unsplit=("--", "++"),
    ),
}

# The SQL dialects (cfgmask/frontends/sql_dialects.py): PostgreSQL has no `...` or [...]
# names; in MySQL "..." is a string, so names are quoted with backticks.
SPECS["sql:postgres"] = replace(SPECS["sql"], fence_tags=("sql", "postgresql", "postgres", "SQL"),
                                quoted_identifiers=("DQ_IDENT",),
                                column_list_rules=("join_constraint", "_column_list_opt", "set_item",
                                                   "_on_conflict_opt"))
SPECS["sql:mysql"] = replace(SPECS["sql"], fence_tags=("sql", "mysql", "SQL"),
                             comments=("LINE_COMMENT", "BLOCK_COMMENT", "HASH_COMMENT"),
                             quoted_identifiers=("BACKTICK_IDENT",), strings=("SQ_STRING", "DQ_STRING"),
                             quoted_name_terminal="BACKTICK_IDENT", quote_char="`",
                             column_expr_terminal="IDENT", column_list_rules=("join_constraint", "_column_list_opt"))


class Profile:
    """What a profile did to a grammar; attached to the grammar as ``grammar.profile``.

    ``name`` is the profile (``"generate"``), ``base`` the bundled grammar it
    was derived from, ``options`` the options it was built with and
    ``rewrites`` maps each changed terminal to its new pattern (``None`` for
    a dropped one).
    """

    def __init__(self, name, base, spec, options, rewrites):
        self.name = name
        self.base = base
        self.spec = spec
        self.options = dict(options)
        self.rewrites = dict(rewrites)
        self.fence = bool(options.get("fence"))
        tags = "|".join(re.escape(t) for t in spec.fence_tags)
        lead = _FENCE_LEAD % {"indent": options.get("max_indent", MAX_INDENT)}
        self.fence_open_pattern = f"{lead}```(?:{tags})?\n"
        self.fence_close_pattern = _FENCE_CLOSE % {"indent": options.get("max_indent", MAX_INDENT)}
        self._open_rx = re.compile(self.fence_open_pattern)
        self._close_rx = re.compile(f"(?:{self.fence_close_pattern})\\Z")

    def strip_fence(self, text):
        """``text`` (str or bytes) without the markdown fence around the document, if it has one.

        For a complete document of this profile the result is the document
        the full grammar accepts; an unfinished prefix loses its opening fence.
        """
        if not self.fence:
            return text
        if isinstance(text, (bytes, bytearray)):
            return self.strip_fence(bytes(text).decode("utf-8", errors="surrogateescape")).encode(
                "utf-8", errors="surrogateescape")
        m = self._open_rx.match(text)
        if m is None:
            return text
        text = text[m.end():]
        # greedy lexing makes the closing fence the leftmost match that runs to the end
        c = self._close_rx.search(text)
        return text[:c.start()] if c else text

    def __repr__(self):
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"<Profile {self.name} of {self.base}: {opts}>"


def strip_fence(grammar, text):
    """``text`` without ``grammar``'s generation fence (unchanged for a grammar without one)."""
    prof = getattr(grammar, "profile", None)
    return prof.strip_fence(text) if prof is not None else text


def apply(grammar, base, *, fence=True, max_quoted_ident=MAX_QUOTED_IDENT, max_string=MAX_STRING,
          max_indent=MAX_INDENT, tables=None, columns=None, statements=None, whitespace=None, max_key=MAX_KEY):
    """The generation profile of ``grammar``, a loaded bundled grammar (``base``: its name).

    ``fence``: allow a markdown fence around the document.  ``max_quoted_ident``
    / ``max_string``: length caps in characters (``None``: no cap; line breaks
    are refused inside them either way).  ``max_indent``: spaces allowed
    after a line break.  ``tables`` (SQL only): the names of the tables that
    exist; a table reference (``FROM``, ``JOIN``, ``INTO``, ``UPDATE``, ``IN``)
    must then name one of them (bare in any letter case when the name is a
    bare identifier, or quoted as the dialect quotes names: ``"order"``,
    MySQL ```a b```), so a query over a table the schema lacks cannot be
    written; a keyword or a name with a space can only be written quoted.

    ``columns`` (SQL only): the column names that exist (all tables'
    together); a column reference in an expression (``c``, ``x.c``) and a
    column list (``USING (...)``, ``INSERT INTO t (...)``, ``UPDATE ... SET
    c = ...``) may then only name one of them, bare or quoted as for
    ``tables``.  The qualifier ``x`` of ``x.c`` is not checked (it may be an
    alias), and ``s.t.c`` is refused.  ``statements`` (SQL only): the
    statement kinds allowed, from :data:`STATEMENT_KINDS` (``"all"``: every
    kind); ``None``: all.

    ``whitespace`` (JSON only): the layout, one of :data:`JSON_STYLES`:
    ``"compact"`` (the default: no whitespace at all), ``"pretty"``
    (``json.dumps(indent=2)``'s layout: after ``{``,
    ``[`` and ``,`` a line break and 2 spaces per level, before ``}`` and
    ``]`` a line break and the outer level's indentation, ``": "`` after a
    key, no other whitespace; ``{}`` and ``[]`` when empty; levels past
    :data:`JSON_MAX_DEPTH` keep its indentation) or ``"flexible"`` (one space or a line break and up to
    ``max_indent`` spaces wherever json.lark allows whitespace).  Under
    ``pretty`` and ``compact`` a key has at most ``max_key`` characters.

    Returns a new
    :class:`~cfgmask.Grammar` whose ``profile`` attribute is a
    :class:`Profile`; raises :class:`~cfgmask.GrammarError` when a terminal
    named in :data:`SPECS` is missing or an invariant of the module docstring
    cannot be established.
    """
    if base not in SPECS:
        raise ConfigurationError(f"no generation profile for {base!r}; profiles exist for {', '.join(SPECS)}")
    for opt, val in (("max_quoted_ident", max_quoted_ident), ("max_string", max_string)):
        if val is not None and (not isinstance(val, int) or val < 1):
            raise ConfigurationError(f"{opt} must be a positive int or None, not {val!r}")
    if not isinstance(max_indent, int) or max_indent < 0:
        raise ConfigurationError(f"max_indent must be an int >= 0, not {max_indent!r}")
    spec = SPECS[base]
    if spec.layouts:
        whitespace = JSON_DEFAULT_STYLE if whitespace is None else whitespace
        if whitespace not in JSON_STYLES:
            raise ConfigurationError(f"no JSON whitespace style {whitespace!r}; choose one of {', '.join(JSON_STYLES)}")
        if max_key is not None and (not isinstance(max_key, int) or max_key < 1):
            raise ConfigurationError(f"max_key must be a positive int or None, not {max_key!r}")
    elif whitespace is not None:
        raise ConfigurationError(f"the {base} profile takes no whitespace style (whitespace= is for json)")
    if columns is not None:
        columns = as_tuple(columns, "columns")
        if not spec.column_ref_rule:
            raise ConfigurationError(f"the {base} profile takes no columns")
        if not columns or not all(isinstance(c, str) and c for c in columns):
            raise ConfigurationError(f"columns must be a non-empty list of names, not {columns!r}")
    if statements is not None:
        statements = statement_kinds(statements, spec, grammar, base)
    if tables is not None:
        tables = as_tuple(tables, "tables")
        if not spec.table_rules:
            raise ConfigurationError(f"the {base} profile takes no tables")
        if not tables or not all(isinstance(t, str) and t for t in tables):
            raise ConfigurationError(f"tables must be a non-empty list of names, not {tables!r}")
    options = dict(fence=fence, max_quoted_ident=max_quoted_ident, max_string=max_string,
                   max_indent=max_indent, tables=tables)
    if spec.column_ref_rule:
        options.update(columns=columns, statements=statements)
    if spec.layouts:
        options.update(whitespace=whitespace, max_key=max_key)
    names = grammar.terminal_names
    index = {n: t for t, n in enumerate(names)}
    where = f"profile 'generate' of {base}"

    def need(name, role):
        if name not in index:
            raise GrammarError(
                f"{where}: the grammar has no terminal {name} (the {role} named in "
                f"cfgmask/frontends/profiles.py SPECS[{base!r}]); the grammar changed, so update SPECS. "
                f"Terminals: {', '.join(sorted(names))}", where=name, construct="profile spec")
        return name

    # ---- 1. the new patterns, by terminal name ---------------------------
    patterns = dict(zip(names, grammar.terminal_patterns))
    origin = {}    # profile terminal -> the full grammar's terminal it stands for
    dropped = set()
    for name in spec.comments:
        need(name, "comment")
        if not grammar.terminal_is_ignore[index[name]]:
            raise GrammarError(f"{where}: comment terminal {name} is not %ignore'd, so it cannot be "
                               "dropped", where=name, construct="profile spec")
        dropped.add(name)
    for name, template in spec.whitespace.items():
        guard = _TRAILING_GUARD.fullmatch(patterns[need(name, "whitespace")])
        patterns[name] = template % {"indent": max_indent} + (guard.group(1) if guard else "")
        origin[name] = name
    for group, cap in ((spec.quoted_identifiers, max_quoted_ident), (spec.strings, max_string)):
        for name in group:
            patterns[need(name, "quoted terminal")] = cap_pattern(patterns[name], cap, name)
            origin[name] = name
    used = {names[s] for r in range(grammar.n_rules) for s in grammar.rule_body(r) if s < grammar.n_terminals}
    for name in dropped:
        del patterns[name]
        if name in used:
            raise GrammarError(f"{where}: comment terminal {name} is used in a rule",
                               where=name, construct="profile spec")
    added = {}     # new terminal -> pattern (the table names)
    if tables is not None:
        added = _table_terminals(spec, tables, grammar, need, where)
        # TABLE_NAME exists only when some name can be written bare ("order", "a b" cannot)
        origin.update({n: o for n, o in ((TABLE_NAME, spec.name_terminal),
                                          (TABLE_NAME_QUOTED, spec.quoted_name_terminal)) if n in added})
        patterns.update(added)
    # rule-level restrictions (columns=, whitespace=): their new terminals
    layout = {}
    if columns is not None:
        layout.update(column_terminals(spec, columns, grammar, need))
    if spec.layouts and whitespace != "flexible":
        layout.update(json_layout_terminals(whitespace, cap_pattern(grammar.terminal_patterns[
            index[need("STRING", "string terminal")]], max_key, JSON_KEY)))
    for n, (p, o) in layout.items():
        if n in index:
            raise GrammarError(f"the grammar already has a terminal named {n}", where=n, construct="profile")
        patterns[n], origin[n] = p, need(o, "original of a profile terminal")

    # ---- 2. automata, guards and the invariants ---------------------------
    full = {n: terminal_dfa(p, n) for n, p in zip(names, grammar.terminal_patterns)}
    prof = {n: (terminal_dfa(p, n) if n in origin else full[n]) for n, p in patterns.items()}
    wb = frozenset(grammar.word_boundary)
    guards = lookahead_guards(full, prof, origin, dropped, wb, where, spec.unsplit, spec.final)
    for name, forbidden in guards.items():
        patterns[name] = f"(?:{patterns[name]})(?!{byte_class(forbidden)})"
        prof[name] = terminal_dfa(patterns[name], name)
    for name in set(origin) | set(guards):
        check_subset(prof[name], full[origin.get(name, name)], name, where)
    again = lookahead_guards(full, prof, origin, dropped, wb, where, spec.unsplit, spec.final)
    if again:  # the guards are a fixpoint by construction; this is the proof
        raise GrammarError(f"{where}: internal error, lookahead guards did not converge "
                           f"({', '.join(again)})", where=where, construct="profile")
    ignores = [n for n in prof if n in index and grammar.terminal_is_ignore[index[n]]]
    check_ignore_overlap(full, prof, origin, ignores, where)

    # ---- 3. the new grammar -------------------------------------------
    rewrites = {n: patterns[n] for n in names if n in patterns and patterns[n] != full[n].pattern}
    rewrites.update({n: None for n in dropped})
    rewrites.update({n: patterns[n] for n in added})
    rewrites.update({n: patterns[n] for n in layout})
    profile = Profile("generate", base, spec, options, rewrites)
    fence_terminals = (profile.fence_open_pattern, profile.fence_close_pattern) if fence else None
    g = _rebuild(grammar, patterns, dropped, fence_terminals,
                 tables=(spec, list(added)) if added else None, profile=profile)
    if spec.layouts and whitespace != "flexible":
        g = reshape(g, json_rules(named_rules(g), whitespace), {n: patterns[n] for n in layout})
    elif columns is not None or statements is not None:
        g = reshape(g, sql_rules(named_rules(g), spec, list(layout) if columns is not None else None, statements,
                                   spec.column_expr_terminal != spec.name_terminal, where),
                     {n: patterns[n] for n in layout})
    return g


TABLE_NAME = "TABLE_NAME"
TABLE_NAME_QUOTED = "TABLE_NAME_QUOTED"
TABLE_SYMBOL = "$table"


def _table_terminals(spec, tables, grammar, need, where):
    """``TABLE_NAME`` (the names that are bare identifiers, ASCII letters in any case; absent
    when there are none) and ``TABLE_NAME_QUOTED`` (every name in the dialect's quotes)."""
    bare_rx = re.compile(grammar.terminal_patterns[grammar.terminal_names.index(
        need(spec.name_terminal, "name terminal"))])
    need(spec.quoted_name_terminal, "quoted name terminal")
    if spec.table_symbol not in grammar.nonterminal_names:
        raise GrammarError(f"{where}: the grammar has no rule {spec.table_symbol} (SPECS table_symbol)",
                           where=spec.table_symbol, construct="profile spec")
    missing = [r for r in spec.table_rules if r not in grammar.nonterminal_names]
    if missing:
        raise GrammarError(f"{where}: the grammar has no rule {', '.join(missing)} (SPECS table_rules)",
                           where=missing[0], construct="profile spec")

    bare, quoted = name_alternatives(tables, bare_rx, spec.quote_char)
    out = {TABLE_NAME_QUOTED: quoted}
    if bare:
        out[TABLE_NAME] = bare
    return out


# ---------------------------------------------------------------------------
# Pattern rewriting
# ---------------------------------------------------------------------------

def cap_pattern(pattern, cap, name="?"):
    """``pattern`` with its outermost unbounded repeats capped at ``cap`` and no raw line breaks.

    Every ``*`` / ``+`` outside any group becomes ``{0,cap}`` / ``{1,cap}``
    (for ``"(?:...)*"`` that is the string's body), and every negated class
    ``[^...]`` also refuses ``\\n`` and ``\\r``.  Both only remove strings, so
    the result is a subset of ``pattern``; ``cap=None`` keeps the repeats.
    """
    out, i, depth, capped = [], 0, 0, 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if c == "[":
            j = _class_end(pattern, i)
            cls = pattern[i:j]
            if cls.startswith("[^"):
                cls = "[^\\n\\r" + cls[2:]
            out.append(cls)
            i = j
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c in "*+" and depth == 0 and cap is not None:
            out.append(f"{{{0 if c == '*' else 1},{cap}}}")
            capped += 1
            i += 1
            continue
        out.append(c)
        i += 1
    if cap is not None and not capped:
        raise GrammarError(f"terminal {name}: no unbounded repeat outside a group to cap in {pattern!r}",
                           where=name, construct="profile cap")
    return "".join(out)


def _class_end(p, i):
    """Index just after the character class that starts at ``p[i] == '['``."""
    j = i + 1
    if j < len(p) and p[j] == "^":
        j += 1
    if j < len(p) and p[j] == "]":
        j += 1
    while j < len(p) and p[j] != "]":
        j += 2 if p[j] == "\\" else 1
    if j >= len(p):
        raise GrammarError(f"unterminated character class in {p!r}", where=p, construct="profile cap")
    return j + 1


# ---------------------------------------------------------------------------
# The new grammar
# ---------------------------------------------------------------------------

def _rebuild(g, patterns, dropped, fence, tables=None, profile=None):
    """``g`` with ``patterns`` (by terminal name), without ``dropped``, optionally fenced,
    built as a ``type(g)`` whose ``profile`` is ``profile``.

    ``tables`` = ``(spec, names of the table terminals)``: the occurrences of
    ``spec.table_symbol`` in the rules of ``spec.table_rules`` become
    ``$table``, which derives exactly those terminals.
    """
    T = g.n_terminals
    kept = [t for t in range(T) if g.terminal_names[t] not in dropped]
    real = [t for t in kept if not g.terminal_is_ignore[t]]
    ign = [t for t in kept if g.terminal_is_ignore[t]]
    names = [g.terminal_names[t] for t in real]
    flags = [g.terminal_flags[t] for t in real]
    added = list(tables[1]) if tables else []
    fence_names = [FENCE_OPEN, FENCE_CLOSE] if fence is not None else []
    for n in added + fence_names:
        if n in g.terminal_names:
            raise GrammarError(f"the grammar already has a terminal named {n}", where=n, construct="profile")
    names += added + fence_names
    flags += [frozenset()] * (len(added) + len(fence_names))
    fence_patterns = dict(zip(fence_names, fence or ()))
    n_real = len(names)
    names += [g.terminal_names[t] for t in ign]
    flags += [g.terminal_flags[t] for t in ign]
    pats = [fence_patterns[n] if n in fence_patterns else patterns[n] for n in names]
    tid = {n: i for i, n in enumerate(names)}
    T2 = len(names)
    nt_names = [START_SYMBOL_NAME] + ([DOCUMENT_SYMBOL] if fence is not None else []) + \
        ([TABLE_SYMBOL] if tables else []) + g.nonterminal_names[1:]
    ntid = {n: T2 + i for i, n in enumerate(nt_names)}

    def sym(s):
        return tid[g.terminal_names[s]] if s < T else ntid[g.nonterminal_names[s - T]]

    start_body = [sym(s) for s in g.rule_body(0)]
    rules = []
    if fence is not None:
        rules.append((ntid[START_SYMBOL_NAME], [ntid[DOCUMENT_SYMBOL]]))
        rules.append((ntid[DOCUMENT_SYMBOL], [tid[FENCE_OPEN]] + start_body + [tid[FENCE_CLOSE]]))
        rules.append((ntid[DOCUMENT_SYMBOL], start_body))
    else:
        rules.append((ntid[START_SYMBOL_NAME], start_body))
    if tables:
        spec = tables[0]
        rules += [(ntid[TABLE_SYMBOL], [tid[n]]) for n in added]
        in_rules = {ntid[r] for r in spec.table_rules}
        target, table = ntid[spec.table_symbol], ntid[TABLE_SYMBOL]
    for r in range(1, g.n_rules):
        lhs, body = sym(int(g.rule_lhs[r])), [sym(s) for s in g.rule_body(r)]
        if tables and lhs in in_rules:
            body = [table if s == target else s for s in body]
        rules.append((lhs, body))
    at_start = {n for n, a in zip(g.terminal_names, g.terminal_at_start) if a}
    return type(g)(terminal_names=names, terminal_patterns=pats, terminal_flags=flags,
                   terminal_is_ignore=[False] * n_real + [True] * len(ign),
                   terminal_at_start=[n in at_start for n in names],
                   nonterminal_names=nt_names, rules=rules, start=g.start,
                   word_boundary=g.word_boundary, source=g.source,
                   rewritten_terminals={n: w for n, w in g.rewritten_terminals.items() if n in names},
                   profile=profile)
