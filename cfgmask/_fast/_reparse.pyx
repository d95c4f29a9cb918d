# cython: language_level=3
"""Python's regex parser (``re._parser.parse``) for the common syntax, in C.

:func:`parse` returns exactly the tree ``re._parser.parse(pattern, flags)``
returns -- a ``re._parser.SubPattern`` over a ``re._parser.State``, with the
same ``(opcode, argument)`` items, the same normalisations (a one-character
class is a ``LITERAL``/``NOT_LITERAL``, ``[^..]`` starts with ``NEGATE``,
``\\d`` is ``IN [(CATEGORY, ..)]``, duplicate class items dropped, a common
prefix of alternatives moved out, an alternation of characters made a class,
flag-less ``(?:..)`` spliced into its parent) and the same state (flags with
``SRE_FLAG_UNICODE`` added, group names, group widths, look-behind groups) --
or ``None`` where it gives up.  It gives up on everything outside the syntax it
covers and on every pattern ``re`` would refuse or warn about, so that the
caller runs ``re._parser.parse`` itself and the error or warning is
``re``'s own.  ``re._parser`` is the reference; :mod:`cfgmask.automata.reparse`
is the switch, ``tests/test_reparse.py`` the comparison.

Covered: literals; the escapes ``\\a \\f \\n \\r \\t \\v \\\\ \\xhh \\uhhhh
\\Uhhhhhhhh``, octal ``\\0..``/``\\ooo``, escaped non-letters; ``\\d \\w \\s
\\D \\W \\S`` in and out of classes; ``\\A \\Z \\b \\B ^ $``; classes with
ranges and negation; ``.``; groups ``(..)``, ``(?:..)``, ``(?P<name>..)``,
``(?>..)``, comments ``(?#..)``; look-arounds ``(?=..) (?!..) (?<=..)
(?<!..)``; the flags ``i m s a u`` inline at the start and scoped
``(?i-s:..)``; alternation; ``* + ? {m} {m,} {,n} {m,n}`` with their lazy and
possessive forms.  Given up on: verbose mode (``x``), ``L``, ``t``,
backreferences and conditionals, ``\\N{..}``, bytes, more than
``MAX_NESTING`` nested groups, and every error.

Invariants: the items, constants and helper objects are ``re._parser``'s own
(``SubPattern``, ``State``, the opcode constants, the shared ``CATEGORIES`` /
``ESCAPES`` items), so identity tests (``op is LITERAL``) hold; the tree is
new on every call (a literal's ``(LITERAL, c)`` tuple may be shared, tuples
are immutable); nothing here imports cfgmask.
"""

from re import _parser as _sp

cdef object SubPattern = _sp.SubPattern
cdef object State = _sp.State

cdef object LITERAL = _sp.LITERAL
cdef object NOT_LITERAL = _sp.NOT_LITERAL
cdef object IN = _sp.IN
cdef object RANGE = _sp.RANGE
cdef object NEGATE = _sp.NEGATE
cdef object ANY = _sp.ANY
cdef object AT = _sp.AT
cdef object AT_BEGINNING = _sp.AT_BEGINNING
cdef object AT_END = _sp.AT_END
cdef object BRANCH = _sp.BRANCH
cdef object SUBPATTERN = _sp.SUBPATTERN
cdef object ASSERT = _sp.ASSERT
cdef object ASSERT_NOT = _sp.ASSERT_NOT
cdef object ATOMIC_GROUP = _sp.ATOMIC_GROUP
cdef object MAX_REPEAT = _sp.MAX_REPEAT
cdef object MIN_REPEAT = _sp.MIN_REPEAT
cdef object POSSESSIVE_REPEAT = _sp.POSSESSIVE_REPEAT
cdef object MAXREPEAT = _sp.MAXREPEAT

