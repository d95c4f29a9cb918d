"""The JSON Schema front end, piece by piece, against independent oracles.

* scalar automata: Python's ``re`` on the *decoded* value, ``json.loads``,
  exact ``Decimal`` arithmetic and brute force decide what should match;
* grammars: documents written by ``json.dumps`` are accepted or refused
  byte by byte (EOS at the end) as the schema says;
* errors: strict mode names the keyword and the JSON pointer, ``strict=False``
  warns with what it loosened;
* the public hooks: ``Grammar.from_json_schema``, the CLI, the HF processor.

The corpus oracles (JSON-Schema-Test-Suite, JSONSchemaBench) are in
``test_json_schema_corpora.py``.
"""

import json
import random
import re
import warnings
from decimal import Decimal

import numpy as np
import pytest

import cfgmask
from cfgmask import Grammar, GrammarError
from cfgmask.frontends.json_schema import (STYLES, SchemaLoosened, compile_schema, json_grammar, validate)
from cfgmask.frontends.json_schema import automata as A
from cfgmask.frontends.json_schema import numbers as N
from cfgmask.frontends.json_schema import strings as S
from cfgmask.frontends.json_schema.serialize import dumps, serialize
from cfgmask.automata import compile_regex
from support.json_schema import BYTES, accepts, compile_bytes

ALPHABET = ["a", "b", "n", "u", "0", "7", "-", " ", "/", '"', "\\", "\n", "\t", "\x01", "é", "€",
            "😀", "\u2028", "Z"]


def random_text(rng, n=4):
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, n)))


def spellings(rng, s):
    """Several JSON texts of the string ``s``: canonical, ASCII-escaped, random \\u escapes."""
    out = {json.dumps(s, ensure_ascii=False), json.dumps(s, ensure_ascii=True)}
    parts = []
    for c in s:
        r = rng.random()
        if r < 0.3:
            if ord(c) < 0x10000:
                esc = f"\\u{ord(c):04x}"
                parts.append(esc.upper().replace("\\U", "\\u") if rng.random() < 0.5 else esc)
            else:
                parts.append(json.dumps(c, ensure_ascii=True)[1:-1])
        else:
            parts.append(json.dumps(c, ensure_ascii=False)[1:-1])
    out.add('"' + "".join(parts) + '"')
    return sorted(out)


# ------------------------------------------------------------ string texts

@pytest.mark.parametrize("canonical", [False, True])
def test_literal_sets_match_decoded_membership(canonical):
    rng = random.Random(1)
    for _ in range(40):
        values = [random_text(rng, 3) for _ in range(rng.randint(1, 4))]
        for complement in (False, True):
            dfa, text = A.literal_set_dfa(values, complement=complement, canonical=canonical)
            for _ in range(60):
                s = rng.choice(values) if rng.random() < 0.4 else random_text(rng, 4)
                for t in spellings(rng, s):
                    expect = (json.loads(t) in values) != complement
                    if canonical and t != json.dumps(s, ensure_ascii=False):
                        expect = False
                    assert dfa.matches(t.encode()) == expect, (values, complement, t)


@pytest.mark.parametrize("canonical", [False, True])
def test_literal_set_dfa_equals_its_pattern(canonical):
    """The directly built automaton accepts what compile_regex makes of its pattern text."""
    rng = random.Random(2)
    for _ in range(10):
        values = [random_text(rng, 3) for _ in range(3)]
        dfa, text = A.literal_set_dfa(values, canonical=canonical)
        from cfgmask.automata import regex_to_dfa as _compile_regex
        ref = _compile_regex(text, "ref", 20000)
        for _ in range(100):
            s = rng.choice(values) if rng.random() < 0.5 else random_text(rng, 3)
            for t in spellings(rng, s):
                assert dfa.matches(t.encode()) == ref.matches(t.encode()), (values, t)


@pytest.mark.parametrize("value", ["name", "a", "aaa", "x.y", "", "Zz~ !#[]", "abcabc"])
def test_key_chain_column_partition_is_its_columns(value):
    """A property name's byte chain hands its byte-class partition to byte_classes
    instead of having it computed: it must be the partition of its columns."""
    from cfgmask.automata import column_classes as _column_classes
    dfa, _ = A.literal_set_dfa([value], canonical=True)
    assert dfa.column_class().tolist() == _column_classes(dfa.trans)[0].tolist()


