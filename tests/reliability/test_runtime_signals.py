"""Signals during a run (issue 14): SIGTERM while the SUT is being set up, SIGINT in the window,
and the cgroups a SIGKILLed run leaves behind.

Before: SIGTERM during set-up killed perflab at once and left the run "running" (shown as
abandoned); Ctrl-C ended the run gracefully but `perflab run` exited 0; a SIGKILLed run left up
to three cgroup directories that nothing removed. Now the run is stored and marked interrupted,
the command exits 130, and the next run removes the dead run's cgroups.

No timing is asserted: the set-up sleeps 60 s, so a SIGTERM sent once run.json exists arrives
during set-up whatever the machine's speed; the window is 60 s, so a SIGINT sent once the
first transaction is recorded arrives inside it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli_helpers import PERFLAB, REPO, perflab, write_workload
from proc_helpers import TAG_VARIABLE, new_tag, tagged_pids

SLOW_SETUP = """
import time

def setup():
    time.sleep(60)
"""

SETUP_WORKLOAD = """
name: slow-setup
target: {kind: python, setup: "slowsetup:setup"}
transactions:
  - {name: t, call: "perflab.sut.synthetic:noop"}
scripts: [{name: s, steps: [t]}]
think: 0.05
load: {users: 1}
timing: {measurement: 2s}
placement: {workers: 1}
"""

LONG_WINDOW = """
name: long-window
target: {kind: python}
transactions:
  - {name: t, call: "perflab.sut.synthetic:noop"}
scripts: [{name: s, steps: [t]}]
think: 0.05
load: {users: 2}
timing: {measurement: 60s}
placement: {workers: 1}
"""


def start(path: Path, store: Path, tag: str, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PERFLAB_HOME": str(store), TAG_VARIABLE: tag}
    return subprocess.Popen([*PERFLAB, "run", str(path), "-q", *extra], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(condition, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen within {timeout:g} s")


def only_run(store: Path) -> Path:
    runs = list((store / "runs").glob("*/run.json"))
    return runs[0].parent if len(runs) == 1 else None


def listed(store: Path) -> dict[str, dict]:
    done = perflab("runs", "--json", store=store)
    assert done.returncode == 0, done.stderr
    return {r["run_id"]: r for r in json.loads(done.stdout)}


def test_sigterm_during_setup_marks_the_run_interrupted(tmp_path, store):
    (tmp_path / "slowsetup.py").write_text(SLOW_SETUP)
    path = write_workload(tmp_path, SETUP_WORKLOAD)
    tag = new_tag()
    proc = start(path, store, tag, "--no-monitor")
    try:
        run_dir = wait_for(lambda: only_run(store), "the run's directory")
        wait_for(lambda: (run_dir / "run.json").exists(), "run.json")
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, stderr
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "interrupted", stderr
    assert "SIGTERM" in run["reason"]
    assert run["valid"] is False
    assert listed(store)[run_dir.name]["status"] == "interrupted"
    assert tagged_pids(tag) == []


def test_sigint_in_the_window_keeps_the_run_and_exits_130(tmp_path, store):
    path = write_workload(tmp_path, LONG_WINDOW)
    tag = new_tag()
    proc = start(path, store, tag, "--no-monitor")
    try:
        run_dir = wait_for(lambda: only_run(store), "the run's directory")
        wait_for(lambda: (run_dir / "live.json").exists(), "the run's live file")
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert stdout.strip() == run_dir.name  # the run id is still printed: the run is stored
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "interrupted"
    assert "SIGINT" in run["reason"]
    assert (run_dir / "transactions.parquet").exists()
    assert listed(store)[run_dir.name]["status"] == "interrupted"


def sut_cgroup_dirs(run_id: str) -> list[Path]:
    from perflab.sut.cgroup import stale_candidates

    return [d for d in stale_candidates() if d.name == run_id]


def test_the_next_run_removes_the_cgroups_of_a_killed_run(tmp_path, store):
    from perflab.sut.cgroup import SutCgroup

    probe, reason = SutCgroup.try_create(f"perflab-probe-{os.getpid()}")
    if probe is None:
        pytest.skip(f"no cgroup can be made here: {reason}")
    probe.remove()
    path = write_workload(tmp_path, LONG_WINDOW)
    tag = new_tag()
    proc = start(path, store, tag, "--no-monitor")
    try:
        run_dir = wait_for(lambda: only_run(store), "the run's directory")
        wait_for(lambda: (run_dir / "live.json").exists(), "the run's live file")
        assert sut_cgroup_dirs(run_dir.name), "the run made no cgroup"
        proc.kill()
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    # the workers die with the driver (they are what kept the cgroups busy)
    wait_for(lambda: not tagged_pids(tag), "the killed run's workers exiting", timeout=30)
    assert sut_cgroup_dirs(run_dir.name), "the killed run's cgroups are left behind"
    short = write_workload(tmp_path, LONG_WINDOW.replace("60s", "1s"), name="short.yaml")
    done = perflab("run", short, "-q", "--no-monitor", store=store)
    assert done.returncode == 0, done.stderr
    assert sut_cgroup_dirs(run_dir.name) == []
    assert listed(store)[run_dir.name]["status"] == "abandoned"
