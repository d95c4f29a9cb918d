"""``not``: the negation of a subschema written as a (synthetic) schema, for the
keywords whose negation is expressible; the rest is refused (``strict``) or
dropped with a warning.

:class:`Negation` is a part of
:class:`~cfgmask.frontends.json_schema.normalize.Normalizer`, which inherits
it; its methods use the normaliser's ``doc`` and ``fail``.
"""

from cfgmask.frontends.json_schema import strings as S
from cfgmask.frontends.json_schema.drafts import ANNOTATIONS
from cfgmask.frontends.json_schema.errors import Unsupported
from cfgmask.frontends.json_schema.loader import child, display
from cfgmask.frontends.json_schema.nodes import HANDLED, REFUSED


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
            elif k == "properties":
                for n in v:
                    cases.append({"type": "object", "required": [n],
                                  "properties": {n: self._negate_ptr(child(p, k, n))}})
            elif k == "items" and isinstance(v, (dict, bool)) and "prefixItems" not in s:
                cases.append({"type": "array", "contains": self._negate_ptr(child(p, k))})
            elif k == "contains" and "minContains" not in s and "maxContains" not in s:
                cases.append({"type": "array", "items": self._negate_ptr(child(p, k))})
            elif k in ("minContains", "maxContains") and "contains" not in s:
                continue
            elif k in ("then", "else") and "if" not in s:
                continue
            elif k == "uniqueItems" and not v:
                continue
            else:
                raise Unsupported(k, "its negation is not expressible here")
        if not cases:
            return False
        return cases[0] if len(cases) == 1 else {"anyOf": cases}

    def _negate_ptr(self, pointer):
        a = self.negation(pointer, quiet=True)
        if a is None:
            e = self._neg_failed.get(f"not({pointer})")
            if e is not None:  # pass the real keyword and reason up
                raise Unsupported(e.keyword, e.why)
            raise Unsupported("not", f"cannot negate {display(pointer)}")
        return {"x-cfgmask-ptr": a}
