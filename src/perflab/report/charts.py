"""Charts of a study as inline SVG strings, for the self-contained HTML report.

matplotlib draws them with the object API (`Figure`, no pyplot): no global backend state, so a
report can be rendered from any thread, and nothing opens a window. The SVG is trimmed for
inlining: no XML prolog, no DOCTYPE (whose DTD address a strict "no network references" check
would flag), no namespace declarations (HTML parses inline SVG without them), and element ids
prefixed per chart so several charts in one page never share an id. Text stays text
(svg.fonttype "none"): smaller files, searchable labels.

A chart whose data are all missing is not drawn; it comes back with `svg=None` and a note that
says why, so the report shows the absence instead of an empty frame.
"""

from __future__ import annotations

import html
import io
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from perflab.catalog.registry import REGISTRY
from perflab.records.study import StudyDocument
from perflab.report import numbers as fmt
from perflab.report.view import verdict_cell
from perflab.safe_text import visible

if TYPE_CHECKING:  # matplotlib is imported where a chart is drawn: half a second of every
    # `perflab show` on a terminal, which draws none
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

#: Fixed palette, one colour per configuration in study order (colour-blind safe Okabe-Ito).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
VERDICT_COLOURS = {"BETTER": "#1a7f37", "WORSE": "#c62828", "EQUIVALENT": "#6e7781", "INCONCLUSIVE": "#b7791f"}
WIDTH = 7.2          # inches: fits a report column at 100 % zoom
ROW_HEIGHT = 2.5
STYLE: dict[RcKeyType, Any] = {"svg.fonttype": "none", "svg.hashsalt": "perflab", "font.size": 8, "axes.titlesize": 9,
         "axes.spines.top": False, "axes.spines.right": False, "legend.fontsize": 7, "legend.frameon": False}


def _verdict_label(entry) -> str:
    """The verdict as the tables word it (an untested secondary's call labelled unadjusted)."""
    label = verdict_cell(entry)
    return "no verdict" if label in (fmt.NA, "-") else label


@dataclass
class Chart:
    id: str
    title: str
    svg: str | None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "drawn": self.svg is not None, "note": self.note}


# -- rendering ---------------------------------------------------------------------------------

def to_svg(fig: Figure, chart_id: str, title: str) -> str:
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context(STYLE):
        # No creation date or creator: the same study renders to the same bytes.
        fig.savefig(buffer, format="svg",
                    metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return inline(buffer.getvalue(), chart_id, title)


def inline(svg: str, prefix: str, title: str) -> str:
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    svg = re.sub(r'(href="#|url\(#)([^")]+)',
                 lambda m: f"{m.group(1)}{prefix}-{m.group(2)}" if m.group(2) in ids else m.group(0), svg)
    label = html.escape(visible(title), quote=True)
    return re.sub(r"<svg\b", f'<svg role="img" aria-label="{label}"', svg, count=1).replace(
        ">", f"><title>{label}</title>", 1)


def _figure(rows: int, cols: int = 1, **kw: Any) -> tuple[Figure, np.ndarray]:
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH, ROW_HEIGHT * rows), layout="constrained")
        axes = fig.subplots(rows, cols, squeeze=False, **kw)
    return fig, axes


def plain(text: Any) -> str:
    """User text for matplotlib: a "$" would start mathtext (and an unbalanced one fails the
    whole render), so it is escaped; control characters are shown as \\xNN (raw, they went into
    the SVG and matplotlib's missing-glyph warning on the terminal)."""
    return visible(text, one_line=False).replace("$", r"\$")


def _wrap(name: str, width: int = 18) -> str:
    name = visible(name)
    return plain("\n".join(textwrap.wrap(name, width)) or name)


# -- study data ----------------------------------------------------------------------------

def config_names(study: StudyDocument) -> list[str]:
    names = [c.name for c in study.configurations]
    for run in study.runs:
        if run.config not in names:
            names.append(run.config)
    return names


