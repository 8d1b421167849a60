"""Real servers, no mocks: each test skips, saying why, only when a server binary is absent
(.ci/run installs them all)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from perflab.drive.run import RunRequest, execute_run
from perflab.reduce.reduce import reduce_run
from perflab.store.catalog import Store
from perflab.study.configure import configured_workload
from perflab.study.model import Configuration
from perflab.workload.loader import load_workload

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
PG15_BIN = Path("/usr/lib/postgresql/15/bin")

needs_pg15 = pytest.mark.skipif(not (PG15_BIN / "postgres").exists(),
                                reason="PostgreSQL 15 server not installed (apt-get install postgresql-15)")
needs_pgserver = pytest.mark.skipif(importlib.util.find_spec("pgserver") is None,
                                    reason="pgserver wheel not installed (pip install pgserver)")
needs_pgbench = pytest.mark.skipif(shutil.which("pgbench") is None,
                                   reason="pgbench not installed (apt-get install postgresql-client-15)")
needs_nginx = pytest.mark.skipif(shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists(),
                                 reason="nginx not installed (apt-get install nginx-light)")


def run_workload(tmp_path: Path, workload_path: Path, changes: dict | None = None, **request) -> tuple[dict, object]:
    """Run a workload file (with study-style changes) into a fresh store; -> (run.json, metrics)."""
    workload = load_workload(workload_path)
    if changes:
        workload = configured_workload(workload, Configuration(name="test", set=changes))
    result = execute_run(RunRequest(workload, workload_path, **request), Store(tmp_path / "store"))
    run = json.loads((result.run_dir / "run.json").read_text())
    return run, reduce_run(result.run_dir)