cdef long F_I = _sp.SRE_FLAG_IGNORECASE
cdef long F_M = _sp.SRE_FLAG_MULTILINE
cdef long F_S = _sp.SRE_FLAG_DOTALL
cdef long F_A = _sp.SRE_FLAG_ASCII
cdef long F_U = _sp.SRE_FLAG_UNICODE
cdef long TYPE_FLAGS = _sp.TYPE_FLAGS
# the flags a pattern may be parsed under here; the others change parsing
# (verbose) or make fix_flags / _parse_flags raise (locale, template, debug)
cdef long HANDLED_FLAGS = F_I | F_M | F_S | F_A | F_U

MAX_NESTING = 100   # deeper patterns go to re._parser (it recurses in Python; this recurses in C)
cdef int _MAX_NESTING = MAX_NESTING

# re._parser's own items: _escape / _class_escape return these very objects
cdef dict _CATEGORIES = _sp.CATEGORIES
cdef dict _ESCAPES = _sp.ESCAPES
cdef list _LIT = [(LITERAL, i) for i in range(256)]
cdef tuple _LIT_LBRACE = (LITERAL, ord("{"))
cdef tuple _LIT_DASH = (LITERAL, ord("-"))
cdef tuple _NEGATE_ITEM = (NEGATE, None)
cdef tuple _AT_BOUNDARY = _CATEGORIES[u"\\b"]

# escape_code's answers that are not code points
cdef enum:
    CAT = -1        # \d \D \s \S \w \W
    AT_ITEM = -2    # \A \Z \b \B outside a class
    KEYS = 64       # class items de-duplicated in C; re._parser's _uniq past that


class _GiveUp(Exception):
    """The pattern is outside the covered syntax or not valid: re._parser decides."""


cdef inline bint _is_hex(Py_UCS4 c):
    return (c >= u'0' and c <= u'9') or (c >= u'a' and c <= u'f') or (c >= u'A' and c <= u'F')


cdef inline int _hex_value(Py_UCS4 c):
    if c <= u'9':
        return <int>c - 48
    if c >= u'a':
        return <int>c - 87
    return <int>c - 55


cdef inline bint _is_oct(Py_UCS4 c):
    return c >= u'0' and c <= u'7'


cdef inline bint _is_digit(Py_UCS4 c):
    return c >= u'0' and c <= u'9'


cdef inline bint _is_ascii_letter(Py_UCS4 c):
    return (c >= u'a' and c <= u'z') or (c >= u'A' and c <= u'Z')


cdef inline long _flag_of(Py_UCS4 c):
    """The flag an inline flag letter sets, 0 for a letter not handled here."""
    if c == u'i':
        return F_I
    if c == u'm':
        return F_M
    if c == u's':
        return F_S
    if c == u'a':
        return F_A
    if c == u'u':
        return F_U
    return 0


cdef inline object _literal(Py_UCS4 c):
    if c < 256:
        return _LIT[<Py_ssize_t>c]
    return (LITERAL, <long>c)


