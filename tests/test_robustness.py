"""Issue 12, finding by finding: no crash, no silent fail-open, clear errors, bounded memory.

Each test is one finding of the adversarial probe, reproduced the way the
issue describes it.  The oracle is the contract of docs/reliability.md: bad
input raises a cfgmask error naming the cause (original exception as
``__cause__``), an error leaves the matcher as it was before the call, and
masks agree with a fresh replay.

Every finding's test must pass; none is expected to fail any more.  Crash-type
checks run in a subprocess so that a SIGSEGV cannot take pytest down.
Speed findings (7, 11) are measured in ``benchmarks/bench_robustness.py``;
here only what is deterministic is checked.

Fuzzing lives in test_fuzz_api.py and test_fuzz_grammars.py, threads in
test_robustness_threads.py.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cfgmask
from cfgmask import (BudgetExceeded, CfgmaskError, ConfigurationError, Grammar, GrammarError,
                     TokenRejected, Vocabulary)
from cfgmask.engine.compiler import Limits

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BYTES = [bytes([i]) for i in range(128)]
EOS = 128


@pytest.fixture(scope="module")
def byte_json():
    """The builtin JSON grammar over a byte vocabulary (ASCII bytes + EOS)."""
    return cfgmask.compile(Grammar.builtin("json"), Vocabulary(BYTES + [None], eos_token_ids=[EOS]))


def run_python(code, timeout=300):
    """Run ``code`` in a fresh interpreter (repository root as cwd); returns the CompletedProcess."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------------ finding 1

@pytest.mark.parametrize("change", ["reshape", "readonly"])
def test_f1_bitmask_changed_in_place_is_refused_not_overflowed(change):
    """The issue's repro: after one fill, an in-place reshape to (W, 1) (row W-1 then writes
    W words past the buffer) or setflags(write=False) must be refused, not trusted."""
    mutate = "a.shape = (W, 1); row = W - 1" if change == "reshape" else "a.setflags(write=False); row = 0"
    r = run_python(f"""
        import cfgmask
        v = cfgmask.Vocabulary([bytes([i % 256]) for i in range(100_000)], eos_token_ids=[])
        c = cfgmask.compile(cfgmask.Grammar.builtin("json"), v)
        m = c.matcher(); a = c.allocate_bitmask(); W = a.shape[1]
        m.fill_bitmask(a)
        {mutate}
        try:
            m.fill_bitmask(a, row)
        except cfgmask.ConfigurationError as e:
            print("REFUSED", e)
        else:
            print("WROTE")
        """)
    assert r.returncode == 0, f"the process died (rc {r.returncode}): {r.stderr[-500:]}"
    assert "REFUSED" in r.stdout, r.stdout


# ------------------------------------------------------------------ finding 2

def test_f2_processor_resyncs_and_never_restarts(byte_json):
    """Direct calls (no model): the same step twice, a rollback, several new columns and a
    batch-size change.  Model-level cases (prompt lookup, assistant, SmolLM2) are in test_hf.py."""
    torch = pytest.importorskip("torch")
    from cfgmask.hf import GrammarLogitsProcessor

    V = byte_json.vocab_size

    def allowed(scores):
        return torch.isfinite(scores[0]).nonzero().flatten().tolist()

    def replay(text):
        m = byte_json.matcher()
        m.consume_many(list(text.encode()))
        return m.allowed_tokens().tolist()

    proc = GrammarLogitsProcessor(byte_json)
    prompt = [ord("P"), ord("Q")]
    proc(torch.tensor([prompt]), torch.zeros(1, V))
    for text in ("[1", "[1", "[1,2", "[", "[1]", "{"):  # same step twice, 2 new columns, rollbacks
        x = torch.tensor([prompt + list(text.encode())])
        assert allowed(proc(x, torch.zeros(1, V))) == replay(text), text
    assert EOS not in replay("[1")  # what the old processor allowed after a repeated step
    with pytest.raises(ConfigurationError, match="reset"):
        proc(torch.tensor([prompt, prompt]), torch.zeros(2, V))
    with pytest.raises(ConfigurationError, match="reset"):
        proc(torch.tensor([[ord("X"), ord("Q"), ord("[")]]), torch.zeros(1, V))
    assert proc.matchers[0].prefix == b"{"  # untouched by the refused calls