@pytest.mark.parametrize("canonical", [False, True])
@pytest.mark.parametrize("lo,hi", [(0, 0), (0, 3), (2, 2), (1, 5)])
def test_bounded_strings_count_decoded_characters(lo, hi, canonical):
    rng = random.Random(lo * 10 + hi)
    dfa, _ = A.bounded_string_dfa(lo, hi, canonical=canonical)
    for _ in range(300):
        s = random_text(rng, 7)
        for t in spellings(rng, s):
            ok = lo <= len(json.loads(t)) <= hi
            if canonical and t != json.dumps(s, ensure_ascii=False):
                ok = False
            assert dfa.matches(t.encode()) == ok, t
    # a surrogate pair is one character; a lone surrogate escape is never accepted
    if lo <= 1 <= hi:
        assert dfa.matches(b'"\\ud83d\\ude00"') != canonical
    assert not dfa.matches(b'"\\ud83d"')


@pytest.mark.parametrize("canonical", [False, True])
def test_layered_strings_built_trimmed_equal_the_generic_trim(canonical):
    """automata._layers (built with only its live states) against
    _layers_trimmed (every layer whole, then setops' trim): the same states in
    the same order, table for table, quoted and not, bounded and looping."""
    gtrans, gfinal = A.json_char_dfa(canonical)
    cases = [(lo, hi) for hi in range(0, 7) for lo in range(0, hi + 1)] + [(0, 40), (13, 96), (96, 96)]
    for lo, hi in cases:
        for quoted, loop_last in ((True, False), (False, False), (True, True)):
            if loop_last and lo != hi:
                continue
            got = A._layers(lo, hi, quoted, loop_last, "t", gtrans, gfinal)
            want = A._layers_trimmed(lo, hi, quoted, loop_last, "t", gtrans, gfinal)
            assert got.trans.dtype == want.trans.dtype, (lo, hi, quoted, loop_last)
            assert np.array_equal(got.trans, want.trans), (lo, hi, quoted, loop_last)
            assert np.array_equal(got.accepting, want.accepting), (lo, hi, quoted, loop_last)


def _one_alternative_per_escape(ranges):
    """chars_text's canonical spelling before it factored the escapes: one
    alternative per must-escape character (the reference)."""
    alts = []
    raw = S.minus(ranges, S._MUST_ESCAPE)
    if raw:
        alts.append(S._code_point_class(raw))
    for lo, hi in S.intersect(ranges, S._MUST_ESCAPE):
        alts += [S._canonical_escape(c) for c in range(lo, hi + 1)]
    if not alts:
        return S.NO_CHAR_TEXT
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def test_factored_canonical_escapes_spell_the_same_strings():
    """The canonical escapes, factored after the backslash, match exactly the
    strings of one alternative per character (checked with re on every 2- and
    6-character escape in both cases and every ASCII character) and compile to
    the same automaton, for the whole set and for 300 random subsets."""
    rng = random.Random(11)
    sets = [S.ALL, ((0x0A, 0x0A),), ((0x00, 0x1F),), ((0x22, 0x22),), ((0x5C, 0x5C),),
            ((0x08, 0x0D),), ((0x00, 0x22),), ((0x10, 0x10),), ((0x41, 0x41),)]
    for _ in range(150):
        lo = rng.randrange(0, 0x70)
        sets.append(S.cp_set((lo, rng.randrange(lo, 0x80))))
        c = rng.randrange(0, 0x20)
        sets.append(S.cp_set((c, c), (0x22, 0x22) if rng.random() < 0.5 else (0x5C, 0x5C)))
    probes = (["\\" + chr(c) for c in range(0x20, 0x7F)] + [chr(c) for c in range(0x80)]
              + ["\\u00%02x" % c for c in range(0x100)] + ["\\u00%02X" % c for c in range(0x100)]
              + ["\\u", "\\u00", "\\u001", "\\u00\n"])
    for ranges in sets:
        want, got = _one_alternative_per_escape(ranges), S.chars_text(ranges, True)
        want_re, got_re = re.compile(want), re.compile(got)
        for p in probes:
            assert bool(want_re.fullmatch(p)) == bool(got_re.fullmatch(p)), (ranges, p, got)
        a = compile_regex(f'"(?:{want})*"', name="A")
        b = compile_regex(f'"(?:{got})*"', name="B")
        assert np.array_equal(a.trans, b.trans) and np.array_equal(a.accepting, b.accepting), ranges


