"""Reference recognizer for cfgmask's lexing semantics, built on lark's Earley.

``lark.Lark(..., lexer="dynamic")`` is the project's parse oracle, but its
dynamic lexer tries every segmentation, so it accepts documents that
cfgmask's greedy lexer cannot produce (``returnx`` read as ``return x``, a
newline read as ignorable whitespace where the grammar expects a newline
terminal). This module runs lark's Earley parser with a lexer that follows
docs/architecture.md "Semantics" instead:

* at each lexeme start the candidates are the terminals the parser can scan
  next (E) plus the ``%ignore`` terminals (I); I is dropped when E is empty;
* the lexeme extends while some candidate can still match a longer string
  (maximal munch with one character of look-ahead); it must then be a full
  match of some candidate;
* it is scanned as every terminal of E that matches it, and skipped only if
  no terminal of E matches it;
* the grammar's word boundary (``// %cfgmask word_boundary [...]``) forbids
  a lexeme ending between two characters of the class.

It works on characters, not bytes (the one difference: a character the
union cannot take is never half consumed here). Viability of a prefix uses
the ``regex`` module's partial matching. Slow, but exact enough to validate
grammars; not part of the package.

usage: python -m support.greedy_check GRAMMAR FILE...
"""
import re
import sys

import lark
import regex
from lark.lexer import Token
from lark.parsers import earley
from lark.exceptions import UnexpectedInput

__all__ = ["GreedyRecognizer", "word_boundary_of"]

_PRAGMA = re.compile(r"^//\s*%cfgmask\s+word_boundary\s+(\S+)\s*$", re.M)


def word_boundary_of(grammar_text):
    """The word-boundary byte class of a grammar (a compiled bytes regex) or None."""
    m = _PRAGMA.search(grammar_text)
    if not m:
        return None
    return re.compile(m.group(1).encode("ascii"))


class _Parser(earley.Parser):
    """lark's Earley parser, asking the lexer for one lexeme at a time.

    lark's own loop hands the lexer the expected terminals before the
    predictor has run; here prediction/completion come first, so the lexer
    sees the full set E of terminals the parser can scan next.
    """

    def _parse(self, lexer, columns, to_scan, start_symbol=None):
        from lark.parsers.earley_forest import TokenNode
        from lark.exceptions import UnexpectedToken
        match = self.term_matcher
        transitives = [{}]
        node_cache = {}
        i = 0
        stream = lexer.start()
        while True:
            self.predict_and_complete(i, to_scan, columns, transitives, node_cache)
            token = stream.send({x.expect for x in to_scan})
            if token is None:
                break
            next_to_scan, next_set, node_cache = self.Set(), self.Set(), {}
            columns.append(next_set)
            transitives.append({})
            for item in self.Set(to_scan):
                if match(item.expect, token):
                    new_item = item.advance()
                    label = (new_item.s, new_item.start, i + 1)
                    new_item.node = node_cache[label] if label in node_cache else node_cache.setdefault(label, self.SymbolNode(*label))
                    new_item.node.add_family(new_item.s, item.rule, new_item.start, item.node, TokenNode(token, None, priority=0))
                    if new_item.expect in self.TERMINALS:
                        next_to_scan.add(new_item)
                    else:
                        next_set.add(new_item)
            if not next_set and not next_to_scan:
                raise UnexpectedToken(token, {x.expect.name for x in to_scan}, state=None)
            to_scan = next_to_scan
            i += 1
        return to_scan


class LexError(Exception):
    def __init__(self, pos, msg):
        super().__init__("%s at char %d" % (msg, pos))
        self.pos = pos


