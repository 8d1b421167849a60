"""Studies end to end on the known-cost SUT: the verdicts a user relies on.

Identical configurations must come out EQUIVALENT; a configuration that adds a known absolute
CPU cost per transaction must come out WORSE with an interval that contains the true ratio --
computed from the base's *measured* cost per transaction (which includes perflab's own small
per-transaction cost in the SUT's workers), not from the designed cost alone.

The truth is checked on every host, in an interval as wide as the noise each study measured;
the verdicts wherever that noise decides them. What a study does with its runs -- the reports'
sections, `perflab compare` on its groups and its exit codes -- is the fast tier's
(tests/fast/test_model_studies.py, test_model_compare.py: the same studies on the model driver).
"""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import perflab
from scipy import stats

from perflab.stats import paired_log_interval
from perflab.study.compare import metric_info

#: The two studies take about 95 s on a quiet host; a busy one may take three times that, and a
#: busy host must not fail them (the assertions widen with the noise instead).
pytestmark = pytest.mark.timeout(900)

CPU_MS = 4.0
ADDED_MS = 0.4   # the candidate's known extra CPU per transaction

WORKLOAD = f"""
name: known-cost
target: {{kind: python}}
transactions:
  - {{name: work, class: nontrivial, call: "perflab.sut.synthetic:work", kwargs: {{cpu_ms: {CPU_MS}}}}}
scripts: [{{name: s, steps: [work]}}]
load: {{rate: 150, arrival: poisson}}
timing: {{stabilization: 0.5s, measurement: 1s}}
monitor_interval: 0.5s
placement: {{workers: 1}}
seed: 5
"""
# The window is 1 s and both its edges fall on the monitor's samples (every 0.5 s from the run's
# start): ITR (S) and PBT/CMD (S) divide by the SUT's CPU between two samples, not by one
# interpolated across the 1 s gap that held the workers' start-up (the 2 s window of before began
# at 0.5 s between samples at 0.1 and 1.0 s). Over three runs of both studies the paired
# differences' SD was 0.85-1.05% (the 2 s windows': 1.1%, and 2.2% on a host with other work),
# and each of the 32 runs is a second shorter.


def _study(tmp_path: Path, second_cpu_ms: float, name: str, blocks: int = 6) -> Path:
    (tmp_path / "known-cost.yaml").write_text(textwrap.dedent(WORKLOAD).lstrip())
    study = tmp_path / f"{name}.yaml"
    study.write_text(textwrap.dedent(f"""
        name: {name}
        workload: known-cost.yaml
        configurations:
          - name: base
          - name: candidate
            set: {{transactions.work.kwargs.cpu_ms: {second_cpu_ms}}}
        load: {{rate: 150}}
        blocks: {blocks}
        seed: 2
        metrics: [itr_s, pbt_cmd_s, etr_t, avg_last_t]
    """).lstrip())
    return study


def _run_study(study: Path, store: Path, expect: int = 0) -> tuple[dict, Path]:
    result = perflab("study", study, store=store, timeout=600)
    assert result.returncode == expect, result.stderr[-3000:]
    directory = Path(result.stdout.strip().splitlines()[-1])
    return json.loads((directory / "study.json").read_text()), directory


def _metric(doc: dict, key: str) -> dict:
    return next(m for m in doc["comparisons"][0]["metrics"] if m["key"] == key)


def _per_block(doc: dict, key: str) -> tuple[np.ndarray, np.ndarray]:
    """(base, candidate) per-run values of the valid runs, paired by block."""
    values = {(r["config"], r["block"]): r["metrics"][key] for r in doc["runs"] if not r["exclusions"]}
    blocks = sorted({b for c, b in values if (("base", b) in values and ("candidate", b) in values)})
    return (np.array([values[("base", b)] for b in blocks]), np.array([values[("candidate", b)] for b in blocks]))


#: The false-failure probability of each assertion about the truth below.
FALSE_FAILURE = 1e-4


def _wide(doc: dict, key: str) -> tuple[float, float]:
    """The paired interval of the ratio at 1 - FALSE_FAILURE from the study's own valid runs: as
    wide as the noise this study measured makes it. It holds the true ratio with probability
    1 - FALSE_FAILURE on a quiet host or a loaded one -- the loaded host widens it, it never
    skips it (no truth test skips because the host is busy: DESIGN.md, Conventions)."""
    base, new = _per_block(doc, key)
    interval = paired_log_interval(np.log(new) - np.log(base), 1 - FALSE_FAILURE)
    return math.exp(float(interval.low)), math.exp(float(interval.high))


def _decided(doc: dict, key: str, margin: float = 0.03) -> str | None:
    """The verdict the measured noise makes certain at FALSE_FAILURE, or None when the noise
    leaves it open. The study decides on a narrower interval (95%, or one its error control
    widens to at most 1 - 5e-2 / its family) inside this one, so when this interval lies inside
    the ±margin band the study's verdict is EQUIVALENT, and when it lies wholly beyond the band
    it is the claim on that side. On this host the paired differences' SD of ITR (S) is
    0.85-1.05% (1 s windows, three runs of both studies): half-widths of at most 2.1% (A/A, 10
    blocks) and 4.8% (the known cost, 6 blocks, about a 9% change), so both verdicts below are
    decided; a loaded host may leave them open, and the tests then still check the truth itself
    (the interval holds it) and say so."""
    low, high = _wide(doc, key)
    if 1 - margin <= low and high <= 1 / (1 - margin):
        return "EQUIVALENT"
    if high < 1 - margin:
        return "WORSE" if key == "itr_s" else "BETTER"
    if low > 1 / (1 - margin):
        return "BETTER" if key == "itr_s" else "WORSE"
    return None


