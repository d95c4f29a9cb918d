"""The regex pipeline's compiled kernels against their Python references.

``cfgmask/_fast/_automata.pyx`` (Thompson NFA, subset construction, UTF-8 spelling) and
``cfgmask/_fast/_minimal.pyx`` (trimming, minimisation, breadth-first
numbering, column classes) must compute exactly what ``determinize_python``,
``expand_utf8_python``, ``minimize_python``, ``renumber_bfs_python`` and
``column_classes_python`` do, and ``build_nfa`` (the compiled Thompson
builder, or the reference where it declines) what ``NFA.build`` does:
the same arrays with the same state numbering at every stage, the same
refusals with the same messages, and the same ``progress.hook`` calls.  Each
stage is fed the reference's output of the stage before, so a difference is
caught where it starts.  The patterns: every terminal of the bundled grammars
(json, sql and its dialects, javascript), Lark's own lark.lark, the test
grammars, the regex suite's patterns and a few hundred random regexes.
"""

import glob
import os
import random
import re

import lark
import numpy as np
import pytest

import cfgmask
from cfgmask.automata import determinize as det
from cfgmask.automata import kernels, minimize, pipeline, setops, utf8
from cfgmask.automata.nfa import NFA, CompiledNFA, build_nfa
from cfgmask.automata.parse import sre_parse
from cfgmask.errors import GrammarError
from tests.test_regex import PATTERNS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _compiled_kernels(monkeypatch):
    monkeypatch.delenv(kernels.PURE_ENV, raising=False)


def _nfa(pattern, name, max_states):
    parsed = sre_parse.parse(pattern, 0)
    nfa = NFA(name, limit=8 * max_states)   # the pipeline's NFA allowance
    start = nfa.new_state()
    final = nfa.build(parsed, parsed.state.flags, start)
    return nfa, start, final, nfa.atoms()


def _nfa_lists(build, parsed, name, limit):
    """What an NFA build gives: its moves, final state and repeats (their bodies by identity)."""
    def run():
        nfa, start, final = build(parsed, name, limit)
        return (nfa.empty_moves, nfa.char_moves, nfa.assert_moves, nfa.lookahead_sets, start,
                final, [(id(body), flags, hi) for body, flags, hi in nfa.repeats],
                nfa.atoms().dtype, nfa.atoms().tolist())
    return _outcome(run)


def _reference_build(parsed, name, limit):
    nfa = NFA(name, limit)
    start = nfa.new_state()
    return nfa, start, nfa.build(parsed, parsed.state.flags, start)


def check_nfa(pattern, name="T", max_states=pipeline.DEFAULT_MAX_STATES):
    """``build_nfa`` against the reference builder on one tree: the same lists or the same refusal."""
    try:
        parsed = sre_parse.parse(pattern, 0)
    except (re.error, RecursionError):
        return
    limit = 8 * max_states
    assert _nfa_lists(build_nfa, parsed, name, limit) == \
        _nfa_lists(_reference_build, parsed, name, limit), pattern
    try:
        nfa, start, final = build_nfa(parsed, name, limit)
    except GrammarError:
        return
    if isinstance(nfa, CompiledNFA):
        # the subset construction straight from the moves kept in C
        ref_nfa, ref_start, ref_final = _reference_build(parsed, name, limit)
        bounds = ref_nfa.atoms()
        ref = _outcome(det.determinize_python, ref_nfa, ref_start, ref_final, max_states, name, bounds)
        got = _outcome(det.determinize, nfa, start, final, max_states, name, bounds)
        assert ref[0] == got[0], pattern
        if ref[0] == "ok":
            _same(ref[1], got[1])
        else:
            assert ref[1] == got[1]


def _same(a, b):
    """Equal results of a stage: arrays of the same dtype and shape, lists equal."""
    assert type(a) is type(b)
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
        assert a.flags.c_contiguous and b.flags.c_contiguous
    else:
        assert a == b


def _outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except GrammarError as e:
        return "error", (type(e), str(e), e.where, e.construct)


