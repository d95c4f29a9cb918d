"""The compile-time Python modules compiled by Cython (cfgmask/compiled_python.py)
against their own source, the reference.

The two forms must give the same grammars, the same lexer tables, the same
masks and the same errors: a child process replays a fixed set of Lark
grammars and JSON schemas in each form (``CFGMASK_PURE_PYTHON=1`` for the
source) and the digests must be equal.  The import hook must never run an
extension built from another source than the one beside it.
"""
import hashlib
import json
import os
import subprocess
import sys

import pytest

from cfgmask import compiled_python

ROOT = os.path.join(os.path.dirname(__file__), "..")
PACKAGE = os.path.join(ROOT, "cfgmask")

# A child's replay: grammar fields, lexer tables' sizes, masks along a document,
# refusals and errors, hashed per case and printed as JSON.
CHILD = r'''
import hashlib, json, sys, warnings
import numpy as np
import cfgmask
from cfgmask import compiled_python

LARK = {
    "imports": """
start: row+
row: (WORD | NUMBER | ESCAPED_STRING) ("," (WORD | NUMBER | ESCAPED_STRING))* _NL
_NL: /\\r?\\n/
%import common.WORD
%import common.NUMBER
%import common.ESCAPED_STRING
%ignore " "
""",
    "templates_priorities": """
start: pair{KEY, value} (";" pair{KEY, value})*
pair{k, v}: k "=" v
value: NUMBER -> num | "[" [value ("," value)*] "]" -> list | NAME
KEY.2: /[a-z]+/
NAME: /[A-Za-z_][A-Za-z_0-9]*/
%import common.NUMBER
%ignore /\\s+/
""",
    "maybe_and_repeats": """
start: "x"~2..4 item* ["!"] (a | b)+
item: "(" item? ")"
a: /[0-9]{2,5}/
b: "\\u00e9" | /\\w+/
""",
    "bad_rule": "start: undefined_rule",
    "bad_regex": "start: A\nA: /(?<=x)y/",
}
SCHEMAS = {
    "object": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 999},
               "s": {"type": "string", "pattern": "^[a-z]{2,8}(-[a-z]+)*$"},
               "e": {"enum": ["red", "green", 3, None]}}, "required": ["n"], "additionalProperties": False},
    "formats_lengths": {"type": "array", "items": {"anyOf": [{"type": "string", "format": "date"},
                        {"type": "string", "format": "email", "maxLength": 40},
                        {"type": "string", "minLength": 3, "maxLength": 300}]}, "maxItems": 3},
    "one_of_if": {"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}, "v": {"type": "number"}},
                             "required": ["k", "v"]},
                            {"type": "object", "properties": {"k": {"const": "b"}, "v": {"type": "string"}},
                             "required": ["k", "v"]}],
                  "if": {"properties": {"k": {"const": "a"}}}, "then": {"required": ["v"]}},
    "refs": {"$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array",
             "items": {"$ref": "#/$defs/node"}}, "name": {"type": "string", "maxLength": 12}}}},
             "$ref": "#/$defs/node"},
    "counted": {"type": "string", "pattern": "^(\\S+\\s+){0,20}\\S+$", "maxLength": 500},
    "bad": {"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}},
}
DOCS = {
    "json": '{"a": [1, 2.5e3, true, null, "x\\u00e9"]}',
    "sql": "SELECT a, count(*) FROM t WHERE b = 1 GROUP BY a;",
    "javascript": "let x = [1, 2];\nfunction f(a) { return a + x[0]; }\n",
    "imports": 'abc, 12.5,"q"\nd,3\n',
    "templates_priorities": "abc=[1,foo];x=2",
    "maybe_and_repeats": "xxx(())!12345\u00e9",
    "object": '{"n":12,"s":"ab-cd","e":"red"}',
    "formats_lengths": '["2024-02-29","a@b.io","xyz"]',
    "one_of_if": '{"k":"b","v":"x"}',
    "refs": '{"kids":[{"kids":[]}],"name":"r"}',
    "counted": '"one two  three"',
}


def digest_case(name, make):
    h = hashlib.sha256()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = make()
            h.update(json.dumps([g.terminal_names, g.terminal_patterns, g.rules_text()]).encode())
            c = cfgmask.compile(g, VOCAB)
    except cfgmask.CfgmaskError as e:
        return f"{type(e).__name__}: {e}"
    m = c.matcher()
    bm = c.allocate_bitmask()
    status = "open"
    for i, b in enumerate(DOCS[name].encode()):
        m.fill_bitmask(bm)
        h.update(bm.tobytes())
        try:
            m.consume(b)
        except cfgmask.TokenRejected:
            status = f"rejected at byte {i}"
            break
    else:
        m.fill_bitmask(bm)
        h.update(bm.tobytes())
        if m.is_accepting():
            status = "accepting"
    return f"{h.hexdigest()} {status}"


VOCAB = cfgmask.Vocabulary([bytes([b]) for b in range(256)] + [b"ab", b"\\", b'": "', b"SELECT", b"  "] + [None],
                           eos_token_ids=[261])
out = {}
for name in ("json", "sql", "javascript"):
    out[name] = digest_case(name, lambda n=name: cfgmask.Grammar.builtin(n))
for name, text in LARK.items():
    out[name] = digest_case(name, lambda t=text: cfgmask.Grammar.from_lark(t))
for name, schema in SCHEMAS.items():
    out[name] = digest_case(name, lambda s=schema: cfgmask.Grammar.from_json_schema(s))
out["compiled"] = compiled_python.compiled_modules()
print(json.dumps(out))
'''


