"""JSON Schema grammars against the two corpora, with independent labels.

JSON-Schema-Test-Suite (draft2020-12, draft2019-09 and draft7, each read as
its draft: a schema without ``$schema`` as ``default_draft``): for every
group cfgmask compiles, each valid instance, re-serialised in the style with
keys in the grammar's order, is accepted byte by byte with EOS at the end,
and each invalid one is refused; groups it cannot compile exactly raise
``GrammarError`` (never anything else).  The only disagreements allowed are
the documented departures listed in :data:`DEPARTURES` (``format`` is
asserted, not an annotation; ``$vocabulary`` is not read).  A few of the
suites' optional files about drafts and identifiers run too.

JSONSchemaBench (the 200 public schemas): each compiles or raises
``GrammarError``; labelled instances agree with their labels; documents
sampled at random under the masks validate with the ``jsonschema`` package
(with format checks).  A few instances are also replayed token by token with
the SmolLM2 tokenizer.

The default run takes a sample; ``-m slow`` runs everything (all styles and
both escape modes for the test suite, all schemas with more samples).
"""

import json
import random
import warnings

import pytest

import cfgmask
from cfgmask import Grammar, GrammarError
from cfgmask.frontends.json_schema import STYLES, SchemaLoosened, compile_schema
from cfgmask.frontends.json_schema.serialize import serialize
from support.corpora import require
from support.json_schema import accepts, compile_bytes, jsonschema_errors, parse_for_oracle, sample

# the suites run: folder -> the draft a schema without $schema is read as
SUITES = {"draft2020-12": "2020-12", "draft2019-09": "2019-09", "draft7": "draft-07"}

_FORMAT = "format is asserted for the formats cfgmask knows, not an annotation (docs/json-schema.md)"
_VOCABULARY = "$vocabulary is not read: the validation keywords always apply (docs/json-schema.md)"
# suite -> keyword file -> why its disagreements are documented departures; nothing
# else may disagree.  draft7 has no $vocabulary (its format.json only checks that
# formats ignore non-strings, which cfgmask agrees with)
DEPARTURES = {
    "draft2020-12": {"format": _FORMAT, "vocabulary": _VOCABULARY},
    "draft2019-09": {"format": _FORMAT, "vocabulary": _VOCABULARY},
    "draft7": {"format": _FORMAT},
}
# optional files about drafts and identifiers, with no departure: what a draft reads
# (unknownKeyword, refOfUnknownKeyword, no-schema), ids and anchors, and the
# compatibility reading of dependencies in 2019-09 and 2020-12 (drafts.py)
OPTIONAL = {
    "draft2020-12": ["anchor", "dependencies-compatibility", "id", "no-schema", "refOfUnknownKeyword",
                     "unknownKeyword"],
    "draft2019-09": ["anchor", "dependencies-compatibility", "id", "no-schema", "refOfUnknownKeyword",
                     "unknownKeyword"],
    "draft7": ["id", "unknownKeyword"],
}


def suite_files(suite="draft2020-12"):
    root = require(f"json/json-schema-test-suite/tests/{suite}", f"JSON-Schema-Test-Suite {suite}")
    return sorted(root.glob("*.json"))


def run_suite_file(path, style, escapes, suite="draft2020-12", departures=None):
    """Counts for one keyword file of ``suite``: groups compiled/refused, agreements, departures."""
    counts = {"groups": 0, "refused": 0, "agree": 0, "departure": 0, "unrepresentable": 0}
    kw = path.stem
    departures = DEPARTURES[suite] if departures is None else departures
    for group in json.loads(path.read_text(encoding="utf-8")):
        try:
            # format.json reads every format as an annotation; the ones cfgmask cannot
            # check (regex, idn-*) are refused under strict=True, annotations otherwise
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SchemaLoosened)
                c = compile_bytes(compile_schema(Grammar, group["schema"], whitespace=style, escapes=escapes,
                                                 strict=kw != "format", default_draft=SUITES[suite]))
        except GrammarError as e:
            if "no instance can satisfy" in str(e):
                assert not any(t["valid"] for t in group["tests"]), (kw, group["description"])
                counts["groups"] += 1
                counts["agree"] += len(group["tests"])
            else:
                counts["refused"] += 1
            continue
        counts["groups"] += 1
        for t in group["tests"]:
            try:
                text = serialize(t["data"], c, style)
            except UnicodeEncodeError:  # a lone surrogate: no UTF-8 spelling
                counts["unrepresentable"] += 1
                continue
            if (text is not None) == t["valid"]:
                counts["agree"] += 1
            elif kw in departures:
                counts["departure"] += 1
            else:
                pytest.fail(f"{suite}/{kw}: {group['description']} / {t['description']}: valid={t['valid']} "
                            f"but the grammar {'accepts' if text else 'refuses'} "
                            f"{json.dumps(t['data'])[:200]}")
    return counts


