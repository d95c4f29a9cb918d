"""Maintenance tools: the generators of grammar blocks (js_grammar, js_ident, sql_ident), the
grammar sampler, the mask digest and the structure check.

Run one as a module from the repository root, ``python -m tools.js_grammar --check``; the
tests import them as ``from tools import sql_ident`` (docs/architecture.md, "Tests,
benchmarks and tools").
"""
