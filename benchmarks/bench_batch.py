"""pytest-benchmark: batch fills (``fill_bitmasks``) on 1 and 2 threads, idle and with every core busy.

The same measurement as ``benchmarks/run_batch.py`` (which prints the table
with the 2 / 1 ratios and the issue-26 targets): SQL grammar, tekken 131k,
8 / 16 / 64 rows replaying Spider queries, the timed call is one
``fill_bitmasks`` per step.  "busy" starts one busy-loop process per CPU
for the duration of the benchmark (each ends by itself; all are killed
afterwards).  The benchmarked call is one replay (``STEPS`` fills plus the
consumes between them); ``extra_info["fill_seconds_per_call"]`` is the fill
time alone.  Without ``--benchmark-enable`` each case runs once (smoke).
"""

import pytest

from benchmarks import run_batch

STEPS = 10


@pytest.fixture(scope="module")
def sql_tekken():
    try:
        return run_batch.load()      # support/vocabs.py skips when tekken is not installed
    except FileNotFoundError as e:
        pytest.skip(str(e))


@pytest.mark.parametrize("setting", ["idle", "busy"])
@pytest.mark.parametrize("rows", [8, 16, 64])
@pytest.mark.parametrize("threads", [1, 2])
def test_batch_fill(benchmark, sql_tekken, setting, rows, threads):
    compiled, docs = sql_tekken
    batch = run_batch.Batch(compiled, docs, rows, STEPS)
    batch.replay(threads)          # warm the caches
    if setting == "busy":
        with run_batch.busy_cores(run_batch._cpus(), 60):
            seconds = benchmark.pedantic(batch.replay, args=(threads,), rounds=5, iterations=1)
    else:
        seconds = benchmark.pedantic(batch.replay, args=(threads,), rounds=5, iterations=1)
    benchmark.extra_info.update(rows=rows, threads=threads, setting=setting,
                                fill_seconds_per_call=seconds / STEPS)
