"""study.json as a model: a study's design, its runs with their validity, and its comparisons.

One builder (`perflab.study.document.StudyDocumentBuilder`) makes it, for `perflab study` and for
`perflab compare` alike; the reports, the terminal, `perflab compare study:ID:CONFIG` and the
capacity commands read its attributes. Format versions:

* format 2 (this one): run validity as typed caveats, comparisons with a role per metric
  (primary or secondary), error-controlled verdicts beside the unadjusted ones, and a
  `verdict` summary (the exit code and why).
* format 1 (perflab 0.1): loads through this model; exclusion reasons and warnings become
  caveats with code `legacy`; every directional metric's verdict is taken as unadjusted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from perflab.caveats import Caveat, as_caveat
from perflab.records.bias import BiasRoute
from perflab.records.documents import read_json, validate
from perflab.records.pathlength_diff import PathlengthDiff, ProfileDiff
from perflab.records.run import PathlengthRecord, Record

STUDY_FORMAT = 2
StudyStatus = Literal["running", "complete", "interrupted", "failed"]
Role = Literal["primary", "secondary", "descriptive", "pair"]
#: How a row's verdict was reached (perflab.study.compare): bonferroni -- its interval is at its
#: tested family's level and decided the verdict; untested -- a secondary row whose family the
#: primary rows did not open (no claim of a change); descriptive -- a row the design cannot
#: attribute to one configuration (no verdict); pair -- a machine-wide row of a concurrent
#: design (no ratio); none -- a row without a direction. holm, gatekept-holm, unadjusted: the
#: error control of study.json files written before perflab 0.2, read as they were written.
Adjustment = Literal["bonferroni", "untested", "descriptive", "pair", "none", "holm", "gatekept-holm", "unadjusted"]
#: How a study ran its blocks (docs/studies.md): one configuration at a time; interleaved (one at
#: a time in many short pairs, randomized within each); a duet (a block's
#: two runs at once, sharing the SUT's CPUs and the driver's); a split duet (a block's two runs at
#: once, each SUT on CPUs of its own, the sides swapped from block to block).
Arrangement = Literal["one-at-a-time", "duet", "split-duet", "interleaved"]


def _caveat_list(value: Any) -> list[Caveat]:
    return [as_caveat(v) for v in value or []]


class TransactionSummary(Record):
    name: str
    tx_class: str | None = Field(default=None, alias="class")

    model_config = Record.model_config | {"populate_by_name": True}


class ScriptSummary(Record):
    name: str
    weight: float | None = None
    steps: list[str] = Field(default_factory=list)

    @field_validator("steps", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        return [s.get("transaction") if isinstance(s, dict) else s for s in value or []]


class WorkloadSummary(Record):
    name: str = Field(default="?", description='workload name')
    description: str = ""
    path: str | None = Field(default=None, description='workload file')
    target: dict[str, Any] | None = Field(default=None, description='the target block as written')
    transactions: list[TransactionSummary] = Field(default_factory=list, description='name and class of each '
                                                                                     'transaction')
    scripts: list[ScriptSummary] = Field(default_factory=list, description='the mix: name, weight, steps')
    init_script: str | None = Field(default=None, description='the logon script')
    think: dict[str, Any] | None = Field(default=None, description='the think-time distribution')
    timing: dict[str, float | None] = Field(default_factory=dict, description='stagger, stabilization, measurement (s)')


class CalibrationStep(Record):
    users: int | None = Field(default=None, description='load tried (closed loop)')
    rate: float | None = Field(default=None, description='load tried (open loop)')
    util_proc_s: float | None = Field(default=None, description='UTIL/PROC (S) measured')
    etr_t: float | None = Field(default=None, description='ETR (T) measured')
    run_id: str | None = Field(default=None, description='the calibration run')
    valid: bool = Field(default=True, description='the run was valid')
    driver_util: float | None = Field(default=None, description='driver CPU %')
    other_util_h: float | None = Field(default=None, description="OTHER UTIL (H): others' share of the SUT's CPUs, %")
    lock_wait_pct: float | None = Field(default=None, description="LOCK WAIT: SUT processes asleep on a lock, %")
    checkpoint_pct: float | None = Field(default=None, description='CHECKPOINT: time in WAL checkpoints, %')
    queueing: bool = Field(default=False, description="its SUT was saturated (response far above CPU per command): "
                                                      "not used")


LoadMode = Literal["calibrated", "fixed", "workload", "stored runs"]


class LoadRecord(Record):
    mode: LoadMode | None = Field(default=None, description='calibrated, fixed, workload or stored runs')
    equal_utilization: bool = Field(default=False, description="each configuration calibrated to the target "
                                                               "(the seeds' equal-utilization tables)")

    @model_validator(mode="before")
    @classmethod
    def _mode(cls, data: Any) -> Any:
        """study.json before perflab 0.2 wrote "calibrated, equal utilization" as the mode."""
        if isinstance(data, dict) and data.get("mode") == "calibrated, equal utilization":
            data = {**data, "mode": "calibrated", "equal_utilization": True}
        return data
    users: int | None = Field(default=None, description='the load every configuration ran at (closed)')
    rate: float | None = Field(default=None, description='the load (open)')
    target_util: float | None = Field(default=None, description='the calibration target, %')
    tolerance: float | None = Field(default=None, description='accepted distance from it, points')
    calibration: list[CalibrationStep] = Field(default_factory=list, description='the calibration steps')
    bottleneck: str | None = Field(default=None, description="what stopped calibration short of its target")
    share: str | None = Field(default=None, description="how a pair shares the calibrated load, in words")
    share_fraction: float | None = Field(default=None, description="the share of the calibrated load each run of a "
                                                                   "pair ran at (a duet: 0.5)")
    calibration_run: str | None = Field(default=None, description="the calibration run whose load was chosen")


class GatesRecord(Record):
    max_error_rate: float | None = Field(default=None, description='largest error share of a valid run')
    util_band: tuple[float, float] | None = Field(default=None, description='UTIL/PROC (S) band of base runs')
    max_etr_trend: float | None = Field(default=None, description='largest drift across the window (closed: ETR '
                                                                  'trend; open: completions short of arrivals)')


class DesignBias(Record):
    """What an arrangement's ratio may sit from the truth (perflab.stats.bias): ln r_design =
    (1 + k) ln r_true + a, k and a within the bound -- and how the study came by that bound
    (`route`: this host's stored bound, the study's own knob blocks, or none on this host)."""

    arrangement: str = Field(description="the arrangement measured")
    route: BiasRoute = Field(default="host", description="host: this host's stored bound (perflab accuracy --studies); "
                             "in-study: the study's own knob blocks; none: no bound measured on this host (the "
                             "arrangement's own interval, said so)")
    k_low: float = Field(default=0.0, description="least magnification")
    k_high: float = Field(default=0.0, description="largest magnification")
    a_max: float = Field(default=0.0, description="largest offset of its A/A log-ratio")
    a_low: float | None = Field(default=None, description="least offset (None: -a_max)")
    a_high: float | None = Field(default=None, description="largest offset (None: a_max)")
    k_mid: float | None = Field(default=None, description="the fitted magnification the point estimate is "
                                                          "de-biased by (None: the range's middle)")
    a_mid: float | None = Field(default=None, description="the fitted offset")
    level: float | None = Field(default=None, description="the probability the bound claims for one study's "
                                                          "(k, a): a prediction for the next study on this host")
    widened: bool = Field(default=False, description="the verdict intervals were widened by it")
    measured: str = Field(default="", description="where and when it was measured (host, date, SUTs)")
    source: str = Field(default="", description="where the bound is kept")
    target: str | None = Field(default=None, description="the target kind it was measured on (the study's own); "
                                                         "None: pooled over every kind measured (before perflab 0.3)")
    host: str | None = Field(default=None, description="the host the bound belongs to (its identity)")
    studies: int | None = Field(default=None, description="the accuracy studies (or knob blocks) it was fitted from")
    days: list[str] = Field(default_factory=list, description="the dates those studies ran")
    host_states: list[float] = Field(default_factory=list, description="the base's CPU per transaction (ms) when "
                                     "they ran")


class KnobRecord(Record):
    """A study's own measurement of its arrangement's bias (study/knob.py): the knob's truth in
    mixed runs alone, the knob blocks' paired ratio in the arrangement, and the k they give."""

    units: int = Field(description="the knob's units in the knob blocks")
    per_unit: float = Field(description="its measured relative cost per unit (PBT/CMD (S) rises by per_unit x units)")
    per_unit_se: float = Field(description="its standard error, over the mixed runs")
    truth_runs: list[str] = Field(default_factory=list, description="the mixed runs")
    truth_values: list[float] = Field(default_factory=list, description="each mixed run's relative cost per unit")
    true_log_ratio: float = Field(description="ln of ITR (S)'s true ratio with the knob (one at a time)")
    true_log_se: float = Field(description="its standard error")
    blocks: int = Field(default=0, description="knob blocks with a valid pair")
    design_log_ratio: float | None = Field(default=None, description="ln of the ratio the knob blocks measured in the "
                                                                     "arrangement (None: not yet)")
    design_log_se: float | None = Field(default=None, description="its standard error")
    level: float | None = Field(default=None, description="the level of k's interval")
    k: float | None = Field(default=None, description="the magnification: design / true - 1")
    k_se: float | None = None
    k_low: float | None = None
    k_high: float | None = None


