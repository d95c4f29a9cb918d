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

import numpy as np

from cfgmask.errors import ConfigurationError, GrammarError

__all__ = ["Profile", "ProfileSpec", "SPECS", "PROFILE_NAMES", "apply", "builtin", "strip_fence",
           "JSON_WHITESPACE", "JSON_STYLES", "STATEMENT_KINDS", "READ_ONLY", "database_options"]

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


def builtin(name, profile="generate", *, start="start", dialect=None, **options):
    """Bundled grammar ``name`` (for ``sql``, of ``dialect``) under ``profile``
    (``"full"`` or ``"generate"``); see :func:`apply`.

    ``database=`` (``sql``, generation profile): a SQLite database file, a
    file of DDL, a :class:`sqlite3.Connection` or a
    :class:`~cfgmask.frontends.sql_schema.SqlSchema`; its tables and columns become
    ``tables=`` and ``columns=``, and ``statements=`` defaults to read-only
    (:data:`READ_ONLY`: ``SELECT``, ``WITH ... SELECT``, ``VALUES``).
    """
    from cfgmask.grammar import Grammar
    if options.get("database") is not None and profile == "generate":
        if name != "sql":
            raise ConfigurationError(f"database= is for the sql grammar, not {name!r}")
        given = [k for k in ("tables", "columns") if options.get(k) is not None]
        if given:
            raise ConfigurationError(f"database= gives the tables and columns: drop {'= and '.join(given)}=")
        options.update(database_options(options.pop("database"), options.get("statements")))
    elif "database" in options and options["database"] is None:
        del options["database"]
    if profile not in PROFILE_NAMES:
        raise ConfigurationError(f"no grammar profile {profile!r}; choose one of {', '.join(PROFILE_NAMES)}")
    if name not in Grammar.builtin_names():
        raise ConfigurationError(f"no builtin grammar {name!r}; choose one of {', '.join(Grammar.builtin_names())}")
    g = Grammar._builtin_full(name, start=start, dialect=dialect)
    if profile == "full":
        if options:
            raise ConfigurationError(f"the full grammar takes no profile options ({', '.join(options)})")
        return g
    spec_name = name if dialect in (None, "sqlite") else f"{name}:{dialect}"
    return apply(g, spec_name, **options)


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
        columns = _as_tuple(columns, "columns")
        if not spec.column_ref_rule:
            raise ConfigurationError(f"the {base} profile takes no columns")
        if not columns or not all(isinstance(c, str) and c for c in columns):
            raise ConfigurationError(f"columns must be a non-empty list of names, not {columns!r}")
    if statements is not None:
        statements = _statement_kinds(statements, spec, grammar, base)
    if tables is not None:
        tables = _as_tuple(tables, "tables")
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
        layout.update(_column_terminals(spec, columns, grammar, need))
    if spec.layouts and whitespace != "flexible":
        layout.update(_json_layout_terminals(whitespace, max_key, grammar.terminal_patterns[
            index[need("STRING", "string terminal")]]))
    for n, (p, o) in layout.items():
        if n in index:
            raise GrammarError(f"the grammar already has a terminal named {n}", where=n, construct="profile")
        patterns[n], origin[n] = p, need(o, "original of a profile terminal")

    # ---- 2. automata, guards and the invariants ---------------------------
    full = {n: _dfa(p, n) for n, p in zip(names, grammar.terminal_patterns)}
    prof = {n: (_dfa(p, n) if n in origin else full[n]) for n, p in patterns.items()}
    wb = frozenset(grammar.word_boundary)
    guards = _guards(full, prof, origin, dropped, wb, where, spec.unsplit, spec.final)
    for name, forbidden in guards.items():
        patterns[name] = f"(?:{patterns[name]})(?!{_byte_class(forbidden)})"
        prof[name] = _dfa(patterns[name], name)
    for name in set(origin) | set(guards):
        _check_subset(prof[name], full[origin.get(name, name)], name, where)
    again = _guards(full, prof, origin, dropped, wb, where, spec.unsplit, spec.final)
    if again:  # the guards are a fixpoint by construction; this is the proof
        raise GrammarError(f"{where}: internal error, lookahead guards did not converge "
                           f"({', '.join(again)})", where=where, construct="profile")
    ignores = [n for n in prof if n in index and grammar.terminal_is_ignore[index[n]]]
    _check_ignore_overlap(full, prof, origin, ignores, where)

    # ---- 3. the new grammar -------------------------------------------
    rewrites = {n: patterns[n] for n in names if n in patterns and patterns[n] != full[n].pattern}
    rewrites.update({n: None for n in dropped})
    rewrites.update({n: patterns[n] for n in added})
    rewrites.update({n: patterns[n] for n in layout})
    profile = Profile("generate", base, spec, options, rewrites)
    fence_terminals = (profile.fence_open_pattern, profile.fence_close_pattern) if fence else None
    g = _rebuild(grammar, patterns, dropped, fence_terminals,
                 tables=(spec, list(added)) if added else None)
    if spec.layouts and whitespace != "flexible":
        g = _reshape(g, _json_rules(_named(g), whitespace), {n: patterns[n] for n in layout})
    elif columns is not None or statements is not None:
        g = _reshape(g, _sql_rules(_named(g), spec, list(layout) if columns is not None else None, statements,
                                   spec.column_expr_terminal != spec.name_terminal, where),
                     {n: patterns[n] for n in layout})
    g.profile = profile
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

    bare, quoted = _name_alternatives(tables, bare_rx, spec.quote_char)
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