def check_stages(pattern, name="T", max_states=pipeline.DEFAULT_MAX_STATES):
    """Every stage both ways, on the reference's input; returns the number of states."""
    check_nfa(pattern, name, max_states)
    try:
        nfa, start, final, bounds = _nfa(pattern, name, max_states)
    except (GrammarError, re.error, RecursionError):
        return 0            # refused before any kernel runs
    ref = _outcome(det.determinize_python, nfa, start, final, max_states, name, bounds)
    got = _outcome(det.determinize, nfa, start, final, max_states, name, bounds)
    assert ref[0] == got[0], pattern
    if ref[0] == "error":
        assert ref[1] == got[1]
        return 0
    _same(ref[1], got[1])
    trans, accepting, follow = ref[1]
    ref = minimize.minimize_python(trans, accepting, follow)
    _same(ref, minimize.minimize_and_trim(trans, accepting, follow))
    trans, accepting, follow = ref
    ref = _outcome(utf8.expand_utf8_python, trans, bounds, max_states, name)
    got = _outcome(utf8.expand_utf8, trans, bounds, max_states, name)
    assert ref[0] == got[0], pattern
    if ref[0] == "error":
        assert ref[1] == got[1]
        return 0
    _same(ref[1], got[1])
    extra = ref[1].shape[0] - trans.shape[0]
    args = (ref[1], np.concatenate([accepting, np.zeros(extra, dtype=bool)]), list(follow) + [0] * extra)
    ref = minimize.renumber_bfs_python(*args)
    _same(ref, minimize.renumber_bfs(*args))
    return ref[0].shape[0]


def _pipeline(pattern, name, max_states, pure, monkeypatch):
    if pure:
        monkeypatch.setenv(kernels.PURE_ENV, "1")
    else:
        monkeypatch.delenv(kernels.PURE_ENV, raising=False)
    kind, out = _outcome(pipeline.regex_to_dfa, pattern, name, max_states)
    monkeypatch.delenv(kernels.PURE_ENV, raising=False)
    if kind == "ok":
        out = (out.trans.tobytes(), out.trans.shape, out.accepting.tobytes(), out.follow_forbidden,
               out.follow_forbidden_at_eos)
    return kind, out


def check_pipeline(pattern, monkeypatch, name="T", max_states=pipeline.DEFAULT_MAX_STATES):
    """``regex_to_dfa`` with ``CFGMASK_PURE_AUTOMATA=1`` and without: same automaton or error."""
    assert (_pipeline(pattern, name, max_states, True, monkeypatch)
            == _pipeline(pattern, name, max_states, False, monkeypatch)), pattern


# ---------------------------------------------------------------- grammars

def _terminals(grammar):
    return [(n, p) for n, p in zip(grammar.terminal_names, grammar.terminal_patterns)]


GRAMMARS = {
    "json": lambda: cfgmask.Grammar.builtin("json"),
    "sql": lambda: cfgmask.Grammar.builtin("sql"),
    "sql-postgres": lambda: cfgmask.Grammar.builtin("sql", dialect="postgres"),
    "sql-mysql": lambda: cfgmask.Grammar.builtin("sql", dialect="mysql"),
    "javascript": lambda: cfgmask.Grammar.builtin("javascript"),
    "lark.lark": lambda: cfgmask.Grammar.from_file(
        os.path.join(os.path.dirname(lark.__file__), "grammars", "lark.lark")),
}
for _path in sorted(glob.glob(os.path.join(ROOT, "tests", "grammars", "*.lark"))):
    GRAMMARS["tests/" + os.path.basename(_path)] = (lambda p: lambda: cfgmask.Grammar.from_file(p))(_path)


@pytest.mark.parametrize("grammar", list(GRAMMARS))
def test_every_terminal_of_the_grammars(grammar):
    terminals = _terminals(GRAMMARS[grammar]())
    assert terminals
    for name, pattern in terminals:
        check_stages(pattern, name)


def test_the_big_identifier_terminals_end_to_end(monkeypatch):
    """The terminals the kernels were written for, through ``regex_to_dfa``."""
    sql = dict(_terminals(cfgmask.Grammar.builtin("sql")))
    js = dict(_terminals(cfgmask.Grammar.builtin("javascript")))
    for pattern in (sql["IDENT"], sql["FUNC_IDENT"], js["IDENT_U"], js["REGEX"]):
        check_pipeline(pattern, monkeypatch)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_regex_suite_patterns(pattern, monkeypatch):
    check_stages(pattern)
    check_pipeline(pattern, monkeypatch)


# ---------------------------------------------------------------- random regexes

