"""Differential fuzzer for the JSON Schema compiler (helpers; the tests are in
``tests/test_json_schema_fuzz.py``).

One seed is one case: :func:`gen_schema` draws a small random schema, the
schema is compiled for the byte vocabulary, and :func:`check_schema` checks
the grammar against an independent oracle, the ``jsonschema`` package
(Draft 2020-12) with the departures docs/json-schema.md documents written
into it (:func:`oracle_errors`):

* soundness: documents drawn under the masks (a random allowed byte each
  step) must parse with ``json.loads`` and be valid; a step where nothing is
  allowed (``DeadEnd``) means the mask let through a prefix that cannot be
  completed;
* completeness: random values (built from the schema's own constants, keys
  and bounds, and mutated from the drawn documents) that the oracle accepts
  must be accepted when written in the grammar's style (``serialize``).

Replay one case with ``python -m tests.schema_fuzz SEED``.
"""

import datetime
import ipaddress
import json
import random
import re
import signal
import sys
import uuid
from contextlib import contextmanager
from decimal import Decimal
from fractions import Fraction

import cfgmask
from cfgmask import DeadEnd, GrammarError
from cfgmask.frontends.json_schema.serialize import dumps, serialize
from cfgmask.engine.vocab import Vocabulary

EOS = 256
BYTES = Vocabulary([bytes([i]) for i in range(256)] + [None], eos_token_ids=[EOS])
# The bytes plus multi-byte tokens that cross JSON structure, escapes and
# characters (two split one UTF-8 character), so that masks are computed for
# tokens, not only bytes.
_PIECES = [b'{"', b'":', b'","', b'"}', b'},', b'":"', b'[]', b'{}', b'[{', b'true', b'false',
           b'null', b'1.5', b'0.', b'00', b'-1', b'e+', b'E-', b'ab', b'x y', b'\\n', b'\\"',
           b'\\u00', b'\\ud83d', "é".encode(), "日本".encode(), "日".encode()[:2],
           "日".encode()[2:] + b'"', b'": ', b', ', b'\n  ', b'  ', b'2024-', b'-0', b'.0', b'a"']
MIXED = Vocabulary([bytes([i]) for i in range(256)] + _PIECES + [None],
                   eos_token_ids=[256 + len(_PIECES)])
VOCABS = {"bytes": BYTES, "mixed": MIXED}

KEYS = ["a", "b", "c", "x1", "x2"]
STRINGS = ["", "a", "b", "ab", "ba", "x y", "é", '"q"', "\\", "\n", "1.5", "日本", "😀"]
NUMBERS = [0, 1, -1, 2, 3, 7, 10, 100, -20, 0.5, 1.5, -2.25, 0.0075, 2.5, 3.0, 1e-07, 12.125, 1e20]
BOUNDS = [-10, -2.5, -1, 0, 0.5, 1, 1.5, 2, 3, 5, 10, 100, 0.0075, 1e-07, 1e20]
DIVISORS = [1, 2, 3, 5, 0.5, 0.25, 1.5, 0.01, 0.1]
# pattern -> the same language as a Python regex searched with re.search (ECMA
# semantics: '$' only at the very end, '.' excludes the ECMA line terminators).
_DOT = "[^\\n\\r\\u2028\\u2029]"
PATTERNS = {
    "a": "a",
    "^a": "^a",
    "b$": "b\\Z",
    "^[ab]*$": "^[ab]*\\Z",
    "^[a-c]{1,3}$": "^[a-c]{1,3}\\Z",
    "a.c": "a" + _DOT + "c",
    "^(ab|c)+$": "^(ab|c)+\\Z",
    "[0-9]": "[0-9]",
    "^x?y*$": "^x?y*\\Z",
    "^[^a]": "^[^a]",
    "\\.": "\\.",
    "^.{2}$": "^" + _DOT + "{2}\\Z",
}
FORMATS = ["date", "ipv4", "uuid", "hostname", "email", "no-such-format"]
TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]


