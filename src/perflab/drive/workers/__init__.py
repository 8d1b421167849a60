"""SUT worker processes and the driver-side pool that dispatches transactions to them:
`wire` (the framing and the values that cross the process boundary: WorkerSpec, Reply),
`process` (the worker's own side), `pool` (the driver's side)."""

from perflab.drive.workers.pool import WorkerPool, kill_group
from perflab.drive.workers.wire import FrameReader, Reply, WorkerSpec, frame, write_all

__all__ = ["FrameReader", "Reply", "WorkerPool", "WorkerSpec", "frame", "kill_group", "write_all"]
