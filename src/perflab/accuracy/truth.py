"""The truth an arrangement is measured against: what the knob adds to a transaction's CPU when
the SUT runs alone, at the study's load -- measured so that the host's wander cannot blur it.

One configuration at a time is the seeds' way and the reference, but on this host a run's speed
wanders 2-6% from one run to the next, so even twenty interleaved blocks pin a ratio to only a
point or two: too coarse to measure a design's bias in tenths of a point. The knob's cost is
measured instead *inside one run*:

* **mixed runs** (SUTs that run in perflab's workers, where each transaction's own thread CPU is
  measured: python, SQLite): every transaction has a twin with the knob raised, and the users
  run both, half and half, at random, alone on the machine at the calibrated load. A knob
  transaction and a plain one a few milliseconds apart see the same host, so their difference
  of CPU is the knob's cost with the wander taken out; the base's whole CPU per transaction
  (PBT/CMD (S), the worker's own share included) is the same run's less the knob's share. The
  true ratio of PBT/CMD (S) at knob K is then 1 + delta / c0, of ITR (S) its inverse.
  PostgreSQL's backends are measured the same way, each transaction's CPU read from its
  backend's own clock (target.backend_cpu);
* **alternating runs** (a server whose per-request CPU perflab cannot read: the HTTP case): the
  knob at 0 and at a large probe in short runs, alone, one after the other, many times over;
  each adjacent pair's ratio of PBT/CMD (S) -- a large added cost, so the wander is small beside
  it -- gives the cost of one knob unit relative to the base.

Either way the result is the knob's relative cost per unit (`per_unit`, with its standard
error), linear in the knob by construction (cases.py), from which the truth of any added cost
follows.
"""

from __future__ import annotations

import copy
import math
import statistics
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from perflab.accuracy.cases import Case, knob_changes
from perflab.errors import InputError
from perflab.store.catalog import Store
from perflab.study.knob import TWIN, mixed_run_cost, twin_scripts
from perflab.workload.kinds import KINDS


class TruthMeasurement(BaseModel):
    """The knob's cost alone, relative to the base's whole CPU per transaction, per knob unit."""

    kind: str = "truth"
    case: str
    method: str                     # "mixed" or "alternating"
    knob: int                       # the knob value measured
    users: int | None = None
    per_unit: float                 # (PBT/CMD (S) at knob K / at 0 - 1) / K
    se: float                       # its standard error, from the runs
    runs: list[str] = Field(default_factory=list)
    values: list[float] = Field(default_factory=list)   # each run's (or pair's) relative cost at K
    host: dict[str, Any] | None = None      # records.bias.HostIdentity of the machine it was measured on
    session: str | None = None              # the accuracy session it belongs to

    def log_ratio(self, knob: int) -> float:
        """ln(ITR (S) at `knob` / at 0): the truth of that added cost."""
        return -math.log1p(self.per_unit * knob)

    def log_se(self, knob: int) -> float:
        return knob * self.se / (1.0 + self.per_unit * knob)


def _check(result) -> None:
    """A truth run must be complete and valid: its number is the ruler of every other."""
    if result.status != "complete" or not result.valid:
        raise InputError(f"truth run {result.run_id} is {result.status}"
                         + ("" if result.valid else ", invalid") + (f": {result.reason}" if result.reason else "")
                         + " -- see `perflab show " + result.run_id + "`")


def _with_twins(data: dict, case: Case, knob: int) -> dict:
    """The workload with every transaction and script twinned, the twins' knob at `knob`."""
    out = copy.deepcopy(data)
    names = [t["name"] for t in out["transactions"]]
    for tx in list(out["transactions"]):
        twin = copy.deepcopy(tx)
        twin["name"] = tx["name"] + TWIN
        out["transactions"].append(twin)
    for path, value in knob_changes(case, knob).items():
        parts = path.split(".")
        if parts[0] != "transactions" or parts[1] not in names:
            raise InputError(f"the {case.name} knob {path} is not a transaction's field: cannot twin it")
        node = next(t for t in out["transactions"] if t["name"] == parts[1] + TWIN)
        for part in parts[2:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    twin_scripts(out)
    return out


def measure_mixed(case: Case, examples: Path, store: Store, knob: int, users: int, runs: int = 4,
                  seconds: float = 20.0) -> TruthMeasurement:
    """`runs` mixed runs of `seconds` (one run's sampling error of delta / c0 is about 0.5 point
    at 20 s: per-call CPU scatters by a fifth; four runs bring the mean's to about 0.25)."""
    from perflab.drive.run import RunRequest, execute_run
    from perflab.workload.loader import load_workload
    from perflab.workload.model import Workload

    base = load_workload(case.path(examples))
    data = _with_twins(base.model_dump(mode="json", by_alias=True), case, knob)
    if KINDS.of(base.target).network:
        data["target"]["backend_cpu"] = True   # a server's per-transaction CPU: its backend's clock
    workload = Workload.model_validate(data)
    values, ids = [], []
    for _ in range(runs):
        result = execute_run(RunRequest(workload=workload, workload_path=case.path(examples), users=users,
                                        duration=seconds, label=f"accuracy truth {case.name}"), store)
        _check(result)
        values.append(mixed_run_cost(result.run_dir))
        ids.append(result.run_id)
    per_unit = statistics.fmean(values) / knob
    se = (statistics.stdev(values) / math.sqrt(len(values)) / knob) if len(values) > 1 else math.inf
    return TruthMeasurement(case=case.name, method="mixed", knob=knob, users=users, per_unit=per_unit, se=se,
                            runs=ids, values=values)


def measure_alternating(case: Case, examples: Path, store: Store, knob: int, users: int | None, pairs: int = 6,
                        seconds: float = 10.0) -> TruthMeasurement:
    from perflab.drive.run import RunRequest, execute_run
    from perflab.reduce.reduce import reduce_run
    from perflab.study.configure import apply_changes
    from perflab.workload.loader import load_workload
    from perflab.workload.model import Workload

    base = load_workload(case.path(examples))
    dumped = base.model_dump(mode="json", by_alias=True)
    workloads = {k: Workload.model_validate(apply_changes(dumped, knob_changes(case, k))) for k in (0, knob)}
    values, ids = [], []
    for pair in range(pairs):
        order = (0, knob) if pair % 2 == 0 else (knob, 0)
        pbt = {}
        for k in order:
            result = execute_run(RunRequest(workload=workloads[k], workload_path=case.path(examples), users=users,
                                            duration=seconds, label=f"accuracy truth {case.name} knob {k}"), store)
            _check(result)
            value = reduce_run(result.run_dir).values.get("pbt_cmd_s")
            if value is None:
                raise InputError(f"run {result.run_id}: no PBT/CMD (S) for the truth of the {case.name} knob")
            pbt[k] = value
            ids.append(result.run_id)
        values.append(pbt[knob] / pbt[0] - 1.0)
    per_unit = statistics.fmean(values) / knob
    se = statistics.stdev(values) / math.sqrt(len(values)) / knob
    return TruthMeasurement(case=case.name, method="alternating", knob=knob, users=users, per_unit=per_unit, se=se,
                            runs=ids, values=values)
