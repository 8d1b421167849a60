"""Run the accuracy studies: every case, arrangement, added cost and repetition, one real study
each, its result appended to a JSON-lines file as soon as it ends (a long experiment stopped
half-way keeps what it measured, and a second call goes on where it stopped).

Each study is what a user would run: the case's workload, the base configuration against the
same one with the knob raised (or, for no added cost, the base against itself: an A/A), the
load calibrated to 90% of the SUT's processor (or the case's fixed load), the arrangement's own
share of it, randomized blocks, the default gates and criteria. The order of the studies is
shuffled (seeded) so that a slow hour of the host does not fall on one arrangement.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from perflab.accuracy.cases import CASES, Case, knob_changes
from perflab.accuracy.truth import TruthMeasurement
from perflab.errors import InputError
from perflab.records.study import DesignBias
from perflab.store.catalog import Store

KEY = "itr_s"
RESULTS_FORMAT = 1


class KnobCalibration(BaseModel):
    """What one knob unit costs: CPU per transaction (PBT/CMD (S), ms) alone at 0 and at a probe."""

    kind: str = "knob"
    case: str
    base_ms: float
    probe: int
    probe_ms: float
    runs: list[str] = Field(default_factory=list)
    host: dict[str, Any] | None = None      # records.bias.HostIdentity of the machine it was measured on
    session: str | None = None              # the session it belongs to (Plan.session)

    @property
    def per_unit_ms(self) -> float:
        return (self.probe_ms - self.base_ms) / self.probe

    def value_for(self, effect: float) -> int:
        """The knob that adds `effect` (0.05: +5%) to the base's CPU per transaction."""
        return max(0, round(effect * self.base_ms / self.per_unit_ms)) if self.per_unit_ms > 0 else 0


class StudyResult(BaseModel):
    """One accuracy study: what it measured of ITR (S) and how it judged it."""

    kind: str = "study"
    format: int = RESULTS_FORMAT
    case: str
    arrangement: str
    effect: float                      # the added CPU per transaction the knob was set for (0.05: +5%)
    knob: int
    repeat: int
    study_id: str
    seconds: float                     # machine time: the whole study, calibration included
    exit_code: int | None = None
    verdict: str | None = None
    ratio: float | None = None         # new / base of ITR (S): the paired estimate
    ci_low: float | None = None        # the interval that decided (widened when the arrangement's bias was applied)
    ci_high: float | None = None
    design_ci_low: float | None = None  # the arrangement's own interval, before any widening
    design_ci_high: float | None = None
    level: float | None = None
    n_blocks: int = 0
    excluded: int = 0
    runs: int = 0
    block_logs: list[float] = Field(default_factory=list)  # per complete block: ln(new) - ln(base) of ITR (S)
    users: int | None = None
    base_pbt_ms: float | None = None
    pbt_ratio: float | None = None
    # Where and how (perflab 0.3): the host its runs ran on (records.bias.HostIdentity, from the
    # runs' own fingerprints), the day, the arrangement's own estimate and its standard error
    # (what a bias fit reads), whether the study was run to fit a bound or to check one on
    # studies the fit never saw, and how its intervals were bounded.
    host: dict[str, Any] | None = None
    day: str | None = None
    design_ratio: float | None = None
    design_se: float | None = None
    role: Literal["fit", "check"] = "fit"
    route: str | None = None
    session: str | None = None
    # The bound a study's intervals were widened by (bound_label): a check tests one bound, and
    # fresh studies of two bounds are two rows of the check table, never one.
    bound: str | None = None


def bound_label(bias: DesignBias | None) -> str | None:
    """A bound as the check table names it: "k [-0.176, -0.088], a [-0.43, +0.26] pts, 14 studies"
    (records.study.DesignBias; None when no bound widened the study's intervals)."""
    from perflab.stats.bias import BiasBound

    if bias is None or not bias.widened:
        return None
    low, high = BiasBound(bias.k_low, bias.k_high, bias.a_max, bias.a_low, bias.a_high).offsets
    fitted = f", {bias.studies} studies" if bias.studies else ""
    return (f"k [{bias.k_low:+.3f}, {bias.k_high:+.3f}], a [{100 * low:+.2f}, {100 * high:+.2f}] pts"
            f"{fitted}")


