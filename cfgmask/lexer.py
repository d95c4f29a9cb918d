"""Terminal automata -> the lexer tables the runtime steps through.

Compile time builds one minimal byte DFA per terminal (``regex.py``), then one
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
        # class_tables[t]: int32 [states, classes] (-1 dead), what the runtime steps through
        self.class_tables = [np.ascontiguousarray(d.trans[:, rep], dtype=np.int32) for d in self.dfas]
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
