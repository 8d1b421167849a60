"""The dashboard's history page (/history): the store's series, and one series drawn -- each run a
point linked to its run's page, excluded runs hollow, each change point a dashed line with its
ratio, each segment's geometric mean a level.

The page reads what `perflab history` reads (perflab.history.analysis) and draws it on the server
as SVG (no script: the page policy needs none for it). The cache of reduced runs is opened
read-only (the dashboard never writes the store); what it lacks is reduced in memory and kept for
the next request.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab.catalog.registry import REGISTRY, base_key
from perflab.errors import InputError
from perflab.history.analysis import HistoryOptions, build_history, series_id
from perflab.history.cache import MetricsCache
from perflab.history.model import HistoryDocument, Series
from perflab.history.runs import read_runs
from perflab.report import numbers as fmt

if TYPE_CHECKING:
    from aiohttp import web

#: The chart's drawing area, in SVG units.
WIDTH, HEIGHT = 760.0, 300.0
LEFT, RIGHT, TOP, BOTTOM = 64.0, 16.0, 16.0, 40.0
#: Caches of reduced runs, one per store (read-only on disk, filled in memory).
_CACHES: dict[Path, MetricsCache] = {}


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    run_id: str
    excluded: bool
    title: str


@dataclass(frozen=True)
class Mark:
    """A change point: a vertical line between two runs."""

    x: float
    label: str
    title: str
    direction: str
    cause: str


@dataclass(frozen=True)
class Level:
    x1: float
    x2: float
    y: float


@dataclass
class Chart:
    dots: list[Dot] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    levels: list[Level] = field(default_factory=list)
    y_ticks: list[tuple[float, str]] = field(default_factory=list)
    x_ticks: list[tuple[float, str]] = field(default_factory=list)
    y_label: str = ""
    empty: str | None = None
    width: float = WIDTH
    height: float = HEIGHT
    left: float = LEFT
    bottom: float = HEIGHT - BOTTOM
    right: float = WIDTH - RIGHT
    top: float = TOP


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        return [low]
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = min((m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw), default=raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step) + 1)]


def chart(series: Series) -> Chart:
    """The series as SVG geometry: x is the run's place in the series, y its value."""
    c = Chart(y_label=f"{series.label}" + (" / base run" if series.relative else f" ({series.unit})" if series.unit
                                          else ""))
    points = [p for p in series.points if p.value is not None]
    if not points:
        c.empty = "no run of this series has a value"
        return c
    values = [p.value for p in points if p.value is not None]
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or abs(high) * 0.02 or 1.0
    low, high = low - pad, high + pad
    n = len(series.points)
    span_x = c.right - c.left

    def x_of(i: float) -> float:
        return c.left + span_x * (0.5 if n == 1 else i / (n - 1))

    def y_of(v: float) -> float:
        return c.bottom - (c.bottom - c.top) * (v - low) / (high - low)

    place = {p.run_id: i for i, p in enumerate(series.points)}
    for p in series.points:
        if p.value is None:
            continue
        words = f"{p.run_id}: {fmt.value(p.value, series.metric) if not series.relative else fmt.ratio(p.value)}"
        if p.version:
            words += f", {p.version}"
        host = p.host
        if host.calibration is not None and host.calibration.users is not None:
            words += (f"; calibrated: {host.calibration.users:,} users at "
                      f"{fmt.fixed(host.calibration.util_proc_s, 1)}% UTIL/PROC (S)")
        if host.base is not None and host.base.value is not None:
            words += f"; its block's base run: {fmt.value(host.base.value, series.metric)}"
        if host.reference is not None and host.reference.relative is not None:
            words += f"; reference {host.reference.workload}: x{fmt.ratio(host.reference.relative)} of its median"
        if p.excluded:
            words += f" (excluded: {'; '.join(p.excluded)})"
        c.dots.append(Dot(x_of(place[p.run_id]), y_of(p.value), p.run_id, bool(p.excluded), words))
    analysed = series.analysed()
    edges = [0, *[cp.index for cp in series.change_points], len(analysed)]
    for i in range(len(edges) - 1):
        segment = [p for p in analysed[edges[i]:edges[i + 1]] if p.value is not None and p.value > 0]
        if segment:
            mean = math.exp(sum(math.log(p.value) for p in segment if p.value) / len(segment))
            c.levels.append(Level(x_of(place[segment[0].run_id]), x_of(place[segment[-1].run_id]), y_of(mean)))
    for cp in series.change_points:
        x = (x_of(place[cp.before]) + x_of(place[cp.after])) / 2.0
        ratio = fmt.ratio(cp.ratio)
        c.marks.append(Mark(x, f"x{ratio}", f"change point at run {cp.after}: x{ratio} {fmt.ci_ratio(cp.ci_low, cp.ci_high)}"
                            f", p {cp.p_value:.3f}, {cp.direction}, the {cp.cause}'s", cp.direction, cp.cause))
    c.y_ticks = [(y_of(v), fmt.value(v, series.metric) if not series.relative else fmt.ratio(v))
                 for v in _nice_ticks(low, high)]
    step = max(1, math.ceil(n / 8))
    c.x_ticks = [(x_of(i), str(i + 1)) for i in range(0, n, step)]
    return c


