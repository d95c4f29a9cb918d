"""The grouped pytest-benchmark output of benchmarks/conftest.py (names and the ratio summary)."""

from benchmarks.conftest import bench_group, ratio_table


def test_engines_of_one_workload_share_a_group():
    a = bench_group("benchmarks/bench_masks.py::test_replay[json-smollm2-cfgmask]",
                    {"grammar": "json", "tokenizer": "smollm2", "engine": "cfgmask"})
    b = bench_group("benchmarks/bench_masks.py::test_replay[json-smollm2-llguidance]",
                    {"grammar": "json", "tokenizer": "smollm2", "engine": "llguidance"})
    assert a == ("masks replay · json / smollm2", "cfgmask")
    assert b == ("masks replay · json / smollm2", "llguidance")
    s = bench_group("benchmarks/bench_masks.py::test_mask_at_state[start-sql-sp-xgrammar]",
                    {"state": "start", "grammar": "sql", "tokenizer": "sp", "engine": "xgrammar"})
    assert s == ("masks mask_at_state · sql / sp / start", "xgrammar")
    j = bench_group("benchmarks/bench_json_schema.py::test_compile[BFCL.json-llguidance]",
                    {"name": "BFCL.json", "eng_name": "llguidance"})
    assert j == ("json_schema compile · BFCL.json", "llguidance")
    assert bench_group("benchmarks/bench_robustness.py::test_batch_scaling", {}) == \
        ("robustness batch_scaling", "batch_scaling")


def test_ratio_table_is_cfgmask_over_each_peer():
    groups = [("masks replay · json / smollm2", [
        {"name": "cfgmask", "median": 2e-4, "source": None},
        {"name": "llguidance", "median": 8e-4, "source": None},
        {"name": "xgrammar", "median": 4e-4, "source": None}]),
        ("robustness batch_scaling", [{"name": "batch_scaling", "median": 1.0, "source": None}])]
    lines = ratio_table(groups)
    assert len(lines) == 3  # title, header, one row: a group without cfgmask and a peer has none
    row = lines[2]
    assert row.startswith("masks replay · json / smollm2")
    assert "200 µs" in row and "0.25×" in row and "0.50×" in row
    assert ratio_table(groups[1:]) == []
