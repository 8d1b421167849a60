"""A study that measures its own arrangement's bias: knob blocks beside its blocks.

A duet's ratio is magnified or diluted against the one-at-a-time ratio by how its two SUTs
share a CPU, and by how much depends on the host and its state (docs/accuracy.md). A host's
stored bound (store/bias.py) is one answer; this is the other, for SUTs perflab can add a known
cost to (sut/knob.py: SQLite targets, python targets): the study adds

* **the knob's truth** -- mixed runs alone at the study's load (the seeds' one-at-a-time point):
  every transaction beside its twin, the twin carrying the knob, the users taking either at
  random; a twin and a plain transaction milliseconds apart see the same host, so the
  difference of their own thread CPU is the knob's cost with the host's wander taken out, and
  over the base's CPU per transaction it is the knob's true relative cost x;
* **knob blocks** -- pairs of the base against the base with the knob, run in the study's own
  arrangement, interleaved with its blocks (so they see the same host states): their paired
  ratio y is what the arrangement makes of a known change.

Then k = y / x - 1 (the offset a is zero by design: a pair's slots and start order are
randomized, so identical configurations cannot differ in expectation), with its standard error
from both, and the study's verdict intervals are widened by k's interval -- narrow where the
data allow, which a bound carried from other studies cannot be.
"""

from __future__ import annotations

import copy
import importlib
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.errors import InputError
from perflab.records.study import KnobRecord
from perflab.stats.bias import MIN_SCALE, BiasBound
from perflab.workload.kinds import KINDS
from perflab.workload.model import Workload

#: The suffix of a twin transaction (and script) in a mixed run.
TWIN = "_knob"
#: Units of a first mixed run, to size the knob: a few percent or tens of percent of a typical
#: transaction's CPU on the development VM (a SQLite CTE row ~0.3 us; a Python loop turn ~30 ns;
#: the same number of units of each is a different cost, and the probe measures which).
PROBE_UNITS = 500


def unsupported(workload: Workload) -> str | None:
    """Why perflab cannot add a known cost to this workload's transactions (None: it can)."""
    kind = KINDS.of(workload.target)
    if kind.knob is None:
        with_knob = [k.name for k in KINDS if k.knob is not None]
        return (f"perflab adds a known cost only to SUTs in its own workers ({', '.join(with_knob)} targets), whose "
                f"per-transaction CPU it measures; not to a {kind.name} target")
    if workload.batch:
        return "a job stream has no per-transaction knob"
    target = workload.target
    if kind.network and (getattr(target, "server", None) is None or getattr(target, "connections", "") != "per_user"):
        return (f"a {kind.name} target's per-transaction CPU is its backend's, read only on a server perflab starts "
                f"with a connection per user")
    return None


def _add_knob(tx: dict[str, Any], workload: Workload, units: int) -> None:
    """One transaction (as the workload's dump holds it) carrying `units` of the knob, as its kind's
    registry line says (workload/kinds.py)."""
    ref = KINDS.of(workload.target).knob
    assert ref is not None  # unsupported() said so first
    module, _, name = ref.partition(":")
    getattr(importlib.import_module(module), name)(tx, units)


def with_knob(workload: Workload, units: int) -> Workload:
    """The workload with every transaction carrying `units` of the knob (0: the statement or the
    parameter there, doing nothing -- the knob pair's base)."""
    data = workload.model_dump(mode="json", by_alias=True)
    for tx in data["transactions"]:
        _add_knob(tx, workload, units)
    data["pathlength"] = None   # a knob run's instructions are no row of the study
    return _validated(workload, data)


def with_twins(workload: Workload, units: int) -> Workload:
    """The workload of a mixed run: every transaction at knob 0 beside a twin at `units`, every
    script beside a twin of twins, the same weights (users take either half of the time)."""
    data = workload.model_dump(mode="json", by_alias=True)
    twins = []
    for tx in data["transactions"]:
        twin = copy.deepcopy(tx)
        twin["name"] = tx["name"] + TWIN
        _add_knob(tx, workload, 0)
        _add_knob(twin, workload, units)
        twins.append(twin)
    data["transactions"] += twins
    twin_scripts(data)
    data["pathlength"] = None
    if KINDS.of(workload.target).network:
        # the truth is each transaction's backend CPU, read on the Python path (target.backend_cpu)
        data["target"]["backend_cpu"] = True
    return _validated(workload, data)


def twin_scripts(data: dict[str, Any]) -> None:
    """Every script of a workload's dump beside a twin of its own that runs the twin transactions,
    the same weight: users take either half of the time (a mixed run's mix)."""
    for script in list(data["scripts"]):
        twin = copy.deepcopy(script)
        twin["name"] = script["name"] + TWIN
        twin["steps"] = [(s + TWIN) if isinstance(s, str) else {**s, "transaction": s["transaction"] + TWIN}
                         for s in script["steps"]]
        data["scripts"].append(twin)


def _validated(base: Workload, data: dict[str, Any]) -> Workload:
    from perflab.study.configure import copy_loaded_think

    workload = Workload.model_validate(data)
    copy_loaded_think(base, workload)
    return workload


