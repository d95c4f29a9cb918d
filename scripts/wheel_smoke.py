"""Smoke test of an installed cfgmask wheel, run from outside the source tree.

CI builds the wheel, installs it into a fresh virtual environment and runs
this file from a temporary directory, so that ``import cfgmask`` can only
find the installed copy: a module or data file the wheel forgot (the
``cfgmask.frontends.json_schema`` package once was) fails here, while editable
installs and the test suite would never notice.

Covers every builtin grammar, a JSON Schema, the CLI entry point and
``import cfgmask.hf``.  Exits non-zero with the first failure.
"""
import json
import os
import subprocess
import sys
import tempfile


def byte_vocab():
    import cfgmask
    # one token per byte plus EOS: every grammar can be walked with it
    return cfgmask.Vocabulary([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])


def accepts(compiled, text):
    import cfgmask
    m = compiled.matcher()
    try:
        for b in text.encode():
            m.consume(b)
    except cfgmask.TokenRejected:
        return False
    return m.is_accepting()


def main():
    import cfgmask
    here = os.path.dirname(os.path.abspath(cfgmask.__file__))
    if os.path.exists(os.path.join(here, "..", "setup.py")):
        sys.exit(f"wheel smoke: cfgmask was imported from a source tree ({here}), not from the wheel")
    from cfgmask.frontends import lark_meta
    if not os.path.isfile(lark_meta.TABLE_FILE):
        sys.exit("wheel smoke: cfgmask/frontends/lark_meta_table.json is not in the wheel")
    from cfgmask.frontends.json_schema import formats, strings
    if not all(formats.from_table(name, True) for name in strings.FORMATS):
        sys.exit("wheel smoke: cfgmask/frontends/json_schema/format_tables/*.json missing or unused")
    vocab = byte_vocab()
    # the compile-time Python modules come compiled in a wheel (setup.py), with the
    # record that lets cfgmask.compiled_python import them
    from cfgmask import compiled_python
    for name in compiled_python.MODULES:
        __import__(name)
    slow = sorted(set(compiled_python.MODULES) - set(compiled_python.compiled_modules()))
    if slow:
        sys.exit(f"wheel smoke: imported from source, not compiled: {', '.join(slow)}")
    docs = {"json": '{"a": [1, 2.5, null]}', "sql": "SELECT a FROM t WHERE b = 1;",
            "javascript": "let x = 1;\n"}
    for name in cfgmask.Grammar.builtin_names():
        compiled = cfgmask.compile(cfgmask.Grammar.builtin(name), vocab)
        bitmask = compiled.allocate_bitmask()
        compiled.matcher().fill_bitmask(bitmask)
        if not accepts(compiled, docs[name]):
            sys.exit(f"wheel smoke: builtin {name} refused {docs[name]!r}")
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}},
              "required": ["n"]}
    compiled = cfgmask.compile(cfgmask.Grammar.from_json_schema(schema), vocab)
    if not accepts(compiled, '{"n":3}') or accepts(compiled, '{"n":-3}'):
        sys.exit("wheel smoke: the JSON Schema grammar is wrong")
    import cfgmask.hf  # noqa: F401  (the torch integration imports)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "s.json")
        with open(path, "w") as f:
            json.dump(schema, f)
        # the console script the wheel installed, next to this interpreter
        exe = os.path.join(os.path.dirname(sys.executable), "cfgmask")
        for args in (["check", "--schema", path], ["check", "--help"]):
            r = subprocess.run([exe, *args], capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"wheel smoke: cfgmask {' '.join(args)} exited {r.returncode}: {r.stderr[-500:]}")
    print("wheel smoke: ok (builtins, JSON Schema, CLI, cfgmask.hf)")


if __name__ == "__main__":
    main()
