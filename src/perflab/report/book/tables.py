"""The measured tables a page shows, generated from a stored record so every cell is traceable.

A page's tables are not typed: each is made from the study (or suite) record kept beside the page
(layout.py), with the report's own formatting (report/numbers.py, report/view.py's verdict and
interval cells, report/suite.py's LSPR table), so the page and the report print a number alike.
Kinds:

* `comparison`: per configuration pair, the chosen metrics' base and new values, ratio, the
  interval that decided the verdict, and the verdict -- the rows of the report's Measurement
  data;
* `medians`: per configuration, the median of its valid runs' values of the chosen metrics (a
  page's "medians of the runs");
* `runs`: the run rows themselves (run id, configuration, block, validity, the chosen metrics);
* `suite`: the LSPR table of a suite: a row per workload and the Average;
* `pathlength-libraries`, `pathlength-functions`, `pathlength-inclusive`, `pathlength-transactions`:
  where the pathlength went (report/pathlength_diff.py), the report's own tables of it -- by
  library, by function (its own instructions, or inclusive) and by transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perflab.catalog.registry import REGISTRY
from perflab.errors import InputError
from perflab.records.study import StudyDocument
from perflab.records.suite import SuiteDocument
from perflab.report import numbers as fmt
from perflab.report.pathlength_diff import build
from perflab.report.suite import summary_table
from perflab.report.view import interval_cell, verdict_cell

#: where the pathlength went: each kind's table of report/pathlength_diff.py's view
PATHLENGTH_KINDS = {"pathlength-libraries": "libraries", "pathlength-functions": "exclusive",
                    "pathlength-inclusive": "inclusive", "pathlength-transactions": "transactions"}
KINDS = ("comparison", "medians", "runs", "suite", *PATHLENGTH_KINDS)


@dataclass(frozen=True)
class PageTable:
    columns: list[str]
    rows: list[list[str]]


def _keys(study: StudyDocument, metrics: list[str]) -> list[str]:
    """The metrics asked for (catalog keys), checked; default: the study's primary metrics."""
    keys = metrics or list(study.design.primary_metrics) or list(REGISTRY.role("compared"))[:1]
    unknown = [k for k in keys if fmt.metric_of(k) is None]
    if unknown:
        raise InputError(f"not a metric key of the catalog: {', '.join(unknown)} (perflab metrics lists them)",
                         field="metrics")
    return keys


def _heading(key: str) -> str:
    unit = fmt.unit_of(key)
    return f"{fmt.label_of(key)} ({unit})" if unit else fmt.label_of(key)


def comparison_table(study: StudyDocument, metrics: list[str]) -> PageTable:
    keys = _keys(study, metrics)
    level = fmt.number(study.design.confidence)
    interval = "CI" if level is None else f"{fmt.percent_level(level)} CI"
    rows = []
    for comparison in study.comparisons:
        for key in keys:
            entry = comparison.entry(key)
            if entry is None:
                rows.append([f"{comparison.base} → {comparison.new}", fmt.label_of(key), fmt.unit_of(key) or "-",
                             fmt.NA, fmt.NA, fmt.NA, fmt.NA, "not compared"])
                continue
            rows.append([f"{comparison.base} → {comparison.new}", fmt.label_of(key, entry),
                         fmt.unit_of(key, entry) or "-", fmt.value(entry.base_value, key, entry),
                         fmt.value(entry.new_value, key, entry), fmt.ratio(entry.ratio, entry),
                         interval_cell(study, entry), verdict_cell(entry)])
    return PageTable(["comparison", "metric", "unit", "base", "new", "ratio", interval, "verdict"], rows)


def medians_table(study: StudyDocument, metrics: list[str]) -> PageTable:
    keys = _keys(study, metrics)
    rows = []
    for config in study.configurations:
        valid = [r for r in study.runs_of(config.name) if r.valid]
        cells = [config.name, f"{len(valid)} of {len(study.runs_of(config.name))}"]
        for key in keys:
            values = [v for v in (fmt.number(r.metrics.get(key)) for r in valid) if v is not None]
            cells.append(fmt.value(float(np.median(values)), key) if values else fmt.NA)
        rows.append(cells)
    return PageTable(["configuration", "valid runs", *(_heading(k) for k in keys)], rows)


def runs_table(study: StudyDocument, metrics: list[str]) -> PageTable:
    keys = _keys(study, metrics)
    rows = []
    for run in sorted(study.runs, key=lambda r: (r.order is None, r.order, r.run_id)):
        rows.append([run.run_id, run.config, str(run.block) if run.block is not None else fmt.NA,
                     "excluded" if run.excluded else "valid", *(fmt.value(run.metrics.get(k), k) for k in keys)])
    return PageTable(["run id", "configuration", "block", "valid", *(_heading(k) for k in keys)], rows)


def suite_table(suite: SuiteDocument) -> PageTable:
    made = summary_table(suite)
    return PageTable(made.columns, made.rows)


def pathlength_table(study: StudyDocument, kind: str) -> PageTable:
    """One of where the pathlength went's tables, for each comparison counted per function (a
    first column names the comparison when there are several)."""
    if not study.pathlength_diffs:
        raise InputError("the study's record has no per-function counts (where the pathlength went): its runs were "
                         "not counted per function", field="kind")
    several = len(study.pathlength_diffs) > 1
    columns: list[str] = []
    rows: list[list[str]] = []
    for diff in study.pathlength_diffs:
        made = getattr(build(diff), PATHLENGTH_KINDS[kind])
        if made is None:
            continue
        columns = (["comparison"] if several else []) + list(made.columns)
        rows += [([f"{diff.base} → {diff.new}"] if several else []) + list(row) for row in made.rows]
    return PageTable(columns, rows)


def make_table(kind: str, record: StudyDocument | SuiteDocument, metrics: list[str]) -> PageTable:
    if kind == "suite":
        if not isinstance(record, SuiteDocument):
            raise InputError("a `suite` table needs a suite's record (suite.json)", field="kind")
        return suite_table(record)
    if not isinstance(record, StudyDocument):
        raise InputError(f"a `{kind}` table needs a study's record (report.json)", field="kind")
    if kind == "comparison":
        return comparison_table(record, metrics)
    if kind == "medians":
        return medians_table(record, metrics)
    if kind == "runs":
        return runs_table(record, metrics)
    if kind in PATHLENGTH_KINDS:
        return pathlength_table(record, kind)
    raise InputError(f"unknown table kind {kind!r}: expected one of {', '.join(KINDS)}", field="kind")
