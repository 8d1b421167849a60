"""The study's answer as the study page shows it: each primary verdict with what decided it --
the two configurations' values, the ratio new/base, its interval at the level that decided, and
the margin -- so the page answers "by how much, and how sure" beside "which way".

Every number is the comparison's own (study.json's `comparisons`), printed by
perflab.report.numbers as the study report prints it.
"""

from __future__ import annotations

from dataclasses import dataclass

from perflab.records.study import MetricComparison, StudyDocument
from perflab.report import numbers as fmt


@dataclass(frozen=True)
class AnswerRow:
    key: str
    metric: str             # the registry's label
    base: str
    new: str
    base_value: str         # with its unit
    new_value: str
    ratio: str              # new / base
    interval: str           # the ratio's interval, "[lo, hi]"
    change: str             # the same interval as relative changes, "-1.2% to +2.0%"
    level: str              # the interval's two-sided level (1 - alpha/k)
    margin: str             # the equivalence margin, "±3%"
    verdict: str            # EQUIVALENT, BETTER, WORSE, INCONCLUSIVE, or "no verdict"
    reason: str             # why there is no verdict, when there is none


def comparison_entry(doc: StudyDocument, base: str, new: str, key: str) -> MetricComparison | None:
    """The comparison row of `key` for the pair (base, new), if the study made one."""
    for comparison in doc.comparisons:
        if comparison.base == base and comparison.new == new:
            return next((m for m in comparison.metrics if m.key == key), None)
    return None


def answer_rows(doc: StudyDocument) -> list[AnswerRow]:
    """One row per primary verdict (none while the study has no answer)."""
    if doc.verdict is None:
        return []
    rows = []
    for p in doc.verdict.primary:
        m = comparison_entry(doc, p.base, p.new, p.key)
        level = (m.level if m is not None and m.level is not None else None) or doc.design.confidence
        rows.append(AnswerRow(
            key=p.key, metric=fmt.label_of(p.key, m), base=p.base, new=p.new,
            base_value=fmt.quantity(m.base_value, p.key, m) if m is not None else fmt.NA,
            new_value=fmt.quantity(m.new_value, p.key, m) if m is not None else fmt.NA,
            ratio=fmt.ratio(m.ratio, m) if m is not None else fmt.NA,
            interval=fmt.ci_ratio(m.ci_low, m.ci_high) if m is not None else fmt.NA,
            change=fmt.ci_pct(m.ci_low, m.ci_high) if m is not None else fmt.NA,
            level=fmt.percent_level(level), margin=fmt.margin(doc.design.margin),
            verdict=p.verdict or "no verdict", reason=p.reason or (m.no_comparison if m is not None else "") or ""))
    return rows
