"""Parse tree -> Thompson NFA over *characters*, with one-byte lookahead moves.

:class:`NFA` turns a tree of :mod:`~cfgmask.automata.parse` into an automaton
whose moves are sets of code points (one move per character node, so a
class such as ``[^a]`` stays one move), empty moves, and lookahead moves that
put a constraint on the next byte.  It refuses, with
:mod:`~cfgmask.automata.refusals`, every construct a byte DFA cannot express
here (anchors, lookbehind, lookahead over more than one ASCII character,
backreferences, conditionals, atomic groups, possessive repeats) and NFAs
with more than ``limit`` states.

Invariants: state 0 is the entry of the first :meth:`NFA.new_state`; every
character set is a :mod:`~cfgmask.automata.unicode_tables` range tuple;
a constraint mask is an int bit set over the 256 bytes plus :data:`EOS_BIT`
(bits set: what may *not* come next), never :data:`FULL_MASK` on a move
that the subset construction keeps.
"""

import numpy as np

from cfgmask.automata import unicode_tables as ut
from cfgmask.automata.kernels import compiled
from cfgmask.automata.parse import (
    ANCHOR_NAMES, ANY, ASSERT, ASSERT_NOT, AT, ATOMIC_GROUP, BRANCH, CHAR_FLAGS, FLAG_ASCII,
    FLAG_IGNORECASE, GROUPREF, GROUPREF_EXISTS, IN, LITERAL, MAX_REPEAT, MAXREPEAT, MIN_REPEAT,
    NOT_LITERAL, POSSESSIVE_REPEAT, SUBPATTERN, TYPE_FLAGS, char_flags, char_ranges,
    combine_flags, one_char_ranges)
from cfgmask.automata.refusals import too_large, unsupported

__all__ = ["NFA", "CompiledNFA", "EOS_BIT", "ALL_BYTES", "FULL_MASK", "build_nfa", "mask_bytes"]

# A lookahead constraint on the next byte, as an int bit set: bit b (0..255)
# set = the next byte may not be b; bit EOS_BIT set = the end of input may
# not come next.  Constraints met one after the other combine by OR; a full
# mask can never be met.
EOS_BIT = 256
ALL_BYTES = (1 << 256) - 1
FULL_MASK = (1 << 257) - 1


_ONE_CHARACTER = (LITERAL, IN, NOT_LITERAL, ANY)


def _ranges_to_bits(ranges) -> int:
    bits = 0
    for lo, hi in ranges:
        bits |= ((1 << (hi - lo + 1)) - 1) << lo
    return bits


