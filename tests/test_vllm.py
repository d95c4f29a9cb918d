"""``cfgmask.vllm``: the vLLM logits processor's bookkeeping, on the CPU.

vLLM itself (and a CUDA machine) is not needed: the engine's side is played
by small simulations that follow vLLM 0.33's documented contracts.

* V1 runner: a persistent batch that removes requests (leaving holes), adds
  requests into the lowest hole or at the end, condenses (moves the last
  request into the lowest hole: ``UNIDIRECTIONAL``) and swaps rows
  (``SWAP``), and reports it all as one ``BatchUpdate`` per step, exactly as
  ``vllm/v1/worker/gpu_input_batch.py`` does with ``BatchUpdateBuilder``.
  Each added request carries its running output-token list by reference; with
  async scheduling the list ends with a ``-1`` placeholder until just before
  ``apply``.  When vLLM is importable its own ``BatchUpdateBuilder``,
  ``BatchUpdate`` and ``MoveDirectionality`` are used; otherwise stand-ins with
  the same fields.
* V2 runner: request slots from a free list, ``add_request(slot, params)``,
  rows reordered every step, chunked prefill, preemption and resumption (the
  history comes back through ``req_states.all_token_ids``), and a
  ``LogitsContext`` per step (vLLM's own dataclass when importable).

The oracle is an independent matcher per request (from a separately compiled
grammar) that follows that request's own tokens: at every step, the set of
finite logits of a constrained row must equal the oracle's allowed set, and a
row that did not opt in must be left bit for bit unchanged.  Complete
documents must parse with Lark.
"""

import dataclasses
import enum
import json
import os
import types

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

torch = pytest.importorskip("torch")

import cfgmask  # noqa: E402
from cfgmask import Grammar, Vocabulary  # noqa: E402
from cfgmask import vllm as cv  # noqa: E402

# ------------------------------------------------- vLLM classes or stand-ins

try:
    from vllm.v1.sample.logits_processor import BatchUpdateBuilder, MoveDirectionality
    REAL_V1 = True
except Exception:  # noqa: BLE001 - vLLM absent or not importable here
    REAL_V1 = False

    class MoveDirectionality(enum.Enum):
        """Stand-in for ``vllm.v1.sample.logits_processor.MoveDirectionality``."""
        UNIDIRECTIONAL = enum.auto()
        SWAP = enum.auto()

    @dataclasses.dataclass(frozen=True)
    class BatchUpdate:
        """Stand-in for ``vllm.v1.sample.logits_processor.BatchUpdate`` (same fields)."""
        batch_size: int
        removed: list   # batch indices
        added: list     # (index, SamplingParams, prompt_tok_ids, output_tok_ids)
        moved: list     # (index 1, index 2, MoveDirectionality)

    class BatchUpdateBuilder:
        """Stand-in with the semantics of vLLM's builder: removed kept descending, pops the lowest."""

        def __init__(self):
            self._removed, self.added, self.moved = [], [], []

        @property
        def removed(self):
            self._removed.sort(reverse=True)
            return self._removed

        def removed_append(self, index):
            self._removed.append(index)

        def peek_removed(self):
            return self.removed[-1] if self._removed else None

        def pop_removed(self):
            return self.removed.pop() if self._removed else None

        def get_and_reset(self, batch_size):
            if not (self._removed or self.added or self.moved):
                return None
            bu = BatchUpdate(batch_size, self.removed, self.added, self.moved)
            self._removed, self.added, self.moved = [], [], []
            return bu

try:
    from vllm.v1.worker.gpu.sample.logits_processor.interface import LogitsContext
    REAL_V2 = True
except Exception:  # noqa: BLE001
    REAL_V2 = False

    @dataclasses.dataclass(frozen=True)
    class LogitsContext:
        """Stand-in for vLLM's MRV2 ``LogitsContext`` (same fields)."""
        expanded_idx_mapping: object
        idx_mapping: object
        idx_mapping_np: object
        expanded_local_pos: object
        input_ids: object
        pos: object
        seq_lens_upper_bound_np: object

try:
    from vllm import SamplingParams
except Exception:  # noqa: BLE001
    class SamplingParams:
        """Stand-in: what the processor reads from vLLM's ``SamplingParams``."""

        def __init__(self, extra_args=None, **kw):
            self.extra_args = extra_args


CONFIG = types.SimpleNamespace(speculative_config=None)  # what the processor reads of VllmConfig

# fixed keys, bounded values: a random "model" finishes these documents
FIXED = r'''
start: "{\"id\": " INT ", \"ok\": " BOOL ", \"tag\": " TAG "}"
INT: /[0-9]{1,3}/
BOOL: "true" | "false"
TAG: /"[a-z]{1,6}"/
'''


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def vocab():
    from support.vocabs import smollm2_vocab
    return smollm2_vocab()


@pytest.fixture(scope="module")
def oracle_compiled(vocab):
    """Grammars compiled separately from the processor's cache: the oracle's own matchers."""
    cache = {}

    def get(spec):
        if spec not in cache:
            g = Grammar.builtin(spec) if spec in Grammar.builtin_names() else Grammar.from_lark(spec)
            cache[spec] = cfgmask.compile(g, vocab)
        return cache[spec]
    return get


def params(grammar=None, **extra):
    ea = dict(extra)
    if grammar is not None:
        ea["cfgmask"] = {"grammar": grammar}
    return SamplingParams(extra_args=ea or None)


def finite_set(row):
    return set(np.flatnonzero(np.isfinite(row.numpy())).tolist())


def allowed_set(m):
    return set(m.allowed_tokens().tolist())


class Req:
    def __init__(self, rid, grammar, oracle_compiled, max_tokens):
        self.rid = rid
        self.grammar = grammar
        self.params = params(grammar)
        self.out = []            # the engine's running output list (shared by reference in V1)
        self.max_tokens = max_tokens
        self.oracle = oracle_compiled(grammar) if grammar else None
        self.done = False

    def oracle_matcher(self, n=None):
        m = self.oracle.matcher()
        m.consume_many(self.out[: len(self.out) if n is None else n])
        return m


def choose(logits_row, rng, eos, closers):
    """A random "sampler": noise plus a push towards EOS and closing tokens, over finite logits."""
    x = logits_row.numpy().astype(np.float64) + rng.gumbel(size=logits_row.shape[0])
    x[closers] += 3.0
    x[eos] += 6.0
    return int(np.argmax(x))