cdef class _Parser:
    """One parse: the text, the position, re._parser's State."""
    cdef str s
    cdef Py_ssize_t n
    cdef Py_ssize_t pos
    cdef object state
    cdef object cat       # the category or anchor item escape_code last read
    cdef dict classes     # class text -> its item, as read_class returned it

    def __cinit__(self, str s, flags):
        self.s = s
        self.n = len(s)
        self.pos = 0
        self.state = State()
        self.state.flags = flags
        self.state.str = s
        self.classes = {}

    cdef object run(self):
        # as re._parser.parse: the alternation, fix_flags, "unbalanced parenthesis"
        cdef object p = self.alternation(0)
        if self.pos < self.n:
            raise _GiveUp()
        # the flags stay Python objects, as in re (a RegexFlag argument stays one)
        flags = self.state.flags
        if not (flags & F_A):
            flags |= F_U
        elif flags & F_U:
            raise _GiveUp()          # fix_flags: ASCII and UNICODE are incompatible
        self.state.flags = flags
        return p

    cdef inline bint at(self, Py_UCS4 c):
        return self.pos < self.n and self.s[self.pos] == c

    cdef long hex_digits(self, int k) except -1:
        # getwhile(k, HEXDIGITS) must find exactly k digits
        cdef long v = 0
        cdef int i
        cdef Py_UCS4 c
        if self.pos + k > self.n:
            raise _GiveUp()
        for i in range(k):
            c = self.s[self.pos + i]
            if not _is_hex(c):
                raise _GiveUp()
            v = v * 16 + _hex_value(c)
        self.pos += k
        return v

    cdef long escape_code(self, bint in_class) except -3:
        """The escape whose backslash is just behind ``pos``, as ``_escape`` /
        ``_class_escape`` read it: its code point, or ``CAT`` (a ``\d``-like
        category; :attr:`cat` is its ``(IN, [(CATEGORY, ..)])`` item) or
        ``AT_ITEM`` (outside a class, ``\A \Z \b \B``; :attr:`cat` is the item)."""
        cdef Py_UCS4 c, d
        cdef long v
        cdef int k
        if self.pos >= self.n:
            raise _GiveUp()           # "bad escape (end of pattern)"
        c = self.s[self.pos]
        self.pos += 1
        # the order of re's lookups: in a class ESCAPES then CATEGORIES, outside
        # the reverse (\b is a backspace in a class, a word boundary outside)
        if c == u'b':
            if in_class:
                return 8
            self.cat = _AT_BOUNDARY
            return AT_ITEM
        if c == u'a':
            return 7
        if c == u'f':
            return 12
        if c == u'n':
            return 10
        if c == u'r':
            return 13
        if c == u't':
            return 9
        if c == u'v':
            return 11
        if c == u'\\':
            return 92
        if c == u'd' or c == u'D' or c == u's' or c == u'S' or c == u'w' or c == u'W':
            self.cat = _CATEGORIES[u"\\" + c]
            return CAT
        if c == u'A' or c == u'Z' or c == u'B':
            if in_class:
                raise _GiveUp()       # bad escape
            self.cat = _CATEGORIES[u"\\" + c]
            return AT_ITEM
        if c == u'x':
            return self.hex_digits(2)
        if c == u'u':
            return self.hex_digits(4)
        if c == u'U':
            v = self.hex_digits(8)
            if v > 0x10FFFF:
                raise _GiveUp()
            return v
        if in_class:
            if _is_oct(c):
                # up to two more octal digits, at most 0o377
                v = <int>c - 48
                k = 0
                while k < 2 and self.pos < self.n and _is_oct(self.s[self.pos]):
                    v = v * 8 + (<int>self.s[self.pos] - 48)
                    self.pos += 1
                    k += 1
                if v > 0o377:
                    raise _GiveUp()
                return v
        else:
            if c == u'0':
                v = 0
                k = 0
                while k < 2 and self.pos < self.n and _is_oct(self.s[self.pos]):
                    v = v * 8 + (<int>self.s[self.pos] - 48)
                    self.pos += 1
                    k += 1
                return v
            if c >= u'1' and c <= u'7' and self.pos + 1 < self.n:
                # three octal digits are an octal escape; anything else after
                # \1..\9 is a group reference (not covered)
                d = self.s[self.pos]
                if _is_oct(d) and _is_oct(self.s[self.pos + 1]):
                    v = (<int>c - 48) * 64 + (<int>d - 48) * 8 + (<int>self.s[self.pos + 1] - 48)
                    if v > 0o377:
                        raise _GiveUp()
                    self.pos += 2
                    return v
        if _is_digit(c) or _is_ascii_letter(c):
            raise _GiveUp()           # a group reference, \N{..} or a bad escape
        return <long>c

    cdef object char_class(self):
        """The item of the class whose ``[`` is just behind ``pos``, read once
        per distinct class text in this pattern.

        Generated patterns repeat their classes (sql.lark's identifier repeats
        one class ~900 times): a class already read is looked up by its text,
        found by a scan that ends where re's reading ends (the first ``]`` that
        is neither escaped nor the first item), and answered with a new list of
        the same (immutable) items, so that few new objects reach the cyclic
        GC, which otherwise costs more than the parse.  The scan only chooses
        the key: a class is stored under the text its reading consumed, and
        that reading depends on nothing outside the text."""
        cdef Py_ssize_t start = self.pos - 1
        cdef Py_ssize_t i = self.pos
        cdef Py_ssize_t n = self.n
        cdef str s = self.s
        cdef object got
        if i < n and s[i] == u'^':
            i += 1
        if i < n and s[i] == u']':
            i += 1
        while i < n and s[i] != u']':
            i += 2 if s[i] == u'\\' else 1
        if i < n:
            got = self.classes.get(s[start:i + 1])
            if got is not None:
                self.pos = i + 1
                if got[0] is IN:
                    return (IN, list(got[1]))
                return got
        got = self.read_class()
        self.classes[s[start:self.pos]] = got
        if got[0] is IN:
            return (IN, list(got[1]))
        return got

    cdef object read_class(self):
        """The item of the class whose ``[`` is just behind ``pos``.

        Items are kept as C keys (kind, lo, hi) next to the list, so that
        duplicates are dropped as they come (re's ``_uniq`` keeps the first);
        past ``KEYS`` items the list is de-duplicated as re does it."""
        cdef str s = self.s
        cdef Py_ssize_t n = self.n
        cdef Py_UCS4 c, c2
        cdef bint negate = False
        cdef list items = []
        cdef long v1, v2
        cdef object item, cat1
        cdef long keys_kind[KEYS]
        cdef long keys_lo[KEYS]
        cdef long keys_hi[KEYS]
        cdef int nkeys = 0
        cdef int j
        cdef long kind, klo, khi
        cdef bint overflow = False
        cdef bint seen
        if self.pos < n and s[self.pos] == u'[':
            raise _GiveUp()           # FutureWarning: possible nested set
        if self.pos < n and s[self.pos] == u'^':
            negate = True
            self.pos += 1
        while True:
            if self.pos >= n:
                raise _GiveUp()       # unterminated character set
            c = s[self.pos]
            self.pos += 1
            if c == u']' and (nkeys or overflow):
                break
            cat1 = None
            if c == u'\\':
                v1 = self.escape_code(True)
                if v1 == CAT:
                    cat1 = self.cat[1][0]      # the (CATEGORY, ..) item re appends
            else:
                if (c == u'-' or c == u'&' or c == u'~' or c == u'|') and (nkeys or overflow) \
                        and self.pos < n and s[self.pos] == c:
                    raise _GiveUp()   # FutureWarning: possible set operation
                v1 = <long>c
            if self.pos < n and s[self.pos] == u'-' and not (self.pos + 1 < n and s[self.pos + 1] == u']'):
                self.pos += 1
                if self.pos >= n:
                    raise _GiveUp()
                c2 = s[self.pos]
                self.pos += 1
                if c2 == u'\\':
                    v2 = self.escape_code(True)
                else:
                    if c2 == u'-':
                        raise _GiveUp()   # FutureWarning: possible set difference
                    v2 = <long>c2
                if cat1 is not None or v2 == CAT or v2 < v1:
                    raise _GiveUp()   # bad character range
                kind, klo, khi = 1, v1, v2
                item = (RANGE, (v1, v2))
            elif cat1 is not None:
                kind, klo, khi = 2, <long>cat1[1], 0
                item = cat1
            else:
                kind, klo, khi = 0, v1, v1
                item = _literal(<Py_UCS4>v1)
            # "x-]": the item, then a literal "-" (read by the next round as "-"
            # followed by "]", which ends the class as re does)
            if overflow:
                items.append(item)
                continue
            seen = False
            for j in range(nkeys):
                if keys_kind[j] == kind and keys_lo[j] == klo and keys_hi[j] == khi:
                    seen = True
                    break
            if seen:
                continue
            if nkeys == KEYS:
                overflow = True
                items.append(item)
                continue
            keys_kind[nkeys] = kind
            keys_lo[nkeys] = klo
            keys_hi[nkeys] = khi
            nkeys += 1
            items.append(item)
        if overflow:
            items = list(dict.fromkeys(items))    # re._parser's _uniq
        if len(items) == 1 and items[0][0] is LITERAL:
            if negate:
                return (NOT_LITERAL, items[0][1])
            return items[0]
        if negate:
            items.insert(0, _NEGATE_ITEM)
        return (IN, items)

    cdef object escape_item(self):
        """The item of an escape outside a class (re's shared items for
        categories and anchors)."""
        cdef long v = self.escape_code(False)
        if v == CAT or v == AT_ITEM:
            return self.cat
        return _literal(<Py_UCS4>v)

    cdef object alternation(self, int depth):
        """``_parse_sub``: ``a|b|c``, with its two rewrites of the alternatives."""
        cdef list items = []
        cdef list datas
        cdef list data
        cdef list out
        cdef list chars
        cdef object prefix, op, av
        cdef bint shared, all_chars
        if depth > _MAX_NESTING:
            raise _GiveUp()
        while True:
            items.append(self.sequence(depth, depth == 0 and not items))
            if self.pos < self.n and self.s[self.pos] == u'|':
                self.pos += 1
            else:
                break
        if len(items) == 1:
            return items[0]
        datas = [item.data for item in items]
        out = []
        # all alternatives start with an equal item: move it out
        while True:
            prefix = None
            shared = True
            for data in datas:
                if not data:
                    shared = False
                    break
                if prefix is None:
                    prefix = data[0]
                elif data[0] != prefix:
                    shared = False
                    break
            if not shared:
                break
            for data in datas:
                del data[0]
            out.append(prefix)
        # every alternative one literal or non-negated class: one class
        chars = []
        all_chars = True
        for data in datas:
            if len(data) != 1:
                all_chars = False
                break
            op, av = data[0]
            if op is LITERAL:
                chars.append(data[0])
            elif op is IN and av[0][0] is not NEGATE:
                chars.extend(av)
            else:
                all_chars = False
                break
        if all_chars:
            out.append((IN, list(dict.fromkeys(chars))))
        else:
            out.append((BRANCH, (None, items)))
        return SubPattern(self.state, out)

    cdef object sequence(self, int depth, bint first):
        """``_parse``: items up to ``|``, ``)`` or the end."""
        cdef str s = self.s
        cdef Py_ssize_t n = self.n
        cdef Py_ssize_t here, a, i
        cdef Py_UCS4 c, ch
        cdef list data = []
        cdef object state = self.state
        cdef object lo, hi, last, op, item, rop, p, name, group, lookbehind
        cdef long add, dele, f, dig
        cdef int direction
        cdef bint capture, atomic
        while self.pos < n:
            c = s[self.pos]
            if c == u'|' or c == u')':
                break
            self.pos += 1
            if c == u'\\':
                data.append(self.escape_item())
            elif c == u'[':
                data.append(self.char_class())
            elif c == u'*' or c == u'+' or c == u'?' or c == u'{':
                here = self.pos
                if c == u'?':
                    lo, hi = 0, 1
                elif c == u'*':
                    lo, hi = 0, MAXREPEAT
                elif c == u'+':
                    lo, hi = 1, MAXREPEAT
                else:
                    if self.at(u'}'):
                        data.append(_LIT_LBRACE)
                        continue
                    lo, hi = 0, MAXREPEAT
                    a = self.pos
                    while self.pos < n and _is_digit(s[self.pos]):
                        self.pos += 1
                    lo_text = s[a:self.pos]
                    if self.at(u','):
                        self.pos += 1
                        a = self.pos
                        while self.pos < n and _is_digit(s[self.pos]):
                            self.pos += 1
                        hi_text = s[a:self.pos]
                    else:
                        hi_text = lo_text
                    if not self.at(u'}'):
                        # not a repeat: "{" is a literal and the text after it is read again
                        data.append(_LIT_LBRACE)
                        self.pos = here
                        continue
                    self.pos += 1
                    if len(lo_text) > 9 or len(hi_text) > 9:
                        raise _GiveUp()   # OverflowError at MAXREPEAT (2**32 - 1)
                    if lo_text:
                        lo = int(lo_text)
                    if hi_text:
                        hi = int(hi_text)
                        if hi < lo:
                            raise _GiveUp()
                if not data:
                    raise _GiveUp()   # nothing to repeat
                last = data[len(data) - 1]   # (wraparound is off: no negative indices)
                op = last[0]
                if op is AT or op is MAX_REPEAT or op is MIN_REPEAT or op is POSSESSIVE_REPEAT:
                    raise _GiveUp()   # nothing to repeat / multiple repeat
                if op is SUBPATTERN and last[1][0] is None and not last[1][1] and not last[1][2]:
                    item = last[1][3]
                else:
                    item = SubPattern(state, [last])
                if self.at(u'?'):
                    self.pos += 1
                    rop = MIN_REPEAT
                elif self.at(u'+'):
                    self.pos += 1
                    rop = POSSESSIVE_REPEAT
                else:
                    rop = MAX_REPEAT
                data[len(data) - 1] = (rop, (lo, hi, item))
            elif c == u'.':
                data.append((ANY, None))
            elif c == u'(':
                capture = True
                atomic = False
                name = None
                add = 0
                dele = 0
                if self.at(u'?'):
                    self.pos += 1
                    if self.pos >= n:
                        raise _GiveUp()
                    ch = s[self.pos]
                    self.pos += 1
                    if ch == u'P':
                        if not self.at(u'<'):
                            raise _GiveUp()   # (?P=name) or an error
                        self.pos += 1
                        a = s.find(u'>', self.pos)
                        if a < 0:
                            raise _GiveUp()
                        name = s[self.pos:a]
                        if not name.isidentifier() or name in state.groupdict:
                            raise _GiveUp()
                        self.pos = a + 1
                    elif ch == u':':
                        capture = False
                    elif ch == u'#':
                        # a comment, read by tokens: "\)" does not end it
                        while True:
                            if self.pos >= n:
                                raise _GiveUp()
                            ch = s[self.pos]
                            if ch == u'\\':
                                if self.pos + 1 >= n:
                                    raise _GiveUp()
                                self.pos += 2
                            else:
                                self.pos += 1
                                if ch == u')':
                                    break
                        continue
                    elif ch == u'=' or ch == u'!' or ch == u'<':
                        direction = 1
                        lookbehind = None
                        if ch == u'<':
                            if self.pos >= n:
                                raise _GiveUp()
                            ch = s[self.pos]
                            self.pos += 1
                            if ch != u'=' and ch != u'!':
                                raise _GiveUp()
                            direction = -1
                            lookbehind = state.lookbehindgroups
                            if lookbehind is None:
                                state.lookbehindgroups = state.groups
                        p = self.alternation(depth + 1)
                        if direction < 0 and lookbehind is None:
                            state.lookbehindgroups = None
                        if not self.at(u')'):
                            raise _GiveUp()
                        self.pos += 1
                        data.append((ASSERT if ch == u'=' else ASSERT_NOT, (direction, p)))
                        continue
                    elif ch == u'>':
                        capture = False
                        atomic = True
                    elif _flag_of(ch) or ch == u'-':
                        # _parse_flags, for the flags handled here
                        if ch != u'-':
                            while True:
                                f = _flag_of(ch)
                                add |= f
                                if (f & TYPE_FLAGS) and (add & TYPE_FLAGS) != f:
                                    raise _GiveUp()
                                if self.pos >= n:
                                    raise _GiveUp()
                                ch = s[self.pos]
                                self.pos += 1
                                if ch == u')' or ch == u'-' or ch == u':':
                                    break
                                if not _flag_of(ch):
                                    raise _GiveUp()
                        if ch == u')':
                            # global flags: only first in the pattern
                            if not first or data:
                                raise _GiveUp()
                            state.flags |= add
                            continue
                        if ch == u'-':
                            if self.pos >= n:
                                raise _GiveUp()
                            ch = s[self.pos]
                            self.pos += 1
                            if not _flag_of(ch):
                                raise _GiveUp()
                            while True:
                                f = _flag_of(ch)
                                if f & TYPE_FLAGS:
                                    raise _GiveUp()
                                dele |= f
                                if self.pos >= n:
                                    raise _GiveUp()
                                ch = s[self.pos]
                                self.pos += 1
                                if ch == u':':
                                    break
                                if not _flag_of(ch):
                                    raise _GiveUp()
                        if add & dele:
                            raise _GiveUp()
                        capture = False
                    else:
                        raise _GiveUp()
                group = state.opengroup(name) if capture else None
                p = self.alternation(depth + 1)
                if not self.at(u')'):
                    raise _GiveUp()   # missing ), unterminated subpattern
                self.pos += 1
                if group is not None:
                    state.closegroup(group, p)
                if atomic:
                    data.append((ATOMIC_GROUP, p))
                else:
                    data.append((SUBPATTERN, (group, add, dele, p)))
            elif c == u'^':
                data.append((AT, AT_BEGINNING))
            elif c == u'$':
                data.append((AT, AT_END))
            else:
                data.append(_literal(c))
        # splice flag-less non-capturing groups into this sequence
        for i in range(len(data) - 1, -1, -1):
            item = data[i]
            if item[0] is SUBPATTERN:
                av = item[1]
                if av[0] is None and not av[1] and not av[2]:
                    data[i:i + 1] = av[3].data
        return SubPattern(state, data)