def _undecided(doc: dict, key: str) -> None:
    """The verdict could not be checked: the test is marked expected-to-fail with the reason (it
    shows in the summary as xfailed), never passed quietly. Called after the truth was checked."""
    low, high = _wide(doc, key)
    pytest.xfail(f"{doc['name']}: the measured noise leaves the verdict open at {FALSE_FAILURE:g} "
                 f"({key} in [{low:.4f}, {high:.4f}]): the truth was checked, the verdict was not")


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("studies")
    store = tmp / "store"
    same, same_dir = _run_study(_study(tmp, CPU_MS, "identical", blocks=10), store)
    worse, worse_dir = _run_study(_study(tmp, CPU_MS + ADDED_MS, "known-added-cost"), store)
    return {"store": store, "same": same, "same_dir": same_dir, "worse": worse, "worse_dir": worse_dir}


def test_identical_configurations_are_equivalent(studies):
    doc = studies["same"]
    assert doc["status"] == "complete" and doc["format"] == 2 and len(doc["runs"]) == 20
    # the interleaved schedule: every block holds both configurations once
    blocks = {}
    for block, config in doc["design"]["schedule"]:
        blocks.setdefault(block, []).append(config)
    assert all(sorted(v) == ["base", "candidate"] for v in blocks.values()) and len(blocks) == 10
    itr = _metric(doc, "itr_s")
    assert itr["role"] == "primary" and itr["adjustment"] == "bonferroni" and itr["level"] == 0.95
    # the truth: identical configurations, a ratio of 1, inside the interval the noise allows
    low, high = _wide(doc, "itr_s")
    assert low <= 1.0 <= high, (low, high)
    if _decided(doc, "itr_s") is None:
        _undecided(doc, "itr_s")
    # a host quiet enough to decide: at 60% utilization, open loop with seeded Poisson arrivals
    # (the same wobble in every run), no run is read as unsteady -- the open-loop gate judges the
    # SUT, not the arrival count -- and the verdict is EQUIVALENT
    assert not any(r["exclusions"] for r in doc["runs"])
    assert itr["verdict"] == _decided(doc, "itr_s") == "EQUIVALENT", itr
    assert doc["verdict"]["exit_code"] == 0


def test_a_known_added_cost_is_worse_and_the_interval_holds_the_truth(studies):
    doc = studies["worse"]
    itr, pbt = _metric(doc, "itr_s"), _metric(doc, "pbt_cmd_s")
    # The truth, from the base's measured cost c (ms per transaction, perflab's own share
    # included): PBT/CMD goes from c to c + ADDED_MS, ITR by the inverse.
    base, new = _per_block(doc, "pbt_cmd_s")
    n = len(base)
    # The study prints a 95% interval, which misses the truth 5% of the time by construction;
    # the test recomputes the paired interval at 99.995% (false failure 5e-5) and allows for the
    # uncertainty of c itself (its own 99.995% t-interval from the base runs: another 5e-5).
    wide = paired_log_interval(np.log(new) - np.log(base), 1 - 5e-5)
    log_c = np.log(base)
    half = stats.t.ppf(1 - 2.5e-5, n - 1) * log_c.std(ddof=1) / math.sqrt(n)
    c_low, c_high = math.exp(log_c.mean() - half), math.exp(log_c.mean() + half)
    truth_low, truth_high = (c_high + ADDED_MS) / c_high, (c_low + ADDED_MS) / c_low
    assert math.exp(float(wide.low)) <= truth_high and truth_low <= math.exp(float(wide.high)), (wide, truth_low,
                                                                                                 truth_high)
    # and the study's own estimate is the paired ratio of those runs
    assert pbt["ratio"] == pytest.approx(math.exp(float(np.mean(np.log(new) - np.log(base)))), rel=1e-9)
    # The verdicts, where the measured noise decides them (a 9% change whose 1 - 1e-4 interval over
    # 6 blocks is +-4.8% at most at this host's noise: _decided); the truth above, whatever the noise.
    if _decided(doc, "itr_s") != "WORSE":
        _undecided(doc, "itr_s")
    assert itr["verdict"] == "WORSE", itr
    assert doc["verdict"]["exit_code"] == 1
    if _decided(doc, "pbt_cmd_s") == "WORSE":
        assert pbt["verdict"] == "WORSE", pbt   # lower is better: more CPU per command is worse
        # the primary claim stood, so the secondary family was tested, each row at 1 - 0.05/k: k
        # the directional secondary rows -- PBT/CMD (S), ETR (T), AVG LAST (T) and any per-component
        # row a run measured (counted from the study's rows, as the study counted them)
        k = sum(m["role"] == "secondary" and metric_info(m["key"])["direction"] in ("higher", "lower")
                for m in doc["comparisons"][0]["metrics"])
        assert k >= 3
        assert pbt["adjustment"] == "bonferroni" and pbt["level"] == pytest.approx(1 - 0.05 / k)

