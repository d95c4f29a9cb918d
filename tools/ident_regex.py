"""Identifier regexes that exclude a set of keywords, without lookaround.

Lark and llguidance share no lookahead, and cfgmask refuses lookaround, so
"an identifier that is not a reserved word" has to be a plain regex. It is
built from a trie of the reserved words: at each trie node (a prefix of some
reserved word) the identifier may

* stop, unless the prefix is itself a reserved word;
* continue with a character that leaves the trie, after which any
  identifier characters may follow;
* continue along the trie.

Classes are written as negated classes over the ASCII characters an
identifier cannot contain, so every non-ASCII character (minus an explicit
exclusion list) stays in, exactly as in the languages' own lexers.

Used by tools/sql_ident.py and tools/js_ident.py, which write the generated
terminals into grammars/sql.lark and grammars/javascript.lark.
"""

__all__ = ["keyword_free_ident", "char_class"]


def _expand(spec):
    """'A-Za-z_' -> set of characters."""
    out, i = set(), 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            out |= {chr(c) for c in range(ord(spec[i]), ord(spec[i + 2]) + 1)}
            i += 3
        else:
            out.add(spec[i])
            i += 1
    return out


def _esc(c):
    ch = chr(c)
    if ch.isascii() and (ch.isalnum() or ch in "_#%:@`{}!\"&',;<=>~"):
        return ch
    if ch in "[]^-\\":
        return "\\" + ch
    if c < 0x100:
        return "\\x%02x" % c
    return "\\u%04x" % c


def render_set(chars, esc=None):
    """The body of a character class matching ``chars``, in ranges; ``esc`` renders
    one code point (default: this module's escaping)."""
    esc = esc or _esc
    codes = sorted(ord(c) for c in chars)
    out, i = [], 0
    while i < len(codes):
        j = i
        while j + 1 < len(codes) and codes[j + 1] == codes[j] + 1:
            j += 1
        a, b = codes[i], codes[j]
        out.append(esc(a) if a == b else esc(a) + ("" if b == a + 1 else "-") + esc(b))
        i = j + 1
    return "".join(out)


def char_class(allowed_ascii, excluded_non_ascii=""):
    """Negated class: the ASCII characters of `allowed_ascii` plus every
    non-ASCII character except `excluded_non_ascii`."""
    bad = {chr(c) for c in range(128)} - set(allowed_ascii)
    bad |= set(excluded_non_ascii)
    return "[^" + render_set(bad) + "]"


def keyword_free_ident(words, first, cont, case_insensitive=False,
                       excluded_non_ascii="", escape=None):
    """Regex for identifiers (first char in `first`, then `cont`, plus all
    non-ASCII characters not in `excluded_non_ascii`; `escape`, if given, is
    a regex alternative allowed wherever a character is) that are not in
    `words`."""
    first_set, cont_set = _expand(first), _expand(cont)
    cont_re = char_class(cont_set, excluded_non_ascii)
    if escape:
        cont_re = "(?:%s|%s)" % (cont_re, escape)
    trie = {}
    for w in words:
        node = trie
        for ch in (w.lower() if case_insensitive else w):
            node = node.setdefault(ch, {})
        node[""] = {}

    def rec(node, is_first):
        letters = sorted(k for k in node if k)
        excluded = set(letters)
        if case_insensitive:
            excluded |= {c.upper() for c in letters}
        leave = char_class((first_set if is_first else cont_set) - excluded, excluded_non_ascii)
        if escape:
            leave = "(?:%s|%s)" % (leave, escape)
        alts = [leave + cont_re + "*"]
        for ch in letters:
            lit = "[%s%s]" % (ch.upper(), ch) if case_insensitive and ch.isalpha() else _lit(ch)
            alts.append(lit + rec(node[ch], False))
        body = "(?:" + "|".join(alts) + ")"
        if is_first:
            return body
        return body + ("" if "" in node else "?")

    return rec(trie, True)


def _lit(ch):
    return ch if ch.isalnum() or ch == "_" else "\\\\" + ch
