"""IR (``nodes.Node``) -> a flat :class:`~cfgmask.grammar.Grammar`, built directly.

No Lark text is produced: the rules and terminal patterns go straight into
the ``Grammar`` constructor (:meth:`Builder.grammar_fields` gives its
arguments), and terminal automata built here are handed to the regex memo
(``remember_dfa``, :meth:`Builder.remember_automata`), so ``cfgmask.compile``
finds them.

Layout (one whitespace style, see :data:`STYLES`):

* a value position is one nonterminal per (conjunction, depth); depth only
  matters for ``pretty`` (indentation), capped at :data:`PRETTY_MAX_DEPTH`;
* scalars are single terminals (a whole string literal ``"..."``, a number);
  a ``minLength`` above :data:`MAX_STRING_DFA` is split into 64-character
  chunk lexemes between two quote lexemes; a long ``maxLength`` is a
  character counter on the one string terminal (:func:`string_dfa`);
* objects list the declared properties in schema order (each optional one may
  be skipped), then the additional properties, counted when
  ``minProperties``/``maxProperties`` need it; arrays count positions.

Lexing is greedy over the union of the terminals allowed at a point, so every
place where two terminals meet must be a place where neither can continue:
structural punctuation never extends a value, keys are whole quoted strings,
and chunked strings are used only where no other string can start.

Invariants of the result: exactly the instances of the normalised schema,
written in the chosen style (docs/json-schema.md), no leading or trailing
whitespace; every rule productive and reachable.
"""

import json

from cfgmask.errors import CompileBudgetExceeded, GrammarError
from cfgmask.automata import compile_regex, remember_dfa
from cfgmask.frontends.json_schema import automata as A
from cfgmask.frontends.json_schema import formats as F
from cfgmask.frontends.json_schema import numbers as N
from cfgmask.frontends.json_schema import strings as S
from cfgmask.frontends.json_schema.budget import MAX_CHUNKED_LENGTH, MAX_LITERAL_STATES, check_count
from cfgmask.frontends.json_schema.errors import Unsupported
from cfgmask.frontends.json_schema.loader import display
from cfgmask.frontends.json_schema.nodes import KeySpec
from cfgmask.frontends.json_schema.numbers import integer_modulus
from cfgmask.frontends.json_schema.validate import json_type

STYLES = ("compact", "pretty", "flexible")
# How strings are spelled: "canonical" = what json.dumps(ensure_ascii=False) writes
# (one spelling per value), "any" = every spelling RFC 8259 allows.
ESCAPES = ("canonical", "any")
DEFAULT_ESCAPES = "canonical"
DEFAULT_STYLE = "compact"
FLEXIBLE_MAX_RUN = 8          # at most this many whitespace characters in one place
PRETTY_INDENT = 2
PRETTY_MAX_DEPTH = 16         # deeper levels keep the indentation of this level
MAX_STRING_DFA = 256          # longer minLength alone: chunked; longer maxLength: counted
COUNT_ABOVE = 20_000          # a maxLength whose product automaton would be bigger is counted
# A plain maxLength above this is counted too: the lexer then keeps one state for every
# position further than the longest token from the bound (LazyDFA's resaturation), where
# the unrolled automaton has one per position and each first visit walks the whole trie
# (2-3 ms on a 131k vocabulary: MaskBench's TBM p99.9 tail; its longest token is 76 bytes)
COUNT_PLAIN_ABOVE = 96
CHUNK = 64
MAX_ITEMS_UNROLLED = 100_000


def _ws_class():
    return f"[ \\t\\n\\r]{{0,{FLEXIBLE_MAX_RUN}}}"


class Punct:
    """Terminal texts of the structural characters in one style at one depth."""

    def __init__(self, style, depth):
        if style == "compact":
            self.empty_obj, self.open_obj, self.close_obj = r"\{\}", r"\{", r"\}"
            self.empty_arr, self.open_arr, self.close_arr = r"\[\]", r"\[", r"\]"
            self.comma, self.colon = ",", ":"
        elif style == "pretty":
            inner = "\\n" + " " * (PRETTY_INDENT * (depth + 1))
            outer = "\\n" + " " * (PRETTY_INDENT * depth)
            self.empty_obj, self.open_obj, self.close_obj = r"\{\}", r"\{" + inner, outer + r"\}"
            self.empty_arr, self.open_arr, self.close_arr = r"\[\]", r"\[" + inner, outer + r"\]"
            self.comma, self.colon = "," + inner, ": "
        elif style == "flexible":
            w = _ws_class()
            self.empty_obj, self.open_obj, self.close_obj = rf"\{{{w}\}}", rf"\{{{w}", rf"{w}\}}"
            self.empty_arr, self.open_arr, self.close_arr = rf"\[{w}\]", rf"\[{w}", rf"{w}\]"
            self.comma, self.colon = f"{w},{w}", f"{w}:{w}"
        else:
            raise ValueError(style)


_PUNCT_NAMES = {"empty_obj": "EMPTY_OBJECT", "open_obj": "LBRACE", "close_obj": "RBRACE",
                "empty_arr": "EMPTY_ARRAY", "open_arr": "LSQB", "close_arr": "RSQB",
                "comma": "COMMA", "colon": "COLON"}