# ------------------------------------------------------------------ schemas

class _Gen:
    def __init__(self, rng):
        self.rng = rng
        self.defs = {}

    def pick(self, seq):
        return self.rng.choice(seq)

    def chance(self, p):
        return self.rng.random() < p

    def schema(self, depth):
        out = self._schema(depth)
        if self.chance(0.12):
            # the same schema behind allOf or $ref: in-place references must not change it
            if self.chance(0.5):
                return {"allOf": [out]}
            name = f"d{len(self.defs)}"
            self.defs[name] = out
            return {"$ref": f"#/$defs/{name}"}
        return out

    def _schema(self, depth):
        r = self.rng.random()
        if depth <= 0 or r < 0.45:
            return self.typed(depth)
        if r < 0.52:
            return self.pick([True, False, {}, {"type": self.pick(TYPES)}])
        if r < 0.60:
            return self.literal()
        if r < 0.88:
            return self.combinator(depth)
        return self.ref(depth)

    def literal(self):
        vals = [self.value() for _ in range(self.rng.randint(1, 4))]
        if self.chance(0.4):
            return {"const": vals[0]}
        uniq = []
        for v in vals:  # enum items must be unique (bool vs number compared as JSON)
            if all(json.dumps(v, sort_keys=True) != json.dumps(u, sort_keys=True) for u in uniq):
                uniq.append(v)
        out = {"enum": uniq}
        if self.chance(0.3):
            out["type"] = self.pick(TYPES)
        return out

    def value(self, depth=1):
        r = self.rng.random()
        if r < 0.35:
            return self.pick(NUMBERS)
        if r < 0.65:
            return self.pick(STRINGS)
        if r < 0.75:
            return self.pick([None, True, False])
        if depth <= 0:
            return self.pick(KEYS)
        if r < 0.87:
            return [self.value(depth - 1) for _ in range(self.rng.randint(0, 2))]
        return {self.pick(KEYS): self.value(depth - 1) for _ in range(self.rng.randint(0, 2))}

    def typed(self, depth):
        t = self.pick(["integer", "number", "number", "string", "string", "array", "object",
                       "object", "null", "boolean", None])
        if t in ("array", "object") and depth <= 0:
            t = self.pick(["integer", "number", "string", "boolean"])
        if t is None:  # type-specific keywords without "type": they bind only their own type
            t = self.pick(["number", "string", "array", "object"]) if depth > 0 else "number"
            out = getattr(self, t)(depth)
            out.pop("type", None)
            return out
        if t in ("null", "boolean"):
            return {"type": t}
        out = getattr(self, "number" if t == "integer" else t)(depth)
        out["type"] = t
        if self.chance(0.1):
            out["type"] = [t, self.pick(TYPES)]
        return out

    def number(self, depth):
        out = {"type": "number"}
        lo, hi = sorted(self.rng.sample(BOUNDS, 2))
        if self.chance(0.5):
            out["exclusiveMinimum" if self.chance(0.3) else "minimum"] = lo
        if self.chance(0.5):
            out["exclusiveMaximum" if self.chance(0.3) else "maximum"] = hi
        if self.chance(0.3):
            out["multipleOf"] = self.pick(DIVISORS)
        return out

    def string(self, depth):
        out = {"type": "string"}
        if self.chance(0.4):
            out["minLength"] = self.rng.randint(0, 3)
        if self.chance(0.4):
            out["maxLength"] = self.rng.randint(out.get("minLength", 0), 5)
        if self.chance(0.35):
            out["pattern"] = self.pick(list(PATTERNS))
        if self.chance(0.2):
            out["format"] = self.pick(FORMATS)
        return out

    def array(self, depth):
        out = {"type": "array"}
        if self.chance(0.3):
            out["prefixItems"] = [self.schema(depth - 1) for _ in range(self.rng.randint(1, 2))]
        if self.chance(0.7):
            out["items"] = self.schema(depth - 1) if self.chance(0.85) else False
        if self.chance(0.25):
            out["contains"] = self.schema(depth - 1)
            if self.chance(0.4):
                out["minContains"] = self.rng.randint(0, 2)
            if self.chance(0.3):
                out["maxContains"] = self.rng.randint(1, 2)
        if self.chance(0.4):
            out["minItems"] = self.rng.randint(0, 2)
        if self.chance(0.4):
            out["maxItems"] = self.rng.randint(out.get("minItems", 0), 3)
        if self.chance(0.1):
            out["uniqueItems"] = True
            if self.chance(0.7):
                out["maxItems"] = self.rng.randint(0, 1)
        return out

    def object(self, depth):
        out = {"type": "object"}
        keys = self.rng.sample(KEYS, self.rng.randint(0, 3))
        if keys or self.chance(0.5):
            out["properties"] = {k: self.schema(depth - 1) for k in keys}
        if keys and self.chance(0.6):
            out["required"] = self.rng.sample(keys, self.rng.randint(1, len(keys)))
        if self.chance(0.1):  # required but not declared
            out["required"] = sorted(set(out.get("required", [])) | {self.pick(KEYS)})
        if self.chance(0.2):
            out["patternProperties"] = {self.pick(["^x", "b", "^[ac]$"]): self.schema(depth - 1)}
        if self.chance(0.45):
            out["additionalProperties"] = self.pick([False, False, True]) if self.chance(0.6) \
                else self.schema(depth - 1)
        if self.chance(0.15):
            out["propertyNames"] = self.pick([{"maxLength": 1}, {"pattern": "^[a-c]"},
                                              {"enum": ["a", "x1", "zz"]}, {"minLength": 2},
                                              {"not": {"const": "a"}}, {"const": "b"}])
        if self.chance(0.25):
            out["minProperties"] = self.rng.randint(0, 2)
        if self.chance(0.25):
            out["maxProperties"] = self.rng.randint(out.get("minProperties", 0), 3)
        if keys and self.chance(0.2):
            out["dependentRequired"] = {self.pick(keys): self.rng.sample(KEYS, 1)}
        if keys and self.chance(0.1):
            out["dependentSchemas"] = {self.pick(keys): self.pick([
                {"required": self.rng.sample(KEYS, 1)},
                {"properties": {self.pick(KEYS): self.typed(0)}},
                {"maxProperties": self.rng.randint(1, 3)}])}
        return out

    def combinator(self, depth):
        kind = self.pick(["allOf", "anyOf", "oneOf", "not", "if", "anyOf", "oneOf", "overlap"])
        if kind == "overlap":
            out = self.overlapping(depth)
        elif kind == "not":
            out = {"not": self.schema(depth - 1)}
        elif kind == "if":
            out = {"if": self.schema(depth - 1)}
            if self.chance(0.8):
                out["then"] = self.schema(depth - 1)
            if self.chance(0.7):
                out["else"] = self.schema(depth - 1)
        else:
            out = {kind: [self.schema(depth - 1) for _ in range(self.rng.randint(1, 3))]}
        if self.chance(0.35):  # a sibling keyword next to the combinator
            extra = self.typed(0)
            extra.update(out)
            out = extra
        return out

    def overlapping(self, depth):
        """A oneOf whose cases overlap (compiled as "case i and no other case"), sometimes
        negated: variants of one schema, a tagged union whose tag may be absent, or
        type-specific cases without a type (they hold for every other type)."""
        r = self.rng.random()
        n = self.rng.randint(2, 4)
        if r < 0.4:
            base = self.typed(max(depth - 1, 0))
            cases = [self._variant(base, depth) for _ in range(n)]
        elif r < 0.7:
            shared = {k: self.typed(0) for k in self.rng.sample(KEYS[1:], 2)}
            cases = []
            for _ in range(n):
                props = {"a": {"enum": self.rng.sample(["p", "q", "r"], self.rng.randint(1, 2))}}
                props.update({k: v for k, v in shared.items() if self.chance(0.7)})
                c = {"type": "object", "properties": props}
                if self.chance(0.6):
                    c["additionalProperties"] = False
                elif self.chance(0.3):
                    c["patternProperties"] = {"^x": self.typed(0)}
                req = [k for k in props if self.chance(0.25)]
                if req:
                    c["required"] = req
                cases.append(c)
        else:
            cases = []
            for _ in range(n):
                c = getattr(self, self.pick(["number", "string", "object", "array"]))(max(depth - 1, 0))
                c.pop("type", None)
                cases.append(c)
        uniq = []
        for c in cases:  # equal cases would leave nothing valid
            if all(json.dumps(c, sort_keys=True) != json.dumps(u, sort_keys=True) for u in uniq):
                uniq.append(c)
        while len(uniq) < 2:
            uniq.append(self.typed(max(depth - 1, 0)))
        out = {"oneOf": uniq}
        if self.chance(0.25):
            out = {"not": out}
        return out

    def _variant(self, base, depth):
        """``base`` changed a little: a keyword dropped or added, or its type dropped."""
        if not isinstance(base, dict):
            return base
        out = json.loads(json.dumps(base))
        r = self.rng.random()
        keys = [k for k in out if k != "type"]
        if r < 0.35 and keys:
            del out[self.pick(keys)]
        elif r < 0.8:
            t = out.get("type") if isinstance(out.get("type"), str) else None
            kind = {"integer": "number", "null": None, "boolean": None}.get(t, t)
            if kind in ("number", "string", "array", "object"):
                extra = getattr(self, kind)(max(depth - 1, 0))
                extra.pop("type", None)
                out.update(extra)
        elif "type" in out:
            del out["type"]
        return out

    def ref(self, depth):
        if self.chance(0.1):
            return {"$ref": "#"}  # the root: recursion, or a cycle the compiler must refuse
        if self.defs and self.chance(0.3):
            out = {"$ref": "#/$defs/" + self.pick(list(self.defs))}
            if self.chance(0.3):  # keywords next to $ref apply too (2020-12)
                out.update(self.typed(0))
            return out
        name = f"d{len(self.defs)}"
        self.defs[name] = None  # reserved, so that a recursive body can refer to it
        if self.chance(0.4):
            # recursion through an optional property or array items
            me = {"$ref": f"#/$defs/{name}"}
            body = self.pick([
                {"type": "object", "properties": {"v": self.typed(0), "next": me},
                 "additionalProperties": False},
                {"type": "array", "items": {"anyOf": [me, self.typed(0)]}, "maxItems": 2},
                {"anyOf": [self.typed(0), {"type": "array", "items": me, "maxItems": 2}]},
            ])
        else:
            body = self.schema(depth - 1)
        self.defs[name] = body
        return {"$ref": f"#/$defs/{name}"}


