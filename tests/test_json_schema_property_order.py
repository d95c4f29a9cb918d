"""Declared-property order: ``property_order="written"`` (default) and ``"own-first"``.

"written" merges the ``properties`` (then the ``required``) of a conjunction
left to right as the schema is written, a ``$ref`` standing where it is
written: llguidance's documented stable property order.  The expected orders
below are written by hand from that rule; where llguidance is installed the
same documents are also fed to it.
"""

import json
import warnings

import pytest

from cfgmask.grammar import Grammar
from cfgmask.frontends.json_schema import PROPERTY_ORDERS, compile_schema
from support.json_schema import accepts, compile_bytes

INT = {"type": "integer"}
BASE = {"properties": {"id": INT}}

# (schema, documents, which of them "written" accepts, which "own-first" accepts)
CASES = [
    ({"allOf": [{"properties": {"a": INT}}], "properties": {"b": INT}},
     [{"a": 1, "b": 2}, {"b": 2, "a": 1}], [True, False], [False, True]),
    ({"properties": {"b": INT}, "allOf": [{"properties": {"a": INT}}]},
     [{"a": 1, "b": 2}, {"b": 2, "a": 1}], [False, True], [False, True]),
    ({"allOf": [{"$ref": "#/$defs/Base"}, {"properties": {"name": INT}}], "properties": {"z": INT},
      "$defs": {"Base": BASE}},
     [{"id": 1, "name": 2, "z": 3}, {"z": 3, "name": 2, "id": 1}], [True, False], [False, True]),
    ({"$defs": {"Base": BASE}, "properties": {"z": INT}, "$ref": "#/$defs/Base"},
     [{"id": 1, "z": 3}, {"z": 3, "id": 1}], [False, True], [False, True]),
    ({"$ref": "#/$defs/Base", "properties": {"z": INT}, "$defs": {"Base": BASE}},
     [{"id": 1, "z": 3}, {"z": 3, "id": 1}], [True, False], [False, True]),
    ({"required": ["r"], "allOf": [{"properties": {"a": INT}, "required": ["q"]}],
      "properties": {"b": INT}},
     [{"a": 1, "b": 2, "r": 0, "q": 0}, {"b": 2, "a": 1, "r": 0, "q": 0}], [True, False],
     [False, True]),
    ({"anyOf": [{"properties": {"a": INT}}], "properties": {"b": INT}},
     [{"a": 1, "b": 2}, {"b": 2, "a": 1}], [True, False], [False, True]),
    ({"if": {"properties": {"k": {"const": "n"}}, "required": ["k"]},
      "then": {"properties": {"v": INT}}, "else": {"properties": {"v": {"type": "string"}}}},
     [{"k": "n", "v": 1}, {"k": "s", "v": "x"}, {"v": 1, "k": "n"}], [True, True, False],
     [True, True, False]),
]


def _compact(doc):
    return json.dumps(doc, separators=(",", ":"))