_LITERALS = "abcxyzAZ019_-. \"\\\néßſKİσ€\u0800\uffff😀\U00010400"
_CLASSES = [r"[a-z]", r"[^a-z]", r"[0-9a-f]", r"[^\x00-\x7f]", r"[^é-ÿ]", r"[\u0100-\u017f]",
            r"[^a\u0800-\uffff]", r"[^\"\\]", r"[é€😀]", r"[\U00010000-\U0001ffff]", r"\d", r"\w",
            r"\s", r"\D", r"\W", r"\S", r".", r"[^\n]", r"[-+]", r"[^\W\d_]"]
_LOOKAHEADS = [r"(?![a-z0-9_])", r"(?=\()", r"(?!x)", r"(?=[0-9])", r"(?![.e])", r"(?=[ab]|c)"]
_REPEATS = ["*", "+", "?", "{2}", "{1,3}", "{0,2}", "*?", "{2,}", "??", "{3,4}"]
_FLAGS = ["(?i:", "(?s:", "(?a:", "(?ai:", "(?-i:", "(?is:"]


def _random_regex(rng, depth=0):
    r = rng.random()
    if depth >= 3 or r < 0.3:
        if rng.random() < 0.5:
            return re.escape(rng.choice(_LITERALS))
        return rng.choice(_CLASSES)
    if r < 0.5:
        return "".join(_random_regex(rng, depth + 1) for _ in range(rng.randint(2, 3)))
    if r < 0.65:
        return "(?:" + "|".join(_random_regex(rng, depth + 1) for _ in range(rng.randint(2, 3))) + ")"
    if r < 0.85:
        return "(?:" + _random_regex(rng, depth + 1) + ")" + rng.choice(_REPEATS)
    if r < 0.93:
        return rng.choice(_FLAGS) + _random_regex(rng, depth + 1) + ")"
    # a lookahead, in the middle or at the end
    return _random_regex(rng, depth + 1) + rng.choice(_LOOKAHEADS) + (
        _random_regex(rng, depth + 1) if rng.random() < 0.4 else "")


RANDOM = [_random_regex(random.Random(seed)) for seed in range(300)]


def test_random_regexes():
    sizes = [check_stages(p, max_states=3000) for p in RANDOM]
    assert sum(1 for s in sizes if s) > 200      # most compile; the rest are refusals


def test_random_regexes_end_to_end(monkeypatch):
    for pattern in RANDOM[:60]:
        check_pipeline(pattern, monkeypatch, max_states=3000)


# ---------------------------------------------------------------- refusals

@pytest.mark.parametrize("pattern", [
    r"(a|b){1,5000}", r"(\w\d){1,60}", r"\w{1,100}", r"(?:a|b)*a(?:a|b){12}",
    r"[\u0100-\U0010ffff]{3}", r"(?:[^a]|ab)*c",
])
def test_too_large_at_every_limit(pattern, monkeypatch):
    """Around each stage's limit the two refuse (or not) alike, with the same message."""
    limits = sorted({2, 3, 5, 10, 30, 100, 300, 1000, 2000, 5000})
    for max_states in limits:
        check_stages(pattern, "BIG", max_states)
        check_pipeline(pattern, monkeypatch, "BIG", max_states)


def test_nfa_builder_declines_what_it_leaves_to_the_reference():
    """The compiled builder answers ``None`` for lookaheads, anchors and
    backreferences, for a tree nested past its depth guard and at its state
    limit; ``build_nfa`` then gives the reference's NFA or refusal."""
    thompson = kernels.KERNELS.thompson
    from cfgmask.automata import nfa as nfa_module

    def kernel(pattern, limit=10 ** 6):
        tree = sre_parse.parse(pattern, 0)
        return thompson(tree, tree.state.flags, limit, nfa_module._KERNEL_OPS,
                        nfa_module.char_ranges, nfa_module.CHAR_FLAGS, nfa_module.TYPE_FLAGS,
                        nfa_module.ut.MAX_CODE_POINT)

    assert kernel(r"a(?:b|c)*d{2,5}") is not None
    for pattern in (r"a(?!b)", r"(?=x)y", r"^a", r"(a)\1", r"a\b"):
        assert kernel(pattern) is None
        check_nfa(pattern)
    shallow, deep = "(" * 150 + "a" + ")" * 150, "(" * 250 + "a" + ")" * 250
    assert kernel(shallow) is not None and kernel(deep) is None
    check_nfa(shallow)
    check_nfa(deep)
    assert kernel(r"[a-z]{10}", limit=11) is not None and kernel(r"[a-z]{10}", limit=10) is None
    for max_states in (1, 2):       # limits 8 and 16 around the 11 states
        check_nfa(r"[a-z]{10}", max_states=max_states)


