"""Candidate slices of a grammar: what each terminal offers the slice choice.

Part of lexeme slices (:mod:`cfgmask.engine.slices`, which chooses among
these candidates and lays the chosen ones out).  :func:`derive` reads a
grammar's terminals and offers, as :class:`Slice` objects:

* a **prefix slice** ``P_T`` for each terminal with a cycle (its automaton
  read as a prefix language, minimal: terminals with equal prefix languages
  offer one slice);
* **run slices** ``X+`` and ``X{1,k}`` (``k`` in :data:`BOUNDED_RUNS` and
  the repeat's own bound) for each repeat of one character class, made from
  one character's automaton (:func:`run_slice`);
* **cross slices** ``c·P_T``: a one-byte ``%ignore`` lexeme ``c``, then ``P_T``.

Invariants: a slice's digest (:meth:`Slice.key`) is a function of its
language's automaton alone (a run's: of its class and bound; a cross
slice's: of its lead, ``P_T``'s digest and ``P_T``'s first row as
restricted), never of the terminal or grammar that offered it, so grammars
share candidates, memberships and tables by digest; slices are never
mutated after :func:`derive` returns them (automata made on first use are
equal whichever thread makes them).
"""

import hashlib
import re

import numpy as np

from cfgmask.automata import (ByteDFA, byte_representatives, class_regex, column_classes,
                              compile_regex, has_cycle,
                              minimize_and_trim, renumber_bfs, repeat_classes, unescaped_characters)
from cfgmask.cache import BoundedMemo
from cfgmask.errors import GrammarError

__all__ = ["BOUNDED_RUNS", "Slice", "derive", "prefix_dfa", "run_slice"]

BOUNDED_RUNS = (4, 8, 16)     # bounded variants of each run slice


