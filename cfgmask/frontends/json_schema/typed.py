"""Independent keywords intersected per JSON type: at most one alternative per type
(``normalize`` module docstring, step 4).

:class:`TypedIntersection` is a part of
:class:`~cfgmask.frontends.json_schema.normalize.Normalizer`, which inherits
it; its methods use the normaliser's ``doc``, ``fail``, ``schema``,
``negation`` and ``_valid_all``.
"""

from cfgmask.errors import GrammarError
from cfgmask.frontends.json_schema import strings as S
from cfgmask.frontends.json_schema.budget import MAX_COUNT, check_count
from cfgmask.frontends.json_schema.drafts import ANNOTATIONS
from cfgmask.frontends.json_schema.errors import Unsupported
from cfgmask.frontends.json_schema.loader import child, display
from cfgmask.frontends.json_schema.nodes import (ARRAY_KW, HANDLED, NUMBER_KW, OBJECT_KW, STRING_KW, Arr, Bool,
                                                 KeySpec, Null, Num, Obj, Str, atom, split_atom, with_skip)
from cfgmask.frontends.json_schema.numbers import to_decimal
from cfgmask.frontends.json_schema.validate import json_type, matches_pattern

# an object with more "some member" constraints than this is refused
MAX_WITNESSES = 4
_ALL_TYPES = frozenset(("null", "boolean", "number", "string", "array", "object", "integer"))


