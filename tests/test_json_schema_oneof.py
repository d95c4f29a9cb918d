"""Issue 24: overlapping ``oneOf`` compiled exactly, and the negations it needs.

``oneOf`` whose cases may overlap is "case i and no other case": each case
next to the negations of the cases that may overlap it, so the negations of
``additionalProperties``, ``patternProperties``, ``propertyNames``, ``oneOf``
itself, the dependency keywords, tuples, ``contains`` counts, ``if`` and
decimal ``multipleOf`` are written here too.  Every construct is checked
against the ``jsonschema`` package both ways:

* every value of a small enumeration (hand-written ones among them: values
  matching two cases, which must be refused, and values matching exactly one,
  which must be accepted) is accepted, written in the grammar's style
  (``serialize``), iff the oracle says it is valid;
* documents drawn at random under the masks are all valid.
"""

import itertools
import json
import random
import warnings

import pytest

from cfgmask import CompileBudgetExceeded, Grammar, GrammarError
from cfgmask.frontends.json_schema import SchemaLoosened, compile_schema
from cfgmask.frontends.json_schema.serialize import serialize
from support.json_schema import compile_bytes, jsonschema_errors, sample

pytest.importorskip("jsonschema")


def exact_errors(value, schema):
    """The oracle: ``jsonschema``'s validator for the schema's draft (2020-12 without
    ``$schema``); numbers compared exactly in decimal for 2020-12 schemas (the fuzzer's
    oracle: multipleOf in fractions), as the compiler compares them."""
    if "$schema" in schema:
        return jsonschema_errors(value, schema)
    from tests.schema_fuzz import oracle
    return oracle(schema)(value)


def check(schema, values, samples=40, seed=0, **kw):
    """Each value is accepted iff valid; every sampled document is valid.  Returns
    (accepted, refused) counts, so that a test can ask for both."""
    c = compile_bytes(compile_schema(Grammar, schema, **kw))
    wrong, counts = [], [0, 0]
    seen = set()
    for v in values:
        key = json.dumps(v, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        valid = not exact_errors(v, schema)
        text = serialize(v, c)
        counts[0 if valid else 1] += 1
        if (text is not None) != valid:
            wrong.append(f"{key}: valid={valid} but {'refused' if valid else 'accepted'}")
    assert not wrong, (schema, wrong[:10])
    rng = random.Random(seed)
    for _ in range(samples):
        doc = sample(c, rng)
        if doc is None:
            continue
        from tests.schema_fuzz import parse
        errs = exact_errors(parse(doc) if "$schema" not in schema else json.loads(doc), schema)
        assert not errs, (schema, doc, errs[:1])
    return counts


def objects(keys, vals, max_keys=2):
    """Every object with up to ``max_keys`` of ``keys``, each with a value from ``vals``."""
    out = [{}]
    for n in range(1, max_keys + 1):
        for ks in itertools.combinations(keys, n):
            for vs in itertools.product(vals, repeat=n):
                out.append(dict(zip(ks, vs)))
    return out


def arrays(vals, max_len=3):
    return [list(x) for n in range(max_len + 1) for x in itertools.product(vals, repeat=n)]


SCALARS = [None, True, 0, 1, 2.5, "", "a", "abc"]


# ------------------------------------------------------- overlapping oneOf

PEOPLE = {  # MaskBench Github_trivial---o58627 (draft-04): non-objects match both cases
    "$schema": "http://json-schema.org/draft-04/schema#",
    "type": "array",
    "items": {"oneOf": [
        {"properties": {"firstName": {"type": "string"}, "lastName": {"type": "string"},
                        "sport": {"type": "string"}}, "required": ["firstName"]},
        {"properties": {"vehicle": {"type": "string"}, "price": {"type": "integer"}},
         "additionalProperties": False}]}}


def test_overlapping_one_of_of_maskbench_o58627():
    items = objects(["firstName", "vehicle", "price", "x"], ["a", 1], 2) + SCALARS
    values = [[v] for v in items] + [[], [{"firstName": "a"}, {"vehicle": "b"}]]
    accepted, refused = check(PEOPLE, values)
    assert accepted > 10 and refused > 10
    c = compile_bytes(compile_schema(Grammar, PEOPLE))
    assert serialize(["x"], c) is None              # a string matches both cases
    assert serialize([{"firstName": "a", "vehicle": "b"}], c) is not None  # the first only
    assert serialize([{"vehicle": "b", "price": 3}], c) is not None        # the second only


TWO_OBJECTS = {"oneOf": [
    {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]}]}