# ------------------------------------------------------------ scalar automata

def _compile(text, name, keyword):
    """``compile_regex``, with a too-large automaton reported as :class:`Unsupported` ``keyword``."""
    try:
        return compile_regex(text, name=name)
    except CompileBudgetExceeded:
        raise  # the compile budget, not this keyword: never loosened
    except GrammarError as e:
        # compile_regex's advice ("raise max_states") names a knob the schema API has not
        why = str(e).replace(", so simplify the pattern or raise max_states", "")
        raise Unsupported(keyword, why) from None


def string_dfa(st, norm, pins, canonical=False):
    """``(dfa, text)`` of a :class:`~.nodes.Str` alternative as one whole-string terminal.

    A ``maxLength`` whose product with the other constraints would be too
    large an automaton becomes a character counter stepped next to it
    (:func:`~.automata.counted_string_dfa`)."""
    positives = []  # (dfa, text)
    widths = []
    for pattern, ptr in st.patterns:
        dec = S.pattern_to_decoded(pattern)
        widths.append(S.width(dec))
        text = S.text_regex(dec, canonical)
        positives.append((_compile(text, "pattern", "pattern"), text))
    for f in st.formats:
        widths.append(F.width(f))
        text = F.text(f, canonical)
        positives.append((_compile(text, f"format {f}", "format"), text))
    lo, hi = st.lo, st.hi
    implied = any(w[0] >= lo and (hi is None or (w[1] is not None and w[1] <= hi)) for w in widths)
    count_to = None      # the maxLength left to a counter
    if (lo, hi) != (0, None) and not implied:
        if hi is not None:
            # the product grows like (pattern states) x (hi + 1)
            pattern_states = max((d.n_states for d, _ in positives), default=0)
            too_big = (hi > 4 * MAX_STRING_DFA or
                       positives and (hi > MAX_STRING_DFA or pattern_states * (hi + 1) > COUNT_ABOVE) or
                       not positives and hi > COUNT_PLAIN_ABOVE)
            if too_big:
                count_to, hi = hi, None
        if hi is None:
            if lo > 0:
                # one layer of the character automaton per character counted
                n = 2 + (lo + 1) * A.json_char_dfa(canonical)[0].shape[0]
                if n > A.MAX_STATES:
                    raise Unsupported("minLength", f"minLength {lo} next to a pattern, a format or "
                                      f"another string needs a {n}-state automaton, more than the "
                                      f"limit of {A.MAX_STATES} states (alone it is chunked)")
                positives.append(A.min_length_string_dfa(lo, canonical))
        else:
            positives.append(A.bounded_string_dfa(lo, hi, canonical=canonical))
    if not positives:
        any_text = S.any_string(canonical)
        positives.append((compile_regex(any_text, name="string"), any_text))
    try:
        dfa, text = A.intersect_all([d for d, _ in positives], [t for _, t in positives], pins)
    except Unsupported as e:  # name the keyword that made the product large
        raise Unsupported(_string_keyword(st), e.why) from None
    negatives = []
    for pattern, ptr in st.not_patterns:
        t = S.text_regex(S.pattern_to_decoded(pattern), canonical)
        negatives.append((_compile(t, "pattern", "not"), t))
    for f in st.not_formats:
        t = F.text(f, canonical)
        negatives.append((_compile(t, f"format {f}", "not"), t))
    if st.excluded:
        negatives.append(A.literal_set_dfa(st.excluded, canonical=canonical))
    for nd, nt in negatives:
        try:
            dfa, text = A.subtract(dfa, text, nd, nt, pins)
        except Unsupported as e:  # a negated pattern, format or const/enum
            raise Unsupported("not", e.why) from None
    if count_to is not None and not A.is_empty(dfa):
        dfa, text = A.counted_string_dfa(dfa, text, count_to, canonical, pins)
    if dfa.n_states > A.MAX_STATES:
        raise Unsupported(_string_keyword(st), f"the string automaton has {dfa.n_states} states "
                          f"(limit {A.MAX_STATES})")
    return dfa, text


def _trie_bytes(strs):
    """Nodes of the byte trie of ``strs``: about the states of their literal automaton."""
    total, prev = 1, b""
    for v in sorted({v.encode("utf-8", "surrogatepass") for v in strs}):
        n = min(len(prev), len(v))
        i = 0
        while i < n and prev[i] == v[i]:
            i += 1
        total += len(v) - i + 1
        prev = v
    return total


def _string_keyword(st):
    """The keyword to name when a string alternative's automaton is too large."""
    if st.patterns:
        return "pattern"
    if st.formats:
        return "format"
    return "maxLength" if st.hi is not None else "minLength" if st.lo else "not"


def needs_chunks(st):
    # a long maxLength alone is a counter (string_dfa); chunks are for a long minLength,
    # which a counter cannot express
    long = st.lo > MAX_STRING_DFA
    return (long and not st.patterns and not st.formats
            and not st.not_patterns and not st.not_formats and not st.excluded)


