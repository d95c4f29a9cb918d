"""Byte-level DFAs: :class:`ByteDFA`, :class:`CountedDFA`, and queries on their tables.

A :class:`ByteDFA` is what every other part of cfgmask reads: ``trans``
(int32 ``[n_states, 256]``), ``accepting`` and the follow restrictions of its
accepting states.  Invariants (the rest of cfgmask relies on each):

* **start = 0**, ``trans[s, b] == -1`` means dead; there is no explicit dead
  state;
* **follow restrictions**: ``follow_forbidden[s]`` (``None`` or sorted
  ``bytes``) lists the bytes before which a lexeme may not end in ``s``,
  ``follow_forbidden_at_eos[s]`` says it may not end at end of input;
  non-accepting states have ``None`` / ``False``;
* automata from :func:`~cfgmask.automata.compile_regex` are also trimmed,
  minimal, UTF-8 exact and numbered breadth-first (see
  :mod:`cfgmask.automata.pipeline`); other builders
  (:mod:`cfgmask.automata.setops`) guarantee at least start 0 and trimming;
* a ByteDFA is never mutated after construction (memoised ones have
  read-only tables), so one object may serve many grammars.

The queries here read tables only: :func:`column_classes` (bytes with equal
columns), :func:`byte_classes` (the byte partition that a set of automata
and their follow restrictions share) and :func:`has_cycle` (an infinite
language).
"""

import collections

import numpy as np

from cfgmask.automata.kernels import compiled

__all__ = ["ByteDFA", "CountedDFA", "byte_classes", "column_classes", "graph_has_cycle", "has_cycle",
           "has_cycle_python"]

class ByteDFA:
    """A deterministic automaton over bytes; see the module docstring.

    ``follow_forbidden[s]`` (``None`` or sorted ``bytes``) and
    ``follow_forbidden_at_eos[s]`` (bool) restrict where a lexeme may end in
    accepting state ``s``: not before a byte listed in ``follow_forbidden[s]``,
    and not at end of input when ``follow_forbidden_at_eos[s]``.  Both come
    from trailing lookaheads; without any, every entry is ``None`` / ``False``.
    """

    __slots__ = ("trans", "accepting", "start", "n_states", "pattern", "name",
                 "follow_forbidden", "follow_forbidden_at_eos", "_column_class")

    def __init__(self, trans, accepting, pattern="", name="?", follow_forbidden=None,
                 follow_forbidden_at_eos=None):
        self.trans = np.ascontiguousarray(trans, dtype=np.int32)
        self.accepting = np.ascontiguousarray(accepting, dtype=bool)
        self.start = 0
        self.n_states = int(self.trans.shape[0])
        self.pattern = pattern
        self.name = name
        if follow_forbidden is None:
            follow_forbidden = [None] * self.n_states
        if follow_forbidden_at_eos is None:
            follow_forbidden_at_eos = [False] * self.n_states
        self.follow_forbidden = [bytes(sorted(set(f))) if f else None for f in follow_forbidden]
        self.follow_forbidden_at_eos = [bool(e) for e in follow_forbidden_at_eos]
        if not (len(self.follow_forbidden) == len(self.follow_forbidden_at_eos) == self.n_states):
            raise ValueError("follow restrictions need one entry per state")
        self._column_class = None

    def column_class(self):
        """uint8[256]: the class of each byte among this automaton's columns
        (equal columns, equal classes; numbered by first byte), computed once:
        :func:`byte_classes` combines these, so an automaton shared by many
        grammars is read once, not once per grammar."""
        if self._column_class is None:
            self._column_class = column_classes(self.trans)[0]
        return self._column_class

    def set_column_class(self, class_of):
        """Hand over the column partition when the builder knows it (a byte chain)."""
        self._column_class = np.ascontiguousarray(class_of, dtype=np.uint8)

    def run(self, data: bytes, state: int = 0) -> int:
        """State after reading ``data`` from ``state``; -1 once dead."""
        trans = self.trans
        for byte in data:
            state = int(trans[state, byte])
            if state < 0:
                return -1
        return state

    def can_end(self, state: int, next_byte=None) -> bool:
        """May a lexeme end in ``state`` when ``next_byte`` follows it
        (``None``: end of input)?  False for -1 and non-accepting states."""
        if state < 0 or not self.accepting[state]:
            return False
        if next_byte is None:
            return not self.follow_forbidden_at_eos[state]
        forbidden = self.follow_forbidden[state]
        return forbidden is None or next_byte not in forbidden

    def matches(self, data: bytes) -> bool:
        """Is ``data`` accepted (a full match with nothing after it)?"""
        return self.can_end(self.run(data), None)

    def matches_followed_by(self, data: bytes, next_byte) -> bool:
        """Is ``data`` accepted as a lexeme followed by the byte ``next_byte``
        (an int; ``None`` means end of input, the same as :meth:`matches`)?"""
        return self.can_end(self.run(data), next_byte)

    def is_prefix(self, data: bytes) -> bool:
        """Is ``data`` a prefix of some accepted lexeme (with some byte, or
        the end of input, after it that its restriction allows)?"""
        # Trimmed: every live state reaches acceptance, except in the
        # one-state automaton of the empty language.
        return self.run(data) >= 0 and bool(self.accepting.any())

    @property
    def has_follow_restrictions(self) -> bool:
        """Does any state restrict what may follow the lexeme?"""
        # list.count compares in C (nothing but None equals None); a generator
        # per state was 35,000 steps over 80 MaskBench schemas' compiles
        ff = self.follow_forbidden
        return any(self.follow_forbidden_at_eos) or ff.count(None) != len(ff)

    def __repr__(self):
        return f"ByteDFA(name={self.name!r}, pattern={self.pattern!r}, n_states={self.n_states})"