PATTERNS = ["^a+$", "ab", "^$|^x", "[0-9]{2,3}", "^(?:foo|bar)-\\d+$", "é.", "^[^a]*$", "a|b$",
            "\\s", "^\\S+$", "^[\\w-]+$", "(a|^b)c", "^.{2}$", "x*", "^\\/$", "\\\\"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_patterns_search_the_decoded_value(pattern):
    """Exactness of the text regex: the value matches ``pattern`` (search) under both readings.

    Python's ``re.search`` with ``re.ASCII`` is the oracle: ECMA-262's \\d
    \\w \\s are ASCII-only (the samples hold no other spaces).
    """
    rng = random.Random(hash(pattern) & 0xFFFF)
    dec = S.pattern_to_decoded(pattern)
    dfa = compile_regex(S.text_regex(dec), name="p")
    ref = re.compile(pattern, re.ASCII)  # \d \w \s as ECMA-262 reads them
    alphabet = ["a", "b", "c", "x", "f", "o", "r", "-", "1", "2", "é", " ", "/", "\\", "\n"]
    for _ in range(400):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 5)))
        expect = ref.search(s) is not None
        if "$" in pattern and s.endswith("\n"):
            continue  # Python's $ also matches before a final newline; ECMA's does not
        if "." in pattern and "\n" in s:
            continue  # ECMA's . excludes line terminators; Python's excludes only \n
        for t in spellings(rng, s):
            assert dfa.matches(t.encode()) == expect, (pattern, t)


def _random_pattern(rng, depth=0):
    """A random pattern of the constructs pattern_to_decoded rewrites (classes,
    empty classes, groups, alternation, repeats with zero and non-zero minimums)."""
    atoms = ["a", "b", ".", "\\d", "\\S", "[^\\s\\S]", "[xy]", "[^a]", "é"]
    parts = []
    for _ in range(rng.randint(0, 3)):
        k = rng.random()
        if k < 0.5 or depth > 2:
            p = rng.choice(atoms)
        elif k < 0.75:
            p = "(" + "|".join(_random_pattern(rng, depth + 1) for _ in range(rng.randint(1, 3))) + ")"
        else:
            p = "(?:" + _random_pattern(rng, depth + 1) + ")"
        parts.append(p + rng.choice(["", "", "*", "+", "?", "{0,2}", "{2}", "{1,3}", "{0}"]))
    return "".join(parts)


def test_matches_empty_agrees_with_re_on_the_rewritten_pattern():
    """strings.matches_empty (read off the tree) against the check it replaced:
    Python's ``re.fullmatch`` of the rewritten alternative on ""."""
    from cfgmask.automata import sre_parse
    rng = random.Random(23)
    patterns = PATTERNS + ["", "(?:)", "[^\\s\\S]", "[^\\s\\S]*", "(a|)", "(a|[^\\s\\S]?)b?",
                           "(?:[^\\s\\S]){0,3}", "(?:[^\\s\\S])+", "((a*)|b)+", "a{0}"]
    patterns += [_random_pattern(rng) for _ in range(400)]
    seen = {True: 0, False: 0}
    for pattern in patterns:
        parsed = sre_parse.parse(pattern, 0)
        for _start, _end, body in S._anchored_alternatives(list(parsed), False, False, [0]):
            core = S._ecma_seq(body, +1)
            want = re.fullmatch(core, "") is not None
            assert S.matches_empty(body) == want, (pattern, core)
            seen[want] += 1
    assert min(seen.values()) > 50, seen      # both answers well represented


def test_pattern_escape_classes_are_sound_for_both_readings():
    """\\d is ECMA [0-9] (Python also matches other digits); \\s excludes U+FEFF (Python) and
    U+001C (ECMA); negated classes take the complement of the union."""
    d = compile_regex(S.text_regex(S.pattern_to_decoded("^\\d$")))
    assert d.matches('"7"'.encode()) and not d.matches('"٣"'.encode())
    sp = compile_regex(S.text_regex(S.pattern_to_decoded("^\\s$")))
    assert sp.matches(b'" "') and not sp.matches('"\ufeff"'.encode()) and not sp.matches(b'"\\u001c"')
    nd = compile_regex(S.text_regex(S.pattern_to_decoded("^\\D$")))
    assert nd.matches(b'"x"') and not nd.matches('"٣"'.encode()) and not nd.matches(b'"3"')


