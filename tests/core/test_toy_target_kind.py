"""Adding a target kind is one model, one adapter file and one registry line (workload/kinds.py):
two toy kinds added to a copy of perflab exactly that way -- one run in perflab's worker
processes, one as a server over the network -- and each run end to end by `perflab run`.

The copy is perflab's own source with three files touched per kind, nothing else: if another
place still decided by a kind's name, the toy kind would be refused or run by the wrong code."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "perflab"

MODELS = '''

class SpinTarget(TargetModel):
    """A toy kind run in perflab's workers: each SQL statement is a loop of `spins` additions."""

    kind: Literal["spin"]
    spins: int = Field(default=1000, ge=0)


class NullServerTarget(TargetModel):
    """A toy network kind: a server that answers every transaction at once."""

    kind: Literal["nullserver"]
'''

SPIN_ADAPTER = '''
"""The spin kind's adapter: a statement is `spins` additions, and each one is counted (the
SUT's own count of work, as SQLite's commit hook is)."""

from perflab.drive.adapters.base import SutAdapter, WorkerContext


class SpinAdapter(SutAdapter):
    counter_names = ("statements",)
    tx_counter = "statements"

    def __init__(self, ctx: WorkerContext):
        self.spins = ctx.workload.target.spins
        self.statements = [tx.sql_body() for tx in ctx.workload.transactions]
        self.done = 0

    def execute(self, tx_index, params):
        for _ in self.statements[tx_index]:
            total = 0
            for i in range(self.spins):
                total += i
        self.done += 1
        return None

    def counters(self):
        return (self.done,)
'''

NULL_ADAPTER = '''
"""The nullserver kind's executor: every transaction answered at once."""

import asyncio

from perflab.drive.workers import Reply


class NullExecutor:
    def __init__(self, context):
        self.workload = context.workload

    async def open(self, users):
        pass

    def execute(self, tx_index, params, user=-1):
        future = asyncio.get_running_loop().create_future()
        future.set_result(Reply(True, None, None))
        return future

    async def close(self):
        pass


def executor(context):
    return NullExecutor(context)
'''

LINES = '''    TargetKind("spin", targets.SpinTarget, "sql", f"{_ADAPTERS}.spin:SpinAdapter"),
    TargetKind("nullserver", targets.NullServerTarget, "call", f"{_ADAPTERS}.nullserver:executor", network=True),
'''


def _add_kinds(copy: Path) -> None:
    """The three touches per kind: its model, its adapter file, its registry line."""
    (copy / "workload" / "targets.py").write_text((copy / "workload" / "targets.py").read_text() + MODELS)
    (copy / "drive" / "adapters" / "spin.py").write_text(SPIN_ADAPTER.lstrip())
    (copy / "drive" / "adapters" / "nullserver.py").write_text(NULL_ADAPTER.lstrip())
    kinds = (copy / "workload" / "kinds.py").read_text()
    end = "]\n\nKINDS = KindRegistry("
    assert kinds.count(end) == 1  # the list of lines ends there
    (copy / "workload" / "kinds.py").write_text(kinds.replace(end, LINES + end))


@pytest.mark.lab
@pytest.mark.parametrize("kind, target, body", [
    ("spin", "{kind: spin, spins: 2000}", '{name: t, sql: ["one", "two"]}'),
    ("nullserver", "{kind: nullserver}", '{name: t, call: "any:thing"}'),
])
def test_a_toy_kind_added_in_three_places_runs(tmp_path, kind, target, body):
    copy = tmp_path / "src" / "perflab"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    _add_kinds(copy)
    workload = tmp_path / "toy.yaml"
    workload.write_text(textwrap.dedent(f"""
        name: toy-{kind}
        target: {target}
        transactions: [{body}]
        scripts: [{{name: s, steps: [t]}}]
        think: 0.02
        load: {{users: 2}}
        timing: {{measurement: 1s}}
        placement: {{workers: 1}}
        """).lstrip())
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src"), "PERFLAB_HOME": str(tmp_path / "store")}
    done = subprocess.run([sys.executable, "-m", "perflab.cli", "run", str(workload)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = (tmp_path / "store" / "runs").iterdir()
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "complete"
    assert run["workload"]["target"]["kind"] == kind
    rows = pq.read_table(run_dir / "transactions.parquet").to_pydict()
    # 2 users thinking 20 ms over a window of 1 s and its ramp: dozens of transactions, all ok
    assert len(rows["ok"]) >= 20 and all(rows["ok"])
    if kind == "spin":  # run in the workers: the SUT's own count is the adapter's, one per transaction
        assert run["sut"]["tx_counter"] == "statements"
    else:  # a network kind: driven from the driver, no SUT process perflab started
        assert run["fingerprint"]["adapter"] == "nullserver"
        assert run["fingerprint"]["driver_core"].startswith("python (a nullserver target")
