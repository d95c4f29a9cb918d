"""What ``cfgmask check --schema`` and ``cfgmask generate --schema`` need.

:class:`SchemaSource` plays the part ``cli.GrammarSource`` plays for Lark
files: it holds the compiled :class:`~cfgmask.grammar.Grammar` and checks an
output with an oracle (``json.loads``, this package's validator and, when it
is installed, the ``jsonschema`` package).
"""

import json
import sys
import time
from pathlib import Path

from cfgmask.engine.lexer import LexerSpec
from cfgmask.errors import ConfigurationError
from cfgmask.frontends.json_schema import DEFAULT_WHITESPACE, DRAFT_NAMES, check_default_draft, compile_schema
from cfgmask.frontends.json_schema.loader import SchemaDoc, read_schema
from cfgmask.frontends.json_schema.validate import Validator
from cfgmask.grammar import Grammar

# The schema itself is not in the default system prompt: the grammar enforces it, and with
# the default repetition penalty a small model shies away from the key names it has already
# seen in the prompt (docs/json-schema.md has the runs).  SCHEMA_PROMPT is the other choice.
SYSTEM_PROMPT = "You are a helpful assistant. Reply with JSON only."
SCHEMA_PROMPT = "You are a helpful assistant. Reply with JSON only, following this JSON schema: {schema}"
# the jsonschema package's validator for a schema without $schema, per --schema-draft
_JSONSCHEMA_VALIDATORS = {"draft-04": "Draft4Validator", "draft-06": "Draft6Validator",
                          "draft-07": "Draft7Validator", "2019-09": "Draft201909Validator",
                          "2020-12": "Draft202012Validator"}


class SchemaSource:
    """A JSON schema named on the command line, compiled to a grammar."""

    def __init__(self, path, whitespace=None, strict=True, default_draft=None):
        if not str(path).strip():  # Path("") is ".", which would read as "Is a directory"
            raise ConfigurationError("--schema: the path is empty")
        self.draft = check_schema_draft(default_draft)
        self.path = Path(path)
        self.spec = str(path)
        self.whitespace = whitespace or DEFAULT_WHITESPACE
        self.schema = read_schema(self.path)
        t0 = time.perf_counter()
        self.grammar = compile_schema(Grammar, self.schema, whitespace=self.whitespace, strict=strict,
                                      default_draft=self.draft)
        self.load_s = time.perf_counter() - t0

    def system_prompt(self, with_schema=False):
        if with_schema:
            return SCHEMA_PROMPT.format(schema=json.dumps(self.schema, separators=(",", ":")))
        return SYSTEM_PROMPT

    @property
    def label(self):
        """The schema's name for messages: its path."""
        return f"schema {self.spec}"

    def document(self, text):
        """The document itself (schema grammars have no markdown fence)."""
        return text

    def verify(self, text):
        """``None`` if ``text`` is JSON valid under the schema, else why not."""
        try:
            value = json.loads(text)
        except ValueError as e:
            return f"not JSON: {e}"
        if not Validator(SchemaDoc(self.schema, self.draft)).valid(value, ""):
            return "not valid under the schema (cfgmask's validator)"
        try:
            import jsonschema
        except ImportError:
            return None
        try:
            default = getattr(jsonschema, _JSONSCHEMA_VALIDATORS[self.draft.name])
            cls = jsonschema.validators.validator_for(self.schema, default=default)
            err = next(iter(cls(self.schema).iter_errors(value)), None)
        except Exception as e:  # the jsonschema package cannot read it: no second opinion
            print(f"cfgmask: jsonschema could not check the output ({e})", file=sys.stderr)
            return None
        return None if err is None else f"jsonschema: {err.message}"


def check_schema_draft(name):
    """The :class:`~cfgmask.frontends.json_schema.drafts.Draft` ``--schema-draft`` names (None:
    2020-12), or a one-line :class:`~cfgmask.ConfigurationError`."""
    try:
        return check_default_draft(name)
    except ConfigurationError:
        raise ConfigurationError(f"--schema-draft {name!r:.60}: choose one of "
                                 f"{', '.join(DRAFT_NAMES)} (or a meta-schema URI)") from None


def check_schema(path, whitespace=None, verbose=False, out=None, default_draft=None):
    """Body of ``cfgmask check --schema``: compile, print the sizes and times; returns the exit code."""
    # looked up per call: a default bound at import would keep whatever stdout was then
    out = sys.stdout if out is None else out
    t0 = time.perf_counter()
    src = SchemaSource(path, whitespace, default_draft=default_draft)
    g = src.grammar
    t1 = time.perf_counter()
    spec = LexerSpec(g)
    t2 = time.perf_counter()
    states = sum(spec.n_states(t) for t in range(g.n_terminals))
    info = g.json_schema_info
    print(f"schema     {path} (whitespace: {src.whitespace}, draft: {info['draft']})", file=out)
    print(f"rules      {g.n_rules} ({g.n_nonterminals} nonterminals)", file=out)
    print(f"terminals  {g.n_terminals} ({states} DFA states in all, {spec.n_classes} byte classes)",
          file=out)
    if info["loosened"]:
        print(f"loosened   {len(info['loosened'])} keyword(s):", file=out)
        for k, p, why in info["loosened"]:
            print(f"  {k} at {p}: {why}", file=out)
    print(f"time       schema -> grammar {1e3 * (t1 - t0):.1f} ms, automata {1e3 * (t2 - t1):.1f} ms, "
          f"total {1e3 * (t2 - t0):.1f} ms", file=out)
    if verbose:
        w = max([8] + [len(n) for n in g.terminal_names])
        print(f"  {'TERMINAL':<{w}}  {'STATES':>6}  PATTERN", file=out)
        for t, (name, pat) in enumerate(zip(g.terminal_names, g.terminal_patterns)):
            shown = pat if len(pat) <= 120 else pat[:117] + "..."
            print(f"  {name:<{w}}  {spec.n_states(t):>6}  {shown!r}", file=out)
        print("\nrules:", file=out)
        for line in g.rules_text().splitlines():
            print(f"  {line}", file=out)
    return 0