def test_nfa_of_every_format():
    """The JSON Schema formats' regexes (``email``'s 8,636 NFA states among them)."""
    from cfgmask.frontends.json_schema import strings
    for fmt, decoded in strings.FORMATS.items():
        for canonical in (False, True):
            check_nfa(strings.text_regex(decoded, canonical), f"format {fmt}")


def test_too_large_message():
    nfa, start, final, bounds = _nfa(r"(?:a|b)*a(?:a|b){12}", "BIG", 1000)
    with pytest.raises(GrammarError) as info:
        det.determinize(nfa, start, final, 1000, "BIG", bounds)
    assert str(info.value) == (
        "terminal BIG: automaton too large (more than 1000 states in the DFA); bounded repeats "
        "such as {m,n} are expanded copy by copy, so simplify the pattern or raise max_states")
    assert info.value.where == "BIG" and info.value.construct == "automaton size"


# ---------------------------------------------------------------- the progress hook

@pytest.fixture
def hook():
    calls = []
    old = getattr(det.progress, "hook", None)
    yield calls
    det.progress.hook = old


def _count_hook_calls(fn, nfa, start, final, bounds, calls):
    calls.clear()
    det.progress.hook = lambda: calls.append(1)
    fn(nfa, start, final, 20000, "T", bounds)
    return len(calls)


def test_hook_called_as_often_as_the_reference(hook):
    sql = dict(_terminals(cfgmask.Grammar.builtin("sql")))
    for pattern in (sql["IDENT"], r"[a-z]+", r"(?:a|b)*a(?:a|b){4}", r"\w{1,5}"):
        args = _nfa(pattern, "T", 20000)
        n_ref = _count_hook_calls(det.determinize_python, *args, hook)
        assert n_ref > 1
        assert _count_hook_calls(det.determinize, *args, hook) == n_ref


class Deadline(Exception):
    pass


def test_raising_hook_abandons_the_compiled_construction(hook):
    """The JSON Schema budget raises from the hook: the construction stops at once."""
    sql = dict(_terminals(cfgmask.Grammar.builtin("sql")))
    nfa, start, final, bounds = _nfa(sql["IDENT"], "T", 20000)
    for stop_at in (1, 2, 50):
        calls = []

        def raising():
            calls.append(1)
            if len(calls) == stop_at:
                raise Deadline(stop_at)

        det.progress.hook = raising
        with pytest.raises(Deadline):
            det.determinize(nfa, start, final, 20000, "T", bounds)
        assert len(calls) == stop_at
    # and the next construction in the thread is whole
    det.progress.hook = None
    _same(det.determinize(nfa, start, final, 20000, "T", bounds),
          det.determinize_python(nfa, start, final, 20000, "T", bounds))


# ---------------------------------------------------------------- tables not from regexes

def _random_table(rng, n, k, density):
    trans = np.where(rng.random((n, k)) < density, rng.integers(0, n, (n, k)), -1).astype(np.int32)
    if rng.random() < 0.5:            # repeated columns, as byte tables have
        trans = trans[:, rng.integers(0, k, k)]
    return np.ascontiguousarray(trans)


