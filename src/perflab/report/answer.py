"""The study's answer as the study page shows it: each primary verdict with what decided it --
the two configurations' values, the ratio new/base, its interval at the level that decided, and
the margin -- so the page answers "by how much, and how sure" beside "which way"; the same answer
in one line (the studies list); an A/A study's result as fields.

Every number is the comparison's own (study.json's `comparisons`), printed by
perflab.report.numbers as the study report prints it.
"""

from __future__ import annotations

from dataclasses import dataclass

from perflab.catalog.registry import REGISTRY
from perflab.records.study import MetricComparison, StudyDocument
from perflab.report import numbers as fmt
from perflab.report import view as v


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


def answer_text(doc: StudyDocument) -> str | None:
    """The study's answer in one line: each primary verdict, and the exit code that carries them
    (None while there is none: a study still running, a sweep)."""
    verdict = doc.verdict
    if verdict is None or not verdict.primary:
        return None
    calls = [f"{p.new} vs {p.base}: {REGISTRY.label_of(p.key)} {p.verdict or 'no verdict'}" for p in verdict.primary]
    return "; ".join(calls) + f" (exit code {verdict.exit_code})"


def aa_rows(doc: StudyDocument) -> list[tuple[str, str]]:
    """An A/A study's result as (field, value) pairs: the noise, the false claims, the blocks
    (none for a study that is not one)."""
    aa = doc.aa
    if aa is None:
        return []
    return [("metric", fmt.label_of(aa.metric)), ("CV (between runs)", fmt.pct(aa.cv, signed=False, decimals=2)),
            ("blocks", v.text(aa.n_blocks)), ("claims of a change (each false)", v.text(aa.false_claims)),
            ("claims", v.text(aa.claims) if aa.claims else "none"),
            (f"blocks needed for {fmt.margin(aa.margin)}", v.text(aa.blocks_needed)),
            (f"P(EQUIVALENT) at {aa.n_blocks} blocks", fmt.fixed(aa.power, 2))]
