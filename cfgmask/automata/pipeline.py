"""The regex pipeline: Python regex -> exact, minimal byte-level DFA.

``compile_regex(pattern, name)`` returns a :class:`ByteDFA` with these
invariants (the rest of cfgmask relies on every one of them):

* **UTF-8 exact**: it accepts exactly ``{s.encode("utf-8") :
  re.fullmatch(pattern, s)}``, flags included.  No overlong form, surrogate
  (U+D800..U+DFFF), code point above U+10FFFF, stray continuation byte or
  truncated sequence is ever accepted.
* **follow restrictions** (only from a lookahead at the end of a match, see
  below): ``accepting[s]`` means a lexeme *may* end in ``s``;
  ``follow_forbidden[s]`` (``None`` or sorted ``bytes``) lists the bytes
  before which it may not, and ``follow_forbidden_at_eos[s]`` says it may
  not end at end of input.  Exactly: ``s`` followed by the character ``c``
  is accepted (``matches_followed_by(s.encode(), c.encode()[0])``) iff
  ``re.fullmatch("(?:" + pattern + ")" + re.escape(c), s + c)``, and with
  nothing after it (``matches``) iff ``re.fullmatch(pattern, s)``.
  Non-accepting states have ``None`` / ``False``; an accepting state always
  has some byte or the end of input left after which it may end.
* **start = 0**, ``trans[s, b] == -1`` means dead; there is no explicit dead
  state.
* **trimmed**: every state is reachable from 0 and can reach an accepting
  state, so "not -1" means "still a prefix of some accepted string" (with a
  byte or the end of input after it that its restriction allows; and that
  string is valid UTF-8).  The one exception is a pattern that matches
  nothing: one non-accepting state with no transitions.
* **minimal**: no two states accept the same language under the same
  follow restrictions (states with different ``(accepting,
  follow_forbidden, follow_forbidden_at_eos)`` are never merged);
  deterministic; states numbered breadth-first from 0 (bytes visited in
  increasing order).

Pipeline (one module per stage): Python's own parser (``re._parser``, so
syntax and flags mean what they mean to ``re``;
:mod:`~cfgmask.automata.parse`) -> NFA over *characters*
(:mod:`~cfgmask.automata.nfa`) (each character node one move labelled with
code point ranges) -> subset construction over the code point *atoms* (the
coarsest partition that every class and lookahead set is a union of;
:mod:`~cfgmask.automata.determinize`) -> trimming and minimisation (Moore
refinement, vectorised, then Hopcroft), which folds every state that cannot
reach acceptance into one dead block that is dropped
(:mod:`~cfgmask.automata.minimize`) -> UTF-8 spelling (lead-byte edges into
continuation states shared per "bytes left, target of each possible rest";
:mod:`~cfgmask.automata.utf8`) -> breadth-first renumbering by byte. Results
are memoised by pattern text (:mod:`~cfgmask.automata.memo`). Working on
characters keeps a class such as ``[^a]`` one move instead of a dozen byte
states (SQL's 19 KB IDENT terminal: 1,071 subsets instead of 6,069); because
UTF-8 is a prefix code the spelled automaton is still minimal, so the result
is exactly the canonical minimal DFA a byte-level construction gives.

Supported: literals, classes (ranges, negation, ``\\d \\w \\s \\D \\W \\S``),
``.`` with and without DOTALL, IGNORECASE (exactly Python's folding, ASCII
under ``a``), alternation, all groups, greedy/lazy repeats, inline and scoped
flags, and single-character lookahead ``(?!C)`` / ``(?=C)`` where ``C`` is a
set of ASCII characters (a literal, a class, an alternation of those, after
case folding): anywhere in the pattern, in alternations and repeats too.

Lookahead semantics.  Since ``C`` is ASCII, the character after the
lookahead is in ``C`` iff its first byte is.  A lookahead followed by more of
the match constrains the next byte consumed.  One at the end of a match
constrains the byte after the lexeme: ``(?!C)`` forbids the bytes of ``C``
(the end of input is fine), ``(?=C)`` forbids every other byte (every
non-ASCII lead byte too) and the end of input.  Constraints met in a row
combine (all must hold).  Several ways to reach one DFA state combine the
other way: a lexeme may end before a byte when *some* way allows it, so
``follow_forbidden`` is the intersection over the ways (``a(?!b)|a`` has no
restriction).  In the subset construction a DFA state is a set of
(NFA state, pending constraint) configurations; see
:func:`~cfgmask.automata.determinize.determinize`.

Refused with :class:`GrammarError`: anchors (``^ $ \\A \\Z \\b \\B``: their
meaning depends on text outside the lexeme), lookbehind, lookahead over
anything but one character (``terminal X: negative lookahead over more than
one character is not supported (...)``) or over non-ASCII characters
(including ``\\d``/``\\w`` without the ``a`` flag, ``.``, negated classes, and
IGNORECASE when folding adds a non-ASCII character such as the Kelvin sign),
backreferences, conditionals, atomic groups and possessive repeats, and
automata larger than ``max_states``.
"""

import re
import time

import numpy as np

from cfgmask.automata.determinize import determinize
from cfgmask.automata.dfa import ByteDFA
from cfgmask.automata.memo import memoise, memoised_dfa
from cfgmask.automata.minimize import minimize_and_trim, renumber_bfs
from cfgmask.automata.nfa import EOS_BIT, build_nfa, mask_bytes
from cfgmask.automata.parse import (FLAG_IGNORECASE, IN, LITERAL, MAXREPEAT, RANGE, REPEATS_SEEN,
                                    parsed_pattern, repeat_class)
from cfgmask.automata.refusals import too_deep
from cfgmask.automata.utf8 import expand_utf8
from cfgmask.errors import GrammarError