@dataclass(frozen=True)
class Plan:
    cases: tuple[str, ...] = ("synthetic", "sqlite", "postgres")
    arrangements: tuple[str, ...] = ("one-at-a-time", "duet", "split-duet")
    effects: tuple[float, ...] = (0.0, 0.03, 0.05, 0.10)
    repeats: int = 2
    blocks: int = 6
    seed: int = 20261127
    #: The added costs the one-at-a-time arrangement (the truth) is run at: the A/A and the
    #: largest; the others' truth follows from the knob's linearity (perflab.accuracy.summary).
    truth_effects: tuple[float, ...] = (0.0, 0.10)
    #: fit: studies a host's bound is fitted from; check: fresh studies, run with the host's
    #: bound on, that the fit never sees (their coverage is the bound's test).
    role: Literal["fit", "check"] = "fit"
    #: Run every study at the users the case's truth runs were calibrated to (one calibration
    #: per case and session) instead of calibrating each study: `--quick`'s saving.
    fixed_load: bool = False
    #: The studies' timing, when not each case's own.
    timing: dict[str, str] | None = None
    #: A pair's own bias measurement in its studies (study/knob.py): off for the studies a
    #: host's bound is fitted from (their raw ratios are what is fitted); a check of the
    #: in-study route sets it on.
    self_calibration: Literal["auto", "on", "off"] = "off"
    #: A page whose stored reports keep every study's (docs/accuracy.md: docs/reports/<id>/), so
    #: that each study the results file names traces to its report (tests/docs/test_published.py).
    keep: Path | None = None
    #: A session's name (default: the day): its knob, truth and studies go together, and a
    #: session stopped half-way goes on where it stopped when called again with the same name.
    #: A second session on another day measures the host in another state.
    session: str = ""

    def order(self) -> list[tuple[int, str, float, str]]:
        """Every (repeat, case, effect, arrangement), repetition by repetition, shuffled within."""
        rng = random.Random(self.seed)
        out = []
        for repeat in range(self.repeats):
            chunk = [(repeat, c, e, a) for c in self.cases for e in self.effects for a in self.arrangements
                     if a != "one-at-a-time" or e in self.truth_effects or e == max(self.effects)]
            rng.shuffle(chunk)
            out += chunk
        return out


#: What a knob calibration and a truth belong to: (case, host key, session) -- (case, None, None)
#: for the records of perflab 0.2, which kept one per case.
MeasureKey = tuple[str, str | None, str | None]


def measure_key(case: str, host: dict[str, Any] | None, session: str | None) -> MeasureKey:
    from perflab.records.bias import HostIdentity

    return case, (HostIdentity.model_validate(host).key if host else None), session


def key_of(record: KnobCalibration | TruthMeasurement | StudyResult) -> MeasureKey:
    return measure_key(record.case, record.host, record.session)


def read_results(path: Path) -> tuple[dict[MeasureKey, KnobCalibration], list[StudyResult]]:
    knobs, studies, _ = read_all(path)
    return knobs, studies


def read_all(path: Path) -> tuple[dict[MeasureKey, KnobCalibration], list[StudyResult],
                                  dict[MeasureKey, TruthMeasurement]]:
    """Everything an accuracy results file holds: knob calibrations, study results, truths (the
    first two keyed by case, host and session)."""
    knobs: dict[MeasureKey, KnobCalibration] = {}
    studies: list[StudyResult] = []
    truths: dict[MeasureKey, TruthMeasurement] = {}
    if not path.is_file():
        return knobs, studies, truths
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if data.get("kind") == "knob":
                knob = KnobCalibration.model_validate(data)
                knobs[key_of(knob)] = knob
            elif data.get("kind") == "truth":
                truth = TruthMeasurement.model_validate(data)
                truths[key_of(truth)] = truth
            else:
                studies.append(StudyResult.model_validate(data))
        except (ValueError, TypeError) as exc:
            raise InputError(f"not an accuracy result: {exc}", file=path, line=number) from None
    return knobs, studies, truths


