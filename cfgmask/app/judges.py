"""Engine judges: does a generated document work in the language's own engine?

The grammars decide syntax; these ask the real engines, as a user would:

* JSON: :func:`json.loads`, strictly (``NaN`` / ``Infinity`` refused, as in RFC 8259);
* SQL: SQLite prepares the statement (``EXPLAIN ...``, nothing runs) on an
  in-memory database holding the prompt's own schema, so an unknown table or
  column fails, and so does more than one statement;
* JavaScript: ``node --check`` accepts the file as a script or as an ES module.

Each judge returns ``None`` when the document passes and the engine's error
message when it does not; :func:`judge` raises
:class:`~cfgmask.ConfigurationError` when the engine is not installed (only
``node`` can be missing).  :func:`extract_document` is what a lenient caller
does with free text (the unconstrained lane of ``cfgmask demo``): the first
markdown code block, else the whole text.
"""

import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile

from cfgmask.errors import ConfigurationError

__all__ = ["judge", "judge_json", "judge_sql", "judge_javascript", "extract_document", "sql_tables"]

_FENCED = re.compile(r"```[^\n`]*\n(.*?)(?:\n```|$)", re.S)


def extract_document(text):
    """The body of the first markdown code block of ``text``, else ``text`` stripped."""
    m = _FENCED.search(text)
    return (m.group(1) if m else text).strip()


def _no_constants(name):
    raise ValueError(f"{name} is not JSON")


def judge_json(doc):
    """``None`` if ``json.loads`` reads ``doc`` (no NaN/Infinity), else the error."""
    try:
        json.loads(doc, parse_constant=_no_constants)
    except ValueError as e:  # JSONDecodeError is a ValueError
        return str(e)
    return None


def judge_sql(doc, schema=""):
    """``None`` if SQLite prepares ``doc`` against ``schema`` (CREATE statements), else the error."""
    con = sqlite3.connect(":memory:")
    try:
        if schema:
            con.executescript(schema)
        con.execute("EXPLAIN " + doc)
    except (sqlite3.Error, sqlite3.Warning) as e:
        return str(e)
    finally:
        con.close()
    return None


def sql_tables(schema):
    """The names of the tables (and views) that SQLite creates from ``schema``."""
    con = sqlite3.connect(":memory:")
    try:
        con.executescript(schema)
        return [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY rowid")]
    finally:
        con.close()


def _node():
    node = shutil.which("node")
    if node is None:
        raise ConfigurationError("node is not installed: the JavaScript judge (`node --check`) cannot run")
    return node


def judge_javascript(doc):
    """``None`` if ``node --check`` accepts ``doc`` as a script or as a module, else its error."""
    node = _node()
    errors = []
    for suffix in (".cjs", ".mjs"):
        with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False, encoding="utf-8") as f:
            f.write(doc)
        try:
            r = subprocess.run([node, "--check", f.name], capture_output=True, text=True, timeout=60)
        finally:
            os.unlink(f.name)
        if r.returncode == 0:
            return None
        lines = [x for x in r.stderr.splitlines() if "Error" in x]
        errors.append(lines[0] if lines else r.stderr.strip()[-200:])
    return " / ".join(errors)


def judge(grammar, doc, schema=""):
    """Judge ``doc`` for builtin ``grammar`` (``json``, ``sql``, ``javascript``); ``None`` = passes."""
    if grammar == "json":
        return judge_json(doc)
    if grammar == "sql":
        return judge_sql(doc, schema)
    if grammar == "javascript":
        return judge_javascript(doc)
    raise ConfigurationError(f"no engine judge for grammar {grammar!r}")