def test_two_cases_matching_is_refused_one_is_accepted():
    c = compile_bytes(compile_schema(Grammar, TWO_OBJECTS))
    assert serialize({"a": 1, "b": "x"}, c) is None      # both cases
    assert serialize({"a": 1, "b": 2}, c) is not None    # the first only
    assert serialize({"a": "x", "b": "y"}, c) is not None  # the second only
    assert serialize({"c": 1}, c) is None                # none
    check(TWO_OBJECTS, objects(["a", "b", "c"], [1, "x", None]) + SCALARS)


# a tagged union whose tag is optional (MaskBench JsonSchemaStore---config's scms): the
# tag splits it, and only the objects without a tag need the negations of the other cases
OPTIONAL_TAG = {"type": "object", "oneOf": [
    {"type": "object", "additionalProperties": False, "properties": {
        "kind": {"enum": ["x"]},
        "spec": {"type": "object", "additionalProperties": False, "required": ["u"],
                 "properties": {"u": {"type": "string", "description": "one"},
                                "p": {"type": "string"}}}}},
    {"type": "object", "additionalProperties": False, "properties": {
        "kind": {"enum": ["y"]},
        "spec": {"type": "object", "additionalProperties": False, "required": ["u"],
                 "properties": {"u": {"type": "string", "description": "two"},
                                "t": {"type": "string"}}}}},
    {"type": "object", "additionalProperties": False, "properties": {
        "kind": {"enum": ["z", "x"]},
        "spec": {"type": "object", "additionalProperties": False, "required": ["t"],
                 "properties": {"t": {"type": "string"}}}}},
]}


def test_optional_tag_union():
    specs = [{"u": "a"}, {"u": "a", "p": "b"}, {"u": "a", "t": "b"}, {"t": "b"}, {}, {"p": "b"},
             {"u": 1}, "s"]
    values = []
    for kind in [None, "x", "y", "z", "w", 3]:
        for spec in specs + [None]:
            v = {}
            if kind is not None:
                v["kind"] = kind
            if spec is not None:
                v["spec"] = spec
            values.append(v)
    values.append({"kind": "x", "spec": {"u": "a"}, "other": 1})
    accepted, refused = check(OPTIONAL_TAG, values)
    assert accepted >= 8 and refused >= 20
    c = compile_bytes(compile_schema(Grammar, OPTIONAL_TAG))
    assert serialize({"spec": {"u": "a", "p": "b"}}, c) is not None   # the first case only
    assert serialize({"spec": {"u": "a"}}, c) is None                 # the first two
    assert serialize({}, c) is None                                   # all three
    assert serialize({"kind": "x", "spec": {"t": "b"}}, c) is not None  # the third only


def test_overlapping_numbers_strings_and_untyped_cases():
    schema = {"oneOf": [{"minimum": 2}, {"multipleOf": 3}, {"type": "string", "maxLength": 1},
                        {"type": "integer", "maximum": 4}]}
    nums = [-3, 0, 1, 2, 3, 4, 5, 6, 9, 2.5, 4.5, -1.5]
    check(schema, nums + ["", "a", "ab", None, True, [], {}])


def test_oneof_with_many_cases_some_disjoint():
    # 8 cases: more than the 6 the construction takes when they all overlap, but each
    # overlaps only its neighbour (disjoint ranges otherwise)
    schema = {"oneOf": [{"type": "integer", "minimum": 10 * i, "maximum": 10 * i + 12}
                        for i in range(8)]}
    check(schema, list(range(-2, 95, 1)) + ["a", 1.5])


# ------------------------------------------------------------ negated oneOf

def test_negated_one_of():
    schema = {"not": {"oneOf": [{"minimum": 2}, {"multipleOf": 3}, {"type": "string", "maxLength": 1}]}}
    check(schema, [-3, 0, 1, 2, 3, 4, 6, 9, 2.5, "", "a", "ab", None, True, [], {}])


def test_one_of_inside_an_overlapping_one_of():
    schema = {"oneOf": [{"oneOf": [{"type": "integer"}, {"minimum": 5}]}, {"multipleOf": 2}]}
    check(schema, list(range(-3, 13)) + [2.5, 5.5, 6.0, "a", None, [1]])


# ------------------------------------------- negated object keywords