@pytest.mark.parametrize("seed", range(40))
def test_minimize_random_tables(seed):
    """Unreachable, dead and equivalent states, follow masks, Moore's and
    Hopcroft's paths (more and fewer than 256 states), the empty language."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 5, 40, 300, 700]))
    k = int(rng.choice([1, 3, 17, 256]))
    trans = _random_table(rng, n, k, float(rng.choice([0.05, 0.3, 0.9])))
    accepting = rng.random(n) < float(rng.choice([0.0, 0.1, 0.5]))
    masks = [0, 1 << 256, (1 << 40) | 7, (1 << 257) - 1 - (1 << 65)]
    follow = [int(rng.choice(masks[:int(rng.integers(1, 5))])) if a else 0 for a in accepting]
    for moore_min_states in (0, 256, 10 ** 9):
        ref = minimize.minimize_python(trans, accepting, follow, moore_min_states)
        _same(ref, minimize.minimize_and_trim(trans, accepting, follow, moore_min_states))


def test_minimize_leaves_its_input_alone():
    rng = np.random.default_rng(7)
    trans = _random_table(rng, 50, 20, 0.3)
    accepting = rng.random(50) < 0.3
    before = trans.copy(), accepting.copy()
    minimize.minimize_and_trim(trans, accepting, [0] * 50)
    assert np.array_equal(trans, before[0]) and np.array_equal(accepting, before[1])


@pytest.mark.parametrize("seed", range(20))
def test_renumber_random_tables(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 9, 120, 900]))
    k = int(rng.choice([1, 5, 256]))
    trans = _random_table(rng, n, k, 0.1)
    for s in range(1, n):              # a k-ary tree: every state reachable from 0
        trans[(s - 1) // k, (s - 1) % k] = s
    perm = np.concatenate([[0], 1 + rng.permutation(n - 1)])     # then shuffled, 0 kept
    shuffled = np.empty_like(trans)
    shuffled[perm] = np.where(trans >= 0, perm[np.maximum(trans, 0)], -1)
    trans = shuffled
    accepting = rng.random(n) < 0.3
    follow = [int(x) for x in rng.integers(0, 5, n)]
    _same(minimize.renumber_bfs_python(trans, accepting, follow),
          minimize.renumber_bfs(trans, accepting, follow))


@pytest.mark.parametrize("seed", range(30))
def test_column_classes_random_tables(seed):
    """Few and many distinct columns, uint8 rows (byte_classes stacks them),
    more than 256 columns (int32 classes), no rows, no columns."""
    from cfgmask.automata import dfa
    rng = np.random.default_rng(seed)
    n = int(rng.choice([0, 1, 3, 40, 600]))
    k = int(rng.choice([0, 1, 7, 256, 300]))
    distinct = int(rng.choice([1, 2, 9, 200]))
    base = rng.integers(-1, 4, size=(n, distinct))
    trans = np.ascontiguousarray(base[:, rng.integers(0, distinct, size=k)])
    trans = (trans + 1).astype(np.uint8) if seed % 3 == 0 else trans.astype(np.int32)
    ref_class, ref_reps = dfa.column_classes_python(trans)
    got_class, got_reps = kernels.KERNELS.column_classes(trans)
    assert got_class.dtype == ref_class.dtype and np.array_equal(got_class, ref_class)
    assert got_reps == ref_reps


@pytest.mark.parametrize("seed", range(60))
def test_product_random_tables(seed):
    """The pairs of two tables in every mode, numbered as the reference numbers
    them, and the refusal past ``max_states`` at every size around the real one."""
    rng = np.random.default_rng(seed)
    k = int(rng.choice([1, 3, 12]))
    A = _random_table(rng, int(rng.choice([1, 2, 9, 40])), k, float(rng.choice([0.1, 0.4, 0.9])))
    B = _random_table(rng, int(rng.choice([1, 3, 25])), k, float(rng.choice([0.1, 0.4, 0.9])))
    for code, mode in enumerate(("and", "minus", "or")):
        ref = setops.product_classes_python(A, B, mode, 10 ** 6)
        _same(ref, kernels.KERNELS.product(A, B, code, 10 ** 6))
        n = ref[0].shape[0]
        for limit in (n - 1, n, n + 1):
            got = kernels.KERNELS.product(A, B, code, limit)
            assert (got is None) == (setops.product_classes_python(A, B, mode, limit) is None)
            assert (got is None) == (limit < n)


@pytest.mark.parametrize("seed", range(30))
def test_live_and_keep_random_tables(seed):
    """Trimming (the live states, then their rows renumbered, optionally spread
    over other columns) as the NumPy references do it."""
    rng = np.random.default_rng(seed)
    n, k = int(rng.choice([1, 4, 60, 500])), int(rng.choice([1, 6, 40]))
    trans = _random_table(rng, n, k, float(rng.choice([0.05, 0.3, 0.9])))
    accepting = rng.random(n) < float(rng.choice([0.0, 0.05, 0.5]))
    live = setops.live_states_python(trans, accepting)
    _same(live, kernels.KERNELS.live(trans, accepting))
    live[0] = True                      # keep_states' precondition
    columns = rng.integers(0, k, 256)
    _same(setops.keep_states_python(trans, live), kernels.KERNELS.keep(trans, live))
    _same(setops.keep_states_python(trans, live, columns), kernels.KERNELS.keep(trans, live, columns))


def test_products_of_real_automata(monkeypatch):
    """setops.product and product_table end to end, compiled and pure, on pairs
    of the regex suite's automata (byte classes shared unevenly, UTF-8 states,
    products large enough to be trimmed but not minimised)."""
    from cfgmask.automata import compile_regex
    dfas = []
    for pattern in PATTERNS + [r"[a-z0-9]{0,400}", r"(?:\S+@\S+){1,2}", r"\w{2,300}"]:
        try:
            dfas.append(compile_regex(pattern, name="T"))
        except (GrammarError, re.error):
            continue
    rng = random.Random(5)
    pairs = [(rng.choice(dfas), rng.choice(dfas)) for _ in range(60)] + [(dfas[-1], dfas[-2])]
    big = 0
    for a, b in pairs:
        if any(a.follow_forbidden + b.follow_forbidden + a.follow_forbidden_at_eos + b.follow_forbidden_at_eos):
            continue
        for mode in ("and", "minus", "or"):
            got = _outcome2(setops.product, a, b, mode, "P")
            got_table = _outcome2(setops.product_table, a, b, mode)
            monkeypatch.setenv(kernels.PURE_ENV, "1")
            ref = _outcome2(setops.product, a, b, mode, "P")
            ref_table = _outcome2(setops.product_table, a, b, mode)
            monkeypatch.delenv(kernels.PURE_ENV)
            assert ref[0] == got[0] and ref_table[0] == got_table[0]
            if ref[0] == "ok":
                _same((ref[1].trans, ref[1].accepting), (got[1].trans, got[1].accepting))
                _same(ref_table[1], got_table[1])
                # a column partition handed over by the product is the one it would compute
                assert np.array_equal(got[1].column_class(), kernels.KERNELS.column_classes(got[1].trans)[0])
                big += got[1].n_states > setops._MINIMIZE_MAX_STATES


    assert big          # the trimmed-only branch ran


def _outcome2(fn, *args):
    try:
        return "ok", fn(*args)
    except setops.ProductTooLarge:
        return "too large", None


@pytest.mark.parametrize("seed", range(40))
def test_cycle_search_random_tables(seed):
    """Cycles anywhere (self-loops, long ones, in parts the start cannot reach),
    none at all (trees and layered DAGs), byte and class columns."""
    from cfgmask.automata import dfa as dfa_mod
    rng = np.random.default_rng(seed)
    n, k = int(rng.choice([1, 2, 30, 400])), int(rng.choice([1, 4, 256]))
    trans = _random_table(rng, n, k, float(rng.choice([0.002, 0.02, 0.3])))
    if seed % 2:                       # only edges forward: a DAG, unless one back edge
        trans = np.where(trans > np.arange(n)[:, None], trans, -1).astype(np.int32)
        if seed % 4 == 1 and n > 1:
            trans[n - 1, 0] = int(rng.integers(0, n))
    trans = np.ascontiguousarray(trans)
    assert kernels.KERNELS.cycle(trans) == dfa_mod.has_cycle_python(trans)


def test_min_chars_over_classes_equals_over_bytes():
    """CountedDFA's fewest characters to acceptance, read over byte classes,
    equals the search over all 256 columns."""
    from cfgmask.automata import dfa as dfa_mod
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.choice([1, 5, 80]))
        trans = _random_table(rng, n, 256, float(rng.choice([0.01, 0.1])))
        accepting = rng.random(n) < 0.2
        char_end = (rng.random(n) < 0.5).astype(np.uint8)
        got = dfa_mod._min_chars_to_accept(trans, accepting, char_end)
        every = np.zeros(n, dtype=np.int64) + (1 << 30)
        every[accepting] = 0
        for _ in range(n + 1):          # Bellman-Ford over every byte
            for s in range(n):
                for t in set(trans[s][trans[s] >= 0].tolist()):
                    every[s] = min(every[s], every[t] + int(char_end[t]))
        assert np.array_equal(got, every)


# ---------------------------------------------------------------- the switch

def test_the_switch_is_read_at_every_call(monkeypatch):
    assert kernels.compiled() is kernels.KERNELS
    monkeypatch.setenv(kernels.PURE_ENV, "1")
    assert kernels.compiled() is None
    calls = []
    reference = det.determinize_python

    def spy(*args):
        calls.append(1)
        return reference(*args)

    monkeypatch.setattr(det, "determinize_python", spy)
    nfa, start, final, bounds = _nfa("ab", "T", 100)
    det.determinize(nfa, start, final, 100, "T", bounds)
    assert calls == [1]
    monkeypatch.delenv(kernels.PURE_ENV)
    det.determinize(nfa, start, final, 100, "T", bounds)
    assert calls == [1]
