"""The engine at the window's end: what is still in flight is waited for until its deadline, then
counted as hung -- never dropped uncounted (issue 25).

Before, the engine waited a fixed 30 s (STOP_GRACE_S) for the transactions in flight at the
window's end and then dropped them: a python SUT sleeping forever under the default 60 s deadline
ran 43 s for a 4 s window, "complete" with no error and no hung_transactions caveat.
"""

from __future__ import annotations

import asyncio
import time

import uvloop
from cli_helpers import write_workload

from perflab.drive.load.engine import DRAIN_SLACK_S, STOP_GRACE_S, Engine, Phases
from perflab.drive.load.recorder import Recorder
from perflab.workload.loader import load_workload

ENGINE_WORKLOAD = """
name: engine-drain
target: {kind: python}
transactions:
  - {name: t, call: "perflab.sut.synthetic:noop"}
scripts: [{name: s, steps: [t]}]
think: 0.05
load: {users: 3}
timing: {measurement: 1s, deadline: 1s}
"""


class Silent:
    """An executor whose transactions never answer (a SUT that hangs where nothing kills it:
    the drain itself must give up on them)."""

    def execute(self, tx_index, params, user=-1):
        return asyncio.get_running_loop().create_future()


class Late:
    """An executor whose transactions answer `delay` seconds after they are issued."""

    def __init__(self, delay: float):
        self.delay = delay

    def execute(self, tx_index, params, user=-1):
        from perflab.drive.workers import Reply

        future = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_later(self.delay, future.set_result, Reply(True, None, None))
        return future


def drive(tmp_path, executor):
    workload = load_workload(write_workload(tmp_path, ENGINE_WORKLOAD))
    t0 = time.monotonic()
    recorder = Recorder([s.name for s in workload.scripts], [t.name for t in workload.transactions], [], t0)
    engine = Engine(workload, executor, recorder, Phases(0.0, 0.0, 1.0), t0)
    recorder.class_names = engine.class_names
    started = time.monotonic()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        outcome = runner.run(engine.run())
    return outcome, recorder.table().to_pandas(), time.monotonic() - started


def test_a_transaction_that_never_answers_is_hung_one_deadline_after_the_window(tmp_path):
    outcome, tx, elapsed = drive(tmp_path, Silent())
    # Each of the 3 users issued one transaction at t = 0 that never answered: each is recorded
    # as a hung error, none dropped (before: waited STOP_GRACE_S = 30 s, then recorded nothing).
    assert outcome.status == "complete"
    assert outcome.hung == 3 and outcome.deadline_s == 1.0
    assert len(tx) == 3 and not tx["ok"].any()
    assert tx["error"].str.startswith("deadline 1 s exceeded: still in flight").all()
    # The window (1 s) + the deadline (1 s) + the drain's slack, far below the old 30 s.
    assert elapsed < 1.0 + 1.0 + DRAIN_SLACK_S + 3.0 < STOP_GRACE_S
    assert elapsed >= 1.0 + 1.0


def test_a_transaction_answering_after_the_window_within_its_deadline_is_fine(tmp_path):
    outcome, tx, _ = drive(tmp_path, Late(0.6))
    # 0.6 s per transaction and 0.05 s think: each user's second transaction is in flight at the
    # window's end (1 s) and answers 0.3 s later, inside its 1 s deadline: recorded ok, not hung.
    assert outcome.hung == 0
    assert len(tx) == 6 and tx["ok"].all()
    assert (tx["end"] > 1.0).sum() == 3


