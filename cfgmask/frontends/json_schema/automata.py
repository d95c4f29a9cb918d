"""Byte automata of JSON texts the regex pipeline does not build (fast), or cannot
(set operations), on top of :mod:`cfgmask.automata`.

Every function returns a :class:`~cfgmask.automata.ByteDFA` with the invariants
the lexer needs: start state 0, ``-1`` = dead, trimmed (every state can still
reach an accepting state), no follow restrictions.  They are not always
minimal; minimality only saves union-automaton states at run time.

Each automaton is registered with :func:`cfgmask.automata.remember_dfa` under a
pattern text that is an *exact* Python regex for its language, so a
``Grammar`` stays self-describing:

* literal sets and length-bounded strings: plain regexes that
  ``compile_regex`` could also build (only slower), memoised;
* intersections and differences (:mod:`cfgmask.automata.setops`):
  ``(?=(?:A)\\Z)(?:B)`` and ``(?!(?:A)\\Z)(?:B)``, which Python's ``re``
  reads exactly but the byte pipeline refuses (general lookahead), so these
  are pinned for as long as the grammar that uses them lives;
* digit automata for ``multipleOf``: no compact regex exists, the pattern is
  a comment naming the language followed by ``(?!)`` (the empty language), so
  that a lost automaton fails closed.

The generic operations (:func:`product`, :func:`union`, :func:`intersect_all`,
:func:`subtract`) are :mod:`cfgmask.automata.setops`'s, with its refusals
turned into this front end's :class:`~.errors.Unsupported`.  Why the direct
constructions are exact is stated next to each one.
"""

import functools
import json
import re
from functools import lru_cache

import numpy as np

from cfgmask.automata import setops
from cfgmask.automata import (ByteDFA, CountedDFA, compile_regex, progress, remember_dfa)
from cfgmask.automata.setops import (empty_dfa, find_dfa, is_empty, keep_states, live_states,
                                     register_dfa, trimmed_dfa)
from cfgmask.cache import BoundedMemo
from cfgmask.frontends.json_schema import strings as S
from cfgmask.frontends.json_schema.errors import Unsupported

__all__ = ["MAX_STATES", "bounded_string_dfa", "counted_string_dfa", "decimal_multiple_dfa",
           "empty_dfa", "integer_multiple_dfa", "intersect_all", "is_empty", "json_char_dfa",
           "zero_fraction_dfa",
           "literal_set_dfa", "min_length_string_dfa", "product", "product_table", "subtract",
           "union"]

_QUOTE = 0x22
# the lexer's default per-terminal limit (compiler.Limits.max_terminal_states)
MAX_STATES = setops.PRODUCT_MAX_STATES


def _refusals_unsupported(operation):
    """``operation`` with :mod:`cfgmask.automata.setops`' refusals raised as
    :class:`Unsupported` (the keyword that made them, and why)."""
    @functools.wraps(operation)
    def run(*args, **kwargs):
        try:
            return operation(*args, **kwargs)
        except setops.CountedOperand:
            raise Unsupported("maxLength", "a counted maxLength cannot be combined with further "
                              "constraints") from None
        except setops.ProductTooLarge as e:
            raise Unsupported("string", f"the automaton of the combined constraints would have "
                              f"more than {e.limit} states") from None
    return run


product = _refusals_unsupported(setops.product)
product_table = _refusals_unsupported(setops.product_table)
union = _refusals_unsupported(setops.union)
intersect_all = _refusals_unsupported(setops.intersect_all)
subtract = _refusals_unsupported(setops.subtract)


# ------------------------------------------------- JSON string constructions

_G = {}


def json_char_dfa(canonical=False):
    """The DFA of one JSON string character (``strings.JSON_CHAR``) and its final state.

    Minimal and single-character, so it has exactly one accepting state and
    that state has no transitions; the constructions below loop it back to
    the start to read the next character.
    """
    if canonical not in _G:
        g = compile_regex(S.json_char(canonical), name="JSON_CHAR")
        finals = np.flatnonzero(g.accepting)
        assert len(finals) == 1 and (g.trans[finals[0]] < 0).all(), "JSON_CHAR is not single-character"
        _G[canonical] = (g.trans, int(finals[0]))
    return _G[canonical]


