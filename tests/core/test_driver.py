"""The driver against real SUTs: laws it must obey, determinism, open-loop fidelity, failures."""

from __future__ import annotations

import math
import signal
import subprocess
import time

import numpy as np
import programs
import pytest
from cli_helpers import PERFLAB, REPO, in_window, load_run, perflab, run_dir_of, write_workload

PY_NOOP = """
name: noop-{tag}
target: {{kind: python}}
transactions:
  - {{name: a, class: trivial, call: "perflab.sut.synthetic:noop"}}
  - {{name: b, class: nontrivial, call: "perflab.sut.synthetic:work", kwargs: {{cpu_ms: 0.2}}}}
scripts:
  - {{name: s1, weight: 3, steps: [a, b, a]}}
  - {{name: s2, weight: 1, steps: [b]}}
think: {think}
load: {load}
timing: {{stagger: 0, stabilization: 0.5s, measurement: {measure}}}
placement: {{workers: {workers}}}
seed: {seed}
"""


def py_workload(tmp_path, tag="x", think="{dist: exponential, mean: 0.005}", load="{users: 4}", measure="3s",
                workers=2, seed=1, name="w.yaml"):
    return write_workload(tmp_path, PY_NOOP.format(tag=tag, think=think, load=load, measure=measure,
                                                   workers=workers, seed=seed), name)


def run_ok(path, store, *args, code=0):
    """A run that ends with exit `code` (5: complete, but its error rate excludes it -- a
    workload that fails transactions on purpose)."""
    result = perflab("run", path, "-q", *args, store=store)
    assert result.returncode == code, result.stderr
    return load_run(run_dir_of(store, result.stdout.strip().splitlines()[-1]))


def _stall_start(tx) -> float:
    """When the SUT's one-second stall began, on the run's clock: 2.5 s after its first
    transaction (synthetic:freeze's after_s), whenever the run's start-up let that be."""
    return float(tx.actual_start.min()) + 2.5


def test_closed_loop_obeys_littles_law(tmp_path, store):
    run, tx = run_ok(REPO / "examples/debit-credit.yaml", store, "--users", "6", "--duration", "4s")
    assert run["status"] == "complete" and run["valid"], run["invalid"]
    w = in_window(run, tx[tx.ok])
    seconds = run["window"]["end"] - run["window"]["start"]
    etr = len(w) / seconds
    response = (w.end - w.intended_start).mean()
    think = w.think.mean()
    predicted = run["config"]["users"] / (think + response)
    # Edge effect: transactions straddling the window ends count in one estimate, not the
    # other; at most one cycle per user over the window.
    tolerance = max(0.02, run["config"]["users"] * (think + response) / seconds / len(w) * 2)
    assert etr == pytest.approx(predicted, rel=tolerance)
    assert len(w) > 500


def test_same_seed_same_sequence(tmp_path, store):
    path = py_workload(tmp_path, think="{dist: bactrian, mean: 0.01}", seed=11)
    sequences = []
    for _ in range(2):
        _, tx = run_ok(path, store)
        per_user = {u: list(zip(g.script, g.transaction, g.think.round(12))) for u, g in tx.groupby("user")}
        sequences.append(per_user)
    a, b = sequences
    assert set(a) == set(b) == {0, 1, 2, 3}
    for user in a:
        n = min(len(a[user]), len(b[user]))
        assert n > 50
        assert a[user][:n] == b[user][:n]  # same script choices and think times, in order
    other_path = py_workload(tmp_path, think="{dist: bactrian, mean: 0.01}", seed=12, name="w2.yaml")
    _, other = run_ok(other_path, store)
    first = list(other[other.user == 0].think.round(12))[:20]
    assert first != [t for *_, t in a[0][:20]]


def test_script_mix_follows_weights(tmp_path, store):
    _, tx = run_ok(py_workload(tmp_path, think="0", measure="3s"), store)
    starts = tx[tx.transaction.eq("b") & tx.script.eq("s2")]
    scripts_s1 = (tx.script == "s1").sum() / 3  # s1 has three steps
    share_s2 = len(starts) / (len(starts) + scripts_s1)
    n = len(starts) + scripts_s1
    assert share_s2 == pytest.approx(0.25, abs=4 * math.sqrt(0.25 * 0.75 / n) + 0.01)


def test_open_loop_constant_rate_held(tmp_path, store):
    path = py_workload(tmp_path, load="{rate: 200, arrival: constant}", measure="5s", tag="open")
    run, tx = run_ok(path, store)
    w = run["window"]
    started = tx[(tx.intended_start >= w["start"]) & (tx.intended_start < w["end"]) & tx.script.eq("s2")]
    arrivals = tx[(tx.intended_start >= w["start"]) & (tx.intended_start < w["end"])].groupby(["user"]).size()
    rate = len(arrivals) / (w["end"] - w["start"])
    assert rate == pytest.approx(200, rel=0.01)
    assert (tx.actual_start >= tx.intended_start - 1e-6).all()
    assert not tx.error.str.startswith("dropped").fillna(False).any()
    assert len(started) > 0


