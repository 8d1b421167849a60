"""A Python function as the system under test: `call: package.module:function`."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from perflab.drive.adapters.base import SutAdapter, WorkerContext
from perflab.sut.knob import KNOB_PARAM, python_work
from perflab.workload.model import PythonTarget, Workload


def _resolve(spec: str):
    module_name, _, attr = spec.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _extend_path(workload: Workload, workload_dir: Path) -> None:
    target = workload.target
    assert isinstance(target, PythonTarget)
    for entry in [workload_dir, *[(workload_dir / p) for p in target.path]]:
        resolved = str(Path(entry).resolve())
        if resolved not in sys.path:
            sys.path.insert(0, resolved)


class PythonCallAdapter(SutAdapter):
    @classmethod
    def prepare(cls, workload: Workload, workload_dir: Path, run_dir: Path) -> dict[str, Any]:
        modules = sorted({tx.call_body().split(":")[0] for tx in workload.transactions})
        return {"sut_version": "python functions: " + ", ".join(modules)}

    def __init__(self, ctx: WorkerContext):
        _extend_path(ctx.workload, ctx.workload_dir)
        target = ctx.workload.target
        assert isinstance(target, PythonTarget)
        if target.setup:
            _resolve(target.setup)()
        self.calls = []
        for tx in ctx.workload.transactions:
            self.calls.append((_resolve(tx.call_body()), tuple(tx.args or ()), dict(tx.kwargs or {})))

    def execute(self, tx_index: int, params: dict[str, Any] | None) -> float | None:
        function, args, kwargs = self.calls[tx_index]
        knob = params.pop(KNOB_PARAM, 0) if params else 0   # a study's calibration knob (sut/knob.py)
        if params:
            function(*args, **kwargs, **params)
        else:
            function(*args, **kwargs)
        if knob:
            python_work(knob)
        return None
