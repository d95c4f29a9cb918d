"""The draft 2020-12 ``format`` values: each asserted one checked exactly, byte by byte.

The oracle of a format is its RFC (the regexes in
``cfgmask.frontends.json_schema.strings``, with the sources in their comments), not
the ``jsonschema`` package, whose format checkers depend on optional
packages (``rfc3987``, ``uri-template``, ``jsonpointer``, ``fqdn``, ...) and
are looser where those are missing.  Every sample below is written by hand
from the RFC's ABNF; the grammar (a byte vocabulary, so every byte is a
step), the validator (``validate``) and the decoded regex must agree on all
of them.  Formats that are not regular languages here (``regex``,
``idn-hostname``, ``idn-email``) are refused under ``strict=True`` and read as
annotations, with a :class:`SchemaLoosened` warning, under ``strict=False``.
"""

import json
import os
import random
import re
import warnings

import numpy as np
import pytest

from cfgmask import Grammar, GrammarError
from cfgmask.frontends.json_schema import SchemaLoosened, compile_schema, validate
from cfgmask.frontends.json_schema import strings as S
from support.json_schema import accepts, compile_bytes, sample

H63 = "a" + "b" * 61 + "c"

CASES = {
    "uri": (["https://example.com/a?b#c", "urn:isbn:0451450523", "mailto:a@b.c", "a:",
             "http://[::1]:80/p", "http://[v7.x:y]/", "file:///etc/hosts", "s+.-1:%41%4a",
             "http://u:p@h/?q=1&r=%20#f/?"],
            ["//example.com", "no scheme", "http://exa mple.com", "1a:b", ":x", "http://h/%4",
             "http://h/%zz", "http://[::1/", "http://h/é", "http://h/a b", "a:#b#c", "a:\\",
             "http://h:8a/", "http://[1.2.3.4]/"]),
    "uri-reference": (["", "/a/b", "a/b", "../x?y#z", "//host/p", "#frag", "?q", "x:y",
                       "./this:that", "%41"],
                      ["a b", "\\\\WINDOWS\\file", "#a#b", ":x", "é", "%4",
                       "//[::1", "a\nb"]),
    "iri": (["http://ƒøø.ßår/?∂éœ=πîx#πîüx", "http://例え.テスト/パス", "urn:é",
             "http://h/?\ue000", "http://[::1]/"],
            ["/abc", "ƒøø", "http://h/#\ue000", "http://h/\ue000", "http://h/a b",
             "http://h/\ufffe", "http://[é]/"]),
    "iri-reference": (["", "http://ƒøø.ßår/", "//ƒøø.ßår/", "/âππ", "#ƒrägmênt", "ƒøø/bar:baz",
                       "?\U000f0000"],
                      ["ƒøø:bar", "\\\\WINDOWS\\filëßåré", "#ƒräg\\mênt", "a b", "#\U000f0000", "é\ufdd0"]),
    "uri-template": (["", "http://example.com/dictionary/{term:1}/{term}", "a%41b", "a😀b",
                      "{+var}", "{#var}", "{.var}", "{/var}", "{;var}", "{?var}", "{&var}",
                      "{=x}", "{,x}", "{!x}", "{@x}", "{|x}", "{var*}", "{x,y}", "{a.b}",
                      "{%41}", "{v:1000}", "{v:9}", "a'b", "{_0.a_b*,c:12}"],
                     ["{}", "{a,,b}", "{v:0}", "{v:10000}", "{v:01}", "foo}bar", "{a", "a b",
                      "a\x7fb", "{a,}", "{var=def}", "{,+var}", "{a..b}", "{a.}", "{+}", "a<b", 'a"b', "a\\b", "a^b", "a`b", "a|b", "%4", "{a b}",
                      "{a:1*}", "{++a}"]),
    "json-pointer": (["", "/", "/foo", "/foo/0", "//", "/a~1b", "/c%d", "/e^f", "/ ", "/m~0n",
                      "/é/\U0001f600", "/~01"],
                     ["foo", "/~", "/~2", "/a~", "#/a", "a/b", "/~-1", "~0"]),
    "relative-json-pointer": (["0", "1", "0/foo/bar", "2/0/baz/1/zip", "0#", "120/foo/bar",
                               "100", "0//", "1+2/a", "0-1#", "3-10/x"],
                              ["", "/foo/bar", "-1/foo/bar", "+1/foo/bar", "١/foo", "0##", "01/a",
                               "01#", "0/~2", "0/foo/bar~", "1#/foo/bar", "1\n", "1+0", "1-01",
                               "1+", "a"]),
    "email": (["joe.bloggs@example.com", "a@b", "te~st@example.com", "~test@example.com",
               '"joe bloggs"@example.com', '"joe..bloggs"@example.com', '"joe@bloggs"@ex.com',
               '"a\\"b"@c', '""@c', "joe.bloggs@[127.0.0.1]", "x@[001.2.3.255]",
               "joe.bloggs@[IPv6:::1]", "x@[IPv6:1:2:3:4:5:6:7:8]", "x@[IPv6:1:2:3:4:5:6:1.2.3.4]",
               "x@[IPv6:1::1.2.3.4]", "x@[IPv6:1:2:3::4:5:6]", "x@a--b.c-d"],
              ["2962", ".test@example.com", "test.@example.com", "te..st@example.com",
               "joe.bloggs@invalid=domain.com", "joe.bloggs@[127.0.0.300]",
               "user1@oceania.org, user2@oceania.org", "@example.com", "joe.bloggs@",
               "joe bloggs@example.com", "x@-a.com", "x@a-.com", "x@a..b", "x@a.", "é@a.b",
               "x@[IPv6:1:2:3:4:5:6:7]", "x@[IPv6:1:2:3:4::5:6:7]", "x@[IPv6:1:2:3::4:5:1.2.3.4]",
               "x@[IPv6:::1.2.3.4.5]", "x@[::1]", '"a\\"@b', '"\x01"@b', "x@[1.2.3]"]),
    "hostname": (["example.com", "a-b.c", "hostname", "1host", "a--b.com", H63 + ".com",
                  ".".join(["a"] * 127), "a.b.c.d.e.f.g"],
                 ["", ".", ".example", "example.", "-a.com", "a..b", "a_b.com", "a" * 64,
                  "hostname-", "example．com", "xn--X", "XN--aa---o47jg78q", "ab--c",
                  ".".join(["a"] * 128), "example.com\n"]),
    "ipv4": (["192.168.0.1", "0.0.0.0", "255.255.255.255"],
             ["256.1.1.1", "01.1.1.1", "1.1.1", "1.1.1.1.", "١.1.1.1"]),
    "ipv6": (["::1", "2001:db8::ff00:42:8329", "::ffff:192.0.2.128", "1:2:3:4:5:6:7:8", "::",
              "1::", "1:2:3:4:5:6:7::"],
             ["1:::1", "12345::", ":1", "1:2:3:4:5:6:7:8:9", "::1%eth0", "1::2::3", "[::1]"]),
    "uuid": (["2eb8aa08-aa98-11ea-b4aa-73b441d16380", "2EB8AA08-AA98-11EA-B4AA-73B441D16380"],
             ["2eb8aa08-aa98-11ea-b4aa-73b441d1638", "2eb8aa08aa9811eab4aa73b441d16380",
              "{2eb8aa08-aa98-11ea-b4aa-73b441d16380}"]),
    "date-time": (["2024-01-01T00:00:00Z", "2024-01-01t10:20:30.5+01:00"],
                  ["2024-01-01 00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T00:00:00"]),
    "duration": (["P1Y", "PT1H30M", "P4W", "P1DT2H"], ["P", "PT", "P1Y1D", "P1W1D", "1Y"]),
}