class Slice:
    """One slice: a name, its automaton (a :class:`~cfgmask.automata.ByteDFA`) and,
    for a cross slice, the leading byte and the automaton of what follows it.

    A run slice (``run = (class regex, bound or None)``, :func:`run_slice`) makes
    its automaton on first use and is named by its regex: most run candidates
    are never chosen, and their tokens come from one walk per class.  (So a
    run and a prefix slice of the same language are two candidates: the later
    one keeps no tokens of its own and is dropped by :func:`~cfgmask.engine.slices.choose`.)"""

    def __init__(self, name, dfa, lead=None, tail=None, tail_of=None, run=None, first=None,
                 prefix_of=None):
        self.name = name
        # a cross slice's automaton (c then P_T) is made from its lead and tail on
        # first use: most candidates are never chosen (javascript.lark: 156 cross
        # candidates, 22 ms of copies)
        self._dfa = dfa
        self.lead = lead      # cross slices: the ignore byte c
        # cross slices: the DFA of P_T with its first bytes restricted, or
        # ``tail_of = (P_T's slice, its first row as restricted)`` to make it on
        # first use (a copy of P_T's table per candidate was 5 ms for javascript.lark)
        self._tail = tail
        self._tail_of = tail_of
        self._key = None      # never mutated after construction, so the digest is memoised
        self._reps = {}       # (which, lexer byte classes) -> representative bytes
        self.run = run        # a run slice: (class regex, bound or None for "+")
        self._first = first   # a run slice: bool[256], the bytes its tokens start with
        self.run_of = None    # a bounded run: (the unbounded run's slice, the bound)
        # a prefix slice made on first use: a function giving the terminal's automaton
        # (its prefix automaton and digest are made when first asked for; see
        # lazy_prefix), and the slice a renamed copy shares them with
        self._prefix_of = prefix_of
        self._origin = None

    @classmethod
    def lazy_prefix(cls, make_terminal_dfa, first):
        """The prefix slice of a terminal whose automaton ``make_terminal_dfa()``
        gives, made on first use (``first``: bool[256], the bytes its tokens start
        with).  A JSON schema has dozens of string terminals ("any key but
        these"), each offering a prefix slice that starts with ``"`` alone: too
        few tokens on any vocabulary we measured (176 of tekken's 131k), so the
        choice never reads it, and its automaton, minimisation and digest were
        most of a big schema's slice derivation (Kubernetes---kb_149: 82 such
        terminals, 14 ms)."""
        return cls("P", None, first=first, prefix_of=make_terminal_dfa)

    @property
    def dfa(self):
        if self._dfa is None:     # threads racing here make equal tables
            if self._origin is not None:
                self._dfa = self._origin.dfa
            elif self._prefix_of is not None:
                self._dfa = prefix_dfa(self._prefix_of())
            else:
                self._dfa = _run_dfa(*self.run) if self.run is not None else _prepend(self.lead, self.tail)
        return self._dfa

    def made(self):
        """Are its automaton and digest made (always, but for a lazy prefix slice
        not yet asked for them)?"""
        origin = self._origin or self
        return origin._prefix_of is None or origin._dfa is not None

    @property
    def tail(self):
        if self._tail is None and self._tail_of is not None:
            base, row = self._tail_of
            trans = np.array(base.dfa.trans, dtype=np.int32)
            trans[0] = row
            self._tail = ByteDFA(trans, np.asarray(base.dfa.accepting).copy(),
                                 pattern=base.dfa.pattern, name=base.dfa.name)
        return self._tail

    def first_bytes(self):
        """bool[256]: the bytes a token of the slice can start with (a cross slice:
        its lead alone, without making its automaton)."""
        if self.lead is not None:
            out = np.zeros(256, dtype=np.bool_)
            out[self.lead] = True
            return out
        if self._first is not None:
            return self._first
        return np.asarray(self.dfa.trans[0]) >= 0

    def byte_reps(self, class_of, tail=False):
        """The bytes that are distinct for the containment product of this slice's
        automaton (``tail``: the cross slice's tail) with a lexer whose byte classes
        are ``class_of`` (bytes, one class per byte): the smallest byte of each
        (lexer class, automaton column) pair, ascending, leaving out bytes on which
        the automaton always dies.  Memoised per lexer partition, since the slice
        tables, and so this object, are shared by every compile that keeps the slice
        (0.05-0.1 ms a slice at each compile otherwise)."""
        key = (tail, class_of)
        got = self._reps.get(key)
        if got is None:
            alive, col_id = self._columns(tail)
            got = self._reps[key] = byte_representatives(alive, col_id, class_of)
        return got

    def renamed(self, name):
        """The same slice under another name (its digest and memos shared)."""
        s = Slice(name, self._dfa, self.lead, self._tail, self._tail_of, self.run, self._first)
        if self.made():
            # the digest is taken here, on the memoised original, so that every later
            # copy shares it (a copy's own digest was lost with the copy: each new
            # grammar hashed its memoised terminals' automata again)
            s._key = self.key()
        else:
            # a lazy prefix slice: the copy asks the original, which makes them once
            s._origin = self._origin or self
        s._reps = self._reps
        s.run_of = self.run_of
        return s

    def warm(self):
        """Compute the columns of its automaton (and tail) now, so that
        :meth:`byte_reps` does only the lexer's share at a compile."""
        self._columns(False)
        if self.lead is not None:
            self._columns(True)

    def _columns(self, tail):
        """``(alive bytes ascending, column id of each byte)`` of the slice's automaton
        (or its tail), both as bytes: bytes with equal columns in the transition table
        share an id, and a byte on which every state dies is not alive.  Memoised:
        it does not depend on the lexer."""
        k = ("columns", tail)
        got = self._reps.get(k)
        if got is None:
            trans = np.asarray(self.tail.trans if tail else self.dfa.trans, dtype=np.int32)
            alive = np.flatnonzero((trans >= 0).any(axis=0)).astype(np.uint8).tobytes()
            col_id = column_classes(trans)[0]      # the minimiser's column partition (uint8)
            got = self._reps[k] = (alive, col_id.astype(np.uint8).tobytes())
        return got

    def key(self):
        if self._key is None:
            self._key = self._origin.key() if self._origin is not None else self._digest()
        return self._key

    def _digest(self):
        # equal digests only for equal automata, each named by what determines it
        h = hashlib.sha256()
        if self.run is not None:
            # a run's automaton is a function of its class and bound
            cls, bound = self.run
            h.update(f"run\0{cls}\0{bound}".encode("utf-8", "surrogatepass"))
            return h.hexdigest()
        if self._tail_of is not None:
            # a cross slice's, of its lead and tail; a tail made from P_T's, of P_T's
            # digest and the first row (hashing a copy of P_T's table per candidate
            # was 16 ms of javascript.lark's derivation)
            base, row = self._tail_of
            h.update(b"tail of\0" + base.key().encode() + np.ascontiguousarray(row, dtype=np.int32).tobytes())
        else:
            d = self.tail if self.lead is not None else self.dfa
            h.update(np.ascontiguousarray(d.trans, dtype=np.int32))
        h.update(bytes([0 if self.lead is None else 1, self.lead or 0]))
        return h.hexdigest()

    def __repr__(self):
        return f"<Slice {self.name}>"


