"""Thresholds: the grammar, bad input (exit 2 with file:line), and `perflab run` on the
known-cost SUT exiting 1 when a threshold is violated and printing which."""

from __future__ import annotations

import json

import pytest
from cli_helpers import perflab, run_dir_of, write_workload

from perflab.catalog.thresholds import Threshold, evaluate, parse_threshold, violated

#: Each transaction burns 2 ms of SUT CPU (perflab.sut.synthetic), so ITR (S) is about 500/s
#: per processor: `itr_s > 1` holds and `itr_s < 1` does not, by more than two orders of
#: magnitude whatever the machine's speed (the burn is timed on the thread's CPU clock).
KNOWN_COST = """
name: known-cost
target: {kind: python}
transactions:
  - {name: work, call: "perflab.sut.synthetic:work", kwargs: {cpu_ms: 2}}
scripts: [{name: s, steps: [work]}]
think: 0.005
load: {users: 1}
timing: {stabilization: 0.5s, measurement: 2s}
placement: {workers: 1}
monitor_interval: 0.25s
thresholds:
  - itr_s > 1
"""


def test_expressions_parse_into_key_operator_and_limit():
    assert parse_threshold("resp_p95_t < 0.5") == Threshold("resp_p95_t", "<", 0.5)
    assert parse_threshold("  error_pct_t<=1e-1 ") == Threshold("error_pct_t", "<=", 0.1)
    assert parse_threshold("itr_s>=5000").expression == "itr_s >= 5000"
    assert parse_threshold("etr_t == -2.5").expression == "etr_t == -2.5"
    for bad, message in (("resp_p95_t < fast", "expected KEY OP NUMBER"), ("resp_p95_t =< 1", "expected KEY OP"),
                         ("itr_s > 1 s", "expected KEY OP"), ("itr_s > 1e999", "finite"),
                         ("no_such_key < 1", "unknown metric key 'no_such_key'"), ("release > 1", "not a number"),
                         (5, "expected an expression")):
        with pytest.raises(ValueError, match=message):
            parse_threshold(bad)


def test_evaluation_compares_and_an_unmeasured_value_violates():
    results = evaluate(["itr_s > 100", "itr_s < 100", "resp_p95_t <= 0.5", "etr_t == 3", "pbt_cmd_s < 1"],
                       {"itr_s": 250.0, "resp_p95_t": 0.5, "etr_t": 3.0, "pbt_cmd_s": None})
    assert [r.passed for r in results] == [True, False, True, True, False]
    assert results[1].why == "itr_s is 250, not < 100"
    assert results[4].value is None and results[4].why == "not measured"
    assert [r.threshold.key for r in violated(results)] == ["itr_s", "pbt_cmd_s"]
    assert not evaluate(["etr_t > 0"], {"etr_t": float("nan")})[0].passed


@pytest.mark.fast   # refused before any run starts (tests/tiers.py)
def test_a_workload_threshold_with_an_unknown_key_is_bad_input_with_file_and_line(tmp_path):
    path = write_workload(tmp_path, KNOWN_COST + "  - resp_p99_x < 0.5\n")
    line = path.read_text().splitlines().index("  - resp_p99_x < 0.5") + 1
    result = perflab("validate", path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert f"{path}:{line}: thresholds[1]: unknown metric key 'resp_p99_x'" in result.stderr
    bad_option = perflab("run", write_workload(tmp_path, KNOWN_COST, "ok.yaml"), "--threshold", "itr_s >> 1")
    assert bad_option.returncode == 2 and "--threshold: expected KEY OP NUMBER" in bad_option.stderr


def test_perflab_run_exits_1_when_a_threshold_is_violated(tmp_path, store):
    path = write_workload(tmp_path, KNOWN_COST)
    met = perflab("run", path, "-q", store=store)
    assert met.returncode == 0, met.stderr[-2000:]
    assert "threshold met itr_s > 1" in met.stderr and "violated" not in met.stderr

    failed = perflab("run", path, "-q", "--threshold", "itr_s < 1", "--threshold", "error_pct_t < 1", store=store)
    assert failed.returncode == 1, failed.stderr[-2000:]
    assert "threshold violated itr_s < 1" in failed.stderr
    assert "threshold met itr_s > 1" in failed.stderr and "threshold met error_pct_t < 1" in failed.stderr
    # The option's thresholds are stored with the run, so its report shows them.
    run = json.loads((run_dir_of(store, failed.stdout) / "run.json").read_text())
    assert run["status"] == "complete"
    assert run["workload"]["thresholds"] == ["itr_s > 1", "itr_s < 1", "error_pct_t < 1"]