# ------------------------------------------------------------------ finding 3

def _smollm2_vocab():
    from support.vocabs import smollm2_vocab
    return smollm2_vocab()


def test_f3_copy_during_fill_in_another_thread_is_consistent():
    """A copy (and prefix / n_consumed) taken while the owner thread is inside fill_bitmask
    must show a state the owner was really in, or raise a cfgmask error (one owner thread)."""
    import threading
    vocab = _smollm2_vocab()
    from support.vocabs import smollm2_tokenizer
    tok = smollm2_tokenizer()
    doc = ("SELECT t1.name, COUNT(*) FROM singer AS t1 JOIN concert AS t2 ON t1.id = t2.sid "
           "WHERE t2.year != 2014 GROUP BY t1.name HAVING count(*) >= 2;")
    ids = tok.encode(doc, add_special_tokens=False)
    boundary = {0: b""}
    acc = b""
    for k, t in enumerate(ids):
        acc += vocab.token_bytes[t]
        boundary[k + 1] = acc
    bad, seen = [], [0]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(4):  # cold caches each time (the fill calls back into Python); stop once seen
            c = cfgmask.compile(Grammar.builtin("sql"), vocab)
            m = c.matcher()
            stop = threading.Event()

            def copier():
                while not stop.is_set():
                    try:
                        cp = m.copy()
                        p, n = cp.prefix, cp.n_consumed
                    except CfgmaskError:
                        continue  # enforcing one owner thread is an allowed fix
                    seen[0] += 1
                    if boundary.get(n) != p:
                        bad.append((n, p[-20:]))

            th = threading.Thread(target=copier)
            th.start()
            try:
                for t in ids:
                    m.allowed_tokens()
                    m.consume(t)
            finally:
                stop.set()
                th.join()
            if bad:
                break
    finally:
        sys.setswitchinterval(old)
    assert seen[0] > 100, "the copier hardly ran: the test lost its teeth"
    assert not bad, f"{len(bad)} of {seen[0]} copies held bytes that were never consumed, e.g. {bad[:3]}"


# ------------------------------------------------------------------ finding 4

def test_f4_budget_exceeded_leaves_state_unchanged():
    g = Grammar.from_lark('start: l\nl: "a" l | "a"\n')
    v = Vocabulary([b"a", b"aaaa", None], eos_token_ids=[2])
    c = cfgmask.compile(g, v, limits=Limits(max_items_per_row=50))
    m = c.matcher()
    n = 0
    with pytest.raises(BudgetExceeded):
        while True:
            m.consume(1)
            n += 1
    assert m.n_consumed == n
    assert m.prefix == b"aaaa" * n, "bytes of the failed token stayed on the stack"
    m.rollback(1)
    fresh = c.matcher()
    fresh.consume_many([1] * (n - 1))
    np.testing.assert_array_equal(m.allowed_tokens(), fresh.allowed_tokens())


# ------------------------------------------------------------------ finding 5

MEMORY_HEADROOM = 512 << 20  # address space the subprocess may add on top of what it starts with


def _limited(code):
    """``code`` run under RLIMIT_AS = start + MEMORY_HEADROOM; prints OK, BUDGET or MEMORYERROR."""
    return run_python(f"""
        import resource
        import cfgmask
        from cfgmask.engine.compiler import Limits
        vm = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (vm + {MEMORY_HEADROOM}, resource.RLIM_INFINITY))
        try:
{textwrap.indent(textwrap.dedent(code), " " * 12)}
            print("OK")
        except cfgmask.BudgetExceeded as e:
            print("BUDGET", e)
        except MemoryError as e:
            print("MEMORYERROR", e)
        """)


def test_f5_right_recursion_memory_is_bounded():
    r = _limited("""
        g = cfgmask.Grammar.from_lark('start: r\\nr: "a" r | "a"\\n')
        c = cfgmask.compile(g, cfgmask.Vocabulary([b"a", None], eos_token_ids=[1]))
        m = c.matcher()
        for _ in range(40_000):
            m.consume(0)
        assert m.is_accepting()
        """)
    assert r.returncode == 0, r.stderr[-800:]
    assert r.stdout.startswith(("OK", "BUDGET")), r.stdout