def _byte_class(byte_values):
    return "[" + "".join(f"\\x{b:02x}" for b in sorted(byte_values)) + "]"


def _dfa(pattern, name):
    from cfgmask.automata import compile_regex
    return compile_regex(pattern, name=name)


# ---------------------------------------------------------------------------
# Automaton checks (invariants 1-4 of the module docstring)
# ---------------------------------------------------------------------------

def _check_subset(sub, sup, name, where):
    """Raise unless every lexeme ``sub`` accepts (in every follow context) ``sup`` accepts too."""
    seen, todo = {(0, 0)}, [(0, 0)]
    while todo:
        a, b = todo.pop()
        if sub.accepting[a]:
            if not sup.accepting[b] or (sup.follow_forbidden_at_eos[b] and not sub.follow_forbidden_at_eos[a]):
                raise GrammarError(f"{where}: the new pattern of {name} accepts a lexeme the full "
                                   f"grammar's does not", where=name, construct="profile subset")
            fb = sup.follow_forbidden[b]
            if fb and not set(fb) <= set(sub.follow_forbidden[a] or b""):
                raise GrammarError(f"{where}: the new pattern of {name} may end where the full "
                                   f"grammar's may not", where=name, construct="profile subset")
        ra, rb = sub.trans[a], sup.trans[b]
        live = np.flatnonzero(ra >= 0)
        if (rb[live] < 0).any():
            raise GrammarError(f"{where}: the new pattern of {name} accepts lexemes the full "
                               f"grammar's does not", where=name, construct="profile subset")
        for x in live:
            p = (int(ra[x]), int(rb[x]))
            if p not in seen:
                seen.add(p)
                todo.append(p)


def _first_bytes(dfa):
    return set(np.flatnonzero(dfa.trans[0] >= 0).tolist())


def _ends_in(dfa, byte_set):
    """Per state: is every byte that leads into it in ``byte_set``? (So a lexeme ending there does.)"""
    into = np.zeros((dfa.n_states, 256), dtype=bool)
    src, byte = np.nonzero(dfa.trans >= 0)
    into[dfa.trans[src, byte], byte] = True
    ok = np.zeros(256, dtype=bool)
    ok[list(byte_set)] = True
    return [bool(row.any()) and not (row & ~ok).any() for row in into]


