"""Lark grammar text -> flat context-free grammar over integer symbols.

Lark itself loads the grammar, so templates, ``%import`` (including relative
imports), aliases, ``?rule``/``_rule`` inlining, ``~n..m``, string and regex
flags all mean exactly what they mean in Lark.  We then keep only what decides
*which documents are accepted*: rules, terminal patterns and ``%ignore``.
Priorities, aliases and tree shaping are dropped on purpose (they never change
the language).

Invariants of a :class:`Grammar`:

* symbols are ints: terminals ``0..T-1``, nonterminals ``T..T+N-1``;
* rule 0 is the augmented start rule ``$start -> <start>``;
* ``rhs`` holds every rule's right side back to back, each followed by the
  sentinel ``-(r+1)``, so an Earley item is a single index into ``rhs`` and
  "dot at the end" is ``rhs[p] < 0``;
* every remaining rule is productive and reachable from the start symbol,
  every terminal is used by a remaining rule or is ``%ignore``d;
* ``nullable[s]`` is True iff symbol ``s`` derives the empty string
  (terminals never do: empty terminals are refused when their automaton is
  built).
"""

import os
import re
import warnings
from pathlib import Path

import numpy as np

from cfgmask.errors import GrammarError, GrammarWarning

START_SYMBOL_NAME = "$start"

# A comment Lark and llguidance both ignore; see docs/architecture.md "Word boundary".
_WORD_BOUNDARY_PRAGMA = re.compile(r"^[ \t]*//[ \t]*%cfgmask[ \t]+word_boundary[ \t]+(\S+)[ \t]*$", re.M)

# `// %cfgmask not_before CLASS NAME...`: the named terminals' lexemes may not end
# right before a byte of CLASS (a trailing (?!CLASS) that only cfgmask adds, so
# the text stays in the regex subset Lark and llguidance share).
_NOT_BEFORE_PRAGMA = re.compile(
    r"^[ \t]*//[ \t]*%cfgmask[ \t]+not_before[ \t]+(\S+)((?:[ \t]+\w+)+)[ \t]*$", re.M)

# `// %cfgmask at_start NAME...`: the named terminals may only be the document's
# first lexeme, with no ignored lexeme (white space, a comment) before them: a
# hashbang line.  Lark and llguidance read it as a comment and allow them after
# ignored text too; cfgmask's runtime leaves them out of every lexer start
# state but the very first one (docs/architecture.md).
_AT_START_PRAGMA = re.compile(r"^[ \t]*//[ \t]*%cfgmask[ \t]+at_start((?:[ \t]+\w+)+)[ \t]*$", re.M)

_BUILTIN_NAMES = ("json", "sql", "javascript")

# Terminals of Lark's common.lark whose regex only means what Lark means under
# ``re.match`` (leftmost, lazy) semantics: as a full-match language they accept
# too much (``"a"b"`` for ESCAPED_STRING; a comment running past its first
# ``*/`` for C_COMMENT) or need a lookbehind.  Each is replaced by a regex whose
# full-match language is exactly the set of lexemes Lark's lexer produces;
# tests/test_grammar.py checks the equivalence exhaustively on short strings.
LARK_IDIOMS = {
    r'".*?(?<!\\)(\\\\)*?"': (r'"(?:[^"\\\n]|\\[^\n])*"',
                                  "ESCAPED_STRING: the string ends at the first unescaped quote"),
    "/\\*(.|\n)*?\\*/": (r"/\*[^*]*\*+(?:[^/*][^*]*\*+)*/",
                            "C_COMMENT: the comment ends at the first */"),
}
_ESCAPED_STRING_RX = r'".*?(?<!\\)(\\\\)*?"'


def _builtin_dir():
    """Where the bundled ``*.lark`` files live (installed package or source tree)."""
    try:
        from importlib.resources import files
        # a namespace package's files() is a MultiplexedPath, whose str() is not a
        # path; the child it returns is a real one
        probe = files("cfgmask.grammars").joinpath("json.lark")
        if probe.is_file():
            return Path(str(probe)).parent
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parent.parent / "grammars"


