"""JSON Schema grammars against the two corpora, with independent labels.

JSON-Schema-Test-Suite (draft2020-12): for every group cfgmask compiles,
each valid instance, re-serialised in the style with keys in the grammar's
order, is accepted byte by byte with EOS at the end, and each invalid one is
refused; groups it cannot compile exactly raise ``GrammarError`` (never
anything else).  The only disagreements allowed are the documented
departures (``format`` is asserted, not an annotation; ``$vocabulary`` is
not read).

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
from support.json_schema import accepts, compile_bytes, jsonschema_errors, sample

# (file, group description, test description): disagreements that are documented departures
DEPARTURES = {
    "format": "format is asserted for the formats cfgmask knows (docs/json-schema.md)",
    "vocabulary": "$vocabulary is not read: validation keywords always apply",
}


def suite_files():
    root = require("json/json-schema-test-suite/tests/draft2020-12", "JSON-Schema-Test-Suite")
    return sorted(root.glob("*.json"))


def run_suite_file(path, style, escapes):
    """Counts for one keyword file: groups compiled/refused, agreements, departures."""
    counts = {"groups": 0, "refused": 0, "agree": 0, "departure": 0, "unrepresentable": 0}
    kw = path.stem
    for group in json.loads(path.read_text(encoding="utf-8")):
        try:
            # format.json reads every format as an annotation; the ones cfgmask cannot
            # check (regex, idn-*) are refused under strict=True, annotations otherwise
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SchemaLoosened)
                c = compile_bytes(compile_schema(Grammar, group["schema"], whitespace=style, escapes=escapes,
                                                 strict=kw != "format"))
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
            elif kw in DEPARTURES:
                counts["departure"] += 1
            else:
                pytest.fail(f"{kw}: {group['description']} / {t['description']}: valid={t['valid']} "
                            f"but the grammar {'accepts' if text else 'refuses'} "
                            f"{json.dumps(t['data'])[:200]}")
    return counts


@pytest.mark.parametrize("style,escapes", [("compact", "canonical")])
def test_json_schema_test_suite(style, escapes):
    total = {}
    for path in suite_files():
        c = run_suite_file(path, style, escapes)
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
    # most groups compile, and nothing but the documented departures disagrees
    assert total["groups"] >= 250 and total["agree"] >= 950, total


@pytest.mark.slow
@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("escapes", ["canonical", "any"])
def test_json_schema_test_suite_all_styles(style, escapes):
    for path in suite_files():
        run_suite_file(path, style, escapes)


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
        errors = jsonschema_errors(json.loads(doc), schema)
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