class Design(Record):
    blocks: int | None = Field(default=None, description='interleaved blocks')
    seed: int | None = Field(default=None, description='schedule seed')
    margin: float | None = Field(default=None, description='equivalence margin')
    confidence: float | None = Field(default=None, description='interval level')
    family_alpha: float | None = Field(default=None, description='error rate of all claims of a change together')
    primary_metrics: list[str] = Field(default_factory=list, description='the metrics whose verdicts answer the study')
    alpha: float | None = Field(default=None, description='the one error rate: intervals at 1 - alpha (widened to '
                                                          '1 - alpha/k in a family of k), claims of a change together')
    schedule: list[tuple[int | None, str]] = Field(default_factory=list, description='(block, configuration) in run '
                                                                                     'order')
    timing: dict[str, float | None] = Field(default_factory=dict, description="the runs' timing")
    gates: GatesRecord = Field(default_factory=GatesRecord, description='the validity gates used')
    load: LoadRecord = Field(default_factory=LoadRecord, description='the load and how it was chosen')
    placement: str | None = Field(default=None, description='driver and SUT CPUs')
    shared_cpus: bool | None = Field(default=None, description="the driver and the SUT shared a CPU (run.json "
                                     "config.shared_cpus); None: not recorded")
    aa: bool = Field(default=False, description="an A/A study: the base against itself")
    duet: bool = Field(default=False, description="each block's two runs ran at the same time (a duet or a split "
                                                  "duet: study/duet.py)")
    arrangement: Arrangement | None = Field(default=None, description="how a block's runs ran: one-at-a-time, duet, "
                                            "split-duet (None in files written before perflab 0.2: duet tells)")
    bias: DesignBias | None = Field(default=None, description="the arrangement's measured bias, and whether it "
                                                                "widened the verdict intervals")
    loads: dict[str, LoadRecord] = Field(default_factory=dict, description="each configuration's own calibrated "
                                         "load (equal utilization)")
    knob: KnobRecord | None = Field(default=None, description="the study's own knob blocks and the bias they measured "
                                    "(route in-study)")
    sides: list[int] = Field(default_factory=list, description="a split duet: the side of the machine (0: the first "
                             "half of the CPUs, 1: the second) the base's SUT took in each block; the other "
                             "configuration took the other")

    @model_validator(mode="after")
    def _shared_in_older_files(self) -> Design:
        # A study.json from before `shared_cpus` said it only in its placement, in the words
        # sut/placement.py's describe() wrote: read once here, where the file is read.
        if self.shared_cpus is None and self.placement is not None and "(shared:" in self.placement:
            self.shared_cpus = True
        return self


