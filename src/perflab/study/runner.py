"""Run a study: calibrate, run every configuration in randomized interleaved blocks, reduce
each run, judge it with the one exclusion rule, compare with error control, and write
study.json (the reports are written by the caller).

study.json is rewritten after every run, so a study stopped half-way (Ctrl-C, a failure)
keeps what it measured and reports on it, marked interrupted.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab import caveats as cav
from perflab.catalog.registry import REGISTRY
from perflab.drive.lifecycle import RunObserver
from perflab.drive.plan import RunRequest
from perflab.drive.run import execute_run
from perflab.errors import InputError
from perflab.limits import MAX_BLOCKS
from perflab.outcome import judge_outcome
from perflab.records.run import read_run_record
from perflab.records.study import (
    Arrangement,
    CalibrationStep,
    ConfigurationRecord,
    Design,
    DesignBias,
    KnobRecord,
    LoadRecord,
    StudyDocument,
    SweepPoint,
    SweepRecord,
)
from perflab.reduce.function_diff import study_diffs
from perflab.reduce.profile_diff import profile_diffs
from perflab.reduce.reduce import reduce_run
from perflab.stats.schedule import balanced_sides, block_seed, interleaved_schedule
from perflab.stats.verdict import MIN_BLOCKS
from perflab.store.atomic import write_json_atomic
from perflab.store.catalog import Store, new_run_id
from perflab.study.aa import aa_result
from perflab.study.arrangement import ALONE, Sides, choose, measured_bias, pair_load, traits
from perflab.study.calibrate import EVIDENCE, calibrate, calibrated_step, calibrated_utilization
from perflab.study.compare import default_primary, geomean
from perflab.study.configure import configured_workload, one_variable_warnings
from perflab.study.document import StudyDocumentBuilder, new_configurations, now_iso, workload_summary
from perflab.study.duet import run_pair
from perflab.study.events import CalibrationStepDone, Listener, Notice, Progress, RunEnded, RunStarted, ignore
from perflab.study.interrupt import StudySignals
from perflab.study.knob import estimate as knob_estimate
from perflab.study.knob import measure_truth as measure_knob_truth
from perflab.study.knob import unsupported as knob_unsupported
from perflab.study.knob import with_knob
from perflab.study.load import fixed_port_duet, load_study, sweep_point
from perflab.study.model import Configuration
from perflab.study.noise_report import noise_rows, scatter_flags
from perflab.study.resume import check_inputs, complete_blocks, input_hashes, resumable, stored_study
from perflab.study.validity import GateSettings, judge_pair, judge_run
from perflab.sut.fingerprint import machine_fingerprint
from perflab.sut.placement import available_cpus, resolve_placement
from perflab.workload.model import Workload

#: The length of the run `arrangement: auto` measures a fixed load with (seconds).
PROBE_S = 6.0


@dataclass
class StudyOptions:
    measurement: float | None = None
    stabilization: float | None = None
    stagger: float | None = None
    blocks: int | None = None
    monitor: bool = True
    aa: bool = False
    duet: bool = False   # --duet: run the study as a duet whatever its file says
    arrangement: str | None = None  # --arrangement: one-at-a-time, duet or split-duet, whatever the file says
    #: What drives one run: perflab's own `execute_run` unless a caller (a test's model driver,
    #: docs/architecture.md "Model driver") supplies another with the same signature. It must be
    #: a module-level function: a duet calls it in a child process of its own.
    executor: Callable[..., Any] | None = None


@dataclass
class Point:
    """One configuration as a study runs it: a study configuration (`series`) at a sweep value
    (`level`, None without a sweep)."""

    config: Configuration
    series: str
    level: Any = None


class StudyRunner:
    def __init__(self, study_path: Path | None, store: Store, options: StudyOptions | None = None,
                 on_event: Listener | None = None, observer: RunObserver | None = None, resume: str | None = None):
        """A new study of `study_path`, or -- `resume`, a stored study's id -- one interrupted or
        killed, continued where it stopped (study/resume.py says what is kept)."""
        self.store = store
        self.resumed: StudyDocument | None = None
        if resume is not None:
            self.resumed = stored_study(store, resume)
            study_path, options = resumable(self.resumed, options or StudyOptions())
        if study_path is None:
            raise InputError("a study file, or --resume ID", field="STUDY")
        self.study_path = Path(study_path)
        self.options = options or StudyOptions()
        self.study, self.workload, self.workload_path = load_study(
            self.study_path, self.options.aa, self.options.duet, self.options.arrangement)
        if self.resumed is not None:
            check_inputs(self.resumed, self.study_path, self.workload_path)
        least = 1 if self.study.sweep is not None else MIN_BLOCKS
        most = int(MAX_BLOCKS.default)
        if self.options.blocks is not None and (self.options.blocks < least or self.options.blocks > most):
            raise InputError(f"expected {least} to {most} blocks ({MIN_BLOCKS} or more for a comparison: fewer give no "
                             f"interval), got {self.options.blocks}", field="--blocks")
        if self.options.aa and self.study.sweep is not None:
            raise InputError("an A/A study compares the base with itself; a sweep has no base to repeat",
                             field="--aa")
        self.on_event: Listener = on_event or ignore
        self.observer = observer
        self.study_id = (self.resumed.study_id if self.resumed is not None and self.resumed.study_id else
                         new_run_id(self.study.name + ("-aa" if self.options.aa else "")))
        # The machine the study runs on: its identity picks the bias bound a pair's intervals
        # are widened by (study/arrangement.py), and only this host's own.
        self.machine = machine_fingerprint()
        self.dir = store.home / "studies" / self.study_id
        self.interrupted: str | None = None
        self.signals = StudySignals()
        self.points: list[Point] = []
        # A pair arrangement's own bias measurement (study/knob.py): why not, or its truth, its
        # configurations' names and their workloads.
        self.knob_reason: str | None = "the arrangement runs each run alone"
        self.knob_truth: Any = None
        self.knob_names: tuple[str, str] | None = None
        self._workloads: dict[str, Workload] = {}
        self._sweep_values: dict[str, Any] = {}

    # --- configurations --------------------------------------------------------------------

    def _points(self) -> list[Point]:
        """Every configuration the study runs, base first. A sweep crosses the study's
        configurations with its values (level by level, base first at each level)."""
        study = self.study
        configs = list(study.configurations) or [Configuration(name="base")]
        if self.options.aa:
            twin = configs[0].model_copy(deep=True)
            twin.name = f"{configs[0].name} (A/A)"
            return [Point(configs[0], configs[0].name), Point(twin, twin.name)]
        if study.sweep is None:
            return [Point(c, c.name) for c in configs]
        factor, many = study.sweep.factor, len(study.configurations) > 1
        points = []
        for value in study.sweep.values:
            for c in configs:
                name = f"{c.name} @ {factor}={value}" if many else f"{factor}={value}"
                points.append(Point(sweep_point(c, factor, value, name), c.name, value))
        self._sweep_values = {p.config.name: p.level for p in points}
        return points

    def _pairs(self, points: list[Point]) -> list[tuple[str, str]]:
        """The comparisons: each configuration with the base, at the same sweep value."""
        base_series = points[0].series
        bases = {p.level if p.level is not None else None: p.config.name for p in points if p.series == base_series}
        return [(bases[p.level], p.config.name) for p in points if p.series != base_series]

    def _timing(self) -> dict[str, float]:
        timing = self.study.timing or self.workload.timing
        o = self.options
        if self.study.chosen_arrangement == "interleaved":
            # many short trials: their own warm-up and window, unless the command line sets them
            trials = self.study.interleaved
            timing = timing.model_copy(update={"stabilization": trials.stabilization,
                                               "measurement": trials.measurement})
        return {
            "stagger": timing.stagger if o.stagger is None else o.stagger,
            "stabilization": timing.stabilization if o.stabilization is None else o.stabilization,
            "measurement": timing.measurement if o.measurement is None else o.measurement,
        }

    # --- one run ----------------------------------------------------------------------------

    def _run(self, config: Configuration, users: int | None, rate: float | None, measurement: float,
             block: int | None, order: int | None, purpose: str):
        request = self._request(config, users, rate, measurement, block, order, purpose)
        result = (self.options.executor or execute_run)(request, self.store, self.observer)
        metrics = reduce_run(result.run_dir)
        record = result.record or read_run_record(result.run_dir / "run.json")
        self.store.set_etr(result.run_id, metrics.values.get("etr_t"), judge_outcome(record, metrics))
        if result.status == "interrupted":
            self.interrupted = result.reason
        return result, metrics

    def _request(self, config: Configuration, users: int | None, rate: float | None, measurement: float,
                 block: int | None, order: int | None, purpose: str,
                 cpus: tuple[list[int], list[int]] | None = None, workload: Workload | None = None) -> RunRequest:
        """The request of one run. A measured run of a block replays the block's own random
        stream (stats.schedule.block_seed); `cpus`: (driver CPUs, SUT CPUs) of a split duet's run."""
        timing = self._timing()
        sweep = self.study.sweep
        if sweep is not None and sweep.factor == "users" and purpose == "measure":
            users, rate = int(self._sweep_values[config.name]), None
        if sweep is not None and sweep.factor == "rate" and purpose == "measure":
            users, rate = None, float(self._sweep_values[config.name])
        if workload is None:
            workload = self._workloads.get(config.name) or configured_workload(self.workload, config)
        workload = workload.model_copy(deep=True)
        if purpose != "measure":
            # The counted pass (pathlength) is a measured run's row: a calibration step or a
            # probe would spend its valgrind time on a number no comparison reads.
            workload.pathlength = None
        if self.study.timing is not None and "first_think" in self.study.timing.model_fields_set:
            workload.timing.first_think = self.study.timing.first_think
        request = RunRequest(
            workload=workload, workload_path=self.workload_path,
            users=users, rate=rate, duration=measurement, stagger=timing["stagger"],
            stabilization=timing["stabilization"],
            seed=None if block is None else block_seed(self.study.seed, block), label=config.name,
            study=self.study_id, workers=config.workers,
            driver_cpus=None if cpus is None else cpus[0], sut_cpus=config.sut_cpus if cpus is None else cpus[1],
            monitor=self.options.monitor,
            memory_limit=config.memory_limit, block=block, order=order, purpose=purpose,
            configuration=config.name)
        self.on_event(RunStarted(config.name, purpose, block, order, users, rate))
        return request

    # --- the study ----------------------------------------------------------------------------

    def run(self) -> StudyDocument:
        """The whole study, and study.json. Ctrl-C or SIGTERM anywhere ends it as interrupted
        with what it measured judged and saved (study/interrupt.py); the caller writes the
        reports inside `self.signals.deferred()` (or after) and exits 130."""
        with self.signals.installed():
            try:
                if self.resumed is None:
                    self._measure()
                elif self.resumed.status != "complete":   # a complete one only lacked its reports
                    self._continue(self.resumed)
                else:
                    self._restore(self.resumed)
                    return self.doc
            except KeyboardInterrupt:
                self.interrupted = self.interrupted or self.signals.received or "interrupted by SIGINT (Ctrl-C)"
            with self.signals.deferred():
                return self._finish()

    def _measure(self) -> None:
        """Calibrate, then every block of the schedule (as pairs, or one run at a time)."""
        study = self.study
        self.dir.mkdir(parents=True, exist_ok=False)
        points = self._points()
        self.points = points
        configs = [p.config for p in points]
        blocks = self.options.blocks or (study.interleaved.pairs if study.chosen_arrangement == "interleaved"
                                         else study.blocks)
        schedule = interleaved_schedule([c.name for c in configs], blocks, study.seed)
        timing = self._timing()
        stored_timing: dict[str, float | None] = dict(timing)
        doc = StudyDocument(
            study_id=self.study_id, name=study.name + (" (A/A)" if self.options.aa else ""),
            title=study.title or " -> ".join(c.name for c in configs), status="running", created=now_iso(),
            study_path=str(self.study_path), study=study.model_dump(mode="json"),
            inputs=input_hashes(self.study_path, self.workload_path),
            workload=workload_summary(self.workload.model_dump(mode="json", by_alias=True), self.workload_path,
                                      stored_timing),
            design=Design(blocks=blocks, seed=study.seed, schedule=list(schedule), timing=stored_timing,
                          aa=self.options.aa),
            configurations=new_configurations([(c.name, c.changes()) for c in configs]))
        self._start_document(doc)
        self.arrangement = study.chosen_arrangement
        if self.arrangement != "auto":
            self._arrange(self.arrangement)
        self._save()
        loads = self._decide_loads(configs, doc)
        self._set_util_band()
        by_name = {c.name: c for c in configs}
        if self.arrangement not in ALONE and self.knob_reason is None:
            schedule = self._with_knob_blocks(schedule, by_name, loads, blocks)
        self._run_blocks(schedule, by_name, loads, timing, set())

    def _start_document(self, doc: StudyDocument) -> None:
        """The document's judge: the study's gates, criteria, primary metrics and rows."""
        study = self.study
        batch = self.workload.batch
        # A job stream is judged on its elapsed time and CPU per job (the seeds' batch tables),
        # unless the study names its primary metrics itself.
        primary = (study.gate_metrics if "gate_metrics" in study.model_fields_set or not batch
                   else ["elapsed_t", "cpu_job_s"]) or default_primary()
        keys = study.metrics or list(REGISTRY.role("batch" if batch else "compared"))
        gates = GateSettings(study.gates.max_error_rate, study.gates.max_etr_trend, study.gates.util_band)
        self.builder = StudyDocumentBuilder(doc, gates, study.criteria, primary, keys)
        if not doc.warnings:
            for remark in one_variable_warnings(study):
                self.builder.warn(remark)
        self.doc = doc

    def _set_util_band(self) -> None:
        """The band a calibrated study's base runs must lie in: the calibration's, centred where it
        measured (calibrated_utilization says why)."""
        calibrate = self.study.load.calibrate
        if self.study.gates.util_band is None and calibrate is not None:
            centre = calibrated_utilization(self.doc.design.load) or calibrate.target_util
            self.builder.set_util_band((max(0.0, centre - cav.UTIL_BAND_HALF_WIDTH),
                                        min(100.0, centre + cav.UTIL_BAND_HALF_WIDTH)))

    def _run_blocks(self, schedule: list[tuple[int, str]], by_name: dict[str, Configuration],
                    loads: dict[str, tuple[int | None, float | None]], timing: dict[str, float],
                    done_blocks: set[int]) -> None:
        """The schedule's blocks not in `done_blocks`, as pairs or one run at a time; each run keeps
        its place in the whole schedule (its `order`)."""
        started = time.monotonic()
        if self.arrangement not in ALONE:
            self._run_together(schedule, by_name, loads, timing, started, done_blocks)
            return
        base = self.points[0].config
        todo = [(order, block, name) for order, (block, name) in enumerate(schedule) if block not in done_blocks]
        calibrate = self.study.load.calibrate
        for index, (order, block, name) in enumerate(todo):
            if self.interrupted:
                break
            self.on_event(Progress(index, len(todo), time.monotonic() - started))
            config = by_name[name]
            users, rate = loads[name]
            result, metrics = self._run(config, users, rate, timing["measurement"], block, order, "measure")
            # The utilization band is the calibration's: it applies to the runs calibrated to it.
            banded = config is base or bool(calibrate and calibrate.equal_utilization)
            run = self.builder.add_run(result.record, metrics, config.name, block, order, is_base=banded)
            self._run_ended(run, result.status)
            self._save()

    def _restore(self, doc: StudyDocument) -> None:
        """A stored study's state, as it was when it stopped: its document, judge, points,
        arrangement (and the bias it stated) and any knob measured."""
        self.points = self._points()
        doc.status = "running"
        self._start_document(doc)
        # `auto` stopped before it chose: it chooses again from the calibration it will rerun
        self.arrangement = doc.design.arrangement or ("duet" if doc.design.duet else self.study.chosen_arrangement)
        self.builder.design = traits(self.arrangement, doc.design.bias)
        self.knob_reason = self._knob_reason(doc.design.bias) if self.arrangement not in ALONE else \
            "the arrangement runs each run alone"
        knob = doc.design.knob
        if knob is not None and self.knob_reason is None:
            from perflab.study.knob import TruthRuns

            self.knob_truth = TruthRuns(knob.units, knob.per_unit, knob.per_unit_se, list(knob.truth_values),
                                        list(knob.truth_runs))
            names = [c.name for c in doc.configurations if c.calibration]
            if len(names) == 2:
                self.knob_names = (names[0], names[1])
                workload = configured_workload(self.workload, self.points[0].config)
                for name, units in zip(names, (0, knob.units)):
                    self._workloads[name] = with_knob(workload, units)

    def _continue(self, doc: StudyDocument) -> None:
        """A study interrupted or killed, continued (`perflab study --resume`): the calibration
        reused when it had finished (else run again), the knob's truth likewise, every block whose
        runs were all stored kept with its gates, a half-finished block measured again whole, the
        schedule and the blocks' random streams as planned."""
        self._restore(doc)
        configs = [p.config for p in self.points]
        timing = {k: float(v) for k, v in doc.design.timing.items() if v is not None}
        load = doc.design.load
        if load.mode == "calibrated" and (load.users is not None or load.rate is not None):
            loads = {c.name: ((doc.design.loads[c.name].users, doc.design.loads[c.name].rate)
                              if c.name in doc.design.loads else (load.users, load.rate)) for c in configs}
        else:
            doc.design.load = LoadRecord()
            loads = self._decide_loads(configs, doc)
        self._set_util_band()
        by_name = {c.name: c for c in configs}
        schedule = [(b, n) for b, n in doc.design.schedule if b is not None]
        blocks = doc.design.blocks or (max(b for b, _ in schedule) + 1 if schedule else 0)
        if self.arrangement not in ALONE and self.knob_reason is None:
            if self.knob_truth is None:
                main = [(b, n) for b, n in schedule if b < blocks]
                schedule = self._with_knob_blocks(main, by_name, loads, blocks)
            else:
                assert self.knob_names is not None  # restored with the truth
                for name in self.knob_names:
                    by_name[name] = Configuration(name=name)
                    loads[name] = loads[configs[0].name]
        done, redone = complete_blocks(doc, schedule)
        doc.runs = [r for r in doc.runs if r.block in done]
        doc.resumed.append(now_iso())
        self.builder.warn(cav.note(cav.Code.RESUMED, f"resumed at {doc.resumed[-1]}: {len(done)} block(s) kept as measured"
                                   + (f", block(s) {', '.join(map(str, sorted(redone)))} measured again (a run of "
                                      f"each had not been stored, or was interrupted)" if redone else "")))
        self.on_event(Notice(f"resuming {doc.study_id}: {len(done)} of {len({b for b, _ in schedule})} blocks kept"))
        self._save()
        self._run_blocks(schedule, by_name, loads, timing, done)

    def _with_knob_blocks(self, schedule: list[tuple[int, str]], by_name: dict[str, Configuration],
                          loads: dict[str, tuple[int | None, float | None]], blocks: int) -> list[tuple[int, str]]:
        """Measure the knob's truth alone (mixed runs at the study's load), then return the
        schedule with knob blocks interleaved: block j of the study, then knob block j (numbered
        after the study's). Mixed runs that fail leave the study without knob blocks, said so."""
        base = self.points[0].config
        rule = self.study.self_calibration
        step = calibrated_step(self.doc.design.load)
        users, rate = (step.users, step.rate) if step is not None else loads[base.name]
        workload = configured_workload(self.workload, base)

        def run_mixed(mixed: Workload, label: str) -> tuple[str, Path]:
            self.on_event(Notice(f"{label}: alone at the study's load"))
            request = self._request(base, users, rate, rule.truth_measurement, None, None, "knob", workload=mixed)
            result = (self.options.executor or execute_run)(request, self.store, self.observer)
            if result.status == "interrupted":
                raise KeyboardInterrupt
            if result.status != "complete":
                raise InputError(f"mixed run {result.run_id} {result.status}: {result.reason}")
            return result.run_id, result.run_dir

        try:
            truth = measure_knob_truth(run_mixed, workload, rule.added, rule.truth_runs)
        except InputError as exc:
            self.knob_reason = f"its truth could not be measured ({exc.message})"
            self.builder.warn(cav.bias_unmeasured(self.arrangement, self.workload.target.kind,
                                                  self.doc.design.bias.host if self.doc.design.bias else None,
                                                  self.knob_reason))
            return schedule
        self.knob_truth = truth
        names = (f"{base.name} (knob 0)", f"{base.name} (knob {truth.units:,})")
        for name, units in zip(names, (0, truth.units)):
            by_name[name] = Configuration(name=name)
            loads[name] = loads[base.name]
            self._workloads[name] = with_knob(workload, units)
            self.doc.configurations.append(ConfigurationRecord(name=name, calibration=True,
                                                               changes={"knob units": units}))
        self.knob_names = names
        knob_blocks = rule.blocks or blocks
        knob = [(blocks + b, n) for b, n in interleaved_schedule(list(names), knob_blocks, self.study.seed + 7919)]
        merged: list[tuple[int, str]] = []
        for j in range(max(blocks, knob_blocks)):
            merged += [e for e in schedule if e[0] == j] + [e for e in knob if e[0] == blocks + j]
        # kept now, so that a study stopped later resumes with this truth and this schedule
        self.doc.design.schedule = list(merged)
        self.doc.design.knob = KnobRecord(units=truth.units, per_unit=truth.per_unit, per_unit_se=truth.se,
                                          truth_runs=truth.runs, truth_values=truth.values,
                                          true_log_ratio=truth.log_ratio(truth.units),
                                          true_log_se=truth.log_se(truth.units))
        self._save()
        return merged

    def _knob_bias(self) -> None:
        """k from the knob blocks and the knob's truth (study/knob.py): the study's own bias bound
        (route in-study) widens its verdict intervals, or, when the blocks gave no estimate, the
        study says so and keeps its arrangement's own interval."""
        from perflab.study.compare import compare_metric

        truth, names = self.knob_truth, self.knob_names
        assert truth is not None and names is not None
        key = self.builder.primary[0]
        criteria = self.builder.criteria
        entry = compare_metric(self.doc.runs, names[0], names[1], key, criteria, "secondary", criteria.confidence,
                               None, True, self.arrangement == "split-duet")
        design_log = design_se = math.nan
        blocks = 0
        if entry is not None and entry.ratio and entry.ci_low and entry.ci_high and entry.level:
            from perflab.stats.estimate import t_quantile

            blocks = entry.n_blocks
            df = blocks - (2 if entry.method == "crossover" else 1)
            if df >= 1:
                design_log = math.log(entry.ratio)
                design_se = (math.log(entry.ci_high) - math.log(entry.ci_low)) / (2 * t_quantile(0.5 + entry.level / 2, df))
        record, bound = knob_estimate(truth, design_log, design_se, blocks, criteria.confidence)
        design = self.doc.design
        design.knob = record
        if bound is None:
            self.builder.warn(cav.bias_unmeasured(self.arrangement, self.workload.target.kind,
                                                  design.bias.host if design.bias else None,
                                                  "its knob blocks gave no estimate (too few valid pairs)"))
            return
        host = design.bias.host if design.bias is not None else None
        design.bias = DesignBias(arrangement=self.arrangement, route="in-study", k_low=bound.k_low,
                                 k_high=bound.k_high, a_max=0.0, k_mid=bound.k_mid, a_mid=0.0,
                                 level=criteria.confidence, widened=True,
                                 measured=f"{blocks} knob blocks of +{100 * (math.exp(-record.true_log_ratio) - 1):.1f}% "
                                          f"CPU per transaction (true ratio {math.exp(record.true_log_ratio):.4f}, "
                                          f"measured {math.exp(design_log):.4f})",
                                 source="this study's knob blocks", target=self.workload.target.kind, host=host,
                                 studies=blocks)
        self.builder.design = traits(self.arrangement, design.bias)

    def _finish(self) -> StudyDocument:
        """Judge what was measured and save study.json: complete, or interrupted with the reason
        (a study stopped before its document existed has nothing to judge and is saved as such)."""
        if not hasattr(self, "doc"):
            raise KeyboardInterrupt  # stopped before anything was set up: nothing to keep
        doc = self.doc
        if self.study.sweep is not None:
            doc.sweep = self._sweep_summary(doc, self.points)
        self.builder.rejudge_steadiness()
        if self.knob_truth is not None and self.knob_names is not None:
            self._knob_bias()
        self.builder.judge(self._pairs(self.points))
        doc.noise = noise_rows(doc)
        for caveat in scatter_flags(doc):
            self.builder.warn(caveat)
        if self.options.aa:
            doc.aa = aa_result(doc)
        doc.pathlength_diffs = study_diffs(doc, self.store.run_dir)   # where the pathlength went
        doc.profile_diffs = profile_diffs(doc, self.store.run_dir)   # where the CPU went, sampled
        doc.status = "interrupted" if self.interrupted else "complete"
        doc.reason = self.interrupted
        doc.finished = now_iso()
        self._save()
        return doc

    def _run_together(self, schedule: list, by_name: dict[str, Configuration],
                      loads: dict[str, tuple[int | None, float | None]],
                      timing: dict[str, float], started: float, done_blocks: set[int]) -> None:
        """Each block's two runs at the same time (study/duet.py), as a duet or a split duet
        (study/arrangement.py). Judged as a pair: each run's steadiness beside its partner, the
        two drivers' saturation on their sum, the pair's utilization against the band."""
        band = self.builder.gates.util_band
        self.builder.set_util_band(None)  # judged for the pair below, not run by run
        split = self.arrangement == "split-duet"
        share = (self.doc.design.load.share_fraction or 1.0) if split else 1.0
        if band is not None and split:
            # each SUT on a CPU of its own at its share of the calibrated load
            centre = (band[0] + band[1]) / 2.0 * share
            band = (max(0.0, centre - cav.UTIL_BAND_HALF_WIDTH), min(100.0, centre + cav.UTIL_BAND_HALF_WIDTH))
        sides = Sides.of(available_cpus()) if split else None
        # The base's side per block, balanced and independent of the start order (the other
        # configuration takes the other side): recorded in the design, and on each run (sut_cpus).
        base_side = balanced_sides(max(b for b, _ in schedule) + 1, self.study.seed) if split else []
        if split:
            self.doc.design.sides = base_side
        base_name = next(iter(by_name))  # configurations in the study's order: the base first
        knob_base = self.knob_names[0] if self.knob_names is not None else None
        placement = None
        private = fixed_port_duet([configured_workload(self.workload, c) for c in by_name.values()],
                                  self.workload_path.parent)
        if private:
            self.builder.warn(cav.note(cav.Code.NAMESPACES,
                                       "the service listens on a fixed port: each run of a pair ran in a network "
                                       "namespace of its own, its server and driver on that namespace's loopback"))
        blocks: dict[int, list[tuple[int, str]]] = {}
        for order, (block, name) in enumerate(schedule):
            if block not in done_blocks:
                blocks.setdefault(block, []).append((order, name))
        planned = timing["stagger"] + timing["stabilization"] + timing["measurement"]
        for done, (block, entries) in enumerate(blocks.items()):
            if self.interrupted:
                break
            self.on_event(Progress(2 * done, 2 * len(blocks), time.monotonic() - started))
            requests = [self._request(by_name[name], *loads[name], timing["measurement"], block, order, "measure",
                                      cpus=sides.placement(base_side[block] ^ (name not in (base_name, knob_base)))
                                      if sides is not None else None)
                        for order, name in entries]
            outcomes, interrupted = run_pair(requests, f"{self.study_id}/block-{block}", self.store.home, planned,
                                             private_network=private, executor=self.options.executor,
                                             arrangement=self.arrangement)
            if interrupted:
                self.interrupted = "interrupted by SIGINT (Ctrl-C)"
            stored = []
            for (order, name), outcome in zip(entries, outcomes):
                if outcome.run_dir is None:
                    self.builder.warn(cav.note(cav.Code.RUN_NOT_STORED,
                                               f"block {block}: the run of {name} was not stored ({outcome.error})"))
                    continue
                record = read_run_record(outcome.run_dir / "run.json")
                metrics = reduce_run(outcome.run_dir)
                self.store.set_etr(record.run_id, metrics.values.get("etr_t"), judge_outcome(record, metrics))
                if record.status == "interrupted":
                    self.interrupted = self.interrupted or record.reason
                placement = placement or record.fingerprint.get("placement")
                stored.append((order, name, record, metrics))
            pair = []
            for order, name, record, metrics in stored:
                partner = next((m for _, _, r, m in stored if r.run_id != record.run_id), None)
                validity = judge_run(record, metrics.values, metrics.per_interval, self.builder.gates, False,
                                     partner.per_interval if partner is not None else None,
                                     primary=self.builder.primary)
                pair.append((self.builder.add_run(record, metrics, name, block, order, is_base=False, validity=validity),
                             record, metrics))
            failed = judge_pair([(r, m.values) for _, r, m in pair], band, split,
                                self._known_added([name for _, name, _, _ in stored]))
            for run, _, _ in pair:
                self.builder.add_pair_gates(run, failed)
            for run, record, _ in pair:
                self._run_ended(run, record.status)
            self._save()
        self.builder.warn(cav.duet_design(placement, self.arrangement))
        runs = [r for r in self.doc.runs]
        if runs and all(any(c.code is cav.Code.DRIVER_SATURATED for c in r.exclusions) for r in runs):
            other = "split-duet" if self.arrangement == "duet" else "one-at-a-time"
            self.builder.warn(cav.note(
                cav.Code.PAIR_DRIVERS, f"every pair was excluded for its drivers: in a {self.arrangement} they could not keep up"
                f"{_shortfall(runs)}. `--arrangement {other}` gives "
                + ("each driver a CPU of its own (beside the other SUT)" if other == "split-duet"
                   else "the driver a CPU of its own")
                + ", and `--arrangement auto` chooses from the calibration's measured CPU (docs/studies.md)"))

    def _known_added(self, names: list[str]) -> list[float] | None:
        """A knob block's known added CPU per transaction on each side, as a share (None: not a
        knob block): the pair's utilization band is judged without it (study/validity.py)."""
        if self.knob_truth is None or self.knob_names is None or not set(names) <= set(self.knob_names):
            return None
        truth = self.knob_truth
        return [truth.per_unit * truth.units if name == self.knob_names[1] else 0.0 for name in names]

    def _run_ended(self, run, status: str) -> None:
        """The run-end event of a judged run (the progress display's line)."""
        key = self.builder.primary[0]
        self.on_event(RunEnded(run.config, run.block, run.run_id, status, run.excluded, [c.text for c in run.exclusions],
                               run.metric("etr_t"), run.metric("util_proc_s"), key, run.metric(key)))

    def _save(self) -> None:
        write_json_atomic(self.dir / "study.json", self.doc.dump())

    def _decide_loads(self, configs: list[Configuration], doc: StudyDocument) -> dict[str, tuple[int | None,
                                                                                                    float | None]]:
        """The load of every configuration: the same for all (the seeds' "same users": the base
        calibrated, or a fixed load), or each calibrated to the target (`equal_utilization`)."""
        rule = self.study.load
        w = self.workload
        if rule.calibrate is None:
            if rule.users is not None or rule.rate is not None:
                doc.design.load = LoadRecord(mode="fixed", users=rule.users, rate=rule.rate)
            else:
                doc.design.load = LoadRecord(mode="workload", users=getattr(w.load, "users", None),
                                             rate=getattr(w.load, "rate", None))
            users, rate = doc.design.load.users, doc.design.load.rate
            if self.arrangement == "auto":
                self._probe_for_auto(configs[0], users, rate)
            return {c.name: (users, rate) for c in configs}
        if not rule.calibrate.equal_utilization:
            doc.design.load = self._for_duet(self._calibrate(configs[0], equal=False))
            return {c.name: (doc.design.load.users, doc.design.load.rate) for c in configs}
        loads = {}
        for i, config in enumerate(configs):
            record = self._for_duet(self._calibrate(config, equal=True))
            if i == 0:
                doc.design.load = record
            doc.design.loads[config.name] = record
            loads[config.name] = (record.users, record.rate)
        return loads

    def _for_duet(self, record: LoadRecord) -> LoadRecord:
        """A calibrated load as the study's arrangement runs it (study/arrangement.py); `auto`
        chooses the arrangement here, from this calibration (the first one, the base's)."""
        step = calibrated_step(record)
        if self.arrangement == "auto":
            self._arrange(*choose(self._can_pair(), step.driver_util if step else None,
                                  step.util_proc_s if step else None,
                                  len(resolve_placement(None, None).driver_cpus)))
        return pair_load(self.arrangement, record, step)

    def _probe_for_auto(self, config: Configuration, users: int | None, rate: float | None) -> None:
        """`auto` at a fixed load: one short run of the base at that load measures what the
        driver and the SUT need, and the arrangement is chosen from it as from a calibration."""
        result, metrics = self._run(config, users, rate, PROBE_S, None, None, "calibrate")
        values = metrics.values
        self._arrange(*choose(self._can_pair(), values.get("driver_cpu"), values.get("util_proc_s"),
                              len(resolve_placement(None, None).driver_cpus)))
        self.builder.warn(cav.note(cav.Code.ARRANGEMENT,
                                   f"auto chose from a {PROBE_S:g} s run of {config.name} at the study's load "
                                   f"({result.run_id})"))

    def _can_pair(self) -> bool:
        study = self.study
        pair_only = [k for k in self.builder.primary if k in REGISTRY.role("response_rows") or REGISTRY.machine_wide(k)]
        return study.sweep is None and (len(study.configurations) == 2 or self.options.aa) and not pair_only

    def _arrange(self, arrangement: Arrangement, why: str | None = None) -> None:
        """Fix the study's arrangement (and what its comparisons may say: study/arrangement.py)."""
        self.arrangement = arrangement
        design = self.doc.design
        design.arrangement, design.duet = arrangement, arrangement not in ALONE
        design.bias = measured_bias(arrangement, self.workload.target.kind, self.store.home, self.machine)
        self.builder.design = traits(arrangement, design.bias)
        if why is not None:
            self.builder.warn(cav.note(cav.Code.ARRANGEMENT, why))
        self.knob_reason = self._knob_reason(design.bias)
        if design.bias is not None and self.knob_reason is None:
            why = "asked for" if self.study.self_calibration.mode == "on" else "no bound measured on this host"
            self.on_event(Notice(f"{arrangement}: this study measures its own bias in knob blocks beside its blocks "
                                 f"({why}; study/knob.py)"))
        elif design.bias is not None and design.bias.route == "none":
            caveat = cav.bias_unmeasured(arrangement, self.workload.target.kind, design.bias.host, self.knob_reason)
            self.builder.warn(caveat)
            self.on_event(Notice(caveat.text))

    def _knob_reason(self, bias: DesignBias | None) -> str | None:
        """Why this study will not measure its own bias in knob blocks (None: it will): one at a
        time has none to measure; `auto` only where the host has no bound of its own."""
        rule = self.study.self_calibration
        if bias is None:
            return "the arrangement runs each run alone"
        if rule.mode == "off":
            return "self_calibration is off"
        if rule.mode == "auto" and bias.route == "host":
            return "this host's bound applies"
        if self.options.aa:
            return "an A/A study measures its own noise, not a change"
        return knob_unsupported(self.workload)

    def _calibrate(self, config: Configuration, equal: bool) -> LoadRecord:
        cal = self.study.load.calibrate
        assert cal is not None  # a study calibrates when its load says so (_decide_loads)
        w = self.workload
        closed = w.closed

        def measure(users: int | None, rate: float | None) -> dict:
            result, metrics = self._run(config, users, rate, cal.measurement, None, None, "calibrate")
            values = metrics.values
            util = values.get("util_proc_s")
            if util is None:
                util = values.get("util_proc_h")
            return {"util": util, "etr_t": values.get("etr_t"), "run_id": result.run_id, "valid": result.valid,
                    "reasons": metrics.warnings, "driver_util": values.get("driver_cpu"), "values": values,
                    **{key: values.get(key) for key in EVIDENCE}}

        outcome = calibrate(cal, measure, closed, getattr(w.load, "users", None), getattr(w.load, "rate", None),
                            on_step=lambda step: self.on_event(CalibrationStepDone(
                                step.get("users"), step.get("rate"), step.get("util_proc_s"), step.get("etr_t"),
                                bool(step.get("valid", True)))))
        for remark in outcome.warnings:
            # each configuration calibrated for itself: its remarks say which
            self.builder.warn(remark.model_copy(update={"text": f"{config.name}: {remark.text}"}) if equal else remark)
        self._save()
        return LoadRecord(mode="calibrated", equal_utilization=equal, users=outcome.users, rate=outcome.rate,
                          target_util=cal.target_util,
                          tolerance=cal.tolerance,
                          calibration=[CalibrationStep.model_validate(s) for s in outcome.steps],
                          bottleneck=outcome.bottleneck, calibration_run=outcome.chosen_run)

    def _sweep_summary(self, doc: StudyDocument, points: list[Point]) -> SweepRecord:
        keys = self.study.metrics or list(REGISTRY.role("sweep"))
        out = []
        for p in points:
            runs = [r for r in doc.runs_of(p.config.name) if not r.excluded]
            # each row over the runs that count in it (a run set aside for the window's rows: not those)
            out.append(SweepPoint(config=p.config.name, series=p.series, value=p.level, runs=len(runs),
                                  metrics={k: geomean(r.metrics.get(k) for r in runs
                                                      if r.counts_in(REGISTRY.span(k).value)) for k in keys}))
        sweep = self.study.sweep
        assert sweep is not None  # a sweep's summary (run)
        return SweepRecord(factor=sweep.factor, values=list(sweep.values), points=out)


def _shortfall(runs) -> str:
    """By how much the drivers fell short of the saturation gate, from their runs' exclusions:
    their CPU against the gate, and the share of the transactions they issued that would fit
    under it (gate / CPU: a driver's CPU grows with the transactions it issues)."""
    found = [(float(c.values["util_pct"]), float(c.values.get("limit_pct") or cav.DRIVER_SATURATION_PCT))
             for r in runs for c in r.exclusions
             if c.code is cav.Code.DRIVER_SATURATED and isinstance(c.values.get("util_pct"), (int, float))]
    if not found:
        return ""
    low, high = min(u for u, _ in found), max(u for u, _ in found)
    limit = min(g for _, g in found)
    shown = f"{low:.0f}%" if round(low) == round(high) else f"{low:.0f}-{high:.0f}%"
    return (f" (their CPU {shown} of one core against the {limit:.0f}% gate: {high - limit:.0f} points over; "
            f"about {100 * limit / high:.0f}% of the transactions they issued would fit under it)")
