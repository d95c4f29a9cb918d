"""grammars/javascript.lark on the test262 parser tests (<corpora>/js/test262-parser-tests).

pass/ files must be accepted and fail/ files rejected, from the start rule
of their goal (``script``, or ``module`` for ``*.module.js``), by cfgmask
itself with a vocabulary of the 256 single bytes (support/test262.py, with
which benchmarks/coverage/run_test262.py also writes the committed results).
The files whose verdict is known to differ are listed below with the reason; any other
difference fails, and so does a listed file that starts to pass (update the
lists and docs/grammars.md).

The default run checks a spread sample of each directory; ``-m slow`` the
whole corpus (about 10 s) and node --check on the listed files.
"""
import shutil

import pytest

from support import corpora, test262

# pass/ files the grammar rejects.
PASS_REJECTED = {
    # an identifier directly followed by a non-ASCII space or line terminator
    # that shares its first UTF-8 bytes with identifier characters (U+200A,
    # U+2028): one byte of look-ahead cannot tell them apart
    "82a730bd109206bb.js", "9427da8abb4e7c67.js", "fe2d3b945530c806.js",
    # a number directly followed by U+2028 (E2 is in the word boundary class)
    "6498dcc494193cb4.js",
    # escapes of non-ASCII characters in identifiers (\u{1EE00}, \u2118)
    "465b79616fdc9794.js", "596746323492fbfd.js", "5c3d125ce5f032aa.js", "c85fbdb8c97e0534.js",
    "dafb7abe5b9b44f5.js", "eaee2c64dfc46b6a.js", "f5b89028dfa29f27.js", "f7f611e6fdb5b9fc.js",
    # a regex literal with groups nested 12 deep (`/((((((((((((.))))))))))))\12/`): REGEX
    # balances groups up to depth 5, the deepest in the Debian corpus
    "6f6e870785069487.js",
}

# fail/ files the grammar accepts.
FAIL_ACCEPTED = {
    # valid since ES2021 (\8 and \9 in sloppy strings) and ES2022 (class
    # fields without ";"): node accepts them too
    "0d5e450f1da8a92a.js", "748656edbfb2d0bb.js", "79f882da06f88c9f.js", "92b6af54adef3624.js",
    "98204d734f8c72b3.js", "ef81b93cf9bdb4ec.js",
    # a legacy octal directive before "use strict" (`"\1"; "use strict"`):
    # the sloppy reading stays alive
    "147fa078a7436e0e.js", "15a6123f6b825c38.js", "3bc2b27a7430f818.js",
    # `await` as a name in a plain function inside a module
    "2226edabbd2261a7.module.js",
    # `-->` not at the start of a line
    "7562c2148b3f455c.js",
    # Annex B.3.5: an initializer in a sloppy-mode `for (var x = 1 in o)`
    # head, which node accepts (the corpus follows the main grammar)
    "e3fbcf63d7e43ead.js",
}


@pytest.fixture(scope="module")
def checker():
    corpora.require("js/test262-parser-tests", "test262 parser tests")
    return test262.Checker()


def _wrong(records):
    wrong = []
    for r in records:
        if r["dir"] == "pass" and (r["cfgmask"] == "ok") == (r["file"] in PASS_REJECTED):
            wrong.append((r["dir"], r["file"], r["cfgmask"], r.get("cfgmask_error")))
        if r["dir"] == "fail" and (r["cfgmask"] == "ok") != (r["file"] in FAIL_ACCEPTED):
            wrong.append((r["dir"], r["file"], r["cfgmask"], r.get("cfgmask_error")))
    return wrong


def test_sample(checker):
    records = test262.run(checker, dirs=("pass", "fail"), limit=200)
    assert len(records) == 400
    assert not _wrong(records)


def test_known_differences(checker):
    """Every listed file still behaves as listed (cheap: only those files)."""
    root = test262.corpus_dir()
    for d, names, want in (("pass", PASS_REJECTED, False), ("fail", FAIL_ACCEPTED, True)):
        for name in sorted(names):
            ok, _ = checker.check((root / d / name).read_bytes(), test262.is_module(name))
            assert ok == want, (d, name)


