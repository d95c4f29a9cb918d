"""The layout rules of docs/architecture.md ("The map", "Structure check") hold.

``tools/structure_check.py`` counts import cycles among cfgmask modules,
modules over 1,000 lines, uses of another module's ``_private`` names,
``sys.path`` edits outside conftest.py, references to files outside the
repository, and imports against the layers.  Each count must stay 0; the
failure message lists the offenders.
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_structure_counts_are_zero():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "structure_check.py")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    counts = [line for line in r.stdout.splitlines() if line.startswith("counts:")]
    assert counts, r.stdout
    assert counts[0].split()[1:] == ["0"] * 6, r.stdout