def gen_schema(seed, depth=3):
    """The random schema of ``seed`` (small: compiles in well under a second)."""
    g = _Gen(random.Random(seed))
    s = g.schema(depth)
    if g.defs:
        s = dict(s) if isinstance(s, dict) else {"allOf": [s]}
        s["$defs"] = g.defs
    return s


# ------------------------------------------------------------------- oracle

def _date(s):
    m = re.fullmatch(r"([0-9]{4})-([0-9]{2})-([0-9]{2})", s)
    if not m:
        return False
    y, mo, d = map(int, m.groups())
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    return 1 <= mo <= 12 and 1 <= d <= days[mo - 1]


def _ipv4(s):
    if not re.fullmatch(r"[0-9]{1,3}(\.[0-9]{1,3}){3}", s):
        return False
    try:
        ipaddress.IPv4Address(s)  # also refuses leading zeros
    except ValueError:
        return False
    return True


def _uuid(s):
    if not re.fullmatch(r"[0-9a-fA-F-]{36}", s) or [i for i, c in enumerate(s) if c == "-"] != [8, 13, 18, 23]:
        return False
    uuid.UUID(s)
    return True


_LDH_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def _hostname(s):
    # RFC 1123 labels, 253 in all; documented departure: "--" in positions 3-4 refused
    labels = s.split(".")
    return len(s) <= 253 and all(_LDH_LABEL.fullmatch(x) and x[2:4] != "--" for x in labels)


