"""A JSON Schema document: reading it, its draft, and ``$ref`` resolution.

Every subschema is named by a *pointer* string: an RFC 6901 JSON pointer
into the document (``""`` is the root, ``"/properties/a"``), or, for the
schemas the compiler writes itself (negations, dependency cases), a name
``"!<n>@<origin>"`` (``origin``: the URL-quoted pointer of the document
schema it was written for, which messages show) followed by a pointer into
that synthetic schema.  Pointers are the identity of subschemas everywhere
else in the package.  :meth:`SchemaDoc.check_cycles` refuses in-place
``$ref`` cycles and over-long in-place chains before anything compiles.

Drafts: ``$schema`` selects draft-04, -06, -07, 2019-09 or 2020-12, at the
root or at an embedded schema; without it the root is read as the caller's
default draft (2020-12 unless told otherwise, what the ``jsonschema`` package
does).  ``drafts.py`` says what each draft reads; :meth:`SchemaDoc.schema_at`
is a subschema as its draft reads it (other keywords left out, ``$ref`` alone
in draft-07 and older), and the rest of the package reads schemas through it.
Identifiers and anchors are indexed as each draft spells them.

``$ref`` resolves JSON pointers (``#/$defs/a``, ``#``), ``$anchor`` and
``$id``-based references inside the document; other documents (remote refs)
and ``$dynamicRef``/``$recursiveRef`` are refused.
"""

import json
import os
from pathlib import Path
from urllib.parse import quote, unquote, urldefrag, urljoin

from cfgmask.errors import ConfigurationError, GrammarError
from cfgmask.frontends.json_schema.drafts import DRAFT2020, IN_PLACE, default_draft, draft_for
from cfgmask.frontends.json_schema.keywords import MAX_IN_PLACE_DEPTH, check_keywords, check_values

DEFAULT_BASE = "https://cfgmask.invalid/schema.json"


def read_schema(schema):
    """``schema`` as a parsed value: a dict/bool as is, JSON text, or a path to a JSON file."""
    if isinstance(schema, (dict, bool)):
        return schema
    if isinstance(schema, os.PathLike):
        schema = os.fspath(schema)
    if isinstance(schema, bytes):
        schema = schema.decode("utf-8")
    if not isinstance(schema, str):
        raise ConfigurationError(f"a JSON schema must be a dict, a bool, JSON text or a path, "
                                 f"not {type(schema).__name__}")
    text = schema.strip()
    if text[:1] in ("{", "[") or text in ("true", "false"):
        try:
            return json.loads(text)
        except (ValueError, RecursionError) as e:
            # ValueError: also a number past Python's int digit limit; RecursionError: deep nesting
            raise GrammarError(f"JSON schema text is not valid JSON or cannot be read "
                               f"({type(e).__name__}: {str(e)[:200]})", where="$",
                               construct="schema JSON") from None
    path = Path(schema)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigurationError(f"cannot read JSON schema file {path}: {e.strerror}") from None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise GrammarError(f"{path}: not valid JSON or cannot be read "
                           f"({type(e).__name__}: {str(e)[:200]})", where=str(path),
                           construct="schema JSON") from None


def _join(base, ref):
    """RFC 3986 reference resolution; fragment-only references keep any base (``urn:`` too)."""
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    if ":" in ref.split("/", 1)[0]:
        return ref  # absolute
    return urljoin(base, ref)


def escape_token(tok):
    return str(tok).replace("~", "~0").replace("/", "~1")


def child(pointer, *tokens):
    return pointer + "".join("/" + escape_token(t) for t in tokens)


def origin(pointer):
    """The document pointer a pointer stands for: a compiler-written schema's
    key carries the pointer of the schema it was written for (``!3@%2Fnot``)."""
    if not pointer.startswith("!"):
        return pointer
    return unquote(pointer.partition("/")[0].partition("@")[2])