def bounded_string_dfa(lo, hi, quoted=True, canonical=False):
    """JSON strings (quotes included) whose value has ``lo`` to ``hi`` characters.

    Layered copy of the one-character automaton: layer ``i`` = ``i``
    characters read.  Exact because the character automaton reads exactly
    one decoded character per pass (see ``strings.chars_text``).
    Registered under ``"(?:C){lo,hi}"``; ``quoted=False``: the string body
    only (chunks of long strings), ``(?:C){lo,hi}``.
    """
    C = S.json_char(canonical)
    text = f'"{C}{{{lo},{hi}}}"' if quoted else f'{C}{{{lo},{hi}}}'
    cached = find_dfa(text)
    if cached is not None:
        return cached, text
    gtrans, gfinal = json_char_dfa(canonical)
    dfa = _layers(lo, hi, quoted, False, text, gtrans, gfinal)
    remember_dfa(text, dfa)
    return dfa, text


def _layers(lo, hi, quoted, loop_last, text, gtrans, gfinal):
    """The layered automaton of :func:`bounded_string_dfa` (``loop_last``:
    :func:`min_length_string_dfa`'s, ``lo = hi``), built trimmed.

    Layer ``i`` is the one-character automaton without its final state (a
    character's last byte goes to the next layer's start instead, so that
    state is never entered), ``i`` characters read; the last layer is its
    start state alone (a character begun there could not end: it would be
    one too many), or with ``loop_last`` the whole layer again, a character
    ending back at its start.  Quoted: state 0 before the opening quote, 1
    after the closing one, allowed from layers ``lo`` to ``hi``.  These are
    exactly the live states, in the order :func:`_layers_trimmed` keeps
    them from the full construction (its reference; tests/test_json_schema.py
    compares the two), without its two whole-table passes: a
    ``maxLength: 96`` string was 12.6 ms, three quarters of it trimming."""
    k = gtrans.shape[0]
    if not 0 <= lo <= hi or gfinal == 0 or (gtrans == 0).any():
        return _layers_trimmed(lo, hi, quoted, loop_last, text, gtrans, gfinal)
    keep = np.flatnonzero(np.arange(k) != gfinal)              # a layer's rows: every state but the final
    new_of = np.full(k, -1, np.int64)
    new_of[keep] = np.arange(k - 1)
    row = gtrans[keep]                                          # [k - 1, 256]
    ends = row == gfinal                                        # the character's last byte
    rel = new_of[np.maximum(row, 0)].astype(np.int32)          # targets within the layer
    dead = row < 0
    w = k - 1
    off = 2 if quoted else 0
    full = hi + 1 if loop_last else hi                          # layers with every row
    n = off + full * w + (0 if loop_last else 1)
    bases = (off + w * np.arange(full)).astype(np.int32)
    nxt = bases + w                                             # the next layer's start
    if loop_last:
        nxt[-1] = bases[-1]
    trans = np.empty((n, 256), np.int32)
    # written in place: temporaries the size of the table were most of the time
    body = trans[off:off + full * w].reshape(full, w, 256)
    np.add(rel[None], bases[:, None, None], out=body)
    np.copyto(body, -1, where=dead[None])
    np.copyto(body, nxt[:, None, None], where=ends[None])
    accepting = np.zeros(n, bool)
    if not loop_last:
        trans[n - 1] = -1                                       # the last layer's start alone
    starts = np.append(bases, n - 1) if not loop_last else bases
    allowed = starts[lo:]                                       # layers lo..hi may end the string
    if quoted:
        trans[0:2] = -1
        trans[0, _QUOTE] = off
        trans[allowed, _QUOTE] = 1
        accepting[1] = True
    else:
        accepting[allowed] = True
    return ByteDFA(trans, accepting, pattern=text)


def _layers_trimmed(lo, hi, quoted, loop_last, text, gtrans, gfinal):
    """:func:`_layers` by building every layer whole and trimming the dead
    states (the final state's copies, the characters begun in the last
    layer) with the generic trim: its reference."""
    k = gtrans.shape[0]
    off = 2 if quoted else 0
    n = off + (hi + 1) * k
    trans = np.full((n, 256), -1, np.int32)
    accepting = np.zeros(n, bool)
    if quoted:
        trans[0, _QUOTE] = 2
        accepting[1] = True
    for i in range(hi + 1):
        base = off + i * k
        layer = np.where(gtrans >= 0, gtrans + base, -1)
        nxt = off + (i + 1) * k if i < hi else (base if loop_last else -1)
        layer = np.where(gtrans == gfinal, nxt, layer)
        trans[base:base + k] = layer
        if i >= lo:
            if quoted:
                trans[base, _QUOTE] = 1
            else:
                accepting[base] = True
    return trimmed_dfa(trans, accepting, text, minimize=False)