@pytest.mark.parametrize("order", PROPERTY_ORDERS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_property_order(case, order):
    schema, docs, written, own_first = CASES[case]
    c = compile_bytes(compile_schema(Grammar, schema, property_order=order))
    want = written if order == "written" else own_first
    assert [accepts(c, _compact(d)) for d in docs] == want


def test_default_is_written_and_unknown_orders_are_refused():
    schema, docs, written, _ = CASES[0]
    c = compile_bytes(compile_schema(Grammar, schema))
    assert [accepts(c, _compact(d)) for d in docs] == written
    with pytest.raises(ValueError):
        compile_schema(Grammar, schema, property_order="sorted")


def _llguidance_bytes():
    llg = pytest.importorskip("llguidance")
    tokens = [bytes([i]) for i in range(256)] + [b"<EOS>"]

    class Wrapped:  # the attributes llguidance.TokenizerWrapper reads
        eos_token_id = 256
        bos_token_id = None
        special_token_ids = [256]

        def __init__(self):
            self.tokens = tokens

        def __call__(self, s):
            return list(s.encode() if isinstance(s, str) else s)

    return llg, llg.LLTokenizer(llg.TokenizerWrapper(Wrapped()))


def test_written_order_is_llguidances():
    llg, tok = _llguidance_bytes()
    for schema, docs, written, _ in CASES:
        if "if" in schema:
            continue  # llguidance does not implement if/then/else
        g = llg.LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": False})
        got = []
        for d in docs:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = llg.LLMatcher(tok, g, log_level=0)
            assert not m.is_error(), m.get_error()
            got.append(all(m.consume_token(b) for b in _compact(d).encode()) and m.is_accepting())
        assert got == written, schema


def test_a_oneof_tag_split_keeps_the_written_order():
    # MaskBench o25692: a oneOf split by its tag `t` (its cases overlap) must not move
    # `t` ahead of the properties written before it: the tag stands where the cases
    # declare it, here last
    items = {"type": "array", "items": {"enum": ["s", "m"]}, "minItems": 1}
    schema = {
        "type": "object", "required": ["n"], "properties": {"n": {"type": "string"}},
        "oneOf": [{"$ref": "#/$defs/changed"}, {"$ref": "#/$defs/error"}],
        "$defs": {
            "changed": {"required": ["st"], "properties": {"st": {"enum": ["ch"]}},
                        "oneOf": [{"$ref": "#/$defs/M"}, {"$ref": "#/$defs/L"}, {"$ref": "#/$defs/D"}]},
            "error": {"required": ["st", "e"], "properties": {"st": {"enum": ["err"]}, "e": {"type": "string"}}},
            "M": {"required": ["c", "t"], "properties": {"c": items, "t": {"enum": ["f", "d"]}}},
            "L": {"required": ["c", "t"], "properties": {"c": items, "t": {"enum": ["l"]}}},
            "D": {"required": ["c"], "properties": {"c": {"enum": [["x"]]}}}}}
    c = compile_bytes(compile_schema(Grammar, schema))
    docs = [{"n": "a", "st": "ch", "c": ["s"], "t": "f"}, {"n": "a", "st": "ch", "c": ["m"], "t": "l"},
            {"n": "a", "st": "ch", "c": ["x"]}, {"n": "a", "st": "err", "e": "x"},
            {"n": "a", "st": "ch", "t": "f", "c": ["s"]}, {"t": "f", "n": "a", "st": "ch", "c": ["s"]},
            {"n": "a", "st": "ch", "c": ["s"]}]
    assert [accepts(c, _compact(d)) for d in docs] == [True] * 4 + [False] * 3


def _grammar_text(schema):
    g = compile_schema(Grammar, schema)
    return g.rules_text() + "\n".join(g.terminal_patterns)


@pytest.mark.parametrize("schema", [
    # a place reached in the document before a $ref inside it reaches it again: its
    # written key follows the $ref round the loop until the depth guard cuts it
    {"properties": {"a": {"properties": {"x": INT, "b": {"$ref": "#/properties/a"}},
                          "allOf": [{"properties": {"y": INT}}]},
                    "c": {"$ref": "#/properties/a/properties/b"}}},
    # objects nested through $refs 30 deep: chains of about 90 links, longer than
    # the guard, each level also with an allOf
    {"$ref": "#/$defs/d0", "$defs": {**{f"d{i}": {
        "allOf": [{"properties": {f"q{i}": INT}}],
        "properties": {f"p{i}": {"$ref": f"#/$defs/d{i + 1}"}, f"r{i}": INT}} for i in range(30)},
        "d30": {"properties": {"z": INT}}}},
])
def test_written_keys_memoised_equal_the_walk(schema, monkeypatch):
    # typed._written keeps keys by pointer (or pointer and depth where the guard cut
    # them); the grammar must be the one the plain walk gives
    from cfgmask.frontends.json_schema.normalize import Normalizer
    memoised = _grammar_text(schema)
    monkeypatch.setattr(Normalizer, "_written", lambda self, p, depth: self._written_of(p, depth))
    assert _grammar_text(schema) == memoised
