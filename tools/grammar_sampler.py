"""Random documents from a Lark grammar, for acceptance tests.

``GrammarSampler(lark_text).sample(rng)`` walks lark's own compiled rules
(after EBNF expansion, so ``x*`` helpers and ``?`` variants are plain rules)
from the start symbol, choosing among the rules that can still finish
within a depth budget, and fills each terminal with a random string its
regex accepts. Tokens are joined with single spaces, so each sample is a
document with normal spacing: lark must parse it, and under greedy
contextual lexing it must lex the same way.

Terminal strings come from walking Python's parse of the terminal regex
(``re._parser``), so the sampler needs no per-grammar tables; a few regex
constructs an automaton cannot express (lookaround, backreferences) raise
``ValueError``. Character classes are sampled from their own ranges, with
negated classes drawn from printable ASCII plus a handful of non-ASCII
characters. Repetitions are short (at most three past the minimum).

Usage::

    python -m tools.grammar_sampler grammars/sql.lark 5 [seed]
"""
import random
import re
import sys

try:  # Python >= 3.11
    import re._parser as _sre_parse
    import re._constants as _sre_c
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse
    import sre_constants as _sre_c

import lark

__all__ = ["GrammarSampler", "sample_regex"]

_POOL = [chr(c) for c in range(0x20, 0x7F)] + list("\t\néжλ中😀")
_MAXREPEAT = _sre_c.MAXREPEAT


def _in_class(ch, items, ignorecase):
    cands = {ch, ch.lower(), ch.upper()} if ignorecase else {ch}
    negate = False
    hit = False
    for op, av in items:
        if op is _sre_c.NEGATE:
            negate = True
        elif op is _sre_c.LITERAL:
            hit |= any(ord(c) == av for c in cands)
        elif op is _sre_c.RANGE:
            hit |= any(av[0] <= ord(c) <= av[1] for c in cands)
        elif op is _sre_c.CATEGORY:
            hit |= _category(ch, av)
        else:  # pragma: no cover
            raise ValueError("unsupported class item %r" % (op,))
    return hit != negate


def _category(ch, cat):
    name = str(cat)
    neg = "NOT_" in name
    if "DIGIT" in name:
        r = ch.isdigit()
    elif "SPACE" in name:
        r = ch in " \t\n\r\f\v"
    elif "WORD" in name:
        r = ch.isalnum() or ch == "_"
    else:  # pragma: no cover
        raise ValueError("unsupported category %s" % name)
    return r != neg


def _pick_from_class(items, ignorecase, rng):
    positive = [(op, av) for op, av in items if op is not _sre_c.NEGATE]
    if not any(op is _sre_c.NEGATE for op, _ in items) and rng.random() < 0.9:
        op, av = rng.choice(positive)
        if op is _sre_c.LITERAL:
            return chr(av)
        if op is _sre_c.RANGE:
            lo, hi = av
            # keep to printable, non-surrogate code points where possible
            if hi > 0x7E and lo < 0x7F:
                if rng.random() < 0.8:
                    hi = 0x7E
                else:
                    lo = 0x80
            if lo >= 0x80:
                return rng.choice([c for c in _POOL if lo <= ord(c) <= hi] or [chr(lo)])
            c = chr(rng.randint(lo, hi))
            if c.isprintable() or c in "\t\n":
                return c
    pool = [c for c in _POOL if _in_class(c, items, ignorecase)]
    if not pool:
        pool = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000
                and _in_class(chr(c), items, ignorecase)][:100]
    if not pool:
        raise ValueError("empty character class")
    return rng.choice(pool)


def _gen(parsed, flags, rng, out):
    ignorecase = bool(flags & re.IGNORECASE)
    for op, av in parsed:
        if op is _sre_c.LITERAL:
            c = chr(av)
            if ignorecase and c.isascii() and rng.random() < 0.5:
                c = c.swapcase()
            out.append(c)
        elif op is _sre_c.NOT_LITERAL:
            out.append(rng.choice([c for c in _POOL if ord(c) != av]))
        elif op is _sre_c.ANY:
            pool = _POOL if flags & re.DOTALL else [c for c in _POOL if c != "\n"]
            out.append(rng.choice(pool))
        elif op is _sre_c.IN:
            out.append(_pick_from_class(av, ignorecase, rng))
        elif op is _sre_c.BRANCH:
            _gen(rng.choice(av[1]), flags, rng, out)
        elif op is _sre_c.SUBPATTERN:
            group, add_flags, del_flags, sub = av
            _gen(sub, (flags | add_flags) & ~del_flags, rng, out)
        elif op in (_sre_c.MAX_REPEAT, _sre_c.MIN_REPEAT,
                    getattr(_sre_c, "POSSESSIVE_REPEAT", None)):
            lo, hi, sub = av
            hi = lo + 3 if hi is _MAXREPEAT or hi == _MAXREPEAT else min(hi, lo + 3)
            n = lo
            while n < hi and rng.random() < 0.5:
                n += 1
            for _ in range(n):
                _gen(sub, flags, rng, out)
        elif op is _sre_c.AT:
            pass
        elif op is getattr(_sre_c, "ATOMIC_GROUP", None):
            _gen(av, flags, rng, out)
        else:
            raise ValueError("regex construct %s is not supported by the sampler" % op)