_SNUM_QUAD = re.compile(r"(?:25[0-5]|2[0-4][0-9]|[01]?[0-9]{1,2})(?:\.(?:25[0-5]|2[0-4][0-9]|[01]?[0-9]{1,2})){3}")


def _smtp_ipv6(s):
    # RFC 5321 4.1.3: IPv6-full/-comp/v4-full/v4-comp; "::" stands for at least two groups
    groups = 8
    if "." in s:
        head, _, v4 = s.rpartition(":")
        if not _SNUM_QUAD.fullmatch(v4):
            return False
        s, groups = head + ":" if head.endswith(":") else head, 6
        s = s[:-1] if s.endswith(":") and not s.endswith("::") else s
    if s.count("::") > 1:
        return False
    parts = [x for x in s.split("::") for x in (x.split(":") if x else [])]
    if not all(re.fullmatch(r"[0-9A-Fa-f]{1,4}", x) for x in parts):
        return False
    return len(parts) <= groups - 2 if "::" in s else len(parts) == groups


_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_SUB_DOMAIN = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"


def _email(s):
    # RFC 5321 4.1.2 Mailbox, its ABNF (documented: no size limits, no General-address-literal)
    local, at, domain = s.rpartition("@")
    if not at or not (re.fullmatch(rf"{_ATOM}(?:\.{_ATOM})*", local)
                      or re.fullmatch(r'"(?:[ !#-\[\]-~]|\\[ -~])*"', local)):
        return False
    if domain.startswith("[") and domain.endswith("]"):
        lit = domain[1:-1]
        return bool(_SNUM_QUAD.fullmatch(lit)) or (lit.startswith("IPv6:") and _smtp_ipv6(lit[5:]))
    return bool(re.fullmatch(rf"{_SUB_DOMAIN}(?:\.{_SUB_DOMAIN})*", domain))