class ConfigurationRecord(Record):
    name: str = Field(description='configuration name')
    base: bool = Field(default=False, description='the first: every ratio is relative to it')
    changes: dict[str, Any] = Field(default_factory=dict, description='what it sets (dotted workload paths, '
                                                                      'sut_cpus, memory_limit, workers)')
    software: dict[str, Any] = Field(default_factory=dict, description='software fingerprint of its first run')
    hardware: dict[str, Any] = Field(default_factory=dict, description='hardware fingerprint of its first run')
    calibration: bool = Field(default=False, description="a configuration of the study's knob blocks (its own bias "
                                                         "measurement), never one of its comparisons")


class SetAside(Record):
    """A gate the run failed that protects none of the study's primary metrics
    (perflab.study.validity): the run is kept, and its values of the rows the gate protects are
    not counted in the comparisons."""

    gate: str = Field(description="the gate")
    measured: float | None = Field(default=None, description="what it measured, in `unit`")
    limit: float | None = Field(default=None, description="its limit, in `unit`")
    unit: str = Field(default="", description="the unit of `measured` and `limit`")
    protects: list[str] = Field(
        default_factory=list, description="the rows it protects, by when they are measured: over the window, after it")
    caveat: Caveat = Field(description="the failure, as a caveat")


class StudyRun(Record):
    """One measured run as the study judged it. `exclusions` is the validity decision, made once
    (perflab.study.validity) and stored; `notes` are caveats that do not exclude."""

    run_id: str = Field(description='the run')
    config: str = Field(description='its configuration')
    block: int | None = Field(default=None, description='its block')
    order: int | None = Field(default=None, description='its position in the schedule')
    status: str = Field(default="complete", description='run status')
    reason: str | None = Field(default=None, description='why it failed')
    exclusions: list[Caveat] = Field(default_factory=list, description='why it does not count (empty: valid)')
    notes: list[Caveat] = Field(default_factory=list, description='caveats that do not exclude it')
    set_aside: list[SetAside] = Field(default_factory=list, description="failed gates that protect none of the "
                                      "study's primary metrics: the run's values of the rows they protect do not count")
    users: int | None = Field(default=None, description='its users')
    rate: float | None = Field(default=None, description='its rate')
    sut_cpus: list[int] = Field(default_factory=list, description="the CPUs its SUT ran on (a split duet's side)")
    metrics: dict[str, float | None] = Field(default_factory=dict, description='reduced values by catalog key, plus '
                                                                               '`key:component` rows')
    per_class: dict[str, dict[str, float | None]] = Field(default_factory=dict, description='response rows per '
                                                                                            'transaction class')
    per_interval: list[dict[str, float | None]] = Field(
        default_factory=list, description="rows per interval (t_start, t_end, etr_t, util_proc_s, itr_s...)")
    caveats: list[Caveat] = Field(default_factory=list, description="the reduction's caveats")
    pathlength: PathlengthRecord | None = Field(
        default=None, description="the run's counted pass (workload `pathlength:`): its status and counter, and the "
        "instructions of the server's other processes (other_processes), which are in no metric row; null without one")

    _exclusions = field_validator("exclusions", "notes", "caveats", mode="before")(classmethod(
        lambda cls, v: _caveat_list(v)))

    @field_validator("per_interval", mode="before")
    @classmethod
    def _rows(cls, value: Any) -> Any:
        """Per-interval data are rows; a document with columns ({"t": [...], "etr_t": [...]}) is
        turned into rows (t as t_start)."""
        if isinstance(value, dict):
            columns = {k: list(v) for k, v in value.items() if isinstance(v, (list, tuple))}
            length = max((len(v) for v in columns.values()), default=0)
            rows = [{("t_start" if k == "t" else k): (v[i] if i < len(v) else None) for k, v in columns.items()}
                    for i in range(length)]
            return rows
        return value or []

    @property
    def excluded(self) -> bool:
        return bool(self.exclusions)

    @property
    def valid(self) -> bool:
        return not self.exclusions

    def metric(self, key: str) -> float | None:
        return self.metrics.get(key)

    def counts_in(self, span: str) -> bool:
        """Whether its values of rows measured in this span ("window", "after") count: it is
        valid, and no failed gate it was kept despite protects them."""
        return not self.exclusions and not any(span in s.protects for s in self.set_aside)