def test_f5_token_cache_memory_is_bounded():
    """Every consumed "a" enters a new lexer state, and each state's cache entry holds three
    bitmasks of vocab_size bits: 3 MB here, 6 GB for the 2,000 states of this document."""
    r = _limited("""
        g = cfgmask.Grammar.from_lark('start: A\\nA: /a{1,2000}/\\n')
        v = cfgmask.Vocabulary([b"a", None], eos_token_ids=[1], vocab_size=1 << 23)
        c = cfgmask.compile(g, v, limits=Limits(max_terminal_states=5000))
        m = c.matcher()
        for i in range(2000):
            m.consume(0)
            assert m.allowed_tokens().tolist() == ([0, 1] if i < 1999 else [1])
        """)
    assert r.returncode == 0, r.stderr[-800:]
    assert r.stdout.startswith(("OK", "BUDGET")), r.stdout


def test_f5_evicted_cache_entries_are_rebuilt_exactly():
    """A cache budget of a few entries: least recently used entries are freed and
    rebuilt when their lexer state comes back (rollbacks revisit them); every
    mask must equal the grammar's language and an unlimited compile's mask."""
    import random
    g = Grammar.from_lark('start: A\nA: /a{1,300}/\n')
    v = Vocabulary([b"a", b"aa", b"aaa", None], eos_token_ids=[3], vocab_size=1 << 16)
    small = cfgmask.compile(g, v, limits=Limits(max_terminal_states=5000, max_cache_bytes=64 << 10))
    full = cfgmask.compile(g, v, limits=Limits(max_terminal_states=5000))
    rng = random.Random(5)
    a, b = small.matcher(), full.matcher()
    for _ in range(1500):
        k = len(a.prefix)
        expect = [t for t in range(3) if k + t + 1 <= 300] + ([3] if k else [])
        assert a.allowed_tokens().tolist() == expect == b.allowed_tokens().tolist(), k
        if k and (k >= 297 or rng.random() < 0.1):
            n = rng.randint(1, min(a.n_consumed, 10))
            a.rollback(n)
            b.rollback(n)
        elif k < 297:
            t = rng.randrange(3)
            a.consume(t)
            b.consume(t)
    stats = small.cache_stats()
    assert stats["evictions"] > 50, stats
    assert stats["cache_bytes"] <= 2 * stats["max_cache_bytes"], stats
    assert full.cache_stats()["evictions"] == 0


# ------------------------------------------------------------------ finding 6

@pytest.mark.parametrize("text", [
    't{"a"}\nt{x}: x | t{t{x}}',                                  # the grammar
    't{"a"}\nt{x}: x | u{x, x}\nu{a, b}: t{v{a, b}}\nv{p, q}: p q',   # grows through other templates
    'ap{t, "a"}\nap{f, x}: f{x} | ap{f, f{x}}\nt{y}: y y',          # higher-order template
])
def test_f6_runaway_template_expansion_is_a_grammar_error(text):
    with pytest.raises(GrammarError) as ei:
        Grammar.from_lark("start: " + text)
    assert ei.value.construct == "template expansion"
    assert "template" in str(ei.value)


@pytest.mark.parametrize("text,doc", [
    ('start: sep{item, ","}\nsep{x, s}: x (s x)*\nitem: "a" | "b"', "a,b,a"),
    ('start: t{"a"}\nt{x}: x "b" | t{x} x', "abaa"),                  # recursion, same argument
    ('start: ap{t, "c"}\nap{f, x}: f{x}\nt{y}: y y', "cc"),            # higher order, finite
    ('start: a{b{c{"x"}}}\na{x}: x\nb{x}: x x\nc{x}: x', "xx"),
])
def test_f6_finite_templates_still_mean_what_lark_means(text, doc):
    import lark
    g = Grammar.from_lark(text)
    lark.Lark(text, parser="earley", lexer="dynamic").parse(doc)  # the oracle accepts doc
    c = cfgmask.compile(g, Vocabulary(BYTES + [None], eos_token_ids=[EOS]))
    m = c.matcher()
    m.consume_many(list(doc.encode()))
    assert m.is_accepting()


def test_f6_template_expansion_does_not_hang_on_wide_growth():
    """Names that double at every level are checked without building them."""
    text = 'start: d{"a"}\nd{x}: x | d{p{x, x}}\np{a, b}: a b'
    with pytest.raises(GrammarError, match="template"):
        Grammar.from_lark(text)


