"""The automaton checks of a generation profile (:mod:`cfgmask.frontends.profiles`).

Invariants 1-4 of the profiles module docstring, decided on the terminals'
byte automata: :func:`check_subset` (1, inclusion), :func:`lookahead_guards` (2 and 3,
the trailing lookahead guards that keep greedy lexing's cuts and keep dropped
comments from hiding in profile lexemes, plus the engine's unsplit tokens) and
:func:`check_ignore_overlap` (4).  Each failure is a
:class:`~cfgmask.GrammarError` naming the terminal.
"""

import numpy as np

from cfgmask.automata import compile_regex
from cfgmask.errors import GrammarError

__all__ = ["byte_class", "terminal_dfa", "check_subset", "lookahead_guards", "check_ignore_overlap"]


def byte_class(byte_values):
    """A regex class of exactly ``byte_values`` (for a ``(?!...)`` guard)."""
    return "[" + "".join(f"\\x{b:02x}" for b in sorted(byte_values)) + "]"


def terminal_dfa(pattern, name):
    """The byte automaton of terminal ``name``'s ``pattern``."""
    return compile_regex(pattern, name=name)


def check_subset(sub, sup, name, where):
    """Raise unless every lexeme ``sub`` accepts (in every follow context) ``sup`` accepts too."""
    seen, todo = {(0, 0)}, [(0, 0)]
    while todo:
        a, b = todo.pop()
        if sub.accepting[a]:
            if not sup.accepting[b] or (sup.follow_forbidden_at_eos[b] and not sub.follow_forbidden_at_eos[a]):
                raise GrammarError(f"{where}: the new pattern of {name} accepts a lexeme the full "
                                   f"grammar's does not", where=name, construct="profile subset")
            fb = sup.follow_forbidden[b]
            if fb and not set(fb) <= set(sub.follow_forbidden[a] or b""):
                raise GrammarError(f"{where}: the new pattern of {name} may end where the full "
                                   f"grammar's may not", where=name, construct="profile subset")
        ra, rb = sub.trans[a], sup.trans[b]
        live = np.flatnonzero(ra >= 0)
        if (rb[live] < 0).any():
            raise GrammarError(f"{where}: the new pattern of {name} accepts lexemes the full "
                               f"grammar's does not", where=name, construct="profile subset")
        for x in live:
            p = (int(ra[x]), int(rb[x]))
            if p not in seen:
                seen.add(p)
                todo.append(p)


def _first_bytes(dfa):
    return set(np.flatnonzero(dfa.trans[0] >= 0).tolist())


def _ends_in(dfa, byte_set):
    """Per state: is every byte that leads into it in ``byte_set``? (So a lexeme ending there does.)"""
    into = np.zeros((dfa.n_states, 256), dtype=bool)
    src, byte = np.nonzero(dfa.trans >= 0)
    into[dfa.trans[src, byte], byte] = True
    ok = np.zeros(256, dtype=bool)
    ok[list(byte_set)] = True
    return [bool(row.any()) and not (row & ~ok).any() for row in into]


def lookahead_guards(full, prof, origin, dropped, wb, where, unsplit=(), final=()):
    """Bytes each profile terminal must not be followed by (invariants 2 and 3): ``{name: set}``.

    Terminals in ``final`` end the document, so they need no guard."""
    guards = {}
    # 2. same cuts: pair every profile terminal v with the original u of every replaced or
    # added terminal, where both can read the same bytes; where v may end and u goes on,
    # forbid that byte after v (unless the word boundary already does).
    for u in sorted(set(origin.values())):
        fu = _first_bytes(full[u])
        for v, dv in prof.items():
            if fu & _first_bytes(dv):
                for b in _lost_continuations(dv, full[u], prof, v, u, wb, where):
                    guards.setdefault(v, set()).add(b)
    # 3. no hidden comments
    for c in sorted(dropped):
        cd = full[c]
        for b1 in np.flatnonzero(cd.trans[0] >= 0).tolist():
            s1 = int(cd.trans[0, b1])
            if cd.accepting[s1]:
                # a one-byte comment start (MySQL's "#") is out of the profile
                # when no profile lexeme starts with that byte
                starts = [v for v, dv in prof.items() if dv.trans[0, b1] >= 0]
                if starts:
                    raise GrammarError(f"{where}: comment {c} can be one byte long and terminal "
                                       f"{starts[0]} starts with that byte; it cannot be kept out of "
                                       "the profile", where=c, construct="profile comment")
                continue
            for b2 in np.flatnonzero(cd.trans[s1] >= 0).tolist():
                for v, dv in prof.items():
                    s = int(dv.trans[0, b1])
                    if s < 0:
                        continue
                    if dv.trans[s, b2] >= 0:
                        raise GrammarError(
                            f"{where}: terminal {v} has lexemes starting with {bytes([b1, b2])!r}, "
                            f"where the full grammar starts the comment {c}",
                            where=v, construct="profile comment")
                    if dv.can_end(s, b2) and not (b1 in wb and b2 in wb):
                        if b2 >= 0x80:
                            raise GrammarError(f"{where}: cannot forbid non-ASCII byte {b2:#x} after "
                                               f"{v}", where=v, construct="profile comment")
                        guards.setdefault(v, set()).add(b2)
    # 5. the engine's own tokens are never split: a one-byte lexeme "a" is not
    # followed by "b" when the engine reads "ab" as one token (JavaScript "--").
    for pair in unsplit:
        b1, b2 = pair.encode()
        for v, dv in prof.items():
            s = int(dv.trans[0, b1])
            if s >= 0 and dv.can_end(s, b2):
                guards.setdefault(v, set()).add(b2)
    for name in final:
        guards.pop(name, None)
    return guards