_CHECKS = {"date": _date, "ipv4": _ipv4, "uuid": _uuid, "hostname": _hostname, "email": _email}
_VALIDATOR = None


def _validator_class():
    global _VALIDATOR
    if _VALIDATOR is None:
        import jsonschema
        from jsonschema import ValidationError

        def is_integer(checker, v):
            if isinstance(v, bool):
                return False
            if isinstance(v, (float, Decimal)):
                return v.is_finite() and v == v.to_integral_value() if isinstance(v, Decimal) \
                    else v.is_integer()
            return isinstance(v, int)

        def multiple_of(validator, d, instance, schema):
            # exact, in decimal: the package divides floats (0.3 is no multiple of 0.1 there)
            if not validator.is_type(instance, "number"):
                return
            if isinstance(instance, Decimal) and abs(instance.adjusted()) > 2000:
                raise _Undecidable("multipleOf of a number with a huge exponent")
            if (Fraction(instance) / Fraction(d)).denominator != 1:
                yield ValidationError(f"{instance!r} is not a multiple of {d}")

        def pattern(validator, p, instance, schema):
            if validator.is_type(instance, "string") and not re.search(PATTERNS.get(p, p), instance):
                yield ValidationError(f"{instance!r} does not match {p!r}")

        def fmt(validator, f, instance, schema):
            check = _CHECKS.get(f)
            if check and validator.is_type(instance, "string") and not check(instance):
                yield ValidationError(f"{instance!r} is not a {f!r}")

        base = jsonschema.Draft202012Validator
        types = base.TYPE_CHECKER.redefine("integer", is_integer)
        _VALIDATOR = jsonschema.validators.extend(
            base, {"multipleOf": multiple_of, "pattern": pattern, "format": fmt}, type_checker=types)
    return _VALIDATOR


class _Undecidable(Exception):
    """The oracle cannot decide this instance cheaply: the case skips it."""


