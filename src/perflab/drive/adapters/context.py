"""What a network kind's executor is made with (drive/adapters/registry.py's make_executor):
one value, so every kind's `executor(context)` factory has the same signature."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from perflab.workload.model import Workload


@dataclass(frozen=True)
class NetworkContext:
    workload: Workload
    #: a PostgreSQL server's DSN (server_run's prepare_postgres made it, or the coordinator sent it)
    dsn: str | None = None
    #: the SUT's exit, if it has ended (a server perflab started): the run fails with it
    failure: Callable[[], str | None] | None = None
    #: a shared pool's size when the target gives none (the run's workers)
    pool_size: int | None = None
    #: {run_dir}, {workload_dir}, {run_id}, {service_address}: filled into the target's paths
    tokens: dict[str, str] = field(default_factory=dict)
    #: what only the driver sees, counted for the monitor (registry.driver_counts); None: not counted
    counts: Any = None
