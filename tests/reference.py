"""A slow, obviously-correct reference for cfgmask's masks (test oracle).

It implements the semantics of ``docs/architecture.md`` ("Semantics") as
directly as possible and shares no code with the runtime: the only things it
takes from cfgmask are the flat CFG of :class:`cfgmask.Grammar` (rules,
terminal names, ``%ignore`` flags, word boundary) and the per-terminal byte
DFAs of :func:`cfgmask.automata.compile_regex`, which ``tests/test_regex.py``
checks against Python's ``re`` on its own.

* Parser: a textbook Earley recognizer over terminal symbols.  An Earley set
  is a ``frozenset`` of ``(rule, dot, origin)`` items; its closure applies
  predict and complete until nothing changes (so nullable rules need no
  special case).
* Lexer: greedy, contextual, one byte of look-ahead, run on *sets of
  ``(terminal, dfa_state)`` pairs* (no product automaton).  A lexeme that
  ends before byte ``b`` (or at EOS) is accepted only by the terminals whose
  trailing lookahead allows ``b`` (``ByteDFA.follow_forbidden``,
  ``follow_forbidden_at_eos``).
* Masks: :meth:`Reference.mask` walks a plain dict trie of the vocabulary
  from the state after the prefix, pruning a subtree as soon as its bytes are
  rejected.

Everything is immutable, so a state is shared freely between branches.
"""

import functools
import math

from cfgmask.automata import compile_regex

START_RULE = 0


class Chart:
    """Earley sets ``0..k`` (``sets``), built by :meth:`Reference._scan`.

    ``expected`` is the set of terminals some item of the last set has its
    dot in front of; ``complete`` says whether ``$start -> start .`` (origin
    0) is in the last set.  ``children`` memoises scans: terminal set -> Chart.
    """

    __slots__ = ("sets", "expected", "complete", "children", "charts", "g", "cost")

    def __init__(self, sets, expected, complete, parent=None):
        self.sets = sets
        self.expected = expected
        self.complete = complete
        self.children = {}
        self.charts = (parent.charts if parent else ()) + (self,)  # chart of each prefix of ``sets``
        self.g = None     # steering heuristic only: see Reference._goal_costs
        self.cost = None

    @property
    def k(self):
        return len(self.sets) - 1


class State:
    """Lexer + parser state after some bytes.

    ``pairs`` is ``None`` at a lexeme start (only before the first byte: every
    byte starts or extends a lexeme), else the non-empty frozenset of live
    ``(terminal, dfa_state)`` pairs of the pending lexeme; ``last`` is the
    pending lexeme's last byte.  ``finished``: EOS was consumed.
    """

    __slots__ = ("chart", "pairs", "last", "finished", "length")

    def __init__(self, chart, pairs=None, last=None, finished=False, length=0):
        self.chart = chart
        self.pairs = pairs
        self.last = last
        self.finished = finished
        self.length = length  # bytes in the pending lexeme (informative only)


