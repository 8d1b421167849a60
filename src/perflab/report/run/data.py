"""A stored run's numbers for the dashboard's own views: the charts' data (JSON) and the CSV
downloads, all taken from the one report model (perflab.report.run.model.RunReport, whose
`metrics` is the reduction's RunMetrics.to_json()), so the page, its charts, the downloads and
`perflab show` cannot disagree.

Units are the registry's throughout (seconds, tx/s, %): the CSV files carry unrounded values
under the catalog keys, an empty cell where a value was not measured; the pages print them with
the registry's decimals (UNITS tells the page's script what those are).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from perflab.catalog.registry import REGISTRY
from perflab.reduce.reduce import INTERVAL_KEYS, TRANSACTION_KEYS
from perflab.report.run.model import RunReport

#: The per-interval CSV's columns: the bucket, whether it lies in the measurement window, then
#: the reduction's per-interval keys.
INTERVAL_COLUMNS = ("t_start", "t_end", "in_window", *INTERVAL_KEYS)
#: The per-transaction CSV's columns: the transaction's name, then its keys.
TRANSACTION_COLUMNS = ("transaction", *TRANSACTION_KEYS)
#: Keys the live panel shows beside the stored ones (perflab.records.live).
LIVE_KEYS = ("util_proc_s", "util_proc_h", "driver_cpu")
#: A spreadsheet runs a cell that starts with one of these as a formula: a name from a workload
#: file is written with a leading apostrophe instead (the value is text either way).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class NoData(Exception):
    """The run has no measurements to give (still running, abandoned, damaged): why, in words."""


def units(keys: Iterable[str] = (*TRANSACTION_KEYS, *INTERVAL_KEYS, *LIVE_KEYS)) -> dict[str, dict[str, Any]]:
    """Label, unit and decimals of each key, as the registry has them: how the page's script
    prints a number the way perflab.report.numbers does."""
    out = {}
    for key in dict.fromkeys(keys):
        metric = REGISTRY.get(key)
        if metric is not None:
            out[key] = {"label": metric.label, "unit": metric.unit, "decimals": metric.decimals}
    return out


def _measured(report: RunReport) -> Mapping[str, Any]:
    if not report.metrics:
        raise NoData(report.problem or "the run has no measurements")
    return report.metrics


def interval_rows(report: RunReport) -> list[dict[str, Any]]:
    """The per-interval rows of the whole run (the reduction's timeline; its per_interval rows
    alone for a reduction made without one), each with `in_window`."""
    metrics = _measured(report)
    window = metrics.get("window") or {}
    start, end = window.get("start"), window.get("end")
    rows = metrics.get("timeline") or metrics.get("per_interval") or []
    out = []
    for row in rows:
        inside = start is not None and end is not None and row["t_start"] >= start and row["t_end"] <= end
        out.append({**row, "in_window": 1 if inside else 0})
    return out


def chart_data(report: RunReport) -> dict[str, Any]:
    """What the run page's charts draw: every interval of the run, the window, the units."""
    metrics = _measured(report)
    return {"run_id": report.run_id, "window": metrics.get("window"), "interval_s": metrics.get("interval_s"),
            "intervals": interval_rows(report), "transactions": metrics.get("per_transaction") or {},
            "units": units()}


def intervals_csv(report: RunReport) -> str:
    return _csv(INTERVAL_COLUMNS, interval_rows(report))


def transactions_csv(report: RunReport) -> str:
    per_transaction = _measured(report).get("per_transaction") or {}
    return _csv(TRANSACTION_COLUMNS, [{"transaction": name, **row} for name, row in sorted(per_transaction.items())])


def _csv(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([cell(row.get(c)) for c in columns])
    return buffer.getvalue()


def cell(value: Any) -> str:
    """A CSV cell: numbers in full (repr: they read back exactly), na as empty, text made inert."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    return "'" + text if text.startswith(FORMULA_START) else text
