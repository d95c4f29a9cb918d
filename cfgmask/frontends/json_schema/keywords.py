"""Keyword values checked against the meta-schema rules before anything compiles.

A malformed schema (``{"type": 5}``, ``minLength: 1.5``, ``properties`` given
as a list, ``"if": 5``) is refused here with a :class:`~cfgmask.GrammarError`
naming the keyword, its JSON pointer and the rule it breaks, so that the
compiler behind it only ever sees well-typed values and no foreign exception
(``TypeError``, ``IndexError``, ``RecursionError``, ``ValueError``) escapes.

The walk is iterative and runs over the whole document (``$defs`` included,
as ``jsonschema``'s ``check_schema`` does).  It also bounds what the
recursive parts of the compiler would otherwise trip over: nesting deeper
than :data:`MAX_DEPTH` and numbers longer than :data:`MAX_NUMBER_DIGITS`.
"""

import functools
import math
import sys

from cfgmask.errors import GrammarError
from cfgmask.frontends.json_schema.drafts import DEFAULT, draft_for
from cfgmask.frontends.json_schema.errors import Unsupported

# JSON nesting (objects and arrays, const/enum values included) a schema may
# have: the compiler recurses along it, and deeper would hit Python's stack
MAX_DEPTH = 128
# longest chain of schemas applied to one value in place (real schemas: 12 at most
# in MaskBench's 11,305); loader follows the chains
MAX_IN_PLACE_DEPTH = 48
# digits of a number anywhere in the schema: a double has at most 309, and
# range automata recurse per digit (integers beyond Python's 4300-digit
# int/str limit cannot even be printed)
MAX_NUMBER_DIGITS = 400
# significant digits of an integer bound (minimum, maximum, ...): a range is a
# digit automaton, too large past about this many (a float has at most 17)
MAX_BOUND_DIGITS = 100
# characters of a value quoted in an error message
_SHOWN = 60

TYPES = frozenset(("null", "boolean", "integer", "number", "string", "array", "object"))

_NON_NEGATIVE_INT = ("minLength", "maxLength", "minItems", "maxItems", "minProperties",
                     "maxProperties", "minContains", "maxContains")
_NUMBER = ("minimum", "maximum")
_NUMBER_OR_FLAG = ("exclusiveMinimum", "exclusiveMaximum")   # draft-04 flags are honoured
_STRING = ("$ref", "$id", "$anchor", "$schema", "$comment", "pattern", "format",
           "$dynamicRef", "$dynamicAnchor", "$recursiveRef")
_SCHEMA = ("not", "if", "then", "else", "additionalProperties", "additionalItems",
           "unevaluatedProperties", "unevaluatedItems", "contains", "propertyNames",
           "contentSchema")
_SCHEMA_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def _show(v):
    text = repr(v)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + f"... ({len(text)} characters)"


def _pointer(p):
    return shorten("#" + p, 200)  # a pointer 128 levels deep is long


def _child(p, tok):
    return p + "/" + str(tok).replace("~", "~0").replace("/", "~1")


def _refuse(keyword, pointer, rule, value):
    where = _pointer(pointer)
    raise GrammarError(f"JSON schema: {keyword} at {where} must be {rule}, not {_show(value)}",
                       where=where, construct=keyword)


def _is_int(v):
    """A JSON integer: 3 or 3.0 (the meta-schemas say "integer", a mathematical one)."""
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or isinstance(v, float) and math.isfinite(v) and v.is_integer()


def _is_schema(v):
    return isinstance(v, (dict, bool))


def check_values(root):
    """Refuse non-JSON values, nesting deeper than MAX_DEPTH and over-long numbers (iterative)."""
    work = [(root, "", 0)]
    while work:
        v, p, depth = work.pop()
        if depth > MAX_DEPTH:
            raise GrammarError(f"JSON schema: the value at {_pointer(p)} is nested more than "
                               f"{MAX_DEPTH} levels deep (the limit, MAX_DEPTH)",
                               where=_pointer(p), construct="nesting")
        if isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str):
                    raise GrammarError(f"JSON schema: the object at {_pointer(p)} has a key "
                                       f"{_show(k)} that is not a string", where=_pointer(p),
                                       construct="schema")
                if isinstance(x, (dict, list)):
                    work.append((x, _child(p, k), depth + 1))
                else:
                    _check_scalar(x, _child(p, k))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                if isinstance(x, (dict, list)):
                    work.append((x, _child(p, i), depth + 1))
                else:
                    _check_scalar(x, _child(p, i))
        else:
            _check_scalar(v, p)


