"""JSON Schema -> a union of typed alternatives per subschema (the IR).

A *conjunction* is a frozenset of *atoms*; an atom names a subschema (a
pointer, see ``loader``) and, optionally, keywords of it that have already
been taken care of (``"ptr\\x00anyOf,oneOf"``).  The empty conjunction is
the schema ``true``.  :meth:`Normalizer.node` turns a conjunction into a
:class:`Node`: the list of typed alternatives whose union is exactly its
language.  Nodes are memoised by conjunction, which is what makes recursive
``$ref`` work (children are referenced by conjunction, expanded lazily by
``emit.py``).

How a conjunction becomes alternatives:

1. *flatten*: follow ``$ref`` and ``allOf`` in place (a visited set stops
   in-place loops), collecting the atoms whose remaining keywords apply;
2. a finite value set (``const``/``enum``) anywhere in it: the node is that
   set, each value kept iff :class:`~.validate.Validator` accepts it against
   every atom (exact, whatever else the schemas say);
3. a disjunctive keyword (``anyOf``, ``oneOf``, ``if``/``then``/``else``,
   ``not`` written as a disjunction, ``dependentRequired``,
   ``dependentSchemas``, ``dependencies``): *split* on the first one: the
   node is the union of the nodes of the conjunction with one case each
   (``oneOf``: only if the cases' nodes are provably disjoint).  Two or more
   ``if``s testing one property against values (the tagged-union idiom) are
   split together, once per value (:meth:`Normalizer._dispatch`); the
   dependency keywords split once per consistent presence assignment
   (:meth:`Normalizer._dependency_cases`); a conjunction found contradictory
   is not split further; every node and case is charged to the compile
   budget (``budget.py``);
4. otherwise the keywords are independent per JSON type: intersect them into
   at most one alternative per type (:meth:`Normalizer._typed`).

``not`` is compiled by writing the negation as a schema (synthetic, see
``_negate``) for the keywords whose negation is expressible; the rest is
refused (``strict``) or dropped with a warning.
"""

import json
from math import gcd

from cfgmask.errors import ConfigurationError, GrammarError
from cfgmask.frontends.json_schema import strings as S
from cfgmask.frontends.json_schema.budget import MAX_COUNT, Budget, check_count
from cfgmask.frontends.json_schema.errors import Unsupported
from cfgmask.frontends.json_schema.keywords import shorten
from cfgmask.frontends.json_schema.loader import child, display
from cfgmask.frontends.json_schema.numbers import to_decimal
from cfgmask.frontends.json_schema.validate import ANNOTATIONS, Validator, json_equal, json_key, json_type, matches_pattern

TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")
_ALL_TYPES = frozenset(("null", "boolean", "number", "string", "array", "object", "integer"))

# keywords that restrict values of one JSON type
_NUMBER_KW = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
              "x-cfgmask-not-multipleOf", "x-cfgmask-nonint")
_STRING_KW = ("minLength", "maxLength", "pattern", "format", "x-cfgmask-not-pattern",
              "x-cfgmask-not-format")
_ARRAY_KW = ("items", "prefixItems", "additionalItems", "contains", "minContains",
             "maxContains", "minItems", "maxItems", "uniqueItems")
_OBJECT_KW = ("properties", "patternProperties", "additionalProperties", "required",
              "propertyNames", "minProperties", "maxProperties", "x-cfgmask-implies")
_SPLIT_KW = ("anyOf", "oneOf", "if", "not", "dependentRequired", "dependentSchemas",
             "dependencies")
_HANDLED = frozenset(("type", "enum", "const", "$ref", "allOf", "then", "else",
                      "x-cfgmask-ptr", "x-cfgmask-not-in") + _NUMBER_KW + _STRING_KW +
                     _ARRAY_KW + _OBJECT_KW + _SPLIT_KW) | ANNOTATIONS
_REFUSED = ("unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef")

FALSE_ATOM = "!false"
_DEPENDENCY_KW = ("dependentRequired", "dependentSchemas", "dependencies")
UNDISPATCHED = "x-cfgmask-undispatched"  # in an atom's skip: its if is left to an ordinary split
# How the declared properties of a conjunction are ordered (docs/json-schema.md):
# "written": merged left to right as the schema is written (llguidance's stable
# property order); "own-first": an object's own properties, then those of its
# allOf branches and $ref targets (the order before issue 24).
PROPERTY_ORDERS = ("written", "own-first")
MAX_SPLIT_DEPTH = 64


def atom(pointer, skip=()):
    return pointer + "\x00" + ",".join(sorted(skip)) if skip else pointer


def _key_index(node, key):
    """Index of ``key`` among the keys of the dict ``node`` (past the end if absent)."""
    if not isinstance(node, dict):
        return 0
    for i, k in enumerate(node):
        if k == key:
            return i
    return len(node)


def split_atom(a):
    p, _, rest = a.partition("\x00")
    return p, (frozenset(rest.split(",")) if rest else frozenset())


# ------------------------------------------------------------------- IR

class Lit:
    """A finite set of JSON values."""
    kind = "lit"

    def __init__(self, values):
        self.values = values


class Null:
    kind = "null"


class Bool:
    kind = "bool"

    def __init__(self, values=(True, False)):
        self.values = tuple(values)


class Num:
    kind = "num"
    where = ""  # pointer of a schema that constrains it (for messages)

    def __init__(self):
        self.integer = False
        self.lo = self.hi = None           # Decimal bounds
        self.lo_excl = self.hi_excl = False
        self.multiple_of = []              # Decimals
        self.not_multiple_of = []
        self.nonint = False
        self.excluded = []                 # values


class Str:
    kind = "str"
    where = ""

    def __init__(self):
        self.lo, self.hi = 0, None
        self.patterns = []      # (ECMA pattern, pointer)
        self.formats = []
        self.not_patterns = []
        self.not_formats = []
        self.excluded = []      # string values


class Obj:
    kind = "obj"

    def __init__(self):
        self.props = []          # (name, conj, required)
        self.regions = []        # (KeySpec, conj)
        self.min, self.max = 0, None
        self.implies = {}        # name -> names that must be present when it is


class KeySpec:
    """The keys of one additional-properties region (decoded-string constraints)."""

    def __init__(self, patterns_in, patterns_out, excluded, names_conjs):
        self.patterns_in = patterns_in      # ECMA patterns a key must match
        self.patterns_out = patterns_out    # ... must not match
        self.excluded = excluded            # declared / forbidden names
        self.names_conjs = names_conjs      # propertyNames conjunctions


class Arr:
    kind = "arr"

    def __init__(self):
        self.prefix = []         # conj per position
        self.rest = frozenset()  # conj of the items after the prefix (None: none allowed)
        self.min, self.max = 0, None
        self.contains = []       # (conj, min count): at least min items match
        self.counted = []        # (conj, negated conj, min, max): min..max items match


class Node:
    def __init__(self, key, alts):
        self.key = key
        self.alts = alts

    def __repr__(self):
        return f"<Node {sorted(self.key)} {[a.kind for a in self.alts]}>"


# ------------------------------------------------------------ normaliser

