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
   (``oneOf``: when the cases' nodes are provably disjoint; otherwise split
   by a tag property, then each case next to the negations of the cases that
   may overlap it, :meth:`Normalizer._one_of`).  Two or more
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

from cfgmask.errors import ConfigurationError, GrammarError
from cfgmask.frontends.json_schema.budget import Budget
from cfgmask.frontends.json_schema.cases import CaseSplits
from cfgmask.frontends.json_schema.errors import Unsupported
from cfgmask.frontends.json_schema.drafts import draft_for
from cfgmask.frontends.json_schema.keywords import MAX_DEPTH, shorten
from cfgmask.frontends.json_schema.loader import child, display
from cfgmask.frontends.json_schema.negation import Negation
from cfgmask.frontends.json_schema.nodes import (FALSE_ATOM, REFUSED, SPLIT_KW, Lit, Node, atom, split_atom,
                                                 with_skip)
from cfgmask.frontends.json_schema.typed import TypedIntersection
from cfgmask.frontends.json_schema.validate import Validator, json_key, json_type

# How the declared properties of a conjunction are ordered (docs/json-schema.md):
# "written": merged left to right as the schema is written (llguidance's stable
# property order); "own-first": an object's own properties, then those of its
# allOf branches and $ref targets (the order before issue 24).
PROPERTY_ORDERS = ("written", "own-first")


# ------------------------------------------------------------ normaliser

