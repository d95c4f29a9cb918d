#!/usr/bin/env python3
"""Write grammars/javascript.lark from tools/javascript.lark.in.

The template is Lark with the ECMAScript grammar parameters written the
way the spec writes them, which neither lark's nor llguidance's Lark subset
has; this script expands them into plain rules:

* a rule may take parameters: ``assignment[Yield,Await]: ...``;
* an alternative may carry guards right after ``:`` or ``|``:
  ``| [+Yield] yield_expression[Await]`` (only where Yield is set),
  ``[~Await]`` (only where it is not);
* a reference passes every parameter of the referenced rule: ``Yield``
  (the caller's value), ``+Yield`` (set) or ``~Yield`` (cleared), e.g.
  ``function_body[+Yield,~Await,+Return]``;
* the terminal families ``IDENT[Yield,Await]`` (IDENT, IDENT_NY, IDENT_NA,
  IDENT_NYA, each with IDENT_U: tools/js_ident.py), ``STRING[Strict]`` and ``NUMBER[Strict]``
  (STRING / STRING_STRICT, NUMBER / NUMBER_STRICT) pick a terminal.

Each parameterised rule becomes one rule per combination that is reachable
from the start rules, named with the set parameters' initials
(``assignment_yasi``, ``assignment_ai``, ``assignment_0``).  The identifier
terminals are then written in by tools/js_ident.py.

usage:
  python -m tools.js_grammar --write    # rewrite grammars/javascript.lark
  python -m tools.js_grammar --check    # exit 1 if it is out of date
"""
import os
import re
import sys

from tools import js_ident

HERE = os.path.dirname(os.path.abspath(__file__))

TEMPLATE = os.path.join(HERE, "javascript.lark.in")
GRAMMAR = os.path.join(HERE, "..", "grammars", "javascript.lark")

PARAMS = ("Yield", "Await", "Return", "Strict", "In", "Body", "Closed")
# Terminal families: (parameters, {values: terminal}).
FAMILIES = {
    # an ASCII name that is not reserved, or any name with a non-ASCII
    # character or an escape (IDENT_U)
    "IDENT": (("Yield", "Await"), {(False, False): "(IDENT|IDENT_U)", (True, False): "(IDENT_NY|IDENT_U)",
                                   (False, True): "(IDENT_NA|IDENT_U)", (True, True): "(IDENT_NYA|IDENT_U)"}),
    "STRING": (("Strict",), {(False,): "STRING", (True,): "STRING_STRICT"}),
    "NUMBER": (("Strict",), {(False,): "NUMBER", (True,): "NUMBER_STRICT"}),
}

_HEAD = re.compile(r"^([?!]?)(_?[a-z][a-z0-9_]*)(?:\[([A-Za-z, ]*)\])?(\s*:)(.*)$")
_REF = re.compile(r"(?<![A-Za-z0-9_\"'])(_?[A-Za-z][A-Za-z0-9_]*)\[([+~A-Za-z, ]*)\]")
_GUARD = re.compile(r"^\s*\[([+~])([A-Za-z]+)\]")


class TemplateError(Exception):
    pass


