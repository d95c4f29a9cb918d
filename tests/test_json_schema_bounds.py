"""JSON Schema compile bounds (docs/json-schema.md, "Compile bounds").

Schemas that used to stall the front end (2^N conditional splits, 2^N
dependency splits, counts unrolled to 10^9, a quadratic ``enum``) compile or
are refused promptly.  No wall time is asserted: a polynomial construction is
checked through the work counter (``max_work`` small and no deadline, so a
2^N regression raises ``CompileBudgetExceeded``), the rest in a child process
with a generous timeout.  The new constructions (discriminator dispatch,
dependency search) are checked for exactness against the ``jsonschema``
package on handwritten valid and invalid instances.
"""

import json
import os
import subprocess
import sys

import pytest

from cfgmask import CompileBudgetExceeded, Grammar, GrammarError
from cfgmask.frontends.json_schema import MAX_COUNT, compile_schema
from cfgmask.frontends.json_schema.serialize import serialize
from support.json_schema import accepts, compile_bytes, jsonschema_errors

jsonschema = pytest.importorskip("jsonschema")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIRROR = "/work/.mirror/guidance-ai+jsonschemabench/repo"
CORPUS = "/work/shared/corpora/json/maskbench-stalled"
REAL = ["saucectl.schema", "cloudify", "yippee-ki-json_config_schema", "minecraft-predicate",
        "v4-config.schema", "mongodb-atlas-search-index-definition", "jfrog-pipelines",
        "minecraft-item-modifier"]


def tagged_union(n, required=True, else_branch=False, type_in_if=False, outer_type=True,
                 shared=False, extra=False):
    """``extra``: each ``if`` also tests ``x`` (not a pure discriminator test)."""
    clauses = []
    for i in range(n):
        cond = {"properties": {"kind": {"const": f"k{i}"}}}
        if shared and i % 3 == 0:
            cond = {"properties": {"kind": {"enum": [f"k{i}", f"k{(i + 1) % n}", 7]}}}
        if extra:
            cond["properties"]["x"] = {"type": "integer"}
        if required:
            cond["required"] = ["kind"]
        if extra and i % 2:
            cond["required"] = cond.get("required", []) + ["x"]
        if type_in_if:
            cond["type"] = "object"
        clause = {"if": cond, "then": {"properties": {f"p{i}": {"type": "integer"}},
                                       "required": [f"p{i}"]}}
        if else_branch:
            clause["else"] = {"properties": {f"p{i}": {"type": "string"}}}
        clauses.append(clause)
    schema = {"properties": {"kind": {"type": ["string", "integer"]}}, "allOf": clauses}
    if outer_type:
        schema["type"] = "object"
    return schema


def dependent_required_cycle(n):
    return {"type": "object", "properties": {f"a{i}": {"type": "integer"} for i in range(n)},
            "dependentRequired": {f"a{i}": [f"a{(i + 1) % n}"] for i in range(n)}}


def dependent_required_pairs(n):
    props = {}
    for i in range(n):
        props[f"a{i}"] = {"type": "integer"}
        props[f"b{i}"] = {"type": "integer"}
    return {"type": "object", "properties": props,
            "dependentRequired": {f"a{i}": [f"b{i}"] for i in range(n)}}


def dependent_required_crossing(n):
    """n pairs declared as a0..a(n-1) then b0..b(n-1): the object grammar tracks n names."""
    props = {f"a{i}": {"type": "integer"} for i in range(n)}
    props.update({f"b{i}": {"type": "integer"} for i in range(n)})
    return {"type": "object", "properties": props,
            "dependentRequired": {f"a{i}": [f"b{i}"] for i in range(n)}}


def dependent_schemas_dispatch(n):
    """mongodb-atlas-search-index-definition's idiom: a property allowed for some 'type's."""
    props = {"type": {"enum": [f"t{i}" for i in range(n)]}}
    deps = {}
    for i in range(n):
        props[f"f{i}"] = {"type": "integer"}
        deps[f"f{i}"] = {"properties": {"type": {"enum": [f"t{i}", f"t{(i + 1) % n}"]}}}
    return {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "additionalProperties": False, "properties": props, "dependencies": deps}