def closer_ids(vocab):
    want = {b"}", b'"', b"]", b"true", b"1", b",", b" "}
    return np.array([i for i, tb in enumerate(vocab.token_bytes) if tb in want], dtype=np.int64)


def check_row(proc_row, raw_row, req):
    """The processor's row against the oracle: exact allowed set, or untouched."""
    if req.grammar is None:
        assert torch.equal(proc_row, raw_row), f"{req.rid}: a row without a grammar was changed"
        return
    m = req.oracle_matcher()
    want = allowed_set(m) if not m.is_finished() else None
    got = finite_set(proc_row)
    if want is None:  # finished: EOS only
        assert got <= set(req.oracle.vocab.eos_token_ids) and got, f"{req.rid}: finished row not EOS-only"
    else:
        assert got == want, (f"{req.rid}: mask differs from the oracle after {m.prefix!r}: "
                             f"{len(got - want)} extra, {len(want - got)} missing")
    assert not torch.isnan(torch.softmax(proc_row, -1)).any()


# -------------------------------------------------------- V1 simulation

class V1Batch:
    """The persistent batch of vLLM's V1 runner, as far as logits processors see it."""

    def __init__(self):
        self.rows = []  # index -> Req or None (a hole)
        self.builder = BatchUpdateBuilder()

    @property
    def num_reqs(self):
        return sum(r is not None for r in self.rows)

    def remove(self, req):
        i = self.rows.index(req)
        self.rows[i] = None
        self.builder.removed_append(i)

    def add(self, req):
        i = self.builder.pop_removed()
        if i is None:
            i = self.num_reqs
        if i == len(self.rows):
            self.rows.append(req)
        else:
            self.rows[i] = req
        self.builder.added.append((i, req.params, [1, 2, 3], req.out))

    def condense(self):
        empty = self.builder.removed  # descending
        if not empty:
            return
        last = len(self.rows) - 1
        while empty:
            while last >= 0 and self.rows[last] is None:
                last -= 1
            hole = self.builder.peek_removed()
            if hole is None or hole >= last:
                break
            self.builder.pop_removed()
            self.rows[hole], self.rows[last] = self.rows[last], None
            self.builder.moved.append((last, hole, MoveDirectionality.UNIDIRECTIONAL))
        while self.rows and self.rows[-1] is None:
            self.rows.pop()

    def swap(self, i, j):
        self.rows[i], self.rows[j] = self.rows[j], self.rows[i]
        self.builder.moved.append((i, j, MoveDirectionality.SWAP))

    def update(self):
        return self.builder.get_and_reset(self.num_reqs)


def run_v1(proc, reqs, vocab, *, steps, seed, max_live=4, async_sched=False, swap_every=3):
    """Drive ``proc`` like the V1 runner; checks every row of every step against the oracle."""
    rng = np.random.default_rng(seed)
    eos = vocab.eos_token_ids[0]
    closers = closer_ids(vocab)
    batch = V1Batch()
    waiting = list(reqs)
    finished = []
    for step in range(steps):
        for r in [r for r in batch.rows if r is not None and r.done]:
            batch.remove(r)
            finished.append(r)
        while waiting and batch.num_reqs < max_live:
            batch.add(waiting.pop(0))
        batch.condense()
        live = [i for i, r in enumerate(batch.rows) if r is not None]
        if swap_every and step % swap_every == 2 and len(live) >= 2:
            i, j = rng.choice(live, 2, replace=False)
            batch.swap(int(i), int(j))
        proc.update_state(batch.update())
        if not batch.rows:
            break
        if async_sched:  # the placeholders are repaired right before apply
            for r in batch.rows:
                if r.out and r.out[-1] == -1:
                    r.out[-1] = r.pending
        B = len(batch.rows)
        raw = torch.randn(B, vocab.vocab_size, generator=torch.Generator().manual_seed(seed * 1000 + step))
        logits = raw.clone()
        out = proc.apply(logits)
        assert out is logits
        for i, r in enumerate(batch.rows):
            check_row(logits[i], raw[i], r)
            t = choose(logits[i], rng, eos, closers)
            if async_sched:
                r.pending = t
                r.out.append(-1)
            else:
                r.out.append(t)
            if t == eos or len(r.out) >= r.max_tokens:
                r.done = True
        if async_sched:
            for r in batch.rows:
                if r.out[-1] == -1:
                    r.out[-1] = r.pending
    return finished + [r for r in batch.rows if r is not None]


def check_documents(reqs, vocab):
    import lark
    n_complete = 0
    for r in reqs:
        if r.grammar is None:
            continue
        m = r.oracle.matcher()
        m.consume_many(r.out)  # raises if any token was not allowed
        if m.is_finished():
            n_complete += 1
            text = m.prefix.decode("utf-8")
            src = Grammar.builtin_path(r.grammar).read_text() if r.grammar in Grammar.builtin_names() else r.grammar
            lark.Lark(src, parser="earley", lexer="dynamic").parse(text)
    return n_complete


def make_proc_v1(vocab):
    return cv.GrammarLogitsProcessor(CONFIG, torch.device("cpu"), False, vocab=vocab)


@pytest.mark.parametrize("async_sched", [False, True])
def test_v1_batch_bookkeeping(vocab, oracle_compiled, async_sched):
    reqs = []
    for k in range(10):
        g = [FIXED, None, "json", FIXED, "sql"][k % 5]
        reqs.append(Req(f"r{k}", g, oracle_compiled, max_tokens=14 if g in ("json", "sql") else 40))
    proc = make_proc_v1(vocab)
    done = run_v1(proc, reqs, vocab, steps=120, seed=1 + async_sched, async_sched=async_sched)
    assert len(done) == len(reqs) and all(r.done for r in done), "the simulation did not finish"
    n_complete = check_documents(done, vocab)
    assert n_complete >= 3, "fixed-key documents should complete under a push towards closers"
    assert proc.dead_ends == []


def test_v1_shared_compiled_grammar(vocab):
    proc = make_proc_v1(vocab)
    a, b = [], []
    proc.update_state(BatchUpdateBuilderFor([(0, params(FIXED), None, a), (1, params(FIXED), None, b)]))
    assert proc._rows[0].compiled is proc._rows[1].compiled
    assert proc._rows[0].matcher is not proc._rows[1].matcher


