"""Documents sampled under cfgmask's masks, checked by the languages' own engines.

Issue #4, "everywhere": every document sampled at random under cfgmask's
masks (SmolLM2 tokens, tests/test_sampling_lark.py's sampler, which already
checks each one with Lark) must also be accepted by the real engine: SQLite
must not report a *syntax* error when it prepares the statement on an empty
database ("no such table" is fine), and ``node --check`` must accept the
JavaScript as a script or as a module, up to the context-dependent early
errors no context-free grammar can rule out (duplicate declarations,
``return`` outside a function, ...; the list is ``JS_CONTEXT_ERRORS``).
"""

import re
import shutil

import pytest

from tests.test_grammars_lark import (JS_CONTEXT_ERRORS, _is_syntax_error, _node_error,
                                      _sqlite_error)
from tests.test_sampling_lark import SEED, sampler


def _docs(name, n, seed):
    docs, _, failures = sampler(name).run(n, seed=seed)
    assert not failures, failures[:3]
    assert len(docs) >= 0.9 * n
    return [d.decode("utf-8") for d in docs]


def _sql_syntax_errors(docs):
    return [(msg, q) for q in docs for msg in [_sqlite_error(q)] if _is_syntax_error(msg)]


# Documented grammar gaps (docs/grammars.md, JavaScript "Limits"), let
# through by name; any other refusal is a hole:
# * a character-class range out of order in a regex literal (`/[z-a]/`): the
#   regex terminals do not compare the ends of a range (the comparison times
#   the group nesting the terminal tracks is too large an automaton);
# (Line breaks after `throw` and before `=>`, regex groups, a hashbang after
# white space (the at_start pragma) and `--` split into `- -` where no update
# operator may go (the not_before pragmas on MINUS and PLUS) have no
# exemption any more.)
JS_REGEX_RANGE_GAP = re.compile(r"Invalid regular expression: .*: Range out of order in character class")


def _known_gap(errs):
    msgs = [e.split("SyntaxError: ", 1)[-1].strip() for e in errs]
    return all(JS_REGEX_RANGE_GAP.fullmatch(m) for m in msgs)


def _js_errors(docs):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: `node --check` cannot run")
    bad = []
    for src in docs:
        errs = []
        for suffix in (".cjs", ".mjs"):
            err = _node_error(node, src, suffix)
            if err is None or JS_CONTEXT_ERRORS.search(err):
                break
            errs.append(err)
        else:
            if not _known_gap(errs):
                bad.append((" / ".join(errs)[:300], src))
    return bad


def test_sql_sampled_under_masks_prepare_in_sqlite():
    bad = _sql_syntax_errors(_docs("sql", 100, SEED + 11))
    assert not bad, bad[:5]


def test_js_sampled_under_masks_pass_node_check():
    bad = _js_errors(_docs("javascript", 25, SEED + 12))
    assert not bad, bad[:5]


@pytest.mark.slow
def test_sql_sampled_under_masks_prepare_in_sqlite_full():
    bad = _sql_syntax_errors(_docs("sql", 500, SEED + 21))
    assert not bad, bad[:5]


@pytest.mark.slow
def test_js_sampled_under_masks_pass_node_check_full():
    bad = _js_errors(_docs("javascript", 200, SEED + 22))
    assert not bad, bad[:5]
