"""A remote SUT's network link dropped for a few seconds in the middle of a measurement window
(issue 40): the SUT host's interface goes down in its namespace and comes back. The run is kept
with every transaction (the ones the outage held, with their whole wait: an HTTP transaction has
no deadline of the driver's, only target.timeout), and judged invalid with the reason -- whole
intervals of the window in which nothing completed (caveats.STALL_MIN_EXPECTED) -- by `perflab
run`'s exit code and `perflab runs`; no traceback. Before, the run was complete and valid."""

from __future__ import annotations

import json
import threading
import time

import pyarrow.parquet as pq
import pytest
from cli_helpers import perflab

from perflab.errors import EXIT_INVALID

OUTAGE_S = 3.0


@pytest.mark.parametrize("core", ["auto", "python"])  # the compiled loop, and the Python path
def test_a_link_dropped_mid_window_makes_the_run_invalid_with_the_reason(sut_host, tmp_path, core):
    workload = tmp_path / "w.yaml"
    workload.write_text("\n".join([
        "name: remote-link",
        "target: {kind: http, base_url: '%s', client: httptools}" % sut_host.base_url,
        "transactions: [{name: page, http: [{path: /index.html, expect_body: Welcome}]}]",
        "scripts: [{name: reader, steps: [page]}]",
        "think: 0.01",
        "load: {users: 2}",
        # a transaction the outage holds past a second is hung (the driver's deadline)
        "timing: {stagger: 0s, stabilization: 1s, measurement: 8s, deadline: 1s}",
        f"driver: {{core: {core}}}",
    ]) + "\n")
    store = tmp_path / "store"
    dropped: dict = {}

    def drop_the_link() -> None:
        deadline = time.monotonic() + 120
        while not list(store.glob("runs/*/live.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(3.0)   # into the window (stabilization 1 s): no assertion on when
        down = sut_host.host.run(["ip", "link", "set", "eth0", "down"])
        dropped["at"] = time.monotonic()
        time.sleep(OUTAGE_S)
        up = sut_host.host.run(["ip", "link", "set", "eth0", "up"])
        dropped["codes"] = (down.returncode, up.returncode)

    dropper = threading.Thread(target=drop_the_link)
    dropper.start()
    try:
        done = perflab("run", workload, "-q", store=store, timeout=300)
    finally:
        if not list(store.glob("runs/*/live.json")):   # refused before its window: end the wait
            (store / "runs" / "x").mkdir(parents=True, exist_ok=True)
            (store / "runs" / "x" / "live.json").touch()
        dropper.join()
    assert dropped.get("codes") == (0, 0), dropped
    assert "Traceback" not in done.stderr, done.stderr
    run_id = done.stdout.strip().splitlines()[-1]
    run = json.loads((store / "runs" / run_id / "run.json").read_text())
    assert done.returncode == EXIT_INVALID, done.stderr
    # kept whole: complete, every transaction stored -- the ones the outage held with their
    # whole wait -- and judged invalid by the one exclusion rule, with the stall as the reason
    assert run["status"] == "complete"
    tx = pq.read_table(store / "runs" / run_id / "transactions.parquet").to_pandas()
    held = tx[(tx["end"] - tx["actual_start"]) >= OUTAGE_S * 0.9]
    assert len(held) >= 1, (tx["end"] - tx["actual_start"]).max()
    listed = {r["run_id"]: r for r in json.loads(perflab("runs", "--json", store=store).stdout)}[run_id]
    assert listed["outcome"] == "invalid", listed
    assert any("no transaction completed from" in r and "stopped answering" in r for r in listed["outcome_reasons"]), \
        listed["outcome_reasons"]
