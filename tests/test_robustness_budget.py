"""``Limits.max_matcher_bytes`` bounds what one matcher really holds (issue 26).

The budget used to count only the Earley items and the waiting-item index.
A long document of short lexemes then held two to three times the budget: the
per-row arrays (start offsets, lexer states, scanned and expected terminal
sets, stamps), the dedup table and the byte stack with its rollback history
(one entry per byte) were left out.  A 256 MB budget went with 737 MB peak RSS
on a 1 MB SQL query.

Now every array a matcher allocates is counted at its capacity
(``MatcherCore.held_bytes``).  The check: in a fresh subprocess, feed a
document far larger than the budget until ``BudgetExceeded``; the RSS the
process gained over the parse must stay within the budget (plus a small
allowance for the allocator and the lexer states the document adds), and the
matcher must be unchanged by the refused call and still usable.  Memory, not
time, is asserted.
"""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, os, sys
import cfgmask
from cfgmask.engine.compiler import Limits

budget, kind = int(sys.argv[1]), sys.argv[2]

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

if kind == "many-terminals":
    # 320 terminals: each row keeps two 320-bit terminal sets (80 bytes) for
    # 3 items (24 bytes); the old budget counted only the items
    kws = " ".join(f'"kw{i}"' for i in range(320))
    g = cfgmask.Grammar.from_lark(f'start: "x"* | other\nother: {kws}\n')
    head, chunk = b"", b"x" * 4096
elif kind == "short-lexemes":
    # one lexeme per byte, few items per row
    g = cfgmask.Grammar.from_lark('start: item*\nitem: "a" | "b"\n')
    head, chunk = b"", b"ab" * 2048
else:
    # a long SQL query (a 1 MB IN list is the reported case)
    g = cfgmask.Grammar.builtin("sql")
    head = b"SELECT a FROM t WHERE b IN ("
    chunk = (", ".join(str(i) for i in range(1000, 1800)) + ", ").encode()
# bytes, the head and the chunk as tokens: consume() of one token is all or nothing
v = cfgmask.Vocabulary([bytes([b]) for b in range(256)] + [head or b"a", chunk, None], eos_token_ids=[258])
c = cfgmask.compile(g, v, limits=Limits(max_matcher_bytes=budget))
m = c.matcher()
if head:
    m.consume(256)
m.allowed_tokens()
base = rss()
fed, raised = 0, None
while fed < 64 * budget:
    try:
        m.consume(257)
    except cfgmask.BudgetExceeded as e:
        raised = str(e)
        break
    fed += len(chunk)
grown = rss() - base
held = m._core.held_bytes() if hasattr(m._core, "held_bytes") else None
prefix_ok = m.prefix == head + chunk * (fed // len(chunk))
m.rollback(1)                   # still usable after the refusal
m.consume(257)
print(json.dumps({"fed": fed, "raised": raised, "grown": grown, "held": held, "prefix_ok": prefix_ok}))
"""


def _run(budget, kind):
    env = dict(os.environ, MALLOC_ARENA_MAX="1")
    out = subprocess.run([sys.executable, "-c", CHILD, str(budget), kind], capture_output=True, text=True,
                         timeout=300, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind,budget", [("many-terminals", 16 << 20), ("short-lexemes", 16 << 20),
                                         ("sql", 32 << 20)])
def test_matcher_budget_bounds_the_memory_a_parse_takes(kind, budget):
    r = _run(budget, kind)
    assert r["raised"] is not None, f"fed {r['fed']} bytes without reaching the budget"
    assert "max_matcher_bytes" in r["raised"]
    assert r["prefix_ok"], "the refused call changed the matcher"
    # the budget is checked before each growth, so what the matcher holds stays below it;
    # the allowance covers malloc headers, partly used pages and new lexer states
    assert r["grown"] <= budget * 1.15 + (4 << 20), (
        f"{kind}: RSS grew {r['grown'] >> 20} MB under a {budget >> 20} MB matcher budget")
    # and the accounting is not an overestimate that refuses documents that would fit
    assert r["held"] is not None and r["held"] <= budget
    assert r["held"] >= budget // 2