@pytest.mark.parametrize("pattern,construct", [("(?=a)b", "lookahead"), ("\\bword", "word boundaries"),
                                               ("(a)\\1", "backreferences"), ("\\p{L}", "Unicode"),
                                               ("a^b", "anchor"), ("(?i)a", "flags")])
def test_unsupported_patterns_are_refused(pattern, construct):
    with pytest.raises(GrammarError, match="pattern") as e:
        compile_schema(Grammar, {"type": "string", "pattern": pattern})
    assert construct.lower() in str(e.value).lower()
    assert e.value.construct == "pattern"


FORMAT_CASES = {
    "date": (["2024-02-29", "2000-02-29", "1999-12-31"], ["2023-02-29", "1900-02-29", "2024-13-01",
                                                          "2024-04-31", "24-01-01"]),
    "date-time": (["2024-01-01T00:00:00Z", "2024-01-01t10:20:30.5+01:00"],
                  ["2024-01-01 00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T00:00:00"]),
    "time": (["23:59:59Z", "08:30:06.283185+01:00"], ["24:00:00Z", "08:30:06", "8:30:06Z"]),
    "duration": (["P1Y", "P1Y2M", "PT1H30M", "P4W", "P1DT2H"], ["P", "PT", "P1Y1D", "P1W1D", "1Y"]),
    "email": (["joe.bloggs@example.com", "a@b"], ["joe", "@example.com", "a@", "a b@c.d"]),
    "hostname": (["example.com", "a-b.c"], ["-a.com", "a..b", "a_b.com", "a" * 64]),
    "ipv4": (["192.168.0.1", "0.0.0.0"], ["256.1.1.1", "01.1.1.1", "1.1.1"]),
    "ipv6": (["::1", "2001:db8::ff00:42:8329", "::ffff:192.0.2.128"], ["1:::1", "12345::", ":1"]),
    "uri": (["https://example.com/a?b#c", "urn:isbn:0451450523", "mailto:a@b.c"],
            ["//example.com", "no scheme", "http://exa mple.com"]),
    "uuid": (["2eb8aa08-aa98-11ea-b4aa-73b441d16380"], ["2eb8aa08-aa98-11ea-b4aa-73b441d1638",
                                                       "2eb8aa08aa9811eab4aa73b441d16380"]),
}


@pytest.mark.parametrize("fmt", sorted(FORMAT_CASES))
def test_formats(fmt):
    c = compile_bytes(compile_schema(Grammar, {"type": "string", "format": fmt}))
    good, bad = FORMAT_CASES[fmt]
    for s in good:
        assert accepts(c, json.dumps(s)), s
    for s in bad:
        assert not accepts(c, json.dumps(s)), s


def test_unknown_formats_are_annotations():
    c = compile_bytes(compile_schema(Grammar, {"type": "string", "format": "non-blank"}))
    assert accepts(c, '""')


# ------------------------------------------------------------------ numbers

@pytest.mark.parametrize("lo,hi", [(None, None), (0, None), (None, 0), (-5, 17), (3, 3), (-120, -7),
                                   (99, 1001), (5, 2)])
def test_integer_ranges_brute_force(lo, hi):
    text = N.integer_range_regex(lo, hi)
    if lo is not None and hi is not None and lo > hi:
        assert text is None
        return
    rx = re.compile(text)
    for v in range(-1300, 1300):
        assert bool(rx.fullmatch(str(v))) == ((lo is None or v >= lo) and (hi is None or v <= hi)), v
    assert not rx.fullmatch("-0") and not rx.fullmatch("007") and not rx.fullmatch("1.0")


BOUNDS = [(None, False, None, False), (Decimal("0"), False, None, False),
          (Decimal("0"), True, Decimal("1"), False), (Decimal("-2.5"), False, Decimal("3.25"), True),
          (Decimal("0.5"), True, Decimal("0.55"), False), (None, False, Decimal("-0.01"), False),
          (Decimal("1.5"), False, Decimal("1.5"), False), (Decimal("10"), True, Decimal("10.001"), True),
          (Decimal("-1"), True, Decimal("0"), True), (Decimal("0.09"), False, Decimal("0.1"), False)]


