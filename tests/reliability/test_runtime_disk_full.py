"""A full disk (issue 14), on a small tmpfs the test mounts (and unmounts after).

Before: raw sqlite/pyarrow tracebacks, and a run that filled the disk at its end stayed
"running". Now: one clear message, the run marked failed with the reason, the catalog intact
and readable once space is freed.

Nothing here is timed: the disk is filled once the run's window has begun (its live file
exists), so the run's own writes at its end meet a full disk whatever the machine's speed.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from cli_helpers import PERFLAB, REPO, perflab, write_workload

WORKLOAD = """
name: disk-full
target: {kind: python}
transactions:
  - {name: t, call: "perflab.sut.synthetic:noop"}
scripts: [{name: s, steps: [t]}]
load: {rate: 200}
timing: {measurement: 3s}
placement: {workers: 1}
"""


@pytest.fixture
def small_fs(tmp_path):
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(directory: Path) -> Path:
    """Fill the filesystem: write until ENOSPC."""
    filler = directory / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    with open(directory / "filler-small", "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 512)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def one_clear_line(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "No space left on device" in stderr, stderr


def catalog_intact(store: Path) -> dict[str, dict]:
    with sqlite3.connect(store / "catalog.sqlite") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    done = perflab("runs", "--json", store=store)
    assert done.returncode == 0, done.stderr
    return {r["run_id"]: r for r in json.loads(done.stdout)}


def test_a_disk_that_fills_during_a_run_fails_it_with_the_reason(tmp_path, small_fs):
    store = small_fs / "store"
    path = write_workload(tmp_path, WORKLOAD)
    env = {**os.environ, "PERFLAB_HOME": str(store)}
    proc = subprocess.Popen([*PERFLAB, "run", str(path), "-q", "--no-monitor"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(store.glob("runs/*/live.json")):
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() else ""
            time.sleep(0.05)
        filler = fill(small_fs)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    one_clear_line(stderr)
    assert proc.returncode == 1, stderr
    (run_dir,) = [p.parent for p in store.glob("runs/*/run.json")]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "failed"
    assert "No space left on device" in run["reason"]
    assert run["valid"] is False
    filler.unlink()
    (small_fs / "filler-small").unlink()
    listed = catalog_intact(store)
    assert listed[run_dir.name]["status"] == "failed"


def test_a_full_disk_before_a_run_is_one_message_and_the_store_keeps_its_runs(tmp_path, small_fs):
    store = small_fs / "store"
    path = write_workload(tmp_path, WORKLOAD.replace("3s", "1s"))
    first = perflab("run", path, "-q", "--no-monitor", store=store)
    assert first.returncode == 0, first.stderr
    fill(small_fs)
    second = perflab("run", path, "-q", "--no-monitor", store=store)
    assert second.returncode != 0
    one_clear_line(second.stderr)
    assert len(second.stderr.strip().splitlines()) == 1, second.stderr
    (small_fs / "filler").unlink()
    (small_fs / "filler-small").unlink()
    listed = catalog_intact(store)
    assert listed[first.stdout.strip()]["status"] == "complete"
    # the refused run left nothing that claims to be running
    assert all(r["status"] != "running" for r in listed.values())


STUDY = """
name: disk-full-study
workload: workload.yaml
configurations:
  - {name: a, set: {seed: 1}}
  - {name: b, set: {seed: 2}}
blocks: 3
"""


def test_a_disk_that_fills_during_a_study_stops_it_failed_with_the_reason(tmp_path, small_fs):
    """Issue 40: the store's disk fills in the window of a study's third run. That run is kept
    (failed with the reason, unless its record fit in its reserve); the study stops at the next
    run it cannot store -- one line, exit 1
    (not 2: the study file was good), study.json marking it failed with the reason and the runs
    measured; the runs before stay complete and listed."""
    store = small_fs / "store"
    write_workload(tmp_path, WORKLOAD.replace("3s", "2s"))
    study = write_workload(tmp_path, STUDY, name="study.yaml")
    env = {**os.environ, "PERFLAB_HOME": str(store)}
    proc = subprocess.Popen([*PERFLAB, "study", str(study), "--no-monitor"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not _in_window_of_run(store, order=2):
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() else ""
            time.sleep(0.05)
        fill(small_fs)
        _, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    one_clear_line(stderr)
    assert proc.returncode == 1, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "the study stopped: study.json marks it failed, with the 3 runs measured" \
        in last, last
    (study_dir,) = store.glob("studies/*")
    doc = json.loads((study_dir / "study.json").read_text())
    assert doc["status"] == "failed" and "No space left on device" in doc["reason"], doc["reason"]
    # the run in whose window the disk filled: its last record fits in the space each run keeps
    # for it (drive/lifecycle.py's reserve), so it is complete, or else failed with the reason
    assert [r["status"] for r in doc["runs"][:2]] == ["complete", "complete"] and len(doc["runs"]) == 3
    third = doc["runs"][2]
    assert third["status"] == "complete" or (
        "No space left on device" in third["reason"] and third["exclusions"][0]["code"] == "run_not_complete"), third
    for leftover in ("filler", "filler-small"):
        (small_fs / leftover).unlink()
    listed = catalog_intact(store)
    assert {r["run_id"]: r["status"] for r in doc["runs"]} == {k: v["status"] for k, v in listed.items()}


def _in_window_of_run(store: Path, order: int) -> bool:
    for path in store.glob("runs/*/run.json"):
        try:
            run = json.loads(path.read_text())
        except ValueError:   # being replaced
            continue
        if (run.get("config") or {}).get("order") == order and (path.parent / "live.json").exists():
            return True
    return False