def min_length_string_dfa(lo, canonical=False):
    """JSON strings (quotes included) whose value has at least ``lo`` characters.

    The layers of :func:`bounded_string_dfa` up to ``lo``, the last one
    looping on itself: ``2 + (lo + 1) * k`` states, built directly (the
    regex ``"C{lo,}"`` would expand ``lo`` NFA copies first).
    """
    C = S.json_char(canonical)
    text = f'"{C}{{{lo},}}"'
    cached = find_dfa(text)
    if cached is not None:
        return cached, text
    gtrans, gfinal = json_char_dfa(canonical)
    dfa = _layers(lo, lo, True, True, text, gtrans, gfinal)
    remember_dfa(text, dfa)
    return dfa, text


def _char_position_dfa(canonical):
    """JSON strings (quotes included) with the character boundaries marked: state
    0 before the opening quote, 1 after the closing one, ``2 + g`` inside a
    character in state ``g`` of the one-character automaton (``2``: right
    after the opening quote), ``2 + k``: right after a character ends (a copy
    of ``2``, told apart so that entering it is what "a character completed"
    means).  Returns ``(dfa, char_end_state)``."""
    gtrans, gfinal = json_char_dfa(canonical)
    k = gtrans.shape[0]
    done = 2 + k
    trans = np.full((3 + k, 256), -1, np.int32)
    trans[0, _QUOTE] = 2
    inner = np.where(gtrans == gfinal, done, np.where(gtrans >= 0, gtrans + 2, -1))
    trans[2:2 + k] = inner
    trans[done] = inner[0]
    trans[2, _QUOTE] = trans[done, _QUOTE] = 1
    accepting = np.zeros(3 + k, bool)
    accepting[1] = True
    return ByteDFA(trans, accepting, pattern="(?#json string, characters marked)"), done


def counted_string_dfa(dfa, text, hi, canonical, owner):
    """The strings of ``dfa`` (quoted JSON strings) whose value has at most ``hi``
    characters, as a :class:`~cfgmask.automata.CountedDFA`: the length is a
    counter the lexer steps, not a product automaton (which needs a state
    per (state, length) pair: 500,000 for "at most 100 words" and
    ``maxLength`` 5000).  Pinned under ``(?#cfgmask: counted)(?=(?:"C{0,hi}")\\Z)(?:TEXT)``.

    Exact: the product with the character-position automaton only marks
    where a decoded character ends (JSON strings are a subset of its
    language, so the language is ``dfa``'s), and the counter counts those
    marks.
    """
    C = S.json_char(canonical)
    # the comment keeps this text apart from the product automaton's (the same regex
    # otherwise): set operations look automata up by text and must never meet a counter
    pattern = f'(?#cfgmask: counted)(?=(?:"{C}{{0,{hi}}}")\\Z)(?:{text})'
    cached = find_dfa(pattern)
    if cached is None:
        pos, done = _char_position_dfa(canonical)
        trans, accepting, _, pb = product_table(dfa, pos, "and")
        live = live_states(trans, accepting)
        if not live[0]:
            cached = empty_dfa(pattern)
        else:
            try:
                cached = CountedDFA(keep_states(trans, live), accepting[live], pb[live] == done, hi,
                                    pattern=pattern)
            except ValueError as e:
                raise Unsupported("maxLength", str(e)) from None
            if cached.min_chars[0] > hi:
                cached = empty_dfa(pattern)
    register_dfa(pattern, cached, owner)
    return cached, pattern


# RFC 8259's two-character escapes: code point -> the byte after the backslash
_SHORT_ESCAPE_LETTERS = {ord(json.loads(f'"\\{e}"')): ord(e) for e in '"\\/bfnrt'}


