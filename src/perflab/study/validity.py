"""The one exclusion rule: is a run valid evidence for a verdict, and if not, why.

Used by `perflab study` (each run judged as it ends, then once more when every run is in, and
the decision stored in study.json), by `perflab compare` (runs of a study keep the study's
decision; other runs: the gates that apply to a single run), by `perflab run` and `perflab show`
(one run's outcome) and by the reports, which print the gates as this module returns them --
typed results (`GateResult`: gate, measured, limit, outcome), never restated elsewhere. A run
that fails a gate is kept and shown with its reasons, never silently dropped.

The gates, in order:

1. the run itself: it completed, its driver was not saturated, no transaction hung (the run
   record's own caveats, decided when the run ended);
2. errors: the share of finished transactions that failed is within `max_error_rate`;
3. something was measured: at least one completed transaction in the window;
4. steady state, judged on what the SUT does (perflab.study.steadiness): the primary metrics'
   per-interval series, ETR (T) in closed loop and the response time, each against the noise
   the series really has -- the study's other runs when there are enough of them, else the
   worst case of an autocorrelated wander; a pair's run beside its partner; and in open loop,
   completions short of the arrivals offered;
5. utilization: a calibrated base run lies inside the utilization band (a pair's, together:
   `judge_pair`).

Each gate says which metrics it protects, by when they are measured (`Span`, a property of each
metric in the catalog): the gates about the window's pace -- the driver not saturated, steady
state, keeping up with the arrivals, the utilization band, a pair's drivers and CPUs -- protect
the rows measured over the window (ETR, ITR, response times, CPU per command) and nothing
measured after it (a server's restart once its load has ended depends on the WAL its jobs left,
not on how fast they were driven); every other gate protects every row. A run fails a study only
for a gate that protects one of the study's primary metrics; a gate that failed but protects
none of them sets the run aside for the rows it does protect (`SetAside`: the run is kept, its
values of those rows are not counted, and the failed gate is shown as a note with its measured
value and limit).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Literal

from perflab import caveats as cav
from perflab.catalog.metric import Span
from perflab.catalog.registry import REGISTRY
from perflab.caveats import Caveat
from perflab.records.run import RunRecord
from perflab.study.steadiness import Scale, Series, Trend, drifted, fit
from perflab.values import as_float, finite

Outcome = Literal["pass", "fail", "note", "not judged"]
#: The per-interval series whose steadiness is judged besides the primary metrics: (key, on a log
#: scale, closed loop only).
RATE_SERIES = ("etr_t",)
RESPONSE_SERIES = "avg_last_t"
#: Caveat codes the steadiness gates raise (a study's second judgement replaces these).
STEADY_CODES = (cav.Code.NOT_STEADY, cav.Code.FELL_BEHIND, cav.Code.STEADY_UNJUDGED)
#: What a gate protects: every metric, or only those measured over the window (its pace).
EVERY_SPAN = frozenset(Span)
WINDOW_ONLY = frozenset({Span.WINDOW})
#: The run's own caveats (run.json `invalid`) that are about the window's pace only.
WINDOW_CODES = frozenset({cav.Code.DRIVER_SATURATED})


@dataclass(frozen=True)
class GateSettings:
    """The thresholds a judgement used (stored in study.json's design, so it can be re-derived)."""

    max_error_rate: float = cav.MAX_ERROR_RATE
    max_etr_trend: float = cav.MAX_DRIFT
    util_band: tuple[float, float] | None = None
    max_response_trend: float = cav.MAX_RESPONSE_DRIFT


@dataclass(frozen=True)
class GateResult:
    """One gate as it judged one run: what it measured, its limit, the outcome, and the caveat a
    failure (or a note) carries. `measured` and `limit` are in `unit`."""

    gate: str
    outcome: Outcome
    measured: float | None = None
    limit: float | None = None
    unit: str = ""
    caveat: Caveat | None = None
    bound: str = ""      # the limit in words ("at most 1%", "±5%", "80-100%")
    protects: frozenset[Span] = EVERY_SPAN   # the metrics it protects, by when they are measured

    def excludes(self, deciding: frozenset[Span]) -> bool:
        """A failure that excludes the run from a study deciding on metrics of these spans."""
        return self.outcome == "fail" and bool(self.protects & deciding)

    def set_aside(self, deciding: frozenset[Span]) -> bool:
        """A failure that protects none of the deciding metrics: the run is kept, not counted
        in the rows the gate protects."""
        return self.outcome == "fail" and not self.protects & deciding


def deciding_spans(primary: Sequence[str] | None) -> frozenset[Span]:
    """When a study's primary metrics are measured (default: the capacity key's, the window)."""
    return frozenset(REGISTRY.span(k) for k in (primary or [REGISTRY.role("capacity")[0]]))


@dataclass
class RunValidity:
    """Every gate's result for one run, and what they decide for a study whose primary metrics
    are measured in `deciding` spans (default every span: any failure excludes)."""

    gates: list[GateResult] = field(default_factory=list)
    deciding: frozenset[Span] = EVERY_SPAN

    @property
    def exclusions(self) -> list[Caveat]:
        return [g.caveat for g in self.gates if g.excludes(self.deciding) and g.caveat is not None]

    @property
    def set_aside(self) -> list[GateResult]:
        """The failed gates that protect none of the study's primary metrics."""
        return [g for g in self.gates if g.set_aside(self.deciding)]

    @property
    def notes(self) -> list[Caveat]:
        """The notes, then each set-aside failure as a note (module doc)."""
        out = [g.caveat for g in self.gates if g.outcome in ("note", "not judged") and g.caveat is not None]
        return out + [cav.set_aside(g.caveat, sorted(s.value for s in g.protects)) for g in self.set_aside
                      if g.caveat is not None]

    @property
    def valid(self) -> bool:
        return not self.exclusions


@dataclass(frozen=True)
class SeriesSpec:
    key: str
    log: bool
    limit: float


def steady_series(primary: Sequence[str], closed: bool, gates: GateSettings) -> list[SeriesSpec]:
    """Which per-interval series a run's steadiness is judged on (module doc, gate 4)."""
    from perflab.reduce.reduce import INTERVAL_KEYS

    keys: list[SeriesSpec] = []
    response_rows = REGISTRY.role("response_rows")
    for key in primary:
        if key not in INTERVAL_KEYS or key == RESPONSE_SERIES or REGISTRY.machine_wide(key):
            continue
        if key in response_rows:    # a response percentile drifts like the mean: on a log scale
            keys.append(SeriesSpec(key, True, math.log1p(gates.max_response_trend)))
        else:
            keys.append(SeriesSpec(key, False, gates.max_etr_trend))
    if closed:
        keys += [SeriesSpec(k, False, gates.max_etr_trend) for k in RATE_SERIES if k not in primary]
    keys.append(SeriesSpec(RESPONSE_SERIES, True, math.log1p(gates.max_response_trend)))
    return keys


def run_trends(per_interval: Sequence[Mapping[str, Any]] | None, specs: Sequence[SeriesSpec],
               partner: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Trend | None]:
    """Each series' trend, relative to the partner's where a partner is given."""
    out = {}
    for spec in specs:
        series = Series.of(per_interval, spec.key)
        if partner is not None:
            series = series.relative_to(Series.of(partner, spec.key))
        out[spec.key] = fit(series, spec.log, bend=spec.log)
    return out


def steady_gates(values: Mapping[str, Any], per_interval: Sequence[Mapping[str, Any]] | None, closed: bool,
                 gates: GateSettings, primary: Sequence[str], partner: Sequence[Mapping[str, Any]] | None = None,
                 scales: Mapping[str, Scale] | None = None) -> list[GateResult]:
    """Gate 4. `scales`: per series key, the study's between-runs null (else each series is judged
    alone); `partner`: a pair's partner's per-interval rows."""
    out: list[GateResult] = []
    if not closed:
        out.append(_fell_behind(values, gates.max_etr_trend))
    specs = steady_series(primary, closed, gates)
    trends = run_trends(per_interval, specs, partner)
    intervals = max((t.intervals for t in trends.values() if t is not None), default=0)
    if intervals < cav.MIN_STEADY_INTERVALS:
        out.append(GateResult("steady state", "not judged", float(intervals), float(cav.MIN_STEADY_INTERVALS),
                              "intervals", cav.steady_unjudged(intervals),
                              f"at least {cav.MIN_STEADY_INTERVALS} intervals", WINDOW_ONLY))
        return out
    for spec in specs:
        trend = trends[spec.key]
        label = REGISTRY.label_of(spec.key)
        if trend is None:
            continue
        scale = (scales or {}).get(spec.key) or Scale.alone(trend)
        change = trend.change
        shown = math.expm1(change) if spec.log else change
        limit = math.expm1(spec.limit) if spec.log else spec.limit
        bound = (f"±{100 * limit:g}% across the window and beyond "
                 + ("the other runs' changes" if scale.basis == "between runs" else "an autocorrelated wander's"))
        if partner is not None:
            bound += ", relative to the partner"
        if drifted(trend, spec.limit, scale):
            caveat = cav.not_steady(label, shown, scale.se, limit, trend.intervals, partner is not None, scale.basis,
                                    spec.log)
            out.append(GateResult(f"steady {label}", "fail", shown, limit, "relative change", caveat, bound,
                                  WINDOW_ONLY))
        else:
            out.append(GateResult(f"steady {label}", "pass", shown, limit, "relative change", bound=bound,
                                  protects=WINDOW_ONLY))
    return out


def _fell_behind(values: Mapping[str, Any], limit: float) -> GateResult:
    """Open loop: fewer finished than offered by more than the limit and the count's noise,
    z(1 - STEADY_ALPHA) x sqrt(offered) (a Poisson count's standard error)."""
    offered = _num(values.get("tx_offered"))
    finished = _num(values.get("tx_ok")) + _num(values.get("errors_t"), 0.0)
    bound = f"at most {100 * limit:g}% behind the arrivals, beyond a count's noise"
    if not (offered == offered and offered > 0 and finished == finished):
        return GateResult("kept up with arrivals", "not judged", bound=bound, protects=WINDOW_ONLY)
    shortfall = offered - finished
    # The stdlib's normal quantile (Wichura's AS241, as scipy's ndtri): judging one run then
    # imports no scipy, 0.3 s of every `perflab run`.
    noise = NormalDist().inv_cdf(1.0 - cav.STEADY_ALPHA) * math.sqrt(offered)
    share = shortfall / offered
    if shortfall > limit * offered and shortfall > noise:
        return GateResult("kept up with arrivals", "fail", share, limit, "share behind",
                          cav.fell_behind(finished, offered, limit), bound, WINDOW_ONLY)
    return GateResult("kept up with arrivals", "pass", share, limit, "share behind", bound=bound, protects=WINDOW_ONLY)


def judge_run(record: RunRecord, values: Mapping[str, Any], per_interval: Sequence[Mapping[str, Any]] | None,
              gates: GateSettings, is_base: bool = False, partner: Sequence[Mapping[str, Any]] | None = None,
              primary: Sequence[str] | None = None, scales: Mapping[str, Scale] | None = None) -> RunValidity:
    """Every gate's result for this run. `partner`: a pair's partner's per-interval rows;
    `primary`: the study's primary metrics (default the registry's capacity key); `scales`: the
    study's between-runs null for each steadiness series (perflab.study.steadiness). A failed
    gate excludes the run only when it protects a primary metric (module doc)."""
    out = RunValidity(deciding=deciding_spans(primary))
    if record.status != "complete":
        out.gates.append(GateResult("run completed", "fail", caveat=cav.run_not_complete(record.status, record.reason),
                                    bound="complete"))
    else:
        out.gates.append(GateResult("run completed", "pass", bound="complete"))
    for caveat in record.invalid:
        if caveat.code is cav.Code.DRIVER_SATURATED:
            out.gates.append(_driver_saturated(caveat))
        elif caveat.code is not cav.Code.RUN_NOT_COMPLETE:
            out.gates.append(GateResult(str(caveat.code.value).replace("_", " "), "fail", caveat=caveat,
                                        bound="none in the run"))
    driver = record.driver.util_pct if record.driver is not None else None
    if driver is not None and not any(c.code is cav.Code.DRIVER_SATURATED for c in record.invalid):
        out.gates.append(GateResult("driver not saturated", "pass", driver, cav.DRIVER_SATURATION_PCT, "% of one core",
                                    bound=f"below {cav.DRIVER_SATURATION_PCT:.0f}% of one core", protects=WINDOW_ONLY))
    errors = _num(values.get("error_pct_t"))
    if errors == errors:
        failed = errors / 100.0 > gates.max_error_rate
        out.gates.append(GateResult("error rate", "fail" if failed else "pass", errors / 100.0, gates.max_error_rate,
                                    "share", cav.error_rate(errors / 100.0, gates.max_error_rate) if failed else None,
                                    f"at most {100 * gates.max_error_rate:g}%"))
    ok_rate = _num(values.get("etr_t"))
    if not ok_rate == ok_rate or ok_rate <= 0:
        out.gates.append(GateResult("completed transactions in the window", "fail", 0.0, caveat=cav.no_transactions(),
                                    bound="more than 0"))
    else:
        out.gates.append(GateResult("completed transactions in the window", "pass", _num(values.get("tx_ok")),
                                    unit="transactions", bound="more than 0"))
        stall = _stall_gate(per_interval, record)
        if stall is not None:
            out.gates.append(stall)
        out.gates += steady_gates(values, per_interval, record.config.users is not None, gates,
                                  primary or [REGISTRY.role("capacity")[0]], partner, scales)
    util = _num(values.get("util_proc_s"))
    if is_base and gates.util_band is not None and util == util:
        low, high = gates.util_band
        inside = low <= util <= high
        out.gates.append(GateResult("UTIL/PROC (S) in the target band (base configuration)", "pass" if inside else "fail",
                                    util, high, "%", None if inside else cav.util_out_of_band(util, low, high),
                                    f"{low:g}-{high:g}%", WINDOW_ONLY))
    return out


def _stall_gate(per_interval: Sequence[Mapping[str, Any]] | None, record: RunRecord) -> GateResult | None:
    """Whole intervals of the window without a completed transaction, in a run that completes
    many an interval (caveats.STALL_MIN_EXPECTED): the SUT, or the network to it, stopped
    answering for a while -- a measurement of the outage, not of the SUT (issue 40: a remote
    SUT's link dropped for three seconds left a run complete and valid). Not judged (None) when
    the run completes too few an interval for an empty one to mean anything."""
    window = record.window
    rows = [r for r in per_interval or [] if _num(r.get("tx_ok")) == _num(r.get("tx_ok"))
            and (window is None or (r["t_start"] >= window.start - 1e-9 and r["t_end"] <= window.end + 1e-9))]
    if len(rows) < 2:
        return None
    expected = sum(_num(r["tx_ok"]) for r in rows) / len(rows)
    if expected < cav.STALL_MIN_EXPECTED:
        return None
    empty = [(float(r["t_start"]), float(r["t_end"])) for r in rows if _num(r["tx_ok"]) == 0]
    return GateResult("no interval without a completion", "fail" if empty else "pass", float(len(empty)), 0.0,
                      "intervals", cav.stalled(empty, expected) if empty else None,
                      f"none, at {cav.STALL_MIN_EXPECTED:g} or more an interval", WINDOW_ONLY)


def _driver_saturated(caveat: Caveat) -> GateResult:
    """The run's own driver-saturation caveat as a typed gate result: the driver's CPU and the
    limit it reached (a caveat of a run driven from several hosts names the busiest)."""
    limit = finite(caveat.values.get("limit_pct")) or cav.DRIVER_SATURATION_PCT
    return GateResult("driver not saturated", "fail", finite(caveat.values.get("util_pct")), limit, "% of one core",
                      caveat, f"below {limit:.0f}% of one core", WINDOW_ONLY)


def pooled_scales(trends: Mapping[str, Mapping[str, Trend | None]],
                  groups: Mapping[str, object] | None = None) -> dict[str, dict[str, Scale]]:
    """For each run (by id) and series, the between-runs null of the study: the other runs'
    changes of that series (perflab.study.steadiness.Scale.between_runs). A run with too few
    others gets none for that series (it is then judged alone).

    `groups`: run id -> its operating point. Only runs at the same point are exchangeable: in a
    sweep over users, one user's per-interval ITR wanders with the cost of the few transactions
    each interval holds, 18 users' hardly at all, so the quiet levels' changes are no null for
    the noisy one (a stationary 1-user run was excluded for a change 12 "standard errors" of
    the other levels wide)."""
    groups = groups or {}
    out: dict[str, dict[str, Scale]] = {}
    for run_id, mine in trends.items():
        out[run_id] = {}
        for key in mine:
            others = [trend.change for other, t in trends.items()
                      if other != run_id and (trend := t.get(key)) is not None
                      and groups.get(other) == groups.get(run_id)]
            scale = Scale.between_runs(others)
            if scale is not None:
                out[run_id][key] = scale
    return out


def judge_pair(pair: Sequence[tuple[RunRecord, Mapping[str, Any]]], band: tuple[float, float] | None,
               split: bool, known_added: Sequence[float] | None = None) -> list[GateResult]:
    """The failed gates that exclude both runs of a pair together (a duet or a split duet,
    study/arrangement.py) -- all about the window's pace, so they protect window rows only:

    * the drivers: a duet's two drivers share the driver's CPUs, so their CPU is judged on its
      sum against the saturation limit times the CPUs they may use (one driver process uses one
      core at most); a split duet's driver shares a CPU with the *other* SUT, so a CPU whose SUT
      and driver together came within 2% of full could not give the driver its turn;
    * the utilization band (a calibrated study): a duet's two SUTs share the SUT's CPUs, so their
      UTIL/PROC (S) add up to what the calibrated base used alone; a split duet's each lies
      in the band scaled by its share of the load (checked by the caller's band). `known_added`:
      each run's added CPU per transaction put there on purpose, as a share (a knob block's known
      cost, study/knob.py), taken out of its utilization before the band is judged -- the band
      places the study's operating point, and a knob block runs at that point plus its knob."""
    if len(pair) != 2:
        return []
    out: list[GateResult] = []
    records = [r for r, _ in pair]
    drivers = [r.driver.util_pct if r.driver is not None else None for r in records]
    utils = [_num(v.get("util_proc_s")) for _, v in pair]
    if known_added is not None:
        utils = [u / (1.0 + a) for u, a in zip(utils, known_added)]
    if split:
        for i in (0, 1):
            other_driver = drivers[1 - i]
            if other_driver is not None and utils[i] == utils[i] and utils[i] + other_driver >= cav.CPU_FULL_PCT:
                out.append(GateResult("a CPU not full (the SUT and the other driver)", "fail", utils[i] + other_driver,
                                      cav.CPU_FULL_PCT, "%", cav.cpu_full(utils[i], other_driver,
                                                                          records[i].config.sut_cpus),
                                      f"below {cav.CPU_FULL_PCT:g}%", WINDOW_ONLY))
                break
    elif all(d is not None for d in drivers):
        cores = max(1, min(len(records), len(records[0].config.driver_cpus or [0])))
        total = sum(d for d in drivers if d is not None)
        limit = cav.DRIVER_SATURATION_PCT * cores
        if total >= limit:
            out.append(GateResult("the pair's drivers not saturated", "fail", total, limit, "% of one core",
                                  cav.driver_saturated(total, "the pair's two drivers together", limit),
                                  f"below {limit:.0f}% of one core", WINDOW_ONLY))
    if band is not None and all(u == u for u in utils):
        low, high = band
        if split:
            outside = [u for u in utils if not low <= u <= high]
            if outside:
                out.append(GateResult("UTIL/PROC (S) in the target band", "fail", outside[0], high, "%",
                                      cav.util_out_of_band(outside[0], low, high), f"{low:g}-{high:g}%", WINDOW_ONLY))
        elif not low <= sum(utils) <= high:
            what = ", the knob's known cost taken out," if known_added is not None and any(known_added) else ""
            out.append(GateResult(f"UTIL/PROC (S) of the pair{what} in the target band", "fail", sum(utils), high, "%",
                                  cav.util_out_of_band(sum(utils), low, high, pair=True), f"{low:g}-{high:g}%",
                                  WINDOW_ONLY))
    return out


_num = as_float
