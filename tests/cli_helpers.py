"""Helpers for tests that use perflab as a user does: write a workload file, run the CLI,
read the stored run. (Not in conftest.py: several test folders have a conftest module, and
`from conftest import ...` would pick whichever was imported first.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
PERFLAB = [sys.executable, "-m", "perflab.cli"]


def noop_workload(name: str) -> str:
    """The smallest real run: 2 users calling the null in-process target for a 1 s window."""
    return f"""
name: {name}
target: {{kind: python}}
transactions:
  - {{name: t, call: "perflab.sut.synthetic:noop"}}
scripts: [{{name: s, steps: [t]}}]
think: 0.01
load: {{users: 2}}
timing: {{measurement: 1s}}
placement: {{workers: 1}}
"""


def write_workload(directory: Path, text: str, name: str = "workload.yaml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def perflab(*args: str, store: Path | None = None, timeout: float = 180, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if store is not None:
        env["PERFLAB_HOME"] = str(store)
    return subprocess.run([*PERFLAB, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=kwargs.pop("cwd", REPO), **kwargs)


def run_dir_of(store: Path, run_id: str) -> Path:
    return store / "runs" / run_id.strip()


def load_run(run_dir: Path) -> tuple[dict, "pandas.DataFrame"]:
    run = json.loads((run_dir / "run.json").read_text())
    tx = pq.read_table(run_dir / "transactions.parquet").to_pandas()
    for col in ("script", "transaction", "class"):
        tx[col] = tx[col].astype(str)
    return run, tx


def in_window(run: dict, tx):
    w = run["window"]
    return tx[(tx.end >= w["start"]) & (tx.end < w["end"])]
