#!/usr/bin/env python3
"""Write ``cfgmask/frontends/json_schema/format_tables/<format>.json``: the asserted
formats' JSON text regexes, automata and widths, computed ahead.

Why: ``strings.FORMATS`` are fixed regexes, yet every new process built them
again.  In a fresh process with an empty cache, ``{"type": "string",
"format": "uri"}`` spent ~3 ms rebuilding the text regex and ~5-20 ms in the
regex pipeline; date-time, uri, date and email are among the commonest
formats of MaskBench's schemas (590, 342, 178 and 147 of 11,305).  They
depend only on the decoded regex, the escapes (canonical or any), this
Python's Unicode database and the code of the pipeline, so each entry is
keyed by a digest of the first three: another value builds as before, and
tests/test_json_schema_formats.py compares every entry with a fresh build
(a change to the pipeline's code fails there until this tool is rerun).

Each entry holds, for one (format, canonical):

* ``text``: ``strings.text_regex(FORMATS[name], canonical)`` (zlib, base64);
* ``dfa``: ``compile_regex(text)`` as its column classes (uint8[256]) and one
  int16 column per class (zlib, base64): ~90 KB in all where the full
  int32 tables are ~10 MB;
* ``width``: ``strings.width(FORMATS[name])``;
* ``repeats``: what :func:`cfgmask.automata.parse.repeat_classes` answers for
  the text (the slices read it; without it they would parse the text again),
  as int32 ``[count, then per repeat: max (-1 unbounded), ranges, lo, hi, ...]``
  (zlib, base64).

JSON, not a Python module: the same data as a module took 2.5-4 ms to compile
on import, more than a small format saves.  One file per format: reading all
of them (97 KB, ~0.2 ms) cost uuid more than building it (callgrind).

Run: ``python -m tools.format_tables``.
"""

import json
import os


def main():
    import shutil
    import unicodedata
    from cfgmask.frontends.json_schema import formats as F, strings as S
    shutil.rmtree(F.TABLE_DIR, ignore_errors=True)
    os.makedirs(F.TABLE_DIR)
    total = 0
    for name in S.FORMATS:
        table = {
            "about": "written by python -m tools.format_tables (see there); do not edit by hand. "
                     "escapes -> [key, [min, max width], repeats, text, dfa]; "
                     "cfgmask.frontends.json_schema.formats uses an entry only when its key matches",
            "table_format": F.TABLE_FORMAT,
            "unidata_version": unicodedata.unidata_version,
            "format": name,
        }
        for canonical, escapes in ((False, "any"), (True, "canonical")):
            table[escapes] = list(F.build_entry(name, canonical))
        path = os.path.join(F.TABLE_DIR, f"{name}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(table, f, indent=1)
            f.write("\n")
        total += os.path.getsize(path)
    print(f"wrote {F.TABLE_DIR}: {len(S.FORMATS)} formats, Unicode {unicodedata.unidata_version}, "
          f"{total // 1024} KB")


if __name__ == "__main__":
    main()