class MetricComparison(Record):
    """One metric, base against new: the paired estimate, its interval, and the verdict.

    `verdict` is the claim the report makes, under its error control (`adjustment`);
    `verdict_unadjusted` is what this metric's own interval says. For a secondary metric whose
    family was not tested (gatekeeping, see perflab.stats.multiplicity), `verdict` is None
    unless the interval shows equivalence, and the report labels the unadjusted call as such.
    """

    key: str = Field(description='catalog key')
    label: str = Field(default="", description='printed label')
    unit: str = Field(default="", description='unit')
    group: str = Field(default="", description='row group')
    direction: str = Field(default="none", description='higher, lower or none')
    decimals: int | None = Field(default=None, description='display decimals')
    role: Role = Field(default="secondary", description='primary (answers the study) or secondary')
    base_value: float | None = Field(default=None, description="geometric mean of the base's valid runs")
    new_value: float | None = Field(default=None, description='the same for the new configuration')
    abs_change: float | None = Field(default=None, description='base_value x rel_change')
    rel_change: float | None = Field(default=None, description='ratio - 1 (the paired estimate)')
    ratio: float | None = Field(default=None, description='paired ratio of geometric means new/base')
    ci_low: float | None = Field(default=None, description='its interval, at `level` (the one that decided)')
    ci_high: float | None = None
    level: float | None = Field(default=None, description="two-sided level of ci_low/ci_high (1 - alpha/k); None in "
                                                          "older files: design.confidence")
    design_ci_low: float | None = Field(default=None, description="the arrangement's own interval, before the "
                                                                  "widening for its measured bias")
    design_ci_high: float | None = None
    design_ratio: float | None = Field(default=None, description="the arrangement's own paired estimate, when `ratio` "
                                                                 "is de-biased by its bound's fitted k and a")
    unsized: bool = Field(default=False, description="the bias-bounded interval spans so many points that the "
                                                     "arrangement cannot size this change (shown as such, not as a "
                                                     "span)")
    method: str | None = Field(default=None, description="paired (by block) or welch (unpaired runs)")
    pair_value: float | None = Field(default=None, description="a machine-wide row of a concurrent design: the "
                                                               "pair's value (no ratio)")
    verdict: str | None = None
    verdict_unadjusted: str | None = None
    adjustment: Adjustment = Field(default="none", description='bonferroni, untested, descriptive, pair or none '
                                                               '(Adjustment)')
    p_value: float | None = Field(default=None, description='two-sided p of no change')
    p_adjusted: float | None = Field(default=None, description="after the report's error control (k x p); None "
                                                               "when a bias widening, not p, decided")
    material: bool = Field(default=False, description='the whole interval lies beyond the margin')
    note: str = Field(default="", description="the verdict's remark")
    n_blocks: int = Field(default=0, description='complete pairs used')
    n_base: int = Field(default=0, description='valid runs of the base')
    n_new: int = Field(default=0, description='valid runs of the new one')
    cv: float | None = Field(default=None, description='per-run CV (SD of ln value)')
    blocks_needed: int | None = Field(default=None, description='blocks the margin needs at this CV')
    legacy: str | None = Field(default=None, description="the seeds' point-estimate call")
    warnings: list[Caveat] = Field(default_factory=list, description="remarks on this row (code, text, values): how "
                                   "its interval was made, why it has none, its noise")
    no_comparison: str | None = Field(default=None, description="why there is no valid pair (all excluded...)")

    _warnings = field_validator("warnings", mode="before")(classmethod(lambda cls, v: _caveat_list(v)))

    @property
    def has_values(self) -> bool:
        return self.base_value is not None and self.new_value is not None

    @property
    def directional(self) -> bool:
        return self.direction in ("higher", "lower")


