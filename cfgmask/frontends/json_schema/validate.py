"""Validating one instance against a schema, with exactly the compiler's semantics.

The compiler uses this for finite sets: a ``const``/``enum`` value is kept iff
it is valid against every schema of the conjunction (so ``enum`` next to
``not``, ``oneOf`` or ``uniqueItems`` is exact), and a property name is kept
iff ``propertyNames`` accepts it.  ``cfgmask generate --schema`` uses it to
check its output.

Semantics (the same as the grammar's, docs/json-schema.md):

* numbers compare exactly in decimal; ``1.0`` is an integer; booleans are
  never numbers;
* ``pattern`` is the ECMA-262 reading of ``strings.pattern_to_decoded``;
* ``format`` asserts the formats in ``strings.FORMATS`` (with the lengths of
  ``strings.FORMAT_MAX_LENGTH``) and ignores others;
* equality is JSON equality (``1 == 1.0``, ``true != 1``, objects unordered).

It also reads the compiler's internal keywords (``x-cfgmask-*``) that appear
only in synthetic schemas (``loader.SchemaDoc.synthetic``).
"""

import re
from decimal import Decimal
from functools import lru_cache

from cfgmask.frontends.json_schema import strings as S
from cfgmask.frontends.json_schema.errors import Unsupported
from cfgmask.frontends.json_schema.loader import child
from cfgmask.frontends.json_schema.numbers import to_decimal


def json_type(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float, Decimal)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    raise TypeError(f"not a JSON value: {type(v).__name__}")


def is_integer(v):
    return json_type(v) == "number" and to_decimal(v) == to_decimal(v).to_integral_value()


def has_type(v, t):
    jt = json_type(v)
    if t == "integer":
        return is_integer(v)
    return jt == t


def json_equal(a, b):
    ta, tb = json_type(a), json_type(b)
    if ta != tb:
        return False
    if ta == "number":
        return to_decimal(a) == to_decimal(b)
    if ta == "array":
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if ta == "object":
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return a == b


def json_key(v):
    """A hashable key with ``json_key(a) == json_key(b)`` iff ``json_equal(a, b)``."""
    if v is None:
        return 0
    if isinstance(v, bool):
        return (1, v)
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float, Decimal)):
        return (2, to_decimal(v))  # equal Decimals hash alike: 1 == 1.0
    if isinstance(v, list):
        return (3, tuple(json_key(x) for x in v))
    if isinstance(v, dict):
        return (4, frozenset((k, json_key(x)) for k, x in v.items()))
    raise TypeError(f"not a JSON value: {type(v).__name__}")


def in_values(v, values, _sets={}):
    """``any(json_equal(v, x) for x in values)``, hashed for long lists (enum, not-in)."""
    if len(values) < 16:
        return any(json_equal(v, x) for x in values)
    hit = _sets.get(id(values))
    if hit is None or hit[0] is not values:
        if len(_sets) > 256:
            _sets.clear()
        hit = _sets[id(values)] = (values, frozenset(json_key(x) for x in values))
    return json_key(v) in hit[1]


@lru_cache(maxsize=4096)
def _search_rx(pattern):
    return re.compile(S.pattern_to_decoded(pattern), re.DOTALL)


@lru_cache(maxsize=64)
def _format_rx(name):
    return re.compile(S.FORMATS[name])


def matches_pattern(pattern, s):
    return _search_rx(pattern).fullmatch(s) is not None


def matches_format(name, s):
    if name not in S.FORMATS:
        return True
    return (len(s) <= S.FORMAT_MAX_LENGTH.get(name, len(s))
            and _format_rx(name).fullmatch(s) is not None)