class Reference:
    """The reference semantics for one :class:`cfgmask.Grammar`."""

    def __init__(self, grammar):
        self.grammar = grammar
        self.T = int(grammar.n_terminals)
        self.ignore = frozenset(t for t in range(self.T) if bool(grammar.terminal_is_ignore[t]))
        # at_start terminals: only the document's first lexeme (nothing ignored before it)
        self.at_start = frozenset(t for t in range(self.T)
                                  if bool(getattr(grammar, "terminal_at_start", [False] * self.T)[t]))
        self.word_boundary = frozenset(grammar.word_boundary)
        self.lhs = [int(a) for a in grammar.rule_lhs]
        self.bodies = [tuple(grammar.rule_body(r)) for r in range(len(self.lhs))]
        self.rules_of = {}
        for r, a in enumerate(self.lhs):
            self.rules_of.setdefault(a, []).append(r)
        dfas = [compile_regex(p, name=n) for n, p in zip(grammar.terminal_names, grammar.terminal_patterns)]
        self.trans = [d.trans.tolist() for d in dfas]
        self.accepting = [d.accepting.tolist() for d in dfas]
        # trailing lookaheads (?!C) / (?=C): an accepting state may forbid ending before some
        # bytes (``forbidden[t][s]``) or at the end of input (``forbidden_at_eos[t][s]``)
        self.forbidden = [[frozenset(f or b"") for f in d.follow_forbidden] for d in dfas]
        self.forbidden_at_eos = [list(d.follow_forbidden_at_eos) for d in dfas]
        self._step_cache = {}
        self._dist_cache = {}
        items0 = self._closure((), {(START_RULE, 0, 0)}, 0)
        self.initial_chart = self._make_chart((), items0)

    # ------------------------------------------------------------ Earley
    def _closure(self, sets_before, items, k):
        """Predict and complete inside set ``k`` until nothing changes."""
        items = set(items)
        T, bodies, lhs = self.T, self.bodies, self.lhs
        changed = True
        while changed:
            changed = False
            for (r, d, o) in list(items):
                body = bodies[r]
                if d < len(body):
                    x = body[d]
                    if x >= T:  # predict
                        for r2 in self.rules_of.get(x, ()):
                            if (r2, 0, k) not in items:
                                items.add((r2, 0, k))
                                changed = True
                else:  # complete
                    a = lhs[r]
                    parents = items if o == k else sets_before[o]
                    for (r2, d2, o2) in list(parents):
                        b2 = bodies[r2]
                        if d2 < len(b2) and b2[d2] == a and (r2, d2 + 1, o2) not in items:
                            items.add((r2, d2 + 1, o2))
                            changed = True
        return frozenset(items)

    def _make_chart(self, sets_before, items, parent=None):
        expected = frozenset(self.bodies[r][d] for (r, d, o) in items
                             if d < len(self.bodies[r]) and self.bodies[r][d] < self.T)
        complete = (START_RULE, len(self.bodies[START_RULE]), 0) in items
        return Chart(sets_before + (items,), expected, complete, parent)

    def _scan(self, chart, terminals):
        """The chart after a lexeme that every terminal of ``terminals`` (all expected) accepts."""
        key = frozenset(terminals)
        child = chart.children.get(key)
        if child is None:
            last = chart.sets[-1]
            moved = {(r, d + 1, o) for (r, d, o) in last
                     if d < len(self.bodies[r]) and self.bodies[r][d] in key}
            assert moved, "scanned a terminal that is not expected"
            items = self._closure(chart.sets, moved, len(chart.sets))
            child = self._make_chart(chart.sets, items, chart)
            chart.children[key] = child
        return child

    # ------------------------------------------------------------- lexer
    def initial(self):
        return State(self.initial_chart)

    def _allowed(self, chart, first=False):
        e = chart.expected if first else chart.expected - self.at_start
        return e | self.ignore if e else e

    def _start_lexeme(self, chart, b, first=False):
        pairs = frozenset((t, self.trans[t][0][b]) for t in self._allowed(chart, first)
                          if self.trans[t][0][b] >= 0)
        return State(chart, pairs, b, length=1) if pairs else None

    def push_byte(self, st, b):
        """The state after byte ``b``, or ``None`` if ``b`` is rejected."""
        if st is None or st.finished:
            return None
        if st.pairs is None:      # only before the first byte
            return self._start_lexeme(st.chart, b, first=True)
        ext = self._step_pairs(st.pairs, b)
        if ext:
            return State(st.chart, ext, b, length=st.length + 1)
        if st.last in self.word_boundary and b in self.word_boundary:
            return None
        accepted = {t for (t, s) in st.pairs if self.accepting[t][s] and b not in self.forbidden[t][s]}
        if not accepted:
            return None
        chart = self._end_lexeme(st.chart, accepted)
        return self._start_lexeme(chart, b)

    def _step_pairs(self, pairs, b):
        key = (pairs, b)
        ext = self._step_cache.get(key)
        if ext is None:
            ext = self._step_cache[key] = frozenset(
                (t, self.trans[t][s][b]) for (t, s) in pairs if self.trans[t][s][b] >= 0)
        return ext

    def _end_lexeme(self, chart, accepted):
        scanned = accepted & chart.expected
        if scanned:
            return self._scan(chart, scanned)
        assert accepted <= self.ignore
        return chart  # only %ignore terminals accept: skip the lexeme

    def push_bytes(self, st, data):
        for b in data:
            st = self.push_byte(st, b)
            if st is None:
                return None
        return st

    def viable(self, st):
        """Not dead: every pushed byte was accepted and (after >= 1 byte) the pair set is live."""
        return st is not None and not st.finished

    def eos_allowed(self, st):
        if st is None:
            return False
        if st.finished:
            return True  # after EOS only EOS
        if st.pairs is None:
            return st.chart.complete
        accepted = {t for (t, s) in st.pairs if self.accepting[t][s] and not self.forbidden_at_eos[t][s]}
        if not accepted:
            return False
        return self._end_lexeme(st.chart, accepted).complete

    def push_eos(self, st):
        return State(st.chart, st.pairs, st.last, finished=True, length=st.length) if self.eos_allowed(st) else None

    def push_tokens(self, st, vocab, ids):
        """Consume token ids (EOS included); ``None`` on the first rejection."""
        eos = set(vocab.eos_token_ids)
        for t in ids:
            if st is None:
                return None
            if t in eos:
                st = self.push_eos(st)
            else:
                tb = vocab.token_bytes[t] if t < len(vocab.token_bytes) else None
                st = None if (tb is None or st.finished) else self.push_bytes(st, tb)
        return st

    # ------------------------------------------------------------- masks
    def state_after(self, prefix=b""):
        return self.push_bytes(self.initial(), prefix)

    def token_allowed(self, st, vocab, t):
        if t in vocab.eos_token_ids:
            return self.eos_allowed(st)
        tb = vocab.token_bytes[t] if t < len(vocab.token_bytes) else None
        if tb is None or st is None or st.finished:
            return False
        return self.viable(self.push_bytes(st, tb))

    def mask(self, st, vocab, subset=None):
        """Set of allowed ids in state ``st`` (``subset``: only consider these ids)."""
        out = set()
        if st is None:
            return out
        if self.eos_allowed(st):
            out.update(t for t in vocab.eos_token_ids if subset is None or t in subset)
        if st.finished:
            return out
        trie = vocab_trie(vocab) if subset is None else _build_trie(vocab, frozenset(subset))
        stack = [(st, trie)]
        while stack:
            s, node = stack.pop()
            for b, (ids, child) in node.items():
                s2 = self.push_byte(s, b)
                if s2 is None:
                    continue  # rejected: the whole subtree is rejected
                out.update(ids)
                if child:
                    stack.append((s2, child))
        return out

    def reference_mask(self, prefix, vocab):
        return self.mask(self.state_after(prefix), vocab)

    # ------------------------------------------------ steering heuristic
    @functools.cached_property
    def _min_lengths(self):
        """Shortest byte length derivable from each symbol (terminals: shortest match)."""
        inf = math.inf
        mins = {}
        for t in range(self.T):
            mins[t] = _shortest_accept(self.trans[t], self.accepting[t])[0]
        nts = set(self.lhs)
        for a in nts:
            mins[a] = inf
        changed = True
        while changed:
            changed = False
            for r, a in enumerate(self.lhs):
                v = sum(mins[x] for x in self.bodies[r])
                if v < mins[a]:
                    mins[a] = v
                    changed = True
        return mins

    def completion_cost(self, st):
        """Estimated fewest bytes still needed before EOS (a heuristic for samplers).

        Earley items give the exact shortest *derivation* (ignoring that greedy
        lexing can forbid some segmentations); the pending lexeme adds its
        distance to acceptance.  ``math.inf`` if dead.
        """
        if st is None:
            return math.inf
        if st.finished or self.eos_allowed(st):
            return 0
        if st.pairs is None:
            return self._chart_cost(st.chart)
        best = math.inf
        for (t, s) in st.pairs:
            d = self._distance(t, s)
            if t in st.chart.expected:
                best = min(best, d + self._chart_cost(self._scan(st.chart, {t})))
            elif t in self.ignore:
                best = min(best, d + self._chart_cost(st.chart))
        return best

    def _distance(self, t, s):
        key = (t, s)
        d = self._dist_cache.get(key)
        if d is None:
            d = self._dist_cache[key] = _shortest_accept(self.trans[t], self.accepting[t], s)[0]
        return d

    def _chart_cost(self, chart):
        if chart.cost is None:
            chart.cost = self._compute_chart_cost(chart)
        return chart.cost

    def _suffix_cost(self, r, d):
        return sum(self._min_lengths[x] for x in self.bodies[r][d:])

    def _item_cost(self, chart, r, d, o):
        """Fewest bytes to finish item ``(r, d, o)`` and then every item waiting on it, up to ``$start``."""
        if r == START_RULE:
            return self._suffix_cost(r, d)
        return self._suffix_cost(r, d) + self._goal_costs(chart.charts[o]).get(self.lhs[r], math.inf)

    def _goal_costs(self, chart):
        """For the last set ``k`` of ``chart``: {A: fewest bytes to finish the items of set k
        waiting on A, once A is complete}.  Depends on sets ``<= k`` only, so it is memoised per
        chart; inside set ``k`` it is a shortest-path fixpoint (costs are non-negative)."""
        if chart.g is None:
            for c in chart.charts[:-1]:  # earlier sets first (no deep recursion)
                if c.g is None:
                    self._goal_costs(c)
            k, bodies, T = chart.k, self.bodies, self.T
            waiting = [(r, d, o) for (r, d, o) in chart.sets[-1] if d < len(bodies[r]) and bodies[r][d] >= T]
            g = chart.g = {bodies[r][d]: math.inf for (r, d, o) in waiting}
            changed = True
            while changed:
                changed = False
                for (r, d, o) in waiting:
                    a = bodies[r][d]
                    v = self._item_cost(chart, r, d + 1, o)
                    if v < g[a]:
                        g[a] = v
                        changed = True
        return chart.g

    def _compute_chart_cost(self, chart):
        if chart.complete:
            return 0
        return min((self._item_cost(chart, r, d, o) for (r, d, o) in chart.sets[-1]), default=math.inf)