def display(pointer):
    """A pointer for messages: ``#`` plus the pointer (``#/properties/a``); a
    compiler-written schema shows the schema it was written for."""
    return "#" + origin(pointer)


_MISSING = object()
_default_draft = default_draft  # the name SchemaDoc's argument shadows


class SchemaDoc:
    """One schema document plus the synthetic schemas written while compiling it."""

    def __init__(self, root, default_draft=None):
        if not isinstance(root, (dict, bool)):
            raise GrammarError(f"a JSON schema must be an object or a boolean, not {type(root).__name__}",
                               where="#", construct="schema")
        try:
            default = _default_draft(default_draft)
        except ValueError as e:
            raise ConfigurationError(str(e)) from None
        # malformed values are refused before anything below reads them
        check_values(root)
        check_keywords(root, default)
        self.root = root
        self.draft = draft_for(root, default)  # the root's Draft (drafts.py)
        self.synthetic = {}   # "!<n>@<origin>" -> schema
        self.origin_hint = ""  # the schema being compiled, for add_synthetic
        self.synthetic_names = {}  # description -> "!<n>"
        self.synthetic_desc = {}   # "!<n>" -> description
        self.by_uri = {}      # absolute URI (no fragment) -> pointer
        self.anchors = {}     # absolute URI + "#" + anchor -> pointer
        self.base_of = {}     # pointer -> base URI in effect there
        self.draft_of = {}    # pointer -> Draft of the schema there (schema positions)
        self._got = {}        # pointer -> schema (get's memo)
        self._views = {}      # pointer -> schema as its draft reads it (schema_at's memo)
        self._in_place = False  # some schema holds $ref or an in-place applicator
        self._index(root, "", DEFAULT_BASE, self.draft)

    # ---- indexing ids, anchors and drafts
    def _index(self, s, pointer, base, outer):
        draft = self.draft_of[pointer] = draft_for(s, outer)
        if not isinstance(s, dict):
            self.base_of[pointer] = base
            return
        sid = draft.schema_id(s)
        if sid is not None:
            if sid.startswith("#"):
                # up to draft-07 a location-independent id (an anchor); from 2019-09 on
                # the meta-schema forbids it, and it must not make the document's own
                # URI point here
                if draft.anchor_keyword is None:
                    self.anchors[urldefrag(base)[0] + sid] = pointer
            else:
                base = _join(base, sid)
                self.by_uri[urldefrag(base)[0]] = pointer
        if pointer == "":
            self.by_uri.setdefault(urldefrag(base)[0], "")
        anchor = s.get(draft.anchor_keyword) if draft.anchor_keyword else None
        if isinstance(anchor, str):
            self.anchors[urldefrag(base)[0] + "#" + anchor] = pointer
        self.base_of[pointer] = base
        if not self._in_place and ("$ref" in s or not IN_PLACE.isdisjoint(s)):
            self._in_place = True
        for k, kind in draft.subschema_keywords(s):
            v = s[k]
            if kind in ("map", "dependencies") and isinstance(v, dict):
                for name, sub in v.items():
                    if isinstance(sub, (dict, bool)):
                        self._index(sub, child(pointer, k, name), base, draft)
            elif kind in ("list", "items") and isinstance(v, list):
                for i, sub in enumerate(v):
                    if isinstance(sub, (dict, bool)):
                        self._index(sub, child(pointer, k, i), base, draft)
            elif kind in ("one", "items") and isinstance(v, (dict, bool)):
                self._index(v, child(pointer, k), base, draft)

    # ---- access
    def get(self, pointer):
        """The schema at ``pointer`` (raises KeyError if there is none)."""
        # the documents never change once added, and the compiler asks for the
        # same pointers many times (about 50 lookups per schema)
        node = self._got.get(pointer, _MISSING)
        if node is _MISSING:
            node = self._got[pointer] = self._walk(pointer)
        return node

    def _walk(self, pointer):
        if pointer.startswith("!"):
            name, _, rest = pointer.partition("/")
            node = self.synthetic[name]
            tokens = rest.split("/") if rest else []
        else:
            node = self.root
            tokens = pointer.split("/")[1:] if pointer else []
        for tok in tokens:
            tok = tok.replace("~1", "/").replace("~0", "~")
            if isinstance(node, list):
                node = node[int(tok)]
            elif isinstance(node, dict):
                node = node[tok]
            else:
                raise KeyError(pointer)
        return node

    def draft_at(self, pointer):
        """The :class:`~.drafts.Draft` the schema at ``pointer`` is read in: the nearest
        enclosing schema's (a compiler-written schema is 2020-12)."""
        if pointer.startswith("!"):
            return DRAFT2020
        p = pointer
        while p not in self.draft_of:
            if not p:
                return self.draft
            p = p.rsplit("/", 1)[0]
        return self.draft_of[p]

    def schema_at(self, pointer):
        """The schema at ``pointer`` as its draft reads it (:meth:`~.drafts.Draft.view`):
        the keywords that draft does not read left out, ``$ref`` alone where the draft
        ignores its siblings.  Every reader of keywords goes through this."""
        view = self._views.get(pointer, _MISSING)
        if view is _MISSING:
            view = self._views[pointer] = self.draft_at(pointer).view(self.get(pointer))
        return view

    def add_synthetic(self, name, schema, source=None):
        """Register a compiler-written schema named ``name``; returns its pointer ``"!<n>@<source>"``.

        ``source``: the pointer of the schema it is written for (default:
        ``origin_hint``, the schema the compiler is working on).

        The same name always gets the same pointer (``name`` describes the
        schema completely, e.g. ``not(/properties/a)``).
        """
        key = self.synthetic_names.get(name)
        if key is None:
            # the key names the document schema it was written for, so that
            # messages point into the user's document (see ``display``)
            src = origin(self.origin_hint if source is None else source)
            key = f"!{len(self.synthetic_names)}@{quote(src, safe='')}"
            self.synthetic_names[name] = key
            self.synthetic_desc[key] = name
            self.synthetic[key] = schema
        return key

    def has_synthetic(self, name):
        return self.synthetic_names.get(name)

    def resolve(self, pointer, ref):
        """Pointer of the schema ``ref`` (a ``$ref`` value found at ``pointer``) refers to."""
        if not isinstance(ref, str):
            raise GrammarError(f"$ref at {display(pointer)} is not a string", where=display(pointer),
                               construct="$ref")
        if pointer.startswith("!"):
            base = DEFAULT_BASE
        else:
            base = self._base_near(pointer)
        target = _join(base, ref)
        doc_uri, frag = urldefrag(target)
        doc_ptr = self.by_uri.get(doc_uri)
        if doc_ptr is None:
            raise GrammarError(f"$ref {ref!r} at {display(pointer)} points outside this document "
                               f"({doc_uri}); remote references are not supported",
                               where=display(pointer), construct="$ref")
        frag = unquote(frag)
        if frag == "" or frag.startswith("/"):
            ptr = doc_ptr + frag
            try:
                self.get(ptr)
            except (KeyError, IndexError, ValueError):
                raise GrammarError(f"$ref {ref!r} at {display(pointer)}: nothing at {display(ptr)}",
                                   where=display(pointer), construct="$ref") from None
            return ptr
        ptr = self.anchors.get(doc_uri + "#" + frag)
        if ptr is None:
            raise GrammarError(f"$ref {ref!r} at {display(pointer)}: no $anchor {frag!r}",
                               where=display(pointer), construct="$ref")
        return ptr

    # ---- in-place reference cycles
    def check_cycles(self):
        """Refuse a schema that applies itself to the same value forever.

        The in-place applicators ($ref, allOf, anyOf, oneOf, not, if/then/else,
        dependentSchemas) apply a subschema to the value itself; a cycle of
        them (``{"$ref": "#"}``, ``a = anyOf[a, ...]``, ``a = not a``)
        never consumes input, so its language is undefined (2020-12 core,
        9.4.1) and every validator loops on it.  The walk is iterative: deep
        documents must not raise RecursionError here.
        """
        if not self._in_place:
            return  # no in-place edge anywhere (a place only $ref reaches needs a $ref)
        reached, edges = self._in_place_graph()
        state = {}   # pointer -> 1 on the DFS stack, 2 done
        height = {}  # pointer -> longest in-place chain starting there
        for start in reached:
            if start in state:
                continue
            stack = [(start, iter(edges.get(start, ())))]
            path = [start]
            state[start] = 1
            while stack:
                ptr, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    stack.pop()
                    path.pop()
                    state[ptr] = 2
                    # the compiler recurses along in-place chains (about ten
                    # Python frames a link): a chain longer than this would
                    # end in RecursionError
                    h = height[ptr] = 1 + max((height[q] for q in edges.get(ptr, ())), default=0)
                    if h > MAX_IN_PLACE_DEPTH:
                        where = display(ptr)[:160]
                        raise GrammarError(
                            f"JSON schema: the schema at {where} starts a chain of {h} schemas applied "
                            f"in place ($ref/allOf/anyOf/oneOf/not/if), more than the limit of "
                            f"{MAX_IN_PLACE_DEPTH} (MAX_IN_PLACE_DEPTH)", where=where, construct="$ref")
                    continue
                seen = state.get(nxt)
                if seen == 1:
                    cycle = path[path.index(nxt):] + [nxt]
                    shown = [display(c)[:160] for c in cycle]
                    if len(shown) > 8:
                        shown = shown[:4] + [f"... ({len(shown) - 6} more)"] + shown[-2:]
                    raise GrammarError(
                        f"JSON schema: $ref cycle {' -> '.join(shown)}: the schema at "
                        f"{shown[0]} applies itself to the same value (through $ref/allOf/anyOf/"
                        f"oneOf/not/if) without consuming input, so no value is ever decided",
                        where=display(nxt), construct="$ref")
                if seen is None:
                    state[nxt] = 1
                    path.append(nxt)
                    stack.append((nxt, iter(edges.get(nxt, ()))))

    def _in_place_graph(self):
        """(pointers reachable from the root, pointer -> in-place successor pointers)."""
        reached = [""]
        seen = {""}
        edges = {}
        i = 0
        while i < len(reached):
            p = reached[i]
            i += 1
            s = self.schema_at(p)  # the keywords its draft applies
            if not isinstance(s, dict):
                continue
            in_place, consuming = [], []
            if "$ref" in s and isinstance(s["$ref"], str):
                try:
                    in_place.append(self.resolve(p, s["$ref"]))
                except GrammarError:
                    pass  # reported when the compiler gets there
            for k, kind in self.draft_at(p).subschema_keywords(s):
                v = s[k]
                out = in_place if k in IN_PLACE else consuming
                if kind in ("map", "dependencies") and isinstance(v, dict):
                    out += [child(p, k, n) for n, x in v.items() if isinstance(x, (dict, bool))]
                elif kind in ("list", "items") and isinstance(v, list):
                    out += [child(p, k, j) for j, x in enumerate(v) if isinstance(x, (dict, bool))]
                elif kind in ("one", "items") and isinstance(v, (dict, bool)):
                    out.append(child(p, k))
            edges[p] = in_place
            for q in in_place + consuming:
                if q not in seen:
                    seen.add(q)
                    reached.append(q)
        return reached, edges

    def base_at(self, pointer):
        """The base URI in effect at ``pointer`` (a schema's ``$ref`` resolves against it)."""
        return self._base_near(pointer)

    def _base_near(self, pointer):
        p = pointer
        while p not in self.base_of:
            if not p:
                return DEFAULT_BASE
            p = p.rsplit("/", 1)[0]
        return self.base_of[p]