# ------------------------------------------------------------------ finding 8

def _cause_chain(e):
    out = []
    while e is not None:
        out.append(type(e))
        e = e.__cause__
    return out


@pytest.mark.parametrize("text,construct,cause", [
    ('start: A\nA: /a(/', "regex syntax", "error"),
    ('start: A\nA: /\\p{L}/', "regex syntax", "error"),
    ('start: "x" /a(/', "regex syntax", "error"),
    ('start: A\nA: /' + "(" * 1000 + "a" + ")" * 1000 + '/', "nesting depth", "RecursionError"),
    ("start: " + "(" * 1000 + '"a"' + ")" * 1000, "nesting depth", "RecursionError"),
    ('%import nosuch.X\nstart: X', "%import", "FileNotFoundError"),
    ('%import .nosuch.X\nstart: X', "%import", "FileNotFoundError"),
])
def test_f8_grammar_failures_are_grammar_errors(text, construct, cause):
    with pytest.raises(GrammarError) as ei:
        cfgmask.compile(Grammar.from_lark(text), Vocabulary(BYTES + [None], eos_token_ids=[EOS]))
    assert ei.value.construct == construct, str(ei.value)
    assert cause in [t.__name__ for t in _cause_chain(ei.value)[1:]], _cause_chain(ei.value)
    if construct == "regex syntax":
        assert "terminal" in str(ei.value)  # names the terminal (A or __ANON_0)


def test_f8_regex_nested_deep_inside_compile_regex():
    from cfgmask.automata import compile_regex
    with pytest.raises(GrammarError) as ei:
        compile_regex("(" * 2000 + "a" + ")" * 2000, "DEEP")
    assert ei.value.where == "DEEP" and ei.value.construct in ("nesting depth", "regex syntax")
    assert ei.value.__cause__ is not None


def test_f8_grammar_file_not_utf8(tmp_path):
    p = tmp_path / "latin1.lark"
    p.write_bytes('start: "caf\xe9"\n'.encode("latin-1"))
    with pytest.raises(GrammarError) as ei:
        Grammar.from_file(p)
    assert ei.value.construct == "encoding" and isinstance(ei.value.__cause__, UnicodeDecodeError)
    # an imported file that is not UTF-8
    (tmp_path / "lib.lark").write_bytes('X: "caf\xe9"\n'.encode("latin-1"))
    (tmp_path / "main.lark").write_text("%import .lib.X\nstart: X\n")
    with pytest.raises(GrammarError) as ei:
        Grammar.from_file(tmp_path / "main.lark")
    assert isinstance(ei.value.__cause__, UnicodeDecodeError)


def test_f8_missing_import_next_to_file(tmp_path):
    (tmp_path / "main.lark").write_text("%import .missing.X\nstart: X\n")
    with pytest.raises(GrammarError, match="missing") as ei:
        Grammar.from_file(tmp_path / "main.lark")
    assert ei.value.construct == "%import"


def test_f8_token_ids_beyond_int32_are_rejected_not_overflow(byte_json):
    m = byte_json.matcher()
    for t in (2**31, 2**63, 10**30, -1, -(2**40)):
        with pytest.raises(TokenRejected):
            m.consume(t)
        assert m.try_consume(t) is False
    assert m.n_consumed == 0 and m.prefix == b""


def test_f8_rollback_errors_are_configuration_errors(byte_json):
    m = byte_json.matcher()
    m.consume(ord("["))
    for bad in (2, -1):
        with pytest.raises(ConfigurationError):
            m.rollback(bad)
    for bad in ("1", 1.0, None, True):
        with pytest.raises(ConfigurationError):
            m.rollback(bad)
    assert m.prefix == b"["


