"""Number texts: exact regexes for integer and decimal ranges, canonical spellings.

The number *style* (docs/json-schema.md): an ``integer`` is written as an
integer literal ``-?(0|[1-9][0-9]*)``; a ``number`` with no bound is any RFC
8259 number; a ``number`` with a bound is written in plain decimal notation
``-?(0|[1-9][0-9]*)(\\.[0-9]+)?`` (no exponent: comparing ``m·10^e`` with a
bound needs the value of ``e``, which no finite automaton can track), except
where every bound is zero (``minimum: 0``): a sign is the whole comparison, so
every RFC 8259 spelling is allowed (:func:`sign_bound_regex`).  Zero is never
written with a minus sign.  ``const``/``enum`` numbers are spelled
canonically (:func:`canonical`): integral values without a fraction, others
as the shortest plain decimal.

Invariants: :func:`integer_range_regex` and :func:`decimal_range_regex`
accept exactly the texts above whose value lies in the range, compared
exactly in decimal (bounds are read as ``Decimal(repr(bound))``: the
shortest decimal that round-trips the bound's float).
"""

from decimal import Decimal, localcontext
import math
from math import gcd

from cfgmask.frontends.json_schema.errors import Unsupported
from cfgmask.frontends.json_schema.strings import split_fixed

INTEGER = "(?:0|-?[1-9][0-9]*)"
NUMBER = "-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
PLAIN_DECIMAL = "-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?"


# the spellings of zero, and of a value above zero, with an exponent allowed
_ZERO = "0(?:\\.0+)?(?:[eE][+-]?[0-9]+)?"
_POSITIVE = ("(?:[1-9][0-9]*(?:\\.[0-9]+)?|0\\.0*[1-9][0-9]*)(?:[eE][+-]?[0-9]+)?")


def sign_bound_regex(num):
    """The numbers of a :class:`~.nodes.Num` whose only bounds are zero (``minimum:
    0``, ``exclusiveMaximum: 0``, ...), in every RFC 8259 spelling, exponents
    included: an exponent cannot change a sign, so none of the plain-decimal
    restriction is needed.  None for any other constraint.  Zero is still never
    written with a minus sign."""
    if (num.integer or num.multiple_of or num.not_multiple_of or num.excluded or num.nonint
            or (num.lo is None and num.hi is None)
            or any(b is not None and b != 0 for b in (num.lo, num.hi))):
        return None
    parts = []
    if not (num.hi is not None and num.hi_excl) and not (num.lo is not None and num.lo_excl):
        parts.append(_ZERO)
    if num.hi is None:
        parts.append(_POSITIVE)
    if num.lo is None:
        parts.append("-" + _POSITIVE)
    if not parts:
        return None
    return "(?:" + "|".join(parts) + ")"


