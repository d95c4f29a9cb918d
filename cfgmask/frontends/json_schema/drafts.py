"""Per JSON Schema draft: which keywords constrain values, and where subschemas are.

This is the one place that says what each draft reads.  Everything else in the
package asks it, through :meth:`~.loader.SchemaDoc.schema_at` (the schema at a
pointer as its draft reads it, :meth:`Draft.view`) and
:meth:`~.loader.SchemaDoc.draft_at`:

* ``keywords`` of a draft are its assertions and applicators (and ``$ref``);
  any other keyword is an annotation there, constraining nothing, as every
  draft says of unknown keywords.  A newer keyword in an older draft
  (``prefixItems``, ``dependentRequired``, ``minContains`` in draft-07;
  ``if`` in draft-06; ``const`` in draft-04) is therefore never enforced;
* ``$ref`` next to other keywords: in draft-07 and older the others are
  ignored (:attr:`Draft.ref_alone`); from 2019-09 on they apply too;
* identifiers: ``id`` (draft-04) or ``$id``; a plain-name fragment ``$id``
  (``"#foo"``) names an anchor up to draft-07, ``$anchor`` from 2019-09 on;
  in draft-07 and older an ``$id`` next to ``$ref`` is ignored;
* a subschema with a ``$schema`` this module recognises is read, with
  everything below it, as that draft (:func:`draft_for`); without one the
  root is read as the caller's default, 2020-12 unless told otherwise.

What keywords mean is the same in every draft that reads them, with these
readings (docs/json-schema.md, "Drafts"):

* ``items`` given as an array is a tuple (every draft up to 2019-09), and
  ``additionalItems`` then applies to the items after it; an object ``items``
  applies to every item (``additionalItems`` is then ignored).  2020-12 reads
  ``prefixItems`` and an object ``items`` after it; an array ``items`` is not
  a 2020-12 schema and is read as 2019-09 reads it;
* ``exclusiveMinimum``/``exclusiveMaximum``: a number is the bound itself
  (draft-06 on); a boolean is the draft-04 flag on ``minimum``/``maximum``,
  read so in every draft (no later draft gives a boolean a meaning);
* ``contains`` asks for at least one matching item unless 2019-09's
  ``minContains``/``maxContains`` say otherwise;
* ``dependencies`` (a name list or a schema per name) is read in every
  draft: 2019-09 and 2020-12 split it into ``dependentRequired`` and
  ``dependentSchemas`` but their meta-schemas still reserve it with its old
  shape ("deprecated"), and JSON-Schema-Test-Suite's optional
  ``dependencies-compatibility`` files test this reading;
* ``$recursiveRef`` (2019-09) is kept in 2020-12 for the same reason, and
  refused in both, as ``$dynamicRef`` is in 2020-12.

This module only describes the drafts; which keywords the compiler can
compile is ``nodes.py``'s business.
"""

# keywords every draft reads as annotations, or as identifiers (never constraints)
ANNOTATIONS = frozenset((
    "title", "description", "examples", "default", "$comment", "$schema", "$id", "id",
    "$anchor", "$defs", "definitions", "deprecated", "readOnly", "writeOnly",
    "contentMediaType", "contentEncoding", "contentSchema", "$vocabulary",
))

# the keywords of each draft that constrain values (assertions, applicators, $ref)
_DRAFT4 = frozenset((
    "$ref", "type", "enum", "format",
    "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern",
    "items", "additionalItems", "maxItems", "minItems", "uniqueItems",
    "maxProperties", "minProperties", "required", "properties", "patternProperties",
    "additionalProperties", "dependencies",
    "allOf", "anyOf", "oneOf", "not",
))
_DRAFT6 = _DRAFT4 | {"const", "contains", "propertyNames"}
_DRAFT7 = _DRAFT6 | {"if", "then", "else"}
_DRAFT2019 = _DRAFT7 | {"dependentRequired", "dependentSchemas", "minContains", "maxContains",
                        "unevaluatedItems", "unevaluatedProperties", "$recursiveRef"}
_DRAFT2020 = _DRAFT2019 | {"prefixItems", "$dynamicRef"}

# where subschemas are: keyword -> "one" (a schema), "list" (an array of schemas),
# "map" (name -> schema), "items" (a schema or an array), "dependencies" (name ->
# schema or name list); the applicators, then the places that only hold schemas
SUBSCHEMAS = {
    "not": "one", "if": "one", "then": "one", "else": "one",
    "additionalProperties": "one", "additionalItems": "one", "unevaluatedProperties": "one",
    "unevaluatedItems": "one", "contains": "one", "propertyNames": "one",
    "items": "items",
    "allOf": "list", "anyOf": "list", "oneOf": "list", "prefixItems": "list",
    "properties": "map", "patternProperties": "map", "dependentSchemas": "map",
    "dependencies": "dependencies",
    # not applied to anything: definitions (and 2019-09's contentSchema, an annotation)
    "definitions": "map", "$defs": "map", "contentSchema": "one",
}
# the applicators that apply their subschemas to the value itself (not to a part of it)
IN_PLACE = frozenset(("allOf", "anyOf", "oneOf", "not", "if", "then", "else",
                      "dependentSchemas", "dependencies"))

