"""``not``: the negation of a subschema written as a (synthetic) schema, for the
keywords whose negation is expressible; the rest is refused (``strict``) or
dropped with a warning.

A type-specific keyword's negation holds only for its own type.  The
negations of ``additionalProperties``, ``patternProperties`` and
``propertyNames`` are "some member whose key and value are of a kind"
(``x-cfgmask-some-member``: ``typed`` turns it into an object witness,
``emit`` into a flag of the object grammar); that of ``oneOf`` is "no case,
or two cases" (at most :data:`MAX_ONEOF_CASES` cases).

:class:`Negation` is a part of
:class:`~cfgmask.frontends.json_schema.normalize.Normalizer`, which inherits
it; its methods use the normaliser's ``doc`` and ``fail``.
"""

from cfgmask.frontends.json_schema import strings as S
from cfgmask.frontends.json_schema.drafts import ANNOTATIONS
from cfgmask.frontends.json_schema.errors import Unsupported
from cfgmask.frontends.json_schema.loader import child, display
from cfgmask.frontends.json_schema.nodes import HANDLED, REFUSED

# ``not: {oneOf: [...]}`` (and a oneOf inside a negated or overlapping oneOf) is written
# as "no case, or two cases, match": 1 + n(n-1)/2 cases, for at most this many
MAX_ONEOF_CASES = 6


