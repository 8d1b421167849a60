"""A store's history: its runs as series, each series' change points, and whose change each was.

    doc = build_history(store_home, HistoryOptions(metrics=["itr_s"]))

One `HistoryDocument` answers `perflab history` (table, JSON, exit code), the dashboard's
history page and `--confirm`. The steps, each in its own module:

* runs.py reads every run's series key, time, version and host software;
* cache.py gives each run's reduction (its values and its outcome under the one exclusion rule);
* this module orders each series, excludes what cannot be analysed (with the reason), attaches
  each point's host state (the study's calibration, the block's base run, the nearest reference
  run) and finds the change points (edivisive.py) on the logarithms of the values;
* cause.py says whose change each change point is.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from perflab.catalog.registry import REGISTRY, base_key
from perflab.errors import EXIT_CHANGE_POINT, EXIT_OK, InputError
from perflab.history import edivisive
from perflab.history.cache import MetricsCache, Reduced
from perflab.history.cause import attribute
from perflab.history.model import ChangePoint, HistoryDocument, HostState, Order, PeerRun, Point, Series
from perflab.history.runs import RunInfo, digest, read_runs
from perflab.history.versions import version_ranks
from perflab.stats.criteria import DEFAULT_CONFIDENCE
from perflab.stats.estimate import welch_log_interval

#: How many of a series' last runs a change point must lie among to be new (`--recent`).
RECENT_RUNS = 5
FAIL_ON = ("any", "worse")


@dataclass
class HistoryOptions:
    metrics: list[str] = field(default_factory=lambda: [REGISTRY.role("capacity")[0]])
    order: Order = "time"
    version_from: str = "auto"
    ignore: list[str] = field(default_factory=list)
    workload: str | None = None
    host: str | None = None          # a host name or host digest (prefix)
    series: str | None = None        # a series id (prefix)
    references: list[str] = field(default_factory=list)   # workloads whose series are the host's reference
    relative: bool = False           # values over the block's base run (studies)
    recent: int = RECENT_RUNS
    fail_on: str = "any"
    significance: float = edivisive.SIGNIFICANCE
    permutations: int = edivisive.PERMUTATIONS
    level: float = DEFAULT_CONFIDENCE

    def check(self) -> None:
        unknown = [m for m in self.metrics if REGISTRY.get(base_key(m)) is None]
        if unknown:
            raise InputError(f"unknown metric key {unknown[0]!r}: `perflab metrics` lists the keys", field="--metric")
        if self.order not in ("time", "version"):
            raise InputError(f"expected time or version, got {self.order!r}", field="--by")
        if self.fail_on not in FAIL_ON:
            raise InputError(f"expected any or worse, got {self.fail_on!r}", field="--fail-on")
        if self.recent < 1:
            raise InputError("expected 1 or more runs", field="--recent")
        if not 0.0 < self.significance < 0.5:
            raise InputError(f"expected a level in (0, 0.5), got {self.significance:g}", field="--significance")
        if self.permutations < 19 or self.permutations > 100_000:
            raise InputError(f"expected 19 to 100000 permutations, got {self.permutations}", field="--permutations")


def series_id(run: RunInfo) -> str:
    return digest(run.key.model_dump(), 8)


def _chosen(runs: list[RunInfo], options: HistoryOptions) -> list[RunInfo]:
    picked = []
    for run in runs:
        if options.workload is not None and run.key.workload != options.workload:
            continue
        if options.host is not None and options.host not in (run.key.hostname,) and \
                not run.key.host.startswith(options.host):
            continue
        if options.series is not None and not series_id(run).startswith(options.series):
            continue
        picked.append(run)
    return picked


def _ordered(runs: list[RunInfo], order: Order) -> tuple[list[RunInfo], list[RunInfo]]:
    """(ordered runs, runs without a version when ordering by version)."""
    by_time = sorted(runs, key=lambda r: (r.time, r.run_id))
    if order == "time":
        return by_time, []
    versioned = [r for r in by_time if r.version]
    ranks = version_ranks([r.version for r in versioned if r.version])
    return sorted(versioned, key=lambda r: (ranks[r.version or ""], r.time, r.run_id)), \
        [r for r in by_time if not r.version]


def _base_runs(runs: list[RunInfo]) -> dict[tuple[str, int], RunInfo]:
    """Each study block's run of the study's base configuration."""
    bases: dict[tuple[str, int], RunInfo] = {}
    for run in runs:
        study = run.study
        if study is None or run.record.config.block is None or not study.configurations:
            continue
        base = next((c.name for c in study.configurations if c.base), study.configurations[0].name)
        if run.record.config.configuration == base and run.record.study:
            bases[(run.record.study, run.record.config.block)] = run
    return bases


def _value(reduced: Reduced | InputError | None, metric: str) -> float | None:
    if not isinstance(reduced, Reduced):
        return None
    return reduced.values.get(metric)


def _point(run: RunInfo, metric: str, reduced: dict[str, Reduced | InputError],
           bases: dict[tuple[str, int], RunInfo], relative: bool, missing_version: bool) -> Point:
    r = reduced.get(run.run_id)
    raw = _value(r, metric)
    excluded: list[str] = []
    if isinstance(r, InputError):
        excluded.append(f"cannot be reduced: {r}")
    elif r is not None and r.outcome not in ("complete", "monitor_lost"):
        excluded.append(f"{r.outcome.replace('_', ' ')}" + (f": {'; '.join(r.reasons)}" if r.reasons else ""))
    if missing_version:
        excluded.append("no version recorded (ordered by version)")
    if raw is None and not excluded:
        excluded.append(f"{metric} not measured")
    elif raw is not None and raw <= 0 and not excluded:
        excluded.append(f"{metric} is {raw:g}: not a positive value")
    cfg = run.record.config
    base_run = bases.get((run.record.study or "", cfg.block)) if cfg.block is not None else None
    base = None
    if base_run is not None and base_run.run_id != run.run_id:
        base = PeerRun(run_id=base_run.run_id, workload=base_run.key.workload, value=_value(reduced.get(base_run.run_id),
                                                                                           metric))
    value = raw
    if relative:
        if base_run is not None and base_run.run_id == run.run_id:
            if not excluded:
                excluded.append("the block's base run itself (--relative: the other configurations over it)")
            value = None
        elif base is None or base.value is None or base.value <= 0:
            if not excluded:
                excluded.append("no base run in its study block to be relative to (--relative)")
            value = None
        elif raw is not None:
            value = raw / base.value
    host = HostState(kernel=run.host_software.get("kernel"), os=run.host_software.get("os"),
                     python=run.host_software.get("python"), calibration=run.calibration, base=base)
    return Point(run_id=run.run_id, created=run.record.created, time=run.time, version=run.version,
                 label=run.record.label, study=run.record.study, block=cfg.block, value=value, raw=raw,
                 excluded=excluded, host=host)


def change_points_of(points: list[Point], options: HistoryOptions, higher_is_better: bool | None) -> list[ChangePoint]:
    """The change points of a series' analysed points, in order, with their sizes and intervals."""
    used = [p for p in points if not p.excluded and p.value is not None]
    if len(used) < 2 * edivisive.MIN_SIZE:
        return []
    logs = np.log(np.array([p.value for p in used], dtype=float))
    found = sorted(edivisive.change_points(logs, significance=options.significance,
                                           permutations=options.permutations), key=lambda f: f.index)
    edges = [0, *[f.index for f in found], len(used)]
    out = []
    for i, f in enumerate(found):
        before, after = logs[edges[i]:f.index], logs[f.index:edges[i + 2]]
        interval = welch_log_interval(before, after, options.level)
        ratio = math.exp(float(interval.center))
        direction: Literal["better", "worse", "none"]
        if higher_is_better is None or ratio == 1.0:
            direction = "none"
        else:
            direction = "better" if (ratio > 1.0) == higher_is_better else "worse"
        out.append(ChangePoint(
            index=f.index, before=used[f.index - 1].run_id, after=used[f.index].run_id,
            before_version=used[f.index - 1].version, after_version=used[f.index].version,
            before_created=used[f.index - 1].created, after_created=used[f.index].created,
            runs_before=len(before), runs_after=len(after), mean_before=math.exp(float(before.mean())),
            mean_after=math.exp(float(after.mean())), ratio=ratio, ci_low=math.exp(float(interval.low)),
            ci_high=math.exp(float(interval.high)), level=options.level, p_value=f.p_value, q=f.q,
            direction=direction, recent=f.index >= len(used) - options.recent))
    return out