@pytest.mark.parametrize("src,module,ok", [
    ("3in[]", False, False),
    ("a\n=> 0", False, False),
    # no line terminator after `throw` or before `=>` (THROW, ARROW_RP, not_before)
    ("throw\nx", False, False),
    ("throw /*\n*/ x", False, False),
    ("throw // c\nx", False, False),
    ("throw /* c */ x", False, True),
    ("throw\tx;", False, True),
    ("throw(x)", False, True),
    ("throw /a/", False, False),  # refused with them: "/" after `throw` starts a comment
    ("()\n=> 1", False, False),
    ("(a, ...b)/*\n*/ => 1", False, False),
    ("(a,)\n=> 1", False, False),
    ("(a)\n=> 1", False, False),
    ("() /* c */ => 1", False, True),
    ("x = (\n) => 1", False, True),
    ("(a)\n+ 1", False, True),
    ("x = --(a = 1)", False, False),
    ("a--b", False, False),
    ("\uff0a", False, False),
    ("\u200c = []", False, False),
    ("x\u200c = []", False, True),
    ("return", False, False),
    ("function f() { return }", False, True),
    ("yield v", False, False),
    ("var yield = 1", False, True),
    ("function* g() { yield v }", False, True),
    ("function* g() { var yield }", False, False),
    ("await x", False, False),
    ("await x", True, True),
    ("var await", False, True),
    ("var await", True, False),
    ("async function f() { await x }", False, True),
    ("import a from 'a'", False, False),
    ("import a from 'a'", True, True),
    ("export default 1", False, False),
    ("'use strict'; ('\\1')", False, False),
    ("('\\1')", False, True),
    ("('\\1')", True, False),
    ("'use strict'\nvar x = 010", False, False),
    ("var x = 010", False, True),
    ("function f() { 'use strict'; with (a) b }", False, False),
    ("class A { m() { return 010 } }", False, False),
    ("/{*/u", False, False),
    ("/{*/", False, True),
    ("/(a)\\1/u", False, True),
    # regex literals balance their groups (up to depth 5, or 2 with u/v), ignoring
    # parentheses in classes and escaped ones; quantifiers only where node takes them
    ("/a)/", False, False),
    ("/(a/", False, False),
    ("/(?:a|(b))?c/g", False, True),
    ("/[(]\\)/", False, True),
    ("/(?<y>\\d{4})-(?=x)*(?<!z)\\k<y>/", False, True),
    ("/(((((a)))))/", False, True),
    ("/((((((a))))))/", False, False),
    ("/((a))/u", False, True),
    ("/(((a)))/u", False, False),
    ("/a)/u", False, False),
    ("/(a/u", False, False),
    ("/a**/", False, False),
    ("/+a/", False, False),
    ("/a|*b/", False, False),
    ("/^*/", False, False),
    ("/a*?b+?/", False, True),
    ("/(?<=a)*/", False, False),
    ("/(?=(a))*/u", False, False),
    ("/(?=(a))/u", False, True),
    ("/\\1/u", False, False),
    ("x = 1\u00a0+ 2", False, True),
    ("function\u00a0f() {}", False, True),
    ("let [a] = b", False, True),
    ("let[a]", False, False),
    ("let.a = 1", False, True),
    ("a: function f() {}", False, True),
    ("'use strict'; a: function f() {}", False, False),
    ("switch (a) { default: default: }", False, False),
    ("do x; while (y) z", False, True),
    ("(a) = 1; [(b)] = 2; ({c: (d.e)} = 3)", False, True),
])
def test_snippets(checker, src, module, ok):
    assert checker.check(src.encode(), module)[0] == ok


# "--" and "++" are one token wherever they appear, as node's tokenizer reads
# them: where no update operator may go they are refused, not split into two
# signs (the not_before pragmas on MINUS and PLUS); verdicts from node --check.
UPDATE_SPLIT = [
    ("(a = 1)---b", False),
    ("x = (a = 1)---b", False),
    ("(a = 1)+++b", False),
    ("(a = 1)--b", False),
    ("1---b", False),
    ("x = a ++b", False),
    ("x = --1", False),
    ("(a = 1)- --b", True),
    ("(a = 1)+ ++b", True),
    ("x = (a = 1)\n--b", True),
    ("a - --b", True),
    ("a - -b", True),
    ("a - - -b", True),
    ("a + ++b", True),
    ("a + +b", True),
    ("--a", True),
    ("a--", True),
    ("++a", True),
    ("a++", True),
    ("a---b", True),
    ("a+++b", True),
    ("x = a+++ +b", True),
    ("a = b-- - c", True),
    ("x = +-1", True),
    ("x = -+1", True),
    ("x = a-+-b", True),
    ("a -= -1", True),
    ("a-=--b", True),
    ("a+=++b", True),
]


@pytest.mark.parametrize("src,ok", UPDATE_SPLIT)
def test_update_operator_not_split(checker, src, ok):
    assert checker.check(src.encode(), False)[0] == ok


@pytest.mark.slow
def test_update_operator_not_split_node():
    """node --check gives the verdicts listed in UPDATE_SPLIT."""
    if shutil.which("node") is None:
        pytest.skip("node not installed")
    for src, ok in UPDATE_SPLIT:
        assert test262.node_check(src.encode(), False) == ok, src


@pytest.mark.slow
def test_full_corpus(checker):
    records = test262.run(checker, dirs=("pass", "fail"))
    summary = test262.summarize(records)
    assert summary["pass"]["files"] == 1983 and summary["fail"]["files"] == 729
    assert not _wrong(records)
    assert summary["pass"]["accepted"] / 1983 >= 0.99
    assert summary["fail"]["rejected"] / 729 >= 0.97


@pytest.mark.slow
def test_listed_fail_files_node():
    """The fail/ files listed as valid in newer ECMAScript or Annex B are ones node accepts."""
    if shutil.which("node") is None:
        pytest.skip("node not installed")
    root = corpora.require("js/test262-parser-tests", "test262 parser tests")
    newer = ["0d5e450f1da8a92a.js", "748656edbfb2d0bb.js", "79f882da06f88c9f.js", "92b6af54adef3624.js",
             "98204d734f8c72b3.js", "ef81b93cf9bdb4ec.js", "e3fbcf63d7e43ead.js"]
    for name in newer:
        assert test262.node_check((root / "fail" / name).read_bytes(), False), name
    for name in sorted(FAIL_ACCEPTED - set(newer)):
        assert not test262.node_check((root / "fail" / name).read_bytes(), test262.is_module(name)), name
