"""The one builder of study documents (study.json), for `perflab study` and `perflab compare`.

A study fills it run by run (it is saved after every run, so an interrupted study keeps what
it measured); a comparison of stored runs fills it at once. Either way each run enters through
`add_run` -- which judges it with the one exclusion rule (perflab.study.validity) unless a
stored decision is given -- and the verdicts through `judge`, which applies the error control
and the study's exit code (perflab.study.compare).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perflab import caveats as cav
from perflab.caveats import Caveat
from perflab.records.fingerprint import split_fingerprint
from perflab.records.run import RunRecord
from perflab.records.study import (
    ConfigurationRecord,
    Design,
    GatesRecord,
    ScriptSummary,
    SetAside,
    StudyDocument,
    StudyRun,
    TransactionSummary,
    WorkloadSummary,
)
from perflab.reduce.reduce import RunMetrics
from perflab.stats.criteria import Criteria
from perflab.study.compare import SOLO, DesignTraits, flatten_classes, flatten_components, judge_all
from perflab.study.validity import (
    STEADY_CODES,
    GateResult,
    GateSettings,
    RunValidity,
    deciding_spans,
    judge_run,
    pooled_scales,
    run_trends,
    steady_gates,
    steady_series,
)


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def workload_summary(workload: dict[str, Any], path: str | Path | None, timing: dict[str, float | None]) -> \
        WorkloadSummary:
    """What a report says of the workload, from its validated form (as run.json stores it)."""
    return WorkloadSummary(
        name=str(workload.get("name") or "?"), description=str(workload.get("description") or ""),
        path=None if path is None else str(path), target=workload.get("target"),
        transactions=[TransactionSummary.model_validate({"name": t.get("name"), "class": t.get("class")})
                      for t in workload.get("transactions") or []],
        scripts=[ScriptSummary.model_validate({"name": s.get("name"), "weight": s.get("weight"),
                                               "steps": s.get("steps") or []})
                 for s in workload.get("scripts") or []],
        init_script=workload.get("init_script"), think=workload.get("think"), timing=timing)


def gate_settings(design: Design) -> GateSettings:
    """The gates a study judged its runs with, as stored in its design (to re-derive a decision)."""
    gates = design.gates
    defaults = GateSettings()
    return GateSettings(
        max_error_rate=defaults.max_error_rate if gates.max_error_rate is None else gates.max_error_rate,
        max_etr_trend=defaults.max_etr_trend if gates.max_etr_trend is None else gates.max_etr_trend,
        util_band=gates.util_band)


def stored_criteria(design: Design) -> Criteria:
    """The criteria a stored study judged with: its alpha, or (written before perflab 0.2) its
    family_alpha, the rate its claims were held to."""
    alpha = design.alpha if design.alpha is not None else design.family_alpha
    if alpha is None and design.confidence is not None:
        alpha = round(1.0 - design.confidence, 12)
    return Criteria.from_fields(design.margin, alpha=alpha)


class StudyDocumentBuilder:
    def __init__(self, doc: StudyDocument, gates: GateSettings, criteria: Criteria, primary: Sequence[str],
                 keys: Sequence[str], design: DesignTraits = SOLO, paired: bool = True):
        self.doc = doc
        self.gates = gates
        self.criteria = criteria
        self.primary = list(primary)
        self.keys = list(keys)
        self.design = design
        self.paired = paired
        self._server_started: tuple[str, str, int | None] | None = None   # (when, run, block) of the last run
        doc.design.gates = GatesRecord(max_error_rate=gates.max_error_rate, max_etr_trend=gates.max_etr_trend,
                                       util_band=gates.util_band)
        doc.design.margin, doc.design.confidence = criteria.margin, criteria.confidence
        doc.design.alpha, doc.design.family_alpha = criteria.alpha, criteria.alpha
        doc.design.primary_metrics = list(primary)

    def set_util_band(self, band: tuple[float, float] | None) -> None:
        self.gates = GateSettings(self.gates.max_error_rate, self.gates.max_etr_trend, band)
        self.doc.design.gates.util_band = band

    def add_run(self, record: RunRecord, metrics: RunMetrics, config: str, block: int | None, order: int | None,
                is_base: bool, validity: RunValidity | None = None) -> StudyRun:
        """Judge a run (or take the stored decision) and add it; fill in its configuration's
        hardware and software from the first run's fingerprint."""
        values = flatten_classes(flatten_components(dict(metrics.values), metrics.per_component),
                                 metrics.per_class, [*self.primary, *self.keys])
        if validity is None:
            validity = judge_run(record, metrics.values, metrics.per_interval, self.gates, is_base, primary=self.primary)
        shown = validity.exclusions + [g.caveat for g in validity.set_aside]   # the run's own, as judged
        run = StudyRun(run_id=record.run_id, config=config, block=block, order=order, status=record.status,
                       reason=record.reason, exclusions=validity.exclusions, notes=validity.notes,
                       set_aside=set_aside_records(validity.set_aside),
                       users=record.config.users, rate=record.config.rate, sut_cpus=list(record.config.sut_cpus),
                       metrics=values,
                       per_class=metrics.per_class, per_interval=metrics.per_interval,
                       caveats=[c for c in metrics.caveats if c not in shown], pathlength=record.pathlength)
        self.doc.runs.append(run)
        self._note_restart(record, block)
        conf = self.doc.configuration(config)
        if conf is not None and not conf.software:
            conf.hardware, conf.software = split_fingerprint(record.fingerprint)
            conf.software["adapter"] = (record.workload.get("target") or {}).get("kind")
            conf.hardware["processors"] = record.config.processors
            conf.hardware["real_storage_bytes"] = record.config.real_storage_bytes
            if self.doc.design.placement is None:
                self.doc.design.placement = record.fingerprint.get("placement")
            if record.config.shared_cpus:
                self.doc.design.shared_cpus = True
            elif self.doc.design.shared_cpus is None:
                self.doc.design.shared_cpus = False
        return run

    def _note_restart(self, record: RunRecord, block: int | None) -> None:
        """A server the study does not start (a DSN) that restarted between two of its runs: the
        runs after it began on a cold server (its caches empty), which the report says. The
        server's start time is a fact of each run (`sut_started`, drive/server_run.py)."""
        started = record.fingerprint.get("sut_started")
        if not started:
            return
        before = self._server_started
        self._server_started = (str(started), record.run_id, block)
        if before is not None and before[0] != str(started):
            where = "" if block is None or before[2] is None else f" (block {before[2]} -> block {block})"
            self.warn(cav.note(cav.Code.SERVER_RESTARTED,
                               f"the server under test restarted between run {before[1]} and run {record.run_id}"
                               f"{where}: it started again at {started}, so the runs from {record.run_id} on began "
                               "on a cold server (its caches empty)", before=before[1], after=record.run_id,
                               started=str(started)))

    def rejudge_steadiness(self) -> None:
        """The study's second judgement of steadiness, once every run is in (`StudyJudge`): each
        run's series against the changes of the study's other runs, a pair's run beside its
        partner. Runs excluded for another reason neither take part nor change."""
        judge = StudyJudge(self.doc, self.gates, self.primary, self.design.concurrent)
        for run in judge.eligible:
            judged = RunValidity(judge.steady_gates(run), deciding_spans(self.primary))
            run.exclusions = [c for c in run.exclusions if c.code not in STEADY_CODES] + judged.exclusions
            run.notes = [c for c in run.notes if c.code not in STEADY_CODES] + judged.notes
            run.set_aside = ([s for s in run.set_aside if s.caveat.code not in STEADY_CODES]
                             + set_aside_records(judged.set_aside))

    def add_pair_gates(self, run: StudyRun, failed: Sequence[GateResult]) -> None:
        """A pair's failed gates (perflab.study.validity.judge_pair) on one of its runs: each
        excludes it, or sets it aside when it protects none of the primary metrics."""
        judged = RunValidity(list(failed), deciding_spans(self.primary))
        run.exclusions += judged.exclusions
        run.notes += [c for c in judged.notes if c not in run.notes]
        run.set_aside += set_aside_records(judged.set_aside)

    def warn(self, caveat: Caveat) -> None:
        if caveat not in self.doc.warnings:
            self.doc.warnings.append(caveat)

    def judge(self, pairs: Sequence[tuple[str, str]] | None = None) -> None:
        """The comparisons (default: every configuration with the base), error-controlled, and the
        answer. A one-configuration sweep has none: it is a curve, not a comparison."""
        doc = self.doc
        if pairs is None:
            pairs = [(doc.configurations[0].name, c.name) for c in doc.configurations[1:]]
        if not pairs:
            doc.comparisons, doc.verdict = [], None
            return
        doc.comparisons, doc.verdict = judge_all(doc.runs, pairs, self.keys, self.primary, self.criteria, self.design,
                                                 self.paired)