# the least each suite compiles and agrees on (compact style; the counts of
# docs/json-schema.md's tables, less a margin): a drop is a regression
SUITE_FLOOR = {"draft2020-12": (250, 950), "draft2019-09": (260, 945), "draft7": (235, 840)}


@pytest.mark.parametrize("suite", list(SUITES))
def test_json_schema_test_suite(suite):
    total = {}
    for path in suite_files(suite):
        c = run_suite_file(path, "compact", "canonical", suite)
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
    # most groups compile, and nothing but the documented departures disagrees
    groups, agree = SUITE_FLOOR[suite]
    assert total["groups"] >= groups and total["agree"] >= agree, total


@pytest.mark.parametrize("suite,name", [(s, n) for s, names in OPTIONAL.items() for n in names])
def test_json_schema_test_suite_optional(suite, name):
    root = require(f"json/json-schema-test-suite/tests/{suite}/optional", f"JSON-Schema-Test-Suite {suite}")
    c = run_suite_file(root / f"{name}.json", "compact", "canonical", suite, departures={})
    assert c["groups"] >= 1 and c["agree"] >= 2, c


@pytest.mark.slow
@pytest.mark.parametrize("suite", list(SUITES))
@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("escapes", ["canonical", "any"])
def test_json_schema_test_suite_all_styles(suite, style, escapes):
    for path in suite_files(suite):
        run_suite_file(path, style, escapes, suite)


# ------------------------------------------------------------- JSONSchemaBench

def bench_files():
    root = require("json/jsonschemabench-public", "JSONSchemaBench public schemas")
    return sorted(root.glob("*.json"))


def category(path):
    name = path.name
    return name.split("---")[0] if "---" in name else name.rsplit("_", 1)[0]


def _bench_ids(every):
    try:
        files = bench_files()
    except BaseException:  # pytest.skip outside a test: no parameters
        return []
    return [p.name for i, p in enumerate(files) if i % every == 0]


def _bench_path(name):
    return require("json/jsonschemabench-public", "JSONSchemaBench public schemas") / name


def check_bench_schema(name, n_samples, seed=0):
    d = json.loads(_bench_path(name).read_text(encoding="utf-8"))
    schema = d["schema"]
    try:
        g = compile_schema(Grammar, schema)
    except GrammarError as e:
        assert e.construct, e  # names the construct it could not compile
        return "refused"
    c = compile_bytes(g)
    for t in d["tests"]:
        text = serialize(t["data"], c, "compact")
        assert (text is not None) == t["valid"], (name, t["valid"], json.dumps(t["data"])[:200])
        if text is not None:
            assert accepts(c, text)
    rng = random.Random(seed)
    done = 0
    for _ in range(n_samples):
        doc = sample(c, rng)
        if doc is None:
            continue
        done += 1
        errors = jsonschema_errors(parse_for_oracle(doc), schema)
        assert not errors, (name, doc[:300], errors[:3])
    return done


@pytest.mark.parametrize("name", _bench_ids(10))
def test_jsonschemabench_sample(name):
    check_bench_schema(name, n_samples=4)


@pytest.mark.slow
@pytest.mark.parametrize("name", _bench_ids(1))
def test_jsonschemabench_all(name):
    check_bench_schema(name, n_samples=25, seed=1)


# ---------------------------------------------------------- token by token

@pytest.fixture(scope="module")
def smollm2():
    transformers = pytest.importorskip("transformers")
    from cfgmask import ConfigurationError, Vocabulary, models
    try:  # the converted-model cache loads in a second; the GGUF file takes ~15 s
        d = models.converted_dir(models.default_gguf_path())
    except (ConfigurationError, OSError):
        d = None
    if d is not None and (d / "tokenizer.json").is_file():
        tok = transformers.AutoTokenizer.from_pretrained(str(d), local_files_only=True)
    else:
        from support.vocabs import smollm2_tokenizer
        tok = smollm2_tokenizer()
    return tok, Vocabulary.from_hf(tok)


def test_bench_instances_token_by_token(smollm2):
    """Valid instances, tokenized as the model would write them, are accepted token by token."""
    tok, vocab = smollm2
    n = 0
    for path in bench_files()[::25]:
        d = json.loads(path.read_text(encoding="utf-8"))
        try:
            g = compile_schema(Grammar, d["schema"])
        except GrammarError:
            continue
        c_bytes = compile_bytes(g)
        c = cfgmask.compile(g, vocab)
        for t in d["tests"]:
            if not t["valid"]:
                continue
            text = serialize(t["data"], c_bytes, "compact")
            ids = tok(text, add_special_tokens=False)["input_ids"]
            assert accepts(c, text, tokens=ids), (path.name, text[:200])
            n += 1
    assert n >= 5
