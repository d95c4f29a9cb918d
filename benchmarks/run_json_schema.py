#!/usr/bin/env python3
"""JSON Schema: cfgmask next to llguidance and XGrammar on the public JSONSchemaBench schemas.

One run, engines interleaved schema by schema (noise hits them alike), the
SmolLM2 tokenizer for all three.  Per category it reports:

* compile success, and the errors by keyword;
* compile time p50/p99: schema -> an engine ready to fill its first mask
  (cfgmask: ``Grammar.from_json_schema`` + ``cfgmask.compile`` on a prepared
  vocabulary; llguidance: ``grammar_from_json_schema`` + ``LLMatcher``;
  XGrammar: ``GrammarCompiler.compile_json_schema``, cache off);
* time to first mask (the first ``fill`` on a fresh matcher);
* mask p50/p99 while replaying the labelled valid instances token by token
  (each written compactly with keys in cfgmask's order; a document an engine
  refuses is counted and left out of that engine's latencies);
* the share of documents sampled at random under each engine's masks that
  validate with the ``jsonschema`` package (with format checks).

All engines run in their compact, strict configuration: llguidance
``whitespace_flexible: false``, XGrammar ``any_whitespace=False``,
``separators=(",", ":")``, ``strict_mode=False`` (its strict mode forbids
properties the schema allows).  cfgmask's memo of terminal automata is warm
after the first schemas (that is how a server runs); ``--cold`` clears it
before every schema.  ``--suite`` prints the JSON-Schema-Test-Suite counts
per keyword instead (``--draft``: the suite folder, draft2020-12 by default,
or draft2019-09 or draft7; cfgmask reads a schema without ``$schema`` as that
draft, the other engines as they do).  Timings on a shared machine are noisy:
compare ratios.

    python -m benchmarks.run_json_schema [--limit N] [--samples 3] [--cold]
    python -m benchmarks.run_json_schema --suite [--draft draft7] [--engines cfgmask]
"""

import argparse
import collections
import gc
import json
import os
import random
import re
import sys
import time
import warnings

import numpy as np

import cfgmask
from cfgmask import Grammar, GrammarError
from cfgmask.frontends.json_schema import compile_schema
from cfgmask.frontends.json_schema.serialize import serialize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def corpora_root():
    return os.environ.get("CFGMASK_CORPORA", os.path.join(os.path.dirname(ROOT), "shared", "corpora"))


def bench_files():
    d = os.path.join(corpora_root(), "json", "jsonschemabench-public")
    if not os.path.isdir(d):
        raise FileNotFoundError(f"JSONSchemaBench schemas not found at {d}; set CFGMASK_CORPORA")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".json"))


def category(path):
    name = os.path.basename(path)
    return name.split("---")[0] if "---" in name else name.rsplit("_", 1)[0]


def pct(xs, q):
    return float(np.percentile(xs, q)) if xs else float("nan")


# ------------------------------------------------------------------ tokenizer

class Tok:
    """SmolLM2's tokenizer in the three forms the engines want (preparation not timed)."""

    def __init__(self):
        import transformers
        from cfgmask import models
        try:
            d = models.converted_dir(models.default_gguf_path())
        except Exception:
            d = None
        if d is not None and (d / "tokenizer.json").is_file():
            self.hf = transformers.AutoTokenizer.from_pretrained(str(d), local_files_only=True)
        else:
            from support.vocabs import smollm2_tokenizer
            self.hf = smollm2_tokenizer()
        self.vocab = cfgmask.Vocabulary.from_hf(self.hf)
        self.vocab.trie()
        self.eos = self.vocab.eos_token_ids[0]
        self.V = self.vocab.vocab_size

    def encode(self, text):
        return list(self.hf.encode(text, add_special_tokens=False))


def _bit(row, t):
    return bool((int(row[t >> 5]) >> (t & 31)) & 1)


def _allowed(row, V):
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")[:V]
    return np.flatnonzero(bits)


# -------------------------------------------------------------------- engines