class TypedIntersection:
    """The typed alternatives of a conjunction without splits (see the module docstring)."""

    # ---- typed alternatives
    def _typed(self, atoms):
        types = set(_ALL_TYPES)
        num, st, arr, obj = Num(), Str(), Arr(), Obj()
        obj_sources, arr_sources = [], []
        unique = None
        excluded = []
        for a in atoms:
            s, p, skip = self.schema(a)
            for k, v in s.items():
                if k in skip or k in ANNOTATIONS:
                    continue
                if k not in HANDLED:
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
                    elif k in NUMBER_KW:
                        self._number_kw(num, k, v, s, p)
                        num.where = p
                    elif k in STRING_KW:
                        self._string_kw(st, k, v, p)
                        st.where = p
                    elif k == "uniqueItems":
                        if v:
                            unique = p
                    elif k in ARRAY_KW:
                        pass
                    elif k in OBJECT_KW:
                        pass
                except Unsupported as e:
                    self.fail(e.keyword, child(p, k), e.why)
            if any(k in s and k not in skip for k in OBJECT_KW):
                obj_sources.append((s, p, skip))
            if any(k in s and k not in skip for k in ARRAY_KW):
                arr_sources.append((s, p, skip))
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
        others = frozenset(atom(*with_skip(split_atom(a), "x-cfgmask-not-in", "x-cfgmask-ptr", "$ref",
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
        for s, p, skip in sources:
            # s is read as its draft reads it (SchemaDoc.schema_at): prefixItems only in
            # 2020-12, an array items (a tuple) up to 2019-09 and in 2020-12 as 2019-09 reads it
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
        first reached it is written (``property_order="written"``); a chain
        longer than ``WRITTEN_DEPTH`` links ends in ``inf`` (the cycle guard)."""
        return self._written(p, depth)[0]

    def _written(self, p, depth):
        # (key, links followed), memoised: sorting sources asks for the same
        # ancestors' keys again and again (MaskBench o46145, whose $ref chains
        # loop until the guard: 518k calls, 57% of its compile).  A key whose
        # chain stays under the guard is the same from any depth that keeps it
        # there, so it is kept by pointer; one the guard cut, by pointer and depth.
        memo = self._written_memo
        hit = memo.get(p)
        if hit is not None and depth + hit[1] < WRITTEN_DEPTH:
            return hit
        hit = memo.get((p, depth))
        if hit is not None:
            return hit
        res = self._written_of(p, depth)
        memo[p if depth + res[1] < WRITTEN_DEPTH else (p, depth)] = res
        return res

    def _written_of(self, p, depth):
        if p in self._ref_from and depth < WRITTEN_DEPTH:
            q, kw = self._ref_from[p]
            key, links = self._written(q, depth + 1)
            return key + (_key_index(self.doc.get(q), kw),), links + 1
        if not p:
            return (), 0
        if depth >= WRITTEN_DEPTH:
            return (float("inf"),), 0
        if p.startswith("!") and "/" not in p:
            # a compiler-written schema stands where the schema it negates is
            # written; the cases of a oneOf's tag split last, so the tag takes the
            # place the oneOf's own cases give it (MaskBench o25692 declares it
            # last); other cases (if dispatch, dependencies: the trigger before
            # what it requires) first
            desc = self.doc.synthetic_desc.get(p, "")
            if desc.startswith("not(") and desc.endswith(")"):
                key, links = self._written(desc[4:-1], depth + 1)
                return key, links + 1
            return ((float("inf"),) if desc.startswith("tag(") else ()), 0
        head, _, last = p.rpartition("/")
        try:
            node = self.doc.get(head)
        except Exception:  # noqa: BLE001 - an order key only: unknown places go last
            return (float("inf"),), 0
        last = last.replace("~1", "/").replace("~0", "~")
        i = int(last) if isinstance(node, list) and last.isdigit() else _key_index(node, last)
        key, links = self._written(head, depth + 1)
        return key + (i,), links + 1

    def _in_order(self, sources, keyword):
        """``sources`` in the order their ``keyword`` lists are merged (docs/json-schema.md)."""
        if self.property_order == "own-first":
            return sources
        # positions in the document as written (get), not in the draft's view (schema_at),
        # which leaves keywords out: _written_key counts them in the written schema too
        return sorted(sources, key=lambda x: self._written_key(x[1]) +
                      (_key_index(self.doc.get(x[1]), keyword),))

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
        if not self._witnesses(obj, sources):
            return None
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
            src = next((p for s, p, skip in sources if s.get("minProperties") == obj.min
                        and "minProperties" not in skip), "")
            self.fail("minProperties", child(src, "minProperties") if src else "",
                      "with additional properties the grammar counts members, but duplicate "
                      "keys count once in JSON" + (" (the negation of maxProperties)"
                                                   if src.startswith("!") else ""))
        return obj

    def _witnesses(self, obj, sources):
        """``obj.witnesses`` from the ``x-cfgmask-some-member`` keywords (the negations of
        ``additionalProperties``, ``patternProperties``, ``propertyNames``); False if no
        member can be one of them."""
        for s, p, skip in sources:
            sm = s.get("x-cfgmask-some-member") if "x-cfgmask-some-member" not in skip else None
            if not isinstance(sm, dict):
                continue
            base = child(p, "x-cfgmask-some-member")
            kc = frozenset([child(base, "key")])
            vptr = child(base, "value")
            vc = frozenset() if self.doc.schema_at(vptr) is True else frozenset([vptr])
            names = frozenset(n for n, _, _ in obj.props if self._valid_all(n, kc))
            if not vc and any(r and n in names for n, _, r in obj.props):
                continue  # a required property is a witness by its key alone
            if not names and not obj.regions:
                return False  # no member can be one
            w = (kc, vc, names, sm.get("keyword", "additionalProperties"), sm.get("at", p))
            if all(x[:2] != w[:2] for x in obj.witnesses):
                obj.witnesses.append(w)
        if len(obj.witnesses) > MAX_WITNESSES:
            _, _, _, k, at = obj.witnesses[MAX_WITNESSES]
            self.fail(k, at, f"negated: more than {MAX_WITNESSES} negated additionalProperties, "
                      f"patternProperties or propertyNames on one object (each doubles the "
                      f"object's states)")
            del obj.witnesses[MAX_WITNESSES:]
        return True

    def _key_matches(self, pattern, pointer, name):
        try:
            return matches_pattern(pattern, name)
        except Unsupported as e:
            self.fail("patternProperties", pointer, e.why)
            return False


WRITTEN_DEPTH = 64  # links of a written-position chain ($ref hops, parents) before it is cut


def _key_index(node, key):
    """Index of ``key`` among the keys of the dict ``node`` (past the end if absent)."""
    if not isinstance(node, dict):
        return 0
    for i, k in enumerate(node):
        if k == key:
            return i
    return len(node)


def _count_where(sources, keyword, value):
    """Displayed pointer of the ``keyword`` among ``sources`` whose value is ``value``."""
    for src in sources:
        s, p = src[0], src[1]
        if isinstance(s, dict) and s.get(keyword) == value:
            return display(child(p, keyword))
    return display(child(sources[0][1], keyword)) if sources else keyword


def _finish_number(num):
    """Normalise a :class:`Num` (integer-valued multipleOf, empty ranges); None if empty."""
    for m in num.multiple_of:
        if m == m.to_integral_value():
            # a number type may still spell the value as a plain decimal (6000.0)
            num.zero_fraction = num.zero_fraction or not num.integer
            num.integer = True
    if num.integer and num.nonint:
        return None
    if num.lo is not None and num.hi is not None:
        if num.lo > num.hi or (num.lo == num.hi and (num.lo_excl or num.hi_excl)):
            return None
    return num
