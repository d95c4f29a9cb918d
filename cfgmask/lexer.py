"""Terminal automata -> the lexer tables the runtime steps through.

Compile time builds one minimal byte DFA per terminal (``regex.py``), then one
global partition of the 256 byte values into classes so that every table is
``[states, classes]`` instead of ``[states, 256]``.

The runtime needs, at every lexeme start, the *union* automaton of the
terminals allowed there.  Rather than building one DFA per allowed set, all of
them live in a single lazily built product automaton (:class:`UnionBuilder`):

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

The Cython ``LazyDFA`` (``_fast/_lexer.pyx``) owns the flat transition table
and calls :meth:`UnionBuilder.step` / :meth:`UnionBuilder.start` only when an
entry is still unknown, so each transition is computed once per compiled
grammar.
"""

import numpy as np

from .errors import GrammarError
from .regex import byte_classes, compile_regex

DEFAULT_MAX_TERMINAL_STATES = 20000


class LexerSpec:
    """Per-terminal byte DFAs over one shared byte-class alphabet."""

    def __init__(self, grammar, max_states=DEFAULT_MAX_TERMINAL_STATES, progress=None):
        self.grammar = grammar
        self.dfas = []
        for t, (name, pattern) in enumerate(zip(grammar.terminal_names, grammar.terminal_patterns)):
            if progress is not None:
                progress(f"terminal {name}")
            dfa = compile_regex(pattern, name=name, max_states=max_states)
            if dfa.accepting[dfa.start]:
                raise GrammarError(
                    f"terminal {name} matches the empty string (pattern {pattern!r}); lexemes are "
                    f"never empty: make the terminal non-empty and mark its use optional in the rule",
                    where=name, construct="empty terminal")
            self.dfas.append(dfa)
        self.n_terminals = len(self.dfas)
        self.n_words = max(1, (self.n_terminals + 63) // 64)
        cls, n = byte_classes(self.dfas) if self.dfas else (np.zeros(256, np.uint8), 1)
        self.class_of_byte = np.ascontiguousarray(cls, dtype=np.uint8)
        self.n_classes = int(n)
        rep = np.zeros(self.n_classes, dtype=np.int64)
        for b in range(255, -1, -1):
            rep[self.class_of_byte[b]] = b
        # class_tables[t]: int32 [states, classes] (-1 dead), the flat form;
        # tables[t][s][c]: the same as nested lists, which the builder indexes one at a time.
        self.class_tables = [np.ascontiguousarray(d.trans[:, rep], dtype=np.int32) for d in self.dfas]
        self.tables = [t.tolist() for t in self.class_tables]
        self.accepting = [d.accepting.tolist() for d in self.dfas]
        # Trailing lookahead (?!C) / (?=C): per terminal and accepting state, the byte
        # classes after which a lexeme may not end there (class n_classes = end of input).
        self.eos_class = self.n_classes
        self.end_forbidden = [_end_forbidden(d, self.class_of_byte, self.n_classes) for d in self.dfas]
        self.ignore_mask = 0
        for t, ign in enumerate(grammar.terminal_is_ignore):
            if ign:
                self.ignore_mask |= 1 << t

    def n_states(self, t):
        return int(self.dfas[t].n_states)


def _end_forbidden(dfa, class_of_byte, n_classes):
    """``{state: frozenset of classes}`` for accepting states with a follow restriction."""
    forbidden = getattr(dfa, "follow_forbidden", None)
    at_eos = getattr(dfa, "follow_forbidden_at_eos", None)
    out = {}
    for s in range(dfa.n_states):
        classes = set()
        if forbidden is not None and forbidden[s]:
            classes.update(int(class_of_byte[b]) for b in forbidden[s])
        if at_eos is not None and at_eos[s]:
            classes.add(n_classes)
        if classes and dfa.accepting[s]:
            out[s] = frozenset(classes)
    return out


class UnionBuilder:
    """The Python half of the lazy union automaton (see module docstring)."""

    def __init__(self, spec, max_states=200000):
        self.spec = spec
        self.max_states = max_states
        self.keys = [()]
        self.ids = {(): 0}
        self.accept = [0]
        self.restricted = [False]

    def _intern(self, key):
        sid = self.ids.get(key)
        if sid is None:
            sid = len(self.keys)
            if sid >= self.max_states:
                from .errors import BudgetExceeded
                raise BudgetExceeded(f"lexer: more than {self.max_states} union-automaton states")
            self.ids[key] = sid
            self.keys.append(key)
            acc = 0
            restricted = False
            acc_tab = self.spec.accepting
            for i in range(len(key) & 1, len(key), 2):
                t, st = key[i], key[i + 1]
                if acc_tab[t][st]:
                    acc |= 1 << t
                    restricted = restricted or st in self.spec.end_forbidden[t]
            self.accept.append(acc)
            # an "ended" state (odd-length key, see end()) is never restricted again
            self.restricted.append(restricted and not (len(key) & 1))
        return sid

    def start(self, allowed):
        """Start state for the allowed-terminal set ``allowed`` (an int bitset)."""
        key = []
        t = 0
        while allowed:
            if allowed & 1:
                key += (t, 0)
            allowed >>= 1
            t += 1
        return self._intern(tuple(key))

    def end(self, state, cls):
        """The state whose accepting terminals are those of ``state`` that may end
        before a byte of class ``cls`` (``spec.eos_class``: end of input).

        Only called for restricted states (a trailing lookahead is involved).
        The result has an odd-length key ``(-1, t, s, ...)``: it is used only
        to scan the lexeme (and as the row-reuse key), never stepped.
        """
        key = self.keys[state]
        forb = self.spec.end_forbidden
        acc_tab = self.spec.accepting
        out = [-1]
        for i in range(0, len(key), 2):
            t, st = key[i], key[i + 1]
            if acc_tab[t][st] and cls not in forb[t].get(st, ()):
                out += (t, st)
        return self._intern(tuple(out)) if len(out) > 1 else 0

    def step(self, state, cls):
        key = self.keys[state]
        if len(key) & 1:
            return 0
        tables = self.spec.tables
        out = []
        for i in range(0, len(key), 2):
            t = key[i]
            nxt = tables[t][key[i + 1]][cls]
            if nxt >= 0:
                out += (t, nxt)
        return self._intern(tuple(out))

    def accept_words(self, state):
        """The accepting-terminal bitset of ``state`` as ``n_words`` uint64 values."""
        acc = self.accept[state]
        return [(acc >> (64 * w)) & 0xFFFFFFFFFFFFFFFF for w in range(self.spec.n_words)]

    def describe(self, state):
        key = self.keys[state]
        names = self.spec.grammar.terminal_names
        return "{" + ", ".join(f"{names[key[i]]}@{key[i + 1]}" for i in range(len(key) & 1, len(key), 2)) + "}"
