"""The one builder of study documents (study.json), for `perflab study` and `perflab compare`.

A study fills it run by run (it is saved after every run, so an interrupted study keeps what
it measured); a comparison of stored runs fills it at once. Either way each run enters through
`add_run` -- which judges it with the one exclusion rule (perflab.study.validity) unless a
stored decision is given -- and the verdicts through `judge`, which applies the error control
and the study's exit code (perflab.study.compare).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Sequence

from perflab.caveats import Caveat
from perflab.records.run import RunRecord
from perflab.records.study import (ConfigurationRecord, Design, GatesRecord, StudyDocument, StudyRun,
                                   WorkloadSummary)
from perflab.reduce.reduce import RunMetrics
from perflab.stats.criteria import Criteria
from perflab.study.compare import flatten_components, judge_all
from perflab.study.validity import GateSettings, RunValidity, judge_run
from perflab.sut.fingerprint import split_fingerprint


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def workload_summary(workload: dict[str, Any], path: str | Path | None, timing: dict[str, float | None]) -> \
        WorkloadSummary:
    """What a report says of the workload, from its validated form (as run.json stores it)."""
    return WorkloadSummary(
        name=str(workload.get("name") or "?"), description=str(workload.get("description") or ""),
        path=None if path is None else str(path), target=workload.get("target"),
        transactions=[{"name": t.get("name"), "class": t.get("class")} for t in workload.get("transactions") or []],
        scripts=[{"name": s.get("name"), "weight": s.get("weight"), "steps": s.get("steps") or []}
                 for s in workload.get("scripts") or []],
        init_script=workload.get("init_script"), think=workload.get("think"), timing=timing)


def gate_settings(design: Design) -> GateSettings:
    """The gates a study judged its runs with, as stored in its design (to re-derive a decision)."""
    gates = design.gates
    defaults = GateSettings()
    return GateSettings(
        max_error_rate=defaults.max_error_rate if gates.max_error_rate is None else gates.max_error_rate,
        max_etr_trend=defaults.max_etr_trend if gates.max_etr_trend is None else gates.max_etr_trend,
        util_band=tuple(gates.util_band) if gates.util_band is not None else None)


class StudyDocumentBuilder:
    def __init__(self, doc: StudyDocument, gates: GateSettings, criteria: Criteria, primary: Sequence[str],
                 keys: Sequence[str]):
        self.doc = doc
        self.gates = gates
        self.criteria = criteria
        self.primary = list(primary)
        self.keys = list(keys)
        doc.design.gates = GatesRecord(max_error_rate=gates.max_error_rate, max_etr_trend=gates.max_etr_trend,
                                       util_band=gates.util_band)
        doc.design.margin, doc.design.confidence = criteria.margin, criteria.confidence
        doc.design.family_alpha, doc.design.primary_metrics = criteria.family_alpha, list(primary)

    def set_util_band(self, band: tuple[float, float] | None) -> None:
        self.gates = GateSettings(self.gates.max_error_rate, self.gates.max_etr_trend, band)
        self.doc.design.gates.util_band = band

    def add_run(self, record: RunRecord, metrics: RunMetrics, config: str, block: int | None, order: int | None,
                is_base: bool, validity: RunValidity | None = None) -> StudyRun:
        """Judge a run (or take the stored decision) and add it; fill in its configuration's
        hardware and software from the first run's fingerprint."""
        values = flatten_components(dict(metrics.values), metrics.per_component)
        if validity is None:
            validity = judge_run(record, metrics.values, metrics.per_interval, self.gates, is_base)
        run = StudyRun(run_id=record.run_id, config=config, block=block, order=order, status=record.status,
                       reason=record.reason, exclusions=validity.exclusions, notes=validity.notes,
                       users=record.config.users, rate=record.config.rate, metrics=values,
                       per_class=metrics.per_class, per_interval=metrics.per_interval,
                       caveats=[c for c in metrics.caveats if c not in validity.exclusions])
        self.doc.runs.append(run)
        conf = self.doc.configuration(config)
        if conf is not None and not conf.software:
            conf.hardware, conf.software = split_fingerprint(record.fingerprint)
            conf.software["adapter"] = (record.workload.get("target") or {}).get("kind")
            conf.hardware["processors"] = record.config.processors
            conf.hardware["real_storage_bytes"] = record.config.real_storage_bytes
            if self.doc.design.placement is None:
                self.doc.design.placement = record.fingerprint.get("placement")
        return run

    def warn(self, caveat: Caveat) -> None:
        if caveat not in self.doc.warnings:
            self.doc.warnings.append(caveat)

    def judge(self, pairs: Sequence[tuple[str, str]] | None = None) -> None:
        """The comparisons (default: every configuration with the base), error-controlled, and the
        answer. A one-configuration sweep has none: it is a curve, not a comparison."""
        doc = self.doc
        if pairs is None:
            base = doc.configurations[0].name if doc.configurations else None
            pairs = [(base, c.name) for c in doc.configurations[1:]]
        if not pairs:
            doc.comparisons, doc.verdict = [], None
            return
        doc.comparisons, doc.verdict = judge_all(doc.runs, pairs, self.keys, self.primary, self.criteria)


def new_configurations(names_and_changes: Sequence[tuple[str, dict[str, Any]]]) -> list[ConfigurationRecord]:
    return [ConfigurationRecord(name=name, base=i == 0, changes=changes)
            for i, (name, changes) in enumerate(names_and_changes)]
