#!/usr/bin/env python3
"""Generate the identifier terminals of grammars/javascript.lark.

* ``IDENT``, ``IDENT_NY``, ``IDENT_NA``, ``IDENT_NYA``: an IdentifierReference
  / BindingIdentifier -- any identifier name except the reserved words below,
  and except ``yield`` (``_NY``: inside generators, the spec's [+Yield]) and
  ``await`` (``_NA``: async functions and modules, [+Await]).  ``let`` is
  left out of all four: the grammar names it where it may stand (sloppy
  mode, and not as `let [` at the start of a statement).  The words that are
  reserved only in strict mode (``implements`` ... ``static``, and ``yield``
  outside generators) are identifiers here: using them in strict code is an
  early error, which the grammar does not model.
* ``IDENT_NAME`` (property names: reserved words included),
  ``IDENT_NAME_FIELD`` (the same but ``get``, ``set`` and ``static``: a
  class field that a line break ends), ``IDENT_NOT_ASYNC`` (``IDENT_NYA``
  without ``async``: a for-of target) and ``PRIVATE_NAME``.
* All of these but ``PRIVATE_NAME`` are ASCII; ``IDENT_U`` is every name
  with a non-ASCII character or an escape (never a reserved word), used
  next to them, so that the large Unicode classes are in two terminals.

Characters: Unicode ID_Start / ID_Continue (the ``regex`` module's
properties, restricted to the characters assigned in Python's
``unicodedata`` -- Unicode 14.0 with Python 3.11; node 20 uses 15.1 --
plus ``$``, ``_`` and, as continue characters only, ZWNJ/ZWJ)
and ``\\uXXXX`` / ``\\u{X}`` escapes of ASCII identifier characters.  One deliberate exception: the four
identifier characters whose UTF-8 starts with byte C2 (U+00AA, U+00B5,
U+00B7, U+00BA) may only start a name (U+00B7, continue-only, not at all),
because cfgmask lexes greedily with one byte of look-ahead: if a name could
go on with byte C2, a no-break space (C2 A0) right after a name or keyword
(`function\\u00a0f`, in d3.js) would be refused.  (d3.js also has `µ` as
a parameter name.)  A reserved word written with escapes (``v\\u0061r``) is an
identifier here (an early error in the spec).

The regexes are built by tools/ident_regex.py from a trie of the reserved
words over ASCII; non-ASCII characters and escapes leave the trie.

usage:
  python -m tools.js_ident --write      # rewrite the generated block in grammars/javascript.lark
  python -m tools.js_ident --check      # exit 1 if the block is out of date
(tools/js_grammar.py, which writes grammars/javascript.lark, calls block().)
"""
import os
import re
import sys

from tools.ident_regex import render_set


def _esc(c):
    ch = chr(c)
    if ch.isascii() and (ch.isalnum() or ch in "_$"):
        return ch
    if c < 0x80:
        return "\\x%02x" % c
    if c < 0x10000:
        return "\\u%04x" % c
    return "\\U%08x" % c


def _render_set(chars):
    return render_set(chars, _esc)


HERE = os.path.dirname(os.path.abspath(__file__))
GRAMMAR = os.path.join(HERE, "..", "grammars", "javascript.lark")

# Reserved everywhere (ES2022 ReservedWord minus await/yield), plus `let`
# (see above).
RESERVED = """
break case catch class const continue debugger default delete do else
enum export extends false finally for function if import in instanceof let
new null return super switch this throw true try typeof var void while with
""".split()

# C2-led identifier characters: only first in a name (see the module docstring).
C2_IDENT = "\u00aa\u00b5\u00b7\u00ba"


def _hex_digit(lo, hi):
    """A class for the hex digits lo..hi (either case)."""
    ds = ["%x" % d for d in range(lo, hi + 1)]
    chars = "".join(ds) + "".join(d.upper() for d in ds if d.isalpha())
    return chars if len(chars) == 1 else "[" + _render_set(chars) + "]"


def _hex_range(lo, hi, width):
    """Regex for the `width`-digit hex numerals of lo..hi."""
    if width == 0:
        return ""
    unit = 16 ** (width - 1)
    a, b = lo // unit, hi // unit
    if a == b:
        return _hex_digit(a, a) + _hex_range(lo % unit, hi % unit, width - 1)
    alts = []
    if lo % unit:
        alts.append(_hex_digit(a, a) + _hex_range(lo % unit, unit - 1, width - 1))
        a += 1
    tail = None
    if hi % unit != unit - 1:
        tail = _hex_digit(b, b) + _hex_range(0, hi % unit, width - 1)
        b -= 1
    if a <= b:
        alts.append(_hex_digit(a, b) + ("[0-9A-Fa-f]{%d}" % (width - 1) if width > 1 else ""))
    if tail:
        alts.append(tail)
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _escape_regex(ranges):
    """\\uXXXX or \\u{X...} for a code point in `ranges` (inclusive pairs)."""
    four = [_hex_range(lo, min(hi, 0xFFFF), 4) for lo, hi in ranges if lo <= 0xFFFF]
    braced = []
    for w in range(1, 7):
        wlo, whi = (0 if w == 1 else 16 ** (w - 1)), 16 ** w - 1
        for lo, hi in ranges:
            a, b = max(lo, wlo), min(hi, whi, 0x10FFFF)
            if a <= b:
                braced.append(_hex_range(a, b, w))
    return r"\\u(?:%s|\{0*(?:%s)\})" % ("|".join(four), "|".join(braced))