def prefix_dfa(dfa):
    """``dfa`` read as a prefix language (every live state accepts), minimal and
    numbered breadth-first, so that equal prefix languages have equal tables and
    digests.  A terminal's own minimal automaton is rarely minimal as a prefix
    language: SQL's and JavaScript's identifiers spell their excluded keywords
    as a trie of ~90-180 states, and every such identifier has the prefixes of
    the plain identifier (9 states for sql.lark's).  sql.lark's seven identifiers then offer
    one prefix slice and one cross slice instead of seven each (14 walks of
    the vocabulary fewer, and no hashing of their tables)."""
    n = dfa.n_states
    trans, accepting, follow = minimize_and_trim(np.asarray(dfa.trans, dtype=np.int32),
                                                 np.ones(n, dtype=np.bool_), [0] * n)
    trans, accepting, _follow = renumber_bfs(trans, accepting, follow)
    trans = np.ascontiguousarray(trans, dtype=np.int32)
    trans.flags.writeable = False      # shared by every grammar with this prefix language
    return ByteDFA(trans, np.ones(trans.shape[0], dtype=np.bool_),
                   pattern=f"prefixes of {dfa.pattern}", name=dfa.name)


def _prepend(byte, dfa):
    """The DFA of ``bytes([byte]) + L(dfa)`` (prefix semantics)."""
    n = dfa.n_states
    trans = np.full((n + 1, 256), -1, dtype=np.int32)
    trans[0, byte] = 1
    trans[1:] = np.where(dfa.trans >= 0, dfa.trans + 1, -1)
    return ByteDFA(trans, np.ones(n + 1, dtype=np.bool_), pattern=f"{byte:#04x} then {dfa.pattern}",
                       name=dfa.name)


class _Terminal:
    """What :func:`_terminal_slices` reads of one terminal of a lexer, each on
    demand."""

    def __init__(self, lexer_spec, t):
        self.lexer_spec, self.t = lexer_spec, t

    def restricts_follow(self):
        return self.lexer_spec.restricts_follow(self.t)

    def dfa_maker(self):
        return self.lexer_spec.dfa_maker(self.t)

    def first_bytes(self):
        """bool[256]: the bytes its lexemes start with."""
        spec = self.lexer_spec
        return np.ascontiguousarray(spec.class_tables[self.t][0][spec.class_of_byte] >= 0)