def check_exact(schema, instances):
    """Every instance: accepted by the grammar iff ``jsonschema`` finds it valid."""
    compiled = compile_bytes(compile_schema(Grammar, schema))
    wrong = []
    for inst in instances:
        valid = not jsonschema_errors(inst, schema)
        accepted = serialize(inst, compiled) is not None
        if valid != accepted:
            wrong.append((inst, valid, accepted))
    assert not wrong, wrong
    return sum(1 for inst in instances if not jsonschema_errors(inst, schema))


def union_instances(n):
    out = [None, 1, "x", [], [1], True, {}, {"p0": 1}, {"p0": "s"}, {"kind": "zz"},
           {"kind": "zz", "p0": 1}, {"kind": 7}, {"kind": 7, "p0": 1, "p1": 2}, {"kind": 3},
           {"x": 1}, {"x": "s", "p1": 1}, {"kind": 7, "x": "s"}]
    for i in range(n):
        j = (i + 1) % n
        out += [{"kind": f"k{i}"}, {"kind": f"k{i}", f"p{i}": 1}, {"kind": f"k{i}", f"p{i}": "s"},
                {"kind": f"k{i}", f"p{i}": 1, f"p{j}": 2}, {"kind": f"k{i}", f"p{j}": 2},
                {"kind": f"k{i}", f"p{i}": 1, f"p{j}": "s"}, {"kind": f"k{i}", "x": 1},
                {"kind": f"k{i}", "x": "s"}, {"kind": f"k{i}", "x": 1, f"p{i}": 2},
                {"kind": f"k{i}", "x": 1, f"p{i}": 2, f"p{j}": 3}]
    return out


@pytest.mark.parametrize("variant", [
    {}, {"required": False}, {"else_branch": True}, {"type_in_if": True},
    {"outer_type": False}, {"outer_type": False, "required": False, "else_branch": True},
    {"shared": True}, {"shared": True, "else_branch": True, "outer_type": False},
    {"extra": True}, {"extra": True, "shared": True, "else_branch": True},
    {"extra": True, "required": False, "outer_type": False, "shared": True},
])
def test_tagged_union_dispatch_is_exact(variant):
    n = 5
    valid = check_exact(tagged_union(n, **variant), union_instances(n))
    assert valid >= 3  # both answers were exercised


def test_dispatch_on_enum_and_types_is_exact():
    schema = {"allOf": [
        {"if": {"properties": {"t": {"type": "string", "enum": ["a", "b", 1]}}},
         "then": {"required": ["x"]}, "else": {"properties": {"x": False}}},
        {"if": {"properties": {"t": {"const": "b"}}, "required": ["t"]},
         "then": {"properties": {"y": {"type": "integer"}}, "required": ["y"]}},
        {"if": {"properties": {"t": {"const": 1}}, "required": ["t"]}, "then": False},
    ], "properties": {"t": {}, "x": {}, "y": {}}}
    insts = [{}, {"x": 1}, {"t": "a"}, {"t": "a", "x": 1}, {"t": "b", "x": 1},
             {"t": "b", "x": 1, "y": 2}, {"t": "b", "x": 1, "y": "s"}, {"t": 1}, {"t": 1, "x": 1},
             {"t": "c"}, {"t": "c", "x": 1}, {"t": 1.0, "x": 2}, "s", 5, None]
    check_exact(schema, insts)


@pytest.mark.parametrize("n", [17, 40])
@pytest.mark.parametrize("extra", [False, True])
def test_tagged_union_is_polynomial(n, extra):
    # (shared values between non-pure ifs stay exponential in how many ifs share one value)
    compile_schema(Grammar, tagged_union(n, extra=extra, shared=not extra), max_work=20_000,
                   time_limit_s=None)


def test_dependencies_are_exact():
    schema = {"type": "object", "properties": {"a": {}, "b": {}, "c": {}, "d": {}},
              "dependentRequired": {"a": ["b"], "b": ["c"], "d": ["a"]}}
    names = ["a", "b", "c", "d"]
    insts = [{n: 1 for n in names if m >> names.index(n) & 1} for m in range(16)]
    assert check_exact(schema, insts) == 5  # {}, c, bc, abc, abcd
    n = 4
    schema = dependent_schemas_dispatch(n)
    insts = [{}, {"f0": 1}, {"type": "t0"}, {"type": "t9"}]
    for i in range(n):
        insts += [{"type": f"t{i}", f"f{j}": 1} for j in range(n)]
        insts.append({"type": f"t{i}", f"f{i}": 1, f"f{(i - 1) % n}": 2})
    check_exact(schema, insts)
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"a": {}, "b": {}}, "dependencies": {"a": ["b"], "b": {"required": ["a"]}}}
    check_exact(draft7, [{}, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}])