def _reference_points(series: list[Series]) -> None:
    """Each point's nearest run (in time) of a reference series of its host, relative to that
    reference's median: the host's speed when the run ran."""
    by_host: dict[str, list[Series]] = defaultdict(list)
    for s in series:
        if s.reference:
            by_host[s.key.host].append(s)
    for s in series:
        refs = [r for r in by_host.get(s.key.host, []) if r is not s and r.metric == s.metric]
        if not refs:
            continue
        candidates = []
        for ref in refs:
            values = [p.raw for p in ref.analysed() if p.raw is not None]
            median = float(np.median(values)) if values else None
            candidates += [(p, ref, median) for p in ref.analysed() if p.raw is not None]
        if not candidates:
            continue
        times = np.array([c[0].time for c in candidates])
        for point in s.points:
            p, ref, median = candidates[int(np.argmin(np.abs(times - point.time)))]
            point.host.reference = PeerRun(run_id=p.run_id, workload=ref.key.workload, value=p.raw,
                                           relative=None if not median or p.raw is None else p.raw / median)


def build_history(home: Path, options: HistoryOptions, cache: MetricsCache | None = None) -> HistoryDocument:
    options.check()
    store = read_runs(home, options.version_from, options.ignore)
    chosen = _chosen(store.runs, options)
    # The reference series' runs are read whatever the filters chose: they say what the host did.
    wanted_ids = {r.run_id for r in chosen}
    references = set(options.references)
    extra = [r for r in store.runs if r.run_id not in wanted_ids and
             (r.key.workload in references or r.aa) and any(r.key.host == c.key.host for c in chosen)]
    every = chosen + extra
    groups: dict[str, list[RunInfo]] = defaultdict(list)
    for run in every:
        groups[series_id(run)].append(run)
    cache = cache or MetricsCache(home)
    # The block's base runs are reduced too (--relative, and each point's host state).
    bases = _base_runs(store.runs)
    wanted = {r.run_id: r.run_dir for r in every}
    for run in every:
        base = bases.get((run.record.study or "", run.record.config.block or -1))
        if base is not None:
            wanted.setdefault(base.run_id, base.run_dir)
    reduced = cache.reduced(list(wanted.values()))
    series: list[Series] = []
    for sid, runs in groups.items():
        ordered, unversioned = _ordered(runs, options.order)
        first = runs[0]
        is_reference = first.key.workload in references or all(r.aa for r in runs)
        for metric in options.metrics:
            entry = REGISTRY[base_key(metric)]
            higher = {"higher": True, "lower": False}.get(entry.direction.value)
            points = [_point(r, metric, reduced, bases, options.relative, False) for r in ordered]
            points += [_point(r, metric, reduced, bases, options.relative, True) for r in unversioned]
            s = Series(id=sid, key=first.key, metric=metric, label=entry.label, unit=entry.unit,
                       direction=entry.direction.value, relative=options.relative, reference=is_reference,
                       points=points)
            analysed = s.analysed()
            if len(analysed) < 2 * edivisive.MIN_SIZE:
                s.note = (f"{len(analysed)} analysed runs: a change point needs {edivisive.MIN_SIZE} runs on each "
                          "side of it")
            s.change_points = change_points_of(points, options, higher)
            series.append(s)
    series.sort(key=lambda s: (s.key.hostname, s.key.workload, s.key.configuration, s.key.arrangement,
                               options.metrics.index(s.metric)))
    _reference_points(series)
    attribute(series)
    # The reference series were read for the host's sake; they are shown only when asked for.
    shown = [s for s in series if s.points and s.points[0].run_id in wanted_ids]
    exit_code, meaning = verdict(shown, options)
    return HistoryDocument(store=str(home), order=options.order, metrics=list(options.metrics), recent=options.recent,
                           significance=options.significance, permutations=options.permutations, level=options.level,
                           series=shown, skipped=store.skipped, exit_code=exit_code, meaning=meaning)


def gating(cp: ChangePoint, fail_on: str) -> bool:
    """Whether a change point fails `perflab history --gate`: new (among the last runs), not the
    host's, and worse when only worse ones count."""
    return cp.recent and cp.cause != "host" and (fail_on == "any" or cp.direction == "worse")


def verdict(series: list[Series], options: HistoryOptions) -> tuple[int, str]:
    failing = [(s, cp) for s in series for cp in s.change_points if gating(cp, options.fail_on)]
    if failing:
        s, cp = failing[0]
        more = f" (and {len(failing) - 1} more)" if len(failing) > 1 else ""
        return EXIT_CHANGE_POINT, (f"a change point among the last {options.recent} runs: {s.key.workload} {s.label} "
                                   f"x{cp.ratio:.4f} at run {cp.after}{more}")
    host = sum(1 for s in series for cp in s.change_points if cp.recent and cp.cause == "host")
    tail = f" ({host} recent change point(s) of the host's)" if host else ""
    return EXIT_OK, f"no change point of the software among the last {options.recent} runs{tail}"