class Normalizer(CaseSplits, Negation, TypedIntersection):
    """Schema document -> :class:`~.nodes.Node` per conjunction (see module docstring).

    The splits, negation and typed intersection are its parts in ``cases``,
    ``negation`` and ``typed``.
    """

    def __init__(self, doc, strict=True, budget=None, property_order="written"):
        self.doc = doc
        self.strict = strict
        if property_order not in PROPERTY_ORDERS:
            raise ConfigurationError(f"unknown property_order {property_order!r:.40}; choose one of "
                                     f"{', '.join(PROPERTY_ORDERS)}")
        self.property_order = property_order
        self._ref_from = {}      # $ref target -> (pointer, "$ref") where it was first reached
        self._written_memo = {}  # pointer -> (written key, links): typed._written (cleared when _ref_from grows)
        self.budget = budget if budget is not None else Budget(None, None)
        self.loosened = []       # (keyword, pointer, why) when strict=False
        doc.check_cycles()  # before anything follows $ref in place
        self.validator = Validator(doc)
        self._nodes = {}
        self._building = set()
        self._neg_stack = set()
        self._neg_failed = {}    # name -> Unsupported (why the negation cannot be written)
        self._fingerprints = {}  # pointer -> what its schema means (_fingerprint)
        self._disjoint_memo = {}  # (pointer, pointer) -> provably disjoint (cases.py)

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
        return self.doc.schema_at(p), p, skip

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
            s = self.doc.schema_at(p)
            if s is True:
                continue
            if s is False:
                return None, None
            if not isinstance(s, dict):
                raise GrammarError(f"JSON schema: the schema at {display(p)} is neither an object nor "
                                   f"a boolean", where=display(p), construct="schema")
            if "$ref" in s:
                target = self.doc.resolve(p, s["$ref"])
                if target not in self._ref_from:
                    self._ref_from[target] = (p, "$ref")
                    self._written_memo.clear()  # a place's written key may follow it now
                work.append(target)
            if "x-cfgmask-ptr" in s:
                work.append(s["x-cfgmask-ptr"])
            if "allOf" in s:
                if not isinstance(s["allOf"], list):
                    raise GrammarError(f"JSON schema: allOf at {display(p)} is not an array",
                                       where=display(p), construct="allOf")
                work += [child(p, "allOf", i) for i in range(len(s["allOf"]))]
        out = []
        split = None
        for p in order:
            s = self.doc.schema_at(p)
            if s is True:
                continue
            skip = frozenset(skips[p])
            a = atom(p, skip)
            if len(s) == 1 and "$ref" in s:
                continue  # nothing but the reference, followed above (draft-07 and older: siblings ignored)
            for k in REFUSED:
                if k in s and k not in skip:
                    if k in ("unevaluatedProperties", "unevaluatedItems") and s[k] is True:
                        continue
                    self.fail(k, child(p, k), "not supported")
            if split is None:
                for k in SPLIT_KW:
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
            if not lit:
                return []
            # only numbers, and containers that may hold them, have spellings to choose
            spelled = any(json_type(v) in ("number", "array", "object") for v in lit)
            return [Lit(lit, *self._zero_fractions(atoms))] if spelled else [Lit(lit)]
        if self._contradictory(atoms):
            return []  # pruned before splitting further (or building an empty object)
        if split is not None:
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
        values, types, facts = {}, {}, {}
        negations = any(a.startswith("!") for a in atoms)  # written ones are synthetic
        for x in atoms:
            s, p, skip = self.schema(x)
            props = s.get("properties") if isinstance(s, dict) and "properties" not in skip else None
            if not isinstance(props, dict):
                continue
            for d in present.intersection(props):
                ptr = child(p, "properties", d)
                if negations:
                    self._value_facts(ptr, *facts.setdefault(d, (set(), set())))
                sub = self.doc.schema_at(ptr)
                if isinstance(sub, dict) and ("const" in sub or "enum" in sub):
                    vals = [sub["const"]] if "const" in sub else sub["enum"]
                    if isinstance(vals, list):
                        keys = {json_key(v) for v in vals}
                        values[d] = keys if d not in values else values[d] & keys
                        if not values[d]:
                            return True
                # the types the value may have (a negation written for it included)
                ts = self._value_types(ptr)
                if ts is not None:
                    types[d] = ts if d not in types else types[d] & ts
                    if not types[d]:
                        return True
        # a value required to be valid under a schema and under a negation of the same
        # schema (a oneOf's cases that share property schemas)
        for pos, neg in facts.values():
            if neg and pos and {self._fingerprint(q) for q in pos} & \
                    {self._fingerprint(q) for q in neg}:
                return True
        return False

    def _value_facts(self, ptr, pos, neg, depth=0):
        """Add the pointers of the document schemas that the schema at ``ptr`` applies in
        place to ``pos``, and those of the schemas it negates (a written negation) to ``neg``."""
        if depth > 8:
            return
        if ptr.startswith("!"):
            desc = self.doc.synthetic_desc.get(ptr, "") if "/" not in ptr else ""
            if desc.startswith("not(") and desc.endswith(")") and not desc.startswith("not(!"):
                neg.add(desc[4:-1])
        else:
            pos.add(ptr)
        s = self.doc.schema_at(ptr)
        if not isinstance(s, dict):
            return
        target = s.get("x-cfgmask-ptr")
        if isinstance(target, str):
            self._value_facts(target, pos, neg, depth + 1)
        if isinstance(s.get("$ref"), str) and not ptr.startswith("!"):
            try:
                self._value_facts(self.doc.resolve(ptr, s["$ref"]), pos, neg, depth + 1)
            except GrammarError:
                pass

    def _fingerprint(self, ptr):
        """Equal for two pointers to schemas that mean the same: the same text, read as the
        same draft from the same base URI (memoised)."""
        fp = self._fingerprints.get(ptr)
        if fp is None:
            draft = self.doc.draft_at(ptr)
            fp = (json.dumps(_meaning(self.doc.get(ptr), draft), sort_keys=True), draft.name,
                  self.doc.base_at(ptr))
            self._fingerprints[ptr] = fp
        return fp

    def _value_types(self, ptr, depth=0):
        """The JSON types the schema at ``ptr`` allows (integer within number), through
        in-place references and negations written as schemas, or None if not known."""
        s = self.doc.schema_at(ptr)
        if s is False:
            return frozenset()
        if not isinstance(s, dict) or depth > 8:
            return None
        out = None
        t = s.get("type")
        if t is not None:
            ts = {t} if isinstance(t, str) else set(t) if isinstance(t, list) else None
            if ts is not None and all(isinstance(y, str) for y in ts):
                if "integer" in ts:
                    ts.add("number")
                out = frozenset(ts)
        for k, target in (("x-cfgmask-ptr", s.get("x-cfgmask-ptr")), ("$ref", s.get("$ref"))):
            if isinstance(target, str):
                if k == "$ref":
                    try:
                        target = self.doc.resolve(ptr, target)
                    except GrammarError:
                        continue
                inner = self._value_types(target, depth + 1)
                if inner is not None:
                    out = inner if out is None else out & inner
        return out

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
        flat = frozenset(atom(*with_skip(split_atom(a), "x-cfgmask-ptr", "$ref", "allOf")) for a in atoms)
        out = []
        for i, v in enumerate(cands):
            if i & 1023 == 1023:
                self.budget.check_time("enum", display(split_atom(atoms[0])[0]))
            if isinstance(v, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in v):
                continue  # no UTF-8 spelling
            if self._valid_all(v, flat):
                out.append(v)
        return out

    def _zero_fractions(self, atoms):
        """:class:`~.nodes.Lit`'s ``(zero_fraction, nested_zero_fraction)`` for the
        constants of ``atoms``.  A ``type`` that leaves out ``number`` (handled by a
        split or not) keeps an integer constant an integer literal; a draft-04 atom keeps
        the numbers inside a constant array or object canonical (its ``properties`` may
        say ``integer``, which does not take ``1.0`` there)."""
        top = nested = True
        for a in atoms:
            s, p, _ = self.schema(a)
            if isinstance(s, dict) and "type" in s:
                t = s["type"]
                top = top and (t == "number" or isinstance(t, list) and "number" in t)
            nested = nested and self.doc.draft_at(p).number >= 6
        return top, nested

    def _valid_all(self, v, key):
        for a in key:
            s, p, skip = self.schema(a)
            try:
                if skip:
                    sub = {k: x for k, x in s.items() if k not in skip} if isinstance(s, dict) else s
                    if not self.validator.valid_schema(v, sub, p):
                        return False
                elif not self.validator.valid(v, p):
                    return False
            except Unsupported as e:
                self.fail(e.keyword, p, f"{e.why} (needed to check the value {v!r})")
        return True

    def built_nodes(self):
        """Every :class:`~.nodes.Node` built so far."""
        return self._nodes.values()


# keywords that never change what a schema means (kept: $id, $schema, $anchor, $defs, which can)
_NOTES = frozenset(("title", "description", "examples", "default", "$comment", "deprecated",
                    "readOnly", "writeOnly"))


def _meaning(s, outer, depth=0):
    """The schema ``s`` without its notes (titles, descriptions, ...), in its subschemas too,
    as the draft in effect reads its keywords (for :meth:`Normalizer._fingerprint`)."""
    if not isinstance(s, dict) or depth > MAX_DEPTH:
        return s
    draft = draft_for(s, outer)
    kinds = dict(draft.subschema_keywords(s))
    out = {}
    for k, v in s.items():
        if k in _NOTES:
            continue
        kind = kinds.get(k)
        if kind in ("map", "dependencies") and isinstance(v, dict):
            v = {n: _meaning(x, draft, depth + 1) for n, x in v.items()}
        elif kind in ("list", "items") and isinstance(v, list):
            v = [_meaning(x, draft, depth + 1) for x in v]
        elif kind in ("one", "items"):
            v = _meaning(v, draft, depth + 1)
        out[k] = v
    return out