def _shortest_accept(trans, accepting, start=0):
    """(length, bytes) of a shortest path from ``start`` to an accepting state (BFS)."""
    if accepting[start]:
        return 0, b""
    seen = {start: b""}
    frontier = [start]
    while frontier:
        nxt = []
        for s in frontier:
            for b in range(256):
                s2 = trans[s][b]
                if s2 >= 0 and s2 not in seen:
                    seen[s2] = seen[s] + bytes([b])
                    if accepting[s2]:
                        return len(seen[s2]), seen[s2]
                    nxt.append(s2)
        frontier = nxt
    return math.inf, None


def _build_trie(vocab, subset=None):
    """Nested dict trie: byte -> (ids ending here, child dict)."""
    root = {}
    for t, tb in enumerate(vocab.token_bytes):
        if tb is None or (subset is not None and t not in subset):
            continue
        node, entry = root, None
        for b in tb:
            entry = node.get(b)
            if entry is None:
                entry = node[b] = ([], {})
            node = entry[1]
        entry[0].append(t)
    return root


_TRIES = {}


def vocab_trie(vocab):
    key = id(vocab)
    hit = _TRIES.get(key)
    if hit is None or hit[0] is not vocab:
        hit = _TRIES[key] = (vocab, _build_trie(vocab))
    return hit[1]


_REFS = {}


def reference_for(grammar):
    """One cached :class:`Reference` per grammar object."""
    key = id(grammar)
    hit = _REFS.get(key)
    if hit is None or hit[0] is not grammar:
        hit = _REFS[key] = (grammar, Reference(grammar))
    return hit[1]


def reference_mask(grammar, prefix, vocab):
    """``{t : token_bytes[t] is not None and viable(prefix + token_bytes[t])} ∪ (EOS ids if eos_allowed(prefix))``."""
    return reference_for(grammar).reference_mask(prefix, vocab)