@pytest.mark.parametrize("b", BOUNDS)
def test_decimal_ranges_against_decimal(b):
    lo, lo_x, hi, hi_x = b
    text = N.decimal_range_regex(lo, lo_x, hi, hi_x)
    rx = re.compile(text) if text else None
    rng = random.Random(str(b))
    samples = ["0", "-0", "0.0", "1", "1.5", "1.50", "-2.5", "3.25", "3.2499", "0.5", "0.55", "0.5499",
               "0.500001", "10", "10.0005", "10.001", "-0.01", "-0.010", "0.09", "0.1", "0.0999"]
    for _ in range(400):
        ip = str(rng.randint(0, 12)) if rng.random() < 0.8 else str(rng.randint(0, 10 ** 6))
        t = ("-" if rng.random() < 0.4 else "") + ip
        if rng.random() < 0.7:
            t += "." + "".join(rng.choice("0123459") for _ in range(rng.randint(1, 5)))
        samples.append(t)
    for t in samples:
        v = Decimal(t)
        ok = (lo is None or v > lo or (v == lo and not lo_x)) and \
            (hi is None or v < hi or (v == hi and not hi_x))
        plain = re.fullmatch(N.PLAIN_DECIMAL, t) and not re.fullmatch(r"-0(\.0+)?", t)
        expect = bool(ok and plain)
        assert bool(rx and rx.fullmatch(t)) == expect, (b, t)


@pytest.mark.parametrize("schema,good,bad", [
    ({"type": "integer", "multipleOf": 7}, ["0", "7", "-14", "700"], ["1", "-8", "70.0"]),
    ({"type": "integer", "multipleOf": 3, "minimum": 10, "exclusiveMaximum": 21}, ["12", "18"],
     ["9", "21", "13"]),
    ({"type": "number", "multipleOf": 0.25, "maximum": 1}, ["0.25", "0.5", "1", "0.750", "-3"],
     ["0.2", "1.25", "0.255"]),
    ({"type": "number", "multipleOf": 1.5}, ["3", "4.5", "-1.5"], ["1", "2.25"]),
    ({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}, ["0.5", "0.999"], ["0", "1", "1.0"]),
    ({"type": "number", "minimum": 5, "exclusiveMinimum": True}, ["5.1", "6"], ["5"]),  # draft-04 flag, any draft
    ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "number", "minimum": 5,
      "exclusiveMinimum": True}, ["5.1", "6"], ["5", "5.0"]),
    ({"type": "number"}, ["1e5", "-2.5E-3", "0"], ["01", "1.", ".5", "-"]),
    ({"not": {"type": "integer"}, "type": "number"}, ["1.5", "-0.25"], ["1", "0"]),
])
def test_number_schemas(schema, good, bad):
    c = compile_bytes(compile_schema(Grammar, schema))
    for t in good:
        assert accepts(c, t), t
    for t in bad:
        assert not accepts(c, t), t


# ------------------------------------------------------------- grammars

SMALL = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer",
                                                                                "minimum": 0},
                                          "colors": {"type": "array", "items": {"type": "string"}}},
         "required": ["name", "age", "colors"], "additionalProperties": False}


@pytest.mark.parametrize("style", STYLES)
def test_styles_accept_their_layout_only(style):
    c = compile_bytes(compile_schema(Grammar, SMALL, whitespace=style))
    doc = {"name": "Tom", "age": 3, "colors": ["red", "grey"]}
    for s in STYLES:
        text = dumps(doc, s)
        assert accepts(c, text) == (s == style or style == "flexible"), (s, text)
    assert not accepts(c, dumps({"age": 3, "name": "Tom", "colors": []}, style))  # schema order
    assert not accepts(c, dumps({"name": "Tom", "age": -1, "colors": []}, style))
    assert not accepts(c, dumps({"name": "Tom", "age": 1}, style))
    assert not accepts(c, dumps(doc, style) + " ")  # no trailing whitespace
    if style == "pretty":
        assert dumps(doc, "pretty") == json.dumps(doc, indent=2)


