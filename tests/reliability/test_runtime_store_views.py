"""What the store shows after accidents (issue 14): `perflab compare` over a group holding an
abandoned run, and `perflab runs --rescan` after the catalog is lost.

Before: compare refused the whole group; a rebuilt catalog had a blank ETR (T) column. Now the
abandoned run is left out with a note naming it, and a rescan recomputes ETR (T) from the runs
it cannot take from the old catalog (the same reduction `perflab run` indexed, so the same value).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from cli_helpers import PERFLAB, REPO, noop_workload, perflab, write_workload

WORKLOAD = noop_workload("views")


def run(path, store, label: str) -> str:
    done = perflab("run", path, "-q", "--no-monitor", "--label", label, "--seed", "7", store=store)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def killed_run(path, store, label: str) -> str:
    """A run SIGKILLed inside its window: run.json stays `running`, its driver gone (abandoned)."""
    env = {**os.environ, "PERFLAB_HOME": str(store)}
    before = set((store / "runs").glob("*")) if (store / "runs").exists() else set()
    long = path.with_name("long.yaml")
    long.write_text(path.read_text().replace("1s", "60s"))
    proc = subprocess.Popen([*PERFLAB, "run", str(long), "-q", "--no-monitor", "--label", label], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        new = [p for p in (store / "runs").glob("*") if p not in before and (p / "live.json").exists()]
        if new:
            break
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    return new[0].name


def listed(store) -> dict[str, dict]:
    done = perflab("runs", "--json", store=store)
    assert done.returncode == 0, done.stderr
    return {r["run_id"]: r for r in json.loads(done.stdout)}


def test_compare_leaves_an_abandoned_run_out_with_a_note(tmp_path, store):
    path = write_workload(tmp_path, WORKLOAD)
    a = [run(path, store, "A") for _ in range(2)]
    b = [run(path, store, "B") for _ in range(2)]
    dead = killed_run(path, store, "B")
    assert listed(store)[dead]["status"] == "abandoned"
    for group_b in ("label:B", ",".join([*b, dead])):
        out = tmp_path / f"report-{len(group_b)}"
        done = perflab("compare", ",".join(a), group_b, "--out", out, store=store)
        assert "Traceback" not in done.stderr
        assert done.returncode != 2, done.stderr  # not refused as bad input
        doc = json.loads((out / "study.json").read_text())
        runs = {r["run_id"]: r for r in doc["runs"]}
        assert set(runs) >= {*a, *b}
        assert dead in doc_text_of(doc) and "abandoned" in doc_text_of(doc)


def doc_text_of(doc: dict) -> str:
    return json.dumps(doc)


def test_rescan_of_a_lost_catalog_keeps_etr(tmp_path, store):
    path = write_workload(tmp_path, WORKLOAD)
    ids = [run(path, store, "A") for _ in range(2)]
    before = listed(store)
    assert all(before[i]["etr_t"] is not None and before[i]["etr_t"] > 0 for i in ids)
    for suffix in ("", "-wal", "-shm"):
        (store / f"catalog.sqlite{suffix}").unlink(missing_ok=True)
    done = perflab("runs", "--rescan", "--json", store=store)
    assert done.returncode == 0, done.stderr
    after = {r["run_id"]: r for r in json.loads(done.stdout)}
    for i in ids:
        assert after[i]["etr_t"] == before[i]["etr_t"]
    # ... and a rescan over an intact catalog keeps them too
    done = perflab("runs", "--rescan", "--json", store=store)
    assert {r["run_id"]: r["etr_t"] for r in json.loads(done.stdout)} == {i: before[i]["etr_t"] for i in ids}