# identifiers and other keywords whose values the meta-schemas constrain (checked in
# keywords.py) though they constrain no instance
_CORE4 = frozenset(("$schema", "id", "definitions"))
_CORE6 = frozenset(("$schema", "$id", "definitions"))
_CORE7 = _CORE6 | {"$comment"}
_CORE2019 = _CORE7 | {"$anchor", "$defs", "$vocabulary", "$recursiveAnchor", "contentSchema"}
_CORE2020 = _CORE2019 | {"$dynamicAnchor"}


class Draft:
    """One draft: its keywords (:attr:`keywords`) and how it reads identifiers."""

    def __init__(self, number, name, keywords, core, *, ref_alone, id_keyword, anchor_keyword):
        self.number = number              # 4, 6, 7, 2019, 2020
        self.name = name                  # "draft-07", "2019-09", ...
        self.keywords = keywords          # the keywords that constrain values
        self.known = keywords | core      # the keywords whose values it defines
        self.ref_alone = ref_alone        # "$ref" makes its siblings ignored
        self.id_keyword = id_keyword      # "id" or "$id"
        self.anchor_keyword = anchor_keyword  # "$anchor", or None: "$id": "#name" instead

    def __repr__(self):
        return f"<Draft {self.name}>"

    def reads(self, keyword):
        """Whether ``keyword`` constrains values in this draft."""
        return keyword in self.keywords

    def view(self, s):
        """The schema ``s`` as this draft reads it: only its keywords (the compiler's own
        ``x-cfgmask-*`` too), and ``$ref`` alone where the draft ignores its siblings.

        Returns ``s`` itself when nothing is left out (booleans too)."""
        if not isinstance(s, dict):
            return s
        if self.ref_alone and "$ref" in s:
            return s if len(s) == 1 else {"$ref": s["$ref"]}
        kw = self.keywords
        for k in s:
            if k not in kw and not k.startswith("x-cfgmask-"):
                return {k: v for k, v in s.items() if k in kw or k.startswith("x-cfgmask-")}
        return s

    def subschema_keywords(self, s):
        """``(keyword, kind)`` for each keyword of ``s`` that holds subschemas in this
        draft (applicators and definitions; ``kind`` as in :data:`SUBSCHEMAS`)."""
        if not isinstance(s, dict):
            return []
        known = self.known
        return [(k, SUBSCHEMAS[k]) for k in s if k in SUBSCHEMAS and k in known]

    def schema_id(self, s):
        """The identifier that changes the base URI at ``s`` (a string), or None."""
        if not isinstance(s, dict) or (self.ref_alone and "$ref" in s):
            return None
        sid = s.get(self.id_keyword)
        return sid if isinstance(sid, str) else None


DRAFT4 = Draft(4, "draft-04", _DRAFT4, _CORE4, ref_alone=True, id_keyword="id", anchor_keyword=None)
DRAFT6 = Draft(6, "draft-06", _DRAFT6, _CORE6, ref_alone=True, id_keyword="$id", anchor_keyword=None)
DRAFT7 = Draft(7, "draft-07", _DRAFT7, _CORE7, ref_alone=True, id_keyword="$id", anchor_keyword=None)
DRAFT2019 = Draft(2019, "2019-09", _DRAFT2019, _CORE2019, ref_alone=False, id_keyword="$id",
                  anchor_keyword="$anchor")
DRAFT2020 = Draft(2020, "2020-12", _DRAFT2020, _CORE2020, ref_alone=False, id_keyword="$id",
                  anchor_keyword="$anchor")
DRAFTS = (DRAFT4, DRAFT6, DRAFT7, DRAFT2019, DRAFT2020)
DEFAULT = DRAFT2020

# $schema URIs (and parts of them) -> draft; the exact meta-schema URIs first
_URIS = {
    "http://json-schema.org/draft-04/schema": DRAFT4,
    "http://json-schema.org/draft-06/schema": DRAFT6,
    "http://json-schema.org/draft-07/schema": DRAFT7,
    "https://json-schema.org/draft/2019-09/schema": DRAFT2019,
    "https://json-schema.org/draft/2020-12/schema": DRAFT2020,
}
# any other URI naming a draft (https variants, the suite's localhost meta-schemas);
# draft-03 is read as draft-04, its closest successor
_PARTS = (("draft-03", DRAFT4), ("draft-04", DRAFT4), ("draft-06", DRAFT6), ("draft-07", DRAFT7),
          ("2019-09", DRAFT2019), ("2020-12", DRAFT2020))


def draft_named(uri):
    """The :class:`Draft` a ``$schema`` URI or a draft name (``"draft-07"``,
    ``"2019-09"``) names, or None."""
    if not isinstance(uri, str):
        return None
    hit = _URIS.get(uri.rstrip("#"))
    if hit is not None:
        return hit
    for part, d in _PARTS:
        if part in uri:
            return d
    return None


def draft_for(s, outer):
    """The draft of the schema ``s`` found where ``outer`` is in effect: the one its
    ``$schema`` names, if it names one (at the root, or where an embedded resource
    declares its own, as the ``jsonschema`` package reads it), else ``outer``."""
    if isinstance(s, dict) and "$schema" in s:
        return draft_named(s["$schema"]) or outer
    return outer


def default_draft(name):
    """``name`` (None: 2020-12) as a :class:`Draft`; ValueError if it names none."""
    if name is None:
        return DEFAULT
    if isinstance(name, Draft):
        return name
    d = draft_named(name)
    if d is None:
        raise ValueError(f"unknown JSON Schema draft {name!r:.60}; choose one of "
                         f"{', '.join(d.name for d in DRAFTS)}")
    return d
