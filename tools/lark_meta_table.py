#!/usr/bin/env python3
"""Write ``cfgmask/frontends/lark_meta_table.json``: the LALR table of Lark's
parser for ``.lark`` text, computed ahead for the installed Lark.

Why: Lark builds that parser on first use in every process, and its LALR
analysis took about 5 ms, a quarter of json.lark's cold start
(cfgmask/frontends/lark_meta.py).  The file maps a key (Lark's version and a
digest of its meta grammar) to a table; this adds or replaces the installed
Lark's entry and keeps the others, so one file can serve several versions.

Run: ``python -m tools.lark_meta_table`` (after a Lark upgrade:
tests/test_lark_meta.py says when the installed Lark has no table).
"""

import json
import os

from cfgmask.frontends import lark_meta


def main():
    _lexer_conf, parser_conf = lark_meta.meta_confs()
    data = lark_meta.table_to_json(lark_meta.analyse(parser_conf), parser_conf.rules)
    if data is None:
        raise SystemExit("a reduction of Lark's meta grammar is by a rule outside its rule list")
    try:
        with open(lark_meta.TABLE_FILE, encoding="utf-8") as f:
            tables = json.load(f)
    except FileNotFoundError:
        tables = {}
    key = lark_meta.meta_grammar_key()
    tables[key] = data
    tmp = lark_meta.TABLE_FILE + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(tables, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    os.replace(tmp, lark_meta.TABLE_FILE)
    print(f"{lark_meta.TABLE_FILE}: {key}, {len(data['states'])} states")


if __name__ == "__main__":
    main()