def test_negated_additional_properties_false():
    schema = {"type": "object", "not": {"properties": {"a": {}}, "additionalProperties": False}}
    accepted, refused = check(schema, objects(["a", "b", ""], [1, "x"]) + SCALARS)
    assert accepted and refused


def test_negated_additional_properties_schema_on_a_declared_property():
    # the member whose value fails additionalProperties is a declared property (b)
    schema = {"properties": {"a": {}, "b": {}}, "additionalProperties": False,
              "not": {"properties": {"a": {}}, "additionalProperties": {"type": "string"}}}
    accepted, refused = check(schema, objects(["a", "b", "c"], [1, "x", None]) + SCALARS)
    assert accepted and refused


def test_negated_additional_properties_with_pattern_properties():
    schema = {"type": "object", "not": {"properties": {"a": {}}, "patternProperties": {"^x": {}},
                                        "additionalProperties": False}}
    check(schema, objects(["a", "x1", "xy", "b", "y"], [1]) + [{"a": 1, "b": 2, "x": 3}])


def test_negated_additional_properties_among_additional_keys_is_refused():
    # a value-constrained member among the additional properties: a later copy of a
    # duplicate key would be the value a parser keeps, so this stays refused
    schema = {"type": "object", "not": {"additionalProperties": {"type": "string"}}}
    with pytest.raises(GrammarError) as e:
        compile_schema(Grammar, schema)
    assert e.value.construct == "additionalProperties" and "#/not" in str(e.value), str(e.value)
    assert "duplicate" in str(e.value)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        g = compile_schema(Grammar, schema, strict=False)
    assert any(isinstance(x.message, SchemaLoosened) for x in w)
    c = compile_bytes(g)
    assert serialize({"a": 1}, c) is not None and serialize({"a": "x"}, c) is None


def test_negated_pattern_properties():
    schema = {"properties": {"ab": {}, "b": {}}, "additionalProperties": False,
              "not": {"patternProperties": {"^a": {"type": "integer"}}}}
    accepted, refused = check(schema, objects(["ab", "b", "c"], [1, "x"]) + SCALARS)
    assert accepted and refused
    # a false schema: some key that matches (any value), among the additional keys too
    schema = {"type": "object", "not": {"patternProperties": {"^a": False, "b$": {}}}}
    accepted, refused = check(schema, objects(["a", "ab", "b", "cb", ""], [1, "x"]))
    assert accepted and refused


def test_negated_property_names():
    schema = {"not": {"propertyNames": {"maxLength": 1}}}
    accepted, refused = check(schema, objects(["a", "ab", "", "abc"], [1]) + SCALARS)
    assert accepted and refused
    schema = {"not": {"propertyNames": {"enum": ["a", "b"]}}}
    check(schema, objects(["a", "b", "c"], [1]))


def test_negated_dependencies():
    check({"not": {"dependentRequired": {"a": ["b", "c"]}}}, objects(["a", "b", "c"], [1], 3) + SCALARS)
    check({"not": {"dependentSchemas": {"a": {"required": ["c"], "properties": {"b": {"type": "string"}}}}}},
          objects(["a", "b", "c"], [1, "x"], 3) + SCALARS)
    check({"$schema": "http://json-schema.org/draft-07/schema#",
           "not": {"dependencies": {"a": ["b"], "b": {"properties": {"a": {"type": "integer"}}}}}},
          objects(["a", "b"], [1, "x"]) + SCALARS)


# ------------------------------------------------ negated array keywords

def test_negated_tuples():
    check({"not": {"prefixItems": [{"type": "integer"}, {"type": "string"}]}},
          arrays([1, "a", None]) + SCALARS)
    check({"not": {"prefixItems": [{"type": "integer"}], "items": False}}, arrays([1, "a"]) + SCALARS)
    check({"$schema": "http://json-schema.org/draft-07/schema#",
           "not": {"items": [{"type": "integer"}], "additionalItems": False}},
          arrays([1, "a"]) + SCALARS)


