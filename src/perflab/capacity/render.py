"""Terminal tables for `perflab capacity`: one function per section, each taking the model's
objects and a rich Console. Numbers are printed as measured or computed; "na" where a value
does not exist (never a made-up one). Called by `perflab capacity` (perflab.cli.capacity).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from perflab.caveats import Caveat

if TYPE_CHECKING:
    from perflab.capacity.closed import ClosedModel
    from perflab.capacity.usl import USLFit
    from perflab.capacity.uslsweep import LevelResidual
from perflab.safe_text import terminal as escape
from perflab.values import finite, formatted


def num(v, fmt: str = ".4g") -> str:
    """A number as text, "na" for None/NaN, "inf" for infinity (perflab.values.formatted)."""
    return formatted(v, fmt)


def _zero(v: float) -> float:
    """A bound parameter the optimizer left at round-off (1e-17) is 0."""
    return 0.0 if abs(v) < 1e-12 else v


def pct(v, digits: int = 1) -> str:
    return formatted(finite(v), f"+.{digits}f", scale=100.0, suffix="%")


def interval(lo, hi, fmt: str = ".4g") -> str:
    if lo is None or hi is None:
        return "na"
    return f"{num(lo, fmt)} - {num(hi, fmt)}"


def _table(title: str, columns: list[str]) -> Table:
    t = Table(title=escape(title), title_justify="left")   # study titles, factors, labels: user text
    for c in columns:
        t.add_column(escape(c), justify="left" if c in ("", "rule", "note", "from", "to", "case", "derivation", "source",
                                                "symbol", "transition", "pairs", "step", "label") else "right")
    return t


def notes(console: Console, items: Iterable[Caveat]) -> None:
    for n in items:
        console.print(f"[yellow]note:[/yellow] {escape(n.text)}", highlight=False, soft_wrap=True)


def _row(t: Table, *cells) -> None:
    """A row of plain text: labels, sources, release names and notes come from study files and runs."""
    t.add_row(*("" if c is None else escape(c) for c in cells))


def measured(console: Console, s) -> None:
    t = _table(f"{s.title or s.study_id}: measured ({s.factor})",
               [s.factor, "runs", "ETR (T)", "AVG LAST (T)", "AVG THINK (T)", "PBT/CMD (S)", "UTIL/PROC (S)",
                "ITR (S)"])
    for p in s.measured:
        _row(t, num(p.n, "g"), f"{p.runs}" + (f" (+{p.excluded} excl.)" if p.excluded else ""),
                  num(p.etr_t, ".2f"), num(p.avg_last_t, ".4f"), num(p.avg_think_t, ".4f"), num(p.pbt_cmd_s, ".3f"),
                  num(p.util_proc_s, ".1f"), num(p.itr_s, ".2f"))
    console.print(t)


def usl(console: Console, fit: USLFit, residuals: list[LevelResidual], factor: str) -> None:
    conf = f"{100 * fit.confidence:.0f}% CI"
    t = _table(f"USL fit of ETR (T) over {factor}: X(N) = γN / (1 + α(N−1) + βN(N−1))", ["", "value", conf])
    _row(t, "α (contention)", num(_zero(fit.alpha), ".4g"), interval(*fit.ci["alpha"]))
    _row(t, "β (coherency)", num(_zero(fit.beta), ".4g"), interval(*fit.ci["beta"]))
    _row(t, "γ (ETR at N=1)", num(fit.gamma, ".4g"), interval(*fit.ci["gamma"]))
    _row(t, "peak N", num(fit.peak_n, ".1f"), interval(*fit.peak_ci, ".1f"))
    _row(t, "peak ETR (T)", num(fit.peak_throughput, ".1f"), interval(*fit.peak_throughput_ci, ".1f"))
    _row(t, "RMSE of ln X", num(fit.rmse_log, ".4f"), f"{fit.dof} df")
    console.print(t)
    r = _table("USL residuals", [factor, "runs", "measured", "fitted", "residual"])
    for x in residuals:
        _row(r, num(x.n, "g"), str(x.runs), num(x.measured, ".2f"), num(x.fitted, ".2f"), pct(x.residual))
    console.print(r)
    notes(console, fit.warnings)


def model(console: Console, m: ClosedModel) -> None:
    conf = f"{100 * m.confidence:.0f}% CI"
    t = _table("closed-loop model (MVA): parameters", ["", "value", conf, "from"])
    low, high = (1000 * v if v is not None and math.isfinite(v) else None for v in m.demand_ci)
    _row(t, "D = PBT/CMD (S)", f"{1000 * m.demand:.4f} ms", interval(low, high, ".4f"),
              f"{m.n_runs} runs at {', '.join(num(v, 'g') for v in m.fit_levels)} users")
    _row(t, "Z = AVG THINK (T)", f"{m.think:.4f} s", "", "mean of the fitting runs")
    _row(t, "d (delay)", f"{1000 * m.delay:.4f} ms", "", "fitted to AVG LAST (T)")
    _row(t, "PROCESSORS", num(m.processors, "g"), "", "")
    console.print(t)


def predictions(console: Console, preds, demand: str) -> None:
    t = _table(f"MVA beside the measurements (demand: {demand}; think: each level's AVG THINK (T))",
               ["users", "", "ETR (T) meas.", "MVA", "error", "AVG LAST (T) meas.", "MVA", "error",
                "UTIL/PROC meas.", "MVA"])
    for p in preds:
        _row(t, num(p.n, "g"), "fit" if p.fit else "held out", num(p.etr_t_measured, ".2f"), num(p.etr_t, ".2f"),
                  pct(p.etr_error), num(p.avg_last_t_measured, ".4f"), num(p.avg_last_t, ".4f"), pct(p.avg_last_error),
                  num(p.util_proc_s_measured, ".1f"), num(p.util_proc_s, ".1f"))
    console.print(t)


def bounds(console: Console, rows, knee_n: float | None) -> None:
    t = _table(f"operational-law bounds (knee N* = {num(knee_n, '.1f')} users)",
               ["users", "ETR low", "ETR meas.", "ETR high", "R low", "R meas.", "R high", "inside", "note"])
    for b in rows:
        _row(t, num(b.n, "g"), num(b.x_low, ".2f"), num(b.etr_t_measured, ".2f"), num(b.x_high, ".2f"),
                  num(b.r_low, ".4f"), num(b.avg_last_t_measured, ".4f"), num(b.r_high, ".4f"),
                  "yes" if b.inside else "NO", b.note)
    console.print(t)


def supported(console: Console, items, confidence: float) -> None:
    t = _table("users supported (MVA)", ["rule", "users", f"{100 * confidence:.0f}% CI", "ETR (T)", "AVG LAST (T)",
                                         "UTIL/PROC", "note"])
    for s in items:
        rule = (f"UTIL/PROC ≤ {100 * s.limit:g}%" if s.rule == "utilization" else f"AVG LAST (T) ≤ {s.limit:g} s")
        users = num(s.users, "d") + (" (extrapolated)" if s.extrapolated and s.users is not None else "")
        _row(t, rule, users, interval(s.low, s.high, "d"), num(s.x, ".2f"), num(s.r, ".4f"),
                  num(None if s.u is None else 100 * s.u, ".1f"), s.note)
    console.print(t)


def scaling(console: Console, sc) -> None:
    has_ci = any(lv.ci_low is not None for lv in sc.levels)
    has_printed = any(lv.printed_itrr is not None for lv in sc.levels)
    cols = ["processors", "label", "runs", "ITR", "ITRR"]
    cols += [f"{100 * sc.confidence:.0f}% CI"] if has_ci else []
    cols += ["ITRR printed", "reproduced"] if has_printed else []
    cols += ["ITRR / processors", "ITRR per added processor"]
    t = _table(f"scaling per processor ({sc.metric})", cols)
    for lv in sc.levels:
        row = [num(lv.processors, "g"), lv.label, str(lv.runs), num(lv.itr, ".2f"), num(lv.itrr, ".3f")]
        row += [interval(lv.ci_low, lv.ci_high, ".3f")] if has_ci else []
        if has_printed:
            row += [num(lv.printed_itrr, ".3f"), "na" if lv.printed_ok is None else ("yes" if lv.printed_ok else "NO")]
        row += [num(lv.efficiency, ".3f"), num(lv.per_added, ".3f")]
        _row(t, *row)
    console.print(t)
    notes(console, sc.notes)


def steps(console: Console, items, total, confidence: float, title: str = "ITRR composition") -> None:
    t = _table(title, ["step", "source", "ITRR", f"{100 * confidence:.0f}% CI", "SE of ln", "df"])
    for st in items:
        lo, hi = st.itrr.ci(confidence)
        ci = interval(lo, hi, ".4f") if st.itrr.se > 0 else "exact (given)"
        _row(t, st.itrr.label, st.source, num(st.itrr.ratio, ".4f"), ci, num(st.itrr.se, ".4f"),
                  "inf" if math.isinf(st.itrr.df) else num(st.itrr.df, ".1f"))
    lo, hi = total.ci(confidence)
    t.add_row("[bold]product[/bold]", "", f"[bold]{total.ratio:.4f}[/bold]",
              interval(lo, hi, ".4f") if total.se > 0 else "exact", num(total.se, ".4f"),
              "inf" if math.isinf(total.df) else num(total.df, ".1f"))
    console.print(t)


def matrix(console: Console, m) -> None:
    conf = f"{100 * m.confidence:.0f}% CI"
    t = _table("transition symbols (Table 3 pairs)", ["symbol", "transition", "printed", "pairs", "perflab (geo. mean)",
                                                      conf])
    for estimate in m.symbols.values():
        s, d = estimate.symbol, estimate.to_dict(m.confidence)
        pairs = ", ".join(f"{p.pair}:{p.ratio.text}" for p in s.pairs if p.ratio is not None) or estimate.source
        _row(t, s.name + ("?" if estimate.doubtful else ""), s.transition, s.value.text if s.value else "?", pairs,
             num(d["perflab"], ".4f"), interval(d["ci_low"], d["ci_high"], ".3f"))
    console.print(t)
    r = _table("release ITRR matrix (Table 2): from the printed symbols, and from the pairs",
               ["from", "to", "case", "derivation", "printed", "seeds' recomp.", "perflab", "ok (printed/recomp.)",
                "from pairs", conf, "note"])

    def ok(status) -> str:
        return {"agree": "yes", "disagree": "NO", "defines": "="}.get(status.value, "?") if status else "-"

    for row in m.rows:
        _row(r, row.source, row.target, row.case, row.derivation, row.printed_text, row.recomputed_text,
             num(row.perflab, ".4f"), f"{ok(row.printed_status)}/{ok(row.recomputed_status)}",
             num(row.from_pairs, ".4f"), interval(row.ci_low, row.ci_high, ".3f"), row.note)
    console.print(r)
    c = m.counts()
    console.print(f"printed cells reproduced within rounding: {c['printed_reproduced']} of {c['printed_cells']} "
                  f"({c['printed_doubtful']} more not judged: a ? in the way); seeds' recomputed cells: "
                  f"{c['recomputed_reproduced']} of {c['recomputed_cells']} ({c['recomputed_doubtful']} more not "
                  f"judged: a ? in the way); rows defining a symbol: {c['defining']}; rows not derivable: "
                  f"{c['not_derivable']}", highlight=False)
