"""The asserted formats' automata: from a table computed ahead, else built.

``strings.FORMATS`` holds fixed regexes, yet a new process rebuilt each one
it met: the JSON text regex (``strings.text_regex``, up to 5 ms) and its
automaton (the regex pipeline, 1-60 ms: uri ~20 ms, email ~14 ms on this
project's 2-core machine).  ``format_tables/<format>.json`` beside this module (written by ``python -m
tools.format_tables``; JSON, since a Python module of the same data took
2.5-4 ms to compile on import; one file per format, since reading all 97 KB
cost a cheap format like uuid more than building it) holds, per format and escapes, the text, the minimal
automaton, the width and the repeats the slices read.

Invariants:

* :func:`text` returns exactly ``strings.text_regex(FORMATS[name],
  canonical)``, and after it ``compile_regex`` of that text returns the
  automaton the pipeline builds (trans, accepting, no follow restrictions),
  ``repeat_classes`` of it what the pipeline recorded; :func:`width` returns
  ``strings.width(FORMATS[name])``.
* An entry is used only when its key, a digest of the table's format, the
  escapes, this Python's Unicode database and the format's decoded regex,
  matches; any other case builds as before.  The pipeline's own code is not
  in the key: tests/test_json_schema_formats.py compares every entry with a
  fresh build, so a change there fails until the table is written again.
* A table entry enters the process-wide memos (``automata.memo.DFA_MEMO``,
  ``parse.REPEATS_SEEN``) like any automaton ``compile_regex`` built, with no
  build time (a new process pays nothing for it).
"""

import base64
import hashlib
import json
import os
import struct
import unicodedata
import zlib
from functools import lru_cache

import numpy as np

from cfgmask.automata.dfa import ByteDFA, column_classes
from cfgmask.automata.memo import memoise, remembered_dfa
from cfgmask.automata.parse import REPEATS_SEEN
from cfgmask.frontends.json_schema import strings as S

__all__ = ["TABLE_DIR", "TABLE_FORMAT", "build_entry", "entry_key", "from_table", "table", "text", "width"]

TABLE_FORMAT = 1
# one file per format: a process reads only the formats it meets
TABLE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "format_tables")
_ESCAPES = {False: "any", True: "canonical"}     # the table's name for ``canonical``
# what decoding a damaged entry raises (base64's binascii.Error is a ValueError)
_DAMAGED = (ValueError, TypeError, IndexError, KeyError, zlib.error, struct.error)