def parse(pattern, flags=0):
    """``re._parser.parse(pattern, flags)`` for the covered syntax, else ``None``
    (then ``re._parser.parse`` is the answer, error or warning included)."""
    if type(pattern) is not str or not isinstance(flags, int) or flags & ~HANDLED_FLAGS:
        return None
    try:
        return _Parser(pattern, flags).run()
    except (_GiveUp, _sp.error):   # _sp.error: State.opengroup's "too many groups"
        return None


# ---------------------------------------------------------------- widths

cdef object _MAXWIDTH = _sp.MAXWIDTH
cdef object GROUPREF = _sp.GROUPREF
cdef object GROUPREF_EXISTS = _sp.GROUPREF_EXISTS
cdef object SUCCESS = _sp.SUCCESS
cdef object CATEGORY = _sp.CATEGORY
cdef frozenset _UNITCODES = frozenset({ANY, RANGE, IN, LITERAL, NOT_LITERAL, CATEGORY})
cdef frozenset _REPEATCODES = frozenset({MIN_REPEAT, MAX_REPEAT, POSSESSIVE_REPEAT})


def getwidth(subpattern):
    """``subpattern.getwidth()``: the ``(min, max)`` width ``re._parser`` computes
    and caches on each node, computed here (the same arithmetic, the same
    ``MAXWIDTH`` caps, the same cache); for any tree, whichever parser made it.
    Lark orders a terminal's alternatives by these widths, and measuring
    javascript.lark's big terminals in Python was ~13 ms of its load."""
    return _width(subpattern)


