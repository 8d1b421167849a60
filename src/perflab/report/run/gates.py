"""The validity gates of one run, as rows, and the decision about it.

The gates are perflab.study.validity's typed results (`GateResult`), rendered here and never
restated: a run of a study is judged as its study judged it (its stored decision, the study's
gate settings, its primary metrics, its partner in a pair, the study's pooled noise), so the run's
page and the study cannot disagree; any other run by the default gates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from perflab import caveats as cav
from perflab.caveats import Caveat
from perflab.records.run import RunRecord
from perflab.records.study import StudyDocument, StudyRun
from perflab.reduce.reduce import RunMetrics

if TYPE_CHECKING:
    from perflab.study.validity import RunValidity

#: The words of each gate outcome in a report.
OUTCOME_WORDS = {"pass": "pass", "fail": "FAIL", "note": "note", "not judged": "na"}
DEFAULT_SOURCE = "the default study gates (docs/studies.md)"


@dataclass(frozen=True)
class Gate:
    name: str
    measured: str
    limit: str
    result: str          # "pass", "FAIL", "note", "na" (not judged)


@dataclass(frozen=True)
class Judgement:
    """The gates as rows, and the decision: the study's stored one for a run of a study, else
    what the one exclusion rule (perflab.study.validity.judge_run) says of the run alone."""

    gates: list[Gate]
    verdict: str
    source: str
    counted: bool
    exclusions: list[Caveat]


def judge(record: RunRecord, metrics: RunMetrics | None, study: StudyDocument | None) -> Judgement:
    from perflab.study.validity import GateSettings, judge_run

    entry = _study_entry(study, record.run_id)
    if entry is not None and study is not None:
        return _as_the_study_judged(record, metrics, study, entry)
    if metrics is None:
        exclusions = [cav.run_not_complete(record.status, "no measurements")]
        return Judgement([Gate("run completed", record.status, "complete", "FAIL")],
                         "a study would exclude it: " + exclusions[0].text, DEFAULT_SOURCE, False, exclusions)
    results = judge_run(record, metrics.values, metrics.per_interval, GateSettings(), False)
    exclusions = list(results.exclusions)
    verdict = ("a study would exclude it: " + "; ".join(c.text for c in exclusions)) if exclusions else \
        "valid: a study would count it"
    return Judgement(gate_rows(results), verdict, DEFAULT_SOURCE, not exclusions, exclusions)


def _as_the_study_judged(record: RunRecord, metrics: RunMetrics | None, study: StudyDocument,
                         entry: StudyRun) -> Judgement:
    from perflab.study.document import StudyJudge, gate_settings
    from perflab.study.validity import STEADY_CODES, judge_run

    settings = gate_settings(study.design)
    primary = study.design.primary_metrics or None
    is_base = any(c.base and c.name == entry.config for c in study.configurations) and not study.design.duet
    results = None
    if metrics is not None:
        study_judge = StudyJudge(study, settings, primary or ["itr_s"], study.design.duet)
        partner = study_judge.partners.get(entry.run_id)
        results = judge_run(record, metrics.values, metrics.per_interval, settings, is_base,
                            partner.per_interval if partner is not None else None, primary,
                            study_judge.scales(entry))
    # a pair's exclusions (the two drivers together, the pair's utilization) are the study's own
    stored = [c for c in entry.exclusions if c.code not in STEADY_CODES]
    rows = gate_rows(results) + [Gate("the pair's gates", c.text, "", "FAIL") for c in stored
                                 if results is None or c not in results.exclusions]
    own = [g.caveat for g in results.set_aside] if results is not None else []
    rows += [Gate(s.gate, f"{gate_value(s.measured, s.unit)}: {s.caveat.text}", gate_value(s.limit, s.unit),
                  set_aside_word(s.protects)) for s in entry.set_aside if s.caveat not in own
             and s.caveat.code not in STEADY_CODES]
    exclusions = list(entry.exclusions)
    verdict = ("excluded by the study: " + "; ".join(c.text for c in exclusions)) if exclusions else \
        "counted in the study's verdicts"
    return Judgement(rows, verdict, f"the gates of study {study.study_id}, as it applied them", not exclusions,
                     exclusions)


def gate_rows(results: RunValidity | None) -> list[Gate]:
    """Each gate's typed result as a row: what it measured, its limit, its outcome, and for a
    failure or a note the caveat's sentence."""
    if results is None:
        return []
    rows = []
    for g in results.gates:
        measured = gate_value(g.measured, g.unit)
        if g.caveat is not None and g.outcome != "pass":
            measured = g.caveat.text if measured == "na" else f"{measured}: {g.caveat.text}"
        word = (set_aside_word(sorted(s.value for s in g.protects)) if g.set_aside(results.deciding)
                else OUTCOME_WORDS.get(g.outcome, g.outcome))
        rows.append(Gate(g.gate, measured, g.bound or gate_value(g.limit, g.unit), word))
    return rows


def set_aside_word(protects: list[str]) -> str:
    """A failed gate that protects none of the study's primary metrics (the run is kept)."""
    return f"FAIL ({' and '.join(protects)} rows only: kept)"


def gate_value(value: float | None, unit: str) -> str:
    if value is None:
        return "na"
    if unit in ("share", "relative change", "share behind"):
        return f"{100 * value:+.1f}%" if unit == "relative change" else f"{100 * value:.2f}%"
    if unit.startswith("%"):
        return f"{value:.1f}{unit}"
    return f"{value:g} {unit}".strip()


def _study_entry(study: StudyDocument | None, run_id: str) -> StudyRun | None:
    return next((r for r in study.runs if r.run_id == run_id), None) if study is not None else None
