"""The Lark front end: Lark grammar text -> the flat grammar IR (:class:`~cfgmask.grammar.Grammar`).

Lark itself loads the grammar (:mod:`cfgmask.frontends.lark_loader`), so
templates, ``%import`` (including relative imports), aliases,
``?rule``/``_rule`` inlining, ``~n..m``, string and regex flags all mean
exactly what they mean in Lark.  :func:`normalise` then keeps only what
decides *which documents are accepted*: rules, terminal patterns and
``%ignore``.  Priorities, aliases and tree shaping are dropped on purpose
(they never change the language).  The ``// %cfgmask`` pragmas (comments to
Lark and llguidance) come last: ``word_boundary``, ``not_before`` and
``at_start`` (docs/architecture.md).

The result is built in one step through the class the caller gives
(``Grammar.from_lark(cls, ...)`` hands over ``cls``), so this module never
imports :mod:`cfgmask.grammar`.  A grammar the disk cache holds
(:mod:`cfgmask.frontends.grammar_cache`) skips Lark entirely.
"""

import os
import re
import time
import warnings
from pathlib import Path

from cfgmask import cache, gc_pause
from cfgmask.errors import GrammarError, GrammarWarning
from cfgmask.frontends import grammar_cache
from cfgmask.frontends.cfg import START_SYMBOL_NAME

__all__ = ["load", "load_file", "normalise", "word_boundary_bytes", "LARK_IDIOMS"]

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


def load(cls, text, start="start", *, import_paths=(), word_boundary=None, source=None):
    """``cls.from_lark(text, ...)``: Lark grammar ``text`` loaded with the ``lark`` package,
    normalised and built as a ``cls`` (see :meth:`cfgmask.grammar.Grammar.from_lark`)."""
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
    key = grammar_cache.grammar_key(text, start, import_paths, word_boundary, source)
    digest = None if key is None else cache.key_digest(key)
    cached = grammar_cache.load(key, digest)
    if cached is not None:
        g = _restore(cls, cached)
        _warn(g)
        return g
    # Lark loads it; every failure (bad regex, missing %import, runaway templates,
    # deep nesting) comes out as a GrammarError (see lark_loader)
    t0 = time.perf_counter()
    with gc_pause.paused():      # Lark's parse trees: many objects, no cyclic garbage
        # the trees die inside the pause (when _load_fresh returns): a collection
        # after it would walk every object made while it lasted (one young-
        # generation pass of 60-70 ms after javascript.lark's load)
        g, used_files = _load_fresh(cls, text, start, import_paths, word_boundary, source)
    # as for every cached artefact: one this quick to load stays in memory only
    # (writing it was a sixth of json.lark's load; reading it back costs as much)
    if time.perf_counter() - t0 > cache.PERSIST_ABOVE_S:
        grammar_cache.store(key, g, used_files, digest)
    _warn(g)
    return g


def _load_fresh(cls, text, start, import_paths, word_boundary, source):
    """``(the cls grammar of text, the files it %imports)``: Lark's load, normalised."""
    # imported on a miss only: lark_loader imports cfgmask.automata (~15 ms), which
    # a process that loads cached grammars without compiling them never needs
    from cfgmask.frontends import lark_loader
    parser, used_files = lark_loader.load(text, start, [p if callable(p) else str(p) for p in import_paths],
                                          source)
    if word_boundary is None:
        m = _WORD_BOUNDARY_PRAGMA.search(text)
        word_boundary = m.group(1) if m else ""
    wb = word_boundary_bytes(word_boundary) if word_boundary else b""
    fields = normalise(parser, start, wb, source)
    lark_terminals = {t.name for t in parser.terminals}
    _apply_not_before(fields, text, lark_terminals)
    at_start = _at_start(fields, text, lark_terminals)
    return cls(**fields, terminal_at_start=at_start, load_warnings=_load_warnings(parser, source)), used_files


def load_file(cls, path, start="start", *, word_boundary=None):
    """``cls.from_file(path, ...)``: the ``.lark`` file at ``path`` through ``cls.from_lark``,
    relative ``%import``\\ s resolved next to it."""
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


def _restore(cls, fields):
    """A ``cls`` with the attributes a cached grammar had (built as ``from_lark`` built it)."""
    g = object.__new__(cls)
    for name, value in fields.items():
        setattr(g, name, value)
    return g


def word_boundary_bytes(byte_class, pragma="word_boundary"):
    """Bytes ``b`` with ``re.fullmatch(byte_class, chr(b))`` (``\\x80-\\xff`` means those bytes)."""
    try:
        rx = re.compile(byte_class)
    except re.error as e:
        raise GrammarError(f"{pragma}: {byte_class!r} is not a valid regex class ({e})",
                           where=pragma, construct="pragma") from None
    return bytes(b for b in range(256) if rx.fullmatch(chr(b)))


# ---------------------------------------------------------------- pragmas

