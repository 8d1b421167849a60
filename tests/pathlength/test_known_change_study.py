"""Where the pathlength went, against a change of known size: real studies under valgrind.

B adds one function of known count to A's transaction (perflab.sut.known_loop:known_change,
`variant: 2`): `perflab_known_loop`, 2n + 2 instructions per transaction, and nothing else
changes -- the same Python work (a dictionary of string keys, probed alike in both: the counted
worker's hash seed is the run's, the same in both configurations of a block), the same ctypes
call. The study's table must show
that function at the top with its count to within 1% (it is exact), and no other function above
the noise of a count; an A/A (the same configuration twice) must show no function above it.
Instruction counts do not depend on the machine's load."""

from __future__ import annotations

import json

import programs
import pytest
from cli_helpers import perflab, write_workload

from perflab.sut.known_loop import NAME, loop_instructions

N = 50_000
WORKLOAD = """
name: known-change
target: {kind: python}
transactions:
  - {name: work, call: "perflab.sut.known_loop:known_change", kwargs: {n: %d, variant: 1, work: 300}}
scripts: [{name: s, steps: [work]}]
load: {users: 1}
think: 0.02
timing: {stagger: 0s, stabilization: 0s, measurement: 1s}
placement: {workers: 1}
pathlength: {transactions: 40, warmup: 5, timeout: 5m}
""" % N
STUDY = """
name: known-change
workload: workload.yaml
configurations:
  - {name: A, set: {}}
  - {name: B, set: {transactions.work.kwargs.variant: %s}}
load: {users: 1}
gate_metrics: [instr_cmd_i]
blocks: 3
seed: 1
timing: {stagger: 0s, stabilization: 0s, measurement: 1s}
"""


def _study(tmp_path, store, variant: str) -> dict:
    write_workload(tmp_path, WORKLOAD, "workload.yaml")
    study = write_workload(tmp_path, STUDY % variant, "study.yaml")
    result = perflab("study", study, store=store, timeout=900)
    assert result.returncode in (0, 1, 3), result.stderr[-3000:]
    study_dir = result.stdout.strip().splitlines()[-1]
    with open(f"{study_dir}/report.json") as handle:
        report = json.load(handle)
    (diff,) = report["pathlength_diffs"]
    assert diff["blocks"] == 3 and diff["paired_transactions"] == 3 * 40, diff
    return diff


@programs.needs("valgrind")
def test_a_function_added_in_b_is_at_the_top_to_its_count_and_nothing_else_is_above_the_noise(tmp_path, store):
    diff = _study(tmp_path, store, "2")
    top = diff["exclusive"][0]
    assert top["function"] == NAME and top["base"] == 0
    assert top["new"] == pytest.approx(loop_instructions(N), rel=0.01)   # measured: exact
    assert top["above_noise"] is True
    others = [r["function"] for r in diff["exclusive"][1:] + diff["inclusive"]
              if r["above_noise"] and r["function"] != NAME]
    # the callers of the function carry its count in their inclusive counts (they are changed);
    # no function's own count is
    assert not [r for r in diff["exclusive"][1:] if r["above_noise"]], others
    # the change is the function's: the total moved by its count, and within the noise of the rest
    assert diff["new_total"] - diff["base_total"] == pytest.approx(loop_instructions(N), rel=0.01)


@programs.needs("valgrind")
def test_an_a_a_has_no_function_above_the_noise(tmp_path, store):
    diff = _study(tmp_path, store, "1")
    assert not [r["function"] for r in diff["exclusive"] + diff["inclusive"] if r["above_noise"]]
    # the noise of a count here: what the hash seed moves, a small part of a transaction
    assert max(abs(r["new"] - r["base"]) for r in diff["exclusive"]) < 0.01 * diff["base_total"]