def BatchUpdateBuilderFor(added, removed=(), moved=(), batch_size=None):
    bld = BatchUpdateBuilder()
    for i in removed:
        bld.removed_append(i)
    bld.added.extend(added)
    bld.moved.extend(moved)
    return bld.get_and_reset(batch_size if batch_size is not None else len(added))


def test_v1_rollback_and_ignore_eos(vocab, oracle_compiled):
    """Output lists that shrink (discarded after a KV-load failure) roll the matcher back."""
    proc = make_proc_v1(vocab)
    r = Req("r", FIXED, oracle_compiled, 50)
    proc.update_state(BatchUpdateBuilderFor([(0, r.params, None, r.out)]))
    doc = b'{"id": 12, "ok": true, "tag": "ab"}'
    ids = greedy_tokens(vocab, r.oracle, doc)
    for k, t in enumerate(ids):
        lg = torch.zeros(1, vocab.vocab_size)
        proc.apply(lg)
        check_row(lg[0], None, r)
        r.out.append(t)
    del r.out[-3:]  # three tokens discarded
    lg = torch.zeros(1, vocab.vocab_size)
    proc.apply(lg)
    check_row(lg[0], None, r)
    r.out.extend(ids[-3:])
    r.out.append(vocab.eos_token_ids[0])
    r.out.extend([vocab.eos_token_ids[0]] * 2)  # ignore_eos: the engine keeps going
    lg = torch.zeros(1, vocab.vocab_size)
    proc.apply(lg)
    assert finite_set(lg[0]) == set(vocab.eos_token_ids)
    del r.out[-2:]
    proc.apply(torch.zeros(1, vocab.vocab_size))
    assert proc._rows[0].extra == 0 and proc._rows[0].matcher.is_finished()
    del r.out[-2:]  # EOS and one more token gone: back inside the document
    lg = torch.zeros(1, vocab.vocab_size)
    proc.apply(lg)
    check_row(lg[0], None, r)
    assert proc.dead_ends == []


def greedy_tokens(vocab, compiled, doc):
    """A tokenisation of ``doc`` accepted token by token (longest allowed token first)."""
    m = compiled.matcher()
    out, pos = [], 0
    by_len = sorted((i for i, tb in enumerate(vocab.token_bytes) if tb), key=lambda i: -len(vocab.token_bytes[i]))
    while pos < len(doc):
        for i in by_len:
            tb = vocab.token_bytes[i]
            if doc.startswith(tb, pos) and m.try_consume(i):
                out.append(i)
                pos += len(tb)
                break
        else:
            raise AssertionError(f"no token continues {doc[:pos]!r}")
    return out


# ---------------------------------------------------- dead ends and NaNs

def toy_vocab():
    # ids: 0 "a", 1 "b", 2 "{", 3 "}", 4 EOS (special)
    return Vocabulary([b"a", b"b", b"{", b"}", None], eos_token_ids=[4])


def test_dead_end_finishes_with_eos_and_no_nan():
    v = toy_vocab()
    proc = cv.GrammarLogitsProcessor(CONFIG, torch.device("cpu"), False, vocab=v)
    dead_out, free_out = [], []
    proc.update_state(BatchUpdateBuilderFor([(0, params('start: "a" "c"'), None, dead_out),
                                             (1, params(None), None, free_out)]))
    lg = torch.randn(2, v.vocab_size)
    raw = lg.clone()
    proc.apply(lg)
    assert finite_set(lg[0]) == {0}
    assert torch.equal(lg[1], raw[1])
    dead_out.append(0)  # "a": now nothing in the vocabulary can continue ("c" is missing)
    free_out.append(1)
    lg = torch.randn(2, v.vocab_size)
    raw = lg.clone()
    proc.apply(lg)
    assert finite_set(lg[0]) == {4}, "a dead end allows EOS only"
    assert torch.equal(lg[1], raw[1])
    assert not torch.isnan(torch.softmax(lg, -1)).any()
    assert len(proc.dead_ends) == 1 and "'a'" in proc.dead_ends[0] and "continue" in proc.dead_ends[0]
    dead_out.append(4)
    lg = torch.randn(2, v.vocab_size)
    proc.apply(lg)
    assert finite_set(lg[0]) == {4}


def test_all_allowed_removed_upstream_gives_eos_not_nan():
    """An earlier stage (logit_bias, min_tokens) set every allowed token to -inf: EOS, not NaN."""
    v = toy_vocab()
    proc = cv.GrammarLogitsProcessor(CONFIG, torch.device("cpu"), False, vocab=v)
    out = []
    proc.update_state(BatchUpdateBuilderFor([(0, params('start: "{" "a"* "}"'), None, out)]))
    lg = torch.zeros(1, v.vocab_size)
    lg[0, 2] = float("-inf")  # "{" is the only allowed token, and it is gone
    proc.apply(lg)
    assert finite_set(lg[0]) == {4}
    assert not torch.isnan(torch.softmax(lg, -1)).any()
    out.append(4)  # the engine samples that EOS: the grammar did not allow it
    lg = torch.zeros(1, v.vocab_size)
    proc.apply(lg)
    assert finite_set(lg[0]) == {4}
    assert len(proc.dead_ends) == 1 and "EOS is not allowed" in proc.dead_ends[0]


def test_rejected_token_ends_request():
    v = toy_vocab()
    proc = cv.GrammarLogitsProcessor(CONFIG, torch.device("cpu"), False, vocab=v)
    out = []
    proc.update_state(BatchUpdateBuilderFor([(0, params('start: "{" "a"* "}"'), None, out)]))
    proc.apply(torch.zeros(1, v.vocab_size))
    out.append(1)  # "b": not allowed; some stage after the mask chose it
    lg = torch.zeros(1, v.vocab_size)
    proc.apply(lg)
    assert finite_set(lg[0]) == {4}
    assert "token 1" in proc.dead_ends[0]


# --------------------------------------------------- admission (validate)

@pytest.mark.parametrize("extra,fragment", [
    ({"cfgmask": {"grammar": "start: /a(?<=b)/"}}, "lookbehind"),
    ({"cfgmask": {"grammar": "start: undefined_rule"}}, "undefined_rule"),
    ({"cfgmask": {"grammar": 'start: "a"', "json_schema": {}}}, "exactly one"),
    ({"cfgmask": {"gramar": "json"}}, "unknown option"),
    ({"cfgmask": 12}, "must be an object"),
    ({"cfgmask": "{not json"}, "not valid JSON"),
    ({"cfgmask": {"grammar": "json", "start": 3}}, "'start' must be a rule name"),
    ({"cfgmask": {"grammar": "json", "start": "nosuchrule"}}, "nosuchrule"),
    ({"cfgmask": {"json_schema": "[1,"}}, "not valid JSON"),
    ({"cfgmask": {"json_schema": 5}}, "must be a JSON object"),
])
def test_validate_params_rejects(extra, fragment):
    with pytest.raises(ValueError) as ei:
        cv.GrammarLogitsProcessor.validate_params(SamplingParams(extra_args=extra))
    assert fragment in str(ei.value)