@pytest.mark.parametrize("call", [
    lambda c, m: m.fill_bitmask(c.allocate_bitmask(), "0"),
    lambda c, m: m.fill_bitmask(c.allocate_bitmask(), 0.0),
    lambda c, m: m.fill_bitmask([0] * 8),
    lambda c, m: m.consume_many(5),
    lambda c, m: m.consume_many("[1]"),
    lambda c, m: m.consume_many(b"[1]"),
    lambda c, m: m.consume_bytes(5),
    lambda c, m: m.consume_bytes("[1]"),
    lambda c, m: m.forced_bytes("9"),
    lambda c, m: c.fill_bitmasks(5, c.allocate_bitmask()),
    lambda c, m: c.fill_bitmasks(["m"], c.allocate_bitmask()),
    lambda c, m: c.allocate_bitmask("2"),
    lambda c, m: c.allocate_bitmask(0),
    lambda c, m: cfgmask.compile(c.grammar, c.vocab, limits=5),
    lambda c, m: cfgmask.compile(c.grammar, c.vocab, progress="loud"),
    lambda c, m: cfgmask.compile(c.grammar, "vocab"),
    lambda c, m: cfgmask.compile(5, c.vocab),
    lambda c, m: Grammar.from_lark(b'start: "a"'),
    lambda c, m: Grammar.from_lark('start: "a"', start=5),
    lambda c, m: Grammar.from_lark('start: "a"', import_paths="dir"),
    lambda c, m: Grammar.from_lark('start: "a"', word_boundary=5),
    lambda c, m: Grammar.from_file(5),
    lambda c, m: Vocabulary(5, []),
    lambda c, m: Vocabulary([b"a", "b"], []),
    lambda c, m: Vocabulary([b"a"], ["0"]),
    lambda c, m: Vocabulary([b"a"], 0.0),
    lambda c, m: Vocabulary([b"a"], "0"),
    lambda c, m: Vocabulary([b"a"], [], vocab_size="big"),
])
def test_f8_wrong_argument_types_are_cfgmask_errors(byte_json, call):
    with pytest.raises(CfgmaskError):
        call(byte_json, byte_json.matcher())


def test_f8_wrong_argument_types_hf(byte_json):
    torch = pytest.importorskip("torch")
    from cfgmask.hf import GrammarLogitsProcessor, apply_token_bitmask_, unpack_bitmask
    V = byte_json.vocab_size
    calls = [
        lambda: GrammarLogitsProcessor(5),
        lambda: GrammarLogitsProcessor(byte_json, batch_size="2"),
        lambda: GrammarLogitsProcessor(byte_json, batch_size=0),
        lambda: GrammarLogitsProcessor(byte_json, eos_token_id="a"),
        lambda: GrammarLogitsProcessor(byte_json, pad_token_id=1.5),
        lambda: GrammarLogitsProcessor(byte_json, kernel=5),
        lambda: GrammarLogitsProcessor(byte_json)([[1]], [[0.0]]),
        lambda: GrammarLogitsProcessor(byte_json)(torch.zeros(1, 2), torch.zeros(1, V)),
        lambda: GrammarLogitsProcessor(byte_json).finish(torch.zeros(1, 2, dtype=torch.long)),
        lambda: apply_token_bitmask_(np.zeros((1, 64)), np.zeros((1, 2), np.int32)),
        lambda: unpack_bitmask([1, 2], 64),
    ]
    for k, call in enumerate(calls):
        with pytest.raises(CfgmaskError):
            call()


def test_f8_huge_vocab_size_is_refused():
    with pytest.raises(ConfigurationError, match="vocab_size"):
        Vocabulary([b"a"], [], vocab_size=2**31)


@pytest.mark.parametrize("kw", [dict(max_items_per_row=-1), dict(max_lexer_states=0),
                                dict(max_terminal_states=2**31), dict(max_items_per_row=1.5),
                                dict(max_lexer_states="9"), dict(max_terminal_states=True)])
def test_f8_bad_limits_are_refused(kw):
    with pytest.raises(ConfigurationError):
        Limits(**kw)


def test_f8_limits_accept_numpy_integers():
    assert Limits(np.int64(10), 20, np.int32(30)).max_terminal_states == 30


# ------------------------------------------------------------------ finding 9

@pytest.mark.parametrize("bad", [91.7, 91.0, "91", True, False, np.float32(91), np.bool_(True),
                                 None, [91], np.array([91]), b"["])
def test_f9_only_integers_are_token_ids(byte_json, bad):
    m = byte_json.matcher()
    for f in (m.consume, m.try_consume):
        with pytest.raises(ConfigurationError, match="integer"):
            f(bad)
    assert m.n_consumed == 0