def colours(study: StudyDocument) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(config_names(study))}


def run_values(study: StudyDocument, config: str, key: str) -> tuple[list[float], list[float]]:
    """(valid, excluded) per-run values of one metric."""
    valid: list[float] = []
    excluded: list[float] = []
    for run in study.runs_of(config):
        x = fmt.number(run.metrics.get(key))
        if x is not None:
            (excluded if run.excluded else valid).append(x)
    return valid, excluded


def series(per_interval: Any) -> dict[str, list[float]]:
    """Per-interval data as columns. The contract has columns ({"t": [...], "etr_t": [...]});
    reduction writes rows ([{"t_start": .., "etr_t": ..}, ...]). Both are accepted."""
    if isinstance(per_interval, Mapping):
        columns = {k: list(v) for k, v in per_interval.items() if isinstance(v, (list, tuple))}
    elif isinstance(per_interval, Sequence):
        rows = [r for r in per_interval if isinstance(r, Mapping)]
        keys = list(dict.fromkeys(k for r in rows for k in r))
        columns = {k: [r.get(k) for r in rows] for k in keys}
    else:
        return {}
    if "t" not in columns and "t_start" in columns:
        columns["t"] = columns["t_start"]
    return {k: [np.nan if fmt.number(x) is None else float(x) for x in v] for k, v in columns.items()}


def _spread(n: int, width: float = 0.24) -> np.ndarray:
    """Fixed horizontal offsets for n points in a strip (deterministic, unlike random jitter)."""
    return np.zeros(1) if n <= 1 else np.linspace(-width / 2, width / 2, n)


def _strip(ax, x: float, valid: list[float], excluded: list[float], colour: str) -> None:
    if valid:
        ax.scatter(x + _spread(len(valid)), valid, s=16, color=colour, zorder=3)
    if excluded:
        ax.scatter(x + _spread(len(excluded)), excluded, s=22, marker="x", color="#888888", zorder=3)


# -- the charts ------------------------------------------------------------------------------

def itr_chart(study: StudyDocument) -> Chart:
    """ITR per configuration (per-run points, geometric mean of the valid runs), and each
    comparison's ratio with its interval against the equivalence band."""
    title = "Internal throughput per configuration, and the ratio to the base with its interval"
    names, palette = config_names(study), colours(study)
    keys = [k for k in REGISTRY.role("capacity") if any(sum(run_values(study, c, k), []) for c in names)]
    if not keys:
        return Chart("chart-itr", title, None, "Not drawn: no run measured ITR (S) or ITR (H).")
    bounds = _bounds(study)
    fig, axes = _figure(len(keys), 2, width_ratios=(3, 2))
    for row, key in enumerate(keys):
        label, unit = fmt.label_of(key), fmt.unit_of(key)
        ax = axes[row][0]
        levels = _levels(study, key)
        for i, name in enumerate(names):
            valid, excluded = run_values(study, name, key)
            _strip(ax, i, valid, excluded, palette[name])
            if name in levels:
                ax.hlines(levels[name], i - 0.3, i + 0.3, color=palette[name], linewidth=1.5)
        ax.set_xticks(range(len(names)), [_wrap(n) for n in names])
        ax.set_ylabel(f"{label} ({unit})" if unit else label)
        ax.set_title(f"{label} per run")
        _ratio_panel(axes[row][1], study, key, bounds)
    return Chart("chart-itr", title, to_svg(fig, "chart-itr", title),
                 "Left: one point per run, crosses are excluded runs, the line is the geometric mean of the "
                 "valid runs. Right: the ratio new/base with its confidence interval; the shaded band is the "
                 "equivalence margin.")


def _bounds(study: StudyDocument) -> tuple[float, float] | None:
    """The equivalence band, from the study's criteria (perflab.stats.criteria, the one formula)."""
    from perflab.stats.criteria import Criteria

    design = study.design
    if design.margin is None:
        return None
    return Criteria(design.margin).bounds