class GreedyRecognizer:
    """Accepts exactly what a cfgmask matcher would let through (char-level)."""

    def __init__(self, grammar_text, start="start"):
        self.lark = lark.Lark(grammar_text, parser="earley", lexer="dynamic", start=start)
        self.start = start
        frontend = self.lark.parser
        self.parser = _Parser(
            frontend.lexer_conf, frontend.parser_conf,
            lambda term, token: term.name in token.type.split("|"),
            resolve_ambiguity=True, tree_class=None)
        self.patterns = {}
        for t in self.lark.terminals:
            self.patterns[t.name] = regex.compile(t.pattern.to_regexp())
        self.ignore = [n for n in self.lark.ignore_tokens]
        self.wb = word_boundary_of(grammar_text)

    # -- word boundary, on the UTF-8 bytes of the two characters
    def _in_wb(self, ch, last):
        if self.wb is None:
            return False
        b = ch.encode("utf-8", "surrogatepass")
        byte = b[-1:] if last else b[:1]
        return self.wb.fullmatch(byte) is not None

    def _viable(self, names, s):
        for n in names:
            if self.patterns[n].fullmatch(s, partial=True) is not None:
                return True
        return False

    def _lex(self, text):
        """Generator: receives the expected terminals, yields the next token or None."""
        i, n = 0, len(text)
        expects = yield
        while i < n:
            e_names = sorted({t.name for t in expects})
            cands = e_names + ([x for x in self.ignore if x not in e_names] if e_names else [])
            if not cands:
                raise LexError(i, "text after the end of the document")
            # longest viable prefix: exponential then binary search (viability is monotone)
            if not self._viable(cands, text[i:i + 1]):
                raise LexError(i, "no allowed terminal (%s) can start with %r" % (
                    " ".join(e_names), text[i]))
            lo, k = 1, 2
            while i + lo < n and self._viable(cands, text[i:i + min(k, n - i)]):
                lo = min(k, n - i)
                k *= 2
            hi = min(k, n - i)  # not viable (or past the end)
            if i + lo < n:
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    if self._viable(cands, text[i:i + mid]):
                        lo = mid
                    else:
                        hi = mid
            lexeme = text[i:i + lo]
            j = i + lo
            if j < n and self._in_wb(lexeme[-1], True) and self._in_wb(text[j], False):
                raise LexError(j, "word boundary: %r may not be followed by %r" % (lexeme, text[j]))
            scanned = [t for t in e_names if self.patterns[t].fullmatch(lexeme)]
            if scanned:
                tok = Token("|".join(scanned), lexeme, start_pos=i)
                i = j
                expects = yield tok
                continue
            elif not any(self.patterns[t].fullmatch(lexeme) for t in cands):
                raise LexError(i, "lexeme %r is not a complete %s" % (
                    lexeme[:40], "/".join(cands[:8])))
            i = j
        yield None

    def check(self, text):
        """(True, None) or (False, message)."""
        lexer = _LexerShim(self, text)
        try:
            self.parser.parse(lexer, self.start)
        except LexError as e:
            return False, str(e)
        except UnexpectedInput as e:
            pos = getattr(e, "pos_in_stream", None)
            tok = getattr(e, "token", None)
            if tok is not None and getattr(tok, "start_pos", None) is not None:
                pos = tok.start_pos
            return False, "parse error at char %s: %s" % (pos, str(e).splitlines()[0][:200])
        return True, None

    def accepts(self, text):
        return self.check(text)[0]


class _LexerShim:
    def __init__(self, rec, text):
        self.rec, self.text = rec, text

    def start(self):
        gen = self.rec._lex(self.text)
        next(gen)
        return gen


def main(argv):
    rec = GreedyRecognizer(open(argv[1], encoding="utf-8").read())
    bad = 0
    for path in argv[2:]:
        ok, msg = rec.check(open(path, encoding="utf-8").read())
        if not ok:
            bad += 1
            text = open(path, encoding="utf-8").read()
            pos = int(re.search(r"char (\d+)", msg).group(1)) if re.search(r"char (\d+)", msg) else 0
            line = text.count("\n", 0, pos) + 1
            print("%s:%d: %s" % (path, line, msg))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