def _append(path: Path, record: BaseModel) -> None:
    with path.open("a") as out:
        out.write(record.model_dump_json() + "\n")
        out.flush()


def calibrate_knob(case: Case, examples: Path, store: Store) -> KnobCalibration:
    """CPU per transaction alone at knob 0 and at the probe, two runs each (alternated)."""
    from perflab.drive.run import RunRequest, execute_run
    from perflab.reduce.reduce import reduce_run
    from perflab.study.configure import apply_changes
    from perflab.workload.loader import load_workload
    from perflab.workload.model import Workload

    base = load_workload(case.path(examples))
    values: dict[int, list[float]] = {0: [], case.probe: []}
    runs = []
    for knob in (0, case.probe, 0, case.probe):
        data = apply_changes(base.model_dump(mode="json", by_alias=True), knob_changes(case, knob))
        workload = Workload.model_validate(data)
        result = execute_run(RunRequest(workload=workload, workload_path=case.path(examples),
                                        users=case.fixed_users, label=f"accuracy knob {knob}",
                                        duration=8.0, stabilization=2.0), store)
        metrics = reduce_run(result.run_dir)
        pbt = metrics.values.get("pbt_cmd_s")
        if pbt is None or not math.isfinite(pbt):
            raise InputError(f"the {case.name} knob could not be measured (run {result.run_id}: no PBT/CMD (S))")
        values[knob].append(float(pbt))
        runs.append(result.run_id)
    mean = {k: sum(v) / len(v) for k, v in values.items()}
    return KnobCalibration(case=case.name, base_ms=mean[0], probe=case.probe, probe_ms=mean[case.probe], runs=runs)


def calibrated_users(case: Case, examples: Path, store: Store) -> int:
    """The users at which the case's base runs its SUT at 90% of its processor alone (as a study
    calibrates), for the truth's runs; the fixed load of a case that has one."""
    from perflab.drive.run import RunRequest, execute_run
    from perflab.reduce.reduce import reduce_run
    from perflab.study.calibrate import calibrate
    from perflab.study.model import Calibration
    from perflab.workload.loader import load_workload

    if case.fixed_users is not None:
        return case.fixed_users
    workload = load_workload(case.path(examples))
    rule = Calibration(target_util=90, tolerance=5, start_users=case.start_users, measurement=6.0,
                       max_users=case.max_users)

    def measure(users: int | None, rate: float | None) -> dict:
        result = execute_run(RunRequest(workload=workload, workload_path=case.path(examples), users=users,
                                        duration=6.0, label=f"accuracy calibration {case.name}"), store)
        values = reduce_run(result.run_dir).values
        return {"util": values.get("util_proc_s"), "etr_t": values.get("etr_t"), "run_id": result.run_id,
                "valid": result.valid, "driver_util": values.get("driver_cpu")}

    users = calibrate(rule, measure, True, case.start_users, None).users
    assert users is not None  # a closed loop's calibration chooses users
    return users


def measure_truth(case: Case, examples: Path, store: Store, knob: KnobCalibration,
                  on_progress: Callable[[str], None]) -> TruthMeasurement:
    from perflab.accuracy.truth import measure_alternating, measure_mixed

    users = calibrated_users(case, examples, store)
    if case.per_transaction_cpu:
        value = knob.value_for(0.10)
        on_progress(f"{case.name}: measuring the truth in 4 mixed runs at {users} users (knob {value} beside 0)")
        return measure_mixed(case, examples, store, value, users)
    value = knob.value_for(0.40)
    on_progress(f"{case.name}: measuring the truth in 6 alternating pairs at {users} users (knob 0 and {value})")
    return measure_alternating(case, examples, store, value, users)


