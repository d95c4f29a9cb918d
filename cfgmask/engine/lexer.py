"""Terminal automata -> the lexer tables the runtime steps through.

Compile time builds one minimal byte DFA per terminal (``cfgmask.automata``), then one
global partition of the 256 byte values into classes so that every table is
``[states, classes]`` instead of ``[states, 256]``.

The runtime needs, at every lexeme start, the *union* automaton of the
terminals allowed there.  Rather than building one DFA per allowed set, all of
them live in a single lazily built product automaton (``_fast/_lexer.pyx``,
which reads the per-terminal tables of :class:`LexerSpec`):

* a product state is the tuple of the still-live ``(terminal, state)`` pairs,
  so two allowed sets that reach the same pairs share a state (and the mask
  caches keyed by it);
* state 0 is the dead state (the empty tuple): it loops to itself and accepts
  nothing;
* a start state is the tuple ``((t, 0) for t in allowed)``; start states are
  never accepting because no terminal matches the empty string;
* each state carries the set of terminals that accept there, as a bitset of
  ``ceil(T/64)`` uint64 words;
* every non-dead state can still reach an accepting state, because each
  terminal DFA is trimmed.

The Cython ``LazyDFA`` owns the flat transition table and computes an entry
(in C) the first time it is needed, so each transition is computed once per
compiled grammar.

The per-terminal tables (:class:`LexerTables`) depend only on the terminal
patterns and the state limit, so :func:`lexer_tables` keeps them in memory
(the last 32 sets) and in the disk cache (``cfgmask.cache``, key: the
patterns, the limit, the Python and Unicode versions and a hash of this
module's and ``cfgmask.automata``'s source); tables that are cheaper to build than to
read back stay in memory only.  A hit skips regex compilation; what it
returns is exactly what a build returns (tests/test_cache.py).  Failures are
never cached.
"""

import bisect
import hashlib
import sys
import unicodedata

import numpy as np

from cfgmask import automata, cache
from cfgmask.errors import GrammarError
from cfgmask.automata import ByteDFA, CountedDFA, build_cost, byte_classes, compile_regex
from cfgmask.automata import kernels as automata_kernels

DEFAULT_MAX_TERMINAL_STATES = 20000

#: bump when the layout of the cached lexer tables changes
LEXER_TABLES_FORMAT = 2     # 2: the patterns by their sha256
_MEMORY_CACHE_SIZE = 32


