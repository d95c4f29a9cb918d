"""The disjunctive keywords of JSON Schema: a conjunction split into cases, and the
disjointness proofs ``oneOf`` needs.

:class:`CaseSplits` is a part of
:class:`~cfgmask.frontends.json_schema.normalize.Normalizer`, which inherits
it; its methods use the normaliser's ``doc``, ``budget``, ``fail``,
``schema``, ``node`` and ``negation``.

``anyOf``, ``oneOf``, ``if``/``then``/``else``, ``not`` written as a
disjunction and the dependency keywords split a conjunction into cases whose
nodes' union is its node (``normalize`` module docstring, step 3); two or more
``if``s testing one property against values are split together
(:meth:`CaseSplits._dispatch`), the dependency keywords once per consistent
presence assignment (:meth:`CaseSplits._dependency_cases`).  A ``oneOf`` whose
cases may overlap is "exactly one case" (:meth:`CaseSplits._one_of`: a split
by a tag property, then case i next to the negations of the cases that may
overlap it); a written negation implied by its conjunction is dropped
(:meth:`CaseSplits._negation_implied`).
"""

import json

from cfgmask.errors import GrammarError
from cfgmask.frontends.json_schema.automata import is_empty, product
from cfgmask.frontends.json_schema.emit import string_dfa
from cfgmask.frontends.json_schema.drafts import ANNOTATIONS
from cfgmask.frontends.json_schema.errors import Unsupported
from cfgmask.frontends.json_schema.loader import child, display
from cfgmask.frontends.json_schema.negation import MAX_ONEOF_CASES
from cfgmask.frontends.json_schema.nodes import (DEPENDENCY_KW, OBJECT_KW, SPLIT_KW, UNDISPATCHED, atom,
                                                 split_atom)
from cfgmask.frontends.json_schema.numbers import to_decimal
from cfgmask.frontends.json_schema.validate import json_equal, json_key, json_type, matches_pattern


