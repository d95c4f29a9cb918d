"""The bundled grammars (``grammars/*.lark``): their names, files and texts, the SQL
dialects (:mod:`cfgmask.frontends.sql_dialects`) and the generation profiles
(:mod:`cfgmask.frontends.profiles`).

What ``Grammar.builtin``, ``Grammar.builtin_text``, ``Grammar.builtin_path``
and ``Grammar.builtin_names`` do; the grammars are loaded through the class
the caller gives (``cls.from_file`` / ``cls.from_lark``), so this module never
imports :mod:`cfgmask.grammar`.
"""

from importlib.resources import files
from pathlib import Path

from cfgmask.errors import ConfigurationError

__all__ = ["NAMES", "grammar_dir", "path", "text", "builtin", "full", "profiled"]

NAMES = ("json", "sql", "javascript")

# sql_dialects (~1 ms: it compiles its regexes) and profiles (~10 ms: the SPECS
# dataclasses) are imported inside the functions that need them, so that loading
# a bundled grammar in its full form (the cold-start path) imports neither.


def grammar_dir():
    """Where the bundled ``*.lark`` files live (installed package or source tree)."""
    try:
        # a namespace package's files() is a MultiplexedPath, whose str() is not a
        # path; the child it returns is a real one
        probe = files("cfgmask.grammars").joinpath("json.lark")
        if probe.is_file():
            return Path(str(probe)).parent
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parent.parent.parent / "grammars"


def path(name):
    """The ``.lark`` file of bundled grammar ``name``."""
    return grammar_dir() / f"{name}.lark"


def text(name, dialect=None):
    """The Lark text of a bundled grammar (for ``sql``, of ``dialect``)."""
    if name == "sql":
        from cfgmask.frontends.sql_dialects import DEFAULT_DIALECT, dialect_text
        return dialect_text(dialect or DEFAULT_DIALECT, grammar_dir())
    return (grammar_dir() / f"{name}.lark").read_text(encoding="utf-8")


def builtin(cls, name, profile=None, *, dialect=None, **options):
    """``cls.builtin(name, profile, dialect=..., **options)``: see
    :meth:`cfgmask.grammar.Grammar.builtin`."""
    if name not in NAMES:
        raise ConfigurationError(f"no builtin grammar {name!r}; choose one of {', '.join(NAMES)}")
    if dialect is not None:
        from cfgmask.frontends.sql_dialects import DIALECTS
        if name != "sql":
            raise ConfigurationError(f"dialect= is for the sql grammar, not {name!r}")
        if dialect not in DIALECTS:
            raise ConfigurationError(f"no SQL dialect {dialect!r}; choose one of {', '.join(DIALECTS)}")
    if profile is not None:
        return profiled(cls, name, profile, dialect=dialect, **options)
    if options:
        raise ConfigurationError(f"profile options ({', '.join(options)}) need profile='generate'")
    return full(cls, name, dialect=dialect)


def full(cls, name, start="start", dialect=None):
    """Bundled grammar ``name`` (for ``sql``, of ``dialect``), the whole language, as a ``cls``."""
    if dialect is None or dialect == "sqlite":
        return cls.from_file(grammar_dir() / f"{name}.lark", start=start)
    from cfgmask.frontends.sql_dialects import dialect_text
    return cls.from_lark(dialect_text(dialect, grammar_dir()), start=start,
                         source=f"sql.lark + sql_{dialect}.lark")


def profiled(cls, name, profile="generate", *, start="start", dialect=None, **options):
    """Bundled grammar ``name`` (for ``sql``, of ``dialect``) under ``profile``
    (``"full"`` or ``"generate"``); see :func:`cfgmask.frontends.profiles.apply`.

    ``database=`` (``sql``, generation profile): a SQLite database file, a
    file of DDL, a :class:`sqlite3.Connection` or a
    :class:`~cfgmask.frontends.sql_schema.SqlSchema`; its tables and columns become
    ``tables=`` and ``columns=``, and ``statements=`` defaults to read-only
    (:data:`~cfgmask.frontends.profiles.READ_ONLY`: ``SELECT``, ``WITH ... SELECT``, ``VALUES``).
    """
    from cfgmask.frontends import profiles
    if options.get("database") is not None and profile == "generate":
        if name != "sql":
            raise ConfigurationError(f"database= is for the sql grammar, not {name!r}")
        given = [k for k in ("tables", "columns") if options.get(k) is not None]
        if given:
            raise ConfigurationError(f"database= gives the tables and columns: drop {'= and '.join(given)}=")
        options.update(profiles.database_options(options.pop("database"), options.get("statements")))
    elif "database" in options and options["database"] is None:
        del options["database"]
    if profile not in profiles.PROFILE_NAMES:
        raise ConfigurationError(f"no grammar profile {profile!r}; choose one of {', '.join(profiles.PROFILE_NAMES)}")
    if name not in NAMES:
        raise ConfigurationError(f"no builtin grammar {name!r}; choose one of {', '.join(NAMES)}")
    g = full(cls, name, start=start, dialect=dialect)
    if profile == "full":
        if options:
            raise ConfigurationError(f"the full grammar takes no profile options ({', '.join(options)})")
        return g
    spec_name = name if dialect in (None, "sqlite") else f"{name}:{dialect}"
    return profiles.apply(g, spec_name, **options)