class CountedDFA(ByteDFA):
    """A :class:`ByteDFA` whose lexemes may complete at most ``max_chars`` characters.

    Some languages are a small automaton with a length bound on top, such
    as a JSON string of at most 100 words and at most 5,000 characters: the
    product automaton needs a state per (words, characters) pair, 500,000 of
    them, of which a document visits a few thousand.  Here the bound is a
    counter stepped next to the automaton instead, and the runtime builds the
    union states that a document reaches, as it does for everything else.

    ``trans``/``accepting`` are the *uncounted* automaton (``n_states`` its
    states, "base states"), trimmed and with start 0 as for any ByteDFA.
    ``char_end[q]`` is 1 when entering base state ``q`` completes a
    character; ``min_chars[q]`` is the fewest characters a path from ``q``
    completes before it accepts (computed here, so that the invariant
    "every live state can still accept" holds with the counter too).  A
    counted state is ``n * n_states + q``: ``n`` characters completed, base
    state ``q``; it is live iff ``n + min_chars[q] <= max_chars``.  Every
    method below (``run``, ``can_end``, ``matches``) takes and returns
    counted states, so the language of this object is the bounded one.
    Readers of ``trans`` alone see a superset: the lexer steps the counter
    (``_fast/_lexer.pyx``), and the slices skip counted terminals.
    """

    __slots__ = ("char_end", "min_chars", "max_chars")

    def __init__(self, trans, accepting, char_end, max_chars, pattern="", name="?"):
        super().__init__(trans, accepting, pattern=pattern, name=name)
        self.char_end = np.ascontiguousarray(char_end, dtype=np.uint8)
        self.max_chars = int(max_chars)
        if len(self.char_end) != self.n_states:
            raise ValueError("char_end needs one entry per state")
        if self.max_chars < 0 or (self.max_chars + 1) * self.n_states >= 2 ** 31:
            raise ValueError(f"max_chars {max_chars} x {self.n_states} states does not fit a state id")
        self.min_chars = _min_chars_to_accept(self.trans, self.accepting, self.char_end)

    def base_state(self, state):
        return state % self.n_states

    def run(self, data: bytes, state: int = 0) -> int:
        n, q = divmod(state, self.n_states) if state >= 0 else (0, -1)
        trans = self.trans
        for byte in data:
            if q < 0:
                return -1
            q = int(trans[q, byte])
            if q < 0:
                return -1
            n += int(self.char_end[q])
            if n + int(self.min_chars[q]) > self.max_chars:
                return -1
        return n * self.n_states + q if q >= 0 else -1

    def can_end(self, state: int, next_byte=None) -> bool:
        return state >= 0 and super().can_end(state % self.n_states, next_byte)

    def is_prefix(self, data: bytes) -> bool:
        return self.run(data) >= 0

    def __repr__(self):
        return (f"CountedDFA(name={self.name!r}, n_states={self.n_states}, "
                f"max_chars={self.max_chars})")


