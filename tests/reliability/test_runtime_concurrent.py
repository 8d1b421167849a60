"""Two perflab runs on the same CPUs at once (issue 14): before, both were stored as valid with
no word of each other. Now each run registers the CPUs it uses in the store; a run that finds
another live run on any of its CPUs -- when it starts or when it ends -- is invalid with a caveat
naming the other, and the first run learns of the second too. A registration left by a dead
driver (SIGKILL) is ignored.

Not timed: the second run starts once the first run's window has begun (its live file exists)
and is short against the first's 60 s window, so the two overlap on any machine; the first is then
stopped with SIGINT (it is kept, interrupted).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from cli_helpers import PERFLAB, REPO, perflab, write_workload

WORKLOAD = """
name: concurrent
target: {kind: python}
transactions:
  - {name: t, call: "perflab.sut.synthetic:noop"}
scripts: [{name: s, steps: [t]}]
think: 0.05
load: {users: 1}
timing: {measurement: MEASUREs}
placement: {workers: 1}
"""


def caveats_of(run_dir) -> dict[str, dict]:
    run = json.loads((run_dir / "run.json").read_text())
    return {c["code"]: c for c in run["invalid"]}


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_runs_sharing_cpus_know_of_each_other(tmp_path, store):
    long = write_workload(tmp_path, WORKLOAD.replace("MEASURE", "60"), name="long.yaml")
    short = write_workload(tmp_path, WORKLOAD.replace("MEASURE", "1"), name="short.yaml")
    # a registration a SIGKILLed run left behind, on every CPU: its driver is gone, so it is ignored
    active = store / "active"
    active.mkdir(parents=True)
    (active / "20000101-000000-ghost-0000.json").write_text(json.dumps(
        {"run_id": "20000101-000000-ghost-0000", "pid": dead_pid(), "cpus": list(range(os.cpu_count()))}))
    alone = perflab("run", short, "-q", "--no-monitor", store=store)
    assert alone.returncode == 0, alone.stderr
    assert "concurrent_run" not in caveats_of(store / "runs" / alone.stdout.strip())

    env = {**os.environ, "PERFLAB_HOME": str(store)}
    first = subprocess.Popen([*PERFLAB, "run", str(long), "-q", "--no-monitor"], cwd=REPO, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(store.glob("runs/*concurrent*/live.json")):
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        second = perflab("run", short, "-q", "--no-monitor", store=store)
        first.send_signal(signal.SIGINT)
        first_out, first_err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode == 5, second.stderr  # complete, invalid: a concurrent run (errors.EXIT_INVALID)
    first_id, second_id = first_out.strip(), second.stdout.strip()
    assert first.returncode == 130, first_err

    seen_by_second = caveats_of(store / "runs" / second_id)["concurrent_run"]["values"]
    assert seen_by_second["run_ids"] == [first_id]
    assert seen_by_second["cpus"]
    seen_by_first = caveats_of(store / "runs" / first_id)["concurrent_run"]["values"]
    assert seen_by_first["run_ids"] == [second_id]
    assert json.loads((store / "runs" / second_id / "run.json").read_text())["valid"] is False
    # nothing stays registered once the runs are over (the ghost's stale file is cleared too)
    assert list(active.iterdir()) == []