DEP_NAMES = ["a", "b", "c", "d", "e"]


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {n: {} for n in DEP_NAMES},
     "dependentRequired": {"a": ["c"], "d": ["b"], "e": ["e", "a"]}},
    {"properties": {n: {} for n in DEP_NAMES}, "additionalProperties": False,
     "dependentRequired": {"c": ["a", "e"], "b": ["d"], "a": ["b"]}},
    {"properties": {"a": {}, "b": {}, "c": False, "d": {}}, "required": ["d"],
     "dependentRequired": {"a": ["c"], "d": ["b"], "b": []}},
    {"properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"], "q": ["a"], "b": ["zz"]}},
    {"$schema": "http://json-schema.org/draft-07/schema#", "properties": {n: {} for n in DEP_NAMES},
     "dependencies": {"a": ["b"], "b": {"required": ["c"]}, "e": ["d"]}},
    {"allOf": [{"properties": {"a": {}, "b": {}}},
               {"properties": {"c": {}}, "dependentRequired": {"c": ["a"], "a": ["b"]}}],
     "dependentSchemas": {"b": {"required": ["e"]}}},
], ids=["forward-back-self", "closed", "forbidden-required", "undeclared", "draft7-mixed", "allOf"])
def test_tracked_dependencies_are_exact(schema):
    """dependentRequired among declared properties is tracked by the object grammar."""
    subsets = [{n: 1 for j, n in enumerate(DEP_NAMES) if m >> j & 1} for m in range(32)]
    extra = [dict(x, z=1) for x in subsets[:8]] + [1, "s", None]
    assert check_exact(schema, subsets + extra) >= 5


@pytest.mark.parametrize("schema", [dependent_required_cycle(14), dependent_required_cycle(30),
                                    dependent_required_pairs(14), dependent_required_pairs(30),
                                    dependent_schemas_dispatch(17)],
                         ids=["cycle14", "cycle30", "pairs14", "pairs30", "dispatch17"])
def test_dependencies_are_polynomial(schema):
    compile_schema(Grammar, schema, max_work=20_000, time_limit_s=None)


@pytest.mark.parametrize("schema", [
    {"properties": {n: {} for n in DEP_NAMES},
     "allOf": [{"if": {"required": ["a"]}, "then": {"required": ["b", "c"]}},
               {"if": {"required": ["d"], "type": "object"}, "then": {"required": ["a"]}}]},
    {"allOf": [{"if": {"required": ["a"]}, "then": {"required": ["z"]}},
               {"if": {"required": ["e"]}, "then": {"required": []}}]},
    {"type": "object", "properties": {"a": {}}, "if": {"required": ["a"]},
     "then": {"required": ["q"]}},
], ids=["declared", "undeclared", "unknown-consequent"])
def test_if_required_then_required_is_exact(schema):
    """``if: {required: [a]}, then: {required: bs}`` is read as dependentRequired {a: bs}."""
    subsets = [{n: 1 for j, n in enumerate(DEP_NAMES) if m >> j & 1} for m in range(32)]
    extra = [dict(x, z=1) for x in subsets[:8]] + [1, "s", None, []]
    assert check_exact(schema, subsets + extra) >= 5


def test_if_required_chain_is_polynomial():
    schema = {"type": "object", "properties": {f"{c}{i}": {} for i in range(30) for c in "ab"},
              "allOf": [{"if": {"required": [f"a{i}"]}, "then": {"required": [f"b{i}"]}}
                        for i in range(30)]}
    compile_schema(Grammar, schema, max_work=20_000, time_limit_s=None)


def test_crossing_dependencies_are_bounded():
    # the object grammar tracks up to 30 names at once: 2^30 states, compiled or
    # refused by the work counter, never a stall
    try:
        compile_schema(Grammar, dependent_required_crossing(30), time_limit_s=None)
    except CompileBudgetExceeded as e:
        assert e.construct == "dependentRequired" and "#/dependentRequired" in str(e)
        assert e.limit.startswith("max_work=")