#: `perflab accuracy --studies --quick`: one host's duet bound for one kind in 15-20 minutes on
#: the development VM (2 CPUs): the A/A and +10%, three studies each, at the load the truth runs
#: were calibrated to, in the case's own windows and the 6 blocks its check studies run (the
#: bound is a prediction for studies of that design: fitted at shorter windows and 4 blocks, the
#: PostgreSQL and HTTP bounds of 2026-12-07 were wider than those studies' own bias and failed
#: the -1% goal of their checks).
QUICK = Plan(cases=("sqlite",), arrangements=("duet",), effects=(0.0, 0.10), repeats=3, blocks=6, fixed_load=True)


#: `perflab accuracy --studies --check`: fresh studies of the host's bound, with it on -- the A/A,
#: a change inside the ±3% margin and a 5% loss, in the duet, at each case's calibrated load.
CHECK = Plan(cases=("sqlite",), arrangements=("duet",), effects=(0.0, 0.01, 0.05), repeats=20, blocks=6,
             fixed_load=True, role="check", self_calibration="auto")


def study_file(case: Case, examples: Path, arrangement: str, effect: float, knob: int, repeat: int,
               plan: Plan, directory: Path, users: int | None = None) -> tuple[Path, bool]:
    """The study a user would write for this cell (written as JSON, which is YAML); (path, whether
    it runs as an A/A)."""
    aa = effect == 0.0
    configurations = [{"name": "knob 0", "set": knob_changes(case, 0)}]
    if not aa:
        configurations.append({"name": f"knob +{100 * effect:g}%", "set": knob_changes(case, knob)})
    fixed = case.fixed_users if case.fixed_users is not None else users
    load = ({"users": fixed} if fixed is not None else
            {"calibrate": {"target_util": 90, "tolerance": 5, "start_users": case.start_users, "measurement": "6s",
                           "max_users": case.max_users}})
    study = {
        "name": f"acc-{case.name}-{arrangement}-{round(1000 * effect)}-{repeat}",
        "title": f"accuracy: {case.name}, {arrangement}, +{100 * effect:g}%, repetition {repeat}",
        "workload": str(case.path(examples).resolve()),
        "configurations": configurations,
        "load": load,
        "arrangement": arrangement,
        "blocks": plan.blocks,
        "seed": plan.seed + 1000 * repeat + round(1000 * effect) + (500_000 if plan.role == "check" else 0),
        "timing": plan.timing or case.timing,
        "self_calibration": {"mode": plan.self_calibration},
    }
    path = directory / f"{study['name']}.yaml"
    path.write_text(json.dumps(study, indent=1))
    return path, aa