def _pragma_terminals(pragma, names, g, lark_terminals):
    """The indices in ``g`` of the terminals a pragma names (``names``, its text).

    A name that Lark does not know is an error; a terminal that normalisation
    dropped (unreachable from ``start``) is skipped."""
    for name in names.split():
        if name not in lark_terminals:
            raise GrammarError(f"{pragma} pragma: no terminal named {name}", where=name,
                               construct="pragma")
        if name in g.terminal_names:
            yield g.terminal_names.index(name)


def _apply_not_before(g, text, lark_terminals):
    """Apply the ``not_before`` pragmas of ``text`` to ``g``'s terminal patterns."""
    for m in _NOT_BEFORE_PRAGMA.finditer(text):
        byte_class = m.group(1)
        word_boundary_bytes(byte_class, "not_before")  # validates the class (GrammarError)
        for i in _pragma_terminals("not_before", m.group(2), g, lark_terminals):
            g.terminal_patterns[i] = f"(?:{g.terminal_patterns[i]})(?!{byte_class})"


def _apply_at_start(g, text, lark_terminals):
    """Mark the terminals named by the ``at_start`` pragmas of ``text`` in ``g``
    (an ``%ignore``d one, which may go anywhere, is an error)."""
    for m in _AT_START_PRAGMA.finditer(text):
        for i in _pragma_terminals("at_start", m.group(1), g, lark_terminals):
            if g.terminal_is_ignore[i]:
                raise GrammarError(f"at_start pragma: {g.terminal_names[i]} is %ignore'd, so it may "
                                   f"go anywhere", where=g.terminal_names[i], construct="pragma")
            g.terminal_at_start[i] = True


def _load_warnings(parser, source):
    """The warnings (:class:`GrammarWarning`) of a loaded Lark grammar, as ``[[where, message]]``."""
    from cfgmask.frontends.lark_loader import ungrouped_alternations
    where = source or "grammar"
    out = []
    for name, piece, joined in ungrouped_alternations(parser):
        shown = joined if len(joined) <= 80 else joined[:77] + "..."
        out.append([name, f"{where}: terminal {name}: the piece /{piece}/ has a top-level '|' and is "
                          f"joined with other pieces; Lark does not group it (lark-parser/lark#1633), "
                          f"so Lark, and cfgmask with it, read the terminal as /{shown}/, while "
                          f"llguidance reads the alternatives as one group. Write (?:{piece}) if "
                          f"you mean the group."])
    return out


def _warn(g):
    for where, message in g.load_warnings:
        warnings.warn(GrammarWarning(message, where=where), stacklevel=3)


def word_boundary_bytes(byte_class, pragma="word_boundary"):
    """Bytes ``b`` with ``re.fullmatch(byte_class, chr(b))`` (``\\x80-\\xff`` means those bytes)."""
    try:
        rx = re.compile(byte_class)
    except re.error as e:
        raise GrammarError(f"{pragma}: {byte_class!r} is not a valid regex class ({e})",
                           where=pragma, construct="pragma") from None
    return bytes(b for b in range(256) if rx.fullmatch(chr(b)))


_DEFAULT = object()  # "the package default" for keyword arguments whose None means "no limit"