class NFA:
    """Thompson-style NFA over *characters* whose moves are character sets
    (tuples of code point ranges), empty moves, or lookahead moves.

    ``build(subpattern, flags, entry)`` adds the moves for ``subpattern``
    starting at ``entry`` and returns the state reached after it.  A
    lookahead move ``(target, mask)`` is an empty move that puts the
    constraint ``mask`` (see ``EOS_BIT``) on the next byte of the path:
    every lookahead body is one ASCII character, so the next byte (or the
    end of input) decides it.  The automaton is determinised and minimised
    over characters and only then spelled in UTF-8 (``expand_utf8``): a
    class such as ``[^a]`` is one move here instead of a dozen byte states.
    """

    def __init__(self, name, limit):
        self.name = name
        self.limit = limit
        self.empty_moves = []   # state -> [state]
        self.char_moves = []    # state -> [(ranges, state)]
        self.assert_moves = []  # state -> [(state, mask)]
        self.lookahead_sets = []  # the code point sets lookaheads test
        self.repeats = []       # (body, flags, max_count) of every repeat built, in walk order

    def new_state(self) -> int:
        if len(self.char_moves) >= self.limit:
            raise too_large(self.name, self.limit, "NFA")
        self.empty_moves.append([])
        self.char_moves.append([])
        self.assert_moves.append([])
        return len(self.char_moves) - 1

    def add_char_set(self, ranges, entry) -> int:
        exit_state = self.new_state()
        if ranges:
            self.char_moves[entry].append((ranges, exit_state))
        return exit_state

    def atoms(self):
        """Boundaries of the coarsest partition of the code points that every
        character set and lookahead set is a union of (and that splits ASCII
        from the rest): atom ``a`` is ``[bounds[a], bounds[a + 1])``."""
        cuts = {0, 0x80, ut.MAX_CODE_POINT + 1}
        seen = set()
        for moves in self.char_moves:
            for ranges, _ in moves:
                if ranges not in seen:
                    seen.add(ranges)
                    for lo, hi in ranges:
                        cuts.add(lo)
                        cuts.add(hi + 1)
        for ranges in self.lookahead_sets:
            for lo, hi in ranges:
                cuts.add(lo)
                cuts.add(hi + 1)
        return np.array(sorted(cuts), dtype=np.int64)

    def build(self, subpattern, flags, entry) -> int:
        state = entry
        cflags = char_flags(flags)
        # the node list itself: SubPattern's Python-level __getitem__ was a tenth of the build
        for op, av in subpattern.data:
            if op is LITERAL or op is IN or op is NOT_LITERAL or op is ANY:
                # one character, the commonest node: inline (a call less per node)
                state = self.add_char_set(char_ranges(op, tuple(av) if op is IN else av, cflags), state)
            else:
                state = self.build_item(op, av, flags, state)
        return state

    def build_item(self, op, av, flags, entry) -> int:
        name = self.name
        if op in (LITERAL, NOT_LITERAL, ANY):
            return self.add_char_set(char_ranges(op, av, char_flags(flags)), entry)
        if op is IN:
            return self.add_char_set(char_ranges(op, tuple(av), char_flags(flags)), entry)
        if op is SUBPATTERN:
            _group, add_flags, del_flags, body = av
            return self.build(body, combine_flags(flags, add_flags, del_flags), entry)
        if op is BRANCH:
            # every alternative starts at ``entry`` itself: no construction here
            # moves back into the state it starts from (a loop gets a state of its
            # own), so the alternatives cannot mix.  A start state per alternative
            # was a third of the states of JavaScript's keyword-trie identifiers.
            exit_state = self.new_state()
            for alternative in av[1]:
                self.empty_moves[self.build(alternative, flags, entry)].append(exit_state)
            return exit_state
        if op is MAX_REPEAT or op is MIN_REPEAT:
            # Lazy and greedy repeats accept the same strings under fullmatch.
            return self.build_repeat(*av, flags, entry)
        if op is AT:
            anchor = ANCHOR_NAMES.get(av, str(av))
            raise unsupported(name, f"anchor {anchor}",
                               "its truth depends on text around the lexeme, "
                               "which a terminal's automaton never sees")
        if op is ASSERT or op is ASSERT_NOT:
            return self.build_lookahead(op, av, flags, entry)
        if op is GROUPREF:
            raise unsupported(name, "backreference", "it does not describe a regular language")
        if op is GROUPREF_EXISTS:
            raise unsupported(name, "conditional group (?(id)yes|no)",
                               "it depends on which groups matched")
        if ATOMIC_GROUP is not None and op is ATOMIC_GROUP:
            raise unsupported(name, "atomic group (?>...)",
                               "it cuts backtracking, which changes the language")
        if POSSESSIVE_REPEAT is not None and op is POSSESSIVE_REPEAT:
            raise unsupported(name, "possessive repeat",
                               "it cuts backtracking, which changes the language")
        raise unsupported(name, f"regex construct {op}", "unknown to cfgmask")

    def build_lookahead(self, op, av, flags, entry) -> int:
        """``(?=C)`` / ``(?!C)`` for a set ``C`` of ASCII characters: an
        empty move constraining the next byte (see the class docstring)."""
        direction, body = av
        kind = "lookbehind" if direction < 0 else "lookahead"
        if op is ASSERT_NOT:
            kind = "negative " + kind
        if direction < 0:
            raise unsupported(self.name, kind,
                               "it depends on text before the lexeme, which a terminal's "
                               "automaton never sees")
        ranges = one_char_ranges(body, flags)
        if ranges is None:
            what = "an empty pattern" if not len(body) else "more than one character"
            raise unsupported(self.name, f"{kind} over {what}",
                               "only a lookahead over one character from a set of ASCII "
                               "characters, such as (?![a-z0-9_]), is compiled")
        if ranges and ranges[-1][1] > 0x7F:
            why = ("the character after the lexeme must be decided by one byte, so the "
                   "lookahead may only name ASCII characters")
            if flags & FLAG_IGNORECASE and not flags & FLAG_ASCII:
                why += ("; under IGNORECASE, Unicode case folding adds non-ASCII characters "
                        "(add the ASCII flag (?a) to fold within ASCII only)")
            raise unsupported(self.name, f"{kind} over non-ASCII characters", why)
        self.lookahead_sets.append(ranges)
        bits = _ranges_to_bits(ranges)
        # (?!C): the next byte is not in C.  (?=C): the next byte is in C, so
        # neither another byte (every non-ASCII lead byte included) nor the
        # end of input.
        mask = bits if op is ASSERT_NOT else FULL_MASK & ~bits
        exit_state = self.new_state()
        self.assert_moves[entry].append((exit_state, mask))
        return exit_state

    def build_repeat(self, min_count, max_count, body, flags, entry) -> int:
        self.repeats.append((body, flags, max_count))
        state = entry
        if max_count == MAXREPEAT:
            items = body.data
            if len(items) == 1 and items[0][0] in _ONE_CHARACTER:
                # c* / c+ of one character node: a state that loops on it (one
                # state a repeat fewer: sql.lark's identifiers have 313 of them)
                op, av = items[0]
                ranges = char_ranges(op, tuple(av) if op is IN else av, char_flags(flags))
                for _ in range(min_count - 1):
                    state = self.add_char_set(ranges, state)
                if min_count:        # the last copy's state loops
                    loop = self.add_char_set(ranges, state)
                else:
                    loop = self.new_state()
                    self.empty_moves[state].append(loop)
                if ranges:
                    self.char_moves[loop].append((ranges, loop))
                return loop
        if max_count == MAXREPEAT and min_count >= 1:
            # x{m,}: m - 1 copies, then one copy that loops back to its own start
            # (a new state, never ``entry``): m copies, not m + 1, which nested
            # "+" multiplied (JavaScript's regex-literal terminals)
            for _ in range(min_count - 1):
                state = self.build(body, flags, state)
            start = self.new_state()
            self.empty_moves[state].append(start)
            end = self.build(body, flags, start)
            exit_state = self.new_state()
            self.empty_moves[end].append(start)
            self.empty_moves[end].append(exit_state)
            return exit_state
        for _ in range(min_count):
            state = self.build(body, flags, state)
        if max_count == MAXREPEAT:
            loop = self.new_state()
            self.empty_moves[state].append(loop)
            self.empty_moves[self.build(body, flags, loop)].append(loop)
            return loop
        if max_count == min_count:
            return state
        # x{0,n} as x?x?...x? where skipping one copy skips all the rest, so
        # the copies do not combine into a quadratic number of paths.
        exit_state = self.new_state()
        for _ in range(max_count - min_count):
            self.empty_moves[state].append(exit_state)
            state = self.build(body, flags, state)
        self.empty_moves[state].append(exit_state)
        return exit_state