def run_study(case: Case, examples: Path, arrangement: str, effect: float, knob: int, repeat: int, plan: Plan,
              store: Store, users: int | None = None) -> StudyResult:
    from perflab.study.runner import StudyOptions, StudyRunner

    with tempfile.TemporaryDirectory(prefix="perflab-accuracy-") as tmp:
        path, aa = study_file(case, examples, arrangement, effect, knob, repeat, plan, Path(tmp), users)
        started = time.monotonic()
        runner = StudyRunner(path, store, StudyOptions(aa=aa))
        doc = runner.run()
        if doc.status == "interrupted":
            raise KeyboardInterrupt  # the experiment stops here; a second call goes on with this study
        # Its report beside its record, as `perflab study` leaves them (no charts: Markdown and
        # JSON), so that a page citing the study can keep it (plan.keep).
        from perflab.report.write import EXPORTERS, write_reports

        write_reports(doc, runner.dir, tuple(e for e in EXPORTERS if e.format != "html"))
        if plan.keep is not None:
            from perflab.report.book.layout import keep_report

            keep_report(runner.dir, plan.keep)
        seconds = time.monotonic() - started
    comparison = doc.comparisons[0] if doc.comparisons else None
    entry = comparison.entry(KEY) if comparison is not None else None
    pbt = comparison.entry("pbt_cmd_s") if comparison is not None else None
    base, new = (c.name for c in doc.configurations[:2])
    by_block: dict[int | None, dict[str, float]] = {}
    for run in doc.runs:
        value = run.metrics.get(KEY)
        if not run.excluded and isinstance(value, (int, float)) and value > 0:
            by_block.setdefault(run.block, {})[run.config] = float(value)
    logs = [math.log(b[new]) - math.log(b[base]) for b in by_block.values() if base in b and new in b]
    design_ratio, design_se = design_estimate(entry)
    return StudyResult(
        case=case.name, arrangement=arrangement, effect=effect, knob=knob, repeat=repeat, study_id=doc.study_id or "",
        seconds=seconds, exit_code=doc.verdict.exit_code if doc.verdict is not None else None,
        verdict=entry.verdict if entry is not None else None, ratio=entry.ratio if entry is not None else None,
        ci_low=entry.ci_low if entry else None, ci_high=entry.ci_high if entry else None,
        design_ci_low=entry.design_ci_low if entry else None, design_ci_high=entry.design_ci_high if entry else None,
        level=entry.level if entry else None, n_blocks=entry.n_blocks if entry else 0,
        excluded=sum(r.excluded for r in doc.runs), runs=len(doc.runs), block_logs=logs,
        users=doc.design.load.users, base_pbt_ms=pbt.base_value if pbt is not None else None,
        pbt_ratio=pbt.ratio if pbt is not None else None, host=host_of(doc, store), day=(doc.created or "")[:10] or None,
        design_ratio=design_ratio, design_se=design_se, role=plan.role,
        route=doc.design.bias.route if doc.design.bias is not None else None, bound=bound_label(doc.design.bias))


def design_estimate(entry) -> tuple[float | None, float | None]:
    """The arrangement's own estimate of ITR (S)'s ratio and the standard error of its log: the
    interval before any widening, read back to the t-interval it is (paired: n - 1 degrees of
    freedom; a crossover n - 2; Welch's as paired, close enough for a weight)."""
    if entry is None or entry.ratio is None:
        return None, None
    from perflab.stats.estimate import t_quantile

    ratio = entry.design_ratio if entry.design_ratio is not None else entry.ratio
    low = entry.design_ci_low if entry.design_ci_low is not None else entry.ci_low
    high = entry.design_ci_high if entry.design_ci_high is not None else entry.ci_high
    df = entry.n_blocks - (2 if entry.method == "crossover" else 1)
    if low is None or high is None or entry.level is None or df < 1 or low <= 0:
        return ratio, None
    return ratio, (math.log(high) - math.log(low)) / (2.0 * t_quantile(0.5 + entry.level / 2.0, df))


def host_of(doc, store: Store) -> dict[str, Any] | None:
    """The host a study's runs ran on, from the first run's own fingerprint (never from the
    machine that happens to summarize the results)."""
    from perflab.records.bias import HostIdentity
    from perflab.records.run import read_run_record

    for run in doc.runs:
        path = store.home / "runs" / run.run_id / "run.json"
        if path.is_file():
            return HostIdentity.of(read_run_record(path).fingerprint).model_dump(mode="json")
    return None


