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

from cfgmask.errors import ConfigurationError, GrammarError
from cfgmask.frontends.json_schema.budget import Budget
from cfgmask.frontends.json_schema.cases import CaseSplits
from cfgmask.frontends.json_schema.errors import Unsupported
from cfgmask.frontends.json_schema.keywords import shorten
from cfgmask.frontends.json_schema.loader import child, display
from cfgmask.frontends.json_schema.negation import Negation
from cfgmask.frontends.json_schema.nodes import (FALSE_ATOM, REFUSED, SPLIT_KW, Lit, Node, atom, split_atom,
                                                 with_skip)
from cfgmask.frontends.json_schema.typed import TypedIntersection
from cfgmask.frontends.json_schema.validate import Validator, json_key

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
                self._ref_from.setdefault(target, (p, "$ref"))
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
                sub = self.doc.schema_at(child(p, "properties", d))
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
