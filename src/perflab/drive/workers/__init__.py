"""SUT worker processes and the driver-side pool that dispatches transactions to them:
`wire` (the framing and the values that cross the process boundary: WorkerSpec, Reply),
`process` (the worker's own side), `launch` (how a worker's interpreter is started), `pool` (the
driver's side: `from perflab.drive.workers.pool import WorkerPool`).

The package itself exports only `wire`'s values: a worker imports this package on its way to
`process`, and the pool's asyncio (~0.12 s of imports per worker) is nothing a worker uses.
"""

from perflab.drive.workers.wire import FrameReader, Reply, WorkerSpec, frame, write_all

__all__ = ["FrameReader", "Reply", "WorkerSpec", "frame", "write_all"]
