"""Per-interval charts of one run: ETR (T), response time (mean and percentiles), utilization.

Drawn from the reduction's per-interval rows of the whole run (perflab.reduce.reduce,
RunMetrics.timeline: the percentiles are computed there, with the same buckets and rule as
every other row), so the ramp-up shows, with the measurement window shaded (every number of the
report is over it); a reduction without a timeline gives the window's rows alone. In
perflab.report.charts' style, inlined as SVG so a report opens from disk with nothing fetched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from perflab.reduce.reduce import INTERVAL_PERCENTILES, RunMetrics
from perflab.reduce.window import Window
from perflab.report import charts as ch
from perflab.report import numbers as fmt

#: The shading of the measurement window on every chart.
WINDOW_COLOUR = "#0072B2"
CHART_TITLES = (("chart-etr", "External throughput (ETR (T)) per interval"),
                ("chart-response", "Response time per interval: mean and percentiles"),
                ("chart-util", "Utilization per interval: the SUT's processors (S) and the whole machine (H)"))


def build_charts(metrics: RunMetrics) -> list[ch.Chart]:
    rows = metrics.timeline or metrics.per_interval
    if not rows:
        note = "Not drawn: the run has no per-interval data (no transactions in the window)."
        return [ch.Chart(i, t, None, note) for i, t in CHART_TITLES]
    mid = (column(rows, "t_start") + column(rows, "t_end")) / 2
    return [_etr_chart(metrics, rows, mid), _response_chart(rows, mid, metrics.window),
            _util_chart(rows, mid, metrics.window)]


def mark_window(ax: Any, window: Window) -> None:
    """The measurement window as a shaded band: what every number of the report is over."""
    ax.axvspan(window.start, window.end, color=WINDOW_COLOUR, alpha=0.07, linewidth=0, label="measurement window")


def column(rows: Sequence[Mapping[str, Any]], key: str) -> np.ndarray:
    """One per-interval row's values as floats, NaN where not measured."""
    return np.array([np.nan if fmt.number(r.get(key)) is None else float(r[key]) for r in rows], dtype=float)


def _figure() -> tuple[Figure, Any]:
    with matplotlib.rc_context(ch.STYLE):
        fig = Figure(figsize=(ch.WIDTH, ch.ROW_HEIGHT), layout="constrained")
        ax = fig.subplots(1, 1)
    return fig, ax


def _etr_chart(metrics: RunMetrics, rows: Sequence[Mapping[str, Any]], t: np.ndarray) -> ch.Chart:
    chart_id, title = CHART_TITLES[0]
    etr = column(rows, "etr_t")
    if not np.isfinite(etr).any():
        return ch.Chart(chart_id, title, None, "Not drawn: no completed transactions in the window.")
    fig, ax = _figure()
    mark_window(ax, metrics.window)
    ax.plot(t, etr, "o-", color=ch.PALETTE[0], markersize=3, label="per interval")
    overall = fmt.number(metrics.values.get("etr_t"))
    if overall is not None:
        ax.hlines(overall, metrics.window.start, metrics.window.end, color="#555555", linewidth=0.8, linestyle="--",
                  label="window's ETR (T)")
    errors = column(rows, "errors_t")
    if np.nansum(errors) > 0:
        seconds = np.maximum(column(rows, "t_end") - column(rows, "t_start"), 1e-9)
        ax.bar(t, errors / seconds, width=0.6 * (metrics.interval_s or 1.0), color=ch.PALETTE[1], label="errors/s")
    ax.set_ylim(bottom=0)
    ax.set_ylabel("tx/s")
    ax.set_xlabel("seconds after t0")
    ax.legend(loc="best")
    return ch.Chart(chart_id, title, ch.to_svg(fig, chart_id, title),
                    "Transactions completed per second in each interval of the run; the shaded band is the "
                    "measurement window, the dashed line its ETR (T).")


def _response_chart(rows: Sequence[Mapping[str, Any]], t: np.ndarray, window: Window) -> ch.Chart:
    chart_id, title = CHART_TITLES[1]
    series = {"AVG LAST (T)": column(rows, "avg_last_t")}
    for q in INTERVAL_PERCENTILES:
        series[f"P{q}"] = column(rows, f"resp_p{q}_t")
    present = {k: s for k, s in series.items() if np.isfinite(s).any()}
    if not present:
        return ch.Chart(chart_id, title, None, "Not drawn: no response times in the window.")
    fig, ax = _figure()
    mark_window(ax, window)
    for i, (name, s) in enumerate(present.items()):
        ax.plot(t, s, "o-" if name == "AVG LAST (T)" else ".-", color=ch.PALETTE[i % len(ch.PALETTE)],
                markersize=3, label=name)
    ax.set_ylim(bottom=0)
    # seconds, as the registry, every table and the dashboard give response times
    ax.set_ylabel("response (s)")
    ax.set_xlabel("seconds after t0")
    ax.legend(loc="upper right", ncols=len(present) + 1)
    return ch.Chart(chart_id, title, ch.to_svg(fig, chart_id, title),
                    "Response = end - intended start (time spent waiting to start counts). Percentiles are "
                    "nearest-rank over the transactions completed in each interval; the shaded band is the "
                    "measurement window.")


def _util_chart(rows: Sequence[Mapping[str, Any]], t: np.ndarray, window: Window) -> ch.Chart:
    chart_id, title = CHART_TITLES[2]
    series = {"UTIL/PROC (S)": column(rows, "util_proc_s"), "UTIL/PROC (H)": column(rows, "util_proc_h")}
    present = {k: s for k, s in series.items() if np.isfinite(s).any()}
    if not present:
        return ch.Chart(chart_id, title, None, "Not drawn: the monitor did not cover the window (samples missing).")
    fig, ax = _figure()
    mark_window(ax, window)
    for i, (name, s) in enumerate(present.items()):
        ax.plot(t, s, "o-", color=ch.PALETTE[(i + 2) % len(ch.PALETTE)], markersize=3, label=name)
    ax.set_ylim(0, max(100.0, max(float(np.nanmax(s)) for s in present.values()) * 1.05))
    ax.set_ylabel("% busy per processor")
    ax.set_xlabel("seconds after t0")
    ax.legend(loc="lower right")
    return ch.Chart(chart_id, title, ch.to_svg(fig, chart_id, title),
                    "Busy time per processor in each interval: (S) the SUT's processors, (H) every processor "
                    "of the machine (the driver included); the shaded band is the measurement window.")
