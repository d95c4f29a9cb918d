"""The tables and columns of a SQL schema, read by SQLite itself.

:func:`read_schema` takes a SQLite database file, a file of DDL
(``CREATE TABLE`` / ``CREATE VIEW`` statements), an open
:class:`sqlite3.Connection` or a :class:`SqlSchema`, and returns a
:class:`SqlSchema`.  DDL is executed into an in-memory database and the
names are read back from ``sqlite_master`` and ``PRAGMA table_info``, so the
schema is what SQLite makes of the text (quoting, case, ``AS SELECT``
columns), not what a second parser guesses.  A database file is opened
read-only and never written.

The schema-aware SQL generation profile (``Grammar.builtin("sql",
profile="generate", database=...)``, :mod:`cfgmask.frontends.profiles`) restricts
table and column names to these.
"""

import os
import pathlib
import sqlite3
from dataclasses import dataclass

from cfgmask.errors import ConfigurationError

__all__ = ["SqlSchema", "read_schema"]

_SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True)
class SqlSchema:
    """Tables (and views) in creation order, each with its column names: ``((table, (col, ...)), ...)``."""

    tables: tuple

    @property
    def table_names(self):
        """The table and view names, in creation order."""
        return tuple(t for t, _ in self.tables)

    @property
    def column_names(self):
        """Every column name of every table, once each (first spelling kept, ASCII case ignored)."""
        seen, out = set(), []
        for _, cols in self.tables:
            for c in cols:
                if c.lower() not in seen:
                    seen.add(c.lower())
                    out.append(c)
        return tuple(out)

    @classmethod
    def from_connection(cls, con):
        """The schema of an open :class:`sqlite3.Connection` (its ``main`` database)."""
        rows = con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                           "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid").fetchall()
        tables = []
        for (name,) in rows:
            cols = tuple(r[1] for r in con.execute("SELECT * FROM pragma_table_info(?)", (name,)))
            tables.append((name, cols))
        if not tables:
            raise ConfigurationError("the schema has no tables")
        return cls(tuple(tables))

    @classmethod
    def from_ddl(cls, text):
        """The schema SQLite builds from ``text`` (``CREATE TABLE`` statements) in an in-memory database."""
        con = sqlite3.connect(":memory:")
        try:
            try:
                con.executescript(text)
            except (sqlite3.Error, sqlite3.Warning) as e:
                raise ConfigurationError(f"SQLite cannot read the schema's DDL: {e}") from None
            return cls.from_connection(con)
        finally:
            con.close()


def read_schema(source):
    """A :class:`SqlSchema` from ``source``: a path to a SQLite database or a DDL file, a
    :class:`sqlite3.Connection`, or a :class:`SqlSchema` (returned as it is).

    Raises :class:`~cfgmask.ConfigurationError` when the file is missing,
    SQLite cannot read it, or it defines no table.
    """
    if isinstance(source, SqlSchema):
        return source
    if isinstance(source, sqlite3.Connection):
        return SqlSchema.from_connection(source)
    if not isinstance(source, (str, os.PathLike)):
        raise ConfigurationError(f"database must be a file path, a sqlite3.Connection or a SqlSchema, "
                                 f"not {type(source).__name__}")
    path = os.fspath(source)
    try:
        with open(path, "rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except OSError as e:
        raise ConfigurationError(f"cannot read the database {path}: {e.strerror or e}") from None
    if head == _SQLITE_MAGIC:
        try:
            # read-only: the schema is read, nothing is written
            con = sqlite3.connect(pathlib.Path(path).resolve().as_uri() + "?mode=ro", uri=True)
        except sqlite3.Error as e:
            raise ConfigurationError(f"SQLite cannot open {path}: {e}") from None
        try:
            return SqlSchema.from_connection(con)
        except sqlite3.Error as e:
            raise ConfigurationError(f"SQLite cannot read the schema of {path}: {e}") from None
        finally:
            con.close()
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise ConfigurationError(f"{path} is neither a SQLite database nor a UTF-8 text file of DDL") from None
    return SqlSchema.from_ddl(text)