def _guards(full, prof, origin, dropped, wb, where, unsplit=(), final=()):
    """Bytes each profile terminal must not be followed by (invariants 2 and 3): ``{name: set}``.

    Terminals in ``final`` end the document, so they need no guard."""
    guards = {}
    # 2. same cuts: pair every profile terminal v with the original u of every replaced or
    # added terminal, where both can read the same bytes; where v may end and u goes on,
    # forbid that byte after v (unless the word boundary already does).
    for u in sorted(set(origin.values())):
        fu = _first_bytes(full[u])
        for v, dv in prof.items():
            if fu & _first_bytes(dv):
                for b in _lost_continuations(dv, full[u], prof, v, u, wb, where):
                    guards.setdefault(v, set()).add(b)
    # 3. no hidden comments
    for c in sorted(dropped):
        cd = full[c]
        for b1 in np.flatnonzero(cd.trans[0] >= 0).tolist():
            s1 = int(cd.trans[0, b1])
            if cd.accepting[s1]:
                # a one-byte comment start (MySQL's "#") is out of the profile
                # when no profile lexeme starts with that byte
                starts = [v for v, dv in prof.items() if dv.trans[0, b1] >= 0]
                if starts:
                    raise GrammarError(f"{where}: comment {c} can be one byte long and terminal "
                                       f"{starts[0]} starts with that byte; it cannot be kept out of "
                                       "the profile", where=c, construct="profile comment")
                continue
            for b2 in np.flatnonzero(cd.trans[s1] >= 0).tolist():
                for v, dv in prof.items():
                    s = int(dv.trans[0, b1])
                    if s < 0:
                        continue
                    if dv.trans[s, b2] >= 0:
                        raise GrammarError(
                            f"{where}: terminal {v} has lexemes starting with {bytes([b1, b2])!r}, "
                            f"where the full grammar starts the comment {c}",
                            where=v, construct="profile comment")
                    if dv.can_end(s, b2) and not (b1 in wb and b2 in wb):
                        if b2 >= 0x80:
                            raise GrammarError(f"{where}: cannot forbid non-ASCII byte {b2:#x} after "
                                               f"{v}", where=v, construct="profile comment")
                        guards.setdefault(v, set()).add(b2)
    # 5. the engine's own tokens are never split: a one-byte lexeme "a" is not
    # followed by "b" when the engine reads "ab" as one token (JavaScript "--").
    for pair in unsplit:
        b1, b2 = pair.encode()
        for v, dv in prof.items():
            s = int(dv.trans[0, b1])
            if s >= 0 and dv.can_end(s, b2):
                guards.setdefault(v, set()).add(b2)
    for name in final:
        guards.pop(name, None)
    return guards


def _lost_continuations(v, u, prof, vname, uname, wb, where):
    """ASCII bytes after which a lexeme of ``v`` may end while ``u`` (an original) goes on.

    A lexeme ``x`` both read: if ``v`` may end at ``x`` before byte ``b`` and
    cannot read ``b`` itself, while ``u`` can, then greedy lexing in the full
    grammar would go on where the profile stops; forbidding ``b`` after ``v``
    removes that case.  Not needed where the word boundary already forbids a
    lexeme starting with ``b`` after ``x``.  Non-ASCII ``b`` cannot be
    forbidden by a lookahead: refused unless no profile terminal can start
    with a character ``u`` can go on with.
    """
    out = set()
    in_wb = _ends_in(v, wb) if wb else [False] * v.n_states
    seen, todo = {(0, 0)}, [(0, 0)]
    while todo:
        a, b = todo.pop()
        rv, ru = v.trans[a], u.trans[b]
        if v.accepting[a]:
            lost = np.flatnonzero((ru >= 0) & (rv < 0)).tolist()
            for x in lost:
                if not v.can_end(a, x) or (in_wb[a] and x in wb):
                    continue
                if x < 0x80:
                    out.add(x)
                elif _char_can_start_lexeme(u, int(ru[x]), x, prof):
                    raise GrammarError(
                        f"{where}: a lexeme of {vname} may end where the full grammar's {uname} goes on "
                        f"with a non-ASCII character that starts a profile lexeme",
                        where=vname, construct="profile cut")
        for x in np.flatnonzero((rv >= 0) & (ru >= 0)).tolist():
            p = (int(rv[x]), int(ru[x]))
            if p not in seen:
                seen.add(p)
                todo.append(p)
    return out