def test_flexible_whitespace_is_capped():
    from cfgmask.frontends.json_schema import FLEXIBLE_MAX_RUN
    c = compile_bytes(compile_schema(Grammar, SMALL, whitespace="flexible"))
    ws = " \n\t\r" * 10
    assert accepts(c, '{\n  "name" : "a" ,\t"age":1,"colors":[ ]}')
    assert accepts(c, "{" + ws[:FLEXIBLE_MAX_RUN] + '"name":"a","age":1,"colors":[]}')
    assert not accepts(c, "{" + ws[:FLEXIBLE_MAX_RUN + 1] + '"name":"a","age":1,"colors":[]}')
    assert not accepts(c, ' {"name":"a","age":1,"colors":[]}')


def test_escapes_any_accepts_every_spelling_canonical_one():
    rng = random.Random(5)
    any_ = compile_bytes(compile_schema(Grammar, SMALL, escapes="any"))
    canon = compile_bytes(compile_schema(Grammar, SMALL, escapes="canonical"))
    for _ in range(30):
        name = random_text(rng, 5)
        body_c = json.dumps({"name": name, "age": 1, "colors": [name]}, ensure_ascii=False,
                            separators=(",", ":"))
        body_a = json.dumps({"name": name, "age": 1, "colors": [name]}, ensure_ascii=True,
                            separators=(",", ":"))
        assert accepts(any_, body_c) and accepts(any_, body_a) and accepts(canon, body_c)
        assert accepts(canon, body_a) == (body_a == body_c)
    assert accepts(any_, '{"n\\u0061me":"x","\\u0061ge":1,"colors":[]}')
    assert not accepts(canon, '{"n\\u0061me":"x","age":1,"colors":[]}')


@pytest.mark.parametrize("schema,good,bad", [
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
     ['{"a":1,"b":"x","c":"y"}', '{"b":"x"}', "{}"], ['{"b":1}', '{"a":"x"}', '{"b":"x","a":1}']),
    ({"type": "object", "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False},
     ['{"x-a":1}', "{}"], ['{"y":1}', '{"x-a":"s"}']),
    ({"type": "object", "propertyNames": {"maxLength": 2}}, ['{"ab":1,"c":[]}'], ['{"abc":1}']),
    ({"type": "object", "minProperties": 1, "maxProperties": 2},
     ['{"a":1}', '{"a":1,"b":2}'], ["{}", '{"a":1,"b":2,"c":3}']),
    ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
     ["[]", "[1]", '[1,"a"]'], ['[1,"a",2]', '["a"]']),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3},
     ["[1,2]", "[1,2,3]"], ["[1]", "[1,2,3,4]", '[1,"a"]']),
    ({"type": "array", "contains": {"const": 5}, "minContains": 2, "maxContains": 3},
     ["[5,5]", "[1,5,2,5,5]"], ["[5]", "[5,5,5,5]", "[]"]),
    ({"type": "object", "dependentRequired": {"a": ["b"]}}, ['{"a":1,"b":2}', '{"b":1}', "{}"],
     ['{"a":1}']),
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, ["1", "2.5", '"x"'], ["2", "3"]),
    ({"if": {"properties": {"k": {"const": "n"}}, "required": ["k"]},
      "then": {"properties": {"v": {"type": "number"}}}, "else": {"properties": {"v": {"type": "string"}}}},
     ['{"k":"n","v":1}', '{"k":"s","v":"x"}', '{"v":"x"}'], ['{"k":"n","v":"x"}', '{"k":"s","v":1}']),
    ({"enum": [1, "a", [1, {"b": None}], {"x": True}]},
     ['1', '1.0', '"a"', '[1,{"b":null}]', '{"x":true}'], ['1.5', '1e0', '"b"', '[1]']),
    ({"$defs": {"t": {"type": "object", "properties": {"c": {"type": "array", "items": {"$ref": "#/$defs/t"}}},
                      "required": ["c"], "additionalProperties": False}}, "$ref": "#/$defs/t"},
     ['{"c":[]}', '{"c":[{"c":[{"c":[]}]}]}'], ['{"c":[{}]}', '{}']),
    ({"type": "string", "minLength": 2, "pattern": "^[a-z]+$"}, ['"ab"', '"abcd"'], ['"a"', '"aB"']),
    ({"type": "string", "maxLength": 300}, ['"' + "x" * 300 + '"', '""'], ['"' + "x" * 301 + '"']),
])
def test_keyword_grammars(schema, good, bad):
    c = compile_bytes(compile_schema(Grammar, schema))
    for t in good:
        assert accepts(c, t), t
        assert validate(json.loads(t), schema)
    for t in bad:
        assert not accepts(c, t), t