def _check_scalar(v, p):
    if v is None or isinstance(v, (bool, str)):
        return
    if isinstance(v, int):
        # compared, not printed: str() of a 5,000-digit int raises ValueError
        if abs(v) >= 10 ** MAX_NUMBER_DIGITS:
            raise GrammarError(f"JSON schema: the number at {_pointer(p)} has more than "
                               f"{MAX_NUMBER_DIGITS} digits (the limit, MAX_NUMBER_DIGITS)",
                               where=_pointer(p), construct="number")
        return
    if isinstance(v, float):
        if not math.isfinite(v):
            raise GrammarError(f"JSON schema: the number at {_pointer(p)} is {v!r}, which is not "
                               f"a JSON number", where=_pointer(p), construct="number")
        return
    raise GrammarError(f"JSON schema: the value at {_pointer(p)} is a Python "
                       f"{type(v).__name__}, not a JSON value", where=_pointer(p),
                       construct="schema")


def check_keywords(root, default=DEFAULT):
    """Refuse keyword values the meta-schema forbids, in every subschema (iterative).

    Each subschema is checked as its draft reads it (``drafts.py``; ``default``:
    the draft of a root without ``$schema``): a keyword the draft does not
    define is an annotation there, whatever its value."""
    work = [(root, "", default)]
    while work:
        s, p, outer = work.pop()
        if isinstance(s, bool):
            continue
        if not isinstance(s, dict):
            raise GrammarError(f"JSON schema: the schema at {_pointer(p)} must be an object or a "
                               f"boolean, not {_show(s)}", where=_pointer(p), construct="schema")
        draft = draft_for(s, outer)
        for k, v in s.items():
            kp = _child(p, k)
            if k.startswith("x-cfgmask-"):
                raise GrammarError(f"JSON schema: {k} at {_pointer(kp)} is reserved for the "
                                   f"compiler's own schemas", where=_pointer(kp), construct=k)
            if k not in draft.known:
                continue  # not a keyword of this draft: an annotation, any value
            if k in ("enum", "const", "examples", "default"):
                if k == "enum" and not isinstance(v, list):
                    _refuse(k, kp, "an array", v)
                continue
            if k == "type":
                ts = [v] if isinstance(v, str) else v
                if not isinstance(ts, list) or not ts or \
                        not all(isinstance(t, str) and t in TYPES for t in ts):
                    _refuse(k, kp, f"one of {', '.join(sorted(TYPES))} or a non-empty array of "
                            f"them", v)
            elif k in _NON_NEGATIVE_INT:
                if not _is_int(v) or v < 0:
                    _refuse(k, kp, "a non-negative integer", v)
            elif k in _NUMBER or k in _NUMBER_OR_FLAG:
                if isinstance(v, bool) and k in _NUMBER_OR_FLAG:
                    continue
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    _refuse(k, kp, "a number" + (" (or a draft-04 boolean)"
                                                 if k in _NUMBER_OR_FLAG else ""), v)
                if isinstance(v, int) and len(str(abs(v)).rstrip("0")) > MAX_BOUND_DIGITS:
                    raise GrammarError(
                        f"JSON schema: {k} at {_pointer(kp)} has {len(str(abs(v)).rstrip('0'))} "
                        f"significant digits; a bound is compiled to a digit automaton and may "
                        f"have at most {MAX_BOUND_DIGITS} (MAX_BOUND_DIGITS)",
                        where=_pointer(kp), construct=k)
            elif k == "multipleOf":
                if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                    _refuse(k, kp, "a number greater than 0", v)
            elif k == "uniqueItems":
                if not isinstance(v, bool):
                    _refuse(k, kp, "a boolean", v)
            elif k in _STRING:
                if not isinstance(v, str):
                    _refuse(k, kp, "a string", v)
            elif k == "required":
                if not isinstance(v, list) or not all(isinstance(n, str) for n in v):
                    _refuse(k, kp, "an array of strings", v)
            elif k == "dependentRequired":
                if not isinstance(v, dict) or not all(
                        isinstance(r, list) and all(isinstance(n, str) for n in r)
                        for r in v.values()):
                    _refuse(k, kp, "an object whose values are arrays of strings", v)
            elif k == "dependencies":
                if not isinstance(v, dict):
                    _refuse(k, kp, "an object", v)
                for n, d in v.items():
                    if isinstance(d, list):
                        if not all(isinstance(x, str) for x in d):
                            _refuse(k, _child(kp, n), "a schema or an array of strings", d)
                    elif _is_schema(d):
                        work.append((d, _child(kp, n), draft))
                    else:
                        _refuse(k, _child(kp, n), "a schema or an array of strings", d)
            elif k == "$vocabulary":
                if not isinstance(v, dict) or not all(isinstance(x, bool) for x in v.values()):
                    _refuse(k, kp, "an object whose values are booleans", v)
            elif k in _SCHEMA:
                if not _is_schema(v):
                    _refuse(k, kp, "a schema (an object or a boolean)", v)
                work.append((v, kp, draft))
            elif k == "items":
                if isinstance(v, list):
                    if not all(_is_schema(x) for x in v):
                        _refuse(k, kp, "a schema or an array of schemas", v)
                    work += [(x, _child(kp, i), draft) for i, x in enumerate(v)]
                elif _is_schema(v):
                    work.append((v, kp, draft))
                else:
                    _refuse(k, kp, "a schema or an array of schemas", v)
            elif k in _SCHEMA_LIST:
                if not isinstance(v, list) or not v or not all(_is_schema(x) for x in v):
                    _refuse(k, kp, "a non-empty array of schemas", v)
                work += [(x, _child(kp, i), draft) for i, x in enumerate(v)]
            elif k in _SCHEMA_MAP:
                if not isinstance(v, dict) or not all(_is_schema(x) for x in v.values()):
                    _refuse(k, kp, "an object whose values are schemas", v)
                work += [(x, _child(kp, n), draft) for n, x in v.items()]


