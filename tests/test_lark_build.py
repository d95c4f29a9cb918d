"""lark_build.load_grammar against Lark's own ``lark.load_grammar.load_grammar``.

The loaded ``Grammar`` (rule and terminal definitions, ``%ignore`` names) and
the used files must be equal for every bundled and test grammar, Lark's
lark.lark and the third-party mirrors; every error ``GrammarBuilder.validate``
raises must be raised the same way (type and message), and the fast check
must refuse exactly the texts Lark's check refuses.  The one-walk terminal
resolution (``lark_build.resolve_term_references``) is compared with Lark's
own on the same texts and on each way a terminal reference can be wrong.
"""

import functools
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


def _lark_resolve():
    f = L.resolve_term_references
    while getattr(f, "_cfgmask_lark_build", False):
        f = f.__wrapped__
    return f


def _load_with(resolve, text, name, import_paths):
    saved = L.resolve_term_references
    L.resolve_term_references = resolve
    try:
        return L.load_grammar(text, name, list(import_paths), False)
    finally:
        L.resolve_term_references = saved


def _same_resolution(text, path=None, import_paths=()):
    """Lark's load with Lark's resolution and with ours: equal definitions, or the same error."""
    name = path or "<string>"
    original = _lark_resolve()
    ours = functools.partial(lark_build.resolve_term_references, lark_resolve=original)
    try:
        want, _ = _load_with(original, text, name, import_paths)
    except Exception as e:  # noqa: BLE001 - compared below
        with pytest.raises(type(e)) as got:
            _load_with(ours, text, name, import_paths)
        assert str(got.value) == str(e)
        return False
    got, _ = _load_with(ours, text, name, import_paths)
    assert repr(got.term_defs) == repr(want.term_defs)
    assert repr(got.rule_defs) == repr(want.rule_defs)
    return True


@pytest.mark.parametrize("path", GRAMMAR_FILES + [_lark_lark()], ids=os.path.basename)
def test_terminal_references_resolved_as_lark(path):
    assert _same_resolution(grammar_text(path), path, [os.path.dirname(path)])


def test_mirror_terminal_references_resolved_as_lark():
    texts = _mirror_texts()
    if not texts:
        pytest.skip(f"no third-party grammar mirrors under {MIRROR_DIR} (set CFGMASK_MIRROR_DIR)")
    assert any(_same_resolution(text) for _name, text in texts)


TERMINAL_CASES = [
    ('start: A\nA: B C\nB: "b"\nC: B "c"\n', True),               # shared, nested
    ('start: K\nK: S E L\nS: "s"i\nE: "e"i\nL: "l"i\n', True),     # letter by letter
    ('start: A B\nA: "a"\nB: A A A\n', True),
    ('start: NUM\nNUM: SIGNED_INT\n%import common.SIGNED_INT\n', True),   # an imported, resolved tree
    ('start: A\nA: "a" A?\n', False),                                # recursion
    ('start: A\nA: B\nB: "b" A\n', False),                          # a cycle of two
    ('start: A\nA: B\nB: C\nC: "c" | B\n', False),                 # a cycle not through A
    ('start: A\nA: a\na: "x"\n', False),                            # a rule inside a terminal
    ('start: A\nA: B "x"\n', False),                                 # undefined
    ('%declare B\nstart: A\nA: B "x"\n', False),                    # %declare'd
    ('start: A C\nA: B\nC: D\n', False),                            # two undefined: Lark's first
]


@pytest.mark.parametrize("text,loads", TERMINAL_CASES)
def test_terminal_reference_cases_as_lark(text, loads):
    assert _same_resolution(text) == loads


def test_cycles_found():
    """_has_cycle on small graphs (a cycle is what makes Lark raise)."""
    assert not lark_build._has_cycle({"a": {"b"}, "b": {"c"}, "c": set()})
    assert not lark_build._has_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()})   # a diamond
    assert lark_build._has_cycle({"a": {"a"}})
    assert lark_build._has_cycle({"a": {"b"}, "b": {"c"}, "c": {"b"}})
    assert lark_build._has_cycle({"x": set(), "a": {"b"}, "b": {"a"}})


# ---------------------------------------------------------------- %import copies

def _lark_mangle():
    f = L._mangle_definition_tree
    return getattr(f, "__wrapped__", f)


def _tree_key(x):
    """Everything a copied tree carries: node data and meta, symbols with their
    kind and filter_out, tokens with the positions deepcopy keeps."""
    from lark import Token, Tree
    from lark.grammar import Symbol
    if isinstance(x, Tree):
        return ("tree", type(x).__name__, x.data, id(x._meta) if x._meta is not None else None,
                tuple(_tree_key(c) for c in x.children))
    if isinstance(x, Symbol):
        return ("symbol", type(x).__name__, x.name, getattr(x, "filter_out", None))
    if isinstance(x, Token):
        return ("token", x.type, x.value, x.start_pos, x.line, x.column, x.end_line, x.end_column,
                x.end_pos)
    return ("leaf", type(x).__name__, repr(x))


def _mangled_pairs(texts):
    """``(exp, mangle)`` of every definition Lark's own load copies for the texts."""
    original = _lark_mangle()
    calls = []

    def record(exp, mangle):
        calls.append((exp, mangle))
        return original(exp, mangle)
    saved = L._mangle_definition_tree
    L._mangle_definition_tree = record
    try:
        for text, import_paths in texts:
            try:
                L.load_grammar(text, "<string>", list(import_paths), False)
            except Exception:  # noqa: BLE001 - the copies made before an error count too
                pass
    finally:
        L._mangle_definition_tree = saved
    return [(e, m) for e, m in calls if m is not None]


def test_import_copies_as_lark():
    """``mangle_definition_tree`` gives Lark's copies (every imported definition
    of the project's grammars, Lark's lark.lark, the mirrors and the import
    cases), leaving the original trees unchanged."""
    texts = [(grammar_text(p), [os.path.dirname(p)]) for p in GRAMMAR_FILES + [_lark_lark()]]
    texts += [(text, []) for _name, text in _mirror_texts()]
    texts += [(text, []) for text, _loads in TERMINAL_CASES]
    texts.append(('start: A B WORD _NL\nA: "a"\nB: /b+/\n%import common (WORD, NEWLINE -> _NL)\n'
                  '%import common.WS\n%ignore WS\n', []))
    pairs = _mangled_pairs(texts)
    assert len(pairs) > 20
    original = _lark_mangle()
    for exp, mangle in pairs:
        before = _tree_key(exp)
        got = lark_build.mangle_definition_tree(exp, mangle, original)
        assert _tree_key(got) == _tree_key(original(exp, mangle))
        assert _tree_key(exp) == before and got is not exp


def test_import_copy_keeps_sharing_as_deepcopy():
    from lark import Token, Tree
    from lark.grammar import NonTerminal, Terminal
    leaf = Token("STRING", '"x"', 3, 1, 4)
    shared = Tree("expansion", [Terminal("A", filter_out=True), leaf, leaf])
    exp = Tree("expansions", [shared, shared, Tree("expansion", [NonTerminal("r")])])
    mangle = lambda name: "ns__" + name  # noqa: E731
    want = _lark_mangle()(exp, mangle)
    got = lark_build.mangle_definition_tree(exp, mangle, _lark_mangle())
    assert _tree_key(got) == _tree_key(want)
    for t in (want, got):
        assert t.children[0] is t.children[1] and t.children[0].children[1] is t.children[0].children[2]
        assert t.children[0].children[0] == Terminal("ns__A") and t.children[0].children[0].filter_out
    assert lark_build.mangle_definition_tree(exp, None, _lark_mangle()) is exp