def _bound_keyword(num):
    """The bound whose digits make a range automaton large (for messages)."""
    def digits(x):
        return len(x.as_tuple().digits) if x is not None else 0
    return "maximum" if digits(num.hi) >= digits(num.lo) else "minimum"


def number_dfa(num, pins):
    """``(dfa, text)`` of a :class:`~.nodes.Num` alternative, or None if empty."""
    try:
        return _number_dfa(num, pins)
    except Unsupported as e:
        if e.keyword != "string":
            raise
        # a product of digit automata too large: name the keyword that made it
        kw = "multipleOf" if num.multiple_of or num.not_multiple_of else _bound_keyword(num)
        what = [f"multipleOf {m}" for m in num.multiple_of] + \
            [f"not multipleOf {m}" for m in num.not_multiple_of]
        raise Unsupported(kw, f"{e.why} ({', '.join(what)})" if what else e.why) from None


def _number_dfa(num, pins):
    if num.integer:
        lo, hi = N.integer_bounds(num.lo, num.lo_excl, num.hi, num.hi_excl)
        text = N.integer_range_regex(lo, hi)
        if text is None:
            return None
        dfa = _compile(text, "integer", _bound_keyword(num))
        k = integer_modulus(num.multiple_of) if num.multiple_of else 1
        if k > 1:
            if k > 10_000:
                raise Unsupported("multipleOf", f"multipleOf {k}: the digit automaton would "
                                  f"need {k} states")
            dfa, text = A.integer_multiple_dfa(k, dfa, text, pins,
                                               f"integer multipleOf {k}, {lo}..{hi}")
        for m in num.not_multiple_of:
            km = integer_modulus([m])
            if km == 1:
                return None
            mod, mtext = A.integer_multiple_dfa(km, compile_regex(N.INTEGER, name="integer"),
                                                N.INTEGER, pins, f"integer multipleOf {km}")
            dfa, text = A.subtract(dfa, text, mod, mtext, pins)
        ex = [v for v in num.excluded if json_type(v) == "number" and
              N.to_decimal(v) == N.to_decimal(v).to_integral_value()]
        if ex:
            t = "(?:" + "|".join(N.canonical_regex(v) for v in ex) + ")"
            dfa, text = A.subtract(dfa, text, compile_regex(t, name="excluded"), t, pins)
        if A.is_empty(dfa):
            return None
        if num.zero_fraction:
            dfa, text = A.zero_fraction_dfa(dfa, text, pins)
        return dfa, text
    plain = num.lo is not None or num.hi is not None or num.excluded or num.nonint or \
        num.multiple_of or num.not_multiple_of
    if not plain:
        return compile_regex(N.NUMBER, name="number"), N.NUMBER
    sign_only = N.sign_bound_regex(num)
    if sign_only is not None:
        return compile_regex(sign_only, name="number"), sign_only
    text = N.decimal_range_regex(num.lo, num.lo_excl, num.hi, num.hi_excl)
    if text is None:
        return None
    dfa = _compile(text, "number", _bound_keyword(num))
    for m in num.multiple_of:
        sign, digits, exp = m.normalize().as_tuple()
        p_, j = int("".join(map(str, digits))), -exp
        if j <= 0:
            continue  # integral: handled as an integer (typed._finish_number)
        if p_ > 2000 or j > 12:
            raise Unsupported("multipleOf", f"multipleOf {m}: the digit automaton would be too large")
        dfa, text = A.decimal_multiple_dfa(p_, j, dfa, pins,
                                           f"decimal multipleOf {m} within {text}")
    for m in num.not_multiple_of:
        # the plain decimals that are multiples of m, subtracted (m = p * 10**-j; an integral
        # m is j = 0: an integer part that is a multiple, then only zeros)
        sign, digits, exp = m.normalize().as_tuple()
        p_, j = int("".join(map(str, digits))) * 10 ** max(exp, 0), max(-exp, 0)
        if p_ > 2000 or j > 12:
            raise Unsupported("multipleOf", f"not multipleOf {m}: the digit automaton would be "
                              f"too large")
        any_text = N.decimal_range_regex(None, False, None, False)
        mult, mtext = A.decimal_multiple_dfa(p_, j, compile_regex(any_text, name="number"), pins,
                                             f"decimal multipleOf {m}, any plain decimal")
        dfa, text = A.subtract(dfa, text, mult, mtext, pins)
    if num.nonint:
        t = "-?(?:0|[1-9][0-9]*)\\.[0-9]*[1-9][0-9]*"
        dfa, text = A.intersect_all([dfa, compile_regex(t, name="nonint")], [text, t], pins)
    ex = [v for v in num.excluded if json_type(v) == "number"]
    if ex:
        alts = []
        for v in ex:
            c = N.canonical_regex(v)
            alts.append(f"{c}(?:\\.0+)?" if "." not in c else f"{c}0*")
        t = "(?:" + "|".join(alts) + ")"
        dfa, text = A.subtract(dfa, text, compile_regex(t, name="excluded"), t, pins)
    return (dfa, text) if not A.is_empty(dfa) else None


# ------------------------------------------------------------------ builder