def to_decimal(x):
    """A JSON number from ``json.loads`` (int or float) as an exact ``Decimal``."""
    if isinstance(x, bool):
        raise TypeError("a boolean is not a number")
    if isinstance(x, int):
        return Decimal(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise Unsupported("number", f"non-finite bound {x!r}")
        return Decimal(repr(x))
    if isinstance(x, Decimal):
        return x
    raise TypeError(f"not a number: {x!r}")


def canonical(x):
    """The canonical text of a JSON number value (see module docstring)."""
    d = to_decimal(x)
    if d == d.to_integral_value():
        return str(int(d))
    with localcontext() as ctx:
        ctx.prec = max(28, len(d.as_tuple().digits) + 5)
        text = format(d.normalize(), "f")
    return text


def canonical_regex(x):
    """:func:`canonical` as a regex matching only that text (its ``.`` escaped)."""
    return canonical(x).replace(".", "\\.")


def constant_regex(x, zero_fraction=False):
    """The spellings of the number constant ``x``: :func:`canonical_regex`, and with
    ``zero_fraction`` an integer value's zero fractions too (``1``, ``1.0``, ``1.00``).
    Only below 2**53: a JSON reader that parses ``N.0`` as a double rounds a larger
    ``N``, and would no longer find it equal to the constant."""
    text = canonical_regex(x)
    if zero_fraction and "." not in text and abs(int(text)) < 2 ** 53:
        return text + "(?:\\.0+)?"
    return text


def _digit_class(a, b):
    return str(a) if a == b else f"[{a}-{b}]"


def _fixed_range(lo, hi, width):
    """Regex for ``width``-digit strings (no leading zero unless width 1) with values lo..hi."""
    alts = []
    for seq in split_fixed(lo, hi, width, base=10):
        out = []
        for a, b in seq:
            item = _digit_class(a, b)
            if out and out[-1][0] == item:
                out[-1][1] += 1
            else:
                out.append([item, 1])
        alts.append("".join(it if n == 1 else f"{it}{{{n}}}" for it, n in out))
    return alts


def _positive_range(lo, hi):
    """Regex alternatives for integers lo..hi (lo >= 1, hi None = unbounded), no leading zeros."""
    alts = []
    ll = len(str(lo))
    top = len(str(hi)) if hi is not None else ll
    for width in range(ll, top + 1):
        a = max(lo, 10 ** (width - 1))
        b = 10 ** width - 1 if hi is None else min(hi, 10 ** width - 1)
        if a <= b:
            alts += _fixed_range(a, b, width)
    if hi is None:
        alts.append(f"[1-9][0-9]{{{ll},}}")
    return alts


def integer_range_regex(lo, hi):
    """Integer literals with value in ``[lo, hi]`` (ints, ``None`` = unbounded); None if empty."""
    if lo is not None and hi is not None and lo > hi:
        return None
    if lo is None and hi is None:
        return INTEGER
    alts = []
    # negative values: -y with y in [max(1, -hi), -lo]
    if lo is None or lo < 0:
        y_lo = 1 if hi is None or hi >= 0 else -hi
        y_hi = None if lo is None else -lo
        if y_hi is None or y_lo <= y_hi:
            neg = _positive_range(y_lo, y_hi)
            alts.append("-" + (neg[0] if len(neg) == 1 else "(?:" + "|".join(neg) + ")"))
    if (lo is None or lo <= 0) and (hi is None or hi >= 0):
        alts.append("0")
    if hi is None or hi > 0:
        pos = _positive_range(max(1, lo if lo is not None else 1), hi)
        alts += pos
    if not alts:
        return None
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def integer_bounds(minimum, exclusive_min, maximum, exclusive_max):
    """Integer ``[lo, hi]`` from (Decimal or None) bounds and exclusivity flags."""
    lo = hi = None
    if minimum is not None:
        c = int(minimum.to_integral_value(rounding="ROUND_CEILING"))
        lo = c + 1 if exclusive_min and Decimal(c) == minimum else c
    if maximum is not None:
        f = int(maximum.to_integral_value(rounding="ROUND_FLOOR"))
        hi = f - 1 if exclusive_max and Decimal(f) == maximum else f
    return lo, hi


# --------------------------------------------------------------- decimals

def _split(d):
    """Non-negative Decimal -> (integer part, fraction digits without trailing zeros)."""
    sign, digits, exp = d.as_tuple()
    assert not sign
    if exp >= 0:
        return int(d), ""
    digits = "".join(map(str, digits)).rjust(-exp, "0")
    int_part = digits[:exp] or "0"
    frac = digits[exp:].rstrip("0")
    return int(int_part), frac


def _frac(b, b_incl, c, c_incl):
    """Fraction digit strings F with 0.b <=/< 0.F <=/< 0.c (``c`` None: below 1, unbounded).

    Returns ``(empty_ok, regex)``: whether the empty fraction (value 0, no
    decimal point) qualifies, and a regex for the non-empty ones (or None).
    ``b``/``c`` are digit strings without trailing zeros ("" = 0).
    """
    # the empty fraction has value 0
    empty_ok = (b == "" and b_incl) and (c is None or c != "" or c_incl)
    if c is not None and c == "" and b == "":
        # both bounds 0: only zeros, and only if both are inclusive
        return empty_ok, ("0+" if b_incl and c_incl else None)
    if c is None and b == "":
        # no upper bound, lower bound 0: any digits (some non-zero one if exclusive)
        return empty_ok, ("[0-9]+" if b_incl else "[0-9]*[1-9][0-9]*")
    b0 = int(b[0]) if b else 0
    b_rest = b[1:]
    alts = []
    if c is None:
        c0, c_rest = 10, None  # no upper bound: every first digit above b0 is free
    else:
        c0 = int(c[0]) if c else 0
        c_rest = c[1:]
    if b0 == c0:
        sub_empty, sub = _frac(b_rest, b_incl, c_rest, c_incl)
        tail = _opt(sub_empty, sub)
        if tail is not None:
            alts.append(f"{b0}{tail}")
    else:
        if b0 + 1 <= c0 - 1:
            alts.append(f"{_digit_class(b0 + 1, c0 - 1)}[0-9]*")
        # first digit b0: the rest must be >= b_rest
        ge_empty = b_rest == "" and b_incl
        _, ge = _frac(b_rest, b_incl, None, False)
        tail = _opt(ge_empty, ge)
        if tail is not None:
            alts.append(f"{b0}{tail}")
        if c is not None and c0 <= 9:
            # first digit c0: the rest must be <= c_rest
            le_empty = c_rest != "" or c_incl
            _, le = _frac("", True, c_rest, c_incl)
            tail = _opt(le_empty, le)
            if tail is not None:
                alts.append(f"{c0}{tail}")
    if not alts:
        return empty_ok, None
    return empty_ok, alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _opt(empty_ok, rx):
    """Regex for "empty (if allowed) or rx"; None when neither."""
    if rx is None:
        return "" if empty_ok else None
    return f"(?:{rx})?" if empty_ok else rx


def _magnitude(lo, lo_incl, hi, hi_incl):
    """Plain decimal texts without sign, value in the range (``hi`` None: unbounded)."""
    a, b = _split(lo)
    alts = []

    def with_frac(int_rx, empty_ok, frac_rx):
        if frac_rx is None:
            return int_rx if empty_ok else None
        return f"{int_rx}\\.{frac_rx}" if not empty_ok else f"{int_rx}(?:\\.{frac_rx})?"

    if hi is None:
        e, f = _frac(b, lo_incl, None, False)
        x = with_frac(_int(a), e, f)
        if x:
            alts.append(x)
        alts += [f"{r}(?:\\.[0-9]+)?" for r in _int_range(a + 1, None)]
    else:
        h, c = _split(hi)
        if a == h:
            e, f = _frac(b, lo_incl, c, hi_incl)
            x = with_frac(_int(a), e, f)
            if x:
                alts.append(x)
        elif a < h:
            e, f = _frac(b, lo_incl, None, False)
            x = with_frac(_int(a), e, f)
            if x:
                alts.append(x)
            if a + 1 <= h - 1:
                alts += [f"{r}(?:\\.[0-9]+)?" for r in _int_range(a + 1, h - 1)]
            e, f = _frac("", True, c, hi_incl)
            x = with_frac(_int(h), e, f)
            if x:
                alts.append(x)
    return alts


def _int(n):
    return str(n)


def _int_range(lo, hi):
    out = []
    if lo == 0:
        out.append("0")
        lo = 1
    if hi is None or lo <= hi:
        out += _positive_range(lo, hi)
    return out


def decimal_range_regex(minimum, exclusive_min, maximum, exclusive_max):
    """Plain decimals with value in the range (Decimal or None bounds); None if empty."""
    if minimum is not None and maximum is not None:
        if minimum > maximum or (minimum == maximum and (exclusive_min or exclusive_max)):
            return None
    alts = []
    zero = Decimal(0)
    # negative values -y: y in (max(0, -max), -min] (never -0: y > 0)
    if minimum is None or minimum < 0:
        if maximum is None or maximum > 0 or (maximum == 0):
            y_lo, y_lo_incl = zero, False
        else:
            y_lo, y_lo_incl = -maximum, not exclusive_max
        if y_lo == 0:
            y_lo_incl = False
        y_hi = None if minimum is None else -minimum
        y_hi_incl = not exclusive_min
        neg = _magnitude(y_lo, y_lo_incl, y_hi, y_hi_incl)
        if neg:
            alts.append("-" + (neg[0] if len(neg) == 1 else "(?:" + "|".join(neg) + ")"))
    # non-negative values
    if maximum is None or maximum >= 0:
        if minimum is None or minimum < 0:
            lo, lo_incl = zero, True
        else:
            lo, lo_incl = minimum, not exclusive_min
        pos = _magnitude(lo, lo_incl, maximum, not exclusive_max if maximum is not None else False)
        alts += pos
    if not alts:
        return None
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def lcm(a, b):
    return a * b // gcd(a, b)


def integer_modulus(multiples):
    """The integer k such that 'integer and multiple of every m' == 'multiple of k'."""
    k = 1
    for m in multiples:
        sign, digits, exp = m.as_tuple()
        num = int("".join(map(str, digits)))
        den = 10 ** (-exp) if exp < 0 else 1
        num *= 10 ** exp if exp > 0 else 1
        # integer N is a multiple of num/den iff N*den is a multiple of num
        step = num // gcd(num, den)
        k = lcm(k, step)
    return k
