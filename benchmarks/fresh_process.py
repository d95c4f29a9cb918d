"""Run a benchmark's child in a fresh Python process with an empty disk cache.

The A/B and first-load scripts time code as a new user meets it: a process
that has not run cfgmask yet, with an empty ``CFGMASK_CACHE_DIR`` (the cache
itself on, so its writes are part of the cost).  The child prints its result
as JSON on the last line of its standard output.
"""

import json
import os
import subprocess
import sys
import tempfile


def run_fresh(argv, *, pythonpath=None, env_set=None, env_unset=(), what="child"):
    """``json.loads`` of the last stdout line of ``python argv...``, run in an empty
    temporary folder that is also its cache directory; ``pythonpath``: the tree
    whose ``cfgmask`` it imports.  Exits with the child's stderr tail if it fails."""
    env = dict(os.environ, CFGMASK_CACHE="1")
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    for k in env_unset:
        env.pop(k, None)
    env.update(env_set or {})
    with tempfile.TemporaryDirectory() as d:
        env["CFGMASK_CACHE_DIR"] = d
        r = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True, cwd=d)
    if r.returncode:
        sys.exit(f"{what} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])