class ComparisonRecord(Record):
    base: str = Field(description='base configuration')
    new: str = Field(description='compared configuration')
    metrics: list[MetricComparison] = Field(default_factory=list, description='one entry per metric')

    def entry(self, key: str) -> MetricComparison | None:
        return next((m for m in self.metrics if m.key == key), None)


class SweepPoint(Record):
    config: str = Field(description="the point's configuration")
    series: str | None = Field(default=None, description="the study configuration this point belongs to (its curve)")
    value: Any = Field(default=None, description="the factor's value")
    runs: int | None = Field(default=None, description='valid runs')
    metrics: dict[str, float | None] = Field(default_factory=dict, description='geometric means')


class SweepRecord(Record):
    factor: str = Field(description='users, rate, sut_cpus, memory_limit or workers')
    values: list[Any] = Field(default_factory=list, description='the values swept')
    points: list[SweepPoint] = Field(default_factory=list, description='one per value')


class PrimaryVerdict(Record):
    base: str
    new: str
    key: str = Field(description='the primary metric')
    verdict: str | None = Field(default=None, description='its verdict, null when none')
    reason: str | None = Field(default=None, description='why there is none')


class StudyVerdict(Record):
    """The study's answer to its primary question, and the exit code that carries it."""

    exit_code: int = Field(default=0, description='0, 1, 3 or 4 (README: exit codes)')
    meaning: str = Field(default="", description='the answer in words')
    primary: list[PrimaryVerdict] = Field(default_factory=list, description='each primary verdict')


