"""Writing a JSON value in one whitespace style, with the key order a grammar accepts.

A schema grammar fixes the order of keys (declared properties in schema
order, then the others), and which order that is can depend on which
``anyOf`` case a value takes.  :func:`serialize` finds it by asking a
matcher: it writes the value depth-first and, at each object, tries the
remaining keys in turn, keeping the first order under which the matcher
accepts the whole value.  It returns None when no order is accepted (the
value is not in the grammar's language), which makes it an acceptance test
too: a key order is tried only while its prefix is still allowed, so the
search is exhaustive yet cheap for real documents.

Scalars are written canonically: strings with ``json.dumps`` escapes
(``ensure_ascii=False``: only ``"``, ``\\`` and control characters escaped),
numbers as in ``numbers.canonical``.  :func:`dumps` writes the same layout
without a matcher (keys in the given order).
"""

import json

from cfgmask.frontends.json_schema.emit import FLEXIBLE_MAX_RUN, PRETTY_INDENT, PRETTY_MAX_DEPTH, STYLES
from cfgmask.frontends.json_schema.numbers import canonical
from cfgmask.frontends.json_schema.validate import json_type

__all__ = ["serialize", "dumps", "punctuation"]


def punctuation(style, depth):
    """The literal texts ``(empty_obj, open_obj, close_obj, empty_arr, open_arr, close_arr,
    comma, colon)`` of ``style`` at ``depth`` (``flexible``: the single-space form)."""
    if style == "compact":
        return "{}", "{", "}", "[]", "[", "]", ",", ":"
    if style == "pretty":
        d = min(depth, PRETTY_MAX_DEPTH)
        inner = "\n" + " " * (PRETTY_INDENT * (d + 1))
        outer = "\n" + " " * (PRETTY_INDENT * d)
        return "{}", "{" + inner, outer + "}", "[]", "[" + inner, outer + "]", "," + inner, ": "
    if style == "flexible":
        assert FLEXIBLE_MAX_RUN >= 1
        return "{}", "{ ", " }", "[]", "[ ", " ]", ", ", ": "
    raise ValueError(f"unknown style {style!r}; choose one of {', '.join(STYLES)}")


def scalar_text(v):
    t = json_type(v)
    if t == "number":
        return canonical(v)
    return json.dumps(v, ensure_ascii=False)


def dumps(value, style="compact", depth=0):
    """``value`` in ``style``, keys in the order given (no matcher involved)."""
    e_o, o_o, c_o, e_a, o_a, c_a, comma, colon = punctuation(style, depth)
    t = json_type(value)
    if t == "object":
        if not value:
            return e_o
        return o_o + comma.join(json.dumps(k, ensure_ascii=False) + colon + dumps(v, style, depth + 1)
                                for k, v in value.items()) + c_o
    if t == "array":
        if not value:
            return e_a
        return o_a + comma.join(dumps(v, style, depth + 1) for v in value) + c_a
    return scalar_text(value)


def _feed(m, text):
    data = text.encode("utf-8")
    return m.consume_bytes(data) == len(data)


def _candidate_orders(keys, key_orders):
    """The key orders a schema grammar can accept for an object with ``keys``.

    A grammar lists an object alternative's declared properties in one order
    and then the others in any order, so for each declared order the keys it
    names come first (in that order) and the rest keep their given order.
    """
    if key_orders is None:
        return None
    seen, out = set(), []
    kset = set(keys)
    for order in key_orders:
        if not kset.intersection(order):
            continue
        pos = {k: i for i, k in enumerate(order)}
        cand = tuple(sorted(keys, key=lambda k: (pos.get(k, len(order)), keys.index(k))))
        if cand not in seen:
            seen.add(cand)
            out.append(cand)
    plain = tuple(keys)
    if plain not in seen:
        out.append(plain)
    return out


def serialize(value, compiled, style="compact", require_end=True, budget=200_000, key_orders=None):
    """A text of ``value`` in ``style`` that ``compiled`` accepts, or None if there is none.

    ``require_end``: the text must be a complete document (EOS allowed).
    ``key_orders``: the declared-property orders of a schema grammar (default:
    ``compiled.grammar.json_schema_info["key_orders"]`` when present); with
    them only the orders the grammar can accept are tried, otherwise every
    order.  Raises ``UnicodeEncodeError`` for strings with lone surrogates (no
    UTF-8 spelling) and RuntimeError when the search exceeds ``budget`` steps.
    """
    if key_orders is None:
        info = getattr(compiled.grammar, "json_schema_info", None)
        key_orders = info.get("key_orders") if info else None
    steps = [budget]

    def value_states(m, v, depth):
        """Yield (matcher, text) for each way of writing ``v`` from ``m``."""
        steps[0] -= 1
        if steps[0] < 0:
            raise RuntimeError("serialize: search budget exhausted")
        e_o, o_o, c_o, e_a, o_a, c_a, comma, colon = punctuation(style, depth)
        t = json_type(v)
        if t == "object" and v:
            start = m.copy()
            if not _feed(start, o_o):
                return
            orders = _candidate_orders(list(v), key_orders)
            if orders is None:
                yield from obj_states(start, v, list(v), True, depth, o_o, comma, colon, c_o)
            else:
                for order in orders:
                    yield from obj_fixed(start, v, order, 0, depth, o_o, comma, colon, c_o)
        elif t == "array" and v:
            cur = m.copy()
            if not _feed(cur, o_a):
                return
            yield from arr_states(cur, v, 0, depth, o_a, comma, c_a)
        else:
            text = {"object": e_o, "array": e_a}.get(t) or scalar_text(v)
            mm = m.copy()
            if _feed(mm, text):
                yield mm, text

    def obj_states(m, v, remaining, first, depth, prefix, comma, colon, close):
        if not remaining:
            mm = m.copy()
            if _feed(mm, close):
                yield mm, prefix + close
            return
        for k in remaining:
            mm = m.copy()
            head = ("" if first else comma) + json.dumps(k, ensure_ascii=False) + colon
            if not _feed(mm, head):
                continue
            rest = [x for x in remaining if x != k]
            for m2, vt in value_states(mm, v[k], depth + 1):
                yield from obj_states(m2, v, rest, False, depth, prefix + head + vt, comma, colon, close)

    def obj_fixed(m, v, order, i, depth, prefix, comma, colon, close):
        if i == len(order):
            mm = m.copy()
            if _feed(mm, close):
                yield mm, prefix + close
            return
        k = order[i]
        mm = m.copy()
        head = ("" if i == 0 else comma) + json.dumps(k, ensure_ascii=False) + colon
        if not _feed(mm, head):
            return
        for m2, vt in value_states(mm, v[k], depth + 1):
            yield from obj_fixed(m2, v, order, i + 1, depth, prefix + head + vt, comma, colon, close)

    def arr_states(m, v, i, depth, prefix, comma, close):
        if i == len(v):
            mm = m.copy()
            if _feed(mm, close):
                yield mm, prefix + close
            return
        mm = m
        head = ""
        if i:
            mm = m.copy()
            if not _feed(mm, comma):
                return
            head = comma
        for m2, vt in value_states(mm, v[i], depth + 1):
            yield from arr_states(m2, v, i + 1, depth, prefix + head + vt, comma, close)

    root = compiled.matcher()
    for m, text in value_states(root, value, 0):
        if not require_end or m.is_accepting():
            return text
    return None
