"""lark_build.load_grammar against Lark's own ``lark.load_grammar.load_grammar``.

The loaded ``Grammar`` (rule and terminal definitions, ``%ignore`` names) and
the used files must be equal for every bundled and test grammar, Lark's
lark.lark and the third-party mirrors; every error ``GrammarBuilder.validate``
raises must be raised the same way (type and message), and the fast check
must refuse exactly the texts Lark's check refuses.
"""

import os
import subprocess

import pytest

import lark
from lark import load_grammar as L

from cfgmask.frontends import lark_build
from tests.test_lark_loader import GRAMMAR_FILES, _lark_lark
from tests.test_lark_loader import _text as grammar_text

MIRROR_DIR = os.environ.get("CFGMASK_MIRROR_DIR", "/work/.mirror")


def _same(text, path=None, import_paths=()):
    name = path or "<string>"
    try:
        want = L.load_grammar(text, name, list(import_paths), False)
    except Exception as e:  # noqa: BLE001 - compared below
        with pytest.raises(type(e)) as got:
            lark_build.load_grammar(text, name, list(import_paths))
        assert str(got.value) == str(e)
        return False
    got = lark_build.load_grammar(text, name, list(import_paths))
    (gw, fw), (gg, fg) = want, got
    assert repr(gg.rule_defs) == repr(gw.rule_defs)
    assert repr(gg.term_defs) == repr(gw.term_defs)
    assert gg.ignore == gw.ignore and fg == fw
    return True


@pytest.mark.parametrize("path", GRAMMAR_FILES + [_lark_lark()], ids=os.path.basename)
def test_loaded_grammar_equals_larks(path):
    assert _same(grammar_text(path), path, [os.path.dirname(path)])


def _mirror_texts():
    import json
    manifest = json.load(open(os.path.join(os.path.dirname(os.path.dirname(__file__)),
                                           "benchmarks", "coldstart_grammars.json")))
    out = []
    for g in manifest["grammars"]:
        git_dir = os.path.join(MIRROR_DIR, g["repo"].replace("/", "+"), "repo")
        p = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{g['commit']}:{g['path']}"],
                           capture_output=True, text=True)
        if p.returncode == 0:
            out.append((g["name"], p.stdout))
    return out


def test_mirror_grammars_equal_larks():
    texts = _mirror_texts()
    if not texts:
        pytest.skip(f"no third-party grammar mirrors under {MIRROR_DIR} (set CFGMASK_MIRROR_DIR)")
    for _name, text in texts:
        _same(text)


# one text per check GrammarBuilder.validate makes, and some that pass
CASES = [
    ('start: a\n', False),                                   # rule used, not defined
    ('start: A\n', False),                                   # terminal used, not defined
    ('start: t{"a"}\n', False),                              # template used, not defined
    ('t{x}: x\nstart: t{"a", "b"}\n', False),                # wrong number of arguments
    ('t{x, x}: x\nstart: t{"a", "a"}\n', False),             # duplicate parameter
    ('a: "a"\nt{a}: a\nstart: t{"b"}\n', False),             # parameter clashes with a rule
    ('start: "a"\n%ignore WS\n', False),                     # %ignore name not defined
    ('start: "a" -> b\n', True),                             # an alias is not a use
    ('t{x}: x x\nstart: t{"a"} t{start}\n', True),
    ('t{x}: u{x}\nu{y}: y\nstart: t{"a"}\n', True),
    ('%declare A\nstart: A\n', True),
    ('start: A\nA: B "x"\nB: "b"\n%ignore " "\n', True),
    ('start: a\na: t{b}\nt{x}: x\n', False),                 # b: an argument used, not defined
]


@pytest.mark.parametrize("text,loads", CASES)
def test_checks_as_lark(text, loads):
    assert _same(text) == loads
