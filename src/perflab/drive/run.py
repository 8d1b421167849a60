"""One run, start to finish: `execute_run(request, store)` resolves the plan, opens the run's
lifecycle and hands it to the path that fits the target -- SUT worker processes
(`local_run`: sqlite, python, command) or a server driven over the network (`server_run`:
postgres, http, tcp, including external drivers). docs/architecture.md draws the stages.
"""

from __future__ import annotations

from perflab.drive.lifecycle import RunLifecycle, RunObserver, RunResult
from perflab.drive.local_run import execute_local_run
from perflab.drive.plan import RunPlan, RunRequest, resolve_plan
from perflab.drive.remote.sut_host import probe_sut_host
from perflab.drive.server_run import execute_server_run
from perflab.store.catalog import Store
from perflab.workload.kinds import KINDS

__all__ = ["RunPlan", "RunRequest", "RunResult", "execute_run", "resolve_plan"]


def execute_run(request: RunRequest | RunPlan, store: Store, observer: RunObserver | None = None) -> RunResult:
    """Drive one run and store it; the result names its directory, status and validity."""
    plan = request if isinstance(request, RunPlan) else resolve_plan(request)
    # A SUT host's monitor that cannot be reached is bad input, found before any run is stored.
    host = probe_sut_host(plan.remote, plan.workload_path) if plan.remote is not None and plan.monitor else None
    cluster = None
    if plan.drivers is not None:
        from perflab.drive.remote.distributed import DriverCluster

        cluster = DriverCluster.connect(plan)  # placed before any run is stored
    life = RunLifecycle(plan, store, observer)
    with life.sigterm_ends_the_run():  # SIGTERM during set-up: the run is stored, interrupted
        try:
            life.open()
        except BaseException:
            if cluster is not None:
                cluster.close()
            raise
        if KINDS.of(plan.workload.target).network:
            return execute_server_run(life, host, cluster)
        return execute_local_run(life)
