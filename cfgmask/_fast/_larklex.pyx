# cython: language_level=3, boundscheck=False, wraparound=False
"""The tokens of ``.lark`` text: ``cfgmask.frontends.lark_parse``'s scanner in C.

``scan(src, codes)`` returns ``(kinds, starts, ends)``: the kind of each token
and the span of its text, exactly what ``lark_parse._lex_regex`` (one
``re.finditer`` over an alternation, the reference) gives as ``m.lastindex``
and ``m.span(m.lastindex)``.  Before each token the ignored input (comments,
line continuations, blanks) is skipped; then the token kinds are tried in
order, the first that matches wins (not the longest), and a character no kind
matches is one ERR token; the last token is END, empty, at the end of the
text (twice when skipped text ends the text: ``finditer`` then matches END
again, empty).  ``codes`` gives the kind numbers in ``lark_parse.TOKEN_KINDS`` order.

Why: the regex engine tried up to 28 alternatives per token and cost ~540
instructions per byte; javascript.lark is 358 KB, 25k tokens, ~25 ms.

Character classes are those of Python's ``re`` on ``str`` patterns: ``\\s`` is
``str.isspace`` (Unicode), ``\\d`` is ``str.isdecimal`` (Unicode), ``[a-z]`` and
the other ranges ASCII.  This module imports nothing from cfgmask.
"""

from cpython.unicode cimport Py_UNICODE_ISDECIMAL, Py_UNICODE_ISSPACE


cdef inline bint _lower(Py_UCS4 c):
    return c >= 97 and c <= 122


cdef inline bint _upper(Py_UCS4 c):
    return c >= 65 and c <= 90


cdef inline bint _digit_ascii(Py_UCS4 c):
    return c >= 48 and c <= 57


cdef inline bint _rule_start(Py_UCS4 c):
    # [_a-z]
    return c == 95 or _lower(c)


cdef Py_ssize_t _skip_ignored(str s, Py_ssize_t p, Py_ssize_t n):
    # (?:\s*(?://|#)[^\n]*|\\ *\n|[ \t]+)*, each round the first alternative that matches
    cdef Py_ssize_t q
    cdef Py_UCS4 c
    while p < n:
        q = p
        while q < n and Py_UNICODE_ISSPACE(s[q]):
            q += 1
        if q < n and (s[q] == u'#' or (s[q] == u'/' and q + 1 < n and s[q + 1] == u'/')):
            while q < n and s[q] != u'\n':
                q += 1
            p = q
            continue
        c = s[p]
        if c == u'\\':
            q = p + 1
            while q < n and s[q] == u' ':
                q += 1
            if q < n and s[q] == u'\n':
                p = q + 1
                continue
        if c == u' ' or c == u'\t':
            while p < n and (s[p] == u' ' or s[p] == u'\t'):
                p += 1
            continue
        break
    return p


cdef Py_ssize_t _regexp(str s, Py_ssize_t p, Py_ssize_t n):
    # /(?!/)  (?:[^/\\]+|\\[/\\]?)* (atomic)  /[imslux]*   -> end, or -1
    cdef Py_ssize_t q = p + 1
    cdef Py_UCS4 c
    if q < n and s[q] == u'/':
        return -1
    while q < n:
        c = s[q]
        if c == u'/':
            break
        q += 1
        if c == u'\\' and q < n and (s[q] == u'/' or s[q] == u'\\'):
            q += 1
    if q >= n:
        return -1
    q += 1
    while q < n and s[q] in u'imslux':
        q += 1
    return q


cdef Py_ssize_t _string(str s, Py_ssize_t p, Py_ssize_t n):
    # "  (?:[^"\\\n]+|\\["\\]?)* (atomic)  "i?   -> end, or -1
    cdef Py_ssize_t q = p + 1
    cdef Py_UCS4 c
    while q < n:
        c = s[q]
        if c == u'"' or c == u'\n':
            break
        q += 1
        if c == u'\\' and q < n and (s[q] == u'"' or s[q] == u'\\'):
            q += 1
    if q >= n or s[q] != u'"':
        return -1
    q += 1
    if q < n and s[q] == u'i':
        q += 1
    return q


cdef Py_ssize_t _name(str s, Py_ssize_t p, Py_ssize_t n, bint upper):
    # _?[a-z][_a-z0-9]* (or the upper-case TERMINAL form)   -> end, or -1
    cdef Py_ssize_t q = p
    cdef Py_UCS4 c
    if s[q] == u'_':
        q += 1
    if q >= n:
        return -1
    c = s[q]
    if not (_upper(c) if upper else _lower(c)):
        return -1
    q += 1
    while q < n:
        c = s[q]
        if not (c == u'_' or _digit_ascii(c) or (_upper(c) if upper else _lower(c))):
            break
        q += 1
    return q


