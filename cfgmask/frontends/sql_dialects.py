"""The SQL dialects of the bundled ``sql`` grammar: one base, one overlay per dialect.

``grammars/sql.lark`` is the SQLite dialect and the base of the others.
``grammars/sql_<dialect>.lark`` holds what a dialect changes, written as Lark
definitions: ``%override name: ...`` replaces the base's definition of
``name``, a plain definition adds a new rule or terminal.  Lark itself could
compose them with ``%import`` / ``%override``, but llguidance (1.x) loads
neither, and the bundled grammars must load in both; so :func:`dialect_text`
composes the text here, at load time, into one self-contained grammar in the
shared subset.  Rules and terminals the composition leaves unreachable from
``start`` are dropped (the base's SQLite-only keywords in the PostgreSQL
dialect, say), so that no tool warns about them.

Fails closed: an override of a name the base lacks, a new definition of a
name it has, or a definition the composer cannot delimit raises
:class:`~cfgmask.GrammarError` naming it.
"""

import re

from cfgmask.errors import ConfigurationError, GrammarError

__all__ = ["DIALECTS", "DEFAULT_DIALECT", "dialect_text", "compose"]

DIALECTS = ("sqlite", "postgres", "mysql")
DEFAULT_DIALECT = "sqlite"

# a definition starts at column 0: optional %override, optional ?/!, a name, optional
# priority (not used in the bundled grammars), a colon
_DEF = re.compile(r"^(%override\s+)?([?!]?)([_A-Za-z][_A-Za-z0-9]*)\s*:")
_STRIP = re.compile(r'"(?:\\.|[^"\\\n])*"i?|/(?:\\.|[^/\\\n])+/[imslux]*|//[^\n]*')
_NAME = re.compile(r"\b[_A-Za-z][_A-Za-z0-9]*\b")


def _blocks(text, where):
    """Split grammar text into ``(kind, name, override, lines)`` blocks.

    ``kind`` is "def" for a definition (its first line and the indented
    continuation lines) and "other" for anything else (comments, blank lines,
    directives), which is kept as it is.
    """
    out = []
    for line in text.splitlines():
        m = _DEF.match(line)
        if m:
            out.append(["def", m.group(3), bool(m.group(1)), [line[m.end(1):] if m.group(1) else line]])
        elif line[:1] in (" ", "\t") and line.strip() and out and out[-1][0] == "def":
            out[-1][3].append(line)
        elif line.startswith("%override"):
            raise GrammarError(f"{where}: cannot read the %override line {line[:60]!r}",
                               where=where, construct="dialect overlay")
        else:
            out.append(["other", None, False, [line]])
    return out


def _body_names(lines):
    body = "\n".join(lines)
    body = body[body.index(":") + 1:]
    return set(_NAME.findall(_STRIP.sub(" ", body)))


def compose(base, overlay, where="dialect overlay"):
    """The base grammar text with ``overlay``'s overrides and additions applied."""
    blocks = _blocks(base, "base grammar")
    index = {b[1]: i for i, b in enumerate(blocks) if b[0] == "def"}
    added = []
    for kind, name, override, lines in _blocks(overlay, where):
        if kind != "def":
            if added or any(s.strip() for s in lines):
                added.append(["other", None, False, lines])
            continue
        if override:
            if name not in index:
                raise GrammarError(f"{where}: %override of {name}, which the base grammar does not define",
                                   where=name, construct="dialect overlay")
            blocks[index[name]][3] = lines
        else:
            if name in index:
                raise GrammarError(f"{where}: {name} is already defined by the base grammar; "
                                   "use %override", where=name, construct="dialect overlay")
            index[name] = len(blocks) + len(added)
            added.append(["def", name, False, lines])
    blocks += added
    # keep what start and %ignore reach
    defs = {b[1]: b for b in blocks if b[0] == "def"}
    ignored = {ln.split()[1] for b in blocks if b[0] == "other" for ln in b[3]
               if ln.startswith("%ignore") and len(ln.split()) > 1}
    seen, todo = set(), ["start", *ignored]
    while todo:
        n = todo.pop()
        if n in seen or n not in defs:
            continue
        seen.add(n)
        todo.extend(_body_names(defs[n][3]))
    out = []
    for kind, name, _, lines in blocks:
        if kind == "def" and name not in seen:
            continue
        out.extend(lines)
    return "\n".join(out) + "\n"


def dialect_text(dialect, builtin_dir):
    """The text of the ``sql`` grammar of ``dialect`` (one of :data:`DIALECTS`)."""
    if dialect not in DIALECTS:
        raise ConfigurationError(f"no SQL dialect {dialect!r}; choose one of {', '.join(DIALECTS)}")
    base = (builtin_dir / "sql.lark").read_text(encoding="utf-8")
    if dialect == "sqlite":
        return base
    path = builtin_dir / f"sql_{dialect}.lark"
    return compose(base, path.read_text(encoding="utf-8"), where=path.name)
