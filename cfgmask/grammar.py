"""The grammar IR: a flat context-free grammar over integer symbols plus terminal regexes.

Every front end builds one (:mod:`cfgmask.frontends`: Lark text, the bundled
grammars and their generation profiles, JSON Schema), and it is all the
engine sees.  The alternate constructors on :class:`Grammar`
(:meth:`~Grammar.from_lark`, :meth:`~Grammar.from_file`,
:meth:`~Grammar.from_json_schema`, :meth:`~Grammar.builtin`, ...) hand over
to those front ends, which build the IR through the class they are given.

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
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cfgmask.frontends.cfg import START_SYMBOL_NAME, nullable

__all__ = ["Grammar", "START_SYMBOL_NAME"]

_DEFAULT = object()  # "the package default" for keyword arguments whose None means "no limit"


class Grammar:
    """A flat CFG plus terminal regexes (see the module docstring for the invariants).

    Build one with :meth:`from_lark`, :meth:`from_file`, :meth:`from_json_schema`
    or :meth:`builtin`.  The object is immutable after construction: the
    constructor takes every field, and a front end that changes a grammar
    (a generation profile) builds a new one.
    """

    # True when whoever built the grammar also built its terminal automata and
    # builds them again in any process (cfgmask.frontends.json_schema): its lexer tables
    # and slice candidates then stay off the disk cache (docs/compile.md)
    terminal_automata_prebuilt = False
    # [[where, message]] of the GrammarWarnings from_lark emits (kept with a cached grammar)
    load_warnings = ()

    # The alternate constructors import their front end when called: the front
    # ends never import this module (they build through ``cls``), so there is no
    # cycle, and ``import cfgmask.grammar`` (the engine's import) stays free of
    # lark, json_schema and the profiles.

    def __init__(self, *, terminal_names: Sequence[str], terminal_patterns: Sequence[str],
                 terminal_is_ignore: Sequence[bool], nonterminal_names: Sequence[str],
                 rules: Sequence[tuple[int, Sequence[int]]], start: str, word_boundary: bytes = b"",
                 source: str | None = None, terminal_flags: Sequence[Iterable[str]] | None = None,
                 terminal_at_start: Sequence[bool] | None = None,
                 rewritten_terminals: dict[str, str] | None = None, profile: Any = None,
                 load_warnings: Sequence[Sequence[str]] | None = None,
                 terminal_automata_prebuilt: bool | None = None,
                 json_schema_info: dict | None = None):
        """``rules``: ``[(lhs, [body symbols])]``, rule 0 the augmented start rule.
        The last four are set on the object only when given (otherwise the class
        defaults hold, and a grammar without JSON Schema info has no such field)."""
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
        # name -> why its Lark regex was replaced (lark_frontend.LARK_IDIOMS)
        self.rewritten_terminals = {} if rewritten_terminals is None else dict(rewritten_terminals)
        # a cfgmask.frontends.profiles.Profile for generation profiles (builtin(profile=...))
        self.profile = profile
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
        self.nullable = nullable(T + len(self.nonterminal_names), rules)
        if load_warnings is not None:
            self.load_warnings = list(load_warnings)
        if terminal_automata_prebuilt is not None:
            self.terminal_automata_prebuilt = bool(terminal_automata_prebuilt)
        if json_schema_info is not None:
            # the front end's report: style, loosened keywords, time taken (compile_schema)
            self.json_schema_info = json_schema_info

    # ---- sizes -------------------------------------------------------
    @property
    def n_terminals(self) -> int:
        return len(self.terminal_names)

    @property
    def n_nonterminals(self) -> int:
        return len(self.nonterminal_names)

    @property
    def n_rules(self) -> int:
        return len(self.rule_lhs)

    def symbol_name(self, s: int) -> str:
        T = self.n_terminals
        return self.terminal_names[s] if s < T else self.nonterminal_names[s - T]

    def rule_body(self, r: int) -> list[int]:
        """The right-hand side of rule ``r`` as a list of symbol ids."""
        p = int(self.rule_rhs_start[r])
        out = []
        while self.rhs[p] >= 0:
            out.append(int(self.rhs[p]))
            p += 1
        return out

    def rules_text(self) -> str:
        """Readable dump, one rule per line (for ``cfgmask check`` and debugging)."""
        lines = []
        for r in range(self.n_rules):
            body = " ".join(self.symbol_name(s) for s in self.rule_body(r)) or "<empty>"
            lines.append(f"{self.symbol_name(int(self.rule_lhs[r]))} -> {body}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<Grammar start={self.start!r} rules={self.n_rules} "
                f"terminals={self.n_terminals} nonterminals={self.n_nonterminals}>")

    def document(self, text: str | bytes) -> str | bytes:
        """``text`` (str or bytes) without the generation profile's markdown fence, if any.

        The identity for grammars without a fence; for a complete document of
        a generation profile, the document its full grammar accepts.
        """
        return self.profile.strip_fence(text) if self.profile is not None else text

    # ---- constructors (cfgmask.frontends) -------------------------------
    @classmethod
    def from_lark(cls, text: str, start: str = "start", *,
                  import_paths: Iterable[str | os.PathLike | Callable] = (),
                  word_boundary: str | None = None, source: str | None = None) -> "Grammar":
        """Load Lark grammar ``text`` with the ``lark`` package and normalise it.

        ``word_boundary`` is a regex byte class (see docs/architecture.md);
        ``None`` means "use the ``// %cfgmask word_boundary CLASS`` pragma in
        the text if there is one".  Raises :class:`GrammarError` naming the
        rule or terminal when the grammar cannot be turned into an exact mask.
        See :mod:`cfgmask.frontends.lark_frontend`.
        """
        from cfgmask.frontends import lark_frontend
        return lark_frontend.load(cls, text, start, import_paths=import_paths,
                                  word_boundary=word_boundary, source=source)

    @classmethod
    def from_file(cls, path: str | os.PathLike, start: str = "start", *,
                  word_boundary: str | None = None) -> "Grammar":
        """Load a ``.lark`` file; relative ``%import``s resolve next to it."""
        from cfgmask.frontends import lark_frontend
        return lark_frontend.load_file(cls, path, start, word_boundary=word_boundary)

    @classmethod
    def from_json_schema(cls, schema: dict | bool | str | os.PathLike, *, whitespace: str | None = None,
                         strict: bool = True, escapes: str | None = None, max_work: int | None = _DEFAULT,
                         time_limit_s: float | None = _DEFAULT, property_order: str | None = None,
                         default_draft: str | None = None) -> "Grammar":
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
        stable order, branches merged as written) or ``"own-first"``.
        ``default_draft``: the draft of a schema whose root has no ``$schema``:
        ``"draft-04"``, ``"draft-06"``, ``"draft-07"``, ``"2019-09"`` or
        ``"2020-12"`` (or a meta-schema URI; default None: 2020-12); another
        value raises :class:`~cfgmask.ConfigurationError` before the schema is
        read.  A ``$schema`` in the schema wins.  See
        :mod:`cfgmask.frontends.json_schema` and docs/json-schema.md.
        """
        from cfgmask.frontends import json_schema
        ws = json_schema.DEFAULT_WHITESPACE if whitespace is None else whitespace
        esc = json_schema.DEFAULT_ESCAPES if escapes is None else escapes
        mw = json_schema.DEFAULT_MAX_WORK if max_work is _DEFAULT else max_work
        tl = json_schema.DEFAULT_TIME_LIMIT_S if time_limit_s is _DEFAULT else time_limit_s
        po = json_schema.DEFAULT_PROPERTY_ORDER if property_order is None else property_order
        return json_schema.compile_schema(cls, schema, whitespace=ws, strict=strict, escapes=esc,
                                          max_work=mw, time_limit_s=tl, property_order=po,
                                          default_draft=default_draft)

    @classmethod
    def builtin(cls, name: str, profile: str | None = None, *, dialect: str | None = None,
                **options: Any) -> "Grammar":
        """One of the bundled grammars: ``"json"``, ``"sql"`` or ``"javascript"``.

        ``profile=None`` or ``"full"``: the whole language.  ``profile="generate"``:
        the generation profile (no comments, bounded whitespace, capped quoted
        names and strings, an optional markdown fence; ``options`` as in
        :func:`cfgmask.frontends.profiles.apply`).  :meth:`document` strips the fence.

        ``dialect`` (``"sql"`` only): ``"sqlite"`` (the default), ``"postgres"``
        or ``"mysql"``; each accepts what that engine's parser accepts for the
        statements the grammar covers (docs/grammars.md).  The dialects share
        ``grammars/sql.lark`` as their base (see :mod:`cfgmask.frontends.sql_dialects`).
        See :mod:`cfgmask.frontends.builtins`.
        """
        from cfgmask.frontends import builtins
        return builtins.builtin(cls, name, profile, dialect=dialect, **options)

    @staticmethod
    def builtin_text(name: str, dialect: str | None = None) -> str:
        """The Lark text of a bundled grammar (for ``sql``, of ``dialect``)."""
        from cfgmask.frontends import builtins
        return builtins.text(name, dialect)

    @staticmethod
    def builtin_names() -> tuple[str, ...]:
        from cfgmask.frontends import builtins
        return builtins.NAMES

    @staticmethod
    def builtin_path(name: str) -> Path:
        from cfgmask.frontends import builtins
        return builtins.path(name)