__all__ = ["DEFAULT_MAX_STATES", "compile_regex", "regex_to_dfa"]

DEFAULT_MAX_STATES = 20000
# NFA states allowed per allowed DFA state: a bounded repeat of a big class
# (``\w{1,50}``) needs several NFA states per DFA state, more is a blow-up.
_NFA_STATES_PER_DFA_STATE = 8


def compile_regex(pattern: str, name: str = "?", max_states: int = DEFAULT_MAX_STATES, *,
                  rename: bool = True) -> ByteDFA:
    """Compile a Python regex to its exact minimal byte DFA (see module doc).

    Raises :class:`GrammarError` naming ``name`` and the construct when the
    pattern uses something a DFA cannot express here, or when the automaton
    would need more than ``max_states`` states.  Results are memoised by
    pattern text (see :func:`~cfgmask.automata.memo.remember_dfa`); a memoised automaton comes back
    as a copy carrying ``name`` unless ``rename`` is False (a caller that
    only reads its tables and names the terminal in its own messages).
    """
    cached = memoised_dfa(pattern, name, max_states, rename)
    if cached is not None:
        return cached
    t0 = time.perf_counter()
    dfa = regex_to_dfa(pattern, name, max_states)
    dfa.trans.flags.writeable = False      # shared between grammars from now on
    dfa.accepting.flags.writeable = False
    memoise(pattern, dfa, time.perf_counter() - t0)
    return dfa


def regex_to_dfa(pattern: str, name: str = "?", max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
    """:func:`compile_regex` without the memo: the pipeline run on ``pattern``
    (a parse tree :func:`~cfgmask.automata.parse.parse_pattern` kept is used);
    the tables come back writable."""
    try:
        parsed = parsed_pattern(pattern)
    except (re.error, OverflowError) as exc:
        raise GrammarError(f"terminal {name}: regex syntax error in {pattern!r} ({exc})",
                           where=name, construct="regex syntax") from exc
    except RecursionError as exc:
        raise too_deep(name) from exc
    chain = literal_dfa(parsed, pattern, name, max_states)
    if chain is not None:
        return chain
    try:
        nfa, start, final = build_nfa(parsed, name, _NFA_STATES_PER_DFA_STATE * max_states)
        bounds = nfa.atoms()
    except RecursionError as exc:  # the AST walk recurses once per nesting level
        raise too_deep(name) from exc
    _record_repeats(pattern, nfa.repeats)
    # determinise and minimise over characters, then spell them in UTF-8
    trans, accepting, follow = determinize(nfa, start, final, max_states, name, bounds)
    trans, accepting, follow = minimize_and_trim(trans, accepting, follow)
    n_chars = trans.shape[0]
    trans = expand_utf8(trans, bounds, max_states, name)
    extra = trans.shape[0] - n_chars
    accepting = np.concatenate([accepting, np.zeros(extra, dtype=bool)])
    trans, accepting, follow = renumber_bfs(trans, accepting, list(follow) + [0] * extra)
    return ByteDFA(trans, accepting, pattern=pattern, name=name,
                   follow_forbidden=[mask_bytes(mask) for mask in follow],
                   follow_forbidden_at_eos=[bool(mask >> EOS_BIT & 1) for mask in follow])



def literal_dfa(parsed, pattern, name, max_states):
    """The automaton of a pattern that is a chain of characters (a keyword, a
    punctuation mark: most terminals of most grammars), spelled directly:
    one state per byte, a literal character's UTF-8 bytes one after the
    other and an ASCII class (``[Ww]``, ``(?:e|E)``, ``[a-c]``: a
    case-insensitive keyword spelled out) one step on any of its bytes.  Every
    state has its own distance to the end, so this chain is the minimal
    automaton numbered breadth-first: exactly what the pipeline gives
    (tests/test_regex.py compares them).  ``None`` for anything else,
    IGNORECASE included.  A literal's pipeline run was ~50 us, most of
    json.lark's regex time; a spelled-out keyword's 35-45 us, 138 times in
    ligurio's sqlite.lark."""
    items = parsed.data
    if not items or parsed.state.flags & FLAG_IGNORECASE:
        return None
    steps = []      # the bytes of each step of the chain
    for op, av in items:
        if op is LITERAL:
            if 0xD800 <= av <= 0xDFFF:
                return None
            steps.extend((b,) for b in chr(av).encode("utf-8"))
        elif op is IN:
            step = []
            for item_op, item_av in av:
                if item_op is LITERAL and item_av < 0x80:
                    step.append(item_av)
                elif item_op is RANGE and item_av[1] < 0x80:
                    step.extend(range(item_av[0], item_av[1] + 1))
                else:       # NEGATE, a category, a character beyond ASCII
                    return None
            steps.append(step)
        else:
            return None
    n = len(steps)
    if n + 1 > max_states:
        return None
    trans = np.full((n + 1, 256), -1, dtype=np.int32)
    for i, step in enumerate(steps):
        trans[i, step] = i + 1
    accepting = np.zeros(n + 1, dtype=bool)
    accepting[n] = True
    return ByteDFA(trans, accepting, pattern=pattern, name=name)


def _record_repeats(pattern, repeats):
    """Keep what :func:`~cfgmask.automata.parse.repeat_classes` answers for
    ``pattern``, from the repeats its NFA build met (in the order of the
    tree walk; a body built several times repeats its inner repeats, which
    the slices drop as they drop any repeated class)."""
    class_ranges, out = {}, []
    for body, flags, hi in repeats:
        if hi == 1:
            continue
        ranges, _inner = repeat_class(body, flags, hi, class_ranges)
        if ranges:
            out.append((tuple(ranges), None if hi == MAXREPEAT else int(hi)))
    REPEATS_SEEN.put(pattern, tuple(out))