_PARSED = {}


def sample_regex(pattern, rng, flags=0):
    """A random string that ``re.fullmatch(pattern, s, flags)`` accepts."""
    key = (pattern, flags)
    parsed = _PARSED.get(key)
    if parsed is None:
        parsed = _PARSED[key] = _sre_parse.parse(pattern, flags)
    for _ in range(50):
        out = []
        _gen(parsed, parsed.state.flags | flags, rng, out)
        s = "".join(out)
        if re.fullmatch(pattern, s, flags):
            return s
    raise ValueError("could not sample a string for /%s/" % pattern)


class GrammarSampler:
    """Random documents from a Lark grammar (see the module docstring)."""

    def __init__(self, lark_text, start="start", max_depth=14, max_tokens=120,
                 avoid_terminals=(), terminal_samples=None):
        """`avoid_terminals`: never use a rule alternative that contains one of
        these terminals; `terminal_samples`: {terminal name: list of strings}
        to draw from instead of the terminal's regex (each must match it)."""
        self.parser = lark.Lark(lark_text, parser="earley", lexer="dynamic", start=start)
        self.start = start
        self.max_depth = max_depth
        self.max_tokens = max_tokens
        self.terminals = {t.name: t for t in self.parser.terminals}
        self.terminal_samples = dict(terminal_samples or {})
        for name, samples in self.terminal_samples.items():
            pattern = self.terminals[name].pattern.to_regexp()
            for s in samples:
                if not re.fullmatch(pattern, s):
                    raise ValueError("sample %r does not match terminal %s" % (s, name))
        avoid = set(avoid_terminals)
        rules = {}
        for r in self.parser.rules:
            if any(s.is_term and s.name in avoid for s in r.expansion):
                continue
            rules.setdefault(r.origin.name, []).append([s for s in r.expansion])
        self.rules = rules
        self._min_depth = self._compute_min_depth()
        # drop alternatives that can never finish (they use a nonterminal all
        # of whose rules were avoided)
        inf = float("inf")
        for nt in list(self.rules):
            self.rules[nt] = [e for e in self.rules[nt] if self._rule_depth(e) < inf]
            if not self.rules[nt]:
                del self.rules[nt]

    def _compute_min_depth(self):
        inf = float("inf")
        depth = {nt: inf for nt in self.rules}
        changed = True
        while changed:
            changed = False
            for nt, alts in self.rules.items():
                for exp in alts:
                    d = 1 + max([0] + [depth.get(s.name, inf) for s in exp if not s.is_term])
                    if d < depth[nt]:
                        depth[nt] = d
                        changed = True
        return depth

    def _rule_depth(self, exp):
        inf = float("inf")
        return 1 + max([0] + [self._min_depth.get(s.name, inf) for s in exp if not s.is_term])

    def terminal_text(self, name, rng):
        if name in self.terminal_samples:
            return rng.choice(self.terminal_samples[name])
        pattern = self.terminals[name].pattern
        if pattern.type == "str" and not pattern.flags:
            return pattern.value
        return sample_regex(pattern.to_regexp(), rng)

    def sample_tokens(self, rng):
        """A list of (terminal name, text) pairs."""
        out = []
        self._expand(self.start, self.max_depth, rng, out)
        return out

    def sample(self, rng, sep=" "):
        return sep.join(text for _, text in self.sample_tokens(rng))

    def _expand(self, nt, budget, rng, out):
        alts = self.rules[nt]
        fits = [e for e in alts if self._rule_depth(e) <= budget]
        if not fits:
            fits = [min(alts, key=self._rule_depth)]
        if len(out) > self.max_tokens:
            # wind down: only the shallowest alternatives
            best = min(self._rule_depth(e) for e in fits)
            fits = [e for e in fits if self._rule_depth(e) == best]
        exp = rng.choice(fits)
        for s in exp:
            if s.is_term:
                out.append((s.name, self.terminal_text(s.name, rng)))
            else:
                self._expand(s.name, budget - 1, rng, out)


def main(argv):
    path = argv[1]
    n = int(argv[2]) if len(argv) > 2 else 5
    seed = int(argv[3]) if len(argv) > 3 else 0
    s = GrammarSampler(open(path, encoding="utf-8").read())
    rng = random.Random(seed)
    for _ in range(n):
        print(s.sample(rng))


if __name__ == "__main__":
    main(sys.argv)
