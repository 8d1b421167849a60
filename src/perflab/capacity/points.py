"""A sweep study's measurements as capacity models need them: one level per factor value, with
the valid runs measured there, and the checks that decide whether a curve may be drawn at all.

The factor becomes a number: users and workers as they are, `sut_cpus` as the count of CPUs
online to the SUT (the seeds' PROCESSORS). Excluded runs (failed gates) are left out, as the
study's own sweep summary leaves them out; a level with no valid run is dropped with a note.

Everything is read from the StudyDocument's attributes (perflab.records.study); a level keeps
its runs as the study's `StudyRun` records, and the models ask them for metrics by catalog key.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from perflab import caveats as cav
from perflab.capacity.source import StudySource
from perflab.caveats import Caveat, Code
from perflab.errors import InputError, NoCurve
from perflab.records.study import ConfigurationRecord, StudyRun
from perflab.stats.criteria import DEFAULT_CONFIDENCE
from perflab.values import finite

#: factors whose value is a concurrency a capacity model can use
NUMERIC_FACTORS = ("users", "workers", "sut_cpus")
#: relative change treated as noise by the monotonicity checks when runs do not tell us more
DEFAULT_NOISE = 0.05
#: CPUs' worth of other processes' work during a window above which a level is called disturbed
DISTURBED_CPU = 0.10


@dataclass(frozen=True)
class Level:
    """One factor value: *n* as a number, the study's *label* for it, the valid runs' metrics."""

    n: float
    label: str
    runs: tuple[StudyRun, ...]
    excluded: int = 0

    def values(self, key: str) -> list[float]:
        """The finite values of metric *key* over this level's valid runs."""
        return [v for v in (finite(r.metric(key)) for r in self.runs) if v is not None]

    def other_load(self) -> float | None:
        """CPUs' worth of work by processes other than the SUT, the driver and the monitor
        during the window (busy (H) − SUT − driver − monitor, in CPU-seconds per second), the
        largest over runs; None when a run lacks one of the four. Models assume the SUT had its
        CPUs to itself; a machine shared with other work breaks that."""
        worst = None
        for r in self.runs:
            busy_h, busy_s, driver, monitor, window = (finite(r.metric(k)) for k in (
                "busy_sec_h", "busy_sec_s", "driver_sec", "monitor_sec", "window_s"))
            if busy_h is None or busy_s is None or driver is None or monitor is None or not window or window <= 0:
                continue
            other = (busy_h - busy_s - driver - monitor) / window
            worst = other if worst is None else max(worst, other)
        return worst

    def mean(self, key: str) -> float | None:
        """Geometric mean over runs for positive metrics (as the study's sweep summary does),
        arithmetic for ones that may be 0; None when no run measured it."""
        v = self.values(key)
        if not v:
            return None
        if all(x > 0 for x in v):
            return float(math.exp(sum(math.log(x) for x in v) / len(v)))
        return float(sum(v) / len(v))

    def measured(self, key: str) -> float:
        """`mean(key)` of a metric a model requires (`require_metric` has refused a sweep
        without it); "no curve" if it was not measured after all."""
        value = self.mean(key)
        if value is None:
            raise NoCurve(f"no curve: {key} not measured at {self.label}")
        return value


@dataclass(frozen=True)
class Machine:
    """What capacity needs of the machine a study ran on, read once from the base
    configuration's hardware fingerprint (perflab.sut.fingerprint: `cores`, `online_cpus`,
    `processors`); None where the fingerprint does not say."""

    cores: int | None = None
    processors: float | None = None

    @classmethod
    def of(cls, configuration: ConfigurationRecord | None) -> Machine:
        hardware = configuration.hardware if configuration is not None else {}
        cores = hardware.get("cores")
        online = hardware.get("online_cpus")
        if not (isinstance(cores, int) and cores > 0):
            cores = len(online) if isinstance(online, list) and online else None
        processors = finite(hardware.get("processors"))
        return cls(cores, processors if processors is not None and processors > 0 else None)