def exact(value):
    """``value`` with every float as the Decimal its JSON text means (what the compiler compares)."""
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, list):
        return [exact(v) for v in value]
    if isinstance(value, dict):
        return {k: exact(v) for k, v in value.items()}
    return value


def oracle(schema):
    """``errors(instance)``: the oracle's error messages for ``instance`` (floats as Decimal)."""
    v = _validator_class()(exact(schema))
    return lambda instance: [e.message for e in v.iter_errors(exact(instance))]


def oracle_errors(instance, schema):
    return oracle(schema)(instance)


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def parse(text):
    return json.loads(text, parse_float=Decimal, parse_constant=_no_constant)


# ----------------------------------------------------------------- checking

_CLOSERS = {ord(c): 6.0 for c in '"]},:'}


class MaskMismatch(Exception):
    """A multi-byte token's mask bit disagrees with feeding its bytes one at a time."""


def _check_pieces(m, allowed):
    # the mask of a multi-byte token must say what its bytes, fed as 1-byte tokens, say
    for i, piece in enumerate(_PIECES, 256):
        mm = m.copy()
        ok = all(mm.try_consume(b) for b in piece)
        if ok != (i in allowed):
            raise MaskMismatch(f"after {m.prefix!r}: token {piece!r} is {'' if i in allowed else 'not '}"
                               f"in the mask but its bytes are {'' if ok else 'not '}accepted")


def sample(compiled, rng, max_bytes=300, stop=0.3):
    """A document drawn under the masks, or None when it ran past ``max_bytes``.

    Raises DeadEnd when the mask led into a prefix nothing can follow.
    """
    eos = compiled.vocab.eos_token_ids[0]
    m = compiled.matcher()
    while len(m.prefix) < max_bytes:
        allowed = m.allowed_tokens().tolist()
        if not allowed:
            raise DeadEnd(f"empty mask after {m.prefix!r}")
        if compiled.vocab is MIXED:
            _check_pieces(m, set(allowed))
        if eos in allowed and (rng.random() < stop or len(allowed) == 1):
            return m.prefix.decode("utf-8")
        choices = [t for t in allowed if t != eos]
        weights = [_CLOSERS.get(t, 1.0 if t < 0x80 else 0.05 if t < 256 else 0.5) for t in choices]
        m.consume(rng.choices(choices, weights)[0])
    return None


def _pool(schema, out=None):
    """Constants, keys and bounds found in a schema: material for candidate values."""
    if out is None:
        out = {"num": set(), "str": set(STRINGS[:6]), "val": []}
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k in ("const",):
                out["val"].append(v)
            elif k == "enum" and isinstance(v, list):
                out["val"].extend(v)
            elif k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
                for d in (0, 1, -1, 0.5, 0.25):
                    out["num"].add(v + d)
                out["num"].add(v)
                out["num"].add(v * 2)
            elif k in ("properties", "patternProperties", "$defs", "dependentRequired",
                       "dependentSchemas"):
                out["str"].update(v)
                for sub in v.values():
                    _pool(sub, out)
                continue
            elif k == "required":
                out["str"].update(v)
            _pool(v, out)
    elif isinstance(schema, list):
        for v in schema:
            _pool(v, out)
    return out


_FORMAT_SAMPLES = ["2024-02-29", "2023-02-29", "1.2.3.4", "256.1.1.1", "01.2.3.4",
                   "123e4567-e89b-12d3-a456-426614174000", "a.b", "a-b.c.d.e", "ab--c", "x@y.z",
                   "a.b@c", '"a b"@c', "x@[1.2.3.4]", "x@[IPv6:1::2]", "x@[IPv6:::1.2.3.4]"]


