"""Checks run by hand on other machines: ``python -m scripts.gpu_check`` and
``python -m scripts.vllm_check`` from the repository root (this tree's cfgmask comes first),
and scripts/wheel_smoke.py, which CI runs by path from outside the tree against the
installed wheel."""