class AAResult(Record):
    """An A/A study's dimensioning: the base against itself."""

    metric: str = Field(description='the primary metric')
    cv: float | None = Field(default=None, description='its observed CV')
    n_blocks: int = Field(default=0, description='blocks')
    false_claims: int = Field(default=0, description='claims of a change made (each false)')
    claims: list[str] = Field(default_factory=list, description='which')
    blocks_needed: int | None = Field(default=None, description='blocks for EQUIVALENT at 80%')
    power: float | None = Field(default=None, description='P(EQUIVALENT) at these blocks and CV')
    margin: float | None = Field(default=None, description='the margin')


class NoiseRow(Record):
    """Where one primary metric's noise comes from (docs/noise.md): between runs vs within runs."""

    config: str = Field(description='configuration')
    key: str = Field(description='primary metric')
    runs: int = Field(default=0, description='valid runs')
    cv_between: float | None = Field(default=None, description='SD of ln value across runs')
    cv_within: float | None = Field(default=None, description="a run's own interval scatter, as the CV of its mean")
    cv_paired: float | None = Field(default=None, description="the paired comparison's CV (s_d / sqrt 2): what the "
                                                              "interval pays for")
    blocks_needed: int | None = Field(default=None, description='blocks the margin needs at cv_paired')


class StudyDocument(Record):
    format: int = Field(default=STUDY_FORMAT, description='format version')
    kind: Literal["study", "compare"] = Field(default="study", description='study, or compare (stored runs)')
    study_id: str | None = None
    name: str = ""
    title: str = ""
    status: StudyStatus = Field(default="running", description='running, complete, interrupted or failed')
    reason: str | None = None
    created: str | None = None
    finished: str | None = None
    study_path: str | None = Field(default=None, description='the study file')
    inputs: dict[str, str] = Field(default_factory=dict, description="sha256 of the study and workload files as the "
                                   "study began: a resumed study refuses files that changed since")
    resumed: list[str] = Field(default_factory=list, description="when the study was resumed (perflab study --resume)")
    study: dict[str, Any] | None = Field(default=None, description='the study file as validated')
    workload: WorkloadSummary = Field(default_factory=WorkloadSummary, description='the workload')
    design: Design = Field(default_factory=Design, description='how it was run and judged')
    configurations: list[ConfigurationRecord] = Field(default_factory=list, description='the base first')
    runs: list[StudyRun] = Field(default_factory=list, description='every run, valid or not')
    comparisons: list[ComparisonRecord] = Field(default_factory=list, description='each configuration against the base')
    sweep: SweepRecord | None = Field(default=None, description="the sweep's curve")
    warnings: list[Caveat] = Field(default_factory=list, description='study-wide caveats')
    verdict: StudyVerdict | None = Field(default=None, description='the answer and the exit code')
    aa: AAResult | None = Field(default=None, description="an A/A study's dimensioning")
    noise: list[NoiseRow] = Field(default_factory=list, description="where the primary metrics' noise comes from")
    pathlength_diffs: list[PathlengthDiff] = Field(default_factory=list, description="where the pathlength went: "
                                                   "each comparison's change in instructions per command, function by "
                                                   "function, from its runs' counted passes (records/pathlength_diff.py)")

    profile_diffs: list[ProfileDiff] = Field(default_factory=list, description="where the CPU went, sampled: each "
                                             "comparison's sampled CPU profiles as shares with their sampling error "
                                             "(drive/profile.py, reduce/profile_diff.py)")

    def pathlength_diff(self, base: str, new: str) -> PathlengthDiff | None:
        return next((d for d in self.pathlength_diffs if d.base == base and d.new == new), None)

    def profile_diff(self, base: str, new: str) -> ProfileDiff | None:
        return next((d for d in self.profile_diffs if d.base == base and d.new == new), None)

    _warnings = field_validator("warnings", mode="before")(classmethod(lambda cls, v: _caveat_list(v)))

    @model_validator(mode="after")
    def _title(self) -> StudyDocument:
        if not self.title:
            self.title = self.name or " -> ".join(c.name for c in self.configurations) or "perflab study"
        return self

    def configuration(self, name: str) -> ConfigurationRecord | None:
        return next((c for c in self.configurations if c.name == name), None)

    def runs_of(self, configs: Any) -> list[StudyRun]:
        wanted = {configs} if isinstance(configs, str) else set(configs)
        return [r for r in self.runs if r.config in wanted]

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def upgrade_study_document(data: dict[str, Any]) -> dict[str, Any]:
    version = data.get("format", 1)
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"unknown format {version!r}")
    if version > STUDY_FORMAT:
        raise ValueError(f"study.json format {version} is newer than this perflab reads (format {STUDY_FORMAT}): "
                         "upgrade perflab to read it")
    if version >= 2:
        return data
    data = dict(data)
    runs = []
    for run in data.get("runs") or []:
        run = dict(run)
        run["exclusions"] = run.pop("exclusion_reasons", None) or ([] if not run.get("excluded") else ["excluded"])
        run["caveats"] = run.pop("warnings", None) or []
        runs.append(run)
    data["runs"] = runs
    comparisons = []
    for comparison in data.get("comparisons") or []:
        comparison = dict(comparison)
        entries = []
        for entry in comparison.get("metrics") or []:
            entry = dict(entry)
            entry["verdict_unadjusted"] = entry.get("verdict")
            entry["adjustment"] = "unadjusted" if entry.get("verdict") else "none"
            entries.append(entry)
        comparison["metrics"] = entries
        comparisons.append(comparison)
    data["comparisons"] = comparisons
    if data.get("study_id") is None and data.get("kind") is None and (data.get("design") or {}).get("load", {}).get(
            "mode") == "stored runs":
        data["kind"] = "compare"
    data["format"] = STUDY_FORMAT
    return data


def parse_study_document(data: Any, source: Path | str | None = None) -> StudyDocument:
    """A StudyDocument from a loaded study.json document; InputError (file, field) when it is not one."""
    return validate(StudyDocument, upgrade_study_document, data, source, "study document")


def read_study_document(path: Path) -> StudyDocument:
    """Load study.json (a path to the file or to its study directory)."""
    data, path = read_json(path, "study.json", "study")
    return parse_study_document(data, path)


def as_study_document(study: Any) -> StudyDocument:
    """A StudyDocument from itself or from a study.json document (a dict)."""
    if isinstance(study, StudyDocument):
        return study
    return parse_study_document(study)