def test_open_loop_poisson_rate_within_sampling_noise(tmp_path, store):
    path = py_workload(tmp_path, load="{rate: 300}", measure="5s", tag="poisson")
    run, tx = run_ok(path, store)
    w = run["window"]
    seconds = w["end"] - w["start"]
    n = tx[(tx.intended_start >= w["start"]) & (tx.intended_start < w["end"])].user.nunique()
    expected = 300 * seconds
    # False failure for any seed, both assertions: <= 5e-5. The count is Poisson (sd = sqrt(mean)):
    # beyond 4.5 sd, 6.8e-6. Exponential gaps have CV 1; the CV of 1,500 of them (the fewest a
    # 5 s window at 300/s gives; more gaps narrow it) is skewed right, sd 0.026: beyond +-0.12,
    # 4.0e-5 in 200,000 simulated windows (+-0.1 was 2.2e-4).
    assert abs(n - expected) < 4.5 * math.sqrt(expected)
    gaps = np.diff(np.sort(tx.groupby("user").intended_start.min().to_numpy()))
    cv = gaps.std() / gaps.mean()
    assert cv == pytest.approx(1.0, abs=0.12)


def test_open_loop_shows_a_stall_in_response_times(tmp_path, store):
    text = """
    name: stall
    target: {kind: python}
    transactions:
      - {name: t, call: "perflab.sut.synthetic:freeze", kwargs: {after_s: 2.5, for_s: 1.0}}
    scripts: [{name: s, steps: [t]}]
    load: {rate: 50, arrival: constant}
    timing: {measurement: 5s}
    placement: {workers: 1}
    """
    run, tx = run_ok(write_workload(tmp_path, text), store)
    response = tx.end - tx.intended_start
    stall_start = _stall_start(tx)
    stall_end = stall_start + 1.0
    during = tx[(tx.intended_start >= stall_start + 0.02) & (tx.intended_start < stall_end - 0.02)]
    # 50 arrivals a second keep arriving during the one-second stall ...
    assert 40 <= len(during) <= 50
    # ... and each one's response time, from its intended start, contains the rest of the stall.
    waited = response[during.index]
    assert (waited >= (stall_end - during.intended_start) - 0.02).all()
    assert response.max() == pytest.approx(1.0, abs=0.1)
    # the driver kept its schedule while the SUT was stalled (open loop, no omission): the
    # arrivals during the stall were issued on time, not held back until it ended (a bound of a
    # quarter of the stall, so a loaded host cannot fail a law about the driver's design)
    assert (during.actual_start - during.intended_start).max() < 0.25


def test_in_flight_cap_drops_and_counts(tmp_path, store):
    text = """
    name: cap
    target: {kind: python}
    transactions:
      - {name: t, call: "perflab.sut.synthetic:freeze", kwargs: {after_s: 2.5, for_s: 1.0}}
    scripts: [{name: s, steps: [t]}]
    load: {rate: 100, arrival: constant, max_in_flight: 10}
    timing: {measurement: 5s}
    placement: {workers: 1}
    """
    # the dropped arrivals are errors (about 18% of the window's): the run is complete, and its
    # error rate excludes it (exit 5)
    run, tx = run_ok(write_workload(tmp_path, text), store, code=5)
    dropped = tx[tx.error.fillna("").str.startswith("dropped")]
    assert run["driver"]["dropped"] == len(dropped)
    # Arrivals during the stall beyond the 10 allowed in flight are dropped, none queued.
    stall_start = _stall_start(tx)
    during = tx[(tx.intended_start >= stall_start + 0.05) & (tx.intended_start < stall_start + 0.95)]
    assert len(during) >= 80  # the schedule kept arriving at 100/s
    assert len(dropped) >= len(during) - 10
    assert (tx.groupby(tx.ok).size().get(True, 0)) > 0


def test_sut_crash_marks_run_failed_and_keeps_transactions(tmp_path, store):
    text = """
    name: crash
    target: {kind: python}
    transactions:
      - {name: t, call: "perflab.sut.synthetic:crash_after", kwargs: {calls: 40}}
    scripts: [{name: s, steps: [t]}]
    think: 0.005
    load: {users: 2}
    timing: {measurement: 5s}
    placement: {workers: 1}
    """
    result = perflab("run", write_workload(tmp_path, text), "-q", store=store)
    assert result.returncode == 1
    run, tx = load_run(run_dir_of(store, result.stdout.strip().splitlines()[-1]))
    assert run["status"] == "failed"
    assert "died" in run["reason"] and "exit code 3" in run["reason"]
    assert tx.ok.sum() == 39  # the transactions before the crash are kept
    assert not run["valid"]