def _levels(study: StudyDocument, key: str) -> dict[str, float]:
    """Geometric means as the comparisons computed them (never recomputed here)."""
    levels: dict[str, float] = {}
    for comparison in study.comparisons:
        entry = comparison.entry(key)
        if entry is not None:
            for side, value in ((comparison.base, entry.base_value), (comparison.new, entry.new_value)):
                number = fmt.number(value)
                if number is not None:
                    levels.setdefault(side, number)
    return levels


def _ratio_panel(ax, study: StudyDocument, key: str, bounds: tuple[float, float] | None) -> None:
    rows = []
    for comparison in study.comparisons:
        entry = comparison.entry(key)
        if entry is not None and fmt.number(entry.ratio) is not None:
            rows.append((f"{comparison.new} vs {comparison.base}", entry))
    ax.set_title(f"{fmt.label_of(key)} ratio new/base")
    if bounds is not None:
        ax.axvspan(bounds[0], bounds[1], color="#dddddd", zorder=0)
    ax.axvline(1.0, color="#555555", linewidth=0.8)
    if not rows:
        ax.text(0.5, 0.5, "no ratio: fewer than 2 valid runs per configuration", transform=ax.transAxes,
                ha="center", va="center", fontsize=7)
        ax.set_yticks([])
        return
    for y, (_name, entry) in enumerate(rows):
        colour = VERDICT_COLOURS.get(str(entry.verdict), "#333333")
        r, lo, hi = (fmt.number(v) for v in (entry.ratio, entry.ci_low, entry.ci_high))
        assert r is not None  # the rows with a ratio (above)
        if lo is not None and hi is not None:
            ax.errorbar(r, y, xerr=[[r - lo], [hi - r]], fmt="o", color=colour, capsize=3)
        else:
            ax.plot(r, y, "o", color=colour, fillstyle="none")
        ax.annotate(_verdict_label(entry), (r, y), xytext=(0, 6),
                    textcoords="offset points", ha="center", fontsize=7, color=colour)
    ax.set_yticks(range(len(rows)), [_wrap(n, 24) for n, _ in rows])
    ax.set_ylim(-0.6, len(rows) - 0.4)


def response_chart(study: StudyDocument) -> Chart:
    """AVG LAST (T) per transaction class and configuration, one point per run."""
    title = "Response time (AVG LAST (T)) per transaction class and configuration"
    names, palette = config_names(study), colours(study)
    key = REGISTRY.role("response")[0]
    points: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    for run in study.runs:
        per_class = run.per_class
        if not per_class and fmt.number(run.metrics.get(key)) is not None:
            per_class = {"all": {key: run.metrics[key]}}
        for cls, row in per_class.items():
            x = fmt.number((row or {}).get(key))
            if x is None:
                continue
            valid, excluded = points.setdefault(str(cls), {}).setdefault(run.config, ([], []))
            (excluded if run.excluded else valid).append(x)
    if not points:
        return Chart("chart-response", title, None, "Not drawn: no run has a response time (AVG LAST (T)).")
    values = [v for by_config in points.values() for pair in by_config.values() for v in pair[0] + pair[1]]
    scale, unit = (1000.0, "ms") if max(values) < 1.0 else (1.0, "s")
    fig, axes = _figure(1)
    ax = axes[0][0]
    classes = sorted(points)
    width = 0.8 / max(1, len(names))
    for c, cls in enumerate(classes):
        for i, name in enumerate(names):
            valid, excluded = points[cls].get(name, ([], []))
            x = c - 0.4 + width * (i + 0.5)
            _strip(ax, x, [v * scale for v in valid], [v * scale for v in excluded], palette[name])
    ax.set_xticks(range(len(classes)), [plain(c) for c in classes])
    ax.set_ylabel(f"AVG LAST (T) ({unit})")
    ax.set_ylim(bottom=0)
    _legend(ax, names, palette)
    return Chart("chart-response", title, to_svg(fig, "chart-response", title),
                 "One point per run and class; crosses are excluded runs.")