def test_budget_names_keyword_and_pointer():
    # anyOf pairs that no construction shares: 2^20 cases
    schema = {"type": "object", "allOf": [
        {"anyOf": [{"required": [f"a{i}"]}, {"required": [f"b{i}"]}]} for i in range(20)]}
    with pytest.raises(CompileBudgetExceeded) as e:
        compile_schema(Grammar, schema, max_work=5_000, time_limit_s=None)
    assert isinstance(e.value, GrammarError)
    assert e.value.construct == "anyOf" and "#/allOf/" in e.value.where
    assert "max_work=5000" in str(e.value)
    with pytest.raises(CompileBudgetExceeded) as e:
        compile_schema(Grammar, schema, max_work=None, time_limit_s=0.5)
    assert "time_limit_s=0.5" in str(e.value)


@pytest.mark.parametrize("schema,keyword,pointer", [
    ({"type": "array", "minItems": 10 ** 9}, "minItems", "#/minItems"),
    ({"type": "array", "items": {"type": "integer"}, "maxItems": 10 ** 9}, "maxItems", "#/maxItems"),
    ({"type": "object", "maxProperties": 10 ** 9}, "maxProperties", "#/maxProperties"),
    ({"type": "object", "minProperties": 10 ** 9}, "minProperties", "#/minProperties"),
    ({"type": "array", "contains": {"type": "integer"}, "minContains": 10 ** 9}, "minContains",
     "#/minContains"),
    ({"type": "array", "contains": {"type": "integer"}, "maxContains": 10 ** 9}, "maxContains",
     "#/maxContains"),
    ({"properties": {"s": {"type": "string", "maxLength": 10 ** 9}}}, "maxLength",
     "#/properties/s/maxLength"),
])
def test_huge_counts_are_refused(schema, keyword, pointer):
    with pytest.raises(GrammarError) as e:
        compile_schema(Grammar, schema, max_work=50_000, time_limit_s=None)
    msg = str(e.value)
    assert e.value.construct == keyword and keyword in msg and pointer in msg and "limit" in msg


def test_huge_enum_is_refused():
    values = [f"{i:06d}-" + "x" * 20 for i in range(30_000)]  # a 700,000-state trie
    with pytest.raises(GrammarError) as e:
        compile_schema(Grammar, {"properties": {"e": {"enum": values}}}, max_work=50_000, time_limit_s=None)
    assert e.value.construct == "enum" and "#/properties/e" in str(e.value)
    assert "limit (262144)" in str(e.value)


def test_irrelevant_huge_counts_compile():
    # no additional properties: at most 2 members, so maxProperties says nothing
    compile_schema(Grammar, {"type": "object", "properties": {"a": {}, "b": {}}, "additionalProperties": False,
                    "maxProperties": 10 ** 9}, max_work=5_000, time_limit_s=None)
    # more matching items than items: no array
    compile_schema(Grammar, {"anyOf": [{"type": "array", "maxItems": 3, "contains": {}, "minContains": 10 ** 9},
                              {"type": "null"}]}, max_work=5_000, time_limit_s=None)
    compile_schema(Grammar, {"type": "array", "maxItems": MAX_COUNT}, max_work=None, time_limit_s=None)