@pytest.mark.parametrize("extra", [
    None, {}, {"other": 1},
    {"cfgmask": {"grammar": "json"}},
    {"cfgmask": {"grammar": "sql"}},
    {"cfgmask": {"grammar": "json", "start": "object"}},
    {"cfgmask": "sql"},                                      # HTTP form: a plain name
    {"cfgmask": json.dumps({"grammar": 'start: "x"+'})},     # HTTP form: the object as JSON text
    {"cfgmask": {"grammar": FIXED}},
])
def test_validate_params_accepts(extra):
    cv.GrammarLogitsProcessor.validate_params(SamplingParams(extra_args=extra))


def test_json_schema_spec():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    sp = SamplingParams(extra_args={"cfgmask": {"json_schema": schema}})
    spec = cv.parse_spec(sp.extra_args)
    assert spec.kind == "json_schema" and json.loads(spec.text) == schema
    assert cv.parse_spec({"cfgmask": {"json_schema": json.dumps(schema)}}).key == spec.key
    if hasattr(Grammar, "from_json_schema"):
        cv.GrammarLogitsProcessor.validate_params(sp)
    else:
        with pytest.raises(ValueError, match="from_json_schema"):
            cv.GrammarLogitsProcessor.validate_params(sp)


def test_bad_spec_in_worker_fails_closed(vocab):
    """A request that skipped validation still never runs unconstrained: EOS only."""
    proc = make_proc_v1(vocab)
    out = []
    proc.update_state(BatchUpdateBuilderFor([(0, params("start: /a(?<=b)/"), None, out)]))
    lg = torch.zeros(1, vocab.vocab_size)
    proc.apply(lg)
    assert finite_set(lg[0]) == set(vocab.eos_token_ids)
    assert "lookbehind" in proc.dead_ends[0]


# -------------------------------------------------------- V2 simulation

class V2Engine:
    """Model Runner V2 as its logits processors see it (slots, req_states, LogitsContext)."""

    def __init__(self, proc_factory, vocab, max_reqs=6, max_len=256, seed=0):
        self.vocab = vocab
        self.rng = np.random.default_rng(seed)
        self.free = list(range(max_reqs))
        self.tokens = torch.zeros(max_reqs, max_len, dtype=torch.int32)
        self.prompt_len = np.zeros(max_reqs, dtype=np.int32)
        self.req_states = types.SimpleNamespace(
            device=torch.device("cpu"), max_num_reqs=max_reqs, vocab_size=vocab.vocab_size,
            all_token_ids=types.SimpleNamespace(gpu=self.tokens),
            prompt_len=types.SimpleNamespace(np=self.prompt_len),
            prefill_len=types.SimpleNamespace(np=np.zeros(max_reqs, dtype=np.int32)),
            total_len=None)
        self.proc = proc_factory(self.req_states)
        self.live = {}  # Req -> slot

    def admit(self, req):
        slot = self.free.pop()
        P = len(req.prompt)
        hist = req.prompt + req.out  # resumption after preemption: prompt plus the output so far
        self.tokens[slot, :len(hist)] = torch.tensor(hist, dtype=torch.int32)
        self.prompt_len[slot] = P
        req.slot, req.prefill_len, req.computed = slot, len(hist), 0
        self.proc.add_request(slot, req.params)
        self.live[req] = slot

    def preempt(self, req):
        self.free.append(self.live.pop(req))

    def step(self, eos, closers, seed):
        order = list(self.live)
        self.rng.shuffle(order)  # rows are reordered every step
        rows = []
        for r in order:
            total = len(r.prompt) + len(r.out)
            if r.computed < r.prefill_len:  # chunked prefill, 1-4 tokens per step
                r.computed = min(r.prefill_len, r.computed + int(self.rng.integers(1, 5)))
                pos = r.computed - 1
                final = r.computed == r.prefill_len
            else:
                pos = total - 1
                final = True
            rows.append((r, pos, final))
        slots = np.array([self.live[r] for r, _, _ in rows], dtype=np.int32)
        input_ids = torch.tensor([int(self.tokens[self.live[r], p]) for r, p, _ in rows], dtype=torch.int32)
        pos = torch.tensor([p for _, p, _ in rows], dtype=torch.int64)
        ctx = LogitsContext(expanded_idx_mapping=torch.from_numpy(slots.copy()),
                            idx_mapping=torch.from_numpy(slots.copy()), idx_mapping_np=slots,
                            expanded_local_pos=torch.zeros(len(rows), dtype=torch.int32),
                            input_ids=input_ids, pos=pos, seq_lens_upper_bound_np=(pos + 1).numpy())
        raw = torch.randn(len(rows), self.vocab.vocab_size, generator=torch.Generator().manual_seed(seed))
        logits = raw.clone()
        self.proc.apply(logits, ctx)
        for b, (r, p, final) in enumerate(rows):
            n_out = max(0, p + 1 - len(r.prompt))
            if r.grammar is None:
                assert torch.equal(logits[b], raw[b])
            else:
                m = r.oracle_matcher(n_out)
                got = finite_set(logits[b])
                want = allowed_set(m) if not m.is_finished() else set(self.vocab.eos_token_ids)
                assert got == want, f"{r.rid} at position {p}: mask differs from the oracle"
            if not final:
                continue  # a partial prefill chunk: the sampled token is discarded
            t = choose(logits[b], self.rng, eos, closers)
            slot = self.live[r]
            self.tokens[slot, len(r.prompt) + len(r.out)] = t
            r.out.append(t)
            if t == eos or len(r.out) >= r.max_tokens:
                r.done = True
        for r in [r for r in self.live if r.done]:
            self.preempt(r)  # finished: the slot goes back to the free list


def make_proc_v2(vocab):
    return lambda req_states: cv.GrammarLogitsProcessor(CONFIG, req_states, vocab=vocab)