class CaseSplits:
    """Splits and disjointness (see the module docstring)."""

    # ---- splits
    def _split(self, atoms, split):
        a, k = split
        s, p, skip = self.schema(a)
        self.doc.origin_hint = p  # the cases written below come from here
        rest = [x for x in atoms if x != a]
        done = atom(p, skip | {k} | ({"then", "else"} if k == "if" else set()))
        base = rest + [done]
        if not p.startswith("!"):
            # a budget message names the user's keyword: a written negation's cases are
            # charged to the keyword that needed it (oneOf, not, if)
            self.budget.where = (k, display(child(p, k)))
        if k == "if":
            alts = self._dispatch(atoms)
            if alts is not None:
                return alts
        if k == "anyOf" and self._negation_implied(p, rest):
            return list(self.node(frozenset(base)).alts)
        if k in ("dependentRequired", "dependentSchemas", "dependencies"):
            cases = self._dependency_cases(s, p, k, rest, skip)
        elif k == "if" and self._requires_if_present(s, p) is not None:
            # "if a is present then bs are required": dependentRequired {a: bs}
            a_name, reqs = self._requires_if_present(s, p)
            dep = {"dependentRequired": {a_name: reqs}}
            cases = [[self.doc.add_synthetic(f"dep({json.dumps(dep, sort_keys=True)})", dep)]]
        else:
            cases = self._cases(s, p, k)
        if cases is not None:
            self.budget.charge(len(cases))
        if cases is None:  # loosened: drop the keyword
            return list(self.node(frozenset(base)).alts)
        nodes = [self.node(frozenset(base + list(c))) for c in cases]
        if k == "oneOf":
            return self._one_of(base, p, nodes)
        alts = []
        for n in nodes:
            alts.extend(n.alts)
        return alts

    # ---- oneOf
    def _one_of(self, base, p, nodes):
        """The alternatives of ``oneOf`` at ``p`` within the conjunction ``base``
        (``nodes``: base and each case).

        Provably disjoint cases: their union.  Otherwise, when the cases test one
        property against values (a tagged union whose tag may be absent), one
        split per tag value first (:meth:`_one_of_dispatch`); then *case i and
        not any case that may overlap it* (:meth:`_exactly_one`).
        """
        n = len(nodes)
        overlaps = self._overlaps(nodes)
        if not any(overlaps):
            return [a for node in nodes for a in node.alts]
        alts = self._one_of_dispatch(base, p, n)
        if alts is not None:
            return alts
        return self._exactly_one(base, p, list(range(n)), nodes, overlaps)

    def _overlaps(self, nodes):
        """Per node, the indices of the other nodes not provably disjoint from it."""
        out = [set() for _ in nodes]
        for i in range(len(nodes)):
            for j in range(i):
                if not self._disjoint_nodes([nodes[i], nodes[j]]):
                    out[i].add(j)
                    out[j].add(i)
        return out

    def _exactly_one(self, prefix, p, idx, nodes, overlaps, sure=None):
        """Exactly one of the ``oneOf`` cases ``idx`` at ``p`` within the conjunction
        ``prefix`` (``nodes``/``overlaps``: per position of ``idx``): case i and the
        negation of each case that may overlap it.  ``sure``: a case known to hold
        in ``prefix``; then none of ``idx`` may hold.

        Refused (``strict``), or read as anyOf, when a needed negation cannot be
        written or a case overlaps more than ``MAX_ONEOF_CASES - 1`` others.
        """
        def case(i):
            return child(p, "oneOf", i)
        if sure is not None:
            need = {idx[j] for j in range(len(idx))}
            groups = [(sure, need)]
        else:
            groups = [(idx[j], {idx[x] for x in overlaps[j]}) for j in range(len(idx))]
        why = self._overlap_refusal(p, groups)
        if why is not None:
            self.fail("oneOf", p, why)
            return [a for node in nodes for a in node.alts]  # loosened: anyOf
        negs = {}
        for _, others in groups:
            for j in others:
                if j not in negs:
                    negs[j] = self.negation(case(j), quiet=True)
        self.budget.where = ("oneOf", display(child(p, "oneOf")))
        self.budget.charge(sum(len(o) for _, o in groups), "oneOf", display(child(p, "oneOf")))
        alts = []
        for i, others in groups:
            if sure is None and not others:
                alts.extend(nodes[idx.index(i)].alts)
                continue
            conj = list(prefix) + [case(i)] + [negs[j] for j in sorted(others)]
            alts.extend(self.node(frozenset(conj)).alts)
        return alts

    def _negation_implied(self, p, rest):
        """Whether the schema at ``p`` is a written negation ``not X`` that the conjunction
        ``rest`` implies: some schema of it is provably disjoint from X (a oneOf's case
        next to the negation of another case it cannot overlap)."""
        desc = self.doc.synthetic_desc.get(p, "") if p.startswith("!") and "/" not in p else ""
        if not (desc.startswith("not(") and desc.endswith(")")):
            return False
        x = desc[4:-1]
        if x.startswith("!") or not self._splitless(x):
            return False
        for y in rest:
            q, _ = split_atom(y)
            if q.startswith("!") or q == x or not self._splitless(q):
                continue
            key = (x, q)
            hit = self._disjoint_memo.get(key)
            if hit is None:
                nx = self.node(frozenset([x]), soft=True)
                ny = self.node(frozenset([q]), soft=True)
                hit = nx is not None and ny is not None and \
                    all(self.disjoint(a, b, 2) for a in nx.alts for b in ny.alts)
                self._disjoint_memo[key] = hit
            if hit:
                return True
        return False

    def _splitless(self, ptr):
        """Whether the schema at ``ptr`` has no keyword to split on (its node is cheap)."""
        s = self.doc.schema_at(ptr)
        return isinstance(s, dict) and not any(k in s for k in SPLIT_KW) and \
            "$ref" not in s and "allOf" not in s

    def _overlap_refusal(self, p, groups):
        """Why "case i and not the cases in others" (``groups``: ``(i, others)`` pairs) cannot
        be written for the oneOf at ``p``, or None if it can."""
        for i, others in groups:
            if len(others) >= MAX_ONEOF_CASES:
                return (f"the cases may overlap, and case {i} may overlap {len(others)} others: "
                        f"exactly-one is written as a case and the negations of the cases that "
                        f"may overlap it, for at most {MAX_ONEOF_CASES - 1} of them")
        for j in sorted({j for _, others in groups for j in others}):
            cp = child(p, "oneOf", j)
            if self.negation(cp, quiet=True) is None:
                e = self._neg_failed.get(f"not({cp})")
                what = "" if e is None else \
                    f": {e.keyword}" + (f" at {display(e.where)}" if e.where else "") + f": {e.why}"
                return (f"the cases may overlap, and exactly-one needs the negation of case {j}, "
                        f"which cannot be written{what}")
        return None

    def _one_of_dispatch(self, base, p, n):
        """A oneOf whose cases test one property ``d`` against values, split by ``d``:
        alternatives, or None if it does not apply.

        The cases are non-objects, objects without ``d``, objects whose ``d`` is
        each value some case names, and objects whose ``d`` is none of them (as
        :meth:`_dispatch` does for ``if``).  In each, a case whose test on ``d``
        fails is out; exactly one of the others must hold (usually one is left,
        and no negation is needed).
        """
        tests = []
        for i in range(n):
            tests.append({t[0]: t for t in self._discriminator_tests(
                self._in_place_target(child(p, "oneOf", i)))})
        count = {}
        for ts in tests:
            for d in ts:
                count[d] = count.get(d, 0) + 1
        if not count:
            return None
        d = max(count, key=lambda x: (count[x], x))
        if count[d] < 2:
            return None
        values, seen = [], set()
        for ts in tests:
            for v in ts[d][1] if d in ts else ():
                if json_key(v) not in seen:
                    seen.add(json_key(v))
                    values.append(v)
        # (case schema, per oneOf case: True (holds), False (fails) or None (depends))
        T = [ts.get(d) for ts in tests]
        cases = [({"type": ["null", "boolean", "number", "string", "array"]},
                  [t[5] if t else None for t in T]),
                 ({"type": "object", "properties": {d: False}},
                  [(False if t[2] else True if t[4] else None) if t else None for t in T])]
        for v in values:
            kv = json_key(v)
            cases.append(({"type": "object", "required": [d], "properties": {d: {"const": v}}},
                          [((True if t[4] else None) if any(json_key(x) == kv for x in t[1])
                            else False) if t else None for t in T]))
        cases.append(({"type": "object", "required": [d],
                       "properties": {d: {"x-cfgmask-not-in": values}}},
                      [False if t else None for t in T]))
        self.budget.charge(len(cases), "oneOf", display(child(p, "oneOf")))
        alts = []
        for schema, truth in cases:
            # "tag(": these cases take their place last in property order (typed._written_key)
            prefix = list(base) + [self.doc.add_synthetic(
                f"tag({json.dumps(schema, sort_keys=True)})", schema)]
            sure = [i for i in range(n) if truth[i] is True]
            idx = [i for i in range(n) if truth[i] is None]
            if len(sure) >= 2:
                continue  # two cases hold
            if sure:
                node = self.node(frozenset(prefix + [child(p, "oneOf", sure[0])]))
                nodes = [self.node(frozenset(prefix + [child(p, "oneOf", i)])) for i in idx]
                idx = [i for i, nd in zip(idx, nodes) if not self._disjoint_nodes([node, nd])]
                if not idx:
                    alts.extend(node.alts)
                else:
                    alts.extend(self._exactly_one(prefix, p, idx, [node], None, sure=sure[0]))
                continue
            if not idx:
                continue  # no case holds
            nodes = [self.node(frozenset(prefix + [child(p, "oneOf", i)])) for i in idx]
            overlaps = self._overlaps(nodes)
            if not any(overlaps):
                alts.extend(a for node in nodes for a in node.alts)
            else:
                alts.extend(self._exactly_one(prefix, p, idx, nodes, overlaps))
        return alts

    def _in_place_target(self, ptr):
        """``ptr``, or the schema it is a bare ``$ref`` to (followed a few times)."""
        for _ in range(16):
            s = self.doc.schema_at(ptr)
            if not isinstance(s, dict) or "$ref" not in s or \
                    any(k != "$ref" and k not in ANNOTATIONS for k in s):
                return ptr
            try:
                ptr = self.doc.resolve(ptr, s["$ref"])
            except GrammarError:
                return ptr
        return ptr

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

    def _requires_if_present(self, s, p):
        """``(a, names)`` if ``s`` (at ``p``) is ``if: {required: [a]}`` (maybe ``type:
        object``), ``then: {required: names}`` and no ``else``; else None."""
        if "else" in s or "if" not in s or "then" not in s:
            return None
        cond, then = self.doc.schema_at(child(p, "if")), self.doc.schema_at(child(p, "then"))
        if not isinstance(cond, dict) or not isinstance(then, dict):
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
        s = self.doc.schema_at(ptr)
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
        for d in props:
            sub = self.doc.schema_at(child(ptr, "properties", d))
            if not isinstance(sub, dict) or not ("const" in sub or "enum" in sub) or \
                    any(kk not in ("const", "enum", "type") and kk not in ANNOTATIONS for kk in sub):
                continue
            cands = [sub["const"]] if "const" in sub else sub["enum"]
            if not isinstance(cands, list):
                continue
            sub_ptr = child(ptr, "properties", d)
            try:
                if any(json_type(v) in ("object", "array") for v in cands):
                    # the case "d is none of the values" could not exclude an object or
                    # array value (x-cfgmask-not-in), and would decide it wrongly
                    continue
                values = [v for v in cands if self.validator.valid(v, sub_ptr)]
            except (Unsupported, TypeError):
                continue
            pure = not others and len(props) == 1 and all(n == d for n in req)
            non_object = False if obj_only else \
                True if all(kk in OBJECT_KW or kk in DEPENDENCY_KW for kk in others) else None
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
            da, _ = string_dfa(a, self, [], True)
            db, _ = string_dfa(b, self, [], True)
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