@dataclass(frozen=True)
class SweepData:
    """The levels of a sweep in increasing order, and what reading them noticed."""

    study_id: str | None
    title: str
    factor: str
    levels: tuple[Level, ...]
    processors: float | None
    machine: Machine
    placement: str | None
    confidence: float
    notes: list[Caveat] = field(default_factory=list)

    @property
    def max_n(self) -> float:
        return max(level.n for level in self.levels)

    def level(self, n: float) -> Level:
        for level in self.levels:
            if level.n == n:
                return level
        raise InputError(f"no measured level {n:g} in this sweep (levels: {self.describe_levels()})",
                         field="--fit")

    def describe_levels(self) -> str:
        return ", ".join(f"{level.n:g}" for level in self.levels)


def sweep_data(source: StudySource) -> SweepData:
    """The levels of the sweep study *source*. Raises InputError when it is not a sweep over a
    numeric factor or has no valid run. Called by every sweep-based model."""
    doc, path = source.document, source.path
    sweep = doc.sweep
    if sweep is None or not sweep.points:
        raise InputError("not a sweep study (its 'sweep' is empty): capacity curves need a sweep over "
                         "users, workers or sut_cpus; for A/B studies use `perflab capacity compose`",
                         file=path, field="sweep")
    factor = sweep.factor
    if factor not in NUMERIC_FACTORS:
        raise InputError(f"a sweep over {factor!r} has no concurrency to model; capacity curves need "
                         f"one of {', '.join(NUMERIC_FACTORS)}", file=path, field="sweep.factor")
    levels: list[Level] = []
    notes: list[Caveat] = []
    for point in sweep.points:
        n = _numeric(factor, point.value, path)
        mine = doc.runs_of(point.config)
        kept = [r for r in mine if r.valid]
        if not kept:
            notes.append(cav.remark(Code.RUNS_EXCLUDED, f"{point.config}: no valid run ({len(mine)} excluded or "
                                    "missing); level left out", config=point.config))
            continue
        levels.append(Level(n, point.config, tuple(kept), len(mine) - len(kept)))
    levels.sort(key=lambda level: level.n)
    for level in levels:
        other = level.other_load()
        if other is not None and other > DISTURBED_CPU:
            notes.append(cav.remark(Code.OTHER_WORK, f"{level.label}: other processes used {other:.2f} CPU during "
                                    "the window (busy (H) − SUT − driver − monitor): the measurement may be "
                                    "disturbed, and the models assume the SUT had its CPUs to itself",
                                    level=level.label, cpus=other))
    for a, b in zip(levels, levels[1:]):
        if a.n == b.n:
            raise InputError(f"two sweep points have the same {factor} ({a.n:g}): {a.label!r} and {b.label!r}",
                             file=path, field="sweep.points")
    if not levels:
        raise NoCurve("no curve: the sweep has no valid run at any level", file=path, field="sweep.points")
    machine = Machine.of(doc.configurations[0] if doc.configurations else None)
    return SweepData(
        study_id=doc.study_id,
        title=doc.name or doc.title,
        factor=factor,
        levels=tuple(levels),
        processors=_processors(levels, factor, machine),
        machine=machine,
        placement=doc.design.placement,
        confidence=doc.design.confidence or DEFAULT_CONFIDENCE,
        notes=notes,
    )


def _numeric(factor: str, value: Any, path: Path | None) -> float:
    """A sweep value as a number: `sut_cpus` lists (or "0-1" strings) count their CPUs."""
    if factor == "sut_cpus":
        if isinstance(value, list):
            count = len(value)
        elif isinstance(value, str):
            count = _cpu_count(value, path)
        else:
            count = int(value) if isinstance(value, int) else 0
        if count < 1:
            raise InputError(f"sut_cpus value {value!r} names no CPU", file=path, field="sweep.points")
        return float(count)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 1:
        raise InputError(f"a {factor} value must be a number ≥ 1, got {value!r}", file=path, field="sweep.points")
    return float(value)


def _cpu_count(text: str, path: Path | None) -> int:
    """CPUs in a list such as "1" or "0,2-3"."""
    count = 0
    try:
        for part in text.split(","):
            low, _, high = part.strip().partition("-")
            if low:
                count += int(high) - int(low) + 1 if high else 1
    except ValueError:
        raise InputError(f"expected CPU numbers such as 1 or 0,2-3, got {text!r}", file=path,
                         field="sweep.points") from None
    return count