class Negation:
    """Synthetic negated schemas (see the module docstring)."""

    # ---- negation
    def negation(self, pointer, quiet=False):
        """Atom of a synthetic schema equal to ``not <schema at pointer>``, or None.

        None means the negation cannot be written: a failure is reported
        (``strict``: raised) unless ``quiet``.
        """
        name = f"not({pointer})"
        key = self.doc.has_synthetic(name)
        if key is not None:
            return key
        if name in self._neg_failed:
            if not quiet:  # failed quietly before: report it now, never drop silently
                e = self._neg_failed[name]
                self.fail(e.keyword, pointer, f"negated (not, if, oneOf): {e.why}")
            return None
        try:
            if pointer in self._neg_stack:
                raise Unsupported("not", "the negated schema refers to itself")
            self._neg_stack.add(pointer)
            try:
                neg = self._negate(self.doc.schema_at(pointer), pointer)
            finally:
                self._neg_stack.discard(pointer)
        except Unsupported as e:
            self._neg_failed[name] = e
            if not quiet:
                # the keyword that cannot be negated, not "not": the user has to change it
                self.fail(e.keyword, pointer, f"negated (not, if, oneOf): {e.why}")
            return None
        return self.doc.add_synthetic(name, neg, source=pointer)

    def _negate(self, s, p):
        if s is True:
            return False
        if s is False:
            return True
        if not isinstance(s, dict):
            raise Unsupported("schema", "not an object")
        # s holds the keywords its draft reads (SchemaDoc.schema_at): $ref alone in
        # draft-07 and older.  The negation is the union (anyOf) of these schemas.  A type-specific
        # keyword (minimum, maxLength, items, required, ...) holds vacuously for
        # values of other types, so its negation holds only for its own type.
        cases = []
        for k, v in s.items():
            if k in ANNOTATIONS or k not in HANDLED and not k.startswith("x-cfgmask-") \
                    and k not in REFUSED:
                continue
            if k == "$ref":
                cases.append(self._negate_ptr(self.doc.resolve(p, v)))
            elif k == "x-cfgmask-ptr":
                cases.append(self._negate_ptr(v))
            elif k == "type":
                ts = {v} if isinstance(v, str) else set(v)
                rest = [t for t in ("null", "boolean", "string", "array", "object") if t not in ts]
                if "number" not in ts:
                    if "integer" in ts:
                        cases.append({"type": "number", "x-cfgmask-nonint": True})
                    else:
                        rest.append("number")
                if rest:
                    cases.append({"type": rest})
            elif k in ("enum", "const"):
                cases.append({"x-cfgmask-not-in": [v] if k == "const" else list(v)})
            elif k == "x-cfgmask-not-in":
                cases.append({"enum": list(v)})
            elif k == "allOf":
                cases += [self._negate_ptr(child(p, k, i)) for i in range(len(v))]
            elif k == "anyOf":
                cases.append({"allOf": [self._negate_ptr(child(p, k, i)) for i in range(len(v))]})
            elif k == "not":
                cases.append({"x-cfgmask-ptr": child(p, k)})
            elif k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                if isinstance(v, bool):
                    continue
                flip = {"minimum": "exclusiveMaximum", "maximum": "exclusiveMinimum",
                        "exclusiveMinimum": "maximum", "exclusiveMaximum": "minimum"}[k]
                if k == "minimum" and s.get("exclusiveMinimum") is True:
                    flip = "maximum"
                if k == "maximum" and s.get("exclusiveMaximum") is True:
                    flip = "minimum"
                cases.append({"type": "number", flip: v})
            elif k == "multipleOf":
                cases.append({"type": "number", "x-cfgmask-not-multipleOf": v})
            elif k == "x-cfgmask-not-multipleOf":
                cases.append({"type": "number", "multipleOf": v})
            elif k == "x-cfgmask-nonint":
                cases.append({"type": "integer"})
            elif k in ("minLength", "maxLength"):
                if k == "minLength":
                    if v > 0:
                        cases.append({"type": "string", "maxLength": v - 1})
                else:
                    cases.append({"type": "string", "minLength": v + 1})
            elif k == "pattern":
                cases.append({"type": "string", "x-cfgmask-not-pattern": v})
            elif k == "x-cfgmask-not-pattern":
                cases.append({"type": "string", "pattern": v})
            elif k == "format":
                if v in S.UNCHECKED_FORMATS:
                    raise Unsupported("format", f"format {v!r}: {S.UNCHECKED_FORMATS[v]}")
                if v in S.FORMATS:
                    cases.append({"type": "string", "x-cfgmask-not-format": v})
                    if v in S.FORMAT_MAX_LENGTH:
                        cases.append({"type": "string", "minLength": S.FORMAT_MAX_LENGTH[v] + 1})
            elif k == "x-cfgmask-not-format":
                cases.append({"type": "string", "format": v})
            elif k in ("minItems", "maxItems", "minProperties", "maxProperties"):
                t = "array" if "Items" in k else "object"
                if k.startswith("min"):
                    if v > 0:
                        cases.append({"type": t, k.replace("min", "max"): v - 1})
                else:
                    cases.append({"type": t, k.replace("max", "min"): v + 1})
            elif k == "required":
                for n in v:
                    cases.append({"type": "object", "properties": {n: False}})
            elif k in ("dependentRequired", "dependentSchemas", "dependencies", "x-cfgmask-implies"):
                # some name present whose dependency fails
                for n, dep in v.items():
                    if isinstance(dep, list):
                        cases += [{"type": "object", "required": [n], "properties": {b: False}}
                                  for b in dep if b != n]
                    elif k != "dependentRequired":
                        neg = self._negate_ptr(child(p, k, n))
                        if not self._is_false(neg):
                            cases.append({"type": "object", "required": [n], "allOf": [neg]})
            elif k == "additionalProperties":
                # some member outside properties and patternProperties whose value fails
                val = True if v is False else self._negate_ptr(child(p, k))
                if not self._is_false(val):
                    key = {"type": "string"}
                    names = s.get("properties")
                    if isinstance(names, dict) and names:
                        key["x-cfgmask-not-in"] = list(names)
                    pats = s.get("patternProperties")
                    if isinstance(pats, dict) and pats:
                        key["allOf"] = [{"x-cfgmask-not-pattern": pt} for pt in pats]
                    cases.append(_some_member(key, val, k, child(p, k)))
            elif k == "patternProperties":
                # some member whose key matches a pattern and whose value fails its schema
                for pt in v:
                    val = True if self.doc.schema_at(child(p, k, pt)) is False \
                        else self._negate_ptr(child(p, k, pt))
                    if not self._is_false(val):
                        cases.append(_some_member({"type": "string", "pattern": pt}, val, k,
                                                  child(p, k, pt)))
            elif k == "propertyNames":
                # some key the schema refuses (a key is a string)
                key = True if self.doc.schema_at(child(p, k)) is False \
                    else self._negate_ptr(child(p, k))
                if not self._is_false(key):
                    key = {"type": "string"} if key is True else dict(key, type="string")
                    cases.append(_some_member(key, True, k, child(p, k)))
            elif k == "oneOf" and isinstance(v, list):
                # not exactly one case: none, or two of them
                if len(v) > MAX_ONEOF_CASES:
                    raise Unsupported("oneOf", f"{len(v)} cases: its negation (no case, or two "
                                      f"cases, match) is written for at most {MAX_ONEOF_CASES}",
                                      child(p, k))
                cases.append({"allOf": [self._negate_ptr(child(p, k, i)) for i in range(len(v))]})
                cases += [{"allOf": [{"x-cfgmask-ptr": child(p, k, i)},
                                     {"x-cfgmask-ptr": child(p, k, j)}]}
                          for i in range(len(v)) for j in range(i + 1, len(v))]
            elif k == "if":
                # if-then fails, or if fails and else fails
                if "then" in s:
                    cases.append({"allOf": [{"x-cfgmask-ptr": child(p, "if")},
                                            self._negate_ptr(child(p, "then"))]})
                if "else" in s:
                    cases.append({"allOf": [self._negate_ptr(child(p, "if")),
                                            self._negate_ptr(child(p, "else"))]})
            elif k in ("then", "else"):
                continue  # with if (or without it: nothing)
            elif k == "properties":
                for n in v:
                    cases.append({"type": "object", "required": [n],
                                  "properties": {n: self._negate_ptr(child(p, k, n))}})
            elif k == "items" and isinstance(v, (dict, bool)) and "prefixItems" not in s:
                cases.append({"type": "array", "contains": self._negate_ptr(child(p, k))})
            elif k in ("prefixItems", "items") and isinstance(v, list):
                # a tuple: some position i that is there and fails its schema
                for i in range(len(v)):
                    neg = self._negate_ptr(child(p, k, i))
                    if not self._is_false(neg):
                        cases.append({"type": "array", "minItems": i + 1,
                                      "prefixItems": [True] * i + [neg]})
            elif k in ("items", "additionalItems") and (v is True or v == {} or not _after_tuple(s, k)):
                continue  # no constraint, or additionalItems without a tuple before it
            elif k in ("items", "additionalItems") and v is False:
                # the items after the tuple are forbidden: more items than the tuple
                cases.append({"type": "array", "minItems": _tuple_length(s, k) + 1})
            elif k == "contains":
                c = {"x-cfgmask-ptr": child(p, k)}
                lo = int(s.get("minContains", 1))
                hi = None if s.get("maxContains") is None else int(s["maxContains"])
                if "minContains" not in s and "maxContains" not in s:
                    cases.append({"type": "array", "items": self._negate_ptr(child(p, k))})
                else:
                    # fewer matching items than minContains, or more than maxContains
                    if lo > 0:
                        cases.append({"type": "array", "contains": c, "minContains": 0,
                                      "maxContains": lo - 1})
                    if hi is not None:
                        cases.append({"type": "array", "contains": c, "minContains": hi + 1})
            elif k in ("minContains", "maxContains"):
                continue  # read with contains (nothing without it)
            elif k == "uniqueItems" and not v:
                continue
            elif k == "x-cfgmask-some-member":
                raise Unsupported(v.get("keyword", k), "a negated negation of it is not "
                                  "expressible here", v.get("at"))
            else:
                raise Unsupported(k, "its negation is not expressible here", child(p, k))
        if not cases:
            return False
        return cases[0] if len(cases) == 1 else {"anyOf": cases}

    def _negate_ptr(self, pointer):
        a = self.negation(pointer, quiet=True)
        if a is None:
            e = self._neg_failed.get(f"not({pointer})")
            if e is not None:  # pass the real keyword and reason up
                raise Unsupported(e.keyword, e.why, e.where)
            raise Unsupported("not", f"cannot negate {display(pointer)}", pointer)
        return {"x-cfgmask-ptr": a}

    def _is_false(self, neg):
        """Whether a negation written by :meth:`_negate_ptr` is the schema false."""
        return isinstance(neg, dict) and self.doc.schema_at(neg["x-cfgmask-ptr"]) is False


def _some_member(key, value, keyword, pointer):
    """Objects with a member whose key is valid under the schema ``key`` and whose value
    is valid under ``value`` (``typed`` and ``emit``: an object witness)."""
    return {"type": "object", "x-cfgmask-some-member": {"key": key, "value": value,
                                                         "keyword": keyword, "at": pointer}}


def _after_tuple(s, k):
    """Whether ``k`` (``items`` or ``additionalItems``) constrains the items after a tuple."""
    if k == "additionalItems":
        return isinstance(s.get("items"), list)
    return isinstance(s.get("prefixItems"), list)


def _tuple_length(s, k):
    return len(s["items"] if k == "additionalItems" else s["prefixItems"])