class Normalizer:
    """Schema document -> :class:`Node` per conjunction (see module docstring)."""

    def __init__(self, doc, strict=True, budget=None, property_order="written"):
        self.doc = doc
        self.strict = strict
        if property_order not in PROPERTY_ORDERS:
            raise ConfigurationError(f"unknown property_order {property_order!r:.40}; choose one of "
                                     f"{', '.join(PROPERTY_ORDERS)}")
        self.property_order = property_order
        self._ref_from = {}      # $ref target -> (pointer, "$ref") where it was first reached
        self.budget = budget if budget is not None else Budget(None, None)
        self.loosened = []       # (keyword, pointer, why) when strict=False
        doc.check_cycles()  # before anything follows $ref in place
        self.validator = Validator(doc)
        self._nodes = {}
        self._building = set()
        self._neg_stack = set()
        self._neg_failed = {}    # name -> Unsupported (why the negation cannot be written)

    # ---- errors
    def fail(self, keyword, pointer, why):
        """Refuse (strict) or record a loosening; returns only when not strict."""
        where = shorten(display(pointer), 200)
        why = shorten(str(why), 400)  # a value quoted in full could be megabytes
        if self.strict:
            raise GrammarError(f"JSON schema: {keyword} at {where} cannot be compiled exactly: {why} "
                               f"(strict=False over-approximates it)", where=where, construct=keyword)
        self.loosened.append((keyword, where, why))

    # ---- access
    def schema(self, a):
        p, skip = split_atom(a)
        if p == FALSE_ATOM:
            return False, p, skip
        return self.doc.get(p), p, skip

    # ---- flattening
    def _flatten(self, conj):
        """``(atoms, split)``: in-place closure of ``conj``; ``split`` is the first
        disjunctive keyword as ``(atom, keyword)`` or None.  ``atoms`` None: false.

        A pointer reached several times (an atom with handled keywords and the
        same schema again through ``$ref``) appears once, with the union of the
        handled keywords: a handled keyword came with its chosen case, which
        already implies it.
        """
        skips = {}
        order = []
        work = sorted(conj)
        while work:
            a = work.pop(0)
            p, skip = split_atom(a)
            if p in skips:
                skips[p] |= skip
                continue
            skips[p] = set(skip)
            order.append(p)
            if p == FALSE_ATOM:
                return None, None
            s = self.doc.get(p)
            if s is True:
                continue
            if s is False:
                return None, None
            if not isinstance(s, dict):
                raise GrammarError(f"JSON schema: the schema at {display(p)} is neither an object nor "
                                   f"a boolean", where=display(p), construct="schema")
            if "$ref" in s:
                target = self.doc.resolve(p, s["$ref"])
                self._ref_from.setdefault(target, (p, "$ref"))
                work.append(target)
            if "x-cfgmask-ptr" in s:
                work.append(s["x-cfgmask-ptr"])
            if "allOf" in s and not (self.doc.draft_at(p) <= 7 and "$ref" in s):
                if not isinstance(s["allOf"], list):
                    raise GrammarError(f"JSON schema: allOf at {display(p)} is not an array",
                                       where=display(p), construct="allOf")
                work += [child(p, "allOf", i) for i in range(len(s["allOf"]))]
        out = []
        split = None
        for p in order:
            s = self.doc.get(p)
            if s is True:
                continue
            skip = frozenset(skips[p])
            a = atom(p, skip)
            if "$ref" in s and self.doc.draft_at(p) <= 7:
                continue  # draft-07 and older: keywords next to $ref are ignored
            for k in _REFUSED:
                if k in s and k not in skip:
                    if k in ("unevaluatedProperties", "unevaluatedItems") and s[k] is True:
                        continue
                    self.fail(k, child(p, k), "not supported")
            if split is None:
                for k in _SPLIT_KW:
                    if k in s and k not in skip:
                        if k == "if" and "then" not in s and "else" not in s:
                            continue
                        split = (a, k)
                        break
            out.append(a)
        return out, split

    # ---- nodes
    def node(self, conj, soft=False):
        """The :class:`Node` of a conjunction (memoised).

        ``soft``: return None instead of raising when the node is being built
        further up the stack (disjointness checks ask about children that may
        lead back to it).
        """
        key = frozenset(conj)
        hit = self._nodes.get(key)
        if hit is not None:
            return hit
        if key in self._building:
            if soft:
                return None
            raise GrammarError("JSON schema: a schema refers to itself in place (through $ref/allOf "
                               "cases) without consuming input", where="#", construct="$ref")
        self.budget.charge(1)
        self._building.add(key)
        try:
            node = Node(key, self._alternatives(key))
        finally:
            self._building.discard(key)
        self._nodes[key] = node
        return node

    def _alternatives(self, key, depth=0):
        atoms, split = self._flatten(key)
        if atoms is None:
            return []
        lit = self._literals(atoms, key)
        if lit is not None:
            return [Lit(lit)] if lit else []
        if split is not None:
            if self._contradictory(atoms):
                return []  # pruned before splitting further
            return self._split(atoms, split)
        return self._typed(atoms)

    def _contradictory(self, atoms):
        """True only if no value satisfies the atoms: disjoint ``type`` sets, or objects only
        and a name both required and forbidden or a required name whose ``const``/``enum``
        sets have nothing in common (cheap, sound, incomplete: prunes split cases early)."""
        types = None
        for x in atoms:
            s, p, skip = self.schema(x)
            if isinstance(s, dict) and "type" in s and "type" not in skip:
                t = s["type"]
                ts = {t} if isinstance(t, str) else set(t) if isinstance(t, list) else None
                if ts is None or not all(isinstance(y, str) for y in ts):
                    continue
                if "number" in ts:
                    ts.add("integer")
                types = ts if types is None else types & ts
        if types is not None and not types:
            return True
        if types != {"object"}:
            return False
        present, absent = self._presence(atoms)
        if present & absent:
            return True
        values = {}
        for x in atoms:
            s, p, skip = self.schema(x)
            props = s.get("properties") if isinstance(s, dict) and "properties" not in skip else None
            if not isinstance(props, dict):
                continue
            for d in present.intersection(props):
                sub = props[d]
                if isinstance(sub, dict) and ("const" in sub or "enum" in sub):
                    vals = [sub["const"]] if "const" in sub else sub["enum"]
                    if isinstance(vals, list):
                        keys = {json_key(v) for v in vals}
                        values[d] = keys if d not in values else values[d] & keys
                        if not values[d]:
                            return True
        return False

    def _literals(self, atoms, key):
        """The finite value set of the conjunction, or None if it has none."""
        cands = None
        for a in atoms:
            s, p, skip = self.schema(a)
            if "const" in s and "const" not in skip:
                vals = [s["const"]]
            elif "enum" in s and "enum" not in skip:
                if not isinstance(s["enum"], list):
                    raise GrammarError(f"JSON schema: enum at {display(p)} is not an array",
                                       where=display(p), construct="enum")
                vals = list(s["enum"])
            else:
                continue
            # hashed (json_key), not pairwise: a 10,000-value enum stays near-linear
            if cands is None:
                cands, seen = [], set()
                for v in vals:
                    kv = json_key(v)
                    if kv not in seen:
                        seen.add(kv)
                        cands.append(v)
            else:
                keep = {json_key(v) for v in vals}
                cands = [c for c in cands if json_key(c) in keep]
        if cands is None:
            return None
        # checked against the flattened atoms, in-place references skipped (their targets
        # are atoms of their own, with the keywords a split has handled): ``key`` may hold
        # an allOf/$ref whose target's oneOf is being split, and validating that in full
        # would drop the value from its own case (hole: allOf [oneOf [const 1, integer]])
        flat = frozenset(atom(*_with(split_atom(a), "x-cfgmask-ptr", "$ref", "allOf")) for a in atoms)
        out = []
        for i, v in enumerate(cands):
            if i & 1023 == 1023:
                self.budget.check_time("enum", display(split_atom(atoms[0])[0]))
            if isinstance(v, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in v):
                continue  # no UTF-8 spelling
            if self._valid_all(v, flat):
                out.append(v)
        return out

    def _valid_all(self, v, key):
        for a in key:
            s, p, skip = self.schema(a)
            try:
                if skip:
                    sub = {k: x for k, x in s.items() if k not in skip} if isinstance(s, dict) else s
                    if not self.validator._valid(v, sub, p):
                        return False
                elif not self.validator.valid(v, p):
                    return False
            except Unsupported as e:
                self.fail(e.keyword, p, f"{e.why} (needed to check the value {v!r})")
        return True

    # ---- splits
    def _split(self, atoms, split):
        a, k = split
        s, p, skip = self.schema(a)
        self.doc.origin_hint = p  # the cases written below come from here
        rest = [x for x in atoms if x != a]
        done = atom(p, skip | {k} | ({"then", "else"} if k == "if" else set()))
        base = rest + [done]
        self.budget.where = (k, display(child(p, k)))
        if k == "if":
            alts = self._dispatch(atoms)
            if alts is not None:
                return alts
        if k in ("dependentRequired", "dependentSchemas", "dependencies"):
            cases = self._dependency_cases(s, p, k, rest, skip)
        elif k == "if" and self._requires_if_present(s) is not None:
            # "if a is present then bs are required": dependentRequired {a: bs}
            a_name, reqs = self._requires_if_present(s)
            dep = {"dependentRequired": {a_name: reqs}}
            cases = [[self.doc.add_synthetic(f"dep({json.dumps(dep, sort_keys=True)})", dep)]]
        else:
            cases = self._cases(s, p, k)
        if cases is not None:
            self.budget.charge(len(cases))
        if cases is None:  # loosened: drop the keyword
            return list(self.node(frozenset(base)).alts)
        nodes = [self.node(frozenset(base + list(c))) for c in cases]
        if k == "oneOf" and not self._disjoint_nodes(nodes):
            # exactly one case: case i and the negation of every other case
            negs = [self.negation(child(p, "oneOf", i), quiet=True) for i in range(len(cases))]
            if any(n is None for n in negs) or len(cases) > 6:
                self.fail("oneOf", p, "the cases may overlap and their negations cannot all be "
                          "expressed, so exactly-one cannot be compiled")
            else:
                nodes = [self.node(frozenset(base + list(c) + [negs[j] for j in range(len(cases))
                                                               if j != i]))
                         for i, c in enumerate(cases)]
        alts = []
        for n in nodes:
            alts.extend(n.alts)
        return alts

    # ---- polynomial splits (docs/json-schema.md, "Compile bounds")
    def _presence(self, atoms):
        """Property names every object of the conjunction has / none has (sound, not complete)."""
        present, absent = set(), set()
        for x in atoms:
            s, p, skip = self.schema(x)
            if not isinstance(s, dict):
                continue
            req = s.get("required") if "required" not in skip else None
            if isinstance(req, list):
                present.update(n for n in req if isinstance(n, str))
            props = s.get("properties") if "properties" not in skip else None
            if isinstance(props, dict):
                absent.update(n for n, v in props.items() if v is False)
        return present, absent

    def _dependency_cases(self, s, p, k, rest, skip=frozenset()):
        """Cases of ``dependentRequired``/``dependentSchemas``/``dependencies``: non-objects,
        and one case per consistent presence assignment of the dependent names.

        The assignment is searched with propagation (a present name makes its
        required names present; a name required and forbidden ends the
        branch), so a chain or cycle of dependencies gives a handful of cases,
        not 2^n; every step is charged to the compile budget.
        """
        v = s[k]
        if not isinstance(v, dict):
            raise GrammarError(f"JSON schema: {k} at {display(p)} must be an object",
                               where=display(p), construct=k)
        entries = []
        for name, dep in v.items():
            if k == "dependentRequired" or (k == "dependencies" and isinstance(dep, list)):
                if not isinstance(dep, list) or not all(isinstance(n, str) for n in dep):
                    raise GrammarError(f"JSON schema: {k}/{name} at {display(p)} must be an array "
                                       f"of strings", where=display(p), construct=k)
                entries.append((name, tuple(dep), None))
            else:
                entries.append((name, (), child(p, k, name)))
        if not entries:
            return [[]]
        doc = self.doc
        # name lists whose names are all declared properties: the object grammar tracks
        # them (Obj.implies, emit.py) instead of a split
        declared = set()
        for src, sskip in [(self.schema(x)[0], self.schema(x)[2]) for x in rest] + [(s, skip)]:
            if isinstance(src, dict):
                for kw in ("properties", "required"):
                    if kw not in sskip and isinstance(src.get(kw), (dict, list)):
                        declared.update(n for n in src[kw] if isinstance(n, str))
        tracked = {name: list(reqs) for name, reqs, sub in entries
                   if sub is None and name in declared and all(n in declared for n in reqs)}
        if tracked:
            entries = [e for e in entries if not (e[2] is None and e[0] in tracked)]
            implied = doc.add_synthetic(f"implies({json.dumps(tracked, sort_keys=True)})",
                                        {"x-cfgmask-implies": tracked})
            if not entries:
                return [[implied]]
            return [c + [implied] for c in self._dependency_cases({k: dict(
                (n, list(r)) if sb is None else (n, v[n]) for n, r, sb in entries)},
                p, k, rest, skip)]
        present0, absent0 = self._presence(rest)
        cases = [[doc.add_synthetic("type(non-object)", {"type": ["null", "boolean", "number",
                                                                  "string", "array"]})]]
        budget = self.budget
        where = display(child(p, k))
        # dependent schemas that test one property d against values (the tagged-union
        # idiom again): decide them together by d's value, so each is true or false
        groups = {}
        pure = {}
        for i, (name, reqs, sub) in enumerate(entries):
            if sub is not None:
                for t in self._discriminator_tests(sub):
                    groups.setdefault(t[0], []).append((i,) + t[1:4])
                    pure[i, t[0]] = t[4]
        outer = [(None, {}, set(), set())]   # (case schema, entry -> truth, present, absent)
        if groups:
            d, tests = max(groups.items(), key=lambda kv: (len(kv[1]), kv[0]))
            if len(tests) >= 2:
                values, seen = [], set()
                for _, vals, _, _ in tests:
                    for v in vals:
                        if json_key(v) not in seen:
                            seen.add(json_key(v))
                            values.append(v)
                outer = [({"type": "object", "properties": {d: False}},
                          {i: not req for i, _, req, _ in tests}, set(), {d})]
                for v in values:
                    outer.append(({"type": "object", "required": [d],
                                   "properties": {d: {"const": v}}},
                                  {i: any(json_key(x) == json_key(v) for x in vals)
                                   for i, vals, _, _ in tests}, {d}, set()))
                outer.append(({"type": "object", "required": [d],
                               "properties": {d: {"x-cfgmask-not-in": values}}},
                              {i: False for i, _, _, _ in tests}, {d}, set()))
                budget.charge(len(outer), k, where)
        for case0, truth, pres0, abs0 in outer:
            ents = []
            forced_absent = set()
            for i, (name, reqs, sub) in enumerate(entries):
                if i in truth:
                    if not truth[i]:
                        forced_absent.add(name)  # present would need a false schema
                        continue
                    if pure[i, d]:
                        sub = None  # the test on d was all of it
                if not reqs and sub is None:
                    continue  # no constraint
                ents.append((name, reqs, sub))
            head = [] if case0 is None else \
                [doc.add_synthetic(f"case({json.dumps(case0, sort_keys=True)})", case0)]
            p0 = frozenset(present0 | pres0)
            a0 = frozenset(absent0 | abs0)
            stack = [(0, p0, a0 | forced_absent, ())]
            while stack:
                i, pres, absn, subs = stack.pop()
                budget.charge(1, k, where)
                if pres & absn:
                    continue  # a name both required and forbidden: no object
                if i == len(ents):
                    req = sorted(pres - p0)
                    forb = sorted(absn - a0)
                    case = {"type": "object"}
                    if req:
                        case["required"] = req
                    if forb:
                        case["properties"] = {n: False for n in forb}
                    cases.append(head + [doc.add_synthetic(f"case({json.dumps(case, sort_keys=True)})",
                                                           case)] + list(subs))
                    continue
                name, reqs, sub = ents[i]
                if name in absn:
                    stack.append((i + 1, pres, absn, subs))
                    continue
                stack.append((i + 1, pres | {name} | set(reqs), absn,
                              subs + ((sub,) if sub is not None else ())))
                if name not in pres:
                    stack.append((i + 1, pres, absn | {name}, subs))
        return cases

    def _dispatch(self, atoms):
        """The tagged-union idiom as one split: alternatives, or None if it does not apply.

        Two or more pending ``if``/``then``/``else`` whose ``if`` tests one
        property ``d`` against a finite value set (``properties: {d: {const or
        enum}}``, maybe ``required: [d]``, ``type: object`` and other keywords)
        are decided together: the cases are non-objects, objects without
        ``d``, objects whose ``d`` is each value named by some ``if``, and
        objects whose ``d`` is none of them.  In each case the test on ``d`` of
        every such ``if`` is known: false gives the clause's ``else``; true
        gives its ``then`` when the ``if`` has nothing else (*pure*), and
        otherwise leaves the clause to an ordinary split (usually one clause
        per value).  n values give n + 3 cases instead of 2^(clauses).
        """
        groups = {}
        for x in atoms:
            s, p, skip = self.schema(x)
            if not isinstance(s, dict) or "if" not in s or "if" in skip or \
                    ("then" not in s and "else" not in s) or UNDISPATCHED in skip:
                continue
            for t in self._discriminator_tests(child(p, "if")):
                groups.setdefault(t[0], []).append((x, s, p, skip) + t[1:])
        if not groups:
            return None
        d, clauses = max(groups.items(), key=lambda kv: (len(kv[1]), kv[0]))
        if len(clauses) < 2:
            return None
        values, seen = [], set()
        for c in clauses:
            for v in c[4]:
                kv = json_key(v)
                if kv not in seen:
                    seen.add(kv)
                    values.append(v)
        in_group = {c[0] for c in clauses}
        base = [x for x in atoms if x not in in_group]
        doc = self.doc
        # (case schema, each clause's if in that case: True, False or None: not known)
        cases = [({"type": ["null", "boolean", "number", "string", "array"]},
                  [c[8] for c in clauses]),
                 ({"type": "object", "properties": {d: False}},
                  [False if c[5] else True if c[7] else None for c in clauses])]
        for v in values:
            kv = json_key(v)
            cases.append(({"type": "object", "required": [d], "properties": {d: {"const": v}}},
                          [(True if c[7] else None) if any(json_key(x) == kv for x in c[4])
                           else False for c in clauses]))
        cases.append(({"type": "object", "required": [d],
                       "properties": {d: {"x-cfgmask-not-in": values}}},
                      [False] * len(clauses)))
        self.budget.charge(len(cases), "if", display(child(clauses[0][2], "if")))
        alts = []
        for case, truth in cases:
            conj = list(base)
            conj.append(doc.add_synthetic(f"case({json.dumps(case, sort_keys=True)})", case))
            for (x, s, p, skip, *_), yes in zip(clauses, truth):
                if yes is None:
                    # the rest of the if decides: an ordinary split (not this dispatch again)
                    conj.append(atom(p, skip | {UNDISPATCHED}))
                    continue
                conj.append(atom(p, skip | {"if", "then", "else"}))
                branch = "then" if yes else "else"
                if branch in s:
                    conj.append(child(p, branch))
            alts.extend(self.node(frozenset(conj)).alts)
        return alts

    def _requires_if_present(self, s):
        """``(a, names)`` if ``s`` is ``if: {required: [a]}`` (maybe ``type: object``),
        ``then: {required: names}`` and no ``else``; else None."""
        cond, then = s.get("if"), s.get("then")
        if "else" in s or not isinstance(cond, dict) or not isinstance(then, dict):
            return None
        if any(kk not in ("required", "type") and kk not in ANNOTATIONS for kk in cond) or \
                cond.get("type", "object") not in ("object", ["object"]) or \
                any(kk != "required" and kk not in ANNOTATIONS for kk in then):
            return None
        req, reqs = cond.get("required"), then.get("required")
        if not (isinstance(req, list) and len(req) == 1 and isinstance(req[0], str) and
                isinstance(reqs, list) and all(isinstance(n, str) for n in reqs)):
            return None
        return req[0], list(reqs)

    def _discriminator_tests(self, ptr):
        """The tests on one property the schema at ``ptr`` contains as a conjunct:
        ``(d, values, required, object_only, pure, non_object)`` each, meaning "when
        an object: property d absent (allowed unless required) or in values";
        ``pure``: the schema is exactly that test; ``non_object``: the schema's
        answer for every non-object (True, False, or None: it depends)."""
        s = self.doc.get(ptr)
        if not isinstance(s, dict) or "$ref" in s:
            return []
        props = s.get("properties")
        if not isinstance(props, dict):
            return []
        req = s.get("required", [])
        if not isinstance(req, list):
            return []
        obj_only = s.get("type") in ("object", ["object"])
        others = [kk for kk in s if kk not in ("properties", "required", "type") and
                  kk not in ANNOTATIONS]
        if "type" in s and not obj_only:
            others.append("type")
        out = []
        for d, sub in props.items():
            if not isinstance(sub, dict) or not ("const" in sub or "enum" in sub) or \
                    any(kk not in ("const", "enum", "type") and kk not in ANNOTATIONS for kk in sub):
                continue
            cands = [sub["const"]] if "const" in sub else sub["enum"]
            if not isinstance(cands, list):
                continue
            sub_ptr = child(ptr, "properties", d)
            try:
                values = [v for v in cands if json_type(v) not in ("object", "array") and
                          self.validator.valid(v, sub_ptr)]
            except (Unsupported, TypeError):
                continue
            pure = not others and len(props) == 1 and all(n == d for n in req)
            non_object = False if obj_only else \
                True if all(kk in _OBJECT_KW or kk in _DEPENDENCY_KW for kk in others) else None
            out.append((d, values, d in req, obj_only, pure, non_object))
        return out

    def _cases(self, s, p, k):
        """The cases (lists of atoms) a disjunctive keyword splits into, or None (loosened)."""
        v = s[k]
        if k in ("anyOf", "oneOf"):
            if not isinstance(v, list) or not v:
                raise GrammarError(f"JSON schema: {k} at {display(p)} must be a non-empty array",
                                   where=display(p), construct=k)
            return [[child(p, k, i)] for i in range(len(v))]
        if k == "not":
            neg = self.negation(child(p, "not"))
            if neg is None:
                return None
            return [[neg]]
        if k == "if":
            cond = child(p, "if")
            neg = self.negation(cond)
            if neg is None:
                return None
            yes = [cond] + ([child(p, "then")] if "then" in s else [])
            no = [neg] + ([child(p, "else")] if "else" in s else [])
            return [yes, no]
        # dependencies (_split passes the rest of the conjunction, for propagation)
        return self._dependency_cases(s, p, k, [])

    def _disjoint_nodes(self, nodes):
        for i in range(len(nodes)):
            for j in range(i):
                for a in nodes[i].alts:
                    for b in nodes[j].alts:
                        if not self.disjoint(a, b, 3):
                            return False
        return True

    # ---- disjointness (conservative: True only when provably disjoint)
    def disjoint(self, a, b, depth):
        if a.kind == "lit" and b.kind == "lit":
            return not any(json_equal(x, y) for x in a.values for y in b.values)
        if a.kind == "lit" or b.kind == "lit":
            lit, other = (a, b) if a.kind == "lit" else (b, a)
            return all(not self._alt_accepts(other, v) for v in lit.values)
        if a.kind != b.kind:
            return True
        if a.kind == "null":
            return False
        if a.kind == "bool":
            return not set(a.values) & set(b.values)
        if a.kind == "num":
            return _ranges_disjoint(a, b)
        if a.kind == "str":
            return self._strings_disjoint(a, b)
        if depth <= 0:
            return False
        if a.kind == "obj":
            return self._objects_disjoint(a, b, depth)
        if a.kind == "arr":
            return self._arrays_disjoint(a, b, depth)
        return False

    def _alt_accepts(self, alt, v):
        """Could ``v`` be in the language of typed alternative ``alt``? (may over-answer True)"""
        t = json_type(v)
        k = alt.kind
        if k == "null":
            return v is None
        if k == "bool":
            return t == "boolean" and v in alt.values
        if k == "num":
            if t != "number":
                return False
            x = to_decimal(v)
            if alt.integer and x != x.to_integral_value():
                return False
            if alt.lo is not None and (x < alt.lo or (alt.lo_excl and x == alt.lo)):
                return False
            if alt.hi is not None and (x > alt.hi or (alt.hi_excl and x == alt.hi)):
                return False
            return True
        if k == "str":
            if t != "string":
                return False
            if len(v) < alt.lo or (alt.hi is not None and len(v) > alt.hi):
                return False
            try:
                return all(matches_pattern(pt, v) for pt, _ in alt.patterns)
            except Unsupported:
                return True
        if k == "obj":
            if t != "object":
                return False
            names = {n for n, _, _ in alt.props}
            return all(n in v for n, _, r in alt.props if r) and \
                (alt.regions or set(v) <= names)
        if k == "arr":
            return t == "array" and len(v) >= alt.min and (alt.max is None or len(v) <= alt.max)
        return True

    def _strings_disjoint(self, a, b):
        if a.hi is not None and b.lo > a.hi or b.hi is not None and a.lo > b.hi:
            return True
        if not (a.patterns or a.formats) or not (b.patterns or b.formats):
            return False
        try:
            from cfgmask.frontends.json_schema.emit import string_dfa
            da, _ = string_dfa(a, self, [], True)
            db, _ = string_dfa(b, self, [], True)
            from cfgmask.frontends.json_schema.automata import is_empty, product
            return is_empty(product(da, db, "and", "(?!)", minimize=False))
        except Unsupported:
            return False

    def _objects_disjoint(self, a, b, depth):
        if a.max is not None and b.min > a.max or b.max is not None and a.min > b.max:
            return True
        pa = {n: (c, r) for n, c, r in a.props}
        pb = {n: (c, r) for n, c, r in b.props}
        for n, (ca, ra) in pa.items():
            if ra and n not in pb and not b.regions:
                return True  # b allows no such key
            if n in pb:
                cb, rb = pb[n]
                if ra and rb:
                    na, nb = self.node(ca, soft=True), self.node(cb, soft=True)
                    if na is not None and nb is not None and all(self.disjoint(x, y, depth - 1) for x in na.alts for y in nb.alts):
                        return True
        for n, (cb, rb) in pb.items():
            if rb and n not in pa and not a.regions:
                return True
        return False

    def _arrays_disjoint(self, a, b, depth):
        if a.max is not None and b.min > a.max or b.max is not None and a.min > b.max:
            return True
        for i in range(min(a.min, b.min)):
            ca = a.prefix[i] if i < len(a.prefix) else a.rest
            cb = b.prefix[i] if i < len(b.prefix) else b.rest
            if ca is None or cb is None:
                continue
            na, nb = self.node(ca, soft=True), self.node(cb, soft=True)
            if na is not None and nb is not None and \
                    all(self.disjoint(x, y, depth - 1) for x in na.alts for y in nb.alts):
                return True
        return False

    # ---- negation
    def negation(self, pointer, quiet=False):
        """Atom of a synthetic schema equal to ``not <schema at pointer>``, or None.

        None means the negation cannot be written: a failure is reported
        (``strict``: raised) unless ``quiet``.
        """
        name = f"not({pointer})"
        key = self.doc.has_synthetic(name)
        if key is not None:
            return key
        if name in self._neg_failed:
            if not quiet:  # failed quietly before: report it now, never drop silently
                e = self._neg_failed[name]
                self.fail(e.keyword, pointer, f"negated (not, if, oneOf): {e.why}")
            return None
        try:
            if pointer in self._neg_stack:
                raise Unsupported("not", "the negated schema refers to itself")
            self._neg_stack.add(pointer)
            try:
                neg = self._negate(self.doc.get(pointer), pointer)
            finally:
                self._neg_stack.discard(pointer)
        except Unsupported as e:
            self._neg_failed[name] = e
            if not quiet:
                # the keyword that cannot be negated, not "not": the user has to change it
                self.fail(e.keyword, pointer, f"negated (not, if, oneOf): {e.why}")
            return None
        return self.doc.add_synthetic(name, neg, source=pointer)

    def _negate(self, s, p):
        if s is True:
            return False
        if s is False:
            return True
        if not isinstance(s, dict):
            raise Unsupported("schema", "not an object")
        draft = self.doc.draft_at(p)
        if "$ref" in s and draft <= 7:
            return self._negate_ptr(self.doc.resolve(p, s["$ref"]))
        # the negation is the union (anyOf) of these schemas.  A type-specific
        # keyword (minimum, maxLength, items, required, ...) holds vacuously for
        # values of other types, so its negation holds only for its own type.
        cases = []
        for k, v in s.items():
            if k in ANNOTATIONS or k not in _HANDLED and not k.startswith("x-cfgmask-") \
                    and k not in _REFUSED:
                continue
            if k == "$ref":
                cases.append(self._negate_ptr(self.doc.resolve(p, v)))
            elif k == "x-cfgmask-ptr":
                cases.append(self._negate_ptr(v))
            elif k == "type":
                ts = {v} if isinstance(v, str) else set(v)
                rest = [t for t in ("null", "boolean", "string", "array", "object") if t not in ts]
                if "number" not in ts:
                    if "integer" in ts:
                        cases.append({"type": "number", "x-cfgmask-nonint": True})
                    else:
                        rest.append("number")
                if rest:
                    cases.append({"type": rest})
            elif k in ("enum", "const"):
                cases.append({"x-cfgmask-not-in": [v] if k == "const" else list(v)})
            elif k == "x-cfgmask-not-in":
                cases.append({"enum": list(v)})
            elif k == "allOf":
                cases += [self._negate_ptr(child(p, k, i)) for i in range(len(v))]
            elif k == "anyOf":
                cases.append({"allOf": [self._negate_ptr(child(p, k, i)) for i in range(len(v))]})
            elif k == "not":
                cases.append({"x-cfgmask-ptr": child(p, k)})
            elif k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                if isinstance(v, bool):
                    continue
                flip = {"minimum": "exclusiveMaximum", "maximum": "exclusiveMinimum",
                        "exclusiveMinimum": "maximum", "exclusiveMaximum": "minimum"}[k]
                if k == "minimum" and s.get("exclusiveMinimum") is True:
                    flip = "maximum"
                if k == "maximum" and s.get("exclusiveMaximum") is True:
                    flip = "minimum"
                cases.append({"type": "number", flip: v})
            elif k == "multipleOf":
                cases.append({"type": "number", "x-cfgmask-not-multipleOf": v})
            elif k == "x-cfgmask-not-multipleOf":
                cases.append({"type": "number", "multipleOf": v})
            elif k == "x-cfgmask-nonint":
                cases.append({"type": "integer"})
            elif k in ("minLength", "maxLength"):
                if k == "minLength":
                    if v > 0:
                        cases.append({"type": "string", "maxLength": v - 1})
                else:
                    cases.append({"type": "string", "minLength": v + 1})
            elif k == "pattern":
                cases.append({"type": "string", "x-cfgmask-not-pattern": v})
            elif k == "x-cfgmask-not-pattern":
                cases.append({"type": "string", "pattern": v})
            elif k == "format":
                if v in S.UNCHECKED_FORMATS:
                    raise Unsupported("format", f"format {v!r}: {S.UNCHECKED_FORMATS[v]}")
                if v in S.FORMATS:
                    cases.append({"type": "string", "x-cfgmask-not-format": v})
                    if v in S.FORMAT_MAX_LENGTH:
                        cases.append({"type": "string", "minLength": S.FORMAT_MAX_LENGTH[v] + 1})
            elif k == "x-cfgmask-not-format":
                cases.append({"type": "string", "format": v})
            elif k in ("minItems", "maxItems", "minProperties", "maxProperties"):
                t = "array" if "Items" in k else "object"
                if k.startswith("min"):
                    if v > 0:
                        cases.append({"type": t, k.replace("min", "max"): v - 1})
                else:
                    cases.append({"type": t, k.replace("max", "min"): v + 1})
            elif k == "required":
                for n in v:
                    cases.append({"type": "object", "properties": {n: False}})
            elif k == "properties":
                for n in v:
                    cases.append({"type": "object", "required": [n],
                                  "properties": {n: self._negate_ptr(child(p, k, n))}})
            elif k == "items" and isinstance(v, (dict, bool)) and \
                    not (draft >= 2020 and "prefixItems" in s):
                cases.append({"type": "array", "contains": self._negate_ptr(child(p, k))})
            elif k == "contains" and "minContains" not in s and "maxContains" not in s:
                cases.append({"type": "array", "items": self._negate_ptr(child(p, k))})
            elif k in ("minContains", "maxContains") and "contains" not in s:
                continue
            elif k in ("then", "else") and "if" not in s:
                continue
            elif k == "uniqueItems" and not v:
                continue
            else:
                raise Unsupported(k, "its negation is not expressible here")
        if not cases:
            return False
        return cases[0] if len(cases) == 1 else {"anyOf": cases}

    def _negate_ptr(self, pointer):
        a = self.negation(pointer, quiet=True)
        if a is None:
            e = self._neg_failed.get(f"not({pointer})")
            if e is not None:  # pass the real keyword and reason up
                raise Unsupported(e.keyword, e.why)
            raise Unsupported("not", f"cannot negate {display(pointer)}")
        return {"x-cfgmask-ptr": a}

    # ---- typed alternatives
    def _typed(self, atoms):
        types = set(_ALL_TYPES)
        num, st, arr, obj = Num(), Str(), Arr(), Obj()
        obj_sources, arr_sources = [], []
        unique = None
        excluded = []
        for a in atoms:
            s, p, skip = self.schema(a)
            draft = self.doc.draft_at(p)
            for k, v in s.items():
                if k in skip or k in ANNOTATIONS:
                    continue
                if k not in _HANDLED:
                    continue  # unknown keywords are annotations (JSON Schema 2020-12, 6.5)
                try:
                    if k == "type":
                        ts = {v} if isinstance(v, str) else set(v)
                        bad = ts - _ALL_TYPES
                        if bad:
                            raise GrammarError(f"JSON schema: unknown type {sorted(bad)} at {display(p)}",
                                               where=display(p), construct="type")
                        if "number" in ts:
                            ts.add("integer")
                        types &= ts
                    elif k == "x-cfgmask-not-in":
                        excluded += list(v)
                    elif k in _NUMBER_KW:
                        self._number_kw(num, k, v, s, p)
                        num.where = p
                    elif k in _STRING_KW:
                        self._string_kw(st, k, v, p)
                        st.where = p
                    elif k == "uniqueItems":
                        if v:
                            unique = p
                    elif k in _ARRAY_KW:
                        pass
                    elif k in _OBJECT_KW:
                        pass
                except Unsupported as e:
                    self.fail(e.keyword, child(p, k), e.why)
            if any(k in s and k not in skip for k in _OBJECT_KW):
                obj_sources.append((s, p, skip))
            if any(k in s and k not in skip for k in _ARRAY_KW):
                arr_sources.append((s, p, skip, draft))
        alts = []
        ex_types = {json_type(v) for v in excluded}
        if "null" in types and "null" not in ex_types:
            alts.append(Null())
        if "boolean" in types:
            vals = [b for b in (True, False) if not any(x is b for x in excluded)]
            if vals:
                alts.append(Bool(vals))
        num.excluded = [v for v in excluded if json_type(v) == "number"]
        st.excluded = [v for v in excluded if json_type(v) == "string"]
        # an excluded object/array matters only if the rest of the conjunction allows it
        # (in-place references are skipped too: their targets are atoms of their own)
        others = frozenset(atom(*_with(split_atom(a), "x-cfgmask-not-in", "x-cfgmask-ptr", "$ref",
                                       "allOf")) for a in atoms)
        for v in excluded:
            if json_type(v) in ("object", "array") and json_type(v) in types and \
                    self._valid_all(v, others):
                self.fail("not", "", f"excluding the {json_type(v)} value {v!r} cannot be expressed")
        if "number" in types or "integer" in types:
            num.integer = num.integer or "number" not in types
            n = _finish_number(num)
            if n is not None:
                alts.append(n)
        if "string" in types:
            alts.append(st)
        if "array" in types:
            a = self._array(arr, arr_sources)
            if a is not None:
                if unique is not None and not (a.max is not None and a.max <= 1):
                    self.fail("uniqueItems", child(unique, "uniqueItems"),
                              "distinct items cannot be expressed by a context-free grammar")
                alts.append(a)
        if "object" in types:
            o = self._object(obj, obj_sources)
            if o is not None:
                alts.append(o)
        return alts

    def _number_kw(self, num, k, v, s, p):
        if k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if isinstance(v, bool):
                return  # draft-04 flag, read together with minimum/maximum
            x = to_decimal(v)
            if k == "minimum" or k == "exclusiveMinimum":
                excl = k == "exclusiveMinimum" or s.get("exclusiveMinimum") is True
                if num.lo is None or x > num.lo or (x == num.lo and excl):
                    num.lo, num.lo_excl = x, excl
            else:
                excl = k == "exclusiveMaximum" or s.get("exclusiveMaximum") is True
                if num.hi is None or x < num.hi or (x == num.hi and excl):
                    num.hi, num.hi_excl = x, excl
        elif k == "multipleOf":
            x = to_decimal(v)
            if x <= 0:
                raise GrammarError(f"JSON schema: multipleOf at {display(p)} must be > 0",
                                   where=display(p), construct="multipleOf")
            num.multiple_of.append(x)
        elif k == "x-cfgmask-not-multipleOf":
            num.not_multiple_of.append(to_decimal(v))
        elif k == "x-cfgmask-nonint":
            num.nonint = True

    def _string_kw(self, st, k, v, p):
        if k == "minLength":
            st.lo = max(st.lo, int(v))
        elif k == "maxLength":
            st.hi = int(v) if st.hi is None else min(st.hi, int(v))
        elif k == "pattern":
            st.patterns.append((v, p))
        elif k == "x-cfgmask-not-pattern":
            st.not_patterns.append((v, p))
        elif k == "format":
            if v in S.FORMATS:
                st.formats.append(v)
                if v in S.FORMAT_MAX_LENGTH:
                    m = S.FORMAT_MAX_LENGTH[v]
                    st.hi = m if st.hi is None else min(st.hi, m)
            elif v in S.UNCHECKED_FORMATS:
                # strict: refused; otherwise an annotation (the grammar accepts more)
                raise Unsupported("format", f"format {v!r}: {S.UNCHECKED_FORMATS[v]}")
        elif k == "x-cfgmask-not-format":
            if v in S.FORMATS:
                st.not_formats.append(v)

    # ---- arrays
    def _array(self, arr, sources):
        prefixes, rests = [], []
        for s, p, skip, draft in sources:
            items = s.get("items") if "items" not in skip else None
            prefix_ptrs, rest = [], frozenset()
            if isinstance(items, list):
                prefix_ptrs = [child(p, "items", i) for i in range(len(items))]
                if "additionalItems" in s and "additionalItems" not in skip:
                    rest = frozenset([child(p, "additionalItems")])
            else:
                pi = s.get("prefixItems") if "prefixItems" not in skip else None
                if isinstance(pi, list):
                    prefix_ptrs = [child(p, "prefixItems", i) for i in range(len(pi))]
                if items is not None:
                    rest = frozenset([child(p, "items")])
            prefixes.append(prefix_ptrs)
            rests.append(rest)
            for k in ("minItems", "maxItems"):
                if k in s and k not in skip:
                    v = int(s[k])
                    if k == "minItems":
                        arr.min = max(arr.min, v)
                    else:
                        arr.max = v if arr.max is None else min(arr.max, v)
            if "contains" in s and "contains" not in skip:
                lo = int(s.get("minContains", 1))
                hi = s.get("maxContains")
                hi = None if hi is None else int(hi)
                cptr = child(p, "contains")
                if hi is not None and not (arr.max is not None and hi >= arr.max):
                    neg = self.negation(cptr, quiet=True)
                    if neg is None:
                        self.fail("maxContains", child(p, "maxContains"),
                                  "an upper bound on matching items needs the negation of "
                                  "'contains', which cannot be written")
                        hi = None
                    else:
                        arr.counted.append((frozenset([cptr]), frozenset([neg]), lo, hi))
                        continue
                if lo > 0:
                    arr.contains.append((frozenset([cptr]), lo))
        k = max((len(x) for x in prefixes), default=0)
        for i in range(k):
            conj = set()
            for pre, rest in zip(prefixes, rests):
                if i < len(pre):
                    conj.add(pre[i])
                else:
                    conj |= rest
            arr.prefix.append(frozenset(conj))
        rest = set()
        for rest_i in rests:
            rest |= rest_i
        arr.rest = frozenset(rest)
        # a "false" rest caps the length at the prefix length
        for pre, rest_i in zip(prefixes, rests):
            if any(self.doc.get(r) is False for r in rest_i):
                arr.max = len(pre) if arr.max is None else min(arr.max, len(pre))
        if arr.max is not None and arr.min > arr.max:
            return None
        # counts unrolled one grammar symbol each: refuse the huge ones up front
        if any(arr.max is not None and m > arr.max for _, m in arr.contains) or \
                any(arr.max is not None and lo > arr.max for _, _, lo, _ in arr.counted):
            return None  # more matching items than items
        where = lambda kw, v: _count_where(sources, kw, v)  # noqa: E731
        if arr.max is not None and arr.max > MAX_COUNT:
            check_count("maxItems", arr.max, where("maxItems", arr.max))
        check_count("minItems", arr.min, where("minItems", arr.min))
        for _, m in arr.contains:
            check_count("minContains", m, where("minContains", m))
        for _, _, lo, hi in arr.counted:
            check_count("minContains", lo, where("minContains", lo))
            check_count("maxContains", hi, where("maxContains", hi))
        if len(arr.contains) + len(arr.counted) > 2:
            self.fail("contains", "", "more than two 'contains' constraints on one array")
            arr.contains = arr.contains[:2]
            arr.counted = arr.counted[:max(0, 2 - len(arr.contains))]
        return arr

    # ---- objects
    def _written_key(self, p, depth=0):
        """Where the schema at ``p`` is written: the key and item indices on the
        way from the root, a ``$ref`` target standing where the ``$ref`` that
        first reached it is written (``property_order="written"``)."""
        if p in self._ref_from and depth < 64:
            q, kw = self._ref_from[p]
            return self._written_key(q, depth + 1) + (_key_index(self.doc.get(q), kw),)
        if not p:
            return ()
        if depth >= 64:
            return (float("inf"),)
        if p.startswith("!") and "/" not in p:
            # a compiler-written schema stands where the schema it negates is
            # written; the cases it writes (tagged unions, dependencies) first
            desc = self.doc.synthetic_desc.get(p, "")
            if desc.startswith("not(") and desc.endswith(")"):
                return self._written_key(desc[4:-1], depth + 1)
            return ()
        head, _, last = p.rpartition("/")
        try:
            node = self.doc.get(head)
        except Exception:  # noqa: BLE001 - an order key only: unknown places go last
            return (float("inf"),)
        last = last.replace("~1", "/").replace("~0", "~")
        i = int(last) if isinstance(node, list) and last.isdigit() else _key_index(node, last)
        return self._written_key(head, depth + 1) + (i,)

    def _in_order(self, sources, keyword):
        """``sources`` in the order their ``keyword`` lists are merged (docs/json-schema.md)."""
        if self.property_order == "own-first":
            return sources
        return sorted(sources, key=lambda x: self._written_key(x[1]) + (_key_index(x[0], keyword),))

    def _object(self, obj, sources):
        names, required, forbidden = [], [], set()
        for s, p, skip in sources:
            imp = s.get("x-cfgmask-implies") if "x-cfgmask-implies" not in skip else None
            if isinstance(imp, dict):
                for a, bs in imp.items():
                    obj.implies.setdefault(a, set()).update(bs)
        for s, p, skip in self._in_order(sources, "properties"):
            if "properties" in s and "properties" not in skip:
                for n in s["properties"]:
                    if n not in names:
                        names.append(n)
        for s, p, skip in self._in_order(sources, "required"):
            if "required" in s and "required" not in skip:
                for n in s["required"]:
                    if n not in required:
                        required.append(n)
        for s, p, skip in sources:
            for k in ("minProperties", "maxProperties"):
                if k in s and k not in skip:
                    v = int(s[k])
                    if k == "minProperties":
                        obj.min = max(obj.min, v)
                    else:
                        obj.max = v if obj.max is None else min(obj.max, v)
        for n in required:
            if n not in names:
                names.append(n)
        pats = []   # (pattern, pointer, source index)
        for i, (s, p, skip) in enumerate(sources):
            if "patternProperties" in s and "patternProperties" not in skip:
                for pt in s["patternProperties"]:
                    pats.append((pt, child(p, "patternProperties", pt), i))
        name_conjs = [frozenset([child(p, "propertyNames")]) for s, p, skip in sources
                      if "propertyNames" in s and "propertyNames" not in skip]
        for n in names:
            conj = set()
            allowed = True
            for i, (s, p, skip) in enumerate(sources):
                props = s.get("properties", {}) if "properties" not in skip else {}
                matched = []
                for pt, pp, si in pats:
                    if si == i and self._key_matches(pt, pp, n):
                        matched.append(pp)
                conj.update(matched)
                if n in props:
                    conj.add(child(p, "properties", n))
                    if props[n] is False:
                        allowed = False
                    continue
                if matched:
                    continue
                if "additionalProperties" in s and "additionalProperties" not in skip:
                    if s["additionalProperties"] is False:
                        allowed = False
                    conj.add(child(p, "additionalProperties"))
            if not all(self._valid_all(n, nc) for nc in name_conjs):
                allowed = False  # propertyNames refuses it
            if not allowed:
                forbidden.add(n)
                if n in required:
                    return None
                continue
            obj.props.append((n, frozenset(conj), n in required))
        # additional-property regions: by the set of patterns a key matches
        excluded = tuple(names)
        m = len(pats)
        if m > 6:
            self.fail("patternProperties", "", "more than 6 patterns on one object")
            pats, m = pats[:6], 6
        for mask in range(1 << m):
            inside = [pats[j] for j in range(m) if mask >> j & 1]
            if any(S.patterns_disjoint(x[0], y[0]) for x in inside for y in inside if x is not y):
                continue  # no key matches all of them
            outside = [pats[j] for j in range(m) if not mask >> j & 1 and
                       not any(S.patterns_disjoint(pats[j][0], x[0]) for x in inside)]
            conj, allowed = set(), True
            for i, (s, p, skip) in enumerate(sources):
                mine = [pp for pt, pp, si in inside if si == i]
                if mine:
                    conj.update(mine)
                elif "additionalProperties" in s and "additionalProperties" not in skip:
                    if s["additionalProperties"] is False:
                        allowed = False
                    conj.add(child(p, "additionalProperties"))
            if not allowed:
                continue
            # declared names this region could contain (the others need no exclusion)
            ex = tuple(n for n in excluded
                       if all(self._key_matches(pt, pp, n) for pt, pp, _ in inside) and
                       not any(self._key_matches(pt, pp, n) for pt, pp, _ in outside))
            spec = KeySpec([(pt, pp) for pt, pp, _ in inside], [(pt, pp) for pt, pp, _ in outside],
                           ex, name_conjs)
            obj.regions.append((spec, frozenset(conj)))
        if obj.max is not None and obj.min > obj.max:
            return None
        if not obj.regions:
            # no other keys: at most len(props) members, so a larger bound says nothing
            if obj.min > len(obj.props):
                return None
            if obj.max is not None and obj.max >= len(obj.props):
                obj.max = None
        else:
            where = lambda kw, v: _count_where(sources, kw, v)  # noqa: E731
            if obj.max is not None:
                check_count("maxProperties", obj.max, where("maxProperties", obj.max))
            check_count("minProperties", obj.min, where("minProperties", obj.min))
        if obj.min >= 2 and obj.regions:
            self.fail("minProperties", "", "with additional properties the grammar counts members, "
                      "but duplicate keys count once in JSON")
        return obj

    def _key_matches(self, pattern, pointer, name):
        try:
            return matches_pattern(pattern, name)
        except Unsupported as e:
            self.fail("patternProperties", pointer, e.why)
            return False