def test_v2_slots_reordering_prefill_and_preemption(vocab, oracle_compiled):
    eng = V2Engine(make_proc_v2(vocab), vocab, seed=3)
    eos, closers = vocab.eos_token_ids[0], closer_ids(vocab)
    reqs = []
    for k in range(9):
        g = [FIXED, "json", None][k % 3]
        r = Req(f"r{k}", g, oracle_compiled, max_tokens=30 if g == FIXED else 12)
        r.prompt = [int(x) for x in np.random.default_rng(k).integers(100, 1000, size=3 + k % 4)]
        reqs.append(r)
    waiting = list(reqs)
    preempted = 0
    for step in range(200):
        while waiting and eng.free:
            eng.admit(waiting.pop(0))
        if not eng.live:
            break
        eng.step(eos, closers, seed=step)
        # preempt a running request now and then; it comes back later in another slot
        running = [r for r in eng.live if not r.done and r.out]
        if step % 5 == 4 and len(running) >= 2 and preempted < 5:
            r = running[int(eng.rng.integers(len(running)))]
            eng.preempt(r)
            waiting.append(r)
            preempted += 1
    assert all(r.done for r in reqs), "the simulation did not finish"
    assert preempted >= 2
    assert check_documents(reqs, vocab) >= 2
    assert eng.proc.dead_ends == []


def test_v2_declines_requests_without_grammar(vocab):
    eng = V2Engine(make_proc_v2(vocab), vocab)
    assert eng.proc.add_request(0, params(None)) is False
    assert eng.proc.add_request(1, params("json")) is True
    assert eng.proc.add_request(1, params(None)) is False  # the slot's new occupant: state dropped
    assert 1 not in eng.proc._rows


def test_speculative_decoding_refused(vocab):
    cfg = types.SimpleNamespace(speculative_config=object())
    with pytest.raises(ValueError, match="speculative"):
        cv.GrammarLogitsProcessor(cfg, torch.device("cpu"), False, vocab=vocab)


def test_constructor_signatures(vocab):
    with pytest.raises(TypeError):
        cv.GrammarLogitsProcessor(CONFIG, vocab=vocab)
    assert cv.GrammarLogitsProcessor(CONFIG, torch.device("cpu"), False, vocab=vocab).runner == "v1"
    rs = types.SimpleNamespace(device=torch.device("cpu"))
    assert cv.GrammarLogitsProcessor(CONFIG, rs, vocab=vocab).runner == "v2"
    assert cv.GrammarLogitsProcessor(CONFIG, rs, vocab=vocab).is_argmax_invariant() is False


def test_tokenizer_loading_from_model_config():
    """Without ``vocab=``, the processor reads the engine's tokenizer (the converted default model)."""
    from cfgmask import models
    try:
        d = models.converted_dir(models.default_gguf_path())
    except (cfgmask.ConfigurationError, OSError) as e:
        pytest.skip(str(e))
    if not (d / "tokenizer.json").is_file():
        pytest.skip("the default model has not been converted yet (run `cfgmask generate` once)")
    mc = types.SimpleNamespace(tokenizer=str(d), tokenizer_revision=None, trust_remote_code=False,
                               get_vocab_size=lambda: 49152,
                               try_get_generation_config=lambda: {"eos_token_id": 2})
    proc = cv.GrammarLogitsProcessor(types.SimpleNamespace(model_config=mc, speculative_config=None),
                                     torch.device("cpu"), False)
    assert proc.vocab.vocab_size == 49152 and 2 in proc.vocab.eos_token_ids


# ------------------------------------------------------ with real vLLM

def test_vllm_loaders_accept_the_processor():
    """vLLM's own loaders (both runners) and its admission validator, when vLLM imports."""
    pytest.importorskip("vllm.v1.sample.logits_processor")
    pytest.importorskip("vllm.v1.worker.gpu.sample.logits_processor.loader")
    from vllm.v1.sample.logits_processor import _load_logitsprocs_by_fqcns
    from vllm.v1.worker.gpu.sample.logits_processor.loader import (
        _load_v2_logitsprocs_by_fqcns, build_custom_logits_processors_params_validator)
    fqcn = "cfgmask.vllm:GrammarLogitsProcessor"
    assert _load_logitsprocs_by_fqcns([fqcn]) == [cv.GrammarLogitsProcessor]
    assert _load_v2_logitsprocs_by_fqcns([fqcn]) == [cv.GrammarLogitsProcessor]
    validate = build_custom_logits_processors_params_validator([fqcn])
    validate(SamplingParams(extra_args={"cfgmask": {"grammar": "json"}}))
    with pytest.raises(Exception, match="lookbehind") as ei:  # vLLM wraps it in VLLMValidationError
        validate(SamplingParams(extra_args={"cfgmask": {"grammar": "start: /a(?<=b)/"}}))
    assert "GrammarError" in str(ei.value)


# ------------------------------------------- scripts/vllm_check.py (no GPU)