def test_long_strings_are_chunked_exactly():
    for lo, hi in [(0, 300), (70, 200), (1, 4096)]:
        c = compile_bytes(compile_schema(Grammar, {"type": "string", "minLength": lo, "maxLength": hi}))
        for n in sorted({0, 1, lo - 1, lo, 63, 64, 65, 127, 128, 129, hi - 1, hi, hi + 1}):
            if n < 0:
                continue
            s = "".join("aé\\\"€b"[i % 6] for i in range(n))
            assert accepts(c, json.dumps(s, ensure_ascii=False)) == (lo <= n <= hi), (lo, hi, n)


def test_recursive_schema_in_pretty_style_beyond_the_indent_cap():
    from cfgmask.frontends.json_schema.emit import PRETTY_MAX_DEPTH
    schema = {"type": "array", "items": {"$ref": "#"}}
    c = compile_bytes(compile_schema(Grammar, schema, whitespace="pretty"))
    v = []
    for _ in range(PRETTY_MAX_DEPTH + 4):
        v = [v, []]
    assert accepts(c, dumps(v, "pretty"))
    assert serialize(v, c, "pretty") == dumps(v, "pretty")


def test_unsatisfiable_schema_is_refused():
    for schema in (False, {"enum": []}, {"type": "integer", "minimum": 3, "maximum": 2},
                   {"allOf": [{"type": "string"}, {"type": "number"}]}):
        with pytest.raises(GrammarError, match="no instance"):
            compile_schema(Grammar, schema)


def test_strict_names_keyword_and_pointer():
    schema = {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True}}}
    with pytest.raises(GrammarError) as e:
        compile_schema(Grammar, schema)
    assert e.value.construct == "uniqueItems"
    assert "#/properties/tags/uniqueItems" in str(e.value)
    with pytest.raises(GrammarError, match="unevaluatedProperties at #/unevaluatedProperties"):
        compile_schema(Grammar, {"unevaluatedProperties": False})


def test_non_strict_loosens_with_a_warning():
    schema = {"type": "array", "uniqueItems": True, "items": {"type": "string", "pattern": "\\p{L}"}}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        g = compile_schema(Grammar, schema, strict=False)
    loose = [x.message for x in w if isinstance(x.message, SchemaLoosened)]
    assert loose and {k for k, _, _ in loose[0].loosened} >= {"uniqueItems", "pattern"}
    c = compile_bytes(g)
    assert accepts(c, '["a","a"]')  # over-approximated: duplicates are allowed now


def test_inputs_dict_text_path(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps(SMALL))
    texts = set()
    for src in (SMALL, json.dumps(SMALL), str(p), p):
        g = Grammar.from_json_schema(src)
        texts.add(tuple(g.terminal_patterns))
    assert len(texts) == 1
    with pytest.raises(GrammarError):
        Grammar.from_json_schema("{not json")


def test_json_grammar_generation_form():
    c = compile_bytes(json_grammar(Grammar, "compact"))
    for doc in [1, "x", None, [1, [2, {}]], {"a": {"b": [True, 1.5e3]}}]:
        assert accepts(c, json.dumps(doc, separators=(",", ":"), ensure_ascii=False))
    assert not accepts(c, '{"a": 1}') and not accepts(c, "[1,]")


def test_refs_anchor_id_and_drafts():
    schema = {"$id": "https://x.test/root.json", "$defs": {
        "a": {"$anchor": "A", "type": "integer"},
        "b": {"$id": "b.json", "$defs": {"c": {"type": "string"}}, "$ref": "#/$defs/c"}},
        "properties": {"x": {"$ref": "#A"}, "y": {"$ref": "b.json"}, "z": {"$ref": "https://x.test/b.json"}}}
    c = compile_bytes(compile_schema(Grammar, schema))
    assert accepts(c, '{"x":1,"y":"s","z":"t"}') and not accepts(c, '{"y":1}')
    # draft-07: keywords next to $ref are ignored
    d7 = {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"s": {"type": "string"}},
          "properties": {"x": {"$ref": "#/definitions/s", "maxLength": 1}}}
    assert accepts(compile_bytes(compile_schema(Grammar, d7)), '{"x":"long"}')
    with pytest.raises(GrammarError, match="remote"):
        compile_schema(Grammar, {"$ref": "https://example.com/other.json"})