def _compile_in_child(schema_json, timeout=60):
    """(status, detail) of compiling in a child process; fails the test if it does not return."""
    code = ("import json, sys, warnings\n"
            "warnings.simplefilter('ignore')\n"
            "from cfgmask import Grammar, GrammarError\n"
            "s = json.load(sys.stdin)\n"
            "try:\n"
            "    Grammar.from_json_schema(s)\n"
            "    print('ok')\n"
            "except GrammarError as e:\n"
            "    print('refused', str(e)[:300])\n")
    try:
        r = subprocess.run([sys.executable, "-c", code], input=schema_json, capture_output=True,
                           text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the compile did not answer within {timeout} s")
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip()


def test_enum_of_10k_strings_compiles():
    values = [f"value-{i:05d}-{i * 7919 % 10007}" for i in range(10_000)]
    assert _compile_in_child(json.dumps({"enum": values})) == "ok"
    schema = {"enum": values[:2000] + [1, 1.0, None]}
    check_exact(schema, [values[0], values[1999], values[2000], 1, 2, None, "value"])


def _real_schema(name):
    path = os.path.join(CORPUS, name + ".json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)["schema"]
    if os.path.isdir(MIRROR):
        r = subprocess.run(["git", f"--git-dir={MIRROR}" if not os.path.isdir(MIRROR + "/.git")
                            else f"--git-dir={MIRROR}/.git", "show",
                            f"HEAD:maskbench/data/JsonSchemaStore---{name}.json"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            return json.loads(r.stdout)["schema"]
    pytest.skip(f"MaskBench schema {name} not found: put maskbench/data/JsonSchemaStore---{name}.json "
                f"of guidance-ai/jsonschemabench at {CORPUS}/{name}.json")


@pytest.mark.parametrize("name", REAL)
def test_stalled_maskbench_schemas_answer(name):
    out = _compile_in_child(json.dumps(_real_schema(name)))
    assert out == "ok" or out.startswith("refused"), out


@pytest.mark.parametrize("kw", [dict(property_order="nope"), dict(property_order=[1]),
                                dict(max_work=-1), dict(max_work="5"), dict(max_work=True),
                                dict(time_limit_s=float("nan")), dict(time_limit_s=-3),
                                dict(time_limit_s=float("inf"))])
def test_bad_compile_options_name_the_option(kw):
    """A malformed option is a ConfigurationError naming it (property_order was a bare
    ValueError, the budget options were taken as given)."""
    from cfgmask import ConfigurationError
    (name, value), = kw.items()
    with pytest.raises(ConfigurationError) as e:
        Grammar.from_json_schema({"type": "integer"}, **kw)
    assert name in str(e.value)


@pytest.mark.parametrize("hi", [97, 150, 300, 1000])
@pytest.mark.parametrize("where", ["top", "property"])
def test_plain_max_length_is_a_counter_exact_at_its_bound(hi, where):
    # a plain maxLength above emit.COUNT_PLAIN_ABOVE is a character counter (one lexer
    # state for positions far from the bound): exact at the bound, escapes and
    # multi-byte characters counted as one character each
    string = {"type": "string", "maxLength": hi}
    schema = string if where == "top" else {"type": "object", "properties": {"s": string},
                                            "required": ["s"], "additionalProperties": False}
    g = compile_schema(Grammar, schema)
    c = compile_bytes(g)
    assert any(c.lexer_spec.counted(t) for t in range(g.n_terminals))

    def accepts_value(value):
        text = json.dumps(value if where == "top" else {"s": value}, ensure_ascii=False,
                          separators=(",", ":"))
        m = c.matcher()
        data = text.encode()
        return m.consume_bytes(data) == len(data) and m.is_accepting()

    unit = "aé\n€"                  # 1, 2, 2 (escaped) and 3 bytes: each one character
    for n in (0, 1, hi - 1, hi, hi + 1, hi + 5):
        value = (unit * (n // 4 + 1))[:n]
        assert accepts_value(value) == (n <= hi), (hi, n)
        # the oracle agrees on what the test asks
        assert bool(jsonschema_errors(value if where == "top" else {"s": value}, schema)) == (n > hi)


@pytest.mark.parametrize("schema", [
    {"type": "number", "multipleOf": 1},
    {"type": "number", "multipleOf": 2, "minimum": 3, "maximum": 8, "not": {"const": 6}},
    {"type": ["integer", "number"], "multipleOf": 3},
    {"type": "number", "multipleOf": 1, "not": {"multipleOf": 4}},
])
def test_integer_valued_multiple_of_on_a_number_takes_a_zero_fraction(schema):
    # a number is a plain decimal (docs/json-schema.md): "6.0" spells the value 6, so an
    # integer-valued multipleOf must not refuse it; the oracle is jsonschema on the value
    c = compile_bytes(compile_schema(Grammar, schema))

    for k in range(-2, 13):
        for text in (f"{k}", f"{k}.0", f"{k}.00", f"{k}.5"):
            valid = not jsonschema_errors(json.loads(text), schema) and text != "-0"
            assert accepts(c, text) == valid, (schema, text)
    assert not accepts(c, "6.") and not accepts(c, "6.0e0")


D4 = "http://json-schema.org/draft-04/schema#"


@pytest.mark.parametrize("schema, typed", [
    ({"const": 1}, False),
    ({"enum": [0, 2.0, 1.5, "x"]}, False),
    ({"$schema": D4, "enum": [1, 7]}, False),
    ({"$schema": D4, "type": "integer", "enum": [1, 7]}, True),
    ({"$schema": D4, "type": ["integer", "string"], "enum": [1, "a"]}, True),
    ({"$schema": D4, "type": ["integer", "number"], "enum": [1, 7]}, False),
    ({"type": "integer", "const": 7}, True),
    ({"type": "number", "const": 7}, False),
    ({"$schema": D4, "enum": [1, 7], "allOf": [{"type": "integer"}]}, True),
    ({"$schema": D4, "enum": [1, 7, "a"], "not": {"type": "integer"}}, True),
    ({"enum": [7, 1], "not": {"const": 7.0}}, False),
    ({"oneOf": [{"const": 1}, {"type": "integer", "minimum": 1}]}, True),
    ({"enum": [9007199254740993]}, True),
])
def test_integer_valued_constants_take_a_zero_fraction_unless_typed(schema, typed):
    # MaskBench's `0.0` for const 0: a constant is its value, so `7.0` is `7` -- except
    # where a `type` leaves out number (draft-04 does not count `7.0` as an integer,
    # and an integer is an integer literal in every draft) or a double would round it;
    # oracle: jsonschema
    c = compile_bytes(compile_schema(Grammar, schema))

    for base in ("0", "1", "7", "2", "1.5", "9007199254740993"):
        for text in (base, "-" + base, base + ".0", base + ".00", base + "e0", "-" + base + ".0"):
            if text.startswith("-0") or text.count(".") > 1:
                continue   # zero is never written -0 (docs/json-schema.md); not JSON
            valid = not jsonschema_errors(json.loads(text), schema)
            got = accepts(c, text)
            assert not got or valid, ("hole", schema, text)
            spelled = text.lstrip("-") == base or not typed and "e" not in text and \
                "." not in base and len(base) < 16
            if valid and spelled:
                assert got, ("refused", schema, text)


@pytest.mark.parametrize("schema, draft6", [
    ({"allOf": [{"enum": [{"a": 0.0}]}, {"not": {"enum": [{"a": False}]}}]}, True),
    ({"enum": [[1, {"b": 2}], "x"]}, True),
    ({"$schema": D4, "enum": [{"a": 1}], "properties": {"a": {"type": "integer"}}}, False),
    ({"$schema": D4, "enum": [[1, {"b": 2}]]}, False),
])
def test_integer_valued_numbers_inside_constants(schema, draft6):
    # MaskBench's {"a": 0.0} for enum [{"a": 0.0}]: from draft-06 on 1.0 is an integer
    # everywhere, so a nested constant number takes a zero fraction; in draft-04 a
    # sibling `properties` may type it integer, so it stays canonical; oracle: jsonschema
    c = compile_bytes(compile_schema(Grammar, schema))

    for text in ('{"a":0}', '{"a":0.0}', '{"a":1}', '{"a":1.00}', '{"a":1.5}', '{"a":false}',
                 '[1,{"b":2}]', '[1.0,{"b":2.0}]', '[1,{"b":2.5}]', '[1e0,{"b":2}]', '"x"'):
        valid = not jsonschema_errors(json.loads(text), schema)
        got = accepts(c, text)
        assert not got or valid, ("hole", schema, text)
        if valid and "e" not in text and (draft6 or "." not in text):
            assert got, ("refused", schema, text)


def test_integer_type_stays_an_integer_literal():
    # documented: an integer is written as an integer literal, in every draft
    c = compile_bytes(compile_schema(Grammar, {"type": "integer", "multipleOf": 2}))
    m = c.matcher()
    assert m.consume_bytes(b"4.0") < 3


@pytest.mark.parametrize("bounds", [
    {"minimum": 0}, {"exclusiveMinimum": 0}, {"maximum": 0}, {"exclusiveMaximum": 0},
    {"minimum": 0, "maximum": 0}, {"minimum": -0.0},
])
def test_zero_bounds_take_every_spelling(bounds):
    # a bound of zero is a sign, which an exponent cannot change: every RFC 8259
    # spelling of a value on the right side (zero never with a minus, by style)
    schema = {"type": "number", **bounds}
    c = compile_bytes(compile_schema(Grammar, schema))

    from decimal import Decimal
    for text in ("0", "0.0", "0e5", "0.00E-3", "-0", "-0.0", "1", "1e-05", "1E+2", "0.5",
                 "0.05e3", "-1", "-1e-05", "-0.5E2", "12.50e1", "00", "1.", ".5", "1e", "-"):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        valid = value is not None and not jsonschema_errors(value, schema) and \
            not (text.startswith("-") and Decimal(text) == 0)
        assert accepts(c, text) == valid, (bounds, text)
