"""A hung SUT (issue 14): a python call that never returns and a command without a timeout.

Before: the run was complete and valid with 0 errors, took 40 s for a 3 s window, and the hung
command outlived perflab. Now every transaction has a deadline; past it the transaction is an
error naming the deadline, its worker (or the command's process group) is killed, the run ends
a deadline after its window, and it is invalid.

The bounds are laws, not timings: each simulated user's first transaction starts at t = 0 and
sleeps 1000 s, so it is past its 2 s deadline inside a 3 s window whatever the machine's speed;
the run's duration is bounded by window + deadline + worker restart + stopping, and 30 s of slack
covers any machine (the defect took 40 s).
"""

from __future__ import annotations

import json
import time

import pyarrow.parquet as pq
import pytest
from cli_helpers import perflab, run_dir_of, write_workload
from proc_helpers import TAG_VARIABLE, new_tag, tagged_pids

from perflab.drive.load.engine import TIMER_TICK_S
from perflab.errors import EXIT_INVALID

MEASUREMENT_S = 3.0
DEADLINE_S = 2.0
USERS = 2

PYTHON = f"""
name: hung-python
target: {{kind: python}}
transactions:
  - {{name: hang, call: "time:sleep", args: [1000], timeout: {DEADLINE_S:g}s}}
scripts: [{{name: s, steps: [hang]}}]
think: 0.1
load: {{users: {USERS}}}
timing: {{measurement: {MEASUREMENT_S:g}s}}
placement: {{workers: {USERS}}}
"""

# No `timeout:` on the transaction: the workload's default deadline applies.
COMMAND = f"""
name: hung-command
target: {{kind: command}}
transactions:
  - {{name: hang, command: [sleep, "1000.{{tag}}"]}}
scripts: [{{name: s, steps: [hang]}}]
think: 0.1
load: {{users: {USERS}}}
timing: {{measurement: {MEASUREMENT_S:g}s, deadline: {DEADLINE_S:g}s}}
placement: {{workers: {USERS}}}
"""


@pytest.mark.parametrize("text", [PYTHON, COMMAND], ids=["python-call", "command"])
def test_hung_transactions_are_errors_killed_on_time_and_the_run_invalid(tmp_path, store, monkeypatch, text):
    tag = new_tag()
    monkeypatch.setenv(TAG_VARIABLE, tag)
    path = write_workload(tmp_path, text.replace("{tag}", str(int(tag[:6], 16))))
    started = time.monotonic()
    done = perflab("run", path, "--no-monitor", "-q", "--seed", "1", store=store, timeout=120)
    elapsed = time.monotonic() - started
    assert done.returncode == EXIT_INVALID, done.stderr  # complete, invalid: hung
    assert elapsed < MEASUREMENT_S + 30.0, f"a {MEASUREMENT_S:g} s window took {elapsed:.1f} s"

    run_dir = run_dir_of(store, done.stdout.strip().splitlines()[-1])
    run = json.loads((run_dir / "run.json").read_text())
    tx = pq.read_table(run_dir / "transactions.parquet").to_pandas()
    hung = tx[tx["error"].fillna("").str.contains(f"deadline {DEADLINE_S:g} s exceeded", regex=False)]
    # every user's first transaction hangs at t ~ 0 and is past its deadline inside the window
    assert len(hung) >= USERS
    assert not tx["ok"].any()
    assert len(hung) == len(tx)
    assert (hung["end"] - hung["actual_start"]).min() >= DEADLINE_S - 2 * TIMER_TICK_S  # uvloop: whole ms
    assert run["status"] == "complete"
    assert run["valid"] is False
    codes = {c["code"]: c for c in run["invalid"]}
    assert codes["hung_transactions"]["values"]["count"] == len(hung)
    assert codes["hung_transactions"]["values"]["deadline_s"] == DEADLINE_S
    # nothing the run started survives it: no worker, no command, no command's child
    assert tagged_pids(tag) == []


@pytest.mark.parametrize("core", ["auto", "python"])
def test_a_tcp_server_that_never_answers_is_a_hung_transaction(tmp_path, store, core):
    # A listening socket that never accepts: the kernel completes the connection from its
    # backlog, the message is sent, and no reply ever comes. Before, the driver waited for it
    # forever (the window's end could not stop a user stuck in a read). Both of the driver's
    # paths: the compiled loop (auto) and the Python engine.
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    try:
        path = write_workload(tmp_path, f"""
name: hung-tcp
target: {{kind: tcp, host: 127.0.0.1, port: {port}, message_size: 64}}
transactions:
  - {{name: echo, tcp: {{}}, timeout: {DEADLINE_S:g}s}}
scripts: [{{name: s, steps: [echo]}}]
think: 0.1
load: {{users: {USERS}}}
timing: {{stagger: 0s, stabilization: 0s, measurement: {MEASUREMENT_S:g}s}}
driver: {{core: {core}}}
""")
        started = time.monotonic()
        done = perflab("run", path, "--no-monitor", "-q", "--seed", "1", store=store, timeout=120)
        elapsed = time.monotonic() - started
    finally:
        listener.close()
    assert done.returncode == EXIT_INVALID, done.stderr  # complete, invalid: hung
    assert elapsed < MEASUREMENT_S + 30.0, f"a {MEASUREMENT_S:g} s window took {elapsed:.1f} s"
    run_dir = run_dir_of(store, done.stdout.strip().splitlines()[-1])
    run = json.loads((run_dir / "run.json").read_text())
    tx = pq.read_table(run_dir / "transactions.parquet").to_pandas()
    assert len(tx) >= USERS and not tx["ok"].any()
    assert tx["error"].str.contains(f"deadline {DEADLINE_S:g} s exceeded", regex=False).all()
    # uvloop's timers count whole milliseconds (engine.TIMER_TICK_S): one may fire up to a tick
    # before the deadline measured on the nanosecond clock (CI saw 1.99984 s for 2 s).
    assert (tx["end"] - tx["actual_start"]).min() >= DEADLINE_S - 2 * TIMER_TICK_S
    assert run["valid"] is False
    assert {c["code"] for c in run["invalid"]} >= {"hung_transactions"}
    assert run["fingerprint"]["driver_core"].startswith("native" if core == "auto" else "python")
