#!/usr/bin/env python3
"""Why cfgmask refused valid MaskBench instances: sorts a run's validation errors.

Reads a results file of ``benchmarks/run_maskbench.py`` (``--out``), and for
every schema where cfgmask had a *validation error* (a valid test instance
refused) replays each valid instance the way the runner does (tekken,
``json.dumps(data, ensure_ascii=False)``, ``whitespace="flexible"``) and
names the first refused token's place:

* **key order**: the instance is accepted once its object keys are put in the
  order its schema declares them (``properties``, following local ``$ref``
  and ``allOf``/``anyOf``/``oneOf`` branches; a heuristic, so it can miss);
* **at a key**: refused where a key starts or ends, or with the ``,``/``}``
  after a member's value (the member the schema writes last came earlier);
  what a different key order gives, when the heuristic above could not
  reorder it;
* **number spelling**: refused at ``.``, ``e`` or ``E`` right after digits
  (``6000.0`` for a ``multipleOf: 1`` number, ``1e-05`` under a ``minimum``,
  ``0.0`` for ``const: 0``; docs/json-schema.md, "Output style");
* **other**: anything else, printed with its context for reading.

Usage::

    python -m benchmarks.maskbench_refusals RESULTS.json [--data DIR]
"""

import argparse
import collections
import json
import os
import re
import sys
import warnings

from benchmarks.run_maskbench import default_data_dir


def _resolve(root, s, depth=0):
    while (isinstance(s, dict) and isinstance(s.get("$ref"), str) and s["$ref"].startswith("#")
           and depth < 20):
        node = root
        try:
            for part in s["$ref"][1:].split("/")[1:]:
                node = node[part.replace("~1", "/").replace("~0", "~")]
        except (KeyError, IndexError, TypeError):
            return s
        s, depth = node, depth + 1
    return s


def _declared(root, s, out, depth=0):
    """``out``: property name -> its subschemas, in the order the schema writes them."""
    s = _resolve(root, s)
    if not isinstance(s, dict) or depth > 8:
        return
    for k in ("allOf", "anyOf", "oneOf"):
        if isinstance(s.get(k), list):
            for sub in s[k]:
                _declared(root, sub, out, depth + 1)
    if isinstance(s.get("properties"), dict):
        for k, v in s["properties"].items():
            out.setdefault(k, []).append(v)


def schema_order(root, s, x, depth=0):
    """``x`` with every object's keys in its schema's declared order, the rest after."""
    if depth > 40:
        return x
    if isinstance(x, dict):
        props = {}
        _declared(root, s, props)
        order = [k for k in props if k in x] + [k for k in x if k not in props]
        return {k: schema_order(root, (props.get(k) or [{}])[0], x[k], depth + 1) for k in order}
    if isinstance(x, list):
        s2 = _resolve(root, s)
        it = s2.get("items", {}) if isinstance(s2, dict) else {}
        if isinstance(it, list):
            return [schema_order(root, it[i] if i < len(it) else {}, v, depth + 1) for i, v in enumerate(x)]
        return [schema_order(root, it, v, depth + 1) for v in x]
    return x


class Replayer:
    def __init__(self):
        import cfgmask
        from cfgmask.frontends.json_schema import compile_schema
        from support import vocabs as V
        self.cfgmask, self.compile_schema = cfgmask, compile_schema
        self.vocab, self.enc = V.tekken_vocab(), V.tekken_encoding()

    def compile(self, schema):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = self.compile_schema(self.cfgmask.Grammar, schema, whitespace="flexible")
        return self.cfgmask.compile(g, self.vocab)

    def first_refusal(self, compiled, data):
        """``None`` if the instance is accepted, else ``(text before, refused token bytes)``."""
        ids = [r + 1000 for r in self.enc.encode(json.dumps(data, indent=None, ensure_ascii=False),
                                                 allowed_special=set(), disallowed_special=())]
        m, done = compiled.matcher(), b""
        for i in ids:
            if not m.try_consume(i):
                return done.decode("utf-8", "replace"), self.enc.decode_single_token_bytes(i - 1000)
            done += self.enc.decode_single_token_bytes(i - 1000)
        return None if m.is_accepting() else (done.decode("utf-8", "replace"), b"<end>")


def place(ctx, nxt):
    """The kind of place a refusal happened at (see the module docstring)."""
    if re.search(r"[0-9]$", ctx) and nxt[:1] in (b".", b"e", b"E"):
        return "number spelling"
    in_key = re.search(r'(\{|, )"[^"]*$', ctx) is not None and re.search(r':\s*"[^"]*$', ctx) is None
    if in_key or nxt.lstrip()[:1] in (b",", b"}") or nxt.startswith(b'",') or nxt.startswith(b'"}'):
        return "at a key"
    return "other"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results")
    ap.add_argument("--data", default=default_data_dir())
    a = ap.parse_args(argv)
    with open(a.results) as f:
        records = json.load(f)["schemas"]
    names = sorted(n for n, e in records.items() if e.get("cfgmask", {}).get("outcome") == "validation_error")
    r = Replayer()
    kinds, listed = collections.Counter(), []
    for n in names:
        with open(os.path.join(a.data, n)) as f:
            d = json.load(f)
        c = r.compile(d["schema"])
        worst = None
        for t in d["tests"]:
            if not t["valid"]:
                continue
            got = r.first_refusal(c, t["data"])
            if got is None:
                continue
            if r.first_refusal(c, schema_order(d["schema"], d["schema"], t["data"])) is None:
                k = "key order"
            else:
                k = place(*got)
            rank = ("key order", "at a key", "number spelling", "other")
            if worst is None or rank.index(k) > rank.index(worst[0]):
                worst = (k, got)
        k = worst[0] if worst else "none refused now"
        kinds[k] += 1
        if k not in ("key order", "at a key"):
            ctx, nxt = worst[1] if worst else ("", b"")
            listed.append(f"{k}: {n} | ...{ctx[-80:]!r} then {nxt!r}")
    print(f"{len(names)} schemas with a cfgmask validation error in {a.results}:")
    for k, v in kinds.most_common():
        print(f"  {k}: {v}")
    print("\n".join(listed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