def _run_child(pure):
    env = dict(os.environ, CFGMASK_CACHE="0", PYTHONPATH=os.path.abspath(ROOT))
    env.pop("CFGMASK_PURE_PYTHON", None)
    if pure:
        env["CFGMASK_PURE_PYTHON"] = "1"
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _built_record():
    path = os.path.join(PACKAGE, compiled_python.RECORD)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)["modules"]


def _fresh(record):
    """The modules of ``record`` whose source is still the one they were built from."""
    return {n for n, crc in record.items()
            if compiled_python.source_crc(os.path.join(ROOT, *n.split(".")) + ".py") == crc}


def test_every_listed_module_has_its_source():
    for name in compiled_python.MODULES:
        path = os.path.join(ROOT, *name.split(".")) + ".py"
        assert os.path.isfile(path), f"{name}: no source at {path}"
    assert len(set(compiled_python.MODULES)) == len(compiled_python.MODULES)


def test_source_is_chosen_unless_the_record_vouches(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("X = 1\n")
    crc = compiled_python.source_crc(str(src))
    name = "cfgmask.grammar"
    assert compiled_python.use_source(name, str(src), {name: crc}, pure=True)
    assert compiled_python.use_source(name, str(src), {}, pure=False)
    assert compiled_python.use_source(name, str(src), {name: crc ^ 1}, pure=False)
    assert not compiled_python.use_source(name, str(src), {name: crc}, pure=False)
    src.write_text("X = 2\n")        # edited after the build: the same length, a new source
    assert compiled_python.use_source(name, str(src), {name: crc}, pure=False)


def test_finder_sends_an_unvouched_module_to_its_source():
    """The hook end to end: a record without the right CRC (a source edited after
    the build) gives the ``.py`` file's spec; a vouching record or a module off
    the list is left to the standard finders."""
    import cfgmask.frontends
    name, path = "cfgmask.frontends.cfg", list(cfgmask.frontends.__path__)
    source = os.path.join(os.path.dirname(cfgmask.frontends.__file__), "cfg.py")
    crc = compiled_python.source_crc(source)
    for record, pure in (({}, False), ({name: crc ^ 1}, False), ({name: crc}, True)):
        spec = compiled_python._SourceOrCompiled(record, pure).find_spec(name, path)
        assert spec is not None and spec.origin == source
    assert compiled_python._SourceOrCompiled({name: crc}, False).find_spec(name, path) is None
    assert compiled_python._SourceOrCompiled({}, False).find_spec("cfgmask.frontends.builtins", path) is None


def test_compiled_and_source_forms_agree():
    """The reference check: every case's digest (grammar fields, masks along a
    document, errors) is the same from the extensions and from the sources."""
    compiled = _run_child(pure=False)
    source = _run_child(pure=True)
    assert source.pop("compiled") == []
    built = compiled.pop("compiled")
    record = _built_record()
    if record is not None:
        assert set(built) == _fresh(record) & set(compiled_python.MODULES)
    assert compiled == source
    # the cases really ran: grammars digested, and errors where the input is bad
    assert all(v.endswith(" accepting") for k, v in source.items() if not k.startswith("bad")), source
    assert source["bad_rule"].startswith("GrammarError") and source["bad_regex"].startswith("GrammarError")
    assert source["bad"].startswith(("GrammarError", "ConfigurationError"))


def test_built_tree_imports_the_compiled_modules():
    record = _built_record()
    if record is None:
        import importlib.machinery
        built = [n for n in compiled_python.MODULES for suffix in importlib.machinery.EXTENSION_SUFFIXES
                 if os.path.isfile(os.path.join(ROOT, *n.split(".")) + suffix)]
        # extensions without the record would never be imported: a build that lost it
        assert not built, f"compiled modules without {compiled_python.RECORD}: {built}"
        pytest.skip("the compile-time modules are not built here (no cfgmask/_compiled_sources.json)")
    code = ("import cfgmask, json\nfrom cfgmask import compiled_python as c\n"
            "[__import__(n) for n in c.MODULES]\nprint(json.dumps(c.compiled_modules()))")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(ROOT))
    env.pop("CFGMASK_PURE_PYTHON", None)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == sorted(_fresh(record))


def test_code_fingerprint_reads_the_source_of_a_compiled_module():
    from cfgmask import cache
    import cfgmask.grammar as g
    expected = hashlib.sha256()
    expected.update(b"cfgmask.grammar\0")
    with open(os.path.join(PACKAGE, "grammar.py"), "rb") as f:
        expected.update(f.read())
    cache._code_hashes.pop(("cfgmask.grammar",), None)
    assert cache.code_fingerprint(g) == expected.hexdigest()[:16]