def mixed_run_cost(run_dir: Path) -> float:
    """x of one mixed run, as a relative cost: the knob's added thread CPU per transaction (each
    transaction against its own twin, weighted by the plain transactions' mix) over the base's
    whole CPU per transaction (PBT/CMD (S), the twins' share taken out)."""
    import pyarrow.parquet as pq

    from perflab.reduce.reduce import reduce_run

    metrics = reduce_run(run_dir)
    frame = pq.read_table(run_dir / "transactions.parquet", columns=["transaction", "end", "ok", "cpu"]).to_pandas()
    window = metrics.window
    frame = frame[(frame["end"] >= window.start) & (frame["end"] < window.end) & frame["ok"] & frame["cpu"].notna()]
    plain = frame[~frame["transaction"].str.endswith(TWIN)]
    twins = frame[frame["transaction"].str.endswith(TWIN)]
    if plain.empty or twins.empty:
        raise InputError(f"mixed run {run_dir.name}: no per-transaction CPU to compare (an adapter that measures it "
                         "is needed)")
    delta = 0.0
    counts = plain.groupby("transaction").size()
    for name, count in counts.items():
        mine = twins[twins["transaction"] == name + TWIN]["cpu"]
        if mine.empty:
            raise InputError(f"mixed run {run_dir.name}: no knob twin of {name} completed")
        delta += count / counts.sum() * (float(mine.mean()) - float(plain[plain["transaction"] == name]["cpu"].mean()))
    share = len(twins) / len(frame)
    pbt = metrics.values.get("pbt_cmd_s")
    if pbt is None:
        raise InputError(f"mixed run {run_dir.name}: no PBT/CMD (S)")
    c0 = pbt / 1000.0 - share * delta
    return delta / c0


@dataclass(frozen=True)
class TruthRuns:
    """The knob's measured relative cost per unit, from mixed runs (one value per run)."""

    units: int
    per_unit: float
    se: float
    values: list[float]
    runs: list[str]

    def log_ratio(self, units: int) -> float:
        """ln of ITR's true ratio at `units`: the knob raises CPU per transaction by per_unit x units."""
        return -math.log1p(self.per_unit * units)

    def log_se(self, units: int) -> float:
        return units * self.se / (1.0 + self.per_unit * units)


def measure_truth(run_mixed: Callable[[Workload, str], tuple[str, Path]], workload: Workload, added: float,
                  runs: int) -> TruthRuns:
    """The knob's truth: a first mixed run at PROBE_UNITS sizes the knob for `added` (a share of
    CPU per transaction), then `runs` mixed runs at that size. `run_mixed(workload, label)` runs
    one alone at the study's load and returns (run id, run directory)."""
    probe = PROBE_UNITS
    run_id, run_dir = run_mixed(with_twins(workload, probe), f"knob probe ({probe} units)")
    per_unit = mixed_run_cost(run_dir) / probe
    if not (per_unit > 0 and math.isfinite(per_unit)):
        raise InputError(f"the knob added no measurable CPU at {probe} units (run {run_id})")
    units = max(1, round(added / per_unit))
    values, ids = [], []
    for i in range(runs):
        run_id, run_dir = run_mixed(with_twins(workload, units), f"knob truth {i + 1}/{runs} ({units} units)")
        values.append(mixed_run_cost(run_dir) / units)
        ids.append(run_id)
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.inf
    return TruthRuns(units, mean, se, values, ids)


def estimate(truth: TruthRuns, design_log: float, design_se: float, blocks: int, level: float) -> \
        tuple[KnobRecord, BiasBound | None]:
    """k from the knob blocks' paired estimate (`design_log` ± `design_se`, over `blocks` pairs)
    and the truth, with its interval at `level` (t with the knob blocks' degrees of freedom, the
    fewer of the two sources'); the bound it gives (None: k could not be estimated)."""
    from perflab.stats.estimate import t_quantile

    x, x_se = truth.log_ratio(truth.units), truth.log_se(truth.units)
    record = KnobRecord(units=truth.units, per_unit=truth.per_unit, per_unit_se=truth.se, truth_runs=truth.runs,
                        truth_values=truth.values, true_log_ratio=x, true_log_se=x_se, blocks=blocks,
                        design_log_ratio=design_log, design_log_se=design_se, level=level)
    if not (math.isfinite(design_log) and math.isfinite(design_se) and x < 0 and blocks >= 2):
        return record, None
    k = design_log / x - 1.0
    k_se = abs(design_log / x) * math.hypot(design_se / design_log if design_log else math.inf, x_se / x)
    df = max(1, min(blocks - 1, len(truth.values) - 1))
    spread = t_quantile(0.5 + level / 2.0, df) * k_se
    if not math.isfinite(spread):
        return record, None
    k_low = max(k - spread, MIN_SCALE - 1.0)
    record.k, record.k_se, record.k_low, record.k_high = k, k_se, k_low, max(k + spread, k_low)
    return record, BiasBound(record.k_low, record.k_high, 0.0, k_mid=k)