# ------------------------------------------------------------ error messages

# characters of a GrammarError message from the JSON Schema front end
MAX_MESSAGE = 1000


def shorten(text, limit=MAX_MESSAGE):
    """``text`` cut in the middle to at most about ``limit`` characters."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 4
    return f"{text[:head]} ...({len(text) - head - tail} characters left out)... {text[-tail:]}"


def bounded_errors(fn):
    """Decorate the front end's entry point: every GrammarError it raises has a
    bounded message (a 1 MB literal or pattern is not quoted whole), and a
    RecursionError the checks above did not foresee is still a GrammarError."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except GrammarError as e:
            msg = str(e)
            if len(msg) <= MAX_MESSAGE and len(str(e.where or "")) <= MAX_MESSAGE // 4:
                raise
            short = type(e).__new__(type(e))
            Exception.__init__(short, shorten(msg))
            short.__dict__.update(e.__dict__)
            short.where = shorten(str(e.where), MAX_MESSAGE // 4) if e.where is not None else None
            raise short from None
        except Unsupported as e:  # an internal signal some path forgot to turn into an error
            raise GrammarError(shorten(f"JSON schema: {e.keyword} cannot be compiled exactly: "
                                       f"{e.why}"), where="#", construct=e.keyword) from None
        except RecursionError:
            raise GrammarError(f"JSON schema: the schema nests deeper than the compiler can follow "
                               f"(Python's recursion limit, {sys.getrecursionlimit()} frames, was "
                               f"reached); the checked limits are MAX_DEPTH={MAX_DEPTH} levels of "
                               f"nesting and {MAX_IN_PLACE_DEPTH} schemas applied in place",
                               where="#", construct="nesting") from None
    return wrapper
