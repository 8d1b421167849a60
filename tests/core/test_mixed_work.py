"""Mixed work: online users and a job stream in one run, each with its own per-class rows; a
bad mixed load refused with its line."""

from __future__ import annotations

import json

import pytest
from cli_helpers import in_window, load_run, perflab, run_dir_of, write_workload

from perflab.workload.loader import load_workload

RUN = """
name: mixed
target: {kind: python}
transactions:
  - {name: look, class: online, call: "time:sleep", args: [0.002]}
  - {name: report, class: batch, call: "time:sleep", args: [0.2]}
scripts:
  - {name: teller, steps: [look]}
  - {name: job, steps: [report]}
think: 0.05
load:
  users: 3
  batch: {scripts: [job], initiators: 1, jobs: 5}
timing: {stagger: 0s, stabilization: 0s, measurement: 2s}
"""


def test_users_and_a_job_stream_run_together_with_rows_per_class(tmp_path, store):
    result = perflab("run", write_workload(tmp_path, RUN), "-q", store=store)
    assert result.returncode == 0, result.stderr
    run_id = result.stdout.strip().splitlines()[-1]
    run, tx = load_run(run_dir_of(store, run_id))
    online, batch = tx[tx["class"] == "online"], tx[tx["class"] == "batch"]
    # The stream stopped after its 5 jobs, run one at a time by one initiator, recorded under
    # the number after the users'; the users never ran a job and the jobs never a user's script.
    assert len(batch) == 5 and set(batch.user) == {3} and set(batch.script) == {"job"}
    assert set(online.user) == {0, 1, 2} and set(online.script) == {"teller"}
    starts = batch.actual_start.sort_values().to_numpy()
    assert (starts[1:] - starts[:-1] >= 0.2).all()  # one initiator: a job starts after the last one ended
    assert (batch.end - batch.intended_start >= 0.2).all()
    # The jobs ran while the users did: the first job started with the run, not after the users.
    assert starts[0] < online.actual_start.min() + 0.5
    per_class = json.loads(perflab("show", run_id, "--json", store=store).stdout)["per_class"]
    assert set(per_class) == {"online", "batch"}
    assert per_class["batch"]["tx_ok"] == len(in_window(run, batch[batch.ok])) == 5
    assert per_class["batch"]["avg_last_t"] >= 0.2
    assert per_class["online"]["tx_ok"] == len(in_window(run, online[online.ok])) > 10
    assert 0.002 <= per_class["online"]["avg_last_t"] < per_class["batch"]["avg_last_t"]


MIXED = """
name: mixed
target: {kind: python}
transactions:
  - {name: a, call: "perflab.sut.synthetic:noop"}
  - {name: j, class: batch, call: "perflab.sut.synthetic:noop"}
scripts:
  - {name: online, steps: [a]}
  - {name: job, steps: [j]}
load:
  users: 2
  batch: {scripts: [job], initiators: 2}
"""


@pytest.mark.fast
@pytest.mark.parametrize("old, new, line, needle", [
    ("scripts: [job]", "scripts: [jobs]", 11, "unknown script 'jobs'"),
    ("scripts: [job]", "scripts: [job, online]", 11, "a script of their own"),
    ("initiators: 2", "initiators: 0", 11, "initiators"),
])
def test_bad_mixed_work_is_refused_with_the_line(tmp_path, old, new, line, needle):
    path = write_workload(tmp_path, MIXED.replace(old, new))
    result = perflab("validate", path)
    assert result.returncode == 2, result.stdout
    assert f"{path}:{line}" in result.stderr and needle in result.stderr and "Traceback" not in result.stderr


def test_mixed_work_loads_and_gives_each_side_its_scripts(tmp_path):
    from perflab.drive.load.mix import compile_scripts, sub_mix

    workload = load_workload(write_workload(tmp_path, MIXED))
    compiled = compile_scripts(workload)
    users, _ = sub_mix(workload, compiled.scripts, {"job"}, inside=False)
    jobs, _ = sub_mix(workload, compiled.scripts, {"job"}, inside=True)
    assert [s.index for s in users] == [0] and [s.index for s in jobs] == [1]


@pytest.mark.fast
def test_a_rate_instead_of_users_is_refused_for_mixed_work(tmp_path, store):
    result = perflab("run", write_workload(tmp_path, MIXED), "--rate", "5", store=store)
    assert result.returncode == 2 and "--rate" in result.stderr and "Traceback" not in result.stderr, result.stderr


STUDY = """
name: mixed-study
workload: workload.yaml
configurations:
  - name: alone
    set: {load.batch: null, scripts.job.weight: 0}
  - name: with batch
    set: {}
blocks: 3
seed: 1
timing: {stagger: 0s, stabilization: 0s, measurement: 1s}
gate_metrics: [avg_last_t.online]
metrics: [avg_last_t.online, avg_last_t.batch, itr_s]
"""


def test_a_study_judges_a_class_row_as_its_primary_metric(tmp_path, store):
    """`<metric>.<class>` names a row of the class table: the online response time alone and
    with a job stream beside it, compared with an interval; the batch row, measured only with
    the stream, has no comparison. What is checked is the class row's way through a study (its
    label, role and interval, the batch row's missing comparison), not a verdict: 1 s windows (the
    users complete ~170 transactions a second, the stream ~5 jobs) in the 3 blocks a comparison
    needs at least."""
    write_workload(tmp_path, RUN.replace("  batch: {scripts: [job], initiators: 1, jobs: 5}\n",
                                         "  batch: {scripts: [job], initiators: 1}\n"))
    study = write_workload(tmp_path, STUDY, name="study.yaml")
    result = perflab("study", study, store=store, timeout=300)
    assert result.returncode == 0, result.stderr
    report = next(store.glob("**/study.json"))
    doc = json.loads(report.read_text())
    runs = doc["runs"]
    assert all(r["metrics"].get("avg_last_t.online", 0) >= 0.002 for r in runs)
    assert all(("avg_last_t.batch" in r["metrics"]) == (r["config"] == "with batch") for r in runs)
    rows = {m["key"]: m for m in doc["comparisons"][0]["metrics"]}
    online = rows["avg_last_t.online"]
    assert online["role"] == "primary" and online["label"] == "online AVG LAST (T)"
    assert online["verdict"] is not None and online["ci_low"] is not None
    assert rows["avg_last_t.batch"]["verdict"] is None
    assert doc["verdict"]["primary"][0]["key"] == "avg_last_t.online"


@pytest.mark.fast
def test_the_mixed_examples_validate_and_a_bad_class_key_is_refused(tmp_path):
    from cli_helpers import REPO

    for path in sorted((REPO / "examples" / "mixed").glob("*.yaml")):
        result = perflab("validate", path)
        assert result.returncode == 0, result.stderr
    write_workload(tmp_path, MIXED)
    study = write_workload(tmp_path, STUDY.replace("avg_last_t.online]\nmetrics", "avg_lst_t.online]\nmetrics"),
                           name="study.yaml")
    result = perflab("validate", study)
    assert result.returncode == 2 and f"{study}:11" in result.stderr and "<key>.<class>" in result.stderr, result.stderr
    # a known row of a class the workload does not have: refused with its line, the classes named
    write_workload(tmp_path, RUN)
    study = write_workload(tmp_path, STUDY.replace("avg_last_t.online]\nmetrics", "avg_last_t.onlin]\nmetrics"),
                           name="study.yaml")
    result = perflab("validate", study)
    assert result.returncode == 2 and f"{study}:11" in result.stderr, result.stderr
    assert "no class 'onlin'" in result.stderr and "batch, online" in result.stderr and "Traceback" not in result.stderr
