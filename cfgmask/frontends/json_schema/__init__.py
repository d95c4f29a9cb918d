"""JSON Schema -> cfgmask grammar whose language is exactly the schema's valid instances.

Entry points:

* :func:`compile_schema` (also ``Grammar.from_json_schema``): a dict, JSON
  text or a path -> :class:`~cfgmask.grammar.Grammar`;
* :func:`json_grammar`: any JSON value in one whitespace style (the
  generation form of the bundled ``json`` grammar);
* :func:`validate`: check one instance with the compiler's own semantics;
* :data:`STYLES` / :data:`DEFAULT_WHITESPACE`.

"Exactly" means: a text is accepted iff it is an instance valid under the
schema written in cfgmask's JSON style: the chosen whitespace style, keys of
declared properties in schema order before any other keys, numbers in the
number style of ``numbers.py``.  Everything the compiler cannot express
exactly raises :class:`~cfgmask.GrammarError` naming the keyword and its JSON
pointer (``strict=True``), or is over-approximated with a
:class:`SchemaLoosened` warning listing what was loosened
(``strict=False``).  The departures from the specification are listed in
docs/json-schema.md.

The package splits the job: ``drafts`` (what each draft reads), ``keywords``
(keyword values checked first), ``loader`` (documents, drafts, ``$ref``), ``normalize`` (schemas -> typed
alternatives, the ``nodes``; its parts ``cases`` for the disjunctive
keywords, ``negation`` for ``not`` and ``typed`` for the per-type
intersection), ``strings`` and ``numbers`` (scalar languages as regexes),
``automata`` (direct DFA constructions), ``emit`` (alternatives -> grammar
rules), ``budget`` (the compile bounds), ``validate`` (instances),
``serialize`` (values written the way a schema grammar accepts them).
``cfgmask check/generate --schema`` is the application's
(:mod:`cfgmask.app.schema_source`).
"""

import time
import warnings

from cfgmask.errors import ConfigurationError
from cfgmask.frontends.json_schema import drafts
from cfgmask import gc_pause
from cfgmask.frontends.json_schema.emit import DEFAULT_ESCAPES, DEFAULT_STYLE, ESCAPES, FLEXIBLE_MAX_RUN, STYLES, Builder
from cfgmask.frontends.json_schema.budget import DEFAULT_MAX_WORK, DEFAULT_TIME_LIMIT_S, MAX_COUNT, Budget, active
from cfgmask.frontends.json_schema.keywords import bounded_errors
from cfgmask.frontends.json_schema.loader import SchemaDoc, read_schema
from cfgmask.frontends.json_schema.normalize import PROPERTY_ORDERS, Normalizer
from cfgmask.frontends.json_schema.validate import Validator

__all__ = ["compile_schema", "json_grammar", "validate", "STYLES", "DEFAULT_WHITESPACE",
           "ESCAPES", "DEFAULT_ESCAPES", "FLEXIBLE_MAX_RUN", "SchemaLoosened",
           "PROPERTY_ORDERS", "DEFAULT_PROPERTY_ORDER",
           "DEFAULT_MAX_WORK", "DEFAULT_TIME_LIMIT_S", "MAX_COUNT", "DRAFT_NAMES",
           "check_default_draft"]

# what default_draft= (and the CLI's --schema-draft) takes, besides a meta-schema URI
DRAFT_NAMES = tuple(d.name for d in drafts.DRAFTS)

DEFAULT_WHITESPACE = DEFAULT_STYLE
DEFAULT_PROPERTY_ORDER = "written"


class SchemaLoosened(UserWarning):
    """``strict=False`` over-approximated some keywords; ``.loosened`` lists (keyword, pointer, why)."""

    def __init__(self, loosened):
        self.loosened = list(loosened)
        lines = "; ".join(f"{k} at {p}: {why}" for k, p, why in self.loosened[:20])
        more = f" (+{len(self.loosened) - 20} more)" if len(self.loosened) > 20 else ""
        super().__init__(f"JSON schema compiled with {len(self.loosened)} loosened keyword(s), "
                         f"the grammar accepts more than the schema: {lines}{more}")


