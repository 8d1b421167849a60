"""A run whose SUT host's monitor was lost mid-window shows "monitor lost" -- not a plain
"complete" -- in `perflab runs`, and exits 0: the exclusion rule does not exclude it, its (T)
rows stand, and its (S)/(H) rows are na where the monitor left them uncovered (issue 25)."""

from __future__ import annotations

import json
import threading
import time

from cli_helpers import perflab

from perflab.errors import EXIT_OK

from .conftest import AGENT_PORT, start_agent


def test_a_run_that_lost_its_monitor_shows_monitor_lost(sut_host, tmp_path):
    port = AGENT_PORT + 3
    url = start_agent(sut_host.host, port, sut_host.token, tmp_path / "agent3.log", "--pid-match", "^nginx")
    agent = sut_host.host.processes[-1]
    # Paced by a think time: four unpaced users against nginx saturate the driver (the run is then
    # invalid for that, exit 5, and the lost monitor is not what the outcome says).
    workload = sut_host.workload(tmp_path / "w.yaml", "{agent: '%s', token: %s}" % (url, sut_host.token),
                                 measurement="4s", extra="think: {dist: exponential, mean: 0.002}")
    store = tmp_path / "store"

    def kill_agent_in_the_window() -> None:
        # Once the run is stored (its monitor probed), about two seconds into the 4 s window
        # (stabilization 1 s); no assertion on when.
        deadline = time.monotonic() + 60
        while not list(store.glob("runs/*/run.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(3.0)
        sut_host.host.stop(agent, timeout=5)

    killer = threading.Thread(target=kill_agent_in_the_window)
    killer.start()
    try:
        done = perflab("run", workload, "-q", store=store, timeout=120)
    finally:
        killer.join()
    assert done.returncode == EXIT_OK, done.stderr
    run_id = done.stdout.strip().splitlines()[-1]
    run = json.loads((store / "runs" / run_id / "run.json").read_text())
    assert run["status"] == "complete" and run["sut"]["host"]["lost_at"] is not None
    assert "monitor lost" in done.stderr
    listed = {r["run_id"]: r for r in json.loads(perflab("runs", "--json", store=store).stdout)}[run_id]
    assert listed["outcome"] == "monitor_lost" and listed["judged"] is True
    assert "stopped answering" in listed["outcome_reasons"][0]
