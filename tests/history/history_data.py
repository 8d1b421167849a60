"""Histories of model runs (perflab.drive.model_driver): each run of known cost, stored as a real
run is, so a history reads them as it reads any store. The cost of each run is the workload's
`cpu_ms` times the model's log-normal noise; a planted change is a different `cpu_ms` from some run
on (a knob of the software under test, which `--ignore` keeps in one series)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from pathlib import Path

from perflab.drive.model_driver import Model, execute_model_run
from perflab.drive.plan import RunRequest
from perflab.records.run import read_run_record
from perflab.store.atomic import write_json_atomic
from perflab.store.catalog import Store
from perflab.workload.loader import load_workload

#: The knob of the model workload: the CPU per transaction (ms).
KNOB = "transactions.work.kwargs.cpu_ms"
WORKLOAD = """
name: {name}
target: {{kind: python}}
transactions:
  - {{name: work, class: nontrivial, call: "perflab.sut.synthetic:work", kwargs: {{cpu_ms: 2.0}}}}
scripts: [{{name: s, steps: [work]}}]
load: {{rate: {rate}, arrival: poisson}}
timing: {{stabilization: 1s, measurement: 2s}}
placement: {{workers: 1}}
seed: 5
"""


def workload_file(directory: Path, name: str = "known-cost", rate: float = 100.0) -> Path:
    path = Path(directory) / f"{name}.yaml"
    path.write_text(textwrap.dedent(WORKLOAD.format(name=name, rate=rate)).lstrip())
    return path


def history(store: Path, workload: Path, costs: Sequence[float], *, noise: float = 0.005,
            versions: Sequence[str | None] | None = None, seed: int = 0, fingerprint: dict | None = None,
            exact_itr: bool = False) -> list[str]:
    """One run per entry of `costs` (cpu_ms of the run), in order; `versions`: each run's label;
    `fingerprint`: fields written over each run's (another host, another kernel); `exact_itr`:
    each run's ITR (S) set to exactly 1000 / cpu_ms (`exact`). -> run ids."""
    base = load_workload(workload)
    st = Store(store)
    ids = []
    for i, cost in enumerate(costs):
        w = base.model_copy(deep=True)
        w.transactions[0].kwargs["cpu_ms"] = float(cost)
        label = versions[i] if versions is not None else None
        result = execute_model_run(RunRequest(w, workload, label=label), st, model=Model(noise=noise, seed=seed + i))
        if fingerprint:
            patch_fingerprint(st, result.run_id, fingerprint)
        ids.append(result.run_id)
    if exact_itr:
        exact(store, {run_id: 1000.0 / float(cost) for run_id, cost in zip(ids, costs)})
    return ids


def patch_fingerprint(st: Store, run_id: str, fields: dict) -> None:
    """Write `fields` over a stored run's fingerprint (a run of another host or kernel)."""
    path = st.run_dir(run_id) / "run.json"
    record = read_run_record(path)
    data = record.dump()
    data["fingerprint"] = {**data["fingerprint"], **fields}
    write_json_atomic(path, data)


def exact(store: Path, values: dict[str, float], metric: str = "itr_s") -> None:
    """Set each run's value of `metric` exactly, as the history's cache keeps it (the rest of its
    reduction and its outcome as reduced). A series of exact values has no noise for the detector
    to mistake for a change: its only change points are the planted ones, and a test of series,
    order, causes and exit codes is then about those, not about the detector (test_edivisive.py
    and test_history_truths.py are)."""
    from perflab.history.cache import MetricsCache, Reduced, reduce_for_history

    cache = MetricsCache(store)
    st = Store(store)
    for run_id, value in values.items():
        reduced = reduce_for_history(st.run_dir(run_id))
        cache.put(st.run_dir(run_id), Reduced({**reduced.values, metric: value}, reduced.outcome, reduced.reasons))


def history_json(result) -> dict:
    return json.loads(result.stdout)