def test_negated_contains_counts():
    check({"not": {"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3}},
          arrays([1, "a"], 5) + SCALARS)
    check({"type": "array", "not": {"contains": {"type": "integer"}, "minContains": 0, "maxContains": 1}},
          arrays([1, "a"], 4))


# ---------------------------------------------------------- negated if

def test_negated_if_then_else():
    check({"not": {"if": {"type": "integer"}, "then": {"minimum": 3}, "else": {"type": "string"}}},
          [-1, 0, 3, 5, 2.5, "a", None, True, [], {}])
    check({"not": {"if": {"required": ["a"]}, "then": {"required": ["b"]}}},
          objects(["a", "b", "c"], [1]) + SCALARS)


# ------------------------------------------------- negated multipleOf

@pytest.mark.parametrize("schema", [
    {"type": "number", "not": {"multipleOf": 0.5}},
    {"type": "number", "minimum": -3, "maximum": 3, "not": {"multipleOf": 1.5}},
    {"type": "number", "not": {"multipleOf": 2}},
    {"not": {"anyOf": [{"multipleOf": 2}, {"multipleOf": 0.75}]}},
    {"type": "integer", "not": {"multipleOf": 0.5}},            # every integer is: nothing left
])
def test_negated_decimal_multiple_of(schema):
    nums = [-4, -3, -1.5, -0.5, 0, 0.25, 0.5, 0.75, 1, 1.5, 2, 2.5, 3, 4, 4.5, 6, 7.25, 100, 0.125]
    try:
        check(schema, nums + ["a", None])
    except GrammarError as e:
        assert "no instance" in str(e) and schema.get("type") == "integer"


# ------------------------------------------------ bounds and refusals

def test_too_many_overlapping_cases_are_refused_naming_oneof():
    schema = {"properties": {"x": {"oneOf": [{"minimum": i} for i in range(7)]}}}
    with pytest.raises(GrammarError) as e:
        compile_schema(Grammar, schema)
    assert e.value.construct == "oneOf" and "oneOf at #/properties/x" in str(e.value), str(e.value)
    assert "at most 5" in str(e.value)
    # six overlap: compiled
    check({"oneOf": [{"minimum": i} for i in range(6)]}, [-1, 0, 1, 2.5, 5, 6, "a"])
    # strict=False: read as anyOf, with a warning
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c = compile_bytes(compile_schema(Grammar, schema, strict=False))
    assert any(isinstance(x.message, SchemaLoosened) and "oneOf" in str(x.message) for x in w)
    assert serialize({"x": 10}, c) is not None


def test_a_case_that_cannot_be_negated_is_named():
    schema = {"oneOf": [{"type": "array", "prefixItems": [{"type": "string"}],
                         "items": {"type": "integer"}},
                        {"type": "array", "maxItems": 2}]}
    with pytest.raises(GrammarError) as e:
        compile_schema(Grammar, schema)
    msg = str(e.value)
    assert e.value.construct == "oneOf" and "case 0" in msg and "items at #/oneOf/0/items" in msg, msg


def test_the_budget_bounds_the_construction():
    schema = {"oneOf": [{"type": "object", "properties": {k: {"type": "integer", "minimum": i}
                                                          for k in "abcdef"}}
                        for i in range(6)]}
    # 6 cases, each overlapping the 5 others in 6 properties: 6^5 combinations per case
    with pytest.raises(CompileBudgetExceeded) as e:
        compile_schema(Grammar, schema, max_work=300)
    assert e.value.construct == "oneOf" and "oneOf at #/oneOf took more than max_work=300" \
        in str(e.value), str(e.value)


def test_disjoint_cases_keep_the_fast_path():
    schema = {"oneOf": [{"type": "object", "required": ["kind"], "properties": {"kind": {"const": k}}}
                        for k in "abcdefghijklmnopqrstuvwxyz"]}
    g = compile_schema(Grammar, schema)
    assert g.json_schema_info["work"] < 400, g.json_schema_info["work"]


def test_a_tag_with_object_values_is_not_dispatched_on():
    # the split by a tag's values cannot exclude an object or array value: such a tag is
    # no dispatch test (the if dispatch accepted {"d": {"a": 1}} without "t" before)
    tag = {"enum": [{"a": 1}, "x"]}
    values = objects(["d", "t"], [{"a": 1}, "x", "y", 1])
    check({"oneOf": [{"type": "object", "properties": {"d": tag}},
                     {"type": "object", "properties": {"d": {"const": "y"}}, "required": ["d"]}]},
          values)
    schema = {"type": "object", "allOf": [
        {"if": {"properties": {"d": tag}}, "then": {"required": ["t"]}},
        {"if": {"properties": {"d": {"const": "y"}}}, "then": {"required": ["u"]}}]}
    try:
        check(schema, values)
    except GrammarError as e:  # refusing (fail closed) is right too
        assert "object value" in str(e), str(e)