# Escapes in identifiers: only of the ASCII identifier characters
# (`\\u0061`, `\\u{41}`). Escapes of non-ASCII characters are left out:
# naming exactly the ID_Start / ID_Continue code points in hex would add
# about 25 KB of regex (and thousands of DFA states) per use, and such
# escapes are very rare in code.
ESCAPE_START = _escape_regex([(0x24, 0x24), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
ESCAPE = _escape_regex([(0x24, 0x24), (0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])


def _unicode_sets():
    import unicodedata

    import regex
    start, cont = [], []
    for c in range(0x80, 0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        # The regex module's tables may be newer than Python's; keep the
        # characters the Unicode version of unicodedata has assigned.
        if unicodedata.category(ch) == "Cn":
            continue
        if regex.match(r"\p{ID_Start}", ch):
            start.append(ch)
            if ch not in C2_IDENT:
                cont.append(ch)
        elif ch not in C2_IDENT and (regex.match(r"\p{ID_Continue}", ch) or ch in "\u200c\u200d"):
            cont.append(ch)
    return start, cont


_SETS = None


def _classes():
    """(non-ASCII start class, non-ASCII continue class) as regex classes."""
    global _SETS
    if _SETS is None:
        start, cont = _unicode_sets()
        _SETS = ("[%s]" % _render_set(start), "[%s]" % _render_set(cont))
    return _SETS


def _ascii_keyword_free(words):
    """ASCII identifier names not in `words`: a trie of the words; at each
    node the name may stop (unless the prefix is a word), leave the trie by
    an ASCII character, or go on along it."""
    first = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_$")
    cont = first | set("0123456789")
    trie = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def rec(node, is_first):
        letters = sorted(k for k in node if k)
        leave = (first if is_first else cont) - set(letters)
        alts = ["[%s][A-Za-z0-9_$]*" % _render_set(leave)]
        alts += [ch + rec(node[ch], False) for ch in letters]
        body = "(?:" + "|".join(alts) + ")"
        return body if is_first or "" in node else body + "?"

    return rec(trie, True)


def ident_regex(extra_reserved=()):
    """An ASCII identifier name that is not a reserved word."""
    return _ascii_keyword_free(list(RESERVED) + list(extra_reserved))


def non_ascii_name_regex():
    """Any identifier name with a non-ASCII character or an escape (never a
    reserved word)."""
    ns, nc = _classes()
    s_non, c_non = "(?:%s|%s)" % (ns, ESCAPE_START), "(?:%s|%s)" % (nc, ESCAPE)
    cont = "(?:[A-Za-z0-9_$]|%s|%s)" % (nc, ESCAPE)
    # the longer alternative first, for lark's dynamic lexer (first match wins)
    return "[A-Za-z_$][A-Za-z0-9_$]*%s%s*|%s%s*" % (c_non, cont, s_non, cont)


def name_regex():
    ns, nc = _classes()
    return "(?:[A-Za-z_$]|%s|%s)(?:[A-Za-z0-9_$]|%s|%s)*" % (ns, ESCAPE_START, nc, ESCAPE)


VARIANTS = [("IDENT", ()), ("IDENT_NY", ("yield",)), ("IDENT_NA", ("await",)),
            ("IDENT_NYA", ("yield", "await"))]

BEGIN = "// BEGIN GENERATED by tools/js_ident.py"
END = "// END GENERATED"


def block():
    lines = [BEGIN,
             "// Identifier names that are not one of the %d reserved words:" % len(RESERVED),
             "// %s" % " ".join(RESERVED),
             "// IDENT_NY also excludes yield, IDENT_NA await, IDENT_NYA both."]
    for name, extra in VARIANTS:
        lines.append("%s: /%s/" % (name, ident_regex(extra)))
    lines.append("// IDENT_NAME: any ASCII name; IDENT_U: any name with a non-ASCII character or an escape.")
    lines.append("IDENT_NAME: /[A-Za-z_$][A-Za-z0-9_$]*/")
    lines.append("// IDENT_NOT_ASYNC: IDENT_NYA without async (a for-of target: `for (async of x)` is refused).")
    lines.append("IDENT_NOT_ASYNC: /%s/" % ident_regex(("yield", "await", "async")))
    lines.append("// IDENT_NAME_FIELD: any ASCII name but get, set and static (a class field that a line break ends).")
    lines.append("IDENT_NAME_FIELD: /%s/" % _ascii_keyword_free(["get", "set", "static"]))
    lines.append("IDENT_U: /%s/" % non_ascii_name_regex())
    lines.append("PRIVATE_NAME: /#%s/" % name_regex())
    lines.append(END)
    return "\n".join(lines)


def main():
    arg = sys.argv[1] if len(sys.argv) > 1 else "--check"
    text = open(GRAMMAR, encoding="utf-8").read()
    pat = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    new = pat.sub(lambda m: block(), text)
    if arg == "--write":
        open(GRAMMAR, "w", encoding="utf-8").write(new)
    elif new != text:
        sys.exit("grammars/javascript.lark identifier block is out of date: run python -m tools.js_grammar --write")


if __name__ == "__main__":
    main()
