"""Regex literals in grammars/javascript.lark against node's own RegExp parser.

Random patterns built from regex syntax pieces (groups of every kind,
classes, escapes, quantifiers, assertions) are checked as `x = /.../;` by
cfgmask (script goal, 256 single-byte vocabulary) and as `new RegExp(body,
flags)` by node. Any disagreement fails unless it is one of the documented
gaps (docs/grammars.md, JavaScript "Limits (measured)"):

* refused though valid: groups nested deeper than the bound (5, or 2 with
  the u flag); a lookbehind opened inside a lookbehind (with u, a
  lookaround inside any lookaround); with u, a back-reference without a
  capturing group at the top level;
* accepted though invalid: references to group names or numbers that do not
  exist; class ranges out of order.

Without u, a "{" that node reads as a braced quantifier with nothing to
repeat (`/a+{2}/`, `/{1}/`) must be refused like any other invalid pattern.
"""
import json
import random
import re
import shutil
import subprocess

import pytest

from support import test262

DEPTH = {"": 5, "u": 2}
PIECES = ["a", "b", "1", "(", "(", ")", ")", "(?:", "(?=", "(?!", "(?<=", "(?<!", "(?<n>", "[", "]", "[a]",
          "[^)]", "[(]", "\\(", "\\)", "\\1", "\\b", "\\d", "*", "+", "?", "{", "}", "{2}", "{1,3}", ",",
          "|", "^", "$", ".", "\\k<n>", "\\u{41}", "\\p{L}", "-", "<", ">", ":", "=", "!", "\\0", "0"]
SEED = 20261202

KNOWN_HOLES = re.compile(r"Invalid named (?:capture referenced|reference)|Invalid escape|Range out of order"
                         r"|Invalid character class|Duplicate capture group name")


def _shape(body, u):
    """(group nesting depth, a lookbehind inside a lookbehind or with u a lookaround
    inside a lookaround, a capturing group at the top level) of a pattern."""
    stack, depth, nested_look, top_capture = [], 0, False, False
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            j = i + 1
            while j < len(body) and body[j] != "]":
                j += 2 if body[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            look = re.match(r"\(\?<?[=!]", body[i:]) is not None
            behind = body.startswith("(?<=", i) or body.startswith("(?<!", i)
            if (behind and "behind" in stack) or (u and look and any(k != "group" for k in stack)):
                nested_look = True
            if not stack and not body.startswith("(?", i) or not stack and re.match(r"\(\?<[A-Za-z]", body[i:]):
                top_capture = True
            stack.append("behind" if behind else "look" if look else "group")
            depth = max(depth, len(stack))
        elif c == ")":
            stack.pop()
        i += 1
    return depth, nested_look, top_capture


def _node_verdicts(literals):
    js = ("const d=JSON.parse(require('fs').readFileSync(0));console.log(JSON.stringify(d.map(([b,f])=>"
          "{try{new RegExp(b,f);return null}catch(e){return e.message}})))")
    r = subprocess.run([shutil.which("node"), "-e", js], input=json.dumps(literals), capture_output=True,
                       text=True, timeout=120, check=True)
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def checker():
    return test262.Checker()


def _disagreements(checker, n, seed):
    rng = random.Random(seed)
    literals = sorted({("".join(rng.choice(PIECES) for _ in range(rng.randint(1, 9))), rng.choice(["", "g", "u"]))
                       for _ in range(n)})
    literals = [lit for lit in literals if not lit[0].startswith("*")]  # `/*` starts a comment
    bad = []
    for (body, flags), err in zip(literals, _node_verdicts(literals)):
        ours = checker.check(("x = /%s/%s;\n" % (body, flags)).encode(), False)[0]
        u = "u" in flags
        if ours and err is not None:
            if KNOWN_HOLES.search(err):
                continue
            bad.append(("accepted", body, flags, err))
        elif not ours and err is None:
            depth, nested_look, top_capture = _shape(body, u)
            if depth > DEPTH["u" if u else ""] or nested_look or (u and re.search(r"\\[1-9]", body)
                                                                   and not top_capture):
                continue
            bad.append(("refused", body, flags))
    return len(literals), bad


def test_random_patterns_agree_with_node(checker):
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    n, bad = _disagreements(checker, 3000, SEED)
    assert n > 2500
    assert not bad, bad[:10]


@pytest.mark.slow
def test_random_patterns_agree_with_node_full(checker):
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    n, bad = _disagreements(checker, 40000, SEED + 1)
    assert not bad, bad[:10]


# Without u, "{" is a literal unless it spells a braced quantifier; where that
# quantifier has nothing to repeat the pattern is an error (Annex B's
# InvalidBracedQuantifier). (body, valid)
BRACE_CASES = [("{1}", False), ("a+{2}", False), ("^{1,}", False), ("a{1}{2}", False), ("{12}", False),
               ("(?<=a){2}", False), ("{1,2}", False), ("a|{3}", False), ("{{1}*", False),
               ("{", True), ("{,1}", True), ("{1*}", True), ("{{1}", True), ("a{1}", True), ("{1{2}", True),
               ("}", True), ("{a}", True), ("x{1,", True), ("{1,a}", True), ("{1,2,}", True), ("{}", True),
               ("(?=a){2}", True), ("{1\\b}", True), ("[{1}]", True), ("\\{1}", True)]


@pytest.mark.parametrize("body,valid", BRACE_CASES)
def test_braced_quantifier_with_nothing_to_repeat(checker, body, valid):
    assert checker.check(("x = /%s/;\n" % body).encode(), False)[0] is valid
    if shutil.which("node") is not None:
        assert (_node_verdicts([[body, ""]])[0] is None) is valid


# With u, "\0" may not be followed by a digit (a decimal escape), in a class
# or out of one. (body, flags, valid)
ZERO_CASES = [("\\01", "u", False), ("[\\01]", "u", False), ("\\00", "u", False), ("[a\\0\\09]", "u", False),
              ("(\\01)", "u", False), ("\\0", "u", True), ("[\\0]", "u", True), ("\\0\\0", "u", True),
              ("\\0(1)", "u", True), ("(\\0)1", "u", True), ("\\0{2}1", "u", True), ("a|\\0|1", "u", True),
              ("\\0\\1(a)", "u", True), ("[\\0-\\x10]", "u", True), ("[\\0]1", "u", True), ("\\0a1", "u", True),
              ("\\01", "", True), ("[\\01]", "", True)]


@pytest.mark.parametrize("body,flags,valid", ZERO_CASES)
def test_null_escape_before_a_digit(checker, body, flags, valid):
    assert checker.check(("x = /%s/%s;\n" % (body, flags)).encode(), False)[0] is valid
    if shutil.which("node") is not None:
        assert (_node_verdicts([[body, flags]])[0] is None) is valid