# JSON-Schema-Test-Suite cases where cfgmask departs on purpose (docs/json-schema.md):
# leap seconds are refused (an exact check needs the offset-dependent 23:59:60 UTC
# instant: thousands of states per terminal), and hostname labels with "--" in
# positions 3-4 (A-labels, "xn--") are refused (their Punycode is not checked).
SUITE_DEPARTURES = re.compile(r"^(?:.*T?\d\d:\d\d:60.*|(?:.*\.)?xn--.*)$")


def _grammar(fmt, escapes="canonical", strict=True):
    return compile_bytes(compile_schema(Grammar, {"type": "string", "format": fmt}, escapes=escapes,
                                        strict=strict))


def test_every_draft_2020_12_format_is_asserted_or_refused():
    draft_2020_12 = {"date-time", "date", "time", "duration", "email", "idn-email", "hostname",
                     "idn-hostname", "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference",
                     "uuid", "uri-template", "json-pointer", "relative-json-pointer", "regex"}
    assert draft_2020_12 == set(S.FORMATS) | set(S.UNCHECKED_FORMATS)
    assert not set(S.FORMATS) & set(S.UNCHECKED_FORMATS)


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_samples_grammar_validator_and_regex_agree(fmt):
    good, bad = CASES[fmt]
    c = _grammar(fmt)
    schema = {"format": fmt}
    for s in good:
        assert accepts(c, json.dumps(s, ensure_ascii=False)), s
        assert validate(s, schema), s
    for s in bad:
        assert not accepts(c, json.dumps(s, ensure_ascii=False)), s
        assert not validate(s, schema), s