def _pragma_terminals(pragma, names, terminal_names, lark_terminals):
    """The indices in ``terminal_names`` of the terminals a pragma names (``names``, its text).

    A name that Lark does not know is an error; a terminal that normalisation
    dropped (unreachable from ``start``) is skipped."""
    for name in names.split():
        if name not in lark_terminals:
            raise GrammarError(f"{pragma} pragma: no terminal named {name}", where=name,
                               construct="pragma")
        if name in terminal_names:
            yield terminal_names.index(name)


def _apply_not_before(fields, text, lark_terminals):
    """Apply the ``not_before`` pragmas of ``text`` to the terminal patterns of ``fields``
    (the grammar's constructor arguments, before it is built)."""
    patterns = fields["terminal_patterns"]
    for m in _NOT_BEFORE_PRAGMA.finditer(text):
        byte_class = m.group(1)
        word_boundary_bytes(byte_class, "not_before")  # validates the class (GrammarError)
        for i in _pragma_terminals("not_before", m.group(2), fields["terminal_names"], lark_terminals):
            patterns[i] = f"(?:{patterns[i]})(?!{byte_class})"


def _at_start(fields, text, lark_terminals):
    """Per terminal of ``fields``: named by an ``at_start`` pragma of ``text`` (an
    ``%ignore``\\ d one, which may go anywhere, is an error)."""
    names, ignore = fields["terminal_names"], fields["terminal_is_ignore"]
    at_start = [False] * len(names)
    for m in _AT_START_PRAGMA.finditer(text):
        for i in _pragma_terminals("at_start", m.group(1), names, lark_terminals):
            if ignore[i]:
                raise GrammarError(f"at_start pragma: {names[i]} is %ignore'd, so it may "
                                   f"go anywhere", where=names[i], construct="pragma")
            at_start[i] = True
    return at_start


def _load_warnings(parser, source):
    """The warnings (:class:`GrammarWarning`) of a loaded Lark grammar, as ``[[where, message]]``."""
    from cfgmask.frontends import lark_loader  # (imported by load, on a miss)
    where = source or "grammar"
    out = []
    for name, piece, joined in lark_loader.ungrouped_alternations(parser):
        shown = joined if len(joined) <= 80 else joined[:77] + "..."
        out.append([name, f"{where}: terminal {name}: the piece /{piece}/ has a top-level '|' and is "
                          f"joined with other pieces; Lark does not group it (lark-parser/lark#1633), "
                          f"so Lark, and cfgmask with it, read the terminal as /{shown}/, while "
                          f"llguidance reads the alternatives as one group. Write (?:{piece}) if "
                          f"you mean the group."])
    return out


def _warn(g):
    # stacklevel: _warn <- load <- Grammar.from_lark <- its caller
    for where, message in g.load_warnings:
        warnings.warn(GrammarWarning(message, where=where), stacklevel=4)


def _iter_or_none(x):
    try:
        return list(x)
    except TypeError:
        return [None]


# ---------------------------------------------------------------- normalisation

def normalise(parser, start, word_boundary, source):
    """The constructor arguments of the flat grammar of a loaded Lark grammar
    (``lark_loader.LoadedGrammar``), pragmas not yet applied: a dict for
    ``Grammar(**fields)``."""
    where = source or "grammar"
    term_defs = {t.name: t for t in parser.terminals}
    ignore = set(parser.ignore_tokens)

    # (lhs name, [(name, is_term)]); names as plain str: Lark's names are Tokens, whose
    # Python-level __eq__ every dict and set below would call (28k calls, javascript.lark)
    raw = []
    for r in parser.rules:
        raw.append((str(r.origin.name), [(str(s.name), s.is_term) for s in r.expansion]))
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

    # Productive nonterminals, then reachable ones from start.  Each rule counts
    # its distinct nonterminals not yet proven productive, and a rule whose count
    # reaches 0 proves its lhs: one pass over the rules, where sweeping them
    # until nothing changed went over javascript.lark's 5,855 rules again and again.
    productive, missing, users, todo = set(), [], {}, []
    for r, (lhs, body) in enumerate(raw):
        nts = {n for n, t in body if not t}
        missing.append(len(nts))
        for n in nts:
            users.setdefault(n, []).append(r)
        if not nts and lhs not in productive:
            productive.add(lhs)
            todo.append(lhs)
    while todo:
        for r in users.get(todo.pop(), ()):
            missing[r] -= 1
            lhs = raw[r][0]
            if missing[r] == 0 and lhs not in productive:
                productive.add(lhs)
                todo.append(lhs)
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
    return dict(
        terminal_names=names,
        terminal_patterns=patterns,
        terminal_flags=[term_defs[n].pattern.flags for n in names],
        terminal_is_ignore=[n in ignore for n in names],
        nonterminal_names=nt_names,
        rules=rules,
        start=start,
        word_boundary=word_boundary,
        source=source,
        rewritten_terminals=rewritten,
    )