class Builder:
    """Collects terminals and rules while walking the IR from the root."""

    def __init__(self, norm, style, escapes="canonical"):
        if escapes not in ESCAPES:
            raise GrammarError(f"unknown escapes {escapes!r}; choose one of {', '.join(ESCAPES)}",
                               where="escapes", construct="escapes")
        self.canonical = escapes == "canonical"
        if style not in STYLES:
            raise GrammarError(f"unknown whitespace style {style!r}; choose one of {', '.join(STYLES)}",
                               where="whitespace", construct="whitespace")
        self.norm = norm
        self.style = style
        self.term_ids = {}
        self.term_names = []
        self.term_patterns = []
        self.prebuilt = {}       # text -> dfa (memoised ones)
        self.pins = []           # (text, dfa): automata compile_regex cannot rebuild
        self.nt_ids = {}
        self.nt_names = []
        self.rules = []          # (lhs nt, [symbols]): terminal t -> 2t, nonterminal n -> 2n+1
        self.queue = []
        self._puncts = {}
        self._names = set()      # terminal names in use
        self._name_next = {}     # base name -> the suffix its next terminal tries first
        self._families = {}      # (alternative, depth) -> id of its object/array rules
        self._region_cache = {}
        self._counter = 0

    # ---- symbols
    def term(self, text, name, dfa=None):
        tid = self.term_ids.get(text)
        if tid is None:
            tid = self.term_ids[text] = len(self.term_names)
            base = name
            n = self._name_next.get(base, 0)  # resume: 5,000 KEYs stay linear
            if n:
                name = f"{base}_{n}"
            while name in self._names:
                n += 1
                name = f"{base}_{n}"
            self._name_next[base] = n
            self.term_names.append(name)
            self._names.add(name)
            self.term_patterns.append(text)
        return 2 * tid

    def nt(self, key, name):
        nid = self.nt_ids.get(key)
        if nid is None:
            nid = self.nt_ids[key] = len(self.nt_names)
            self.nt_names.append(name)
            return 2 * nid + 1, True
        return 2 * nid + 1, False

    def rule(self, lhs, body):
        self.norm.budget.charge(1)
        self.rules.append((lhs, list(body)))

    def punct(self, depth, which):
        d = min(depth, PRETTY_MAX_DEPTH) if self.style == "pretty" else 0
        p = self._puncts.get(d)
        if p is None:
            p = self._puncts[d] = Punct(self.style, d)
        text = getattr(p, which)
        return self.term(text, _PUNCT_NAMES[which] + (f"_{d}" if self.style == "pretty" else ""))

    def _depth(self, depth):
        return min(depth, PRETTY_MAX_DEPTH + 1) if self.style == "pretty" else 0

    # ---- values
    def value(self, conj, depth, no_chunk=False):
        """Nonterminal (symbol) of the values of ``conj`` at nesting ``depth``."""
        depth = self._depth(depth)
        key = ("v", conj, depth, no_chunk)
        sym, new = self.nt(key, f"value_{len(self.nt_names)}")
        if new:
            self.queue.append((sym, conj, depth, no_chunk))
        return sym

    def run(self, root_conj):
        start = self.value(root_conj, 0)
        while self.queue:
            sym, conj, depth, no_chunk = self.queue.pop()
            self._expand(sym, conj, depth, no_chunk)
        return start

    def _fail_or_skip(self, e, what, where=""):
        self.norm.fail(e.keyword, where, f"{e.why} ({what})")

    def _expand(self, sym, conj, depth, no_chunk):
        if conj:  # for a budget message: a schema this value comes from
            self.norm.budget.where = ("the schema", display(min(conj).partition("\x00")[0]))
        node = self.norm.node(conj)
        n_strings = sum(1 for a in node.alts if a.kind == "str") + \
            sum(1 for a in node.alts if a.kind == "lit" for v in a.values if isinstance(v, str))
        for alt in node.alts:
            k = alt.kind
            if k == "null":
                self.rule(sym, [self.term("null", "NULL")])
            elif k == "bool":
                for v in alt.values:
                    self.rule(sym, [self.term("true" if v else "false", "TRUE" if v else "FALSE")])
            elif k == "num":
                try:
                    res = number_dfa(alt, self.pins)
                except Unsupported as e:
                    self._fail_or_skip(e, "number", alt.where)
                    loose = type(alt)()
                    loose.integer = alt.integer
                    res = number_dfa(loose, self.pins)
                if res is not None:
                    self.rule(sym, [self._scalar(res, "INTEGER" if alt.integer else "NUMBER")])
            elif k == "str":
                if needs_chunks(alt) and n_strings == 1 and not no_chunk:
                    check_count("maxLength", alt.hi, display(alt.where + "/maxLength"),
                                MAX_CHUNKED_LENGTH)  # one grammar symbol per 64 characters
                    check_count("minLength", alt.lo, display(alt.where + "/minLength"),
                                MAX_CHUNKED_LENGTH)
                    self._chunked(sym, alt.lo, alt.hi)
                    continue
                if alt.hi is not None and alt.hi > MAX_STRING_DFA and not alt.patterns and not alt.formats:
                    # a counter (string_dfa): the same ceiling as chunks, named the same way
                    check_count("maxLength", alt.hi, display(alt.where + "/maxLength"),
                                MAX_CHUNKED_LENGTH)
                try:
                    res = string_dfa(alt, self.norm, self.pins, self.canonical)
                except Unsupported as e:
                    self._fail_or_skip(e, "string", alt.where)
                    loose = type(alt)()
                    loose.lo = alt.lo
                    res = string_dfa(loose, self.norm, self.pins, self.canonical)
                if not A.is_empty(res[0]):
                    self.rule(sym, [self._scalar(res, "STRING")])
            elif k == "lit":
                self._literals(sym, alt.values, depth, alt.zero_fraction, alt.nested_zero_fraction)
            elif k == "obj":
                self._object(sym, alt, depth)
            elif k == "arr":
                self._array(sym, alt, depth)

    def _scalar(self, res, name):
        dfa, text = res
        return self.term(text, name)

    # ---- chunked long strings
    def _chunked(self, sym, lo, hi):
        quote = self.term('"', "QUOTE")
        full_dfa, full_text = A.bounded_string_dfa(CHUNK, CHUNK, quoted=False,
                                                   canonical=self.canonical)
        full = self.term(full_text, "CHUNK")
        key = ("chunks", lo, hi)
        k = 0
        first, _ = self.nt(key + (0,), f"chunks_{lo}_{hi}_0")
        self.rule(sym, [quote, first])
        cur = first
        while True:
            base = CHUNK * k
            if hi is None and lo - base < CHUNK:
                # no upper bound: the last piece is "at least lo - base more characters"
                r = lo - base
                if r == 0:
                    self.rule(cur, [quote])
                    r = 1
                t = f"(?:{S.json_char(self.canonical)}){{{r},}}"
                self.rule(cur, [self.term(t, "CHUNK_LAST"), quote])
                break
            if hi is not None:
                if lo <= base <= hi:
                    self.rule(cur, [quote])
                lk, hk = max(1, lo - base), min(CHUNK - 1, hi - base)
                if lk <= hk:
                    d, t = A.bounded_string_dfa(lk, hk, quoted=False, canonical=self.canonical)
                    self.rule(cur, [self.term(t, "CHUNK_LAST"), quote])
                if CHUNK * (k + 1) > hi:
                    break
            nxt, _ = self.nt(key + (k + 1,), f"chunks_{lo}_{hi}_{k + 1}")
            self.rule(cur, [full, nxt])
            cur = nxt
            k += 1

    # ---- literals
    def _literals(self, sym, values, depth, zero_fraction=False, nested_zero_fraction=False):
        strs = [v for v in values if isinstance(v, str)]
        nums = [v for v in values if json_type(v) == "number"]
        if strs:
            size = _trie_bytes(strs)
            check_count("enum", size, self.norm.budget.where[1], MAX_LITERAL_STATES,
                        what=f"{len(strs)} strings whose automaton needs about {size} states")
            dfa, text = A.literal_set_dfa(strs, canonical=self.canonical)
            self.rule(sym, [self.term(text, "LITERAL")])
        if nums:
            texts = sorted({N.constant_regex(v, zero_fraction) for v in nums})
            text = texts[0] if len(texts) == 1 else "(?:" + "|".join(texts) + ")"
            self.rule(sym, [self.term(text, "LITERAL_NUMBER")])
        for v in values:
            t = json_type(v)
            if t == "null":
                self.rule(sym, [self.term("null", "NULL")])
            elif t == "boolean":
                self.rule(sym, [self.term("true" if v else "false", "TRUE" if v else "FALSE")])
            elif t in ("object", "array"):
                self.rule(sym, [self._literal_value(v, depth, nested_zero_fraction)])

    def _literal_value(self, v, depth, zero_fraction=False):
        t = json_type(v)
        depth = self._depth(depth)
        key = ("lit", json.dumps(v, sort_keys=False), depth, zero_fraction)
        sym, new = self.nt(key, f"literal_{len(self.nt_names)}")
        if not new:
            return sym
        if t == "string":
            self.rule(sym, [self.term(A.literal_set_dfa([v], canonical=self.canonical)[1],
                                      "LITERAL")])
        elif t == "number":
            self.rule(sym, [self.term(N.constant_regex(v, zero_fraction), "LITERAL_NUMBER")])
        elif t == "null":
            self.rule(sym, [self.term("null", "NULL")])
        elif t == "boolean":
            self.rule(sym, [self.term("true" if v else "false", "TRUE" if v else "FALSE")])
        elif t == "object":
            if not v:
                self.rule(sym, [self.punct(depth, "empty_obj")])
            else:
                body = [self.punct(depth, "open_obj")]
                for i, (name, x) in enumerate(v.items()):
                    if i:
                        body.append(self.punct(depth, "comma"))
                    body += [self.key(name), self.punct(depth, "colon"),
                             self._literal_value(x, depth + 1, zero_fraction)]
                body.append(self.punct(depth, "close_obj"))
                self.rule(sym, body)
        else:
            if not v:
                self.rule(sym, [self.punct(depth, "empty_arr")])
            else:
                body = [self.punct(depth, "open_arr")]
                for i, x in enumerate(v):
                    if i:
                        body.append(self.punct(depth, "comma"))
                    body.append(self._literal_value(x, depth + 1, zero_fraction))
                body.append(self.punct(depth, "close_arr"))
                self.rule(sym, body)
        return sym

    def key(self, name):
        dfa, text = A.literal_set_dfa([name], canonical=self.canonical)
        return self.term(text, "KEY")

    # ---- objects
    def _region_key(self, spec):
        """Terminal of the keys of an additional-properties region, or None if there are none."""
        cache = self._region_cache
        ck = (tuple(spec.patterns_in), tuple(spec.patterns_out), spec.excluded, tuple(spec.names_conjs))
        if ck in cache:
            return cache[ck]
        pins = self.pins
        positives = []
        try:
            for pattern, ptr in spec.patterns_in:
                t = S.text_regex(S.pattern_to_decoded(pattern), self.canonical)
                positives.append((_compile(t, "pattern", "patternProperties"), t))
            for nc in spec.names_conjs:
                positives.append(self._names_dfa(nc))
        except Unsupported as e:
            self._fail_or_skip(e, "property names")
        if not positives and not spec.patterns_out:
            dfa, text = A.literal_set_dfa(spec.excluded, complement=True, canonical=self.canonical)
            pins.append((text, dfa))
        else:
            if not positives:
                any_text = S.any_string(self.canonical)
                positives.append((compile_regex(any_text, name="string"), any_text))
            try:
                dfa, text = A.intersect_all([d for d, _ in positives], [t for _, t in positives],
                                            pins)
                for pattern, ptr in spec.patterns_out:
                    try:
                        t = S.text_regex(S.pattern_to_decoded(pattern), self.canonical)
                    except Unsupported as e:
                        self._fail_or_skip(e, "patternProperties")
                        continue
                    dfa, text = A.subtract(dfa, text, _compile(t, "pattern", "patternProperties"),
                                           t, pins)
                if spec.excluded:
                    ex = A.literal_set_dfa(spec.excluded, canonical=self.canonical)
                    dfa, text = A.subtract(dfa, text, ex[0], ex[1], pins)
            except Unsupported as e:  # too large a product: refused, or any undeclared key
                if e.keyword == "string":
                    e = Unsupported("patternProperties", e.why)
                self._fail_or_skip(e, "property names")
                dfa, text = A.literal_set_dfa(spec.excluded, complement=True,
                                              canonical=self.canonical)
                pins.append((text, dfa))
        sym = None if A.is_empty(dfa) else self.term(text, "KEY_OTHER")
        cache[ck] = sym
        return sym

    def _names_dfa(self, conj):
        """String automaton of a propertyNames conjunction (its string alternatives)."""
        node = self.norm.node(conj)
        parts = []
        for alt in node.alts:
            if alt.kind == "str":
                parts.append(string_dfa(alt, self.norm, self.pins, self.canonical))
            elif alt.kind == "lit":
                strs = [v for v in alt.values if isinstance(v, str)]
                if strs:
                    parts.append(A.literal_set_dfa(strs, canonical=self.canonical))
        if not parts:
            return A.empty_dfa(), "(?!)"
        dfa, text = parts[0]
        for d, t in parts[1:]:
            dfa, text = A.union(dfa, text, d, t, self.pins)
        return dfa, text

    def _family(self, alt, depth):
        """A per-(alternative, depth) id, so that a family of object/array rules is built once."""
        ids = self._families
        key = (id(alt), self._depth(depth))
        if key in ids:
            return ids[key], False
        ids[key] = self._counter
        self._counter += 1
        return ids[key], True

    def _object(self, sym, o, depth):
        ident, new_family = self._family(o, depth)
        props = o.props
        regions = []
        for spec, conj in o.regions:
            ksym = self._region_key(spec)
            if ksym is not None:
                regions.append((spec, ksym, conj))
        req_count = sum(1 for _, _, r in props if r)
        mx = o.max
        mn = o.min
        if mx is not None and req_count > mx:
            return
        if not regions and len(props) < mn:
            return
        cap = mx if mx is not None else max(mn, 1)
        # witnesses (Obj.witnesses): one flag each, set by a member that is one; the
        # object ends only with every flag set
        wits = getattr(o, "witnesses", [])
        full = (1 << len(wits)) - 1
        if o.min == 0 and req_count == 0 and not wits:
            self.rule(sym, [self.punct(depth, "empty_obj")])
        mn1 = max(mn, 1)
        if not props and not regions:
            return
        comma = self.punct(depth, "comma")
        colon = self.punct(depth, "colon")
        # the witnesses a declared property can be, by its name
        prop_w = [sum(1 << w for w, x in enumerate(wits) if name in x[2]) for name, _, _ in props]
        member_memo = {}

        def member(i, ws):
            """Declared property i as a member that is the witnesses in the mask ws."""
            hit = member_memo.get((i, ws))
            if hit is None:
                name, c, _ = props[i]
                hit = member_memo[(i, ws)] = [self.key(name), colon,
                                              self.value(self._with_values(c, wits, ws), depth + 1)]
            return hit

        def region_member(r, ws):
            """A member of region r that is the witnesses in ws, or None (no such key)."""
            hit = member_memo.get(("r", r, ws), False)
            if hit is False:
                spec, ksym, conj = regions[r]
                if ws:
                    wspec = KeySpec(spec.patterns_in, spec.patterns_out, spec.excluded,
                                    list(spec.names_conjs) +
                                    [x[0] for w, x in enumerate(wits) if ws >> w & 1])
                    ksym = self._region_key(wspec)
                hit = None if ksym is None else \
                    [ksym, colon, self.value(self._with_values(conj, wits, ws), depth + 1)]
                member_memo[("r", r, ws)] = hit
            return hit

        # a region can hold witness w only if some key of it is one
        region_w = [sum(1 << w for w in range(len(wits)) if region_member(r, 1 << w) is not None)
                    for r in range(len(regions))]
        for w, (_, vc, _, kw, at) in enumerate(wits):
            if vc and any(m >> w & 1 for m in region_w):
                # duplicate keys are not excluded among the additional properties: a later
                # copy of the witness's key could be the value a parser keeps
                self.norm.fail(kw, at, "negated, it needs an additional property whose value "
                               "fails its schema, and a later copy of that key (duplicate keys "
                               "cannot be excluded) would be the value a parser keeps")
        n = len(props)
        # dependentRequired among declared properties (Obj.implies): the state also holds
        # the later properties that must be present (an earlier one that requires them is)
        # and those that must be absent (they require an earlier one that is absent)
        pos = {name: i for i, (name, _, _) in enumerate(props)}
        needs = {pos[a]: [pos.get(b) for b in bs] for a, bs in getattr(o, "implies", {}).items()
                 if a in pos}
        needed_by = {}
        for a, bs in needs.items():
            for b in bs:
                if b is not None:
                    needed_by.setdefault(b, []).append(a)

        def N_(i, c, st=(frozenset(), frozenset()), f=0):
            s, new = self.nt(("objN", ident, i, c, st, f),
                             f"object{ident}_{i}_{c}" + (f"_{len(self.nt_names)}" if st[0] or st[1]
                                                        else "") + (f"_w{f}" if f else ""))
            if new:
                todo.append((s, i, c, st, f))
            return s

        def X(c, f):
            s, new = self.nt(("objX", ident, c, f), f"object{ident}_rest_{c}" + (f"_w{f}" if f else ""))
            if new:
                todo.append((s, None, c, None, f))
            return s

        todo = []
        first = N_(0, 0)
        self.rule(sym, [self.punct(depth, "open_obj"), first, self.punct(depth, "close_obj")])
        if not new_family:
            return
        while todo:
            s, i, c, st, f = todo.pop()
            sep = [comma] if c > 0 else []
            nxt_c = c + 1 if mx is not None else min(c + 1, cap)
            if i is None:
                if c >= mn1 and f == full:
                    self.rule(s, [])
                if mx is None or c + 1 <= mx:
                    for r in range(len(regions)):
                        for ws in _submasks(region_w[r] & ~f):
                            m = region_member(r, ws)
                            if m is not None:
                                self.rule(s, sep + m + [X(nxt_c, f | ws)])
                continue
            if i == n:
                self.rule(s, [X(c, f)])
                continue
            must, banned = st
            bs = needs.get(i, ())
            if (mx is None or c + 1 <= mx) and i not in banned and None not in bs:
                # present: the later properties it requires must follow (earlier ones were
                # present, or it would be banned)
                st1 = (frozenset(x for x in must.union(bs) if x > i), banned - {i})
                for ws in _submasks(prop_w[i] & ~f):
                    self.rule(s, sep + member(i, ws) + [N_(i + 1, nxt_c, st1, f | ws)])
            if not props[i][2] and i not in must:
                # absent: the later properties that require it must be absent
                st0 = (must, frozenset(x for x in banned.union(needed_by.get(i, ())) if x > i))
                self.rule(s, [N_(i + 1, c, st0, f)])

    @staticmethod
    def _with_values(conj, wits, ws):
        """``conj`` and the value conjunctions of the witnesses in the mask ``ws``."""
        if not ws:
            return conj
        out = set(conj)
        for w, x in enumerate(wits):
            if ws >> w & 1:
                out |= x[1]
        return frozenset(out)

    # ---- arrays
    def _array(self, sym, a, depth):
        ident, new_family = self._family(a, depth)
        k = len(a.prefix)
        mx = a.max
        if a.rest is None:
            mx = k if mx is None else min(mx, k)
        mn = a.min
        if mx is not None and mn > mx:
            return
        # counters: (conj if counted, conj if not counted or None, min, cap, saturating)
        counters = [(c, None, m, m, True) for c, m in a.contains] + \
                   [(c, nc, lo, hi, False) for c, nc, lo, hi in a.counted]
        sat = max(k, mn, 1)  # positions beyond this behave alike when unbounded
        if mx is not None and mx > MAX_ITEMS_UNROLLED:
            raise GrammarError(f"JSON schema: maxItems {mx} is too large to unroll",
                               where="maxItems", construct="maxItems")
        if mn == 0 and all(lo <= 0 for _, _, lo, _, _ in counters):
            self.rule(sym, [self.punct(depth, "empty_arr")])
        if mx == 0:
            return
        comma = self.punct(depth, "comma")
        mn1 = max(mn, 1)
        no_chunk = bool(counters)
        todo = []

        def A_(i, cs):
            s, new = self.nt(("arr", ident, i, cs), f"array{ident}_{i}_{'_'.join(map(str, cs))}")
            if new:
                todo.append((s, i, cs))
            return s

        first = A_(0, tuple(0 for _ in counters))
        self.rule(sym, [self.punct(depth, "open_arr"), first, self.punct(depth, "close_arr")])
        if not new_family:
            return
        while todo:
            s, i, cs = todo.pop()
            if i >= mn1 and all(c >= lo for c, (_, _, lo, _, _) in zip(cs, counters)):
                self.rule(s, [])
            if mx is not None and i >= mx:
                continue
            base = a.prefix[i] if i < k else a.rest
            if base is None:
                continue
            sep = [comma] if i > 0 else []
            nxt = i + 1 if mx is not None or i + 1 <= sat else sat
            for subset in range(1 << len(counters)):
                conj = set(base)
                new_cs = list(cs)
                ok = True
                for j, (yes, no, lo, cap, saturating) in enumerate(counters):
                    if subset >> j & 1:
                        conj |= yes
                        if saturating:
                            new_cs[j] = min(new_cs[j] + 1, cap)
                        else:
                            new_cs[j] += 1
                            ok = ok and new_cs[j] <= cap
                    elif no is not None:
                        conj |= no
                if ok:
                    self.rule(s, sep + [self.value(frozenset(conj), depth + 1, no_chunk)] +
                              [A_(nxt, tuple(new_cs))])

    # ---- result
    def grammar_fields(self, start_sym):
        """The cleaned-up grammar (productive, reachable): the arguments of the
        :class:`~cfgmask.grammar.Grammar` constructor."""
        rules = self.rules
        n_nt = len(self.nt_names)
        # productive nonterminals, worklist style: each rule counts its unproven nonterminals
        productive = [False] * n_nt
        missing = []
        users = {}
        todo = []
        for r, (lhs, body) in enumerate(rules):
            nts = [x >> 1 for x in body if x & 1]
            missing.append(len(nts))
            for b in nts:
                users.setdefault(b, []).append(r)
            if not nts and not productive[lhs >> 1]:
                productive[lhs >> 1] = True
                todo.append(lhs >> 1)
        while todo:
            b = todo.pop()
            for r in users.get(b, ()):
                missing[r] -= 1
                li = rules[r][0] >> 1
                if missing[r] == 0 and not productive[li]:
                    productive[li] = True
                    todo.append(li)
        root = start_sym >> 1
        if not productive[root]:
            raise GrammarError("JSON schema: no instance can satisfy this schema (its grammar "
                               "derives nothing)", where="#", construct="unsatisfiable")
        kept = [(lhs, body) for lhs, body in rules
                if productive[lhs >> 1] and all(not (x & 1) or productive[x >> 1] for x in body)]
        by_lhs = {}
        for lhs, body in kept:
            by_lhs.setdefault(lhs >> 1, []).append(body)
        # number from the root (breadth first, so only reachable symbols are kept):
        # terminals in first use order, nonterminals likewise ($start first)
        order_nt = ["$start"]
        nt_new = {}
        term_new = {}
        nt_new[root] = 1
        order_nt.append("start")
        seen_order = [root]
        i = 0
        while i < len(seen_order):
            a = seen_order[i]
            i += 1
            for body in by_lhs.get(a, ()):
                for x in body:
                    if x & 1:
                        b = x >> 1
                        if b not in nt_new:
                            nt_new[b] = len(order_nt)
                            order_nt.append(self.nt_names[b])
                            seen_order.append(b)
                    elif (x >> 1) not in term_new:
                        term_new[x >> 1] = len(term_new)
        T = len(term_new)
        out_rules = [(T + 0, [T + 1])]
        for a in seen_order:
            for body in by_lhs.get(a, ()):
                out_rules.append((T + nt_new[a], [term_new[x >> 1] if not x & 1 else T + nt_new[x >> 1]
                                                  for x in body]))
        terms = sorted(term_new, key=term_new.get)
        names = [self.term_names[t] for t in terms]
        patterns = [self.term_patterns[t] for t in terms]
        return dict(terminal_names=names, terminal_patterns=patterns,
                    terminal_is_ignore=[False] * T, nonterminal_names=order_nt,
                    rules=out_rules, start="start", source="json-schema")

    def remember_automata(self, g):
        """Hand the automata built here for ``g``'s terminals to the regex memo, pinned
        while ``g`` lives."""
        used = set(g.terminal_patterns)
        for text, dfa in self.pins:
            if text in used:
                remember_dfa(text, dfa, owner=g)


def _submasks(mask):
    """Every submask of ``mask``, 0 included."""
    sub = mask
    while True:
        yield sub
        if sub == 0:
            return
        sub = (sub - 1) & mask