@pytest.fixture(scope="module")
def check_script():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "scripts" / "vllm_check.py"
    spec = importlib.util.spec_from_file_location("vllm_check", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_check_script_arguments(check_script):
    a = check_script.parse_args([])
    assert a.kinds == ["json", "sql", "schema"] and a.requests == 16 and a.runner == "auto"
    a = check_script.parse_args(["--kinds", "sql", "--requests", "3", "--runner", "v1"])
    assert a.kinds == ["sql"] and a.requests == 3 and a.runner == "v1"
    for bad in (["--kinds", "xml"], ["--requests", "0"], ["--runner", "v3"]):
        with pytest.raises(SystemExit):
            check_script.parse_args(bad)


def test_check_script_requests_pass_admission(check_script):
    reqs = check_script.build_requests(["json", "sql", "schema"], 5)
    assert [r.kind for r in reqs].count("sql") == 5 and len(reqs) == 15
    for r in reqs:
        cv.GrammarLogitsProcessor.validate_params(SamplingParams(extra_args=r.extra_args))
    lark_only = check_script.build_requests(["schema"], 1, use_schema=False)[0]
    assert "grammar" in lark_only.spec  # without Grammar.from_json_schema: the same object as Lark
    assert check_script.check_admission(
        lambda ea: cv.GrammarLogitsProcessor.validate_params(SamplingParams(extra_args=ea)))
    assert not check_script.check_admission(lambda ea: None)  # a validator that accepts everything fails


def test_check_script_output_checks(check_script, vocab):
    S = check_script
    j, q = S.build_requests(["json"], 1)[0], S.build_requests(["sql"], 1)[0]
    s = S.build_requests(["schema"], 1, use_schema=False)[0]
    assert S.check_output(j, '{"a": [1, 2.5, "x"], "b": null}', "stop")[0] == "valid"
    assert S.check_output(j, '{"a": 1,}', "stop")[0] == "invalid"
    assert S.check_output(j, '[1, 2]', "stop")[0] == "invalid"  # start=object
    assert S.check_output(q, "SELECT name FROM singer WHERE age > 30;", "stop")[0] == "valid"
    assert S.check_output(q, "SELECT nom FROM chanteur;", "stop")[0] == "valid"  # unknown names: still SQL
    st, detail = S.check_output(q, "SELECT name FROM singer WHERE;", "stop")
    assert st == "invalid"
    good = '{"id": 1, "username": "ada", "email": "a@b.c", "age": 36, "is_active": true}'
    assert S.check_output(s, good, "stop")[0] == "valid"
    assert S.check_output(s, good.replace("36", "360"), "stop")[0] == "invalid"  # schema: maximum
    assert S._schema_errors({"id": 1}) != []
    # cut outputs: the tokens must be a valid prefix
    compiled = cv._compiled(cv.parse_spec(j.extra_args), vocab)
    prefix = greedy_tokens(vocab, compiled, b'{"a": [1, ')
    assert S.check_output(j, "", "length", prefix, compiled)[0] == "cut"
    bad = greedy_tokens(vocab, compiled, b'{"a": ') + [tok_id(vocab, b"}")]
    assert S.check_output(j, "", "length", bad, compiled)[0] == "invalid"
    assert S.check_output(j, good, "abort")[0] == "invalid"
    checks = [("json", "valid", ""), ("json", "cut", ""), ("sql", "valid", "")]
    assert S.summarize(checks) == {"json": {"valid": 1, "cut": 1, "invalid": 0},
                                   "sql": {"valid": 1, "cut": 0, "invalid": 0}}
    assert S.verdict(checks, 0.97, True) == 0
    assert S.verdict(checks, 0.90, True) == 1
    assert S.verdict(checks + [("sql", "invalid", "x")], 1.0, True) == 1
    assert S.verdict(checks, 1.0, False) == 1


def tok_id(vocab, b):
    return next(i for i, tb in enumerate(vocab.token_bytes) if tb == b)


def test_check_script_dry_run(check_script):
    assert check_script.main(["--dry-run", "--requests", "2"]) == 0


# ------------------------------ a bad or heavy request costs that request only

def _nested(depth):
    s = {"type": "integer"}
    for _ in range(depth):
        s = {"type": "object", "properties": {"a": s}, "required": ["a"]}
    return s


MALFORMED_SCHEMAS = {
    "type_not_a_name": {"type": 5},
    "minimum_a_string": {"type": "integer", "minimum": "5"},
    "required_not_names": {"type": "object", "required": [1]},
    "nested_1000": _nested(1000),
    "maximum_10e4000": {"type": "integer", "maximum": 10 ** 4000},
}


@pytest.mark.parametrize("name", sorted(MALFORMED_SCHEMAS))
def test_validate_params_malformed_schema_is_value_error(name):
    """vLLM's validator turns ValueError (only) into HTTP 400; anything else is a 500."""
    sp = SamplingParams(extra_args={"cfgmask": {"json_schema": MALFORMED_SCHEMAS[name]}})
    with pytest.raises(Exception) as ei:
        cv.GrammarLogitsProcessor.validate_params(sp)
    assert type(ei.value) is ValueError, f"{type(ei.value).__name__}: {ei.value}"
    assert str(ei.value).startswith("cfgmask:")


@pytest.mark.parametrize("as_text", [False, True])
def test_validate_params_huge_integer_is_value_error(as_text):
    """A 5,000-digit integer passes Python's int/str limit neither way: a cfgmask message, not Python's."""
    big = (10 ** 5000 - 1) // 9 * 7  # 5,000 sevens (int("7" * 5000) itself hits the limit)
    schema = {"type": "integer", "maximum": big}
    if as_text:  # the HTTP form: the schema as JSON text
        schema = '{"type": "integer", "maximum": ' + "7" * 5000 + "}"
    with pytest.raises(Exception) as ei:
        cv.GrammarLogitsProcessor.validate_params(SamplingParams(extra_args={"cfgmask": {"json_schema": schema}}))
    assert type(ei.value) is ValueError and str(ei.value).startswith("cfgmask:"), repr(ei.value)


def test_validate_params_properties_list_never_a_foreign_exception():
    """``properties`` as a list: refused (400) or compiled, never a 500-type exception."""
    sp = SamplingParams(extra_args={"cfgmask": {"json_schema": {"type": "object", "properties": []}}})
    try:
        cv.GrammarLogitsProcessor.validate_params(sp)
    except ValueError as e:
        assert str(e).startswith("cfgmask:")


@pytest.mark.parametrize("exc", [TypeError("bad thing"), IndexError("list index out of range"),
                                 AssertionError("invariant"), RecursionError("maximum recursion depth"),
                                 MemoryError("out of memory")])
def test_validate_params_any_build_failure_is_value_error(monkeypatch, exc):
    """Whatever the grammar build raises comes out as ValueError with the original message."""
    text = f'start: "admission-{type(exc).__name__}"'
    real = Grammar.from_lark

    def from_lark(src, *a, **kw):
        if src == text:
            raise exc
        return real(src, *a, **kw)
    monkeypatch.setattr(Grammar, "from_lark", staticmethod(from_lark))
    with pytest.raises(Exception) as ei:
        cv.GrammarLogitsProcessor.validate_params(params(text))
    assert type(ei.value) is ValueError, repr(ei.value)
    assert type(exc).__name__ in str(ei.value) and str(exc) in str(ei.value)


def _failing_compile(monkeypatch, texts, exc):
    """Make ``cfgmask.engine.compiler.compile`` raise ``exc`` for the grammars whose Lark text is in ``texts``."""
    import cfgmask.engine.compiler as compiler
    real = compiler.compile
    bad = set(texts)

    def compile_(grammar, vocab, **kw):
        if getattr(grammar, "_test_text", None) in bad:
            raise exc
        return real(grammar, vocab, **kw)
    real_from_lark = Grammar.from_lark

    def from_lark(src, *a, **kw):
        g = real_from_lark(src, *a, **kw)
        if src in bad:
            g._test_text = src
        return g
    monkeypatch.setattr(compiler, "compile", compile_)
    monkeypatch.setattr(Grammar, "from_lark", staticmethod(from_lark))


@pytest.mark.parametrize("exc", [TypeError("unhashable"), RecursionError("maximum recursion depth exceeded"),
                                 MemoryError("no memory"), AssertionError("broken invariant")])
@pytest.mark.parametrize("where", ["compile", "load"])
def test_worker_exception_ends_that_request_only(vocab, oracle_compiled, monkeypatch, exc, where):
    """An exception from one request's grammar (load or compile) in the worker: that row ends, the others go on."""
    bad_text = f'start: "worker-{where}-{type(exc).__name__}"'
    if where == "compile":
        _failing_compile(monkeypatch, [bad_text], exc)
    else:
        real = Grammar.from_lark

        def from_lark(src, *a, **kw):
            if src == bad_text:
                raise exc
            return real(src, *a, **kw)
        monkeypatch.setattr(Grammar, "from_lark", staticmethod(from_lark))
    proc = make_proc_v1(vocab)
    good = Req("good", FIXED, oracle_compiled, 40)
    free = Req("free", None, oracle_compiled, 40)
    bad_out = []
    proc.update_state(BatchUpdateBuilderFor([(0, params(bad_text), None, bad_out),
                                             (1, good.params, None, good.out),
                                             (2, free.params, None, free.out)]))
    doc = greedy_tokens(vocab, good.oracle, b'{"id": 7, "ok": false, "tag": "x"}')
    for t in doc[:6]:
        raw = torch.randn(3, vocab.vocab_size)
        lg = raw.clone()
        proc.apply(lg)
        assert finite_set(lg[0]) == set(vocab.eos_token_ids), "the failed request allows EOS only"
        check_row(lg[1], raw[1], good)
        check_row(lg[2], raw[2], free)
        bad_out.append(vocab.eos_token_ids[0])
        good.out.append(t)
        free.out.append(t)
    assert len(proc.dead_ends) == 1
    assert type(exc).__name__ in proc.dead_ends[0] and str(exc) in proc.dead_ends[0]


def test_worker_exception_v2_add_request(vocab, oracle_compiled, monkeypatch):
    """Model Runner V2: add_request never raises for a bad grammar; the row ends with EOS."""
    bad_text = 'start: "worker-v2-TypeError"'
    _failing_compile(monkeypatch, [bad_text], TypeError("boom"))
    eng = V2Engine(make_proc_v2(vocab), vocab)
    assert eng.proc.add_request(0, params(bad_text)) is True
    assert eng.proc.add_request(1, params(FIXED)) is True
    ctx = LogitsContext(expanded_idx_mapping=None, idx_mapping=None, idx_mapping_np=np.array([0, 1], np.int32),
                        expanded_local_pos=None, input_ids=torch.tensor([5, 5]), pos=torch.tensor([2, 2]),
                        seq_lens_upper_bound_np=None)
    eng.prompt_len[:2] = 3
    lg = torch.zeros(2, vocab.vocab_size)
    eng.proc.apply(lg, ctx)
    assert finite_set(lg[0]) == set(vocab.eos_token_ids)
    assert finite_set(lg[1]) == allowed_set(oracle_compiled(FIXED).matcher())
    assert "TypeError: boom" in eng.proc.dead_ends[0]


def test_worker_fill_exception_ends_that_grammars_rows_only(vocab, oracle_compiled):
    """An exception while filling one grammar's rows (a budget, a bug) ends those rows; other grammars go on."""
    proc = make_proc_v1(vocab)
    text = 'start: "fill-" /[a-z]{1,4}/'
    a, b = [], []
    proc.update_state(BatchUpdateBuilderFor([(0, params(text), None, a), (1, params(FIXED), None, b)]))
    compiled = proc._rows[0].compiled if proc._rows[0].compiled is not None else cv._compiled(
        cv.parse_spec(params(text).extra_args), vocab)

    def broken(*_a, **_kw):
        raise cfgmask.BudgetExceeded("mask cache budget exceeded (test)")
    compiled.fill_bitmasks = broken
    try:
        lg = torch.zeros(2, vocab.vocab_size)
        proc.apply(lg)
    finally:
        del compiled.fill_bitmasks
    assert finite_set(lg[0]) == set(vocab.eos_token_ids)
    assert finite_set(lg[1]) == allowed_set(oracle_compiled(FIXED).matcher())
    assert "BudgetExceeded" in proc.dead_ends[0] and "(test)" in proc.dead_ends[0]


def _blocking_compile(monkeypatch, text):
    """``cfgmask.engine.compiler.compile`` blocks on an event for the grammar ``text``; returns (started, release)."""
    import threading
    import cfgmask.engine.compiler as compiler
    started, release = threading.Event(), threading.Event()
    real = compiler.compile
    real_from_lark = Grammar.from_lark

    def from_lark(src, *a, **kw):
        g = real_from_lark(src, *a, **kw)
        if src == text:
            g._test_slow = True
        return g

    def compile_(grammar, vocab, **kw):
        if getattr(grammar, "_test_slow", False):
            started.set()
            assert release.wait(120), "the test never released the slow compile"
        return real(grammar, vocab, **kw)
    monkeypatch.setattr(compiler, "compile", compile_)
    monkeypatch.setattr(Grammar, "from_lark", staticmethod(from_lark))
    return started, release


def _bounded(fn, what, limit=60):
    """Run ``fn`` in a thread; fail (instead of hanging) if it has not returned within ``limit`` s."""
    import threading
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the test thread
            box["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(limit)
    assert not t.is_alive(), f"{what} blocked (still running after {limit} s)"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_slow_compile_does_not_block_other_requests(vocab, oracle_compiled, monkeypatch):
    """A grammar still compiling in the worker: the step does not wait past CFGMASK_VLLM_STEP_WAIT_S;
    the other rows get their exact masks and the slow request ends with a clear reason."""
    slow = 'start: "slow-compile-" /[0-9]+/'
    started, release = _blocking_compile(monkeypatch, slow)
    monkeypatch.setenv("CFGMASK_VLLM_STEP_WAIT_S", "0")
    try:
        proc = make_proc_v1(vocab)
        good = Req("good", FIXED, oracle_compiled, 40)
        _bounded(lambda: proc.update_state(BatchUpdateBuilderFor(
            [(0, params(slow), None, []), (1, good.params, None, good.out)])), "update_state")
        assert started.wait(60), "the slow compile never started"
        raw = torch.randn(2, vocab.vocab_size)
        lg = raw.clone()
        _bounded(lambda: proc.apply(lg), "apply")
        check_row(lg[1], raw[1], good)
        assert finite_set(lg[0]) == set(vocab.eos_token_ids)
        assert "still compiling" in proc.dead_ends[0] and "CFGMASK_VLLM_STEP_WAIT_S" in proc.dead_ends[0]
    finally:
        release.set()
    # the compile went on in the background: a retry (allowed to wait) gets the grammar
    monkeypatch.setenv("CFGMASK_VLLM_STEP_WAIT_S", "120")
    proc2 = make_proc_v1(vocab)
    out = []
    proc2.update_state(BatchUpdateBuilderFor([(0, params(slow), None, out)]))
    lg = torch.zeros(1, vocab.vocab_size)
    _bounded(lambda: proc2.apply(lg), "apply after the compile finished", limit=150)
    assert finite_set(lg[0]) == allowed_set(oracle_compiled(slow).matcher())
    assert proc2.dead_ends == []


def test_slow_compile_waited_for_within_the_step_budget(vocab, oracle_compiled, monkeypatch):
    """Within CFGMASK_VLLM_STEP_WAIT_S the step waits for the compile and the row gets its exact mask."""
    import threading
    slow = 'start: "slow-waited-" /[0-9]+/'
    started, release = _blocking_compile(monkeypatch, slow)
    monkeypatch.setenv("CFGMASK_VLLM_STEP_WAIT_S", "120")
    try:
        proc = make_proc_v1(vocab)
        proc.update_state(BatchUpdateBuilderFor([(0, params(slow), None, [])]))
        assert started.wait(60)
        threading.Timer(0.05, release.set).start()  # released while apply waits (or before: same result)
        lg = torch.zeros(1, vocab.vocab_size)
        _bounded(lambda: proc.apply(lg), "apply", limit=150)
    finally:
        release.set()
    assert finite_set(lg[0]) == allowed_set(oracle_compiled(slow).matcher())
    assert proc.dead_ends == []


def test_compile_deadline_ends_the_request(vocab, oracle_compiled, monkeypatch):
    """Past CFGMASK_VLLM_COMPILE_TIMEOUT_S the request ends with a clear reason, whatever the step budget."""
    slow = 'start: "slow-deadline-" /[0-9]+/'
    started, release = _blocking_compile(monkeypatch, slow)
    monkeypatch.setenv("CFGMASK_VLLM_STEP_WAIT_S", "120")
    monkeypatch.setenv("CFGMASK_VLLM_COMPILE_TIMEOUT_S", "0")
    try:
        proc = make_proc_v1(vocab)
        good = Req("good", FIXED, oracle_compiled, 40)
        proc.update_state(BatchUpdateBuilderFor([(0, params(slow), None, []),
                                                 (1, good.params, None, good.out)]))
        raw = torch.randn(2, vocab.vocab_size)
        lg = raw.clone()
        _bounded(lambda: proc.apply(lg), "apply")
        assert finite_set(lg[0]) == set(vocab.eos_token_ids)
        check_row(lg[1], raw[1], good)
        assert "did not compile within" in proc.dead_ends[0]
        assert "CFGMASK_VLLM_COMPILE_TIMEOUT_S" in proc.dead_ends[0]
    finally:
        release.set()


def test_admission_does_not_block_on_a_slow_grammar(monkeypatch):
    """validate_params waits at most CFGMASK_VLLM_ADMIT_WAIT_S (vLLM calls it on its event loop),
    then refuses with a clear ValueError; the build goes on and a retry is admitted."""
    import threading
    text = 'start: "slow-admission-" /[0-9]+/'
    started, release = threading.Event(), threading.Event()
    real = Grammar.from_lark

    def from_lark(src, *a, **kw):
        if src == text:
            started.set()
            assert release.wait(120), "the test never released the slow build"
        return real(src, *a, **kw)
    monkeypatch.setattr(Grammar, "from_lark", staticmethod(from_lark))
    monkeypatch.setenv("CFGMASK_VLLM_ADMIT_WAIT_S", "0")
    try:
        with pytest.raises(ValueError) as ei:
            _bounded(lambda: cv.GrammarLogitsProcessor.validate_params(params(text)), "validate_params")
        assert "still compiling" in str(ei.value) and "CFGMASK_VLLM_ADMIT_WAIT_S" in str(ei.value)
        assert started.wait(60)
        # meanwhile another grammar is built (on the pool's other thread) and admitted
        monkeypatch.setenv("CFGMASK_VLLM_ADMIT_WAIT_S", "120")
        other = 'start: "admitted-meanwhile" /[0-9]+/'
        _bounded(lambda: cv.GrammarLogitsProcessor.validate_params(params(other)), "validate_params", 150)
    finally:
        release.set()
    monkeypatch.setenv("CFGMASK_VLLM_ADMIT_WAIT_S", "120")
    _bounded(lambda: cv.GrammarLogitsProcessor.validate_params(params(text)), "the retry", limit=150)


def test_compile_past_its_deadline_is_abandoned_and_not_cached(monkeypatch):
    """A build past CFGMASK_VLLM_COMPILE_TIMEOUT_S stops at its next checkpoint (freeing its pool
    thread) with a clear error; the timeout is not cached, so a later build with time left succeeds."""
    import uuid
    text = f'start: WORD\nWORD: /deadline{uuid.uuid4().hex}[a-z]+/'  # a fresh terminal: no table cache hit
    spec = cv.parse_spec(params(text).extra_args)
    monkeypatch.setenv("CFGMASK_VLLM_COMPILE_TIMEOUT_S", "0")
    monkeypatch.setenv("CFGMASK_VLLM_ADMIT_WAIT_S", "60")
    with pytest.raises(ValueError, match="did not compile within 0 s") as ei:
        _bounded(lambda: cv.GrammarLogitsProcessor.validate_params(params(text)), "validate_params")
    assert "CFGMASK_VLLM_COMPILE_TIMEOUT_S" in str(ei.value)
    job = cv._grammar_job(spec)
    assert "did not compile within" in _bounded(lambda: job.future.result(60), "the abandoned build")
    monkeypatch.setenv("CFGMASK_VLLM_COMPILE_TIMEOUT_S", "120")
    _bounded(lambda: cv.GrammarLogitsProcessor.validate_params(params(text)), "the retry", limit=150)