_KERNEL_OPS = (LITERAL, IN, NOT_LITERAL, ANY, SUBPATTERN, BRANCH, MAX_REPEAT, MIN_REPEAT,
               MAXREPEAT)


def build_nfa(tree, name, limit):
    """``(nfa, start, final)``: the :class:`NFA` of parse tree ``tree`` from a
    first state ``start`` (0) to ``final``.

    The compiled builder (:func:`cfgmask._fast._thompson.thompson`) makes
    the same states and moves in the same order as :meth:`NFA.build`, the
    reference, for every node but lookaheads and the refused constructs, and
    keeps them in C (a :class:`CompiledNFA`); a tree holding one of those,
    nesting deeper than it goes, or needing ``limit`` states is built here,
    which answers or refuses.  Built in Python, the NFA was the largest
    Python step of a terminal's compile (a ``new_state`` call and three lists
    per state; the ``email`` format has 8,636 states): ``run_ttfm --sections
    regex`` gave sql.lark's terminals 32.7 -> 22.4 ms with the compiled
    builder, javascript.lark's 69.7 -> 52.9 ms.
    """
    kernel = compiled()
    if kernel is not None:
        out = kernel.thompson(tree, tree.state.flags, limit, _KERNEL_OPS, char_ranges,
                              CHAR_FLAGS, TYPE_FLAGS, ut.MAX_CODE_POINT)
        if out is not None:
            flat, final, bounds = out
            return CompiledNFA(name, limit, flat, bounds), 0, final
    nfa = NFA(name, limit)
    start = nfa.new_state()
    return nfa, start, nfa.build(tree, tree.state.flags, start)


class CompiledNFA(NFA):
    """An :class:`NFA` the compiled builder made, without lookaheads: ``flat``
    (its moves in C, which ``determinize`` hands to the compiled subset
    construction) and ``repeats`` as the reference makes them; the per-state
    move lists are made on first use (the Python subset construction, tests)."""

    def __init__(self, name, limit, flat, bounds):
        self.name = name
        self.limit = limit
        self.flat = flat
        self.repeats = flat.repeats
        self.lookahead_sets = []
        self._bounds = bounds
        self._lists = None

    def _moves(self):
        if self._lists is None:
            empty, chars = self.flat.lists()
            self._lists = (empty, chars, [[] for _ in range(len(empty))])
        return self._lists

    def atoms(self):
        """:meth:`NFA.atoms`, as the compiled builder computed them."""
        return self._bounds

    empty_moves = property(lambda self: self._moves()[0])
    char_moves = property(lambda self: self._moves()[1])
    assert_moves = property(lambda self: self._moves()[2])

    def new_state(self):
        raise TypeError("a compiled NFA is complete")


def mask_bytes(mask):
    """The bytes a constraint mask forbids, sorted, or ``None`` for none."""
    mask &= ALL_BYTES
    return bytes(b for b in range(256) if mask >> b & 1) if mask else None