class Grammar:
    """A Lark grammar normalised to a flat CFG plus terminal regexes.

    Build one with :meth:`from_lark`, :meth:`from_file` or :meth:`builtin`.
    The object is immutable after construction; see the module docstring for
    the invariants the runtime relies on.
    """

    # True when whoever built the grammar also built its terminal automata and
    # builds them again in any process (cfgmask.frontends.json_schema): its lexer tables
    # and slice candidates then stay off the disk cache (docs/compile.md)
    terminal_automata_prebuilt = False
    # [[where, message]] of the GrammarWarnings from_lark emits (kept with a cached grammar)
    load_warnings = ()

    def __init__(self, *, terminal_names, terminal_patterns, terminal_is_ignore,
                 nonterminal_names, rules, start, word_boundary=b"", source=None,
                 terminal_flags=None, terminal_at_start=None):
        self.terminal_names = list(terminal_names)
        # Python regexes, Lark's flags already inline ("(?i:...)"); the flags are
        # also listed separately for display
        self.terminal_patterns = list(terminal_patterns)
        self.terminal_flags = [frozenset(f) for f in (terminal_flags or [()] * len(self.terminal_names))]
        self.terminal_is_ignore = np.asarray(terminal_is_ignore, dtype=np.bool_)
        # only the document's first lexeme may be one of these (the at_start pragma)
        self.terminal_at_start = (np.zeros(len(self.terminal_names), dtype=np.bool_)
                                  if terminal_at_start is None
                                  else np.array(terminal_at_start, dtype=np.bool_))
        self.nonterminal_names = list(nonterminal_names)
        self.start = start
        self.word_boundary = bytes(word_boundary)
        self.source = source
        self.rewritten_terminals = {}  # name -> why its Lark regex was replaced (LARK_IDIOMS)
        self.profile = None  # a cfgmask.frontends.profiles.Profile for generation profiles (builtin(profile=...))
        T = len(self.terminal_names)
        lhs, starts, rhs = [], [], []
        for r, (a, body) in enumerate(rules):
            lhs.append(a)
            starts.append(len(rhs))
            rhs.extend(body)
            rhs.append(-(r + 1))
        self.rule_lhs = np.asarray(lhs, dtype=np.int32)
        self.rule_rhs_start = np.asarray(starts, dtype=np.int32)
        self.rhs = np.asarray(rhs, dtype=np.int32)
        self.start_rule = 0
        self.nullable = _nullable(T + len(self.nonterminal_names), rules)

    # ---- sizes -------------------------------------------------------
    @property
    def n_terminals(self):
        return len(self.terminal_names)

    @property
    def n_nonterminals(self):
        return len(self.nonterminal_names)

    @property
    def n_rules(self):
        return len(self.rule_lhs)

    def symbol_name(self, s):
        T = self.n_terminals
        return self.terminal_names[s] if s < T else self.nonterminal_names[s - T]

    def rule_body(self, r):
        """The right-hand side of rule ``r`` as a list of symbol ids."""
        p = int(self.rule_rhs_start[r])
        out = []
        while self.rhs[p] >= 0:
            out.append(int(self.rhs[p]))
            p += 1
        return out

    def rules_text(self):
        """Readable dump, one rule per line (for ``cfgmask check`` and debugging)."""
        lines = []
        for r in range(self.n_rules):
            body = " ".join(self.symbol_name(s) for s in self.rule_body(r)) or "<empty>"
            lines.append(f"{self.symbol_name(int(self.rule_lhs[r]))} -> {body}")
        return "\n".join(lines)

    def __repr__(self):
        return (f"<Grammar start={self.start!r} rules={self.n_rules} "
                f"terminals={self.n_terminals} nonterminals={self.n_nonterminals}>")

    # ---- constructors -------------------------------------------------
    @classmethod
    def from_lark(cls, text, start="start", *, import_paths=(), word_boundary=None, source=None):
        """Load Lark grammar ``text`` with the ``lark`` package and normalise it.

        ``word_boundary`` is a regex byte class (see docs/architecture.md);
        ``None`` means "use the ``// %cfgmask word_boundary CLASS`` pragma in
        the text if there is one".  Raises :class:`GrammarError` naming the
        rule or terminal when the grammar cannot be turned into an exact mask.
        """
        from cfgmask.frontends.lark_loader import load

        if not isinstance(text, str):
            raise GrammarError(f"grammar text must be str, not {type(text).__name__}",
                               where=source, construct="input")
        if not isinstance(start, str):
            raise GrammarError("start must be a single rule name", where=str(start), construct="start")
        if isinstance(import_paths, (str, bytes)) or not all(
                isinstance(p, (str, os.PathLike)) or callable(p) for p in _iter_or_none(import_paths)):
            raise GrammarError("import_paths must be a list of directory paths (or Lark loaders)",
                               where=source, construct="input")
        if word_boundary is not None and not isinstance(word_boundary, str):
            raise GrammarError(f"word_boundary must be a regex class as str, not {type(word_boundary).__name__}",
                               where="word_boundary", construct="input")
        # a disk-cache hit skips Lark entirely (see grammar_cache.py)
        from cfgmask.frontends import grammar_cache
        key = grammar_cache.grammar_key(text, start, import_paths, word_boundary, source)
        cached = grammar_cache.load(key)
        if cached is not None:
            _warn(cached)
            return cached
        # Lark loads it; every failure (bad regex, missing %import, runaway templates,
        # deep nesting) comes out as a GrammarError (see lark_loader)
        parser, used_files = load(text, start, [p if callable(p) else str(p) for p in import_paths],
                                  source)
        if word_boundary is None:
            m = _WORD_BOUNDARY_PRAGMA.search(text)
            word_boundary = m.group(1) if m else ""
        wb = word_boundary_bytes(word_boundary) if word_boundary else b""
        g = _normalise(parser, start, wb, source)
        lark_terminals = {t.name for t in parser.terminals}
        _apply_not_before(g, text, lark_terminals)
        _apply_at_start(g, text, lark_terminals)
        g.load_warnings = _load_warnings(parser, source)
        grammar_cache.store(key, g, used_files)
        _warn(g)
        return g

    @classmethod
    def from_file(cls, path, start="start", *, word_boundary=None):
        """Load a ``.lark`` file; relative ``%import``s resolve next to it."""
        if not isinstance(path, (str, os.PathLike)):
            raise GrammarError(f"grammar path must be str or a path, not {type(path).__name__}",
                               where=str(path), construct="input")
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise GrammarError(f"cannot read grammar file {path}: {e.strerror}",
                               where=str(path), construct="file") from e
        except UnicodeDecodeError as e:
            raise GrammarError(f"grammar file {path} is not UTF-8 text (byte {e.start}: {e.reason})",
                               where=str(path), construct="encoding") from e
        return cls.from_lark(text, start=start, import_paths=[str(path.parent)],
                             word_boundary=word_boundary, source=str(path))

    @classmethod
    def from_json_schema(cls, schema, *, whitespace=None, strict=True, escapes=None,
                         max_work=_DEFAULT, time_limit_s=_DEFAULT, property_order=None):
        """A grammar whose language is exactly the instances valid under a JSON schema.

        ``schema``: a dict, JSON text or a path.  ``whitespace``: ``"compact"``,
        ``"pretty"`` or ``"flexible"`` (default:
        ``cfgmask.frontends.json_schema.DEFAULT_WHITESPACE``).  ``strict=False``
        over-approximates what cannot be compiled exactly, with a warning.
        ``escapes``: ``"canonical"`` (default: strings as ``json.dumps`` spells
        them) or ``"any"`` (every RFC 8259 spelling).  ``max_work`` /
        ``time_limit_s``: the compile budget (default
        ``cfgmask.frontends.json_schema.DEFAULT_MAX_WORK`` / ``DEFAULT_TIME_LIMIT_S``,
        ``None``: no limit); past it :class:`~cfgmask.CompileBudgetExceeded`
        is raised.  ``property_order``: ``"written"`` (default: llguidance's
        stable order, branches merged as written) or ``"own-first"``.  See
        :mod:`cfgmask.frontends.json_schema` and docs/json-schema.md.
        """
        from cfgmask.frontends import json_schema
        ws = json_schema.DEFAULT_WHITESPACE if whitespace is None else whitespace
        esc = json_schema.DEFAULT_ESCAPES if escapes is None else escapes
        mw = json_schema.DEFAULT_MAX_WORK if max_work is _DEFAULT else max_work
        tl = json_schema.DEFAULT_TIME_LIMIT_S if time_limit_s is _DEFAULT else time_limit_s
        po = json_schema.DEFAULT_PROPERTY_ORDER if property_order is None else property_order
        return json_schema.compile_schema(schema, whitespace=ws, strict=strict, escapes=esc,
                                          max_work=mw, time_limit_s=tl, property_order=po)

    @classmethod
    def builtin(cls, name, profile=None, *, dialect=None, **options):
        """One of the bundled grammars: ``"json"``, ``"sql"`` or ``"javascript"``.

        ``profile=None`` or ``"full"``: the whole language.  ``profile="generate"``:
        the generation profile (no comments, bounded whitespace, capped quoted
        names and strings, an optional markdown fence; ``options`` as in
        :func:`cfgmask.frontends.profiles.apply`).  :meth:`document` strips the fence.

        ``dialect`` (``"sql"`` only): ``"sqlite"`` (the default), ``"postgres"``
        or ``"mysql"``; each accepts what that engine's parser accepts for the
        statements the grammar covers (docs/grammars.md).  The dialects share
        ``grammars/sql.lark`` as their base (see :mod:`cfgmask.frontends.sql_dialects`).
        """
        from cfgmask.errors import ConfigurationError
        if name not in _BUILTIN_NAMES:
            raise ConfigurationError(f"no builtin grammar {name!r}; choose one of {', '.join(_BUILTIN_NAMES)}")
        if dialect is not None:
            from cfgmask.frontends.sql_dialects import DIALECTS
            if name != "sql":
                raise ConfigurationError(f"dialect= is for the sql grammar, not {name!r}")
            if dialect not in DIALECTS:
                raise ConfigurationError(f"no SQL dialect {dialect!r}; choose one of {', '.join(DIALECTS)}")
        if profile is not None:
            from cfgmask.frontends import profiles
            return profiles.builtin(name, profile, dialect=dialect, **options)
        if options:
            raise ConfigurationError(f"profile options ({', '.join(options)}) need profile='generate'")
        return cls._builtin_full(name, dialect=dialect)

    @classmethod
    def _builtin_full(cls, name, start="start", dialect=None):
        if dialect is None or dialect == "sqlite":
            return cls.from_file(_builtin_dir() / f"{name}.lark", start=start)
        from cfgmask.frontends.sql_dialects import dialect_text
        return cls.from_lark(dialect_text(dialect, _builtin_dir()), start=start,
                             source=f"sql.lark + sql_{dialect}.lark")

    @staticmethod
    def builtin_text(name, dialect=None):
        """The Lark text of a bundled grammar (for ``sql``, of ``dialect``)."""
        if name == "sql":
            from cfgmask.frontends.sql_dialects import dialect_text, DEFAULT_DIALECT
            return dialect_text(dialect or DEFAULT_DIALECT, _builtin_dir())
        return (_builtin_dir() / f"{name}.lark").read_text(encoding="utf-8")

    def document(self, text):
        """``text`` (str or bytes) without the generation profile's markdown fence, if any.

        The identity for grammars without a fence; for a complete document of
        a generation profile, the document its full grammar accepts.
        """
        return self.profile.strip_fence(text) if self.profile is not None else text

    @staticmethod
    def builtin_names():
        return _BUILTIN_NAMES

    @staticmethod
    def builtin_path(name):
        return _builtin_dir() / f"{name}.lark"