def entry_key(name, canonical):
    """The key a table entry for ``(name, canonical)`` must carry to be used."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{TABLE_FORMAT}\0{bool(canonical)}\0{unicodedata.unidata_version}\0".encode())
    h.update(S.FORMATS[name].encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def text(name, canonical):
    """``strings.text_regex(FORMATS[name], canonical)``; from the table when it
    has the entry, which also puts the automaton and its repeats in the memos
    ``compile_regex`` and the slices read."""
    if _entry(name, canonical) is not None:
        try:
            rx = _text_of(name, canonical)
            if remembered_dfa(rx) is None:
                memoise(rx, _dfa_of(name, canonical, rx))
            if REPEATS_SEEN.get(rx) is None:
                REPEATS_SEEN.put(rx, _repeats_of(name, canonical))
            return rx
        except _DAMAGED:
            pass        # an entry that does not decode: built as before
    return S.text_regex(S.FORMATS[name], canonical)


def from_table(name, canonical):
    """Whether the table serves ``(name, canonical)`` (its entry's key matches)."""
    return _entry(name, canonical) is not None


def width(name):
    """``strings.width(FORMATS[name])``: ``(min, max)`` characters, max None when unbounded."""
    entry = _entry(name, False) or _entry(name, True)
    return tuple(entry[1]) if entry is not None else S.width(S.FORMATS[name])


@lru_cache(maxsize=None)
def table(name):
    """The table file of format ``name`` (read once), or None when it is missing,
    unreadable or of another table format: the format is then built as before."""
    try:
        with open(os.path.join(TABLE_DIR, f"{name}.json"), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("table_format") == TABLE_FORMAT else None


@lru_cache(maxsize=None)
def _entry(name, canonical):
    """The table's entry for ``(name, canonical)`` if its key matches, else None."""
    data = table(name)
    entry = data and data.get(_ESCAPES[bool(canonical)])
    if not entry or entry[0] != entry_key(name, canonical):
        return None
    return entry


@lru_cache(maxsize=None)
def _text_of(name, canonical):
    return zlib.decompress(base64.b64decode(_entry(name, canonical)[3])).decode("utf-8", "surrogatepass")


@lru_cache(maxsize=None)
def _repeats_of(name, canonical):
    # [count, then per repeat: max (-1: unbounded), number of ranges, the ranges]
    flat = np.frombuffer(zlib.decompress(base64.b64decode(_entry(name, canonical)[2])), "<i4").tolist()
    out, i = [], 1
    for _ in range(flat[0]):
        hi, n = flat[i], flat[i + 1]
        ranges = flat[i + 2:i + 2 + 2 * n]
        out.append((tuple(zip(ranges[::2], ranges[1::2])), None if hi < 0 else hi))
        i += 2 + 2 * n
    return tuple(out)


def _dfa_of(name, canonical, rx):
    raw = zlib.decompress(base64.b64decode(_entry(name, canonical)[4]))
    n, k = struct.unpack_from("<II", raw)
    class_of = np.frombuffer(raw, np.uint8, 256, 8)
    columns = np.frombuffer(raw, "<i2", n * k, 8 + 256).reshape(n, k)
    accepting = np.unpackbits(np.frombuffer(raw, np.uint8, offset=8 + 256 + 2 * n * k),
                              count=n, bitorder="little").astype(bool)
    dfa = ByteDFA(columns[:, class_of], accepting, pattern=rx, name=f"format {name}")
    dfa.set_column_class(class_of)
    dfa.trans.flags.writeable = False      # shared like every memoised automaton
    dfa.accepting.flags.writeable = False
    return dfa


def build_entry(name, canonical):
    """``(key, width, repeats, text, dfa)`` of one table entry, built by the
    pipeline (``tools/format_tables.py`` writes them; the tests compare)."""
    from cfgmask.automata.pipeline import regex_to_dfa
    rx = S.text_regex(S.FORMATS[name], canonical)
    REPEATS_SEEN.pop(rx)        # what this build records, not an older entry
    dfa = regex_to_dfa(rx, f"format {name}")
    repeats = REPEATS_SEEN.get(rx)
    if repeats is None:
        raise AssertionError(f"format {name}: the pipeline recorded no repeats (a literal chain?)")
    if any(f is not None for f in dfa.follow_forbidden) or any(dfa.follow_forbidden_at_eos):
        raise AssertionError(f"format {name}: follow restrictions are not stored in the table")
    if dfa.n_states >= 2 ** 15:
        raise AssertionError(f"format {name}: {dfa.n_states} states do not fit int16")
    class_of = column_classes(dfa.trans)[0]
    k = int(class_of.max()) + 1
    first = [int(np.flatnonzero(class_of == c)[0]) for c in range(k)]
    raw = (struct.pack("<II", dfa.n_states, k) + class_of.astype(np.uint8).tobytes()
           + dfa.trans[:, first].astype("<i2").tobytes()
           + np.packbits(dfa.accepting, bitorder="little").tobytes())
    flat = [len(repeats)]
    for ranges, hi in repeats:
        flat += [-1 if hi is None else hi, len(ranges)] + [x for r in ranges for x in r]
    pack = lambda b: base64.b64encode(zlib.compress(b, 9)).decode()
    return (entry_key(name, canonical), S.width(S.FORMATS[name]), pack(np.array(flat, "<i4").tobytes()),
            pack(rx.encode("utf-8", "surrogatepass")), pack(raw))