def _char_can_start_lexeme(u, su, lead, prof):
    """Can some profile terminal start with a character (lead byte ``lead``) that ``u`` reads from ``su``?"""
    n_cont = 1 if lead < 0xE0 else 2 if lead < 0xF0 else 3
    for dv in prof.values():
        sv = int(dv.trans[0, lead])
        if sv < 0:
            continue
        frontier = {(su, sv)}
        for _ in range(n_cont):
            nxt = set()
            for a, b in frontier:
                for x in range(0x80, 0xC0):
                    na, nb = int(u.trans[a, x]), int(dv.trans[b, x])
                    if na >= 0 and nb >= 0:
                        nxt.add((na, nb))
            frontier = nxt
        if frontier:
            return True
    return False


def _check_ignore_overlap(full, prof, origin, ignores, where):
    """Invariant 4: a profile %ignore lexeme that an original terminal accepts, its replacement accepts."""
    for v, u in origin.items():
        if v in ignores:
            continue
        for i in ignores:
            di, du, dp = prof[i], full[u], prof[v]
            seen, todo = {(0, 0, 0)}, [(0, 0, 0)]
            while todo:
                a, b, c = todo.pop()
                if di.accepting[a] and du.accepting[b] and (c < 0 or not dp.accepting[c]):
                    raise GrammarError(
                        f"{where}: a {i} lexeme that the full grammar scans as {u} "
                        f"(where {u} is expected) is not a {v} lexeme of the profile",
                        where=v, construct="profile ignore overlap")
                for x in np.flatnonzero((di.trans[a] >= 0) & (du.trans[b] >= 0)).tolist():
                    p = (int(di.trans[a, x]), int(du.trans[b, x]), int(dp.trans[c, x]) if c >= 0 else -1)
                    if p not in seen:
                        seen.add(p)
                        todo.append(p)


# ---------------------------------------------------------------------------
# The new grammar
# ---------------------------------------------------------------------------

def _rebuild(g, patterns, dropped, fence, tables=None):
    """``g`` with ``patterns`` (by terminal name), without ``dropped``, optionally fenced.

    ``tables`` = ``(spec, names of the table terminals)``: the occurrences of
    ``spec.table_symbol`` in the rules of ``spec.table_rules`` become
    ``$table``, which derives exactly those terminals.
    """
    from cfgmask.grammar import START_SYMBOL_NAME, Grammar

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
    out = Grammar(terminal_names=names, terminal_patterns=pats, terminal_flags=flags,
                  terminal_is_ignore=[False] * n_real + [True] * len(ign),
                  terminal_at_start=[n in at_start for n in names],
                  nonterminal_names=nt_names, rules=rules, start=g.start,
                  word_boundary=g.word_boundary, source=g.source)
    out.rewritten_terminals = {n: w for n, w in g.rewritten_terminals.items() if n in names}
    return out


# ---------------------------------------------------------------------------
# Rule-level restrictions: SQL columns and statement kinds, JSON layouts
# ---------------------------------------------------------------------------
# These only remove rule alternatives or put a nonterminal whose terminals are
# sub-languages of the original's in place of one, so the profile stays a
# sublanguage of the full grammar lexeme by lexeme (the new terminals pass the
# same subset and cut checks as the others in apply()).

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