def _lost_continuations(v, u, prof, vname, uname, wb, where):
    """ASCII bytes after which a lexeme of ``v`` may end while ``u`` (an original) goes on.

    A lexeme ``x`` both read: if ``v`` may end at ``x`` before byte ``b`` and
    cannot read ``b`` itself, while ``u`` can, then greedy lexing in the full
    grammar would go on where the profile stops; forbidding ``b`` after ``v``
    removes that case.  Not needed where the word boundary already forbids a
    lexeme starting with ``b`` after ``x``.  Non-ASCII ``b`` cannot be
    forbidden by a lookahead: refused unless no profile terminal can start
    with a character ``u`` can go on with.
    """
    out = set()
    in_wb = _ends_in(v, wb) if wb else [False] * v.n_states
    seen, todo = {(0, 0)}, [(0, 0)]
    while todo:
        a, b = todo.pop()
        rv, ru = v.trans[a], u.trans[b]
        if v.accepting[a]:
            lost = np.flatnonzero((ru >= 0) & (rv < 0)).tolist()
            for x in lost:
                if not v.can_end(a, x) or (in_wb[a] and x in wb):
                    continue
                if x < 0x80:
                    out.add(x)
                elif _char_can_start_lexeme(u, int(ru[x]), x, prof):
                    raise GrammarError(
                        f"{where}: a lexeme of {vname} may end where the full grammar's {uname} goes on "
                        f"with a non-ASCII character that starts a profile lexeme",
                        where=vname, construct="profile cut")
        for x in np.flatnonzero((rv >= 0) & (ru >= 0)).tolist():
            p = (int(rv[x]), int(ru[x]))
            if p not in seen:
                seen.add(p)
                todo.append(p)
    return out


def _char_can_start_lexeme(u, su, lead, prof):
    """Can some profile terminal start with a character (lead byte ``lead``) that ``u`` reads from ``su``?"""
    n_cont = 1 if lead < 0xE0 else 2 if lead < 0xF0 else 3
    for dv in prof.values():
        sv = int(dv.trans[0, lead])
        if sv < 0:
            continue
        frontier = {(su, sv)}
        for _ in range(n_cont):
            nxt = set()
            for a, b in frontier:
                for x in range(0x80, 0xC0):
                    na, nb = int(u.trans[a, x]), int(dv.trans[b, x])
                    if na >= 0 and nb >= 0:
                        nxt.add((na, nb))
            frontier = nxt
        if frontier:
            return True
    return False


def check_ignore_overlap(full, prof, origin, ignores, where):
    """Invariant 4: a profile %ignore lexeme that an original terminal accepts, its replacement accepts."""
    for v, u in origin.items():
        if v in ignores:
            continue
        for i in ignores:
            di, du, dp = prof[i], full[u], prof[v]
            seen, todo = {(0, 0, 0)}, [(0, 0, 0)]
            while todo:
                a, b, c = todo.pop()
                if di.accepting[a] and du.accepting[b] and (c < 0 or not dp.accepting[c]):
                    raise GrammarError(
                        f"{where}: a {i} lexeme that the full grammar scans as {u} "
                        f"(where {u} is expected) is not a {v} lexeme of the profile",
                        where=v, construct="profile ignore overlap")
                for x in np.flatnonzero((di.trans[a] >= 0) & (du.trans[b] >= 0)).tolist():
                    p = (int(di.trans[a, x]), int(du.trans[b, x]), int(dp.trans[c, x]) if c >= 0 else -1)
                    if p not in seen:
                        seen.add(p)
                        todo.append(p)