class Validator:
    """``valid(value, pointer)`` over one :class:`~cfgmask.frontends.json_schema.loader.SchemaDoc`."""

    def __init__(self, doc):
        self.doc = doc

    def valid(self, v, pointer):
        return self.valid_schema(v, self.doc.schema_at(pointer), pointer)

    def valid_schema(self, v, s, ptr):
        """Whether ``v`` is valid under the schema ``s`` found at pointer ``ptr``, as its
        draft reads it (``SchemaDoc.schema_at``: ``$ref`` alone in draft-07 and older)."""
        if s is True:
            return True
        if s is False:
            return False
        if not isinstance(s, dict):
            raise Unsupported("schema", f"a schema must be an object or a boolean (at {ptr})")
        if "$ref" in s and not self.valid(v, self.doc.resolve(ptr, s["$ref"])):
            return False
        for k in ("$dynamicRef", "$recursiveRef", "unevaluatedProperties", "unevaluatedItems"):
            if k in s:
                raise Unsupported(k, "not supported")
        jt = json_type(v)
        for key, val in s.items():
            if not self._keyword(key, val, v, jt, s, ptr):
                return False
        return True

    def _sub(self, v, ptr, *tokens):
        p = child(ptr, *tokens)
        return self.valid_schema(v, self.doc.schema_at(p), p)

    def _keyword(self, key, val, v, jt, s, ptr):
        if key == "type":
            types = [val] if isinstance(val, str) else val
            return any(has_type(v, t) for t in types)
        if key == "enum":
            return in_values(v, val)
        if key == "const":
            return json_equal(v, val)
        if key == "x-cfgmask-not-in":
            return not in_values(v, val)
        if key == "x-cfgmask-ptr":
            return self.valid(v, val)
        if key == "allOf":
            return all(self._sub(v, ptr, key, i) for i in range(len(val)))
        if key == "anyOf":
            return any(self._sub(v, ptr, key, i) for i in range(len(val)))
        if key == "oneOf":
            return sum(1 for i in range(len(val)) if self._sub(v, ptr, key, i)) == 1
        if key == "not":
            return not self._sub(v, ptr, key)
        if key == "if":
            if self._sub(v, ptr, "if"):
                return "then" not in s or self._sub(v, ptr, "then")
            return "else" not in s or self._sub(v, ptr, "else")
        if jt == "number":
            return self._number(key, val, v, s)
        if jt == "string":
            return self._string(key, val, v)
        if jt == "array":
            return self._array(key, val, v, s, ptr)
        if jt == "object":
            return self._object(key, val, v, s, ptr)
        return True

    def _number(self, key, val, v, s):
        x = to_decimal(v)
        if key == "x-cfgmask-nonint":
            return x != x.to_integral_value()
        if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                   "multipleOf", "x-cfgmask-not-multipleOf"):
            if isinstance(val, bool):
                return True  # draft-04 flag, read with minimum/maximum
            b = to_decimal(val)
            if key == "minimum":
                return x > b if s.get("exclusiveMinimum") is True else x >= b
            if key == "maximum":
                return x < b if s.get("exclusiveMaximum") is True else x <= b
            if key == "exclusiveMinimum":
                return x > b
            if key == "exclusiveMaximum":
                return x < b
            ok = (x % b) == 0
            return ok if key == "multipleOf" else not ok
        return True

    def _string(self, key, val, v):
        if key == "minLength":
            return len(v) >= val
        if key == "maxLength":
            return len(v) <= val
        if key == "pattern":
            return matches_pattern(val, v)
        if key == "x-cfgmask-not-pattern":
            return not matches_pattern(val, v)
        if key == "format":
            return matches_format(val, v)
        if key == "x-cfgmask-not-format":
            return not matches_format(val, v)
        return True

    def _items_layout(self, s):
        """(prefix key or None, prefix length, rest key or None) of an array schema
        (``s`` as its draft reads it: ``prefixItems`` only in 2020-12)."""
        items = s.get("items")
        if isinstance(items, list):
            return "items", len(items), ("additionalItems" if "additionalItems" in s else None)
        prefix = s.get("prefixItems")
        n = len(prefix) if isinstance(prefix, list) else 0
        return ("prefixItems" if n else None), n, ("items" if "items" in s else None)

    def _array(self, key, val, v, s, ptr):
        if key == "minItems":
            return len(v) >= val
        if key == "maxItems":
            return len(v) <= val
        if key == "uniqueItems":
            if not val:
                return True
            return all(not json_equal(v[i], v[j]) for i in range(len(v)) for j in range(i))
        if key in ("items", "prefixItems", "additionalItems"):
            pkey, n, rest = self._items_layout(s)
            if key == "additionalItems" and rest != "additionalItems":
                return True
            if key == "items" and pkey == "items":
                return all(self._sub(x, ptr, "items", i) for i, x in enumerate(v[:n]))
            if key == "prefixItems":
                return all(self._sub(x, ptr, "prefixItems", i) for i, x in enumerate(v[:n]))
            return all(self._sub(x, ptr, key) for x in v[n:])
        if key == "contains":
            n = sum(1 for x in v if self._sub(x, ptr, "contains"))
            lo = s.get("minContains", 1)
            hi = s.get("maxContains")
            return n >= lo and (hi is None or n <= hi)
        return True

    def _object(self, key, val, v, s, ptr):
        if key == "required":
            return all(n in v for n in val)
        if key == "minProperties":
            return len(v) >= val
        if key == "maxProperties":
            return len(v) <= val
        if key == "properties":
            return all(self._sub(v[n], ptr, "properties", n) for n in val if n in v)
        if key == "patternProperties":
            return all(self._sub(x, ptr, "patternProperties", p)
                       for p in val for n, x in v.items() if matches_pattern(p, n))
        if key == "additionalProperties":
            props = s.get("properties", {})
            pats = list(s.get("patternProperties", {}))
            return all(self._sub(x, ptr, "additionalProperties") for n, x in v.items()
                       if n not in props and not any(matches_pattern(p, n) for p in pats))
        if key == "propertyNames":
            return all(self._sub(n, ptr, "propertyNames") for n in v)
        if key == "x-cfgmask-some-member":
            return any(self._sub(n, ptr, key, "key") and self._sub(x, ptr, key, "value")
                       for n, x in v.items())
        if key in ("dependentRequired", "x-cfgmask-implies"):
            return all(all(r in v for r in reqs) for n, reqs in val.items() if n in v)
        if key == "dependentSchemas":
            return all(self._sub(v, ptr, key, n) for n in val if n in v)
        if key == "dependencies":
            for n, dep in val.items():
                if n not in v:
                    continue
                if isinstance(dep, list):
                    if not all(r in v for r in dep):
                        return False
                elif not self._sub(v, ptr, key, n):
                    return False
            return True
        return True