def parse(text):
    """-> (list of chunks, rules): a chunk is a verbatim line or a rule name;
    rules maps a parameterised rule's name to (prefix, params, [alternative
    lines], colon)."""
    chunks, rules = [], {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _HEAD.match(line)
        if m and m.group(3) is not None:
            prefix, name, params, colon, rest = m.groups()
            params = tuple(p.strip() for p in params.split(",") if p.strip())
            for p in params:
                if p not in PARAMS:
                    raise TemplateError("rule %s: unknown parameter %s" % (name, p))
            body = [rest]
            i += 1
            while i < len(lines) and re.match(r"^\s+(\||\S)", lines[i]) and not lines[i].lstrip().startswith("//"):
                body.append(lines[i])
                i += 1
            rules[name] = (prefix, params, body, colon)
            chunks.append(("rule", name))
            continue
        chunks.append(("line", line))
        i += 1
    return chunks, rules


def inst_name(name, params, values):
    letters = "".join(p[0].lower() for p in params if values[p])
    return "%s_%s" % (name, letters or "0")


def expand_refs(line, where, env, rules, todo):
    def ref(m):
        target, args = m.group(1), [a.strip() for a in m.group(2).split(",") if a.strip()]
        vals = {}
        for a in args:
            mode, p = (a[0], a[1:]) if a[0] in "+~" else ("=", a)
            if p not in PARAMS:
                raise TemplateError("%s: unknown parameter %s in %s" % (where, p, m.group(0)))
            if mode == "=":
                if p not in env:
                    raise TemplateError("%s: %s passes %s, which it does not have" % (where, m.group(0), p))
                vals[p] = env[p]
            else:
                vals[p] = mode == "+"
        if target in FAMILIES:
            fparams, names = FAMILIES[target]
            if set(vals) != set(fparams):
                raise TemplateError("%s: %s takes [%s]" % (where, target, ",".join(fparams)))
            return names[tuple(vals[p] for p in fparams)]
        if target not in rules:
            raise TemplateError("%s: %s is not a parameterised rule" % (where, target))
        tparams = rules[target][1]
        if set(vals) != set(tparams):
            raise TemplateError("%s: %s must pass exactly [%s]" % (where, m.group(0), ",".join(tparams)))
        todo.append((target, tuple(sorted(vals.items()))))
        return inst_name(target, tparams, vals)
    return _REF.sub(ref, line)


def expand(text, starts):
    chunks, rules = parse(text)
    todo, done, out_rules = [], set(), {}
    verbatim = []
    for kind, val in chunks:
        if kind == "line":
            plain = val.lstrip().startswith(("//", "%")) or re.match(r"^[A-Z][A-Z0-9_]*\s*:", val)
            verbatim.append(val if plain else expand_refs(val, "line %r" % val[:40], {}, rules, todo))
    for s in starts:
        todo.append((s, ()))
    while todo:
        name, vals = todo.pop()
        key = (name, vals)
        if key in done:
            continue
        done.add(key)
        prefix, params, body, colon = rules[name]
        env = dict(vals)
        kept = []
        for n, alt in enumerate(body):
            g = alt
            lead = ""
            if n > 0:
                mm = re.match(r"^(\s*\|)(.*)$", alt)
                if mm:
                    lead, g = mm.group(1), mm.group(2)
            ok = True
            while True:
                mg = _GUARD.match(g)
                if not mg:
                    break
                if mg.group(2) not in params:
                    raise TemplateError("rule %s: guard on %s, which it does not take" % (name, mg.group(2)))
                if env[mg.group(2)] != (mg.group(1) == "+"):
                    ok = False
                g = g[mg.end():]
            if not ok:
                continue
            kept.append((lead, expand_refs(g, "rule " + name, env, rules, todo)))
        if not kept or not any(t.strip() for _, t in kept):
            raise TemplateError("rule %s%s has no alternative left" % (name, vals))
        # The first kept alternative follows the colon; the others keep "|".
        lines = []
        for k, (lead, t) in enumerate(kept):
            if k == 0:
                lines.append(t.strip() if not lead else t.strip())
            else:
                lines.append((lead or "    |") + " " + t.strip())
        out_rules[key] = "%s%s%s %s" % (prefix, inst_name(name, params, env), colon.strip(), "\n".join(lines))
    # Emit in template order, each rule's instances together.
    out = []
    for kind, val in chunks:
        if kind == "line":
            out.append(verbatim.pop(0))
        else:
            for key in sorted(k for k in out_rules if k[0] == val):
                out.append(out_rules[key])
    return "\n".join(out)


GENERATED_NOTE = ("// GENERATED by tools/js_grammar.py from tools/javascript.lark.in: edit the template\n"
                  "// and run `python -m tools.js_grammar --write`.\n")


def render():
    text = open(TEMPLATE, encoding="utf-8").read()
    body = expand(text, starts=())
    first, rest = body.split("\n", 1)
    out = first + "\n" + GENERATED_NOTE + rest
    pat = re.compile(re.escape(js_ident.BEGIN) + ".*?" + re.escape(js_ident.END), re.S)
    out, n = pat.subn(lambda m: js_ident.block(), out)
    if n != 1:
        raise TemplateError("the template needs one %s ... %s block" % (js_ident.BEGIN, js_ident.END))
    return out


def main():
    arg = sys.argv[1] if len(sys.argv) > 1 else "--check"
    new = render()
    if arg == "--write":
        with open(GRAMMAR, "w", encoding="utf-8") as f:
            f.write(new)
    elif open(GRAMMAR, encoding="utf-8").read() != new:
        sys.exit("grammars/javascript.lark is out of date: run python -m tools.js_grammar --write")


if __name__ == "__main__":
    main()