def derive(grammar, lexer_spec, lazy=False):
    """Candidate slices of a grammar (not yet filtered by token counts).

    Equal slices are offered once (by digest).  ``lazy``: prefix slices not
    made yet stay unmade, so equal ones are only merged when they are the
    same memoised slice (same pattern); the choice keeps one of any equal
    pair anyway (the later has no tokens of its own), and a JSON Schema
    grammar's (``terminal_automata_prebuilt``) are mostly never read
    (:meth:`Slice.lazy_prefix`)."""
    out, seen = [], set()

    def add(s):
        k = s.key() if not lazy or s.made() else ("unmade", id(s._origin or s))
        if k not in seen:
            seen.add(k)
            out.append(s)

    prefix, runs = {}, set()
    for t, name in enumerate(grammar.terminal_names):
        if lexer_spec.counted(t):
            continue    # its automaton alone over-approximates it: no bound, no slice
        p, run_slices = _terminal_slices(grammar.terminal_patterns[t], lexer_spec.class_tables[t],
                                         None, _Terminal(lexer_spec, t))
        if p is None:
            continue
        p = p.renamed(f"P[{name}]")
        prefix[t] = p
        add(p)
        for run, suffix, sl in run_slices:
            if run not in runs:    # a run another terminal already offered keeps its name
                add(sl.renamed(f"run[{name}]{suffix}"))
        runs.update(run for run, _suffix, _sl in run_slices)
    # cross slices: an ignore lexeme of one byte, then a prefix of a terminal whose
    # first byte cannot continue that lexeme (so every such token leaves it there)
    leads = {}
    for t in range(len(grammar.terminal_names)):
        if grammar.terminal_is_ignore[t]:
            dfa = lexer_spec.dfa(t)
            for b in range(256):
                s = dfa.trans[0, b]
                if s >= 0 and dfa.accepting[s]:
                    stops = dfa.trans[s] < 0
                    leads[b] = stops if b not in leads else (leads[b] & stops)
    for b in sorted(leads):
        for t, p in prefix.items():
            if not grammar.terminal_is_ignore[t]:
                row = np.where(leads[b], np.asarray(p.dfa.trans[0]), -1).astype(np.int32)
                add(Slice(f"{chr(b)!r}+P[{grammar.terminal_names[t]}]", None, lead=b, tail_of=(p, row)))
    return out


# a pattern without a repeat (*, +, {...}) or a lookaround describes a finite language
# (an escaped "\*" or a class holding "+" only sends it down the full path)
_MAYBE_INFINITE = re.compile(r"[*+{]|\(\?[!=<]")
_TERMINAL_SLICES_SIZE = 4096
# pattern -> (prefix slice or None, run slices)
_TERMINAL_SLICES = BoundedMemo(_TERMINAL_SLICES_SIZE, order="fifo")