def fixed_users(calibrated: int | None, arrangement: str) -> int | None:
    """The users a study of `arrangement` runs at when the plan fixes the load (`fixed_load`):
    the load calibrated alone, as a calibrated study of that arrangement would share it -- half
    each in a duet (the pair fills the CPU as one did alone: study/arrangement.pair_load); a
    split duet's share depends on its drivers, so it calibrates (None)."""
    if calibrated is None or arrangement == "split-duet":
        return None
    return max(1, calibrated // 2) if arrangement == "duet" else calibrated


def keep_runs(store: Store, run_ids: list[str], page: Path) -> None:
    """Each run's own report kept beside `page` (docs/reports/<run id>/, layout.keep_run): the
    knob's and the truth's runs, which no study lists."""
    from perflab.report.book.layout import keep_run

    for run_id in run_ids:
        keep_run(store.run_dir(run_id), page)


def session_seed(seed: int, session: str) -> int:
    """The plan's seed for one session: a second session's studies draw their own block orders and
    parameters, not the first's again (their repeat numbers start at 0 in every session)."""
    return seed + (zlib.crc32(session.encode()) % 1000) * 1_000_000


def run_experiment(store: Store, examples: Path, results: Path, plan: Plan,
                   on_progress: Callable[[str], None] = print) -> list[StudyResult]:
    """Every study of the plan not yet in `results`; returns all results (old and new)."""
    cases = {}
    for name in plan.cases:
        if name not in CASES:
            raise InputError(f"unknown case {name!r}; the cases are {sorted(CASES)}", field="--cases")
        why = CASES[name].unavailable(examples)
        if why is not None:
            on_progress(f"skipped {name}: {why}")
            continue
        cases[name] = CASES[name]
    from perflab.records.bias import HostIdentity
    from perflab.sut.fingerprint import machine_fingerprint

    host = HostIdentity.of(machine_fingerprint()).model_dump(mode="json")
    session = plan.session or dt.date.today().isoformat()
    plan = replace(plan, seed=session_seed(plan.seed, session))
    knobs, done, truths = read_all(results)
    users: dict[str, int] = {}
    for name, case in cases.items():
        key = measure_key(name, host, session)
        if key not in knobs:
            on_progress(f"{name}: measuring the knob's cost (4 short runs)")
            knobs[key] = calibrate_knob(case, examples, store).model_copy(update={"host": host, "session": session})
            _append(results, knobs[key])
            if plan.keep is not None:
                keep_runs(store, knobs[key].runs, plan.keep)
        knob = knobs[key]
        on_progress(f"{name}: {knob.base_ms:.4f} ms per transaction at knob 0, {1e6 * knob.per_unit_ms:.2f} ns per "
                    f"knob unit: +3% = {knob.value_for(0.03)}, +5% = {knob.value_for(0.05)}, "
                    f"+10% = {knob.value_for(0.10)}")
        if key not in truths:
            measured = measure_truth(case, examples, store, knob, on_progress)
            truths[key] = measured.model_copy(update={"host": host, "session": session})
            _append(results, truths[key])
            if plan.keep is not None:
                keep_runs(store, truths[key].runs, plan.keep)
        truth = truths[key]
        if truth.users is not None:
            users[name] = truth.users
        on_progress(f"{name}: the truth ({truth.method} runs): +{100 * truth.per_unit * knob.value_for(0.10):.2f}% "
                    f"of CPU per transaction at knob {knob.value_for(0.10)} (± {100 * truth.se * knob.value_for(0.10):.2f})")
    have = {(r.repeat, r.case, r.effect, r.arrangement) for r in done
            if r.session == session and r.role == plan.role and key_of(r) == measure_key(r.case, host, session)}
    todo = [cell for cell in plan.order() if cell[1] in cases and cell not in have]
    for index, (repeat, name, effect, arrangement) in enumerate(todo, start=1):
        knob_value = knobs[measure_key(name, host, session)].value_for(effect) if effect else 0
        on_progress(f"[{index}/{len(todo)}] {name}, {arrangement}, +{100 * effect:g}% (knob {knob_value}), "
                    f"repetition {repeat}")
        result = run_study(cases[name], examples, arrangement, effect, knob_value, repeat, plan, store,
                           fixed_users(users.get(name), arrangement) if plan.fixed_load else None)
        result = result.model_copy(update={"session": session})
        _append(results, result)
        done.append(result)
        shown = "na" if result.ratio is None else f"{result.ratio:.4f} [{result.ci_low or math.nan:.4f}, " \
                                                    f"{result.ci_high or math.nan:.4f}]"
        on_progress(f"    ITR (S) {shown} {result.verdict or 'no verdict'}, {result.seconds:.0f} s")
    return done