@bounded_errors
def compile_schema(cls, schema, *, whitespace=DEFAULT_WHITESPACE, strict=True, escapes=DEFAULT_ESCAPES,
                   max_work=DEFAULT_MAX_WORK, time_limit_s=DEFAULT_TIME_LIMIT_S,
                   property_order=DEFAULT_PROPERTY_ORDER, default_draft=None):
    """Compile a JSON schema (dict, bool, JSON text or path) to a grammar of class ``cls``
    (:class:`~cfgmask.grammar.Grammar`; ``Grammar.from_json_schema`` calls this).

    ``whitespace``: one of :data:`STYLES`.  ``escapes``: ``"canonical"``
    (strings spelled as ``json.dumps(..., ensure_ascii=False)`` spells them:
    one spelling per value, what a model should write) or ``"any"`` (every
    spelling RFC 8259 allows, ``\\u0061`` for ``a`` included: for checking
    documents written elsewhere).  The grammar's
    ``json_schema_info`` dict holds the style, the loosened keywords and the
    time the front end took.

    ``property_order`` (one of :data:`PROPERTY_ORDERS`): ``"written"`` (the
    default) merges the ``properties`` of a conjunction left to right as the
    schema is written, an ``allOf`` or ``$ref`` written before ``properties``
    placing its properties first (llguidance's stable property order);
    ``"own-first"`` lists an object's own properties before those of its
    ``allOf`` branches and ``$ref`` targets.  Either way ``required``
    properties no ``properties`` declares come next, then the others in any
    order (docs/json-schema.md, "Property order").

    The compile budget (docs/json-schema.md, "Compile bounds"): past
    ``max_work`` units of work (nodes, split cases, grammar rules) or
    ``time_limit_s`` seconds the compile stops with
    :class:`~cfgmask.CompileBudgetExceeded` (a ``GrammarError``) naming the
    keyword and JSON pointer it was expanding; ``None`` lifts a limit.

    ``default_draft``: the draft of a schema whose root has no ``$schema``
    (``"draft-04"``, ``"draft-06"``, ``"draft-07"``, ``"2019-09"`` or
    ``"2020-12"``, or a meta-schema URI; None: 2020-12); another value raises
    :class:`~cfgmask.ConfigurationError` before the schema is read.  Each
    subschema is read as its draft says (``drafts.py``; docs/json-schema.md,
    "Drafts"); the grammar's ``json_schema_info["draft"]`` names the root's.
    """
    t0 = time.perf_counter()
    draft = check_default_draft(default_draft)
    budget = Budget(max_work, time_limit_s)
    # normalising and the schema's automata: many objects alive to the end, no
    # cyclic garbage; they die inside the pause, when _compile returns (a
    # collection after it walked them all: ~1 ms a schema)
    with active(budget), gc_pause.paused():
        grammar, loosened = _compile(cls, schema, draft, budget, t0, whitespace, strict, escapes,
                                     property_order)
    if loosened:
        warnings.warn(SchemaLoosened(loosened), stacklevel=2)
    return grammar


def _compile(cls, schema, draft, budget, t0, whitespace, strict, escapes, property_order):
    """``(the grammar, the keywords loosened)``: :func:`compile_schema`'s work."""
    doc = SchemaDoc(read_schema(schema), draft)
    norm = Normalizer(doc, strict=strict, budget=budget, property_order=property_order)
    builder = Builder(norm, whitespace, escapes)
    start = builder.run(frozenset([""]))
    fields = builder.grammar_fields(start)
    info = {
        "whitespace": whitespace, "escapes": escapes, "strict": strict,
        "property_order": property_order,
        "draft": doc.draft.name,
        "loosened": list(norm.loosened),
        "front_end_s": time.perf_counter() - t0,
        "work": budget.work,
        "key_orders": _key_orders(norm),
    }
    # every terminal automaton was built (or found memoised) on the way here, and
    # compiling the schema again in another process builds them again: the lexer
    # tables are not worth a disk cache entry unless assembling them is slow
    grammar = cls(**fields, terminal_automata_prebuilt=True, json_schema_info=info)
    builder.remember_automata(grammar)
    return grammar, norm.loosened


def check_default_draft(default_draft):
    """The :class:`~.drafts.Draft` that ``default_draft`` names (None: 2020-12), or
    :class:`~cfgmask.ConfigurationError` naming the drafts to choose from."""
    try:
        return drafts.default_draft(default_draft)
    except ValueError as e:
        raise ConfigurationError(f"default_draft: {e}") from None


def _key_orders(norm):
    """Every declared-property order of the grammar (for ``serialize``)."""
    orders = set()
    for node in norm.built_nodes():
        for alt in node.alts:
            if alt.kind == "obj" and alt.props:
                orders.add(tuple(n for n, _, _ in alt.props))
            elif alt.kind == "lit":
                for v in alt.values:
                    _literal_key_orders(v, orders)
    return sorted(orders)


def _literal_key_orders(v, orders):
    # module-level recursion: a nested function calling itself is a reference
    # cycle per call, left for the cyclic collector
    if isinstance(v, dict):
        if v:
            orders.add(tuple(v))
        for x in v.values():
            _literal_key_orders(x, orders)
    elif isinstance(v, list):
        for x in v:
            _literal_key_orders(x, orders)


def json_grammar(cls, whitespace=DEFAULT_WHITESPACE, escapes=DEFAULT_ESCAPES):
    """Any JSON value, written in ``whitespace`` style, as a ``cls`` (a
    :class:`~cfgmask.grammar.Grammar`; for generation, see docs/json-schema.md).

    Exact RFC 8259 validation stays with the bundled ``grammars/json.lark``.
    """
    return compile_schema(cls, True, whitespace=whitespace, escapes=escapes)


def validate(instance, schema, default_draft=None):
    """True iff the parsed JSON ``instance`` is valid under ``schema`` with cfgmask's semantics
    (``default_draft`` as for :func:`compile_schema`)."""
    doc = SchemaDoc(read_schema(schema), check_default_draft(default_draft))
    doc.check_cycles()  # a validator would loop on an in-place cycle
    return Validator(doc).valid(instance, "")
