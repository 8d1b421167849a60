"""The compare page's computation: the same document, verdicts and exit code as `perflab
compare A B` (perflab.study.groups.comparison_document; the exit code is the document's
`verdict.exit_code`), from query parameters checked first, since they arrive from a browser.

What the page takes is what the command takes: `metric` (the primary metrics, comma-separated;
none given: the study's own when both groups come from one study, else ITR (S)), `margin` and
`alpha` (none given: the study's, else the defaults), checked by the criteria's one rule
(perflab.stats.criteria.check).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from perflab.errors import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_NO_COMPARISON, EXIT_OK, InputError
from perflab.records.study import MetricComparison, StudyDocument
from perflab.serve.data import ID
from perflab.store.catalog import Store

#: A word for each exit code of `perflab compare` (README "Exit codes"); the document's
#: `verdict.meaning` says why in the case at hand.
EXIT_WORD = {EXIT_OK: "EQUIVALENT or BETTER", EXIT_FAILED: "WORSE", EXIT_INCONCLUSIVE: "INCONCLUSIVE",
             EXIT_NO_COMPARISON: "no valid comparison"}
_KEY = re.compile(r"^[a-z0-9_]+(:[A-Za-z0-9_.@/ -]+)?$")
#: Runs per group the compare page overlays (a group of many runs shows its first ones).
OVERLAY_RUNS = 8
#: The criteria fields of the form, in the order perflab.stats.criteria.Criteria takes them.
CRITERIA_FIELDS = ("margin", "alpha")


@dataclass(frozen=True)
class CompareQuery:
    a: str
    b: str
    metrics: tuple[str, ...] = ()                                   # empty: the study's, else the default
    criteria: tuple[float, float] | None = None                     # None: the study's, else the defaults

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> CompareQuery | None:
        """None when the form has not been filled in; InputError when it is wrong."""
        from perflab.catalog.registry import COMPONENT_COMPARED, REGISTRY

        a, b = (query.get("a") or "").strip(), (query.get("b") or "").strip()
        if not a and not b:
            return None
        if not a or not b:
            raise InputError("give both groups, A (base) and B (new)", field="A" if not a else "B")
        metrics = tuple(dict.fromkeys(m.strip() for m in (query.get("metric") or "").split(",") if m.strip()))
        for m in metrics:
            if not _KEY.match(m):
                raise InputError(f"not a metric key: {m!r}", field="metric")
        unknown = REGISTRY.unknown_keys(metrics, COMPONENT_COMPARED)
        if unknown:
            raise InputError(f"unknown metric key {unknown[0]!r}: `perflab metrics` lists the keys", field="metric")
        return cls(check_ref(a, "A"), check_ref(b, "B"), metrics, _criteria(query))

    def params(self) -> dict[str, str]:
        out = {"a": self.a, "b": self.b, "metric": ",".join(self.metrics)}
        if self.criteria is not None:
            out.update({name: f"{value:g}" for name, value in zip(CRITERIA_FIELDS, self.criteria)})
        return out


def _criteria(query: Mapping[str, str]) -> tuple[float, float] | None:
    """The criteria the form gives, each missing one at its default, checked as `perflab
    compare` checks its options; None when the form gives none."""
    from perflab.stats.criteria import DEFAULT_ALPHA, DEFAULT_MARGIN, check

    texts = {name: (query.get(name) or "").strip() for name in CRITERIA_FIELDS}
    if not any(texts.values()):
        return None
    values = []
    for name, default in zip(CRITERIA_FIELDS, (DEFAULT_MARGIN, DEFAULT_ALPHA)):
        if not texts[name]:
            values.append(default)
            continue
        try:
            value = float(texts[name])
        except ValueError:
            raise InputError(f"expected a number, got {texts[name]!r}", field=name) from None
        if not math.isfinite(value):
            raise InputError(f"expected a finite number, got {texts[name]!r}", field=name)
        values.append(value)
    problem = check(*values)
    if problem is not None:
        raise InputError(problem[1], field=problem[0])
    return values[0], values[1]


def check_ref(ref: str, which: str) -> str:
    """A run group as `perflab compare` takes it (perflab.study.groups.parse_group), except file
    system paths: a browser names runs in this store only (comma-separated ids or unique
    prefixes, label:NAME, study:ID:CONFIG)."""
    from perflab.study.groups import parse_group

    if len(ref) > 2000:
        raise InputError("too long", field=which)
    group = parse_group(ref, which)
    if group.study is not None and (not ID.match(group.study) or ".." in group.study):
        raise InputError(f"expected study:ID:CONFIG, got {ref!r}", field=which)
    for part in group.runs:
        if not ID.match(part) or ".." in part:
            raise InputError(f"expected run ids (or unique prefixes), label:NAME or study:ID:CONFIG; got {part!r}",
                             field=which)
    return group.text


@dataclass
class VerdictRow:
    """One metric of the comparison as the page shows it (the report's verdict cell)."""

    base: str
    new: str
    entry: MetricComparison
    verdict: str                    # perflab.report.view.verdict_cell: the report's own words

    @property
    def primary(self) -> bool:
        return self.entry.role == "primary"

    def to_json(self) -> dict[str, Any]:
        return {"base": self.base, "new": self.new, "shown": self.verdict, **self.entry.model_dump(mode="json")}


@dataclass
class CompareResult:
    query: CompareQuery
    doc: StudyDocument
    exit_code: int
    meaning: str
    rows: list[VerdictRow]          # primary metrics first, then the secondary ones
    texts: dict[str, str]

    @property
    def primary(self) -> list[VerdictRow]:
        return [r for r in self.rows if r.primary]

    def series(self, limit: int = OVERLAY_RUNS) -> dict[str, Any]:
        """Each group's runs and their per-interval rows (the window's, as the comparison judged
        them: study.json's `per_interval`), for the page's overlay: `limit` runs per group."""
        groups = []
        for config in self.doc.configurations[:2]:
            runs = [r for r in self.doc.runs if r.config == config.name]
            groups.append({"name": config.name, "runs_total": len(runs),
                           "runs": [{"run_id": r.run_id, "excluded": r.excluded, "intervals": r.per_interval}
                                    for r in runs[:limit]]})
        return {"groups": groups}


def run_compare(store: Store, query: CompareQuery) -> CompareResult:
    """The comparison, as `perflab compare` makes it, and its three reports (rendered once: the
    page, its frame and the downloads all show the same document)."""
    from perflab.report.view import verdict_cell
    from perflab.report.write import EXPORTERS
    from perflab.stats.criteria import Criteria
    from perflab.study.groups import comparison_document

    criteria = Criteria(*query.criteria) if query.criteria is not None else None
    doc = comparison_document(store, query.a, query.b, criteria, primary=list(query.metrics) or None)
    if doc.verdict is not None:
        code, meaning = doc.verdict.exit_code, doc.verdict.meaning
    else:
        code, meaning = EXIT_NO_COMPARISON, "no comparison was made"
    rows = [VerdictRow(c.base, c.new, m, verdict_cell(m)) for c in doc.comparisons for m in c.metrics]
    rows.sort(key=lambda r: not r.primary)          # stable: each group keeps the report's order
    texts = {e.filename: e.render(doc) for e in EXPORTERS}
    return CompareResult(query, doc, code, meaning, rows, texts)
