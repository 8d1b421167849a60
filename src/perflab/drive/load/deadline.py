"""Transaction deadlines: how long perflab waits for one transaction before it calls it hung.

A SUT that never answers must not hold a run forever, nor leave it looking complete and valid:
every transaction has a deadline,
the transaction's own `timeout:` when it gives one, else the workload's `timing.deadline`, else
DEFAULT_DEADLINE_S (a job stream's transactions default to the stream's own timeout: a batch job
may legitimately run for minutes).
A transaction past its deadline is an error with the reason ("deadline 2 s exceeded"); whatever
ran it is killed -- the SUT worker process (python, sqlite) or the command's whole process group
-- and the run is marked invalid (caveats.hung_transactions). The network adapters (PostgreSQL,
TCP) run in the driver's event loop: there the transaction is cancelled at its deadline and its
connection dropped (HTTP has its own `target.timeout`).
"""

from __future__ import annotations

from perflab.workload.model import BatchLoad, Workload

#: The deadline of a transaction that gives no `timeout:` of its own (seconds).
DEFAULT_DEADLINE_S = 60.0

#: A command's deadline is enforced in its worker (which kills the command's process group and
#: reports the transaction); the driver steps in only when the worker itself stops answering,
#: this much later.
WORKER_ENFORCED_GRACE_S = 5.0


def deadlines_of(workload: Workload) -> list[float]:
    """The deadline of every transaction of the workload, in seconds, by transaction index."""
    default = workload.timing.deadline
    if default is None:
        default = workload.load.timeout if isinstance(workload.load, BatchLoad) else DEFAULT_DEADLINE_S
    return [default if tx.timeout is None else float(tx.timeout) for tx in workload.transactions]


def deadline_text(seconds: float) -> str:
    """The reason a hung transaction is recorded with (one sentence, made here only)."""
    return f"deadline {seconds:g} s exceeded"
