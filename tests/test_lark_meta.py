"""Lark's ``.lark`` parser from the stored LALR table (cfgmask/frontends/lark_meta.py).

The oracle is Lark itself: its own LALR analysis of its meta grammar, and the
grammars it loads in a process where it built its parser itself.
"""

import json
import subprocess
import sys

import pytest

from cfgmask.frontends import lark_meta


def _stored():
    with open(lark_meta.TABLE_FILE, encoding="utf-8") as f:
        tables = json.load(f)
    key = lark_meta.meta_grammar_key()
    if key not in tables:
        pytest.skip(f"no stored table for this Lark ({key}): run python -m tools.lark_meta_table")
    return tables[key]


def _canonical(table):
    """The table with states numbered by a breadth-first walk from the start
    state, in token order, and reductions named by their rules' symbols."""
    from lark.parsers.lalr_analysis import Shift
    order = {table.start_states["start"]: 0}
    queue = [table.start_states["start"]]
    out = []
    while queue:
        s = queue.pop(0)
        row = {}
        for token in sorted(table.states[s]):
            action, arg = table.states[s][token]
            if action is Shift:
                if arg not in order:
                    order[arg] = len(order)
                    queue.append(arg)
                row[token] = ("shift", order[arg])
            else:
                row[token] = ("reduce", arg.origin.name, tuple(x.name for x in arg.expansion))
        out.append(row)
    return out, order.get(table.end_states["start"])


def test_stored_table_is_larks_own():
    _lexer_conf, parser_conf = lark_meta.meta_confs()
    fresh = lark_meta.analyse(parser_conf)
    stored = lark_meta.table_from_json(_stored(), parser_conf.rules)
    assert _canonical(stored) == _canonical(fresh)
    assert len(stored.states) == len(fresh.states)


_LOAD_ALL = r"""
import json, sys
from cfgmask.frontends import lark_meta
installed = lark_meta.install() if sys.argv[1] == "install" else False
import lark.load_grammar as L
from cfgmask.grammar import Grammar
out = {"installed": installed, "grammars": {}}
for name in Grammar.builtin_names():
    out["grammars"][name] = Grammar.from_file(Grammar.builtin_path(name)).rules_text()
import lark, os
lark_lark = os.path.join(os.path.dirname(lark.__file__), "grammars", "lark.lark")
out["grammars"]["lark.lark"] = Grammar.from_file(lark_lark).rules_text()
for bad in ("a: (\n", "a: b??", "A.B\n", "start: x\nx: \"a\" ->\n"):
    try:
        Grammar.from_lark(bad)
        out["grammars"][bad] = "loaded"
    except Exception as e:
        out["grammars"][bad] = type(e).__name__ + ": " + str(e).splitlines()[0]
out["parser_is_ours"] = installed and L._get_parser.cache is not None
print(json.dumps(out))
"""


def _load_all(mode, tmp_path):
    env = {"CFGMASK_CACHE_DIR": str(tmp_path / mode), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-c", _LOAD_ALL, mode], capture_output=True, text=True,
                       timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


def test_grammars_load_the_same_with_the_stored_table(tmp_path):
    # fresh processes, empty caches: one with Lark's own parser, one with ours
    _stored()
    own = _load_all("lark", tmp_path)
    ours = _load_all("install", tmp_path)
    assert not own["installed"] and ours["installed"] and ours["parser_is_ours"]
    assert ours["grammars"] == own["grammars"]
    assert len(own["grammars"]) >= 7


def test_install_leaves_a_built_parser_alone():
    from lark import load_grammar as L
    L._get_parser()             # built (by Lark or by us) in this process already
    before = L._get_parser.cache
    assert lark_meta.install() is False
    assert L._get_parser.cache is before
