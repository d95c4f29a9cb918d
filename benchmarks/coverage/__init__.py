"""Grammar coverage on the corpora: ``python -m benchmarks.coverage.run_coverage json`` and the
other scripts here write results/ and the tables of docs/grammars.md; the checkers they run are
:mod:`support.coverage` and :mod:`support.test262`, which the tests run too."""