def set_aside_records(gates: Sequence[GateResult]) -> list[SetAside]:
    """Set-aside gate results as the study document keeps them."""
    return [SetAside(gate=g.gate, measured=g.measured, limit=g.limit, unit=g.unit,
                     protects=sorted(s.value for s in g.protects), caveat=g.caveat)
            for g in gates if g.caveat is not None]


def new_configurations(names_and_changes: Sequence[tuple[str, dict[str, Any]]]) -> list[ConfigurationRecord]:
    return [ConfigurationRecord(name=name, base=i == 0, changes=changes)
            for i, (name, changes) in enumerate(names_and_changes)]


class StudyJudge:
    """How a study judges the steadiness of its runs once all are in, re-derivable from
    study.json alone (the run page of `perflab serve` and `perflab show` ask it for a study's
    run, so the page and the study cannot disagree): each run's trends against the pooled
    changes of the study's other eligible runs (perflab.study.validity.pooled_scales), a
    pair's run relative to its partner (a pair's ratio drifts once, so only one of the two
    enters the pool)."""

    def __init__(self, doc: StudyDocument, gates: GateSettings, primary: Sequence[str], concurrent: bool):
        self.doc, self.gates, self.primary = doc, gates, list(primary)
        self.partners = partners_of(doc) if concurrent else {}
        self.eligible = [r for r in doc.runs if all(c.code in STEADY_CODES for c in r.exclusions)]
        trends = {}
        for run in self.eligible:
            partner = self.partners.get(run.run_id)
            if partner is not None and partner.run_id in trends:
                continue  # the mirror image of its partner's trend
            specs = steady_series(self.primary, run.users is not None, gates)
            trends[run.run_id] = run_trends(run.per_interval, specs,
                                            partner.per_interval if partner is not None else None)
        self.pooled = pooled_scales(trends, {r.run_id: (r.users, r.rate) for r in self.eligible})

    def scales(self, run: StudyRun) -> dict:
        partner = self.partners.get(run.run_id)
        key = run.run_id if run.run_id in self.pooled else (partner.run_id if partner is not None else run.run_id)
        return self.pooled.get(key, {})

    def steady_gates(self, run: StudyRun) -> list:
        partner = self.partners.get(run.run_id)
        return steady_gates(run.metrics, run.per_interval, run.users is not None, self.gates, self.primary,
                            partner.per_interval if partner is not None else None, self.scales(run))


def partners_of(doc: StudyDocument) -> dict[str, StudyRun]:
    """A pair's run -> the other run of its block (a study whose blocks ran as pairs)."""
    by_block: dict[Any, list[StudyRun]] = {}
    for run in doc.runs:
        by_block.setdefault(run.block, []).append(run)
    out = {}
    for runs in by_block.values():
        if len(runs) == 2:
            out[runs[0].run_id], out[runs[1].run_id] = runs[1], runs[0]
    return out