@lru_cache(maxsize=65536)
def _spellings(c, canonical=False):
    """Every spelling of the character ``c`` as a tuple of byte sets (hex letters: both cases)."""
    cp = ord(c)
    if canonical:
        text = json.dumps(c, ensure_ascii=False)[1:-1].encode("utf-8")
        return (tuple((b,) for b in text),)
    out = []
    if not (cp < 0x20 or cp in (0x22, 0x5C)):
        out.append(tuple((b,) for b in c.encode("utf-8")))
    short = _SHORT_ESCAPE_LETTERS.get(cp)
    if short is not None:
        out.append(((0x5C,), (short,)))

    def hex_sets(v):
        return tuple(tuple(sorted({ord(ch), ord(ch.upper())})) for ch in f"{v:04x}")
    esc = ((0x5C,), (0x75,))
    if cp < 0x10000:
        out.append(esc + hex_sets(cp))
    else:
        v = cp - 0x10000
        hi, lo = 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)
        out.append(esc + hex_sets(hi) + esc + hex_sets(lo))
    return tuple(out)


def literal_set_dfa(values, complement=False, canonical=False):
    """JSON strings whose value is in ``values`` (or, ``complement``, is not).

    States: a trie over the decoded values, and between a node and each child
    a small trie of that character's spellings (byte sets; sibling sets are
    equal or disjoint, so it stays deterministic).  In complement mode every
    byte that leaves the spelling tries continues in a copy of the generic
    character automaton ("free" states: the value already differs from every
    member), paired with the state the generic automaton would be in.  Built
    trimmed (every state leads to a member, or to the free states), so no
    clean-up pass is needed.
    """
    key = (tuple(sorted(set(values))), complement, canonical)
    hit = _LITERAL_MEMO.get(key)
    if hit is not None:
        if not complement:
            remember_dfa(hit[1], hit[0])  # (again: the memo may have dropped it)
        return hit  # complements: the caller pins them
    res = _literal_set_dfa(list(key[0]), complement, canonical)
    _LITERAL_MEMO.put(key, res)
    return res


_LITERAL_MEMO = BoundedMemo(1024, order="fifo")   # (values, complement, canonical) -> (dfa, text)
# characters that canonical JSON writes as themselves, one byte each
_PLAIN_KEY = re.compile(r'[\x20\x21\x23-\x5b\x5d-\x7e]*')
# a plain character's canonical spelling in a pattern (itself, escaped where regex needs it)
_PLAIN_TEXT = {c: S.chars_text(((c, c),), True) for c in range(0x20, 0x7F) if c not in (0x22, 0x5C)}


def _plain_chain_dfa(value):
    """The automaton of one canonical string value spelled as its own bytes (most
    property names): the chain the general construction in
    :func:`_literal_set_dfa` builds, numbered the same, without its tries.  A
    new schema builds one per property name, so it is built directly (about
    20 us) rather than through the general path (about 40 us)."""
    text = '"(?:' + value.translate(_PLAIN_TEXT) + ')"'
    cached = find_dfa(text)
    if cached is not None:
        return cached, text
    raw = value.encode("ascii")
    n = len(raw)
    trans = np.empty((n + 3, 256), np.int32)
    trans.fill(-1)
    trans[0, _QUOTE] = 2
    trans[np.arange(2, n + 2), np.frombuffer(raw, dtype=np.uint8)] = np.arange(3, n + 3, dtype=np.int32)
    trans[n + 2, _QUOTE] = 1
    accepting = np.zeros(n + 3, bool)
    accepting[1] = True
    dfa = ByteDFA(trans, accepting, pattern=text)
    # each byte of the chain has a column of its own (its positions), the rest share one
    column_class = bytearray(256)
    for i, b in enumerate(sorted(set(raw) | {_QUOTE}), 1):
        column_class[b] = i
    dfa.set_column_class(np.frombuffer(bytes(column_class), dtype=np.uint8))
    remember_dfa(text, dfa)
    return dfa, text