def _column_terminals(spec, columns, grammar, need):
    """``COLUMN_NAME`` / ``COLUMN_EXPR`` (bare names, where the grammar's name / expression
    identifier accepts them; absent when none does) and ``COLUMN_NAME_QUOTED`` (every name
    in the dialect's quotes): ``{name: (pattern, original terminal)}``."""
    out = {}
    bare_terms = [(COLUMN_NAME, spec.name_terminal)]
    if spec.column_expr_terminal != spec.name_terminal:
        bare_terms.append((COLUMN_EXPR, spec.column_expr_terminal))
    for new, orig in bare_terms:
        rx = re.compile(grammar.terminal_patterns[grammar.terminal_names.index(need(orig, "column terminal"))])
        bare, _ = _name_alternatives(columns, rx, spec.quote_char)
        if bare:
            out[new] = (bare, orig)
    _, quoted = _name_alternatives(columns, None, spec.quote_char)
    out[COLUMN_NAME_QUOTED] = (quoted, need(spec.quoted_name_terminal, "quoted name terminal"))
    return out


def _name_alternatives(names, bare_rx, quote_char):
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


def _named(g):
    """``g``'s rules as ``[(lhs name, [symbol names])]`` (rule 0 first)."""
    return [(g.symbol_name(int(g.rule_lhs[r])), [g.symbol_name(s) for s in g.rule_body(r)])
            for r in range(g.n_rules)]


def _reshape(g, rules, new_terminals=()):
    """A grammar with ``g``'s terminals (plus ``new_terminals``: ``{name: pattern}``) and the named
    ``rules`` (rule 0 the start rule); nonterminals no rule reaches from the start and real
    terminals no rule uses are left out."""
    from cfgmask.grammar import Grammar
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
    out = Grammar(terminal_names=[t[0] for t in terms], terminal_patterns=[t[1] for t in terms],
                  terminal_flags=[t[2] for t in terms], terminal_is_ignore=[t[3] for t in terms],
                  terminal_at_start=[bool(t[4]) for t in terms], nonterminal_names=nts,
                  rules=[(sym[lhs], [sym[s] for s in body]) for lhs, body in rules],
                  start=g.start, word_boundary=g.word_boundary, source=g.source)
    out.rewritten_terminals = {n: w for n, w in g.rewritten_terminals.items() if n in sym}
    return out


def _sql_rules(rules, spec, columns, statements, has_expr_terminal, where):
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


def _json_rules(rules, style):
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


def _json_layout_terminals(style, max_key, string_pattern):
    """``{name: (pattern, original terminal)}`` of the JSON layout's new terminals."""
    out = {JSON_KEY: (cap_pattern(string_pattern, max_key, JSON_KEY), "STRING")}
    if style == "pretty":
        out[JSON_SPACE] = ("[ ]", "_WS")
        for k in range(JSON_MAX_DEPTH + 2):
            out[_ws_name(k)] = ("\\n" + (f"[ ]{{{JSON_INDENT * k}}}" if k else ""), "_WS")
    return out


def _as_tuple(value, what):
    """``tuple(value)``, or the option named in a ConfigurationError when it is no collection."""
    try:
        return tuple(value)
    except TypeError:
        raise ConfigurationError(f"{what} must be a list of names, not {value!r:.40}") from None


def _statement_kinds(statements, spec, grammar, base):
    """``statements`` checked: a tuple of :data:`STATEMENT_KINDS` the grammar has (``"all"``: all of them)."""
    if not spec.statement_rule:
        raise ConfigurationError(f"the {base} profile takes no statements")
    if isinstance(statements, str):
        statements = [k.strip() for k in statements.split(",") if k.strip()]
    statements = _as_tuple(statements, "statements")
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
    from cfgmask.frontends.sql_schema import read_schema
    schema = read_schema(database)
    return dict(tables=schema.table_names, columns=schema.column_names,
                statements=READ_ONLY if statements is None else statements)