def _processors(levels: Iterable[Level], factor: str, machine: Machine) -> float | None:
    """PROCESSORS online to the SUT when the sweep does not vary it: from the runs, else the
    configuration's hardware record; None when neither says."""
    if factor == "sut_cpus":
        return None
    seen = {v for level in levels for v in level.values("processors")}
    if len(seen) == 1:
        return seen.pop()
    if len(seen) > 1:
        raise InputError(f"the runs had different numbers of processors ({sorted(seen)}) although the sweep "
                         f"varies {factor}: not one system", field="processors")
    return machine.processors


def noise_cv(data: SweepData, key: str) -> float | None:
    """Pooled run-to-run CV (SD of ln) of *key* within levels that have ≥ 2 runs; None when no
    level was repeated. Called by the monotonicity checks to size their tolerance."""
    ss, df = 0.0, 0
    for level in data.levels:
        v = [x for x in level.values(key) if x > 0]
        if len(v) >= 2:
            logs = np.log(v)
            ss += float(((logs - logs.mean()) ** 2).sum())
            df += len(v) - 1
    return math.sqrt(ss / df) if df else None


def require_levels(data: SweepData, needed: int, model: str) -> None:
    """InputError "no curve" when the sweep has fewer levels than *model* needs."""
    if len(data.levels) < needed:
        raise NoCurve(f"no curve: {model} needs ≥ {needed} measured levels, the sweep has "
                         f"{len(data.levels)} ({data.describe_levels()})")


def require_metric(data: SweepData, key: str, label: str, model: str) -> None:
    """InputError "no curve" when some level has no value of *key* (e.g. PBT/CMD (S) was not
    measured because the SUT's CPU could not be attributed)."""
    missing = [level.label for level in data.levels if level.mean(key) is None]
    if missing:
        raise NoCurve(f"no curve: {model} needs {label}, not measured at {', '.join(missing)}")


def check_monotone(data: SweepData, key: str = "etr_t", label: str = "ETR (T)") -> None:
    """InputError "no curve" when *key* is not one rise-then-fall curve over the factor.

    Throughput may rise, flatten and fall (the USL's retrograde region), but falling by more
    than noise and then rising again by more than noise means the points do not come from one
    system under one load law -- a changed configuration, a disturbed run -- and any fitted curve
    would be made up. "Noise" is the larger of 5 % and 3× the pooled run-to-run CV.
    """
    means = [(n, v) for n, v in ((level.n, level.mean(key)) for level in data.levels) if v is not None and v > 0]
    if len(means) < 3:
        return
    cv = noise_cv(data, key)
    tol = max(DEFAULT_NOISE, 3.0 * cv) if cv is not None else DEFAULT_NOISE
    low_n: float | None = None
    low_v: float | None = None
    peak_n, peak_v = means[0]
    falling = False  # (with the lowest point since the peak in low_n, low_v)
    for n, v in means[1:]:
        if v > peak_v:
            if falling and low_v is not None and v > low_v * (1 + tol) and low_v < peak_v * (1 - tol):
                raise InputError(
                    f"no curve: {label} is not monotone in {data.factor}: it falls from {peak_v:.4g} at "
                    f"{peak_n:g} to {low_v:.4g} at {low_n:g} and rises again to {v:.4g} at {n:g} (more than "
                    f"the {100 * tol:.0f} % noise allowance): not one load curve")
            peak_n, peak_v = n, v
            falling, low_n, low_v = False, None, None
        elif low_v is None or v < low_v:
            falling, low_n, low_v = True, n, v


def check_response_monotone(data: SweepData, key: str = "avg_last_t", label: str = "AVG LAST (T)") -> None:
    """InputError "no curve" when response time falls markedly as users are added.

    More users never shorten the mean response time of a closed system (MVA's R(n) is
    non-decreasing), so a fall of more than noise (25 %, or 3× the run-to-run CV when larger;
    response times at low load are noisy) says the points were not measured on one system.
    """
    cv = noise_cv(data, key)
    tol = max(0.25, 3.0 * cv) if cv is not None else 0.25
    worst_n, worst_v = None, None
    for level in data.levels:
        v = level.mean(key)
        if v is None:
            continue
        if worst_v is not None and v < worst_v * (1 - tol):
            raise InputError(
                f"no curve: {label} falls from {worst_v:.4g} s at {worst_n:g} users to {v:.4g} s at "
                f"{level.n:g} (more than {100 * tol:.0f} %): more users cannot shorten the response "
                f"time of one closed system")
        if worst_v is None or v > worst_v:
            worst_n, worst_v = level.n, v