def random_value(rng, pool, depth=2):
    r = rng.random()
    if r < 0.12 and pool["val"]:
        return rng.choice(pool["val"])
    if r < 0.35:
        nums = sorted(pool["num"], key=repr) or [0]
        return rng.choice(nums + NUMBERS[:8] + [rng.randint(-5, 50)])
    if r < 0.55:
        s = rng.choice(sorted(pool["str"]) + _FORMAT_SAMPLES)
        if rng.random() < 0.3:
            s = s + rng.choice(["a", "b", "c", "x", "y", "0", "1"])
        return s
    if r < 0.62:
        return rng.choice([None, True, False])
    if depth <= 0:
        return rng.randint(0, 3)
    if r < 0.8:
        return [random_value(rng, pool, depth - 1) for _ in range(rng.randint(0, 3))]
    keys = sorted(pool["str"]) + KEYS
    return {rng.choice(keys): random_value(rng, pool, depth - 1) for _ in range(rng.randint(0, 3))}


def mutate(rng, value, pool):
    """A small random change somewhere in ``value``."""
    if isinstance(value, list) and value and rng.random() < 0.7:
        out = list(value)
        i = rng.randrange(len(out))
        op = rng.random()
        if op < 0.3:
            del out[i]
        elif op < 0.5:
            out.insert(i, out[i])
        else:
            out[i] = mutate(rng, out[i], pool)
        return out
    if isinstance(value, dict) and value and rng.random() < 0.7:
        out = dict(value)
        k = rng.choice(list(out))
        op = rng.random()
        if op < 0.3:
            del out[k]
        elif op < 0.45:
            out[rng.choice(sorted(pool["str"]) + KEYS)] = random_value(rng, pool, 1)
        else:
            out[k] = mutate(rng, out[k], pool)
        return out
    if isinstance(value, str) and rng.random() < 0.6:
        i = rng.randint(0, len(value))
        return value[:i] + rng.choice(["a", "b", "c", "x", "y", ".", "-", "0"]) + value[i + 1:]
    if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool) and rng.random() < 0.6:
        try:
            return rng.choice([value + 1, value - 1, -value, value * 2] + sorted(pool["num"], key=repr)[:6])
        except ArithmeticError:  # a drawn number with a huge exponent
            return random_value(rng, pool, 0)
    return random_value(rng, pool, 1)


def _tame(value):
    """No number with a huge exponent: its canonical spelling (all digits) would be enormous."""
    if isinstance(value, Decimal):
        return abs(value.adjusted()) <= 300
    if isinstance(value, list):
        return all(_tame(v) for v in value)
    if isinstance(value, dict):
        return all(_tame(v) for v in value.values())
    return True


class Timeout(Exception):
    pass


