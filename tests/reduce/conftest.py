"""Synthetic run directories with known numbers, written exactly as docs/architecture.md
specifies (run.json, transactions.parquet, samples.parquet), so reduction can be checked
against arithmetic done by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest


def write_run(run_dir: Path, *, window=(10.0, 20.0), config: dict[str, Any] | None = None,
              transactions: dict[str, Any] | None = None, samples: dict[str, Any] | None = None,
              **run_fields: Any) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    run = {
        "run_id": run_dir.name, "status": "complete", "reason": None, "valid": True, "invalid_reasons": [],
        "label": "base", "workload": {"name": "synthetic"},
        "config": {"users": None, "rate": None, "sut_cpus": [1], "driver_cpus": [0], **(config or {})},
        "fingerprint": {"cpu_model": "test", "cores": 4, "memory_bytes": 8 * 2**30},
        "window": {"start": window[0], "end": window[1]},
        "monitor": {"interval_s": 1.0},
        "sut": {"pids": [], "cgroup": None, "counters": []},
        **run_fields,
    }
    (run_dir / "run.json").write_text(json.dumps(run))
    if transactions is not None:
        pq.write_table(transaction_table(**transactions), run_dir / "transactions.parquet")
    if samples is not None:
        pq.write_table(pa.table({k: np.asarray(v, dtype=np.float64) for k, v in samples.items()}),
                       run_dir / "samples.parquet")
    return run_dir


def transaction_table(end, *, response=None, ok=None, klass=None, think=None, first=None, service=None,
                      instructions=None, tx=None, user=None) -> pa.Table:
    end = np.asarray(end, dtype=np.float64)
    n = len(end)
    response = np.full(n, 0.01) if response is None else np.broadcast_to(np.asarray(response, float), (n,))
    service = response if service is None else np.broadcast_to(np.asarray(service, float), (n,))
    intended = end - response
    first_abs = np.full(n, np.nan) if first is None else intended + np.broadcast_to(np.asarray(first, float), (n,))
    ok = np.ones(n, bool) if ok is None else np.asarray(ok, bool)
    klass = ["all"] * n if klass is None else list(klass)
    classes = pa.array(klass).dictionary_encode()
    return pa.table({
        "user": pa.array(np.arange(n) % 7 if user is None else np.asarray(user), pa.int32()),
        "script": pa.array(["s"] * n).dictionary_encode(),
        "transaction": pa.array(["t"] * n if tx is None else list(tx)).dictionary_encode(),
        "class": classes,
        "intended_start": intended,
        "actual_start": end - service,
        "first_response": first_abs,
        "end": end,
        "ok": ok,
        "error": pa.array([None if o else "boom" for o in ok], pa.string()),
        "think": np.full(n, np.nan) if think is None else np.broadcast_to(np.asarray(think, float), (n,)),
        "cpu_user": np.full(n, np.nan),
        "cpu_sys": np.full(n, np.nan),
        "instructions": np.full(n, np.nan) if instructions is None else np.asarray(instructions, float),
        "worker": pa.array(np.zeros(n), pa.int16()),
    })


def linear_counters(t, **rates: float) -> dict[str, np.ndarray]:
    """Cumulative counters that grow at constant rates (units per second)."""
    t = np.asarray(t, dtype=np.float64)
    return {name.replace("__", "."): rate * t for name, rate in rates.items()}


@pytest.fixture
def make_run(tmp_path):
    def make(name: str = "run", **kw: Any) -> Path:
        return write_run(tmp_path / name, **kw)
    return make