def _min_chars_to_accept(trans, accepting, char_end):
    """int32 per state: the fewest completed characters on a path to acceptance
    (0-1 breadth-first search backwards from the accepting states; a state that
    cannot accept gets 2**30)."""
    n = trans.shape[0]
    # one column per byte class: the same (source, target) pairs, a few columns to scan
    table = trans[:, column_classes(trans)[1]]
    src, byte = np.nonzero(table >= 0)
    dst = table[src, byte]
    pairs = sorted_unique(dst.astype(np.int64) * n + src)      # (target, source), once each
    dst, src = (pairs // n).tolist(), (pairs % n).tolist()
    preds = [[] for _ in range(n)]
    for d_, s_ in zip(dst, src):
        preds[d_].append(s_)
    far = 1 << 30
    dist = [far] * n
    todo = collections.deque()
    for q in np.flatnonzero(accepting).tolist():
        dist[q] = 0
        todo.append(q)
    cost = char_end.tolist()
    while todo:
        v = todo.popleft()
        d = dist[v] + cost[v]      # entering v completes cost[v] characters
        for u in preds[v]:
            if d < dist[u]:
                dist[u] = d
                if cost[v]:
                    todo.append(u)
                else:
                    todo.appendleft(u)
    return np.asarray(dist, dtype=np.int32)


def column_classes(trans):
    """Group the columns of ``trans`` (256 bytes, or character atoms) into
    classes of identical columns.

    Returns ``(class_of uint8[256] (int32 for more columns), representative
    column of each class)``; classes are numbered by the first column that has
    them.  Computed in C (``_fast._minimal.column_classes``: 5.6 µs a call
    against 25 µs in numpy, about 5 calls per JSON schema's compile);
    :func:`column_classes_python` is the reference.
    """
    kernel = compiled()
    if kernel is not None:
        return kernel.column_classes(trans)
    return column_classes_python(trans)


def column_classes_python(trans):
    """:func:`column_classes` in numpy (the reference of the C kernel)."""
    columns = np.ascontiguousarray(trans.T)
    k = columns.shape[0]
    dtype = np.uint8 if k <= 256 else np.int32
    if columns.shape[1] == 0:
        return np.zeros(k, dtype=dtype), [0] if k else []
    # one bytes key per column, numbered by a dict in column order (a Python loop
    # over the columns with a tobytes and an item store each was 3x slower)
    keys = columns.view(np.dtype((np.void, columns.shape[1] * columns.itemsize))).ravel().tolist()
    ids = {}
    class_of = np.fromiter((ids.setdefault(key, len(ids)) for key in keys), dtype=dtype, count=k)
    representatives = np.unique(class_of, return_index=True)[1].tolist()
    return class_of, representatives


def byte_representatives(alive, col_id, class_of):
    """Of the bytes ``alive`` (bytes, ascending), the first of each
    (``class_of[b]``, ``col_id[b]``) pair, as bytes (``col_id`` and
    ``class_of``: bytes, one entry per byte value): the bytes a containment
    product of a slice automaton with a lexer needs to step on.  Computed in C
    (``_fast._minimal.byte_representatives``: ~1 µs against ~50 µs in Python,
    three or more calls a compile); :func:`byte_representatives_python` is the
    reference."""
    kernel = compiled()
    if kernel is not None:
        return kernel.byte_representatives(alive, col_id, class_of)
    return byte_representatives_python(alive, col_id, class_of)


def byte_representatives_python(alive, col_id, class_of):
    """:func:`byte_representatives` in Python (the reference of the C kernel)."""
    seen = set()
    reps = bytearray()
    for b in alive:
        pair = (class_of[b] << 8) | col_id[b]
        if pair not in seen:
            seen.add(pair)
            reps.append(b)
    return bytes(reps)


def byte_classes(dfas):
    """Partition the 256 byte values by how the given DFAs treat them.

    Two bytes share a class iff every state of every DFA sends them to the
    same target and every ``follow_forbidden`` set holds both or neither (so
    the class of the byte after a lexeme decides whether it may end).
    Returns ``(class_of_byte uint8[256], n_classes)``; classes are numbered
    in order of first appearance by byte value.
    """
    if not dfas:
        return np.zeros(256, dtype=np.uint8), 1
    # Bytes share a class iff they share one in every automaton, so the classes
    # are the distinct columns of the automata's own partitions (one small row
    # each, memoised on shared automata) rather than of all their transitions.
    rows = [d.column_class() for d in dfas]
    forbidden_sets = sorted({f for d in dfas for f in d.follow_forbidden if f})
    if forbidden_sets:
        membership = np.zeros((len(forbidden_sets), 256), dtype=np.uint8)
        for i, forbidden in enumerate(forbidden_sets):
            membership[i, list(forbidden)] = 1
        rows.extend(membership)
    class_of, representatives = column_classes(np.stack(rows))
    return class_of, len(representatives)


def sorted_unique(values):
    """``np.unique(values)`` for a 1-d integer array, without ``np.unique``.

    NumPy 2.4's plain ``np.unique`` imports ``numpy.ma`` on its first call
    (``np.ma.is_masked``), about 6 ms that would land on the first compile of
    every process."""
    out = np.sort(values, kind="stable")
    if out.size > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out


def has_cycle(trans):
    """True when a trimmed automaton with transition table ``trans`` (``[states,
    columns]``, -1 dead; byte columns or byte-class columns alike) accepts
    infinitely many strings, i.e. has a cycle.

    Only a heuristic decides on it ("a keyword is too small to pay"), never a
    mask, so any answer is safe; it is exact all the same.  The search runs
    in C (``_fast/_minimal.pyx``: a JSON Schema string with a ``maxLength``,
    thousands of states and no cycle, took 5 ms in Python) unless
    ``CFGMASK_PURE_AUTOMATA=1``; :func:`has_cycle_python` is the reference."""
    live = trans >= 0
    if np.count_nonzero(live) < trans.shape[0]:
        # every state is reachable from the start, so n - 1 edges or fewer make a
        # tree, which has no cycle: one numpy call settles the literals (JSON
        # Schema keys, keywords) that are most terminals
        return False
    kernel = compiled()
    if kernel is not None:
        return bool(kernel.cycle(trans))
    return has_cycle_python(trans)


def has_cycle_python(trans):
    """:func:`has_cycle` in Python, the reference."""
    n = trans.shape[0]
    live = trans >= 0
    # the distinct edges with numpy (a state has many columns but few
    # successors), then a plain-Python DFS over them
    src, col = np.nonzero(live)
    pairs = sorted_unique(src.astype(np.int64) * n + trans[src, col])
    succ = [[] for _ in range(n)]
    for a, b in zip((pairs // n).tolist(), (pairs % n).tolist()):
        succ[a].append(b)
    return graph_has_cycle(succ)


def graph_has_cycle(succ):
    """Whether the directed graph ``succ`` (node ``i``'s successors, ``0 <= i <
    len(succ)``) has a cycle: an iterative depth-first search."""
    n = len(succ)
    color = [0] * n            # 0 unseen, 1 on the DFS stack, 2 done
    for root in range(n):
        if color[root]:
            continue
        stack = [(root, iter(succ[root]))]
        color[root] = 1
        while stack:
            node, it = stack[-1]
            for nxt in it:
                if color[nxt] == 1:
                    return True
                if color[nxt] == 0:
                    color[nxt] = 1
                    stack.append((nxt, iter(succ[nxt])))
                    break
            else:
                color[node] = 2
                stack.pop()
    return False