@pytest.mark.parametrize("fmt", ["uri-reference", "iri", "uri-template", "json-pointer",
                                 "relative-json-pointer", "email", "hostname"])
def test_any_escapes_spell_the_same_language(fmt):
    good, bad = CASES[fmt]
    c = _grammar(fmt, escapes="any")
    for s in good:
        assert accepts(c, json.dumps(s)), s          # ASCII-only: \\u escapes for the rest
        assert accepts(c, json.dumps(s, ensure_ascii=False)), s
    for s in bad:
        assert not accepts(c, json.dumps(s)), s


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_documents_sampled_under_the_masks_match_the_format(fmt):
    c = _grammar(fmt)
    rng = random.Random(fmt)
    rx = re.compile(S.FORMATS[fmt])
    for _ in range(25):
        doc = sample(c, rng, max_bytes=600)
        if doc is None:
            continue
        value = json.loads(doc)
        assert rx.fullmatch(value) is not None, value
        assert validate(value, {"format": fmt}), value


def test_hostname_total_length_is_253():
    at = ".".join([H63] * 3) + "." + "d" * 61          # 63*3 + 3 + 61 = 253
    over = at + "e"
    assert len(at) == 253
    c = _grammar("hostname")
    assert accepts(c, json.dumps(at))
    assert not accepts(c, json.dumps(over))
    assert validate(at, {"format": "hostname"}) and not validate(over, {"format": "hostname"})
    # the negation holds for the long one and for what is not a hostname at all
    n = compile_bytes(compile_schema(Grammar, {"type": "string", "not": {"format": "hostname"}}))
    assert accepts(n, json.dumps(over)) and accepts(n, '"a_b"')
    assert not accepts(n, json.dumps(at)) and not accepts(n, '"example.com"')


@pytest.mark.parametrize("fmt", ["uri-reference", "iri", "json-pointer", "email"])
def test_negated_format_is_the_complement_among_strings(fmt):
    good, bad = CASES[fmt]
    n = compile_bytes(compile_schema(Grammar, {"not": {"format": fmt}}))
    for s in good:
        assert not accepts(n, json.dumps(s, ensure_ascii=False)), s
    for s in bad:
        assert accepts(n, json.dumps(s, ensure_ascii=False)), s
    assert not accepts(n, "1") and not accepts(n, "null")   # format holds for non-strings


@pytest.mark.parametrize("fmt", sorted(S.UNCHECKED_FORMATS))
@pytest.mark.parametrize("where", ["top", "not", "property"])
def test_unchecked_formats_strict_refuses_loose_annotates(fmt, where):
    inner = {"type": "string", "format": fmt}
    schema = {"top": inner, "not": {"not": inner},
              "property": {"properties": {"p": inner}}}[where]
    with pytest.raises(GrammarError) as e:
        compile_schema(Grammar, schema)
    assert "format" in str(e.value) and fmt in str(e.value)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        g = compile_schema(Grammar, schema, strict=False)
    assert any(issubclass(x.category, SchemaLoosened) for x in w)
    c = compile_bytes(g)
    doc = '"(((x"' if where != "property" else '{"p":"(((x"}'
    assert accepts(c, doc)