def _count_where(sources, keyword, value):
    """Displayed pointer of the ``keyword`` among ``sources`` whose value is ``value``."""
    for src in sources:
        s, p = src[0], src[1]
        if isinstance(s, dict) and s.get(keyword) == value:
            return display(child(p, keyword))
    return display(child(sources[0][1], keyword)) if sources else keyword


def _with(pointer_skip, *keywords):
    p, skip = pointer_skip
    return p, skip | set(keywords)


def _finish_number(num):
    """Normalise a :class:`Num` (integer-valued multipleOf, empty ranges); None if empty."""
    for m in num.multiple_of:
        if m == m.to_integral_value():
            num.integer = True
    if num.integer and num.nonint:
        return None
    if num.lo is not None and num.hi is not None:
        if num.lo > num.hi or (num.lo == num.hi and (num.lo_excl or num.hi_excl)):
            return None
    return num


def _ranges_disjoint(a, b):
    if a.integer and b.nonint or b.integer and a.nonint:
        return True
    lo_a, lo_b = a.lo, b.lo
    if a.hi is not None and lo_b is not None:
        if lo_b > a.hi or (lo_b == a.hi and (b.lo_excl or a.hi_excl)):
            return True
    if b.hi is not None and lo_a is not None:
        if lo_a > b.hi or (lo_a == b.hi and (a.lo_excl or b.hi_excl)):
            return True
    return False


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