@dataclass(frozen=True)
class SeriesRow:
    id: str
    workload: str
    hostname: str
    host: str
    arrangement: str
    load: str
    window: str
    runs: int


def series_rows(home: Path, options: HistoryOptions) -> list[SeriesRow]:
    """Every series of the store (no analysis: the list is read from run.json files alone)."""
    store = read_runs(home, options.version_from, options.ignore)
    rows: dict[str, SeriesRow] = {}
    counts: dict[str, int] = {}
    for run in store.runs:
        if options.workload and run.key.workload != options.workload:
            continue
        sid = series_id(run)
        counts[sid] = counts.get(sid, 0) + 1
        k = run.key
        rows[sid] = SeriesRow(sid, k.workload, k.hostname, k.host, k.arrangement, k.load, k.window, 0)
    return sorted((SeriesRow(**{**r.__dict__, "runs": counts[r.id]}) for r in rows.values()),
                  key=lambda r: (r.hostname, r.workload, -r.runs))


def options_from(query: Any) -> HistoryOptions:
    metric = (query.get("metric") or "").strip() or HistoryOptions().metrics[0]
    if REGISTRY.get(base_key(metric)) is None:
        raise InputError(f"unknown metric key {metric!r}", field="metric")
    order = query.get("by") or "time"
    if order not in ("time", "version"):
        raise InputError(f"expected time or version, got {order!r}", field="by")
    ignore = [f.strip() for f in (query.get("ignore") or "").split(",") if f.strip()]
    return HistoryOptions(metrics=[metric], order="version" if order == "version" else "time",
                          workload=(query.get("workload") or "").strip() or None, ignore=ignore,
                          relative=query.get("relative") == "1",
                          series=(query.get("series") or "").strip() or None)


def history_view(home: Path, query: Any) -> dict[str, Any]:
    """What the page shows (run on a thread: it reads and reduces runs)."""
    options = options_from(query)
    listing = HistoryOptions(**{**options.__dict__, "series": None})
    rows = series_rows(home, listing)
    chosen = options.series
    if chosen is None and len(rows) == 1:
        chosen = rows[0].id
    doc: HistoryDocument | None = None
    series: Series | None = None
    if chosen is not None:
        cache = _CACHES.setdefault(Path(home), MetricsCache(home, writable=False))
        options.series = chosen
        doc = build_history(home, options, cache)
        series = doc.series[0] if doc.series else None
    return {"rows": rows, "series": series, "doc": doc, "chart": chart(series) if series is not None else None,
            "form": {"metric": options.metrics[0], "by": options.order, "workload": options.workload or "",
                     "ignore": ",".join(options.ignore), "relative": "1" if options.relative else "",
                     "series": chosen or ""}}


async def history_page(request: web.Request) -> web.Response:
    # The application that routes here, imported when it runs: the page's geometry above needs no
    # aiohttp (this module imports without the serve extra).
    from perflab.serve.app import STATE, STORE, web

    home = request.app[STORE].home
    view = await asyncio.to_thread(history_view, Path(home), request.query)
    html = request.app[STATE].templates.get_template("history.html.j2").render(
        store=str(home), path=request.path, title="History", **view)
    return web.Response(text=html, content_type="text/html", charset="utf-8")