def test_memo_makes_the_second_compile_cheap():
    """Terminal automata are memoised by pattern text (regex.remember_dfa)."""
    from cfgmask.automata import memo as regex
    import re
    compile_schema(Grammar, SMALL)
    g = compile_schema(Grammar, SMALL)
    # the schema's own terminals; fixed punctuation (`\{`, `:`) is compiled by the
    # lexer later and may come from its disk cache instead, so it need not be here
    literal = re.compile(r"(?:\\[^A-Za-z0-9]|[^\\.^$*+?()\[\]{}|])+")
    own = [p for p in g.terminal_patterns if not literal.fullmatch(p)]
    assert own and all(p in regex.DFA_MEMO or p in regex.PINNED_DFAS for p in own)


def test_pinned_automata_live_as_long_as_their_grammar():
    import gc
    from cfgmask.automata import memo as regex
    schema = {"type": "object", "properties": {"zz-pin-test": {"type": "integer"}},
              "additionalProperties": {"type": "string", "minLength": 1, "maxLength": 3,
                                       "pattern": "^q"}}
    g = compile_schema(Grammar, schema)
    pinned = [p for p in g.terminal_patterns if p in regex.PINNED_DFAS]
    assert pinned
    c = compile_bytes(g)
    assert accepts(c, '{"zz-pin-test":1,"k":"qa"}') and not accepts(c, '{"k":"qaaa"}')
    del c, g
    gc.collect()
    assert not any(p in regex.PINNED_DFAS for p in pinned)


# ------------------------------------------------------ hooks: CLI and HF

def test_cli_check_schema(tmp_path, capsys):
    from cfgmask.app import cli
    p = tmp_path / "s.json"
    p.write_text(json.dumps(SMALL))
    rc = cli.main(["check", "--schema", str(p), "--whitespace", "pretty"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "rules" in out and "terminals" in out and "ms" in out and "pretty" in out
    p.write_text(json.dumps({"type": "array", "uniqueItems": True}))
    rc = cli.main(["check", "--schema", str(p)])
    assert rc == 2 and "uniqueItems" in capsys.readouterr().err


def test_logits_processor_takes_a_compiled_schema():
    torch = pytest.importorskip("torch")
    from cfgmask.hf import GrammarLogitsProcessor
    c = cfgmask.compile(compile_schema(Grammar, {"enum": ["yes", "no"]}), BYTES)
    proc = GrammarLogitsProcessor(c, eos_token_id=256, pad_token_id=256)
    ids = torch.zeros((1, 1), dtype=torch.long)
    out = []
    for _ in range(8):
        scores = torch.zeros((1, 257))
        scores[0, ord("n")] = 1.0  # prefer "no"
        scores = proc(ids, scores)
        t = int(torch.argmax(scores[0]))
        out.append(t)
        ids = torch.cat([ids, torch.tensor([[t]])], dim=1)
        if t == 256:
            break
    assert bytes(out[:-1]) == b'"no"' and out[-1] == 256


from tests.test_cli import tiny_model_dir  # noqa: E402,F401  (fixture: a tiny random Llama)


def test_cli_generate_schema(tiny_model_dir, tmp_path, capsys):  # noqa: F811
    """``cfgmask generate --schema``: the only valid document comes out, checked by the oracles."""
    from cfgmask.app import cli
    p = tmp_path / "s.json"
    p.write_text(json.dumps({"type": "object", "properties": {"a": {"const": [1, "x"]}},
                             "required": ["a"], "additionalProperties": False}))
    rc = cli.main(["generate", "--model", str(tiny_model_dir), "--schema", str(p),
                   "--max-new-tokens", "30", "--threads", "1", "-q", "go"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert out == '{"a":[1,"x"]}\n'
    rc = cli.main(["generate", "--model", str(tiny_model_dir), "--schema", str(p), "--whitespace",
                   "pretty", "--max-new-tokens", "30", "--threads", "1", "-q", "go"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert json.loads(out) == {"a": [1, "x"]} and out.startswith('{\n  "a": [\n    1,')