@contextmanager
def time_limit(seconds):
    """Raise Timeout after ``seconds`` (main thread, POSIX): keeps one stalled compile from hanging a run."""
    if not seconds or not hasattr(signal, "SIGALRM"):
        yield
        return

    def on_alarm(signum, frame):
        raise Timeout(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _show(value):
    return dumps(value) if _tame(value) else repr(value)


def _accepts(compiled, text):
    m = compiled.matcher()
    data = text.encode("utf-8")
    return m.consume_bytes(data) == len(data) and m.is_accepting()


def valid_candidates(rng, schema, errors, docs=(), n=40):
    """Up to ``n`` distinct random values (fresh, or mutated from ``docs``) that the oracle accepts."""
    pool = _pool(schema)
    tried = set()
    for i in range(n):
        value = mutate(rng, rng.choice(docs), pool) if docs and i % 2 else random_value(rng, pool)
        value = exact(value)
        if not _tame(value):
            continue
        key = json.dumps(value, sort_keys=True, default=str)
        if key in tried:
            continue
        tried.add(key)
        try:
            if errors(value):
                continue
        except (_Undecidable, RecursionError):
            continue
        yield value


def check_schema(schema, seed=0, samples=8, candidates=40, compiled_schema=None, limit=None,
                 style="compact", escapes="canonical", vocab="bytes"):
    """Run one case; returns ``(status, problems, stats)``.

    ``status``: "refused" (GrammarError), "timeout", or "checked".  Each
    problem is a readable line.  ``stats``: how many drawn documents were valid
    and how many valid candidates were fed.  ``compiled_schema`` (a test of
    the fuzzer itself) compiles another schema than the one the oracle checks
    against.
    """
    rng = random.Random(seed)
    problems = []
    stats = {"docs": 0, "valid": 0}
    errors = oracle(schema)
    try:
        with time_limit(limit):
            g = cfgmask.Grammar.from_json_schema(schema if compiled_schema is None else compiled_schema,
                                                 whitespace=style, escapes=escapes)
            c = cfgmask.compile(g, VOCABS[vocab])
    except GrammarError as e:
        if "no instance can satisfy" in str(e):  # then no value may be valid
            for v in valid_candidates(rng, schema, errors, n=candidates):
                return "refused", [f"refused as unsatisfiable, yet {_show(v)} is valid"], stats
        return "refused", [], stats
    except Timeout:
        return "timeout", [], stats
    except Exception as e:  # anything but GrammarError is a bug
        return "checked", [f"compile raised {type(e).__name__}: {str(e)[:300]}"], stats

    docs = []
    for _ in range(samples):
        try:
            text = sample(c, rng)
        except DeadEnd as e:
            problems.append(f"DeadEnd while sampling: {str(e)[:300]}")
            break
        except MaskMismatch as e:
            problems.append(str(e)[:400])
            break
        if text is None:
            continue
        try:
            value = parse(text)
        except ArithmeticError:  # an exponent beyond what Decimal holds: valid JSON, not checkable
            continue
        except ValueError as e:
            problems.append(f"sampled a non-JSON document {text!r}: {e}")
            continue
        try:
            errs = errors(value)
        except _Undecidable:
            continue
        except RecursionError:  # jsonschema loops on a $ref cycle that never reaches a constraint
            problems.append("compiled a $ref cycle that decides no value (jsonschema recurses forever)")
            break
        if errs:
            problems.append(f"sampled an invalid document {text!r}: {errs[0][:200]}")
        else:
            docs.append(value)
    stats["docs"] = len(docs)

    for value in list(docs) + list(valid_candidates(rng, schema, errors, docs, candidates)):
        if not _tame(value):
            continue
        try:
            text = serialize(value, c, style)
        except RuntimeError:  # serialize's order search ran out of budget
            continue
        stats["valid"] += 1
        if text is None:
            problems.append(f"refused a valid instance {_show(value)}")
        elif escapes == "any" and not text.isascii():
            # the same value with every non-ASCII character as \u escapes (only strings have them)
            alt = "".join(ch if ch.isascii() else json.dumps(ch)[1:-1] for ch in text)
            if not _accepts(c, alt):
                problems.append(f"refused a valid instance spelled {alt!r} (escapes='any')")
    return "checked", problems, stats


def configuration(seed):
    """The (style, escapes, vocab) of ``seed``: mostly the defaults, sometimes the others."""
    rng = random.Random(f"config {seed}")
    if rng.random() < 0.6:
        return "compact", "canonical", "bytes"
    return (rng.choice(["compact", "pretty", "flexible"]), rng.choice(["canonical", "any"]),
            rng.choice(["bytes", "mixed"]))


def run_seed(seed, depth=3, **kw):
    """Case ``seed``: ``(schema, config, status, problems, stats)``."""
    schema = gen_schema(seed, depth)
    config = configuration(seed)
    style, escapes, vocab = config
    status, problems, stats = check_schema(schema, seed=seed, style=style, escapes=escapes, vocab=vocab, **kw)
    return schema, config, status, problems, stats


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="replay fuzzer seeds")
    ap.add_argument("seeds", type=int, nargs="+")
    ap.add_argument("--depth", type=int, default=3)
    args = ap.parse_args()
    for seed in args.seeds:
        schema, config, status, problems, stats = run_seed(seed, depth=args.depth)
        print(f"seed {seed}: {status} {config} {stats}\n  schema: {json.dumps(schema)}")
        for p in problems:
            print("  ", p)