def timeline_chart(study: StudyDocument) -> Chart:
    """Utilization (S) and (H), and ETR (T), over the window of every run: drift, warm-up left
    in the window, or a stall show here before they bias a mean."""
    title = "Utilization and external throughput over the measurement window, every run"
    names, palette = config_names(study), colours(study)
    runs = [(run, series(run.per_interval)) for run in study.runs]
    runs = [(run, s) for run, s in runs if s.get("t")]

    def has(key: str) -> bool:
        return any(np.isfinite(s.get(key, [np.nan])).any() for _, s in runs)

    panels = [p for p in (("util", ("util_proc_s", "util_proc_h")), ("etr", ("etr_t",))) if any(has(k) for k in p[1])]
    if not panels:
        return Chart("chart-timeline", title, None, "Not drawn: no run has per-interval data.")
    fig, axes = _figure(len(panels))
    styles = {"util_proc_s": "-", "util_proc_h": "--", "etr_t": "-"}
    for row, (_, keys) in enumerate(panels):
        ax = axes[row][0]
        for key in keys:
            # One path per configuration (valid or excluded), the runs' lines joined by a NaN
            # break: a study of 100 runs draws a few artists, not hundreds (matplotlib's cost is
            # per artist: drawing, layout and SVG output); each run is still its own line.
            for (config, excluded), (t, y) in run_lines(runs, key).items():
                ax.plot(t, y, styles[key], color=palette.get(config, "#333333"),
                        linewidth=0.6 if excluded else 1.0, alpha=0.45 if excluded else 0.9)
        labels = [fmt.label_of(k) for k in keys if has(k)]
        unit = fmt.unit_of(keys[0])
        ax.set_ylabel(" / ".join(labels) + (f" ({unit})" if unit else ""))
        if keys == ("util_proc_s", "util_proc_h") and len(labels) == 2:
            ax.set_title("UTIL/PROC (S) solid, UTIL/PROC (H) dashed")
        ax.set_xlabel("seconds into the measurement window")
    _legend(axes[0][0], [n for n in names if any(r.config == n for r, _ in runs)], palette)
    return Chart("chart-timeline", title, to_svg(fig, "chart-timeline", title),
                 "One line per run, coloured by configuration; faint lines are excluded runs.")


def run_lines(runs: Sequence[tuple[Any, dict[str, list[float]]]],
            key: str) -> dict[tuple[str, bool], tuple[np.ndarray, np.ndarray]]:
    """`key` over the window of every run that has it, as one (t, y) line per (configuration,
    excluded): the runs in study order, each followed by a NaN that breaks the line; t in seconds
    into each run's window, so runs overlay."""
    parts: dict[tuple[str, bool], tuple[list[np.ndarray], list[np.ndarray]]] = {}
    for run, s in runs:
        if key not in s or not np.isfinite(s[key]).any():
            continue
        t = np.asarray(s["t"], dtype=float)
        ts, ys = parts.setdefault((run.config, bool(run.excluded)), ([], []))
        ts += [t - np.nanmin(t), np.array([np.nan])]
        ys += [np.asarray(s[key], dtype=float), np.array([np.nan])]
    return {group: (np.concatenate(ts), np.concatenate(ys)) for group, (ts, ys) in parts.items()}