def _terminal_slices(pattern, class_table, get_dfa, terminal=None):
    """The slices one terminal offers, memoised by its pattern: ``(prefix, runs)``
    with ``prefix`` a :class:`Slice` of its prefixes, or ``None`` when it offers
    none (a lookahead decides where its lexeme ends, or it is finite: a keyword
    is too small to pay), and ``runs`` a tuple of ``((ranges, hi), suffix,
    slice)`` for each run of one character class inside it and each bounded
    variant.  ``class_table`` is the terminal's table over the lexer's byte
    classes, with ``terminal`` (a :class:`_Terminal`: its follow restrictions,
    first bytes and automaton, read on demand), or None: ``get_dfa()`` gives
    its byte automaton (all functions of the pattern alone); a prefix slice
    read off a lexer is made lazily (:meth:`Slice.lazy_prefix`).  Grammars generated one after another (a JSON Schema each) share most
    terminals, and reading a pattern with Python's parser, building automata
    and the cycle check were most of a new grammar's slice work."""
    got = _TERMINAL_SLICES.get(pattern)
    if got is not None:
        return got
    if _MAYBE_INFINITE.search(pattern) is None:
        # no repeat, no lookaround: a finite language, so no cycle and no slices
        # (a JSON schema's keys and constants, most of its new terminals; the
        # cycle check on each was a fifth of a schema's slice derivation)
        got = (None, ())
        _TERMINAL_SLICES.put(pattern, got)
        return got
    body = _lookahead_body(pattern)
    if body is not None and terminal is not None:
        try:
            got = _restricted_terminal_slices(body, terminal)
        except GrammarError:
            got = None        # a body the byte pipeline refuses: read the whole pattern
        if got is not None:
            _TERMINAL_SLICES.put(pattern, got)
            return got
    if class_table is None:
        dfa = get_dfa()
        cyclic = has_cycle(dfa.trans)
        restricted = cyclic and dfa.has_follow_restrictions

        def prefix():
            return Slice("P", prefix_dfa(dfa))
    else:
        cyclic = has_cycle(class_table)
        restricted = cyclic and terminal.restricts_follow()

        def prefix():
            return Slice.lazy_prefix(terminal.dfa_maker(), terminal.first_bytes())
    if not cyclic or restricted:
        got = (None, ())
    else:
        runs, seen = [], set()
        for ranges, hi in repeat_classes(pattern):
            # sql.lark's generated identifier patterns repeat one class thousands
            # of times: each (class, bound) once (a repeat offers what its first
            # copy offered, and derive() drops equal slices anyway)
            if (ranges, hi) in seen:
                continue
            seen.add((ranges, hi))
            cls = class_regex(ranges)
            bounds = [k for k in BOUNDED_RUNS if hi is None or k < hi]
            if hi is not None and hi > 1:
                bounds.append(hi)
            variants = ["+"] if hi is None else []
            variants += [f"{{1,{k}}}" for k in bounds]
            for suffix in variants:
                sl = run_slice(cls, suffix)
                if sl is not None:
                    runs.append(((ranges, hi), suffix, sl))
        got = (prefix(), tuple(runs))
    _TERMINAL_SLICES.put(pattern, got)
    return got


_MISSING = object()
# (class regex, suffix) -> run Slice or None (refused), shared by all terminals
_RUN_SLICES = BoundedMemo(_TERMINAL_SLICES_SIZE, order="fifo")


def run_slice(cls, suffix):
    """The run slice ``cls + suffix`` (``[a-z]+``, ``[0-9]{1,8}``), memoised: one
    object (and one digest) however many terminals and grammars offer it.
    ``None``: the run is refused (its automaton would pass ``_RUN_MAX_STATES``
    states)."""
    k = (cls, suffix)
    got = _RUN_SLICES.get(k, _MISSING)     # one lookup: another thread may drop the entry
    if got is not _MISSING:
        return got
    bound = None if suffix == "+" else int(suffix[3:-1])     # "{1,k}"
    one = _one_character(cls)
    if one is None:
        got = None
    elif (1 if bound is None else bound) * (one.n_states - 1) + 1 > _RUN_MAX_STATES:
        got = None
    else:
        got = Slice(f"run{suffix}", None, run=(cls, bound), first=np.asarray(one.trans[0]) >= 0)
        if bound is not None:
            # its tokens are the unbounded run's with at most ``bound`` characters
            got.run_of = (run_slice(cls, "+"), bound)
    _RUN_SLICES.put(k, got)
    return got


_RUN_MAX_STATES = 4096


def _one_character(cls):
    """The byte automaton of one character of the class ``cls`` (start ``S`` ->
    UTF-8 states -> one accepting state ``F`` with no way out), or ``None`` when
    the class is refused or its automaton is not of that shape."""
    try:
        one = compile_regex(cls, name="run class", max_states=_RUN_MAX_STATES)
    except GrammarError:
        return None
    final = np.flatnonzero(one.accepting)
    if len(final) != 1 or final[0] == 0 or (np.asarray(one.trans[final[0]]) >= 0).any():
        return None
    return one