class LexerSpec:
    """Per-terminal byte DFAs over one shared byte-class alphabet.

    The tables depend only on the terminal patterns and ``max_states``, so they
    are cached (in memory and on disk, see :func:`lexer_tables`): a cache hit
    skips regex compilation entirely.  ``source`` says where they came from
    (``"built"``, ``"disk"`` or ``"memory"``).

    Attributes: ``class_of_byte`` (uint8[256]), ``n_classes``, ``eos_class``
    (``n_classes``: "end of input" in follow restrictions), ``class_tables[t]``
    (int32 ``[states, classes]``, -1 dead), ``accepting[t][s]``, ``end_forbidden[t]`` (``{state:
    frozenset of classes}`` where a lexeme may not end), ``ignore_mask``,
    ``at_start_mask`` (terminals only the first lexeme may be), ``n_words``;
    ``dfas`` (the per-terminal :class:`~cfgmask.automata.ByteDFA`, rebuilt from
    the tables on first use).
    """

    def __init__(self, grammar, max_states=DEFAULT_MAX_TERMINAL_STATES, progress=None):
        self.grammar = grammar
        self.terminal_names = list(grammar.terminal_names)
        tab = lexer_tables(grammar.terminal_names, grammar.terminal_patterns, max_states, progress,
                           prebuilt=grammar.terminal_automata_prebuilt)
        self.source = tab.source
        self.n_terminals = len(self.terminal_names)
        self.n_words = max(1, (self.n_terminals + 63) // 64)
        self.class_of_byte = tab.class_of_byte
        self.n_classes = tab.n_classes
        self.class_tables = tab.class_tables
        self._accepting = None
        # Trailing lookahead (?!C) / (?=C): per terminal and accepting state, the byte
        # classes after which a lexeme may not end there (class n_classes = end of input).
        self.eos_class = self.n_classes
        self.end_forbidden = tab.end_forbidden
        self._tab = tab
        self._dfas = None
        self.ignore_mask = 0
        for t, ign in enumerate(grammar.terminal_is_ignore):
            if ign:
                self.ignore_mask |= 1 << t
        # terminals allowed only in the document's first lexeme start state
        self.at_start_mask = 0
        for t, first in enumerate(grammar.terminal_at_start):
            if first:
                self.at_start_mask |= 1 << t

    @property
    def accepting(self):
        if self._accepting is None:
            self._accepting = [a.tolist() for a in self._tab.accepting]
        return self._accepting

    def flat_tables(self):
        """What the runtime's ``LazyDFA`` reads, all terminals back to back:
        ``(trans int32 [states, classes], accepting uint8 [states], offsets (list,
        T + 1), forb int32 [states] (row of ``forb_bits`` or -1), forb_bits uint64)``;
        a row of ``forb_bits`` is ``(n_classes + 1 + 63) // 64`` words, bit
        ``n_classes`` meaning the end of input."""
        tab = self._tab
        return tab.trans, tab.accepting_flat, tab.offsets, tab.forb, tab.forb_bits

    def counter_tables(self):
        """The character counters of :class:`~cfgmask.automata.CountedDFA` terminals
        for ``LazyDFA``: ``(count_limit int32 [T] (-1: not counted), char_end uint8
        [states], min_chars int32 [states])`` over the flat states, or ``None``
        when no terminal counts."""
        a = self._tab.arrays
        if "count_limit" not in a:
            return None
        return a["count_limit"], a["char_end"], a["min_chars"]

    def counted(self, t):
        """Does terminal ``t`` count characters (its ``dfa(t)`` is a CountedDFA)?"""
        return self._tab.counted(t)

    def n_states(self, t):
        return int(self.class_tables[t].shape[0])

    @property
    def dfas(self):
        """The terminal DFAs (256 columns), rebuilt from the class tables."""
        return [self.dfa(t) for t in range(self.n_terminals)]

    def restricts_follow(self, t):
        """``dfa(t).has_follow_restrictions``, read off the flat arrays without
        building the automaton."""
        return self._tab.restricts_follow(t)

    def dfa_maker(self, t):
        """A function that builds ``dfa(t)`` (not counted, no follow restrictions)
        from copies of its class table and accepting states, holding nothing of
        this lexer: process-wide memos keep such makers for automata that are
        mostly never built (``slice_candidates``, prefix slices)."""
        table = np.array(self.class_tables[t])
        accepting = np.array(self._tab.accepting[t])
        class_of = self.class_of_byte.copy()
        name, pattern = self.terminal_names[t], self.grammar.terminal_patterns[t]
        return lambda: ByteDFA(table[:, class_of], accepting, pattern=pattern, name=name)

    def dfa(self, t):
        """Terminal ``t``'s DFA (256 columns), rebuilt from its class table on first
        use (a JSON Schema grammar has dozens of terminals, and the slice
        derivation usually needs none of them: ``slices._terminal_slices``)."""
        if self._dfas is None:
            self._dfas = [None] * self.n_terminals
        d = self._dfas[t]
        if d is None:
            d = self._dfas[t] = self._tab.dfa(t, self.terminal_names[t], self.grammar.terminal_patterns[t])
        return d


class LexerTables:
    """The cacheable part of a :class:`LexerSpec` (see :func:`lexer_tables`).

    Flat arrays over all terminals' states (``offsets[t]:offsets[t+1]`` are
    terminal ``t``'s): ``trans`` int32 ``[states, classes]``, ``accepting``
    uint8, ``eos_forbidden`` uint8 (may not end at end of input), and the
    bytes a lexeme may not end before: ``ff_bytes[ff_offsets[s]:ff_offsets[s+1]]``.
    """

    def __init__(self, arrays, source):
        self.arrays = arrays
        self.source = source
        self.class_of_byte = np.ascontiguousarray(arrays["class_of_byte"], dtype=np.uint8)
        self.n_classes = nc = int(arrays["trans"].shape[1])
        off = arrays["offsets"].tolist()
        self.offsets = off
        self.trans = trans = np.ascontiguousarray(arrays["trans"], dtype=np.int32)
        self.accepting_flat = acc = np.ascontiguousarray(arrays["accepting"], dtype=np.uint8)
        acc_bool = acc.view(np.bool_)
        self.class_tables = [trans[off[t]:off[t + 1]] for t in range(len(off) - 1)]
        self.accepting = [acc_bool[off[t]:off[t + 1]] for t in range(len(off) - 1)]
        self._follow = {}           # terminal -> (forbidden bytes or None, at end of input) per state
        # Only accepting states with a trailing lookahead need a Python look (none in
        # most grammars): a loop over every state cost more than the rest of this.
        ff_off = arrays["ff_offsets"]
        eos = arrays["eos_forbidden"]
        n_states = len(acc)
        restricted = np.flatnonzero(((ff_off[1:] > ff_off[:-1]) | (eos != 0)) & (acc != 0)).tolist()
        self.end_forbidden = [{} for _ in range(len(off) - 1)]   # {accepting state: frozenset of classes}
        # the same for the runtime: a row of forb_bits per restricted state (-1: none);
        # a row holds n_classes + 1 bits, the last one for the end of input
        fw = (nc + 1 + 63) // 64
        self.forb = np.full(max(1, n_states), -1, dtype=np.int32)
        self.forb_bits = np.zeros(max(1, len(restricted) * fw), dtype=np.uint64)
        if restricted:
            ff_bytes = arrays["ff_bytes"].tobytes()
            cls = self.class_of_byte.tolist()
            ff_o = ff_off.tolist()
            words = self.forb_bits.tolist()
            for row, s in enumerate(restricted):
                classes = {cls[b] for b in ff_bytes[ff_o[s]:ff_o[s + 1]]}
                if eos[s]:
                    classes.add(nc)
                t = bisect.bisect_right(off, s) - 1
                self.end_forbidden[t][s - off[t]] = frozenset(classes)
                self.forb[s] = row
                for c in classes:
                    words[row * fw + (c >> 6)] |= 1 << (c & 63)
            self.forb_bits = np.array(words, dtype=np.uint64)

    def follow(self, t):
        """Terminal ``t``'s ``(follow_forbidden, follow_forbidden_at_eos)`` lists (see ByteDFA)."""
        got = self._follow.get(t)
        if got is None:
            a = self.arrays
            lo, hi = self.offsets[t], self.offsets[t + 1]
            ff_o = a["ff_offsets"][lo:hi + 1].tolist()
            ff_bytes = a["ff_bytes"].tobytes()
            got = self._follow[t] = ([ff_bytes[ff_o[i]:ff_o[i + 1]] or None for i in range(hi - lo)],
                                     [bool(e) for e in a["eos_forbidden"][lo:hi].tolist()])
        return got

    def restricts_follow(self, t):
        """Does any state of terminal ``t`` restrict what may follow its lexeme?"""
        a = self.arrays
        lo, hi = self.offsets[t], self.offsets[t + 1]
        ff = a["ff_offsets"]
        return bool((ff[lo + 1:hi + 1] > ff[lo:hi]).any() or a["eos_forbidden"][lo:hi].any())

    def counted(self, t):
        """Does terminal ``t`` count characters (a :class:`~cfgmask.automata.CountedDFA`)?"""
        limits = self.arrays.get("count_limit")
        return limits is not None and int(limits[t]) >= 0

    def dfa(self, t, name, pattern):
        """Terminal ``t``'s :class:`~cfgmask.automata.ByteDFA` (256 columns)."""
        table = self.class_tables[t][:, self.class_of_byte]
        if self.counted(t):
            lo, hi = self.offsets[t], self.offsets[t + 1]
            return CountedDFA(table, self.accepting[t], self.arrays["char_end"][lo:hi],
                              int(self.arrays["count_limit"][t]), pattern=pattern, name=name)
        forb, at_eos = self.follow(t)
        return ByteDFA(table, self.accepting[t], pattern=pattern, name=name, follow_forbidden=forb,
                       follow_forbidden_at_eos=at_eos)


#: the lexer tables of the last terminal sets, as ``(meta, arrays)``
_memory = cache.BoundedMemo(_MEMORY_CACHE_SIZE)


def lexer_tables_key(patterns, max_states):
    """The cache key of the lexer tables of ``patterns`` (a dict)."""
    # the patterns by their digest (each length-prefixed, so the list is unambiguous):
    # the key is made canonical JSON, digested and written into the entry's header,
    # and sql.lark's patterns are 160 KB
    h = hashlib.sha256()
    for p in patterns:
        b = p.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little") + b)
    return {"format": LEXER_TABLES_FORMAT, "max_states": int(max_states),
            "n_patterns": len(patterns), "patterns_sha256": h.hexdigest(),
            # the regex parser and the Unicode tables come from this Python
            "python": list(sys.version_info[:2]), "unicode": unicodedata.unidata_version,
            "code": cache.code_fingerprint(*automata.CODE_MODULES, sys.modules[__name__])}


def lexer_tables(names, patterns, max_states=DEFAULT_MAX_TERMINAL_STATES, progress=None,
                 prebuilt=False):
    """The :class:`LexerTables` of the terminals ``patterns`` (``names`` for errors
    and progress).  ``prebuilt``: whoever made the patterns built their automata
    and builds them again in any process (a JSON Schema grammar), so the disk
    cache could only save assembling the tables, a fraction of a millisecond
    for most such grammars: less than the lookup, which almost always misses.
    Those tables stay in memory only.

    Looked up in memory (the last few grammars, by the patterns), then in the
    disk cache; built with :func:`~cfgmask.automata.compile_regex` on a miss, and
    stored on disk when a fresh process would take longer than
    ``cache.PERSIST_ABOVE_S`` to build them.  Failures
    (:class:`~cfgmask.errors.GrammarError`) are never cached, so a bad grammar
    raises the same error every time.
    """
    n = len(patterns)
    _, arrays, source = cache.cached_build(
        "lexer", None if prebuilt else (lambda: lexer_tables_key(patterns, max_states)),
        lambda: ({"n_terminals": n}, _build_tables(names, patterns, max_states, progress)),
        memo=_memory,
        # the rest of the disk key (code, Python and Unicode versions) is fixed in a process
        memory_key=(tuple(patterns), int(max_states)),
        validate=lambda meta, arrays: check_tables(arrays, n),
        # what a fresh process would pay: this build plus the automata it found memoised
        persist=lambda build_s: build_s + sum(build_cost(p) for p in patterns) > cache.PERSIST_ABOVE_S)
    return LexerTables(arrays, source)


_TABLE_ARRAYS = {"class_of_byte", "trans", "offsets", "accepting", "eos_forbidden", "ff_bytes",
                 "ff_offsets"}
_COUNTER_ARRAYS = {"count_limit", "char_end", "min_chars"}


def _is(a, dtype, ndim):
    return isinstance(a, np.ndarray) and a.dtype == dtype and a.ndim == ndim


def _flags_ok(a):
    """0/1 values only (uint8 flags read as booleans)."""
    return a.size == 0 or int(a.max()) <= 1


def check_tables(arrays, n_terminals):
    """Whether ``arrays`` (a disk-cache entry) are lexer tables :func:`_build_tables`
    could have made for ``n_terminals`` terminals: the invariants ``LazyDFA``
    (``_fast/_lexer.pyx``) indexes with unchecked, with ``S`` states in all and
    ``C`` byte classes:

    * exactly the arrays ``_build_tables`` makes (the three counter arrays all
      or none), each of its dtype and number of dimensions;
    * ``class_of_byte`` uint8[256], every value ``< C``; ``trans`` int32[S, C],
      ``1 <= C <= 256``;
    * ``offsets`` int32[T + 1]: 0 first, ``S`` last, strictly increasing (every
      terminal has a start state, which the runtime reads);
    * ``trans`` of terminal ``t`` (rows ``offsets[t]:offsets[t+1]``) holds
      terminal-local states: ``-1 <= v < offsets[t+1] - offsets[t]``;
    * ``accepting`` and ``eos_forbidden`` uint8[S] of 0/1; no start state
      accepts (lexemes are never empty);
    * ``ff_offsets`` int32[S + 1]: 0 first, ``len(ff_bytes)`` last, non-decreasing;
    * counters: ``count_limit`` int32[T] ``>= -1`` with ``(limit + 1) * states``
      below 2**31 (a counted state id is ``n * states + q``), ``char_end``
      uint8[S] of 0/1, ``min_chars`` int32[S] in ``0 .. 2**30``.
    """
    names = set(arrays)
    if names != _TABLE_ARRAYS and names != _TABLE_ARRAYS | _COUNTER_ARRAYS:
        return False
    T = int(n_terminals)
    cls, trans, off, acc = arrays["class_of_byte"], arrays["trans"], arrays["offsets"], arrays["accepting"]
    eos, ffo, ffb = arrays["eos_forbidden"], arrays["ff_offsets"], arrays["ff_bytes"]
    if not (_is(cls, np.uint8, 1) and _is(trans, np.int32, 2) and _is(off, np.int32, 1)
            and _is(acc, np.uint8, 1) and _is(eos, np.uint8, 1) and _is(ffo, np.int32, 1)
            and _is(ffb, np.uint8, 1)):
        return False
    S, C = trans.shape
    if not (cls.shape == (256,) and 1 <= C <= 256 and int(cls.max()) < C and off.shape == (T + 1,)
            and acc.shape == (S,) and eos.shape == (S,) and ffo.shape == (S + 1,)):
        return False
    if off[0] != 0 or off[-1] != S or (T and int(np.diff(off).min()) < 1):
        return False
    if not (_flags_ok(acc) and _flags_ok(eos) and not acc[off[:-1]].any()):
        return False
    if ffo[0] != 0 or ffo[-1] != len(ffb) or (S and int(np.diff(ffo).min()) < 0):
        return False
    if S:
        n_local = np.repeat(np.diff(off), np.diff(off))[:, None]   # states of each row's terminal
        if int(trans.min()) < -1 or not (trans < n_local).all():
            return False
    if "count_limit" in arrays:
        lim, ce, mc = arrays["count_limit"], arrays["char_end"], arrays["min_chars"]
        if not (_is(lim, np.int32, 1) and _is(ce, np.uint8, 1) and _is(mc, np.int32, 1)
                and lim.shape == (T,) and ce.shape == (S,) and mc.shape == (S,)):
            return False
        if T and (int(lim.min()) < -1 or ((lim.astype(np.int64) + 1) * np.diff(off) >= 2 ** 31).any()):
            return False
        if not _flags_ok(ce) or (S and (int(mc.min()) < 0 or int(mc.max()) > 2 ** 30)):
            return False
    return True


def _class_rows(dfas, rep):
    """Every terminal's table over the byte classes (columns ``rep``), stacked:
    int32 ``[total states, classes]``.  In C (``_fast/_minimal.pyx``,
    ``stacked_columns``) unless ``CFGMASK_PURE_AUTOMATA=1``: NumPy's way
    (:func:`_class_rows_python`, the reference) first copies every table whole
    into one 256-column stack, and that stack's fresh memory (10 MB for a big
    JSON schema's 371 terminals, 12 MB for one product automaton) cost 5-80 ms."""
    kernel = automata_kernels.compiled()
    if kernel is None:
        return _class_rows_python(dfas, rep)
    return kernel.stacked_columns([d.trans for d in dfas], rep)


def _class_rows_python(dfas, rep):
    """:func:`_class_rows` in NumPy, the reference."""
    return np.ascontiguousarray(np.concatenate([d.trans for d in dfas]).take(rep, axis=1), dtype=np.int32)


def _build_tables(names, patterns, max_states, progress):
    dfas = []
    for name, pattern in zip(names, patterns):
        if progress is not None:
            progress(f"terminal {name}")
        dfa = compile_regex(pattern, name=name, max_states=max_states, rename=False)
        if dfa.accepting[dfa.start]:
            raise GrammarError(
                f"terminal {name} matches the empty string (pattern {pattern!r}); lexemes are "
                f"never empty: make the terminal non-empty and mark its use optional in the rule",
                where=name, construct="empty terminal")
        dfas.append(dfa)
    class_of, n_classes = byte_classes(dfas) if dfas else (np.zeros(256, np.uint8), 1)
    class_of = np.ascontiguousarray(class_of, dtype=np.uint8)
    # classes are numbered by their first byte, so the first bytes are the representatives
    rep = np.unique(class_of, return_index=True)[1].astype(np.int64)
    offsets = np.zeros(len(dfas) + 1, dtype=np.int32)
    np.cumsum([d.n_states for d in dfas], out=offsets[1:])
    if dfas:
        trans = _class_rows(dfas, rep)
        accepting = np.concatenate([d.accepting for d in dfas]).astype(np.uint8)
    else:
        trans = np.zeros((0, n_classes), dtype=np.int32)
        accepting = np.zeros(0, dtype=np.uint8)
    n_states = int(offsets[-1])
    if any(d.has_follow_restrictions for d in dfas):
        ff = [f or b"" for d in dfas for f in d.follow_forbidden]
        ff_offsets = np.zeros(len(ff) + 1, dtype=np.int32)
        np.cumsum([len(f) for f in ff], out=ff_offsets[1:])
        eos = np.array([e for d in dfas for e in d.follow_forbidden_at_eos], dtype=np.uint8)
        ff_bytes = np.frombuffer(b"".join(ff), dtype=np.uint8).copy()
    else:   # no lookahead anywhere: the per-state Python lists above cost more than the rest
        ff_offsets = np.zeros(n_states + 1, dtype=np.int32)
        eos = np.zeros(n_states, dtype=np.uint8)
        ff_bytes = np.zeros(0, dtype=np.uint8)
    arrays = {"class_of_byte": class_of, "trans": np.ascontiguousarray(trans), "offsets": offsets,
              "accepting": accepting, "eos_forbidden": eos, "ff_bytes": ff_bytes,
              "ff_offsets": ff_offsets}
    if any(isinstance(d, CountedDFA) for d in dfas):
        # character counters (CountedDFA): the bound per terminal (-1: none), and per
        # base state whether entering it completes a character and the fewest
        # characters left to an accepting state
        arrays["count_limit"] = np.array([d.max_chars if isinstance(d, CountedDFA) else -1
                                          for d in dfas], dtype=np.int32)
        arrays["char_end"] = np.concatenate(
            [d.char_end if isinstance(d, CountedDFA) else np.zeros(d.n_states, np.uint8)
             for d in dfas]).astype(np.uint8)
        arrays["min_chars"] = np.concatenate(
            [d.min_chars if isinstance(d, CountedDFA) else np.zeros(d.n_states, np.int32)
             for d in dfas]).astype(np.int32)
    return arrays