def test_f9_integer_kinds_are_accepted(byte_json):
    torch = pytest.importorskip("torch")
    good = [91, np.int64(91), np.int32(91), np.uint8(91), np.array(91), torch.tensor(91),
            torch.tensor(91, dtype=torch.int32)]
    for t in good:
        m = byte_json.matcher()
        m.consume(t)
        assert m.prefix == b"["
    m = byte_json.matcher()
    m.consume_many(torch.tensor([91, 49]))
    m.consume_many(np.array([44, 50], dtype=np.int16))
    assert m.prefix == b"[1,2"
    for bad in (torch.tensor(91.0), torch.tensor(True), torch.tensor([91])):
        with pytest.raises(ConfigurationError):
            byte_json.matcher().consume(bad)
    with pytest.raises(ConfigurationError):
        byte_json.matcher().consume_many(torch.tensor([91.0]))


# ----------------------------------------------------------------- finding 10

def test_f10_after_eos_mask_and_consume_agree(byte_json):
    m = byte_json.matcher()
    m.consume_many(list(b"[1]"))
    m.consume(EOS)
    assert m.is_finished() and m.is_accepting()
    assert m.allowed_tokens().tolist() == [EOS]
    for t in range(byte_json.vocab_size):  # the mask is the definition: exactly the allowed ids consume
        assert m.try_consume(t) == (t == EOS)
    m.consume(EOS)
    assert m.is_finished() and m.prefix == b"[1]" and m.n_consumed == 3 + 3
    with pytest.raises(TokenRejected, match="finished"):
        m.consume(ord(" "))
    # each EOS is one token for rollback; the last one undone makes the matcher live again
    m.rollback(2)
    assert m.is_finished() and m.n_consumed == 4
    m.rollback(1)
    assert not m.is_finished() and m.is_accepting() and m.n_consumed == 3
    fresh = byte_json.matcher()
    fresh.consume_many(list(b"[1]"))
    np.testing.assert_array_equal(m.allowed_tokens(), fresh.allowed_tokens())
    assert EOS in m.allowed_tokens()  # "[1]" is complete (trailing JSON whitespace may follow)
    twin = m.copy()
    twin.consume(EOS)
    twin.consume(EOS)
    assert twin.copy().n_consumed == 5 and not m.is_finished()
    twin.reset()
    assert twin.n_consumed == 0 and not twin.is_finished()


# ----------------------------------------------------------------- finding 11

def test_f11a_one_huge_token_builds_a_linear_trie():
    """A 20 KB token (the 1 MB and 10 MB timings are in benchmarks/bench_robustness.py)."""
    from cfgmask.engine.trie import TokTrie
    big = b"a" * 20_000
    trie = TokTrie.from_token_bytes([b"a", big, b"ab", None])
    assert trie.n_nodes == 1 + len(big) + 1  # root, the a-chain, the "b" after the first "a"
    assert int(trie.node_depth.max()) == len(big)
    c = cfgmask.compile(Grammar.from_lark('start: /a+/\n'), Vocabulary([b"a", big, b"ab", None], [3]))
    m = c.matcher()
    assert m.allowed_tokens().tolist() == [0, 1]
    m.consume(1)
    assert m.allowed_tokens().tolist() == [0, 1, 3]


def test_f11b_else_if_chain_rows_stay_bounded():
    """``if (a) b; else`` x 1,000: with a row budget of 1,000 items the chain must not grow
    rows linearly (before Leo's optimisation the budget fired at about 220 levels)."""
    c = cfgmask.compile(Grammar.builtin("javascript"), Vocabulary(BYTES + [None], eos_token_ids=[EOS]),
                        limits=Limits(max_items_per_row=1000))
    m = c.matcher()
    m.consume_many(list(("if (a) b; else " * 1000 + "c;").encode()))
    assert m.is_accepting()


def test_f11b_short_else_if_chain_is_exact():
    """The same document at a depth today's rows handle, checked against Lark."""
    import lark
    doc = "if (a) b; else " * 40 + "c;"
    c = cfgmask.compile(Grammar.builtin("javascript"), Vocabulary(BYTES + [None], eos_token_ids=[EOS]))
    m = c.matcher()
    m.consume_many(list(doc.encode()))
    assert m.is_accepting()
    lark.Lark(Grammar.builtin_path("javascript").read_text(), parser="earley", lexer="dynamic").parse(doc)