def test_command_adapter_records_wait4_cpu_and_exit_status(tmp_path, store):
    burn = "import time; t=time.process_time()\nwhile time.process_time()-t<0.02: pass"
    text = f"""
    name: jobs
    target: {{kind: command}}
    transactions:
      - name: job
        class: batch
        command: ["python3", "-c", "{burn.replace(chr(10), '; ') if False else 'import time,sys; t=time.process_time(); [0 for _ in iter(lambda: time.process_time()-t<0.02, False)]; sys.exit({code})'}"]
        params: {{code: {{choice: [0, 0, 0, 3]}}}}
    scripts: [{{name: s, steps: [job]}}]
    load: {{users: 1}}
    timing: {{measurement: 3s}}
    placement: {{workers: 1}}
    """
    run, tx = run_ok(write_workload(tmp_path, text), store, code=5)  # a quarter of the jobs fail: exit 5
    assert tx.cpu_user.notna().all()
    assert (tx.cpu_user + tx.cpu_sys >= 0.019).all()  # each job burnt 20 ms of its own CPU
    errors = tx[~tx.ok]
    assert len(errors) > 0 and errors.error.str.contains("exit status 3").all()
    assert 0.1 < len(errors) / len(tx) < 0.45


def test_sqlite_two_releases(tmp_path, store):
    base = (REPO / "examples/debit-credit.yaml").read_text()
    versions = {}
    for driver in ("stdlib", "apsw"):
        path = tmp_path / f"dc-{driver}.yaml"
        path.write_text(base.replace("driver: stdlib", f"driver: {driver}"))
        run, tx = run_ok(path, store, "--duration", "2s")
        assert run["status"] == "complete"
        assert tx.ok.all() and len(tx) > 100
        versions[driver] = run["fingerprint"]["sut_version"]
    assert versions["stdlib"].startswith("SQLite 3.")
    assert versions["apsw"].startswith("SQLite 3.") and "apsw" in versions["apsw"]
    assert versions["stdlib"].split()[1] != versions["apsw"].split()[1]


def _start(path, store):
    import os

    env = {**os.environ, "PERFLAB_HOME": str(store)}
    return subprocess.Popen([*PERFLAB, "run", str(path), "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=REPO)


def _wait_for_run_dir(store, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        dirs = list((store / "runs").glob("*/run.json")) if (store / "runs").exists() else []
        if dirs:
            return dirs[0].parent
        time.sleep(0.1)
    raise AssertionError("no run directory appeared")


def _wait_for_transactions(run_dir, timeout=30):
    """Until the run has been measuring for a while: its transactions reach the spill file (every
    4096 rows) or -- the users are fast -- a few seconds after its clock started. The run
    directory appears before the SUT's workers are up, and a loaded host takes seconds to start
    them: a signal sent then interrupts a run that has not measured anything yet."""
    import json

    deadline = time.time() + timeout
    while time.time() < deadline:
        record = json.loads((run_dir / "run.json").read_text())
        t0 = (record.get("clock") or {}).get("t0_epoch")
        if (run_dir / "transactions.spill").exists() or (t0 and time.time() > t0 + 3.0):
            return
        time.sleep(0.1)
    raise AssertionError("the run did not start measuring")


def test_sigterm_leaves_a_readable_interrupted_run(tmp_path, store):
    proc = _start(py_workload(tmp_path, measure="30s"), store)
    run_dir = _wait_for_run_dir(store)
    _wait_for_transactions(run_dir)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    run, tx = load_run(run_dir)
    assert run["status"] == "interrupted" and "SIGTERM" in run["reason"]
    assert len(tx) > 0
    assert run["window"]["end"] <= tx.end.max() + 1e-9


def test_sigkill_leaves_the_catalog_working(tmp_path, store):
    proc = _start(py_workload(tmp_path, measure="30s"), store)
    run_dir = _wait_for_run_dir(store)
    time.sleep(2)
    proc.kill()
    proc.wait(timeout=10)
    time.sleep(0.5)
    result = perflab("runs", "--json", store=store)
    assert result.returncode == 0, result.stderr
    import json

    rows = json.loads(result.stdout)
    assert [r["status"] for r in rows if r["run_id"] == run_dir.name] == ["abandoned"]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "running"


@programs.needs("valgrind")
def test_valgrind_mode_counts_instructions_per_command(tmp_path, store):

    text = """
    name: pathlength
    target: {kind: command, valgrind: true, env: {PYTHONHASHSEED: "0"}}
    transactions:
      - {name: small, class: trivial, command: ["/bin/true"]}
      - {name: big, class: nontrivial, command: ["/bin/sh", "-c", "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done"]}
    scripts: [{name: s, steps: [small, big]}]
    load: {users: 1}
    timing: {measurement: 4s}
    placement: {workers: 1}
    """
    run, tx = run_ok(write_workload(tmp_path, text), store)
    small = tx[tx.transaction == "small"].instructions
    big = tx[tx.transaction == "big"].instructions
    assert len(small) >= 2 and small.notna().all() and big.notna().all()
    # the same program with the same input executes the same instructions every time
    assert small.nunique() == 1
    assert big.min() > small.max() * 2  # a loop of 2000 iterations costs more than /bin/true
    result = perflab("show", run["run_id"], "--json", store=store)
    import json

    values = json.loads(result.stdout)["values"]
    inside = in_window(run, tx[tx.ok])
    assert values["instr_cmd_i"] == pytest.approx(inside.instructions.mean(), rel=1e-9)
