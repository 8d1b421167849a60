"""Real servers, no mocks: README's test command installs every server binary (tests/programs.py);
a test whose binary is missing fails, naming the set-up."""

from __future__ import annotations

import json
from pathlib import Path

import programs

from perflab.drive.run import RunRequest, execute_run
from perflab.reduce.reduce import reduce_run
from perflab.store.catalog import Store
from perflab.study.configure import configured_workload
from perflab.study.model import Configuration
from perflab.workload.loader import load_workload

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
PG15_BIN = Path(programs.path("postgres-15")).parent

needs_pg15 = programs.needs("postgres-15")
needs_pgbench = programs.needs("pgbench")
needs_nginx = programs.needs("nginx")


def run_workload(tmp_path: Path, workload_path: Path, changes: dict | None = None, **request) -> tuple[dict, object]:
    """Run a workload file (with study-style changes) into a fresh store; -> (run.json, metrics)."""
    workload = load_workload(workload_path)
    if changes:
        workload = configured_workload(workload, Configuration(name="test", set=changes))
    result = execute_run(RunRequest(workload, workload_path, **request), Store(tmp_path / "store"))
    run = json.loads((result.run_dir / "run.json").read_text())
    return run, reduce_run(result.run_dir)