def _iter_or_none(x):
    try:
        return list(x)
    except TypeError:
        return [None]


def _nullable(n_symbols, rules):
    # worklist: each rule counts its body symbols not yet known nullable (linear time)
    nullable = [False] * n_symbols
    missing = []
    users = {}
    todo = []
    for r, (a, body) in enumerate(rules):
        missing.append(len(body))
        for s in body:
            users.setdefault(s, []).append(r)
        if not body and not nullable[a]:
            nullable[a] = True
            todo.append(a)
    while todo:
        s = todo.pop()
        for r in users.get(s, ()):
            missing[r] -= 1
            a = rules[r][0]
            if missing[r] == 0 and not nullable[a]:
                nullable[a] = True
                todo.append(a)
    return np.asarray(nullable, dtype=np.bool_)


def _normalise(parser, start, word_boundary, source):
    """Turn a loaded grammar (``lark_loader.LoadedGrammar``) into the flat :class:`Grammar`."""
    where = source or "grammar"
    term_defs = {t.name: t for t in parser.terminals}
    ignore = set(parser.ignore_tokens)

    raw = []  # (lhs name, [(name, is_term)])
    for r in parser.rules:
        raw.append((r.origin.name, [(s.name, s.is_term) for s in r.expansion]))
    for lhs, body in raw:
        for name, is_term in body:
            if is_term and name not in term_defs:
                raise GrammarError(
                    f"{where}: terminal {name} (used in rule {lhs}) has no definition; "
                    "%declare'd terminals come from a post-lexer and cannot be expressed by a "
                    "context-free mask", where=name, construct="%declare")
    for name in ignore:
        if name not in term_defs:
            raise GrammarError(f"{where}: %ignore'd terminal {name} has no definition",
                               where=name, construct="%declare")

    # Productive nonterminals (fixpoint), then reachable ones from start.
    productive = set()
    changed = True
    while changed:
        changed = False
        for lhs, body in raw:
            if lhs not in productive and all(t or n in productive for n, t in body):
                productive.add(lhs)
                changed = True
    if start not in productive:
        raise GrammarError(f"{where}: start rule {start!r} derives no finite string "
                           "(every expansion recurses forever or uses an unproductive rule)",
                           where=start, construct="unproductive start")
    kept = [(lhs, body) for lhs, body in raw
            if lhs in productive and all(t or n in productive for n, t in body)]
    by_lhs = {}
    for lhs, body in kept:
        by_lhs.setdefault(lhs, []).append(body)
    reachable, todo = {start}, [start]
    while todo:
        a = todo.pop()
        for body in by_lhs.get(a, ()):
            for n, t in body:
                if not t and n not in reachable:
                    reachable.add(n)
                    todo.append(n)
    kept = [(lhs, body) for lhs, body in kept if lhs in reachable]

    # Number symbols: terminals in first-use order, then %ignore ones; nonterminals likewise.
    term_ids, nt_names = {}, [START_SYMBOL_NAME]
    nt_ids = {START_SYMBOL_NAME: 0}
    for lhs, body in [(START_SYMBOL_NAME, [(start, False)])] + kept:
        for n, t in [(lhs, False)] + body:
            if t:
                term_ids.setdefault(n, len(term_ids))
            elif n not in nt_ids:
                nt_ids[n] = len(nt_names)
                nt_names.append(n)
    for n in sorted(ignore):
        term_ids.setdefault(n, len(term_ids))
    T = len(term_ids)
    names = sorted(term_ids, key=term_ids.get)

    def sym(n, t):
        return term_ids[n] if t else T + nt_ids[n]

    rules = [(T + 0, [sym(start, False)])]
    for lhs, body in kept:
        rules.append((sym(lhs, False), [sym(n, t) for n, t in body]))

    patterns, rewritten = [], {}
    for n in names:
        rx = term_defs[n].pattern.to_regexp()
        if rx in LARK_IDIOMS:
            rx, why = LARK_IDIOMS[rx]
            rewritten[n] = why
        elif _ESCAPED_STRING_RX in rx:
            # ESCAPED_STRING used inside a bigger terminal (lark.lark: STRING: _STRING "i"?);
            # it is a whole sequence element there, so the same replacement holds.
            rx = rx.replace(_ESCAPED_STRING_RX, LARK_IDIOMS[_ESCAPED_STRING_RX][0])
            rewritten[n] = LARK_IDIOMS[_ESCAPED_STRING_RX][1]
        patterns.append(rx)
    g = Grammar(
        terminal_names=names,
        terminal_patterns=patterns,
        terminal_flags=[term_defs[n].pattern.flags for n in names],
        terminal_is_ignore=[n in ignore for n in names],
        nonterminal_names=nt_names,
        rules=rules,
        start=start,
        word_boundary=word_boundary,
        source=source,
    )
    g.rewritten_terminals = rewritten
    return g