def test_unknown_formats_stay_annotations_in_strict_mode():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = compile_bytes(compile_schema(Grammar, {"type": "string", "format": "int32"}))
    assert accepts(c, '"not a number"')


def _suite_dir():
    root = os.environ.get("CFGMASK_CORPORA",
                          os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
                              os.path.abspath(__file__)))), "shared", "corpora"))
    return os.path.join(root, "json", "json-schema-test-suite", "tests", "draft2020-12",
                        "optional", "format")


@pytest.mark.parametrize("fmt", sorted(S.FORMATS))
def test_json_schema_test_suite_format_cases(fmt):
    path = os.path.join(_suite_dir(), fmt + ".json")
    if not os.path.isfile(path):
        pytest.skip(f"JSON-Schema-Test-Suite not found at {path}")
    with open(path, encoding="utf-8") as f:
        groups = json.load(f)
    c = _grammar(fmt)
    checked = 0
    for g in groups:
        for t in g["tests"]:
            v = t["data"]
            if not isinstance(v, str):
                continue
            got = accepts(c, json.dumps(v, ensure_ascii=False))
            if t["valid"] and not got and SUITE_DEPARTURES.match(v):
                continue  # a documented under-approximation
            assert got == t["valid"], (t["description"], v)
            checked += 1
    assert checked


# ----------------------------------------------- the table computed ahead (format_tables)

def _fresh_format_memos(monkeypatch):
    """Empty the memos a table entry feeds, so that what a test compiles is built
    (or decoded) here, not left over from another test."""
    from cfgmask.automata import memo, parse, setops
    from cfgmask.engine import lexer
    from cfgmask.frontends.json_schema import formats as F
    # emptied in place: modules hold them by name
    for m in (memo.DFA_MEMO, parse.REPEATS_SEEN, setops.SETOP_MEMO, lexer._memory):
        monkeypatch.setattr(m, "_data", {})
    for f in (F.table, F._entry, F._text_of, F._repeats_of):
        f.cache_clear()


def test_format_table_entries_equal_a_fresh_build():
    """Every entry tools/format_tables.py wrote is what the pipeline builds now:
    text, automaton (tables and no follow restrictions), width and the repeats
    the slices read; and every asserted format has both escapes in the table."""
    import unicodedata
    from cfgmask.automata.parse import REPEATS_SEEN
    from cfgmask.automata.pipeline import regex_to_dfa
    from cfgmask.frontends.json_schema import formats as F
    tables = {name: F.table(name) for name in S.FORMATS}
    missing = [name for name, t in tables.items() if t is None]
    assert not missing, f"{F.TABLE_DIR}: no readable table for {missing}"
    assert sorted(os.listdir(F.TABLE_DIR)) == sorted(f"{name}.json" for name in S.FORMATS)
    made_for = {t["unidata_version"] for t in tables.values()}
    if made_for != {unicodedata.unidata_version}:
        assert F._entry("uri", True) is None
        pytest.skip(f"format_tables/ was made for Unicode {made_for}, this Python has "
                    f"{unicodedata.unidata_version}: rerun python -m tools.format_tables")
    for name, data in tables.items():
        assert data["format"] == name
        for escapes in ("any", "canonical"):
            entry = data[escapes]
            canonical = escapes == "canonical"
            assert json.loads(json.dumps(F.build_entry(name, canonical))) == entry, (name, escapes)
            rx = S.text_regex(S.FORMATS[name], canonical)
            assert F._text_of(name, canonical) == rx
            fresh = regex_to_dfa(rx, name)
            got = F._dfa_of(name, canonical, rx)
            assert (got.trans == fresh.trans).all() and (got.accepting == fresh.accepting).all(), name
            assert got.follow_forbidden == fresh.follow_forbidden
            assert got.follow_forbidden_at_eos == fresh.follow_forbidden_at_eos
            assert (got.column_class() == fresh.column_class()).all()
            assert F._repeats_of(name, canonical) == REPEATS_SEEN.get(rx), name
            assert F.width(name) == S.width(S.FORMATS[name])