def sweep_chart(study: StudyDocument) -> Chart | None:
    """Each metric against the swept factor, one curve per configuration series."""
    sweep = study.sweep
    if sweep is None:
        return None
    factor = str(sweep.factor)
    title = f"Metrics against {factor} (sweep)"
    points = sweep.points
    keys = [k for k in REGISTRY.role("sweep") if any(fmt.number(p.metrics.get(k)) is not None for p in points)]
    if not keys:
        return Chart("chart-sweep", title, None, "Not drawn: no sweep point has a measured metric.")
    numeric = all(fmt.number(p.value) is not None for p in points)
    # One curve per study configuration (a two-factor design); a one-configuration sweep, one curve.
    series = [p.series or "sweep" for p in points]
    curves = sorted(set(series), key=series.index)
    if len(curves) == 1:
        curves = ["sweep"]
    cols = 2 if len(keys) > 1 else 1
    fig, axes = _figure((len(keys) + cols - 1) // cols, cols)
    flat = axes.ravel()
    for ax, key in zip(flat, keys):
        for n, curve in enumerate(curves):
            chosen = [p for p in points if curve == "sweep" or (p.series or "sweep") == curve]
            order = list(dict.fromkeys(repr(p.value) for p in points))
            xs = [fmt.number(p.value) if numeric else order.index(repr(p.value)) for p in chosen]
            ys = [fmt.number(p.metrics.get(key)) for p in chosen]
            ys = [np.nan if y is None else y for y in ys]
            ax.plot(xs, ys, "o-", color=PALETTE[n % len(PALETTE)], label=None if curve == "sweep" else plain(curve))
        if not numeric:
            levels = list(dict.fromkeys(repr(p.value) for p in points))
            ax.set_xticks(range(len(levels)), [plain(p.value) for p in {repr(p.value): p for p in points}.values()])
        unit = fmt.unit_of(key)
        ax.set_ylabel(f"{fmt.label_of(key)} ({unit})" if unit else fmt.label_of(key))
        ax.set_xlabel(plain(factor))
        if len(curves) > 1:
            ax.legend()
    for ax in flat[len(keys):]:
        ax.set_visible(False)
    return Chart("chart-sweep", title, to_svg(fig, "chart-sweep", title),
                 "Each point is the geometric mean of the valid runs at that value.")


def capacity_chart(summary: Any) -> Chart | None:
    """The sweep's measured ETR (T) and AVG LAST (T) beside the fitted USL, the MVA model and the
    throughput bound (perflab.capacity.capacity_summary); the dotted part is extrapolated."""
    if summary is None or not summary.curve or not summary.measured:
        return None
    title = f"Capacity: measured points and the fitted models against {summary.factor}"
    fig, axes = _figure(1, 2)
    n = np.array([c.n for c in summary.curve])
    beyond = np.array([c.beyond_data for c in summary.curve])

    def line(ax, values, style, colour, label):
        y = np.array([np.nan if v is None else v for v in values], dtype=float)
        if np.isfinite(y).any():
            ax.plot(np.where(beyond, np.nan, n), np.where(beyond, np.nan, y), style, color=colour, label=label)
            ax.plot(np.where(beyond, n, np.nan), np.where(beyond, y, np.nan), ":", color=colour)

    ax = axes[0][0]
    line(ax, [c.usl_etr_t for c in summary.curve], "-", PALETTE[0], "USL fit")
    line(ax, [c.mva_etr_t for c in summary.curve], "-", PALETTE[1], "MVA")
    line(ax, [c.bound_x_high for c in summary.curve], "--", "#888888", "bound")
    ax.plot([m.n for m in summary.measured], [np.nan if m.etr_t is None else m.etr_t for m in summary.measured],
            "o", color="#000000", label="measured")
    ax.set_xlabel(plain(summary.factor))
    ax.set_ylabel("ETR (T) (tx/s)")
    ax.legend()
    ax = axes[0][1]
    line(ax, [c.mva_avg_last_t for c in summary.curve], "-", PALETTE[1], "MVA")
    ax.plot([m.n for m in summary.measured], [np.nan if m.avg_last_t is None else m.avg_last_t
                                              for m in summary.measured], "o", color="#000000", label="measured")
    ax.set_xlabel(plain(summary.factor))
    ax.set_ylabel("AVG LAST (T) (s)")
    return Chart("chart-capacity", title, to_svg(fig, "chart-capacity", title),
                 "Dots: measured (geometric means of the valid runs). Lines: the models fitted to them; dotted beyond "
                 "the largest measured level (extrapolated, up to 2x it).")


def trend_chart(study: StudyDocument) -> Chart | None:
    """A release trend: each configuration's ratio to the one base, capacity and response time,
    with their intervals, in study order (the base at 1). None unless the study compares two or
    more configurations with one base."""
    from perflab.report.view import trend_keys

    comparisons = study.comparisons
    if len(comparisons) < 2 or len({c.base for c in comparisons}) != 1:
        return None
    keys = trend_keys(study)
    title = f"Release trend: {' and '.join(fmt.label_of(k) for k in keys)} relative to the base, with intervals"
    names = [comparisons[0].base] + [c.new for c in comparisons]
    bounds = _bounds(study)
    fig, axes = _figure(len(keys))
    drawn = False
    for row, key in enumerate(keys):
        ax = axes[row][0]
        if bounds is not None:
            ax.axhspan(bounds[0], bounds[1], color="#dddddd", zorder=0)
        ax.axhline(1.0, color="#555555", linewidth=0.8)
        ax.plot(0, 1.0, "s", color="#333333")
        for x, comparison in enumerate(comparisons, start=1):
            entry = comparison.entry(key)
            if entry is None:
                continue
            r, lo, hi = (fmt.number(v) for v in (entry.ratio, entry.ci_low, entry.ci_high))
            if r is None:
                continue
            drawn = True
            colour = VERDICT_COLOURS.get(str(entry.verdict), "#333333")
            if lo is not None and hi is not None:
                ax.errorbar(x, r, yerr=[[r - lo], [hi - r]], fmt="o", color=colour, capsize=3)
            else:
                ax.plot(x, r, "o", color=colour, fillstyle="none")
            ax.annotate(_verdict_label(entry), (x, hi if hi is not None else r), xytext=(0, 4),
                        textcoords="offset points", ha="center", fontsize=7, color=colour)
        metric = fmt.metric_of(key)
        direction = metric.direction.value if metric else "none"
        better = {"higher": " (higher is better)", "lower": " (lower is better)"}.get(direction, "")
        ax.set_ylabel(f"{fmt.label_of(key)} ratio to the base")
        ax.set_title(f"{fmt.label_of(key)}: new / {plain(names[0])}{better}")
        ax.set_xticks(range(len(names)), [_wrap(n, 14) for n in names])
        ax.set_xlim(-0.5, len(names) - 0.5)
    if not drawn:
        return Chart("chart-trend", title, None, "Not drawn: no comparison has a ratio.")
    level = fmt.percent_level(study.design.confidence) if study.design.confidence else "the"
    return Chart("chart-trend", title, to_svg(fig, "chart-trend", title),
                 f"Each point is a configuration's paired ratio to the base (square, at 1) with its {level} "
                 f"confidence interval, coloured by verdict; the shaded band is the equivalence margin.")


def _legend(ax, names: Iterable[str], palette: Mapping[str, str]) -> None:
    handles = [ax.scatter([], [], s=16, color=palette[n], label=plain(n)) for n in names]
    if handles:
        # Beside the axes, not over them: never hides a point, and costs nothing to place
        # ("best" counts every drawn vertex under each candidate spot: 0.8 s for 100 runs).
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def build(study: StudyDocument) -> list[Chart]:
    """Every chart of the study, in report order (a sweep chart only for a sweep)."""
    charts = [itr_chart(study), response_chart(study), timeline_chart(study)]
    for extra in (trend_chart(study), sweep_chart(study)):
        if extra is not None:
            charts.append(extra)
    from perflab.report.capacity_view import sweep_capacity

    capacity = sweep_capacity(study)
    chart = capacity_chart(capacity.summary) if capacity is not None else None
    if chart is not None:
        charts.append(chart)
    return charts
