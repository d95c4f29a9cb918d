"""Benchmarks: pytest-benchmark suites (``bench_*.py``) and measurement scripts (``run_*.py``).

Run a script as a module from the repository root, ``python -m benchmarks.run_masks --smoke``;
the suites with ``python -m pytest benchmarks/``.  Shared code comes from :mod:`support`,
never from tests/ (docs/architecture.md, "Tests, benchmarks and tools").
"""