def test_format_table_is_used_only_when_its_key_matches(monkeypatch):
    from cfgmask.automata import compile_regex, memo
    from cfgmask.frontends.json_schema import formats as F
    _fresh_format_memos(monkeypatch)
    uuid = S.FORMATS["uuid"]
    rx = F.text("uuid", True)
    assert F._entry("uuid", True) is not None
    assert memo.build_cost(rx) == 0.0 and memo.remembered_dfa(rx) is not None   # decoded, not built
    assert compile_regex(rx).trans is memo.remembered_dfa(rx).trans
    # another regex for the format (an edit to strings.py): built as before, not the table's
    _fresh_format_memos(monkeypatch)
    monkeypatch.setitem(S.FORMATS, "uuid", "[0-9a-f]{8}")
    assert F._entry("uuid", True) is None
    rx2 = F.text("uuid", True)
    assert rx2 == S.text_regex("[0-9a-f]{8}", True) != rx
    assert memo.remembered_dfa(rx2) is None and F.width("uuid") == (8, 8)
    # another table format, or no table file: not used either
    monkeypatch.setitem(S.FORMATS, "uuid", uuid)
    for attr, value in (("TABLE_FORMAT", F.TABLE_FORMAT + 1), ("TABLE_DIR", F.TABLE_DIR + ".missing")):
        _fresh_format_memos(monkeypatch)
        with monkeypatch.context() as m:
            m.setattr(F, attr, value)
            assert F.table("uuid") is None and F._entry("uuid", True) is None
            assert F.text("uuid", True) == rx and memo.remembered_dfa(rx) is None
    _fresh_format_memos(monkeypatch)


def test_damaged_format_table_entry_is_built_instead(monkeypatch):
    from cfgmask.automata import memo
    from cfgmask.frontends.json_schema import formats as F
    good = F._entry("uri", True)
    for i, junk in ((3, "not base64!"), (4, "eJwDAAAAAAE="), (2, "AAAA")):    # text, automaton, repeats
        _fresh_format_memos(monkeypatch)
        damaged = list(good)
        damaged[i] = junk
        with monkeypatch.context() as m:
            m.setattr(F, "_entry", lambda name, canonical, d=damaged: d)
            rx = F.text("uri", True)
        assert rx == S.text_regex(S.FORMATS["uri"], True)
        assert i == 2 or memo.remembered_dfa(rx) is None      # nothing decoded was kept
    _fresh_format_memos(monkeypatch)


@pytest.mark.parametrize("escapes", ["canonical", "any"])
def test_format_grammars_from_the_table_equal_built_ones(monkeypatch, escapes):
    """A schema with every format (and one negated) gives the same grammar, lexer
    tables and masks along documents sampled under it whether the formats come
    from the table or are built."""
    import gc
    from cfgmask.automata import memo
    from cfgmask.frontends.json_schema import formats as F
    schema = {"type": "object", "properties": {f: {"type": "string", "format": f} for f in S.FORMATS},
              "not": {"properties": {"uuid": {"format": "email"}}, "required": ["uuid"]}}

    def compiled_and_masks(docs):
        c = compile_bytes(compile_schema(Grammar, schema, escapes=escapes))
        rng = random.Random(escapes)
        while len(docs) < 8:
            docs.append(sample(c, rng, max_bytes=400) or "")
        masks = []
        for doc in docs:
            m = c.matcher()
            for b in doc.encode():
                masks.append(m.allowed_tokens().tolist())
                m.consume(b)
        fields = (list(c.grammar.terminal_names), list(c.grammar.terminal_patterns), c.lexer_spec.source)
        return fields, [np.array(a) for a in c.lexer_spec.flat_tables()], masks

    docs = []
    _fresh_format_memos(monkeypatch)
    with_table = compiled_and_masks(docs)
    gc.collect()     # the grammar's pinned automata (the negated format) go with it
    assert not set(with_table[0][1]) & set(memo.PINNED_DFAS)
    _fresh_format_memos(monkeypatch)
    monkeypatch.setattr(F, "_entry", lambda name, canonical: None)
    built = compiled_and_masks(docs)
    assert with_table[0] == built[0] and built[0][2] == "built"
    assert all(np.array_equal(a, b) for a, b in zip(with_table[1], built[1]))
    assert sum(len(d) for d in docs) > 50 and with_table[2] == built[2]
