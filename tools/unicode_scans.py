#!/usr/bin/env python3
"""Write ``cfgmask/automata/unicode_scans.py``: the answers of
:func:`cfgmask.automata.unicode_tables.scan_ranges` for the one-character
patterns every process would otherwise scan for, computed ahead for this
Python's Unicode database.

Why: a scan runs Python's ``re`` over all 1,112,064 scalar values; the first
one in a process also builds that string, and ``\\s`` alone took 33 ms of
javascript.lark's cold compile.  The answers depend only on the Unicode
database of the running Python (``unicodedata.unidata_version``, which is the
table ``re`` reads), so they are keyed by it: another version scans as before.

What is precomputed: the six category escapes (``\\d \\D \\s \\S \\w \\W``), with
and without ``re.ASCII``; every ASCII character as a literal under
``re.IGNORECASE`` (with and without ``re.ASCII``), which is how a
case-insensitive keyword reaches the scanner.

Run: ``python -m tools.unicode_scans`` (after a Python upgrade: the tests in
tests/test_regex.py compare every entry with a fresh scan).
"""

import base64
import os
import re
import unicodedata
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "cfgmask", "automata", "unicode_scans.py")


def keys():
    """Every ``(one_char_regex, flags)`` the module answers."""
    out = []
    for esc in ("\\d", "\\D", "\\s", "\\S", "\\w", "\\W"):
        for flags in (0, int(re.ASCII)):
            out.append((esc, flags))
    for cp in range(128):
        for flags in (int(re.IGNORECASE), int(re.IGNORECASE | re.ASCII)):
            out.append((f"\\U{cp:08x}", flags))
    return out


def encode(ranges):
    flat = [x for r in ranges for x in r]
    raw = b"".join(x.to_bytes(4, "little") for x in flat)
    return base64.b64encode(zlib.compress(raw, 9)).decode()


def main():
    from cfgmask.automata import unicode_tables as ut
    table = {k: encode(ut.scan_ranges_by_re(*k)) for k in keys()}
    lines = [
        '"""Precomputed answers of :func:`cfgmask.automata.unicode_tables.scan_ranges`.',
        "",
        "Written by ``python -m tools.unicode_scans`` (see there why); do not edit by hand.",
        "Valid only for the Unicode database below: :mod:`unicode_tables` uses it",
        "when ``unicodedata.unidata_version`` equals :data:`UNIDATA_VERSION`, and",
        "tests/test_regex.py compares every entry with a fresh scan.",
        '"""',
        "",
        f"UNIDATA_VERSION = {unicodedata.unidata_version!r}",
        "",
        "# (one-character regex, re flags) -> base64 of zlib'd little-endian uint32 (lo, hi) pairs",
        "SCANS = {",
    ]
    for (rx, flags), data in table.items():
        lines.append(f"    ({rx!r}, {flags}): {data!r},")
    lines.append("}")
    with open(OUT, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {OUT}: {len(table)} entries, Unicode {unicodedata.unidata_version}")


if __name__ == "__main__":
    main()