class _Speller:
    """The states and transitions :func:`_literal_set_dfa` spells a trie of
    literals into (methods, not closures: a closure that calls itself is a
    reference cycle per call, and JSON schemas make this automaton ~80 times
    each, so its lists waited for the cyclic collector)."""

    def __init__(self, gtrans, complement, canonical, hook):
        self.gtrans, self.complement, self.canonical, self.hook = gtrans, complement, canonical, hook
        self.src, self.byt, self.dst = [], [], []   # explicit transitions
        self.default_g = []     # per state: generic-char state for unlisted bytes, or -1
        self.quote_rows = []    # (state, target) of the closing quote
        self.n = 0
        self.final = -1

    def new_state(self, g=-1):
        self.default_g.append(g)
        self.n += 1
        return self.n - 1

    def edge(self, a, bs, b):
        for x in bs:
            self.src.append(a)
            self.byt.append(x)
            self.dst.append(b)

    def build(self, node):
        if self.hook is not None:
            self.hook()     # the JSON Schema compile budget's clock
        complement = self.complement
        st = self.new_state(0 if complement else -1)
        member = None in node
        if member != complement:
            self.quote_rows.append((st, self.final))
        elif complement:
            self.quote_rows.append((st, -1))  # a member: no closing quote here
        spell = {}
        for c, sub in node.items():
            if c is None:
                continue
            target = self.build(sub)
            for sp in _spellings(c, self.canonical):
                cur = spell
                for i, bs in enumerate(sp):
                    nxt = cur.setdefault(bs, [{}, None])
                    if i == len(sp) - 1:
                        nxt[1] = target
                    cur = nxt[0]
        self.emit(st, spell, 0)
        return st

    def emit(self, st, spell, g):
        for bs, (sub, target) in spell.items():
            g2 = int(self.gtrans[g, bs[0]])
            if target is None:
                target = self.new_state(g2 if self.complement else -1)
                self.emit(target, sub, g2)
            self.edge(st, bs, target)


def _literal_set_dfa(values, complement, canonical):
    if canonical and not complement and len(values) == 1 and _PLAIN_KEY.fullmatch(values[0]):
        return _plain_chain_dfa(values[0])
    bodies = [S.literal_text(v, canonical)[1:-1] for v in values]   # refuses lone surrogates
    any_text = S.any_string(canonical)
    if complement and not values:
        return compile_regex(any_text, name="string"), any_text
    body = "|".join(bodies) if values else "(?!)"
    lit_text = f'"(?:{body})"'
    text = f'(?!{lit_text}\\Z){any_text}' if complement else lit_text
    cached = find_dfa(text)
    if cached is not None:
        return cached, text
    gtrans, gfinal = json_char_dfa(canonical)
    k = gtrans.shape[0]
    sp = _Speller(gtrans, complement, canonical, getattr(progress, "hook", None))
    start = sp.new_state()
    final = sp.final = sp.new_state()
    free0 = -1
    if complement:
        free_base = sp.n
        for g in range(k):
            sp.new_state(g)
        free0 = free_base

    trie = {}
    for v in values:
        node = trie
        for c in v:
            node = node.setdefault(c, {})
        node[None] = True

    root = sp.build(trie)
    sp.edge(start, (_QUOTE,), root)
    total = sp.n
    trans = np.full((total, 256), -1, np.int32)
    if complement:
        # default rows: the generic char automaton continued in the free states
        free_rows = np.where(gtrans >= 0, np.where(gtrans == gfinal, free0, free_base + gtrans), -1)
        free_rows = free_rows.astype(np.int32)
        dg = np.asarray(sp.default_g)
        has = dg >= 0
        trans[has] = free_rows[dg[has]]
        trans[free0, _QUOTE] = final
    for st, tgt in sp.quote_rows:
        trans[st, _QUOTE] = tgt
    if sp.src:
        trans[np.asarray(sp.src), np.asarray(sp.byt)] = np.asarray(sp.dst, np.int32)
    accepting = np.zeros(total, bool)
    accepting[final] = True
    dfa = ByteDFA(trans, accepting, pattern=text)
    if complement:
        return dfa, text  # the caller pins it (lookahead text)
    remember_dfa(text, dfa)
    return dfa, text


# ------------------------------------------------------------------ numbers