class Cfgmask:
    name = "cfgmask"

    def __init__(self, tok):
        self.tok = tok
        self.bm = np.zeros((1, (tok.V + 31) // 32), np.int32)

    def compile(self, schema):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            t0 = time.perf_counter()
            g = compile_schema(Grammar, schema)
            front = time.perf_counter() - t0
        c = cfgmask.compile(g, self.tok.vocab)
        # schema -> grammar -> automata and parser tables, without the per-vocabulary work
        # (token flattening, runtime set-up) that cfgmask.compile repeats today (issue 8)
        self.last_core_s = front + c.timings["automata_s"] + c.timings["trie_s"]
        return c

    @staticmethod
    def error_keyword(e):
        return getattr(e, "construct", None) or type(e).__name__

    def matcher(self, h):
        return h.matcher()

    def fill(self, m):
        m.fill_bitmask(self.bm)
        return self.bm[0]

    def consume(self, m, t):
        return m.try_consume(t)


class LLGuidance:
    name = "llguidance"

    def __init__(self, tok):
        import llguidance
        import llguidance.hf
        import llguidance.numpy
        self.llg = llguidance
        self.lltok = llguidance.hf.from_tokenizer(tok.hf, eos_token=tok.eos)
        self.bm = llguidance.numpy.allocate_token_bitmask(1, self.lltok.vocab_size)

    def compile(self, schema):
        g = self.llg.LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": False})
        m = self.llg.LLMatcher(self.lltok, g, log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        return (g, m)

    @staticmethod
    def error_keyword(e):
        msg = str(e)
        m = re.search(r"Unimplemented keys: \[([^\]]*)\]", msg)
        if m:
            return ",".join(k.strip().strip('"') for k in m.group(1).split(","))
        if "oneOf" in msg:
            return "oneOf"
        if "Unknown format" in msg:
            return "format"
        return msg.splitlines()[0][:60]

    def matcher(self, h):
        return self.llg.LLMatcher(self.lltok, h[0], log_level=0)

    def first_matcher(self, h):
        return h[1]  # the LLMatcher built (and compiled) by compile()

    def fill(self, m):
        self.llg.numpy.fill_next_token_bitmask(m, self.bm)
        return self.bm[0]

    def consume(self, m, t):
        return m.consume_token(t)


class XGrammar:
    name = "xgrammar"

    def __init__(self, tok):
        import xgrammar as xgr
        self.xgr = xgr
        self.info = xgr.TokenizerInfo.from_huggingface(tok.hf, stop_token_ids=[tok.eos])
        self.compiler = xgr.GrammarCompiler(self.info, max_threads=1, cache_enabled=False)
        self.bm_t = xgr.allocate_token_bitmask(1, self.info.vocab_size)
        self.row = self.bm_t.numpy()[0]

    def compile(self, schema):
        return self.compiler.compile_json_schema(json.dumps(schema), any_whitespace=False,
                                                 separators=(",", ":"), strict_mode=False)

    @staticmethod
    def error_keyword(e):
        msg = re.sub(r"^\[[0-9:]+\] \S+: ", "", str(e).splitlines()[0])
        return msg[:60]

    def matcher(self, h):
        return self.xgr.GrammarMatcher(h)

    def fill(self, m):
        m.fill_next_token_bitmask(self.bm_t)
        return self.row

    def consume(self, m, t):
        return m.accept_token(t)


ENGINES = {"cfgmask": Cfgmask, "llguidance": LLGuidance, "xgrammar": XGrammar}


def fresh_matcher(eng, h):
    return eng.matcher(h)


# ------------------------------------------------------------------- measures

def replay(eng, h, ids, eos, out_ns):
    """Fill + consume every token; True if every token was allowed and EOS is allowed at the end."""
    m = fresh_matcher(eng, h)
    perf = time.perf_counter_ns
    local = []
    for t in ids:
        t0 = perf()
        row = eng.fill(m)
        local.append(perf() - t0)
        if not _bit(row, t) or not eng.consume(m, t):
            return False
    t0 = perf()
    row = eng.fill(m)
    local.append(perf() - t0)
    if not _bit(row, eos):
        return False
    out_ns.extend(local)
    return True


def draw(eng, h, tok, rng, max_tokens=300):
    """A random document under ``eng``'s masks (None: cut at ``max_tokens``)."""
    m = fresh_matcher(eng, h)
    ids = []
    for _ in range(max_tokens):
        allowed = _allowed(eng.fill(m), tok.V)
        if not len(allowed):
            return None
        eos_ok = tok.eos in allowed
        if eos_ok and (rng.random() < 0.5 or len(allowed) == 1):
            return tok.hf.decode(ids)
        choices = allowed[allowed != tok.eos]
        t = int(choices[rng.randrange(len(choices))])
        if not eng.consume(m, t):
            return None
        ids.append(t)
    return None


def clear_cfgmask_caches():
    from cfgmask.automata import memo, setops
    from cfgmask.frontends.json_schema import automata, strings
    memo.DFA_MEMO.clear()
    setops.SETOP_MEMO.clear()
    automata._G.clear()
    for f in (strings.chars_text, strings.text_regex, strings.pattern_to_decoded,
              strings.anchored_prefix, automata._spellings):
        f.cache_clear()


def run(limit=None, engines=("cfgmask", "llguidance", "xgrammar"), samples=3, cold=False, seed=0,
        progress=True):
    from support.json_schema import jsonschema_errors
    files = bench_files()
    if limit:
        files = files[::max(1, len(files) // limit)][:limit]
    tok = Tok()
    engs = [ENGINES[e](tok) for e in engines]
    res = {e.name: collections.defaultdict(lambda: dict(ok=0, n=0, errors=collections.Counter(),
                                                         compile=[], first=[], masks=[], refused=0,
                                                         replayed=0, drawn=0, valid=0))
           for e in engs}
    rng = random.Random(seed)
    for i, path in enumerate(files):
        cat = category(path)
        d = json.load(open(path, encoding="utf-8"))
        schema = d["schema"]
        handles = {}
        for eng in engs:
            r = res[eng.name][cat]
            r["n"] += 1
            if cold and eng.name == "cfgmask":
                clear_cfgmask_caches()
            # drop the previous engine's handle and matcher first: rebinding `h`
            # inside the timed region charged freeing them to the next engine
            h = m = None
            gc.collect()
            t0 = time.perf_counter()
            try:
                h = eng.compile(schema)
            except Exception as e:
                r["errors"][eng.error_keyword(e)] += 1
                continue
            dt = time.perf_counter() - t0
            m = eng.first_matcher(h) if hasattr(eng, "first_matcher") else eng.matcher(h)
            t1 = time.perf_counter()
            eng.fill(m)
            r["first"].append(time.perf_counter() - t1)
            r["ok"] += 1
            r["compile"].append(dt)
            handles[eng.name] = h
        # replay the valid instances, written once in cfgmask's order
        texts = []
        if "cfgmask" in handles:
            for t in d["tests"]:
                if t["valid"]:
                    try:
                        s = serialize(t["data"], handles["cfgmask"], "compact")
                    except Exception:
                        s = None
                    if s is not None:
                        texts.append(s)
        else:
            texts = [json.dumps(t["data"], separators=(",", ":"), ensure_ascii=False)
                     for t in d["tests"] if t["valid"]]
        for text in texts:
            ids = tok.encode(text)
            for eng in engs:
                if eng.name not in handles:
                    continue
                r = res[eng.name][cat]
                r["replayed"] += 1
                if not replay(eng, handles[eng.name], ids, tok.eos, r["masks"]):
                    r["refused"] += 1
        for eng in engs:
            if eng.name not in handles:
                continue
            r = res[eng.name][cat]
            for _ in range(samples):
                doc = draw(eng, handles[eng.name], tok, rng)
                if doc is None:
                    continue
                r["drawn"] += 1
                try:
                    ok = not jsonschema_errors(json.loads(doc), schema)
                except Exception:
                    ok = False
                r["valid"] += ok
        if "cfgmask" in handles:
            ours = next(e for e in engs if e.name == "cfgmask")
            res["cfgmask"][cat].setdefault("compile_noflat", []).append(ours.last_core_s)
        if progress:
            print(f"[{i + 1}/{len(files)}] {os.path.basename(path)}: " +
                  ", ".join(f"{e}={'ok' if e in handles else 'error'}" for e in engines),
                  file=sys.stderr, flush=True)
    return res


def tables(res, engines):
    out = []
    cats = sorted(next(iter(res.values())).keys())
    out.append("| category | engine | compiled | errors by keyword | compile p50 | compile p99 | "
               "first mask p50 | mask p50 | mask p99 | replayed (refused) | samples valid |")
    out.append("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    total = {e: dict(ok=0, n=0, compile=[], first=[], masks=[], refused=0, replayed=0, drawn=0,
                     valid=0, errors=collections.Counter(), compile_noflat=[]) for e in engines}
    for cat in cats + ["**all**"]:
        for e in engines:
            if cat == "**all**":
                r = total[e]
            else:
                r = res[e][cat]
                for k in ("ok", "n", "refused", "replayed", "drawn", "valid"):
                    total[e][k] += r[k]
                for k in ("compile", "first", "masks", "compile_noflat"):
                    total[e][k] += r.get(k, [])
                total[e]["errors"].update(r["errors"])
            errs = ", ".join(f"{k} {v}" for k, v in r["errors"].most_common(4)) or "-"
            ms = lambda xs, q: f"{1e3 * pct(xs, q):.2f} ms" if xs else "-"  # noqa: E731
            us = lambda xs, q: f"{pct(xs, q) / 1e3:.1f} µs" if xs else "-"  # noqa: E731
            c50, c99 = ms(r["compile"], 50), ms(r["compile"], 99)
            if r.get("compile_noflat"):
                c50 += f" ({ms(r['compile_noflat'], 50)})"
                c99 += f" ({ms(r['compile_noflat'], 99)})"
            out.append(f"| {cat} | {e} | {r['ok']}/{r['n']} | {errs} | {c50} | "
                       f"{c99} | {ms(r['first'], 50)} | {us(r['masks'], 50)} | "
                       f"{us(r['masks'], 99)} | {r['replayed']} ({r['refused']}) | "
                       f"{r['valid']}/{r['drawn']} |")
    return "\n".join(out)


# ------------------------------------------------------------------ test suite

# the suite folders --suite --draft reads: folder -> the draft of a schema without $schema
SUITE_DRAFTS = {"draft2020-12": "2020-12", "draft2019-09": "2019-09", "draft7": "draft-07"}


def suite_counts(engines=("cfgmask", "llguidance", "xgrammar"), suite="draft2020-12"):
    """JSON-Schema-Test-Suite ``suite`` (a folder of SUITE_DRAFTS), per keyword file: groups
    compiled per engine, and cfgmask's agreement with the labels (serialised in compact
    style, byte by byte); cfgmask reads a schema without ``$schema`` as the suite's draft."""
    from support.json_schema import BYTES
    root = os.path.join(corpora_root(), "json", "json-schema-test-suite", "tests", suite)
    if not os.path.isdir(root):
        raise FileNotFoundError(f"JSON-Schema-Test-Suite {suite} not found at {root}; set CFGMASK_CORPORA")
    tok = Tok() if set(engines) - {"cfgmask"} else None
    others = [ENGINES[e](tok) for e in engines if e != "cfgmask"]
    rows = []
    for f in sorted(os.listdir(root)):
        if not f.endswith(".json"):
            continue
        kw = f[:-5]
        groups = json.load(open(os.path.join(root, f), encoding="utf-8"))
        c = dict(groups=len(groups), compiled=0, refused=0, empty=0, agree=0, disagree=0, tests=0)
        peer = collections.Counter()
        for g in groups:
            for eng in others:
                try:
                    eng.compile(g["schema"])
                    peer[eng.name] += 1
                except Exception:
                    pass
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    comp = cfgmask.compile(compile_schema(Grammar, g["schema"],
                                                          default_draft=SUITE_DRAFTS[suite]), BYTES)
            except GrammarError as e:
                if "no instance can satisfy" in str(e):
                    c["empty"] += 1
                    c["compiled"] += 1
                    c["agree"] += sum(1 for t in g["tests"] if not t["valid"])
                    c["disagree"] += sum(1 for t in g["tests"] if t["valid"])
                    c["tests"] += len(g["tests"])
                else:
                    c["refused"] += 1
                continue
            c["compiled"] += 1
            for t in g["tests"]:
                try:
                    text = serialize(t["data"], comp, "compact")
                except UnicodeEncodeError:
                    continue
                c["tests"] += 1
                c["agree" if (text is not None) == t["valid"] else "disagree"] += 1
        rows.append((kw, c, peer))
    out = ["| keyword file | groups | cfgmask compiles | tests agree | disagree | " +
           " | ".join(f"{e.name} compiles" for e in others) + " |",
           "|---|---:|---:|---:|---:|" + "---:|" * len(others)]
    tot = collections.Counter()
    ptot = collections.Counter()
    for kw, c, peer in rows:
        tot.update(c)
        ptot.update(peer)
        out.append(f"| {kw} | {c['groups']} | {c['compiled']} | {c['agree']}/{c['tests']} | "
                   f"{c['disagree']} | " + " | ".join(str(peer[e.name]) for e in others) + " |")
    out.append(f"| **all** | {tot['groups']} | {tot['compiled']} | {tot['agree']}/{tot['tests']} | "
               f"{tot['disagree']} | " + " | ".join(str(ptot[e.name]) for e in others) + " |")
    return "\n".join(out)


# ------------------------------------------------------------- keyword probes

# (keyword, schema, a valid instance, an invalid instance): does each engine
# compile the schema, accept the valid and refuse the invalid instance?
PROBES = [
    ("type", {"type": "integer"}, 1, "a"),
    ("enum", {"enum": ["a", 1]}, 1, "b"),
    ("const", {"const": {"a": [1]}}, {"a": [1]}, {"a": [2]}),
    ("anyOf", {"anyOf": [{"type": "integer"}, {"type": "string"}]}, "x", None),
    ("oneOf (disjoint cases)", {"oneOf": [{"type": "integer"}, {"type": "string"}]}, "x", None),
    ("oneOf (overlapping cases)", {"oneOf": [{"type": "integer"}, {"minimum": 2}]}, 1, 3),
    ("allOf", {"allOf": [{"type": "integer"}, {"minimum": 2}]}, 3, 1),
    ("not", {"type": "integer", "not": {"const": 3}}, 2, 3),
    ("if/then/else", {"if": {"minimum": 10}, "then": {"multipleOf": 2}, "else": {"maximum": 5},
                      "type": "integer"}, 12, 7),
    ("$ref (recursive)", {"type": "array", "items": {"$ref": "#"}, "maxItems": 2}, [[], [[]]], [[1]]),
    ("properties + required", {"type": "object", "properties": {"a": {"type": "integer"}},
                               "required": ["a"]}, {"a": 1}, {}),
    ("additionalProperties: false", {"type": "object", "properties": {"a": {}},
                                     "additionalProperties": False}, {"a": 1}, {"a": 1, "b": 2}),
    ("additionalProperties: schema", {"type": "object", "additionalProperties": {"type": "integer"}},
     {"b": 2}, {"b": "x"}),
    ("patternProperties", {"type": "object", "patternProperties": {"^x": {"type": "integer"}}},
     {"xa": 1}, {"xa": "s"}),
    ("propertyNames", {"type": "object", "propertyNames": {"maxLength": 2}}, {"ab": 1}, {"abc": 1}),
    ("minProperties/maxProperties", {"type": "object", "maxProperties": 1}, {"a": 1}, {"a": 1, "b": 2}),
    ("dependentRequired", {"type": "object", "dependentRequired": {"a": ["b"]}}, {"a": 1, "b": 2},
     {"a": 1}),
    ("dependentSchemas", {"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}},
     {"a": 1, "b": 2}, {"a": 1}),
    ("items", {"type": "array", "items": {"type": "integer"}}, [1, 2], [1, "x"]),
    ("prefixItems", {"type": "array", "prefixItems": [{"type": "string"}], "items": False}, ["a"],
     ["a", 1]),
    ("minItems/maxItems", {"type": "array", "minItems": 2, "maxItems": 2}, [1, 2], [1]),
    ("contains", {"type": "array", "contains": {"const": 5}}, [1, 5], [1, 2]),
    ("minContains/maxContains", {"type": "array", "contains": {"const": 5}, "maxContains": 1}, [5, 1],
     [5, 5]),
    ("uniqueItems", {"type": "array", "uniqueItems": True}, [1, 2], [1, 1]),
    ("minLength/maxLength", {"type": "string", "minLength": 2, "maxLength": 3}, "ab", "abcd"),
    ("maxLength counts characters, not bytes", {"type": "string", "maxLength": 1}, "é", "ab"),
    ("pattern (unanchored search)", {"type": "string", "pattern": "b+"}, "abba", "ac"),
    ("pattern + maxLength 254", {"type": "string", "pattern": "^[a-z]+@[a-z]+\\.gov$",
                                 "maxLength": 254}, "a@b.gov", "a@b.com"),
    ("minimum/maximum (integer)", {"type": "integer", "minimum": -5, "maximum": 120}, 120, 121),
    ("exclusiveMinimum/exclusiveMaximum (number)", {"type": "number", "exclusiveMinimum": 0.5,
                                                    "exclusiveMaximum": 1}, 0.75, 0.5),
    ("multipleOf (integer)", {"type": "integer", "multipleOf": 7}, 14, 15),
    ("multipleOf (decimal)", {"type": "number", "multipleOf": 0.25}, 1.75, 1.8),
] + [(f"format: {f}", {"type": "string", "format": f}, good, bad) for f, good, bad in [
    ("date-time", "2024-01-01T10:00:00Z", "2024-13-01T10:00:00Z"), ("date", "2024-02-29", "2023-02-29"),
    ("time", "10:20:30Z", "25:00:00Z"), ("duration", "P1DT2H", "P1H"), ("email", "a@b.co", "ab.co"),
    ("hostname", "a.example", "-a.example"), ("ipv4", "10.0.0.1", "10.0.0.256"),
    ("ipv6", "::1", "1:::1"), ("uri", "https://a.b/c", "a b"),
    ("uuid", "2eb8aa08-aa98-11ea-b4aa-73b441d16380", "2eb8aa08")]]


def keyword_probes(engines=("cfgmask", "llguidance", "xgrammar")):
    """One row per probe: for each engine "exact", "ignored" (accepts the invalid instance),
    "refused" (compile error) or "too strict" (rejects the valid instance)."""
    from cfgmask.frontends.json_schema.serialize import dumps
    tok = Tok()
    engs = [ENGINES[e](tok) for e in engines]
    out = ["| keyword | " + " | ".join(e.name for e in engs) + " |",
           "|---|" + "---|" * len(engs)]
    for kw, schema, good, bad in PROBES:
        cells = []
        for eng in engs:
            try:
                h = eng.compile(schema)
            except Exception:
                cells.append("refused")
                continue

            def ok(v):
                ids = tok.encode(dumps(v, "compact"))
                return replay(eng, h, ids, tok.eos, [])
            g, b = ok(good), ok(bad)
            cells.append("exact" if g and not b else "ignored" if g and b else
                         "too strict" if not g and not b else "wrong")
        out.append(f"| {kw} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=None, help="only this many schemas, spread evenly")
    ap.add_argument("--samples", type=int, default=3, help="random documents per schema and engine")
    ap.add_argument("--engines", default="cfgmask,llguidance,xgrammar")
    ap.add_argument("--cold", action="store_true", help="clear cfgmask's automaton memo per schema")
    ap.add_argument("--suite", action="store_true", help="JSON-Schema-Test-Suite counts per keyword")
    ap.add_argument("--draft", default="draft2020-12", choices=sorted(SUITE_DRAFTS),
                    help="with --suite: the JSON-Schema-Test-Suite folder")
    ap.add_argument("--keywords", action="store_true", help="probe each engine keyword by keyword")
    args = ap.parse_args(argv)
    engines = tuple(args.engines.split(","))
    if args.keywords:
        print(keyword_probes(engines))
        return 0
    if args.suite:
        print(suite_counts(engines, args.draft))
        return 0
    res = run(args.limit, engines, args.samples, args.cold)
    print(f"JSONSchemaBench public schemas, SmolLM2 tokenizer, {args.samples} samples per schema and "
          f"engine, cfgmask memo {'cleared per schema' if args.cold else 'warm'}; cfgmask compile in "
          f"parentheses: schema -> grammar -> automata and parser tables, without cfgmask.compile "
          f"(lexer and runtime set-up, slice choice)\n")
    print(tables(res, engines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
