"""What the JSON Schema normaliser builds (:mod:`~cfgmask.frontends.json_schema.normalize`).

*Atoms* name a subschema by its pointer (see ``loader``), optionally with
keywords of it already taken care of (``"ptr\\x00anyOf,oneOf"``); a
*conjunction* is a frozenset of atoms.  A :class:`Node` is the list of typed
alternatives (:class:`Lit`, :class:`Null`, :class:`Bool`, :class:`Num`,
:class:`Str`, :class:`Obj`, :class:`Arr`) whose union is exactly a
conjunction's language; ``emit`` turns nodes into grammar rules.  The keyword
groups say which keywords the normaliser handles, and how.
"""

from cfgmask.frontends.json_schema.drafts import ANNOTATIONS

TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")

# keywords that restrict values of one JSON type
NUMBER_KW = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
             "x-cfgmask-not-multipleOf", "x-cfgmask-nonint")
STRING_KW = ("minLength", "maxLength", "pattern", "format", "x-cfgmask-not-pattern",
             "x-cfgmask-not-format")
ARRAY_KW = ("items", "prefixItems", "additionalItems", "contains", "minContains",
            "maxContains", "minItems", "maxItems", "uniqueItems")
OBJECT_KW = ("properties", "patternProperties", "additionalProperties", "required",
             "propertyNames", "minProperties", "maxProperties", "x-cfgmask-implies",
             "x-cfgmask-some-member")
SPLIT_KW = ("anyOf", "oneOf", "if", "not", "dependentRequired", "dependentSchemas",
            "dependencies")
HANDLED = frozenset(("type", "enum", "const", "$ref", "allOf", "then", "else",
                     "x-cfgmask-ptr", "x-cfgmask-not-in") + NUMBER_KW + STRING_KW +
                    ARRAY_KW + OBJECT_KW + SPLIT_KW) | ANNOTATIONS
REFUSED = ("unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef")

FALSE_ATOM = "!false"
DEPENDENCY_KW = ("dependentRequired", "dependentSchemas", "dependencies")
UNDISPATCHED = "x-cfgmask-undispatched"  # in an atom's skip: its if is left to an ordinary split
MAX_SPLIT_DEPTH = 64


def atom(pointer, skip=()):
    return pointer + "\x00" + ",".join(sorted(skip)) if skip else pointer


def split_atom(a):
    p, _, rest = a.partition("\x00")
    return p, (frozenset(rest.split(",")) if rest else frozenset())


def with_skip(pointer_skip, *keywords):
    """``(pointer, skip)`` with ``keywords`` added to the skip set."""
    p, skip = pointer_skip
    return p, skip | set(keywords)


# ------------------------------------------------------------------- IR

class Lit:
    """A finite set of JSON values.  An integer-valued number among them may also be
    spelled with a zero fraction (``1.0`` for ``1``) where ``zero_fraction`` says so: no
    ``type`` in the conjunction leaves out ``number`` (draft-04 does not count ``1.0`` as
    an ``integer``); inside an array or object value where ``nested_zero_fraction`` says
    so: the conjunction is read in draft-06 or later (where ``1.0`` is an ``integer``)."""
    kind = "lit"

    def __init__(self, values, zero_fraction=False, nested_zero_fraction=False):
        self.values = values
        self.zero_fraction = zero_fraction
        self.nested_zero_fraction = nested_zero_fraction


class Null:
    kind = "null"


class Bool:
    kind = "bool"

    def __init__(self, values=(True, False)):
        self.values = tuple(values)


class Num:
    kind = "num"
    where = ""  # pointer of a schema that constrains it (for messages)

    def __init__(self):
        self.integer = False
        self.zero_fraction = False  # integer-valued, yet a number: "6000.0" spells a value too
        self.lo = self.hi = None           # Decimal bounds
        self.lo_excl = self.hi_excl = False
        self.multiple_of = []              # Decimals
        self.not_multiple_of = []
        self.nonint = False
        self.excluded = []                 # values


class Str:
    kind = "str"
    where = ""

    def __init__(self):
        self.lo, self.hi = 0, None
        self.patterns = []      # (ECMA pattern, pointer)
        self.formats = []
        self.not_patterns = []
        self.not_formats = []
        self.excluded = []      # string values


class Obj:
    kind = "obj"

    def __init__(self):
        self.props = []          # (name, conj, required)
        self.regions = []        # (KeySpec, conj)
        self.min, self.max = 0, None
        self.implies = {}        # name -> names that must be present when it is
        # witnesses: (key conj, value conj, declared names whose key is in the key conj's
        # language): at least one member has such a key and a value in the value conj
        # (the negations of additionalProperties, patternProperties, propertyNames)
        self.witnesses = []


class KeySpec:
    """The keys of one additional-properties region (decoded-string constraints)."""

    def __init__(self, patterns_in, patterns_out, excluded, names_conjs):
        self.patterns_in = patterns_in      # ECMA patterns a key must match
        self.patterns_out = patterns_out    # ... must not match
        self.excluded = excluded            # declared / forbidden names
        self.names_conjs = names_conjs      # propertyNames conjunctions


class Arr:
    kind = "arr"

    def __init__(self):
        self.prefix = []         # conj per position
        self.rest = frozenset()  # conj of the items after the prefix (None: none allowed)
        self.min, self.max = 0, None
        self.contains = []       # (conj, min count): at least min items match
        self.counted = []        # (conj, negated conj, min, max): min..max items match


class Node:
    def __init__(self, key, alts):
        self.key = key
        self.alts = alts

    def __repr__(self):
        return f"<Node {sorted(self.key)} {[a.kind for a in self.alts]}>"