def _digits_mod_dfa(k, allow_negative=True):
    """Decimal integer texts ``-?(0|[1-9][0-9]*)`` whose value is a multiple of ``k``."""
    # states: 0 start, 1 after '-', 2 the number 0 (complete), 3 + r: nonzero prefix with residue r
    n = 3 + k
    trans = np.full((n, 256), -1, np.int32)
    if allow_negative:
        trans[0, ord("-")] = 1
    for s in (0, 1):
        if s == 0:
            trans[s, ord("0")] = 2
        for d in range(1, 10):
            trans[s, ord("0") + d] = 3 + d % k
    for r in range(k):
        for d in range(10):
            trans[3 + r, ord("0") + d] = 3 + (10 * r + d) % k
    accepting = np.zeros(n, bool)
    accepting[2] = True
    accepting[3] = True
    return trans, accepting


def integer_multiple_dfa(k, range_dfa, range_text, owner, description):
    """Integer texts in ``range_dfa``'s language that are multiples of ``k``."""
    text = f"(?#cfgmask automaton: {description})(?!)"
    cached = find_dfa(text)
    if cached is None:
        trans, acc = _digits_mod_dfa(k)
        mod = ByteDFA(trans, acc, pattern=text)
        cached = product(range_dfa, mod, "and", text)
    register_dfa(text, cached, owner)
    return cached, text


def zero_fraction_dfa(dfa, text, owner):
    """``dfa``'s integer texts, each also followed by ``.0``, ``.00``, ...: the spellings
    of the same values as plain decimals (``6000.0`` for ``multipleOf: 1`` on a
    ``number``).  Exact for any constraint on the value: a zero fraction does not
    change it, and the fraction only follows an accepted integer text."""
    key = f"(?#cfgmask automaton: zero fraction of {text})(?!)"
    cached = find_dfa(key)
    if cached is None:
        n = dfa.n_states
        trans = np.full((n + 2, 256), -1, np.int32)
        trans[:n] = dfa.trans
        dot, zeros = n, n + 1
        # integer texts have no '.', so the new edge never meets an old one
        assert not (dfa.trans[:, ord(".")] >= 0).any()
        trans[np.flatnonzero(dfa.accepting), ord(".")] = dot
        trans[dot, ord("0")] = zeros
        trans[zeros, ord("0")] = zeros
        accepting = np.concatenate([dfa.accepting, [False, True]])
        cached = ByteDFA(trans, accepting, pattern=key)
    register_dfa(key, cached, owner)
    return cached, key


def _decimal_mod_dfa(p, j):
    """Plain decimal texts whose value times 10**j is a multiple of ``p`` (j >= 1)."""
    # states: 0 start, 1 after '-', 2 int part "0", 3+r: non-zero int part with residue r,
    # then per residue r and fraction position pos (0..j): F(r, pos) = 3 + p + r*(j+1) + pos
    base = 3 + p
    n = base + p * (j + 1)
    trans = np.full((n, 256), -1, np.int32)
    accepting = np.zeros(n, bool)
    digit = [ord("0") + d for d in range(10)]

    def F(r, pos):
        return base + r * (j + 1) + pos
    trans[0, ord("-")] = 1
    for s0 in (0, 1):
        trans[s0, digit[0]] = 2
        for d in range(1, 10):
            trans[s0, digit[d]] = 3 + d % p
    for r in range(p):
        for d in range(10):
            trans[3 + r, digit[d]] = 3 + (10 * r + d) % p
        trans[3 + r, ord(".")] = F(r, 0)
        accepting[3 + r] = (r * 10 ** j) % p == 0
    trans[2, ord(".")] = F(0, 0)
    accepting[2] = True
    for r in range(p):
        for pos in range(j):
            for d in range(10):
                trans[F(r, pos), digit[d]] = F((10 * r + d) % p, pos + 1)
            if pos > 0:
                accepting[F(r, pos)] = (r * 10 ** (j - pos)) % p == 0
        trans[F(r, j), digit[0]] = F(r, j)
        accepting[F(r, j)] = r % p == 0
    return trans, accepting


def decimal_multiple_dfa(p, j, range_dfa, owner, description):
    """Plain decimals of ``range_dfa`` whose value is a multiple of ``p * 10**-j``."""
    text = f"(?#cfgmask automaton: {description})(?!)"
    cached = find_dfa(text)
    if cached is None:
        trans, acc = _decimal_mod_dfa(p, j)
        cached = product(range_dfa, ByteDFA(trans, acc, pattern=text), "and", text)
    register_dfa(text, cached, owner)
    return cached, text
