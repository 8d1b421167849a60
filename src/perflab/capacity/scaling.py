"""Capacity per added processor: ITR against processors online (the LSPR's shape).

The seeds built smaller models by varying processors offline (Table 31: 9021-340/500/580/720 =
the 720 with 1, 2, 3, 6 CPUs) and published ITRR (H) = ITR (H) relative to the 1-way. Here, for
each level: ITRR against the smallest level, the efficiency ITRR ÷ (n / n₀) (1.0 = linear), and
the ITRR each added processor brought, (ITRR_k − ITRR_{k−1}) / (n_k − n_{k−1}) -- the number an
LSPR table implies and a planner multiplies by.

Inputs: a perflab sweep over `sut_cpus` (ITR (S), intervals from the study's blocks through
`perflab.stats.compare`), or a seed-table CSV with PROCESSORS and ITR (H) rows (one run per
column, so no intervals; a printed ITRR (H) row is checked against the recomputed one).
Called by `summary.capacity_summary` and `perflab capacity cpus`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from perflab import caveats as cav
from perflab.capacity.points import Level, SweepData, finite
from perflab.catalog.registry import REGISTRY
from perflab.caveats import Caveat, Code
from perflab.derive.checks import judge
from perflab.derive.resolve import resolve_rows
from perflab.derive.table import Cell, Row, read_table
from perflab.errors import InputError
from perflab.stats import compare


@dataclass(frozen=True)
class ScalingLevel:
    """One processor count: ITR, ITRR vs the smallest level (with interval when runs allow),
    efficiency, and the ITRR per processor added since the previous level."""

    processors: float
    label: str
    runs: int
    itr: float
    itrr: float
    ci_low: float | None
    ci_high: float | None
    efficiency: float
    per_added: float | None
    printed_itrr: float | None = None
    printed_ok: bool | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Scaling:
    """The scaling table, the metric it is based on, and the caveats to print with it."""

    metric: str
    levels: list[ScalingLevel]
    confidence: float
    notes: list[Caveat] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"metric": self.metric, "confidence": self.confidence, "notes": [n.model_dump(mode="json") for n in self.notes],
                "levels": [lv.to_dict() for lv in self.levels]}


def sweep_scaling(data: SweepData, key: str = "itr_s") -> Scaling:
    """Scaling from a perflab sweep over sut_cpus (ITR (S) by default)."""
    if data.factor != "sut_cpus":
        raise InputError(f"no curve: scaling per processor needs a sweep over sut_cpus, this one varies "
                         f"{data.factor}", field="sweep.factor")
    if len(data.levels) < 2:
        raise InputError("no curve: scaling per processor needs ≥ 2 processor counts")
    base = data.levels[0]
    base_itr = base.mean(key)
    if base_itr is None:
        raise InputError(f"no curve: {key} not measured at {base.label}")
    out = []
    prev: tuple[float, float] | None = None  # (processors, ITRR) of the level before
    for level in data.levels:
        itr = level.mean(key)
        if itr is None:
            raise InputError(f"no curve: {key} not measured at {level.label}")
        itrr = itr / base_itr
        lo = hi = None
        if level is not base:
            lo, hi = _interval(base, level, key, data.confidence)
        per_added = None if prev is None else (itrr - prev[1]) / (level.n - prev[0])
        out.append(ScalingLevel(level.n, level.label, len(level.runs), itr, itrr, lo, hi,
                                itrr / (level.n / base.n), per_added))
        prev = (level.n, itrr)
    return Scaling(key, out, data.confidence, machine_caveats(data))


def _interval(base: Level, level: Level, key: str, confidence: float) -> tuple[float | None, float | None]:
    """The ratio's interval by the study's own comparison (paired by block when it can be)."""
    a, b = _by_block(base, key), _by_block(level, key)
    if sum(v is not None for v in a.values()) < 2 or sum(v is not None for v in b.values()) < 2:
        return None, None
    c = compare(a, b, metric=key, confidence=confidence)
    if not (math.isfinite(c.ci_low) and math.isfinite(c.ci_high)):
        return None, None
    return c.ci_low, c.ci_high


def _by_block(level: Level, key: str) -> dict[int, float | None]:
    """Block → value (None when not measured); position stands in for a missing block."""
    out: dict[int, float | None] = {}
    for i, run in enumerate(level.runs):
        value = finite(run.metric(key))
        out[run.block if run.block is not None else i] = value if value is not None and value > 0 else None
    return out


def machine_caveats(data: SweepData) -> list[Caveat]:
    """What this machine can and cannot show about processor scaling."""
    notes = [cav.remark(Code.MODEL_FIT, "scaling measured by varying the SUT's CPUs on one machine (the seeds' "
                        "'processors varied offline'): the memory, caches and I/O stay those of the whole machine")]
    cores = data.machine.cores
    placement = data.placement or ""
    if cores:
        notes.append(cav.remark(Code.MODEL_FIT, f"this machine has {cores} CPUs and the driver uses one "
                                f"({placement or 'placement not recorded'}): a SUT given more than "
                                f"{max(1, int(cores) - 1)} CPU(s) shares the driver's, so its scaling is understated; "
                                "the LSPR's shape at 4, 8, 16 ways needs a bigger machine", cores=cores))
    if any(level.runs and len(level.runs) < 2 for level in data.levels):
        notes.append(cav.remark(Code.NO_INTERVAL, "levels with one run have no interval: repeat blocks for one"))
    return notes


def table_scaling(path: Path) -> Scaling:
    """Scaling from a seed-table CSV (metric column, one column per run) with PROCESSORS and
    ITR (H) rows, read by the one seed-table reader (perflab.derive.table). A printed ITRR (H)
    row is judged as `perflab derive` judges it: the ratio of the two printed ITRs, each known
    to ± half a unit of its last digit, must overlap the printed ITRR ± half its last unit; a
    doubtful (`?`) ITRR is shown and never judged."""
    table = read_table(path)
    if table.layout != "metric":
        raise InputError("not a seed table with one column per run (first column `metric`)", file=path, line=1)
    rows = {meaning.metric.key: row for row, meaning in zip(table.rows, resolve_rows(
        [r.label for r in table.rows], REGISTRY)[0]) if meaning is not None and not meaning.component}
    for key, label in (("processors", "PROCESSORS"), ("itr_h", "ITR (H)")):
        if key not in rows:
            raise InputError(f"the table has no {label} row", file=path, field=label)
    runs = table.columns
    procs = [_number(c, path, rows["processors"]) for c in rows["processors"].cells]
    itr = [_number(c, path, rows["itr_h"]) for c in rows["itr_h"].cells]
    printed = rows.get("itrr_h")
    order = sorted(range(len(runs)), key=lambda i: procs[i].value or 0.0)
    if len({procs[i].value for i in order}) != len(order):
        raise InputError("two columns have the same PROCESSORS: not one scaling series", file=path,
                         field="PROCESSORS")
    first = order[0]
    base = itr[first]
    out = []
    prev: tuple[float, float] | None = None  # (processors, ITRR) of the column before
    for i in order:
        n, value = procs[i].value or 0.0, itr[i].value or 0.0
        itrr = value / (base.value or 1.0)
        p_val = p_ok = None
        if printed is not None:
            cell = printed.cells[i]
            shown = cell.reading()
            p_val = shown.value if shown is not None else None
            status, _, _ = judge(cell, itr[i].interval() / base.interval())
            p_ok = status.reproduced
        per_added = None if prev is None else (itrr - prev[1]) / (n - prev[0])
        out.append(ScalingLevel(n, runs[i], 1, value, itrr, None, None, itrr / (n / (procs[first].value or 1.0)),
                                per_added, p_val, p_ok))
        prev = (n, itrr)
    return Scaling("itr_h", out, math.nan, [cav.remark(Code.NO_INTERVAL, "one run per processor count in the table: "
                                                                        "no intervals")])


def _number(cell: Cell, path: Path, row: Row) -> Cell:
    """A cell that must be a positive number (a doubtful `?` cell is read through its `?`)."""
    shown = cell.reading()
    if shown is None or shown.value is None or shown.value <= 0:
        raise InputError(f"expected a positive number, got {cell.text!r}", file=path, line=row.line, field=row.label)
    return shown
