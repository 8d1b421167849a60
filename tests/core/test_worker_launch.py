"""A SUT worker is a fresh interpreter that imports the worker and the SUT, not its parent's main
module (multiprocessing's spawn imports pytest, or the perflab command line, into every worker),
and finds a SUT module on any path its parent could import from (perflab.drive.workers.launch)."""

from __future__ import annotations

import asyncio
import textwrap

from cli_helpers import write_workload

from perflab.drive.workers.pool import WorkerPool
from perflab.drive.workers.wire import WorkerSpec
from perflab.workload.loader import load_workload

PROBE = '''
import sys

def modules():
    """Fails on purpose: the error carries what this worker has imported back to the test."""
    seen = [m for m in ("_pytest", "pytest", "perflab.cli") if m in sys.modules]
    # multiprocessing names __main__ __mp_main__ too; spawn makes it the parent's main script
    if getattr(sys.modules.get("__mp_main__"), "__file__", None):
        seen.append("__mp_main__ " + sys.modules["__mp_main__"].__file__)
    raise RuntimeError(",".join(seen) or "none")
'''

WORKLOAD = """
name: launch
target: {kind: python}
transactions: [{name: probe, call: "perflab_launch_probe:modules"}]
scripts: [{name: s, steps: [probe]}]
load: {users: 1}
"""


def _pool(tmp_path, monkeypatch) -> WorkerPool:
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "perflab_launch_probe.py").write_text(textwrap.dedent(PROBE))
    monkeypatch.syspath_prepend(str(modules))  # on the parent's path only: not on PYTHONPATH
    workload = load_workload(write_workload(tmp_path, WORKLOAD))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    spec = WorkerSpec(workload.model_dump(mode="json", by_alias=True), str(tmp_path), str(run_dir), 0)
    return WorkerPool([spec], depth=1)


def _execute(pool: WorkerPool):
    async def main():
        pool.attach(asyncio.get_running_loop())
        try:
            return await pool.execute(0, None)
        finally:
            pool.detach(asyncio.get_running_loop())

    return asyncio.run(main())


def test_a_worker_finds_its_sut_on_the_parent_s_path_and_imports_no_main_module(tmp_path, monkeypatch):
    pool = _pool(tmp_path, monkeypatch)
    try:
        reply = _execute(pool)
    finally:
        pool.close()
    assert not reply.ok and reply.error == "RuntimeError: none", reply.error
