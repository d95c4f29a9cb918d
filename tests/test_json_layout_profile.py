"""The JSON generation profile's whitespace styles: ``pretty`` (the default) and ``compact``.

Oracles: ``json.dumps`` / :func:`cfgmask.frontends.json_schema.serialize.dumps` write
the one layout each style allows; every accepted document is also accepted
by the full grammar (json.lark) and ``json.loads``.  Documents sampled at
random under the masks (SmolLM2 tokens, masks checked against
tests/reference.py) must parse with the full grammar and be laid out exactly
as ``dumps`` lays out their value.
"""

import functools
import json
import re

import pytest

import cfgmask
from cfgmask.frontends import builtins, profiles
from cfgmask.grammar import Grammar
from cfgmask.frontends.json_schema.serialize import dumps
from support.vocabs import byte_vocab, takes


@functools.lru_cache(maxsize=None)
def compiled(style, **kw):
    opts = {} if style is None else {"whitespace": style}
    return cfgmask.compile(Grammar.builtin("json", profile="generate", **opts, **kw), byte_vocab())


@functools.lru_cache(maxsize=None)
def full_compiled():
    return cfgmask.compile(Grammar.builtin("json"), byte_vocab())


VALUES = [
    {"name": "Whiskers", "age": 3, "tags": ["soft", "grey"], "owner": {"id": 1, "pets": []}, "x": {}},
    [1, -2.5, True, False, None, "é\n"],
    [[[]]],
    "just a string",
    0,
    {"a": [{"b": [1, {"c": None}]}]},
    json.loads("[" * 20 + "1" + "]" * 20),   # deeper than JSON_MAX_DEPTH: that level's indentation
]


@pytest.mark.parametrize("value", VALUES)
def test_each_style_takes_its_layout_and_only_it(value):
    pretty, compact = dumps(value, "pretty"), dumps(value, "compact")
    for style, doc, other in (("pretty", pretty, compact), ("compact", compact, pretty)):
        assert takes(compiled(style), doc), (style, doc)
        assert takes(compiled(style), f"```json\n{doc}\n```")
        assert takes(full_compiled(), doc)
        if other != doc:
            assert not takes(compiled(style), other), (style, other)


def test_pretty_is_json_dumps_indent_2():
    v = VALUES[0]
    assert json.dumps(v, indent=2, ensure_ascii=False) == dumps(v, "pretty")
    assert takes(compiled("pretty"), json.dumps(v, indent=2))
    assert takes(compiled("compact"), json.dumps(v, separators=(",", ":")))


def test_default_is_compact():
    # compact, not pretty: the measured demo result (profiles.JSON_DEFAULT_STYLE)
    g = Grammar.builtin("json", profile="generate")
    assert g.profile.options["whitespace"] == profiles.JSON_DEFAULT_STYLE == "compact"
    assert takes(compiled(None), '{"a":1}') and not takes(compiled(None), '{\n  "a": 1\n}')


@pytest.mark.parametrize("doc", [
    '{"a": 1}',                            # no line break after {
    '{\n    "a": 1\n}',                    # 4 spaces
    '{\n  "a": 1\n  }',                    # closing brace indented
    '{\n  "a":1\n}',                       # no space after :
    '{\n  "a" : 1\n}',                     # space before :
    '{\n  "a": 1,\n\n  "b": 2\n}',         # blank line
    '{\n  "a": 1 \n}',                     # trailing space
    '{\n  "name:"\n        :"Apple"\n}',  # the drift of issue 27
    '{ }', '[\n]', '[ 1 ]',
    ' {}', '{}\n',
    '{\n  "' + "k" * (profiles.MAX_KEY + 1) + '": 1\n}',
    '"' + "x" * (profiles.MAX_STRING + 1) + '"',
])
def test_pretty_refuses(doc):
    assert not takes(compiled("pretty"), doc), doc


@pytest.mark.parametrize("doc", ['{"a": 1}', '{ "a":1}', '[1, 2]', '[1,2 ]', '{"a":1}\n', '{"' + "k" * 33 + '":1}'])
def test_compact_refuses(doc):
    assert not takes(compiled("compact"), doc), doc


def test_caps_and_flexible():
    key = "k" * profiles.MAX_KEY
    assert takes(compiled("pretty"), '{\n  "' + key + '": "' + "v" * profiles.MAX_STRING + '"\n}')
    assert takes(compiled("compact", max_key=None), '{"' + "k" * 200 + '":1}')
    # flexible: the bounded whitespace of earlier versions, anywhere json.lark allows it
    assert takes(compiled("flexible"), '{"a": 1}') and takes(compiled("flexible"), '{\n    "a" : 1}')
    with pytest.raises(cfgmask.ConfigurationError, match="whitespace"):
        Grammar.builtin("json", profile="generate", whitespace="loose")
    with pytest.raises(cfgmask.ConfigurationError, match="whitespace"):
        Grammar.builtin("sql", profile="generate", whitespace="pretty")
    with pytest.raises(cfgmask.ConfigurationError, match="max_key"):
        Grammar.builtin("json", profile="generate", max_key=0)


def test_start_rule_other_than_start():
    g = profiles.apply(builtins.full(Grammar, "json", start="object"), "json", whitespace="pretty")
    c = cfgmask.compile(g, byte_vocab())
    assert takes(c, '{\n  "a": [\n    1\n  ]\n}') and not takes(c, "[]")


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def _skeleton(text):
    """``text`` with every string and number replaced by a placeholder (their spelling may differ)."""
    return _NUMBER.sub("0", _STRING.sub('""', text))


@pytest.mark.parametrize("style", ["pretty", "compact"])
def test_sampled_documents_have_the_one_layout(style):
    from tests.test_profiles import ProfileSampler
    from tests.test_sampling_lark import SEED
    s = ProfileSampler("json", whitespace=style)
    docs, unfinished, failures = s.run(30, seed=SEED + 51)
    assert not failures, failures[:5]
    assert len(docs) >= 24
    for d in docs:
        body = s.grammar.document(d).decode("utf-8")
        value = json.loads(body)
        assert _skeleton(body) == _skeleton(dumps(value, style)), body
