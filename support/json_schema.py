"""Shared helpers for the JSON Schema tests and benchmark (benchmarks/run_json_schema.py).

* :data:`BYTES`: a vocabulary of the 256 single bytes plus EOS (id 256), so
  that "fed byte by byte" is "fed token by token" and masks are cheap;
* :func:`accepts`: is a text accepted, fed token by token with EOS allowed at
  the end;
* :func:`sample`: a random document drawn under the masks;
* :func:`jsonschema_errors`: the independent oracle, the ``jsonschema``
  package with a format checker (plus standard-library checks for the
  formats whose checkers need packages that are not installed).
"""

import datetime
import ipaddress
import json
import re
import urllib.parse
import uuid
from decimal import Decimal

import pytest

import cfgmask
from cfgmask.engine.vocab import Vocabulary

EOS = 256
BYTES = Vocabulary([bytes([i]) for i in range(256)] + [None], eos_token_ids=[EOS])

_CLOSERS = {ord(c): 6.0 for c in '"]},:'}


def accepts(compiled, text, tokens=None):
    """Fed token by token (bytes for :data:`BYTES`), every token allowed, EOS allowed at the end."""
    m = compiled.matcher()
    ids = list(text.encode("utf-8")) if tokens is None else tokens
    for t in ids:
        if not m.try_consume(t):
            return False
    return bool(m.is_accepting())


def sample(compiled, rng, max_bytes=4000, stop=0.35):
    """A document drawn under the masks of a :data:`BYTES` grammar, or None if it ran too long.

    Each step picks an allowed byte at random (structural bytes weighted up,
    non-ASCII down, so that documents end), and stops at an allowed EOS with
    probability ``stop``.
    """
    m = compiled.matcher()
    for _ in range(max_bytes):
        allowed = m.allowed_tokens().tolist()
        eos_ok = EOS in allowed
        if eos_ok and (rng.random() < stop or len(allowed) == 1):
            return m.prefix.decode("utf-8")
        choices = [t for t in allowed if t != EOS]
        weights = [_CLOSERS.get(t, 1.0 if t < 0x80 else 0.05) for t in choices]
        m.consume(rng.choices(choices, weights)[0])
    return None


def _format_checker():
    jsonschema = pytest.importorskip("jsonschema")
    fc = jsonschema.FormatChecker()

    def iso(kind):
        def check(s):
            if not isinstance(s, str):
                return True
            t = s.replace("z", "Z").replace("t", "T") if kind != "date" else s
            if kind == "date":
                datetime.date.fromisoformat(s)
            elif kind == "time":
                datetime.time.fromisoformat(t)
                if not (t.endswith("Z") or re.search(r"[+-]\d\d:\d\d$", t)):
                    raise ValueError("no offset")
            else:
                datetime.datetime.fromisoformat(t)
                if not (t.endswith("Z") or re.search(r"[+-]\d\d:\d\d$", t)):
                    raise ValueError("no offset")
            return True
        return check

    def hostname(s):
        if not isinstance(s, str):
            return True
        return len(s) <= 253 and all(
            re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", label)
            for label in s.split("."))

    def uri(s):
        if not isinstance(s, str):
            return True
        parts = urllib.parse.urlsplit(s)
        return bool(parts.scheme) and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", parts.scheme) \
            and not re.search(r"[\s<>\"{}|\\^`]", s)

    checks = {
        "date": iso("date"), "time": iso("time"), "date-time": iso("date-time"),
        "ipv4": lambda s: not isinstance(s, str) or bool(ipaddress.IPv4Address(s)),
        "ipv6": lambda s: not isinstance(s, str) or bool(ipaddress.IPv6Address(s)),
        "uuid": lambda s: not isinstance(s, str) or bool(uuid.UUID(s)),
        "email": lambda s: not isinstance(s, str) or "@" in s,
        "hostname": hostname, "uri": uri,
    }
    for name, fn in checks.items():
        fc.checkers[name] = (fn, (ValueError, TypeError))
    return fc


_FC = None


def jsonschema_errors(instance, schema):
    """Messages of the ``jsonschema`` package's errors for ``instance`` (empty: valid)."""
    global _FC
    jsonschema = pytest.importorskip("jsonschema")
    if _FC is None:
        _FC = _format_checker()
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return [e.message for e in cls(schema, format_checker=_FC).iter_errors(instance)]


def compile_bytes(grammar):
    return cfgmask.compile(grammar, BYTES)


def parse(text):
    return json.loads(text)


def _integral_exactly(text):
    # an integral value written with a fraction ("28724470084704729.0000", which the
    # grammar writes for multipleOf 1 on a number) as the exact int it means: as a float
    # it is rounded to 2**-52 relative precision and the oracle would judge another value
    d = Decimal(text)
    if d.is_finite() and abs(d.adjusted()) < 1000 and d == d.to_integral_value():
        return int(d)
    return float(text)


def parse_for_oracle(text):
    """``json.loads`` for the ``jsonschema`` oracle: integral numbers exactly (as int),
    other fractions as floats (the package's reading; they can still disagree with
    cfgmask's exact decimals beyond ~16 digits, docs/json-schema.md)."""
    return json.loads(text, parse_float=_integral_exactly)