def _run_dfa(cls, bound):
    """The prefix automaton of ``cls+`` (``bound`` None) or ``cls{1,bound}``, made
    from the automaton of one character of ``cls``: its copies chained, ``F``
    of one copy the ``S`` of the next (``+``: ``F`` is ``S`` again).  One regex
    compile per class instead of one per variant (javascript.lark's Unicode
    identifier class: 2,345 states for ``{1,8}``); :func:`_run_dfa_by_regex`
    is the reference.  Only for a class :func:`run_slice` accepted."""
    one = _one_character(cls)
    trans = np.asarray(one.trans)
    f = int(np.flatnonzero(one.accepting)[0])
    inner = np.flatnonzero(np.arange(one.n_states) != f)      # S is inner[0] == 0
    m = len(inner)
    index = np.full(one.n_states, -1, dtype=np.int64)         # old state -> inner index, F -> m
    index[inner] = np.arange(m)
    index[f] = m
    local = np.where(trans[inner] >= 0, index[trans[inner]], -1)   # [m, 256], F as m
    copies = 1 if bound is None else bound
    rows = []
    for i in range(copies):
        nxt = 0 if bound is None else (i + 1) * m      # where F leads: S again, or the next copy
        rows.append(np.where(local == m, nxt, np.where(local >= 0, local + i * m, -1)))
    if bound is not None:
        rows.append(np.full((1, 256), -1))              # bound characters read: nothing follows
    table = np.vstack(rows).astype(np.int32)
    suffix = "+" if bound is None else f"{{1,{bound}}}"
    return prefix_dfa(ByteDFA(table, np.ones(len(table), dtype=np.bool_), pattern=cls + suffix, name="run"))


def _run_dfa_by_regex(cls, bound):
    """:func:`_run_dfa` by compiling the regex ``cls+`` / ``cls{1,bound}`` (its reference)."""
    suffix = "+" if bound is None else f"{{1,{bound}}}"
    try:
        return prefix_dfa(compile_regex(cls + suffix, name=f"run{suffix}", max_states=_RUN_MAX_STATES))
    except GrammarError:
        return None


def _restricted_terminal_slices(body, terminal):
    """The slices of a terminal ``(?!X\\Z)Y``: its own prefix slice and the runs of
    ``Y`` (its language is ``Y``'s minus ``X``: infinite when ``Y`` is and ``X``
    is a few strings, which is all the cycle heuristic needs; its repeats are
    ``Y``'s).  JSON Schema grammars spell "any other key" this way, a new
    pattern in every schema around the same string body: reading the long
    pattern with Python's parser and the cycle check were most of a new
    schema's slice work (0.5-0.6 ms of its 3.4 ms compile at p50).  ``Y``'s own
    entry is memoised like any terminal's."""
    base_prefix, base_runs = _terminal_slices(
        body, None, lambda: compile_regex(body, name="slice body", max_states=4096))
    if base_prefix is None or terminal.restricts_follow():
        return (None, ())
    return (Slice.lazy_prefix(terminal.dfa_maker(), terminal.first_bytes()), base_runs)


def _lookahead_body(pattern):
    """``Y`` when ``pattern`` is one or more leading negative lookaheads
    ``(?!...)`` followed by ``Y`` (without a group that wraps all of it), else
    None.  Positive ones (intersections) are left alone: ``Y`` minus a few
    strings is as infinite as ``Y``, but ``Y`` cut to a length is finite."""
    i, n = 0, len(pattern)
    while pattern.startswith("(?!", i):
        j = _group_end(pattern, i)
        if j is None:
            return None
        i = j
    if i == 0 or i == n:
        return None
    body = pattern[i:]
    if body.startswith("(?:") and _group_end(body, 0) == len(body):
        body = body[3:-1]
    return body


def _group_end(pattern, i):
    """The index just past the group opened at ``pattern[i] == "("``, or None."""
    depth = 0
    for j, c in unescaped_characters(pattern, i):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
    return None