cdef Py_ssize_t _newline(str s, Py_ssize_t p, Py_ssize_t n):
    # \r?\n   -> end, or -1
    if s[p] == u'\n':
        return p + 1
    if s[p] == u'\r' and p + 1 < n and s[p + 1] == u'\n':
        return p + 2
    return -1


cdef bint _starts(str s, Py_ssize_t p, Py_ssize_t n, str lit):
    cdef Py_ssize_t k = len(lit)
    return p + k <= n and s[p:p + k] == lit


def scan(str src, codes):
    """``(kinds, starts, ends)`` of the tokens of ``src`` (see the module docstring)."""
    (c_regexp, c_string, c_rule, c_terminal, c_nl_or, c_nl, c_number, c_override, c_declare,
     c_extend, c_ignore, c_import, c_modifiers, c_dotdot, c_to, c_op, c_dot, c_lbra, c_lbrace,
     c_lpar, c_or, c_rbra, c_rbrace, c_rpar, c_tilde, c_colon, c_comma, c_end, c_err) = codes
    # the tokens of one character that no earlier kind can start
    single = {u'.': c_dot, u'[': c_lbra, u'{': c_lbrace, u'(': c_lpar, u'|': c_or, u']': c_rbra,
              u'}': c_rbrace, u')': c_rpar, u'~': c_tilde, u':': c_colon, u',': c_comma}
    cdef Py_ssize_t n = len(src)
    cdef Py_ssize_t p = 0, q, w
    cdef Py_UCS4 c, d
    kinds, starts, ends = [], [], []
    while True:
        q = p
        p = _skip_ignored(src, p, n)
        if p >= n:
            kinds.append(c_end)
            starts.append(n)
            ends.append(n)
            if q < n:
                # finditer: that match was not empty (skipped text, then END), so it
                # tries again at the end and matches END once more, empty
                kinds.append(c_end)
                starts.append(n)
                ends.append(n)
            break
        c = src[p]
        d = src[p + 1] if p + 1 < n else 0
        kind = None
        q = -1
        if c == u'/':
            q = _regexp(src, p, n)
            if q >= 0:
                kind = c_regexp
        elif c == u'"':
            q = _string(src, p, n)
            if q >= 0:
                kind = c_string
        if kind is None and (_lower(c) or (c == u'_' and _lower(d))):
            q = _name(src, p, n, False)
            kind = c_rule
        elif kind is None and (_upper(c) or (c == u'_' and _upper(d))):
            q = _name(src, p, n, True)
            kind = c_terminal
        elif kind is None and (c == u'\n' or c == u'\r'):
            q = _newline(src, p, n)
            if q >= 0:
                w = q
                while w < n and Py_UNICODE_ISSPACE(src[w]):
                    w += 1
                if w < n and src[w] == u'|':
                    q, kind = w + 1, c_nl_or
                else:
                    q, kind = w, c_nl
        if kind is None:
            # NUMBER: [+-]?\d+
            q = p + 1 if (c == u'+' or c == u'-') else p
            if q < n and Py_UNICODE_ISDECIMAL(src[q]):
                q += 1
                while q < n and Py_UNICODE_ISDECIMAL(src[q]):
                    q += 1
                kind = c_number
        if kind is None and c == u'%':
            for lit, code in ((u"%override", c_override), (u"%declare", c_declare),
                              (u"%extend", c_extend), (u"%ignore", c_ignore), (u"%import", c_import)):
                if _starts(src, p, n, lit):
                    q, kind = p + len(lit), code
                    break
        if kind is None and (c == u'!' or c == u'?'):
            # RULE_MODIFIERS: (?:!\??|\?!?)(?=[_a-z])
            other = u'?' if c == u'!' else u'!'
            if d == other and p + 2 < n and _rule_start(src[p + 2]):
                q, kind = p + 2, c_modifiers
            elif p + 1 < n and _rule_start(d):
                q, kind = p + 1, c_modifiers
        if kind is None:
            q = p + 1
            if c == u'.' and d == u'.':
                q, kind = p + 2, c_dotdot
            elif c == u'-' and d == u'>':
                q, kind = p + 2, c_to
            elif c == u'+' or c == u'*' or (c == u'?' and not (p + 1 < n and _rule_start(d))):
                kind = c_op
            else:
                # "." here is _DOT: a second one made _DOTDOT above
                kind = single.get(src[p:p + 1], c_err)
        kinds.append(kind)
        starts.append(p)
        ends.append(q)
        p = q
    return kinds, starts, ends