cdef tuple _width(object sub):
    cdef object w = sub.width
    if w is not None:
        return w
    cdef object lo = 0, hi = 0, i, j, l, h, op, av, alt
    for op, av in sub.data:
        if op is BRANCH:
            i = _MAXWIDTH
            j = 0
            for alt in av[1]:
                l, h = _width(alt)
                i = min(i, l)
                j = max(j, h)
            lo = lo + i
            hi = hi + j
        elif op is ATOMIC_GROUP:
            i, j = _width(av)
            lo = lo + i
            hi = hi + j
        elif op is SUBPATTERN:
            i, j = _width(av[3])     # (group, add flags, del flags, body); no negative index here
            lo = lo + i
            hi = hi + j
        elif op in _REPEATCODES:
            i, j = _width(av[2])
            lo = lo + i * av[0]
            if av[1] == MAXREPEAT and j:
                hi = _MAXWIDTH
            else:
                hi = hi + j * av[1]
        elif op in _UNITCODES:
            lo = lo + 1
            hi = hi + 1
        elif op is GROUPREF:
            i, j = sub.state.groupwidths[av]
            lo = lo + i
            hi = hi + j
        elif op is GROUPREF_EXISTS:
            i, j = _width(av[1])
            if av[2] is not None:
                l, h = _width(av[2])
                i = min(i, l)
                j = max(j, h)
            else:
                i = 0
            lo = lo + i
            hi = hi + j
        elif op is SUCCESS:
            break
    w = (min(lo, _MAXWIDTH), min(hi, _MAXWIDTH))
    sub.width = w
    return w
