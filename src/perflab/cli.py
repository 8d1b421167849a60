"""The `perflab` command. Thin: parse arguments, call the stages, render results.

Exit codes: 0 success; 1 a check failed (derive --check) or a comparison found a regression;
2 bad input (file, line, field, what was expected -- never a traceback); 3 a comparison was
inconclusive.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from perflab.capacity.command import capacity_app
from perflab.errors import EXIT_USAGE, InputError, SutFailure

app = typer.Typer(
    name="perflab",
    help="perflab: a performance evaluation lab. Drive a system under test, measure what every "
    "transaction costs, compare releases.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(capacity_app, name="capacity")
# Piped or captured output is not squeezed to 80 columns: run ids and paths must stay whole.
out = Console() if sys.stdout.isatty() else Console(width=200)
err = Console(stderr=True) if sys.stderr.isatty() else Console(stderr=True, width=200)

StoreOpt = typer.Option(None, "--store", envvar="PERFLAB_HOME", help="run store directory (default ./perflab-runs)")


def _cpus(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        cpus: list[int] = []
        for part in text.split(","):
            if "-" in part:
                low, high = part.split("-")
                cpus.extend(range(int(low), int(high) + 1))
            elif part.strip():
                cpus.append(int(part))
        return cpus
    except ValueError:
        raise InputError(f"expected CPU numbers such as 1 or 0,2-3, got {text!r}", field="--cpus") from None


@app.command()
def validate(workload: Path = typer.Argument(..., help="workload YAML file")) -> None:
    """Check a workload file; print a summary or the first problem (file:line: field: message)."""
    from perflab.workload.loader import load_workload

    w = load_workload(workload)
    load = f"{w.load.users} users (closed loop)" if w.closed else f"{w.load.rate}/s {w.load.arrival} arrivals (open loop)"
    out.print(f"[green]ok[/green] {workload}: workload {w.name!r}, {len(w.transactions)} transactions, "
              f"{len(w.scripts)} scripts, {load}, target {w.target.kind}")


@app.command()
def schema(kind: str = typer.Argument("workload", help="workload or study")) -> None:
    """Print the JSON schema of workload (or study) files, for editors."""
    if kind == "workload":
        from perflab.workload.model import Workload

        out.print_json(json.dumps(Workload.model_json_schema(by_alias=True)))
    elif kind == "study":
        try:
            from perflab.study.model import Study
        except ImportError:
            raise InputError("study files are not available yet", field="KIND") from None
        out.print_json(json.dumps(Study.model_json_schema(by_alias=True)))
    else:
        raise InputError(f"unknown schema {kind!r}; expected 'workload' or 'study'", field="KIND")


@app.command()
def run(
    workload: Path = typer.Argument(..., help="workload YAML file"),
    users: Optional[int] = typer.Option(None, "--users", "-u", min=1, help="simulated users (closed loop)"),
    rate: Optional[float] = typer.Option(None, "--rate", "-r", min=0.001, help="arrivals per second (open loop)"),
    duration: Optional[str] = typer.Option(None, "--duration", "-d", help="measurement period, e.g. 30s, 5m"),
    seed: Optional[int] = typer.Option(None, "--seed", help="random seed (script choices, think times, parameters)"),
    label: Optional[str] = typer.Option(None, "--label", help="a name for this configuration"),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="SUT worker processes"),
    sut_cpus: Optional[str] = typer.Option(None, "--sut-cpus", help="CPUs for the SUT, e.g. 1 or 1-3"),
    driver_cpus: Optional[str] = typer.Option(None, "--driver-cpus", help="CPUs for the driver"),
    no_monitor: bool = typer.Option(False, "--no-monitor", help="do not sample machine and SUT counters"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress display"),
    store: Optional[Path] = StoreOpt,
) -> None:
    """Drive the workload's SUT, store the run, print its summary and the run id."""
    from perflab.drive.run import RunRequest, execute_run, set_progress
    from perflab.store.catalog import Store
    from perflab.workload.loader import load_workload
    from perflab.workload.model import parse_duration

    if users is not None and rate is not None:
        raise InputError("give --users (closed loop) or --rate (open loop), not both", field="--users/--rate")
    w = load_workload(workload)
    try:
        measurement = parse_duration(duration) if duration is not None else None
    except ValueError as exc:
        raise InputError(str(exc), field="--duration") from None
    request = RunRequest(w, workload, users=users, rate=rate, duration=measurement, seed=seed, label=label,
                         workers=workers, sut_cpus=_cpus(sut_cpus), driver_cpus=_cpus(driver_cpus),
                         monitor=not no_monitor)
    st = Store(store)
    from perflab.report.progress import RunProgress

    progress = None if quiet else RunProgress(err)
    set_progress(progress.tick if progress else None)
    try:
        result = execute_run(request, st, on_started=progress.started if progress else None)
    finally:
        if progress:
            progress.close()
        set_progress(None)
    _print_summary(result.run_dir)
    colour = {"complete": "green", "interrupted": "yellow"}.get(result.status, "red")
    err.print(f"[{colour}]{result.status}[/{colour}]" + (f": {result.reason}" if result.reason else "")
              + ("" if result.valid else " [red](invalid run)[/red]"))
    out.print(result.run_id, soft_wrap=True, highlight=False)
    if result.status == "failed":
        raise typer.Exit(1)


def _print_summary(run_dir: Path) -> None:
    try:
        from perflab.reduce.reduce import reduce_run
        from perflab.report.terminal import render_summary
    except ImportError:
        return
    render_summary(reduce_run(run_dir), err)


@app.command()
def runs(
    limit: int = typer.Option(30, "--limit", "-n", help="how many runs (newest first)"),
    rescan: bool = typer.Option(False, "--rescan", help="rebuild the catalog from the run directories"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
    store: Optional[Path] = StoreOpt,
) -> None:
    """List stored runs."""
    from rich.table import Table

    from perflab.store.catalog import Store

    st = Store(store)
    if rescan:
        err.print(f"indexed {st.rescan(rebuild=True)} runs")
    rows = st.rows(limit=limit)
    if as_json:
        out.print_json(json.dumps([{**r.__dict__, "status": r.shown_status} for r in rows]))
        return
    table = Table(title=f"runs in {st.runs_dir}", title_justify="left")
    for col in ("run id", "created", "workload", "label", "status", "users/rate", "ETR (T)"):
        table.add_column(col)
    for r in rows:
        load = str(r.users) if r.users else (f"{r.rate:g}/s" if r.rate else "")
        status = r.shown_status + ("" if r.valid in (None, True) else " (invalid)")
        etr = "" if r.etr_t is None else f"{r.etr_t:.2f}"
        table.add_row(r.run_id, r.created, r.workload, r.label or "", status, load, etr)
    out.print(table)


@app.command()
def show(
    run_ref: str = typer.Argument("last", metavar="RUN", help="run id, unique prefix, path, or 'last'"),
    as_json: bool = typer.Option(False, "--json", help="metrics as JSON, keyed as in the metric catalog"),
    store: Optional[Path] = StoreOpt,
) -> None:
    """Show a run's metrics, grouped as the seed reports group them."""
    from perflab.reduce.reduce import reduce_run
    from perflab.report.terminal import render_metrics
    from perflab.store.catalog import Store

    run_dir = Store(store).resolve(run_ref)
    metrics = reduce_run(run_dir)
    if as_json:
        out.print_json(json.dumps(metrics.to_json()))
    else:
        render_metrics(metrics, out)


@app.command()
def study(
    study_file: Path = typer.Argument(..., metavar="STUDY", help="study YAML file"),
    measurement: Optional[str] = typer.Option(None, "--measurement", help="override every run's measurement period"),
    stabilization: Optional[str] = typer.Option(None, "--stabilization", help="override the stabilization period"),
    blocks: Optional[int] = typer.Option(None, "--blocks", min=1, help="override the number of blocks"),
    gate: bool = typer.Option(False, "--gate", help="exit like `perflab compare` (1 WORSE, 3 INCONCLUSIVE)"),
    no_monitor: bool = typer.Option(False, "--no-monitor", help="do not sample machine and SUT counters"),
    store: Optional[Path] = StoreOpt,
) -> None:
    """Run a study: calibrate, interleaved blocks, gates, verdicts; write the reports.

    Prints the report directory. Exit codes: 0 done (with --gate: no gated verdict WORSE),
    1 a gated verdict is WORSE (--gate), 2 bad input, 3 a gated verdict is INCONCLUSIVE (--gate).
    """
    from perflab.report.progress import StudyProgress
    from perflab.store.catalog import Store
    from perflab.study.compare import gate_exit_code
    from perflab.study.runner import StudyOptions, StudyRunner
    from perflab.workload.model import parse_duration

    def seconds(text: str | None, name: str) -> float | None:
        try:
            return None if text is None else parse_duration(text)
        except ValueError as exc:
            raise InputError(str(exc), field=name) from None

    options = StudyOptions(measurement=seconds(measurement, "--measurement"),
                           stabilization=seconds(stabilization, "--stabilization"), blocks=blocks,
                           monitor=not no_monitor)
    progress = StudyProgress(err)
    runner = StudyRunner(study_file, Store(store), options, on_event=progress.event)
    err.print(f"study [bold]{runner.study_id}[/bold] -> {runner.dir}")
    try:
        doc = runner.run()
    finally:
        progress.close()
    paths = _write_reports(doc, runner.dir)
    _print_verdicts(doc)
    for kind, path in paths.items():
        err.print(f"{kind}: {path}")
    out.print(str(runner.dir), soft_wrap=True, highlight=False)
    if gate:
        raise typer.Exit(gate_exit_code(doc["comparisons"], runner.study.gate_metrics))


def _write_reports(doc: dict, directory: Path) -> dict:
    try:
        from perflab.report.write import write_reports
    except ImportError:
        return {"study": directory / "study.json"}
    return {"study": directory / "study.json", **write_reports(doc, directory)}


def _print_verdicts(doc: dict) -> None:
    from rich.table import Table

    for warning in doc.get("warnings", []):
        err.print(f"[yellow]warning:[/yellow] {warning}")
    for comparison in doc.get("comparisons", []):
        table = Table(title=f"{comparison['base']} -> {comparison['new']}", title_justify="left")
        for col in ("metric", "base", "new", "ratio", "90% CI", "verdict"):
            table.add_column(col)
        for m in comparison["metrics"]:
            ci = "" if m.get("ci_low") is None else f"{m['ci_low']:.3f} - {m['ci_high']:.3f}"
            ratio = "" if m.get("ratio") is None else f"{m['ratio']:.3f}"
            fmt = (lambda v: "na" if v is None else f"{v:.4g}")
            table.add_row(m["label"], fmt(m.get("base_value")), fmt(m.get("new_value")), ratio, ci, m.get("verdict") or "")
        err.print(table)


@app.command()
def compare(
    a: str = typer.Argument(..., metavar="A", help="base: run ids (comma-separated), label:NAME, or study:ID[:CONFIG]"),
    b: str = typer.Argument(..., metavar="B", help="new: the same forms"),
    metric: list[str] = typer.Option(["itr_s"], "--metric", "-m", help="metrics whose verdicts decide the exit code"),
    margin: float = typer.Option(0.03, "--margin", help="equivalence margin (0.03 = ±3%)"),
    confidence: float = typer.Option(0.90, "--confidence", help="confidence level of the intervals"),
    report_dir: Optional[Path] = typer.Option(None, "--out", help="also write report.md/html/json here"),
    store: Optional[Path] = StoreOpt,
) -> None:
    """Compare stored runs or run groups (a regression gate for CI pipelines).

    Runs are paired by block when both groups come from a study, else by order. Exit codes:
    0 no gated verdict is WORSE; 1 a gated verdict is WORSE; 2 bad input; 3 a gated verdict is
    INCONCLUSIVE (more runs needed). Gated metrics: --metric (default itr_s).
    """
    from perflab.store.catalog import Store
    from perflab.study.compare import gate_exit_code
    from perflab.study.groups import comparison_document

    doc = comparison_document(Store(store), a, b, margin, confidence)
    _print_verdicts(doc)
    if report_dir is not None:
        from perflab.store.atomic import write_json_atomic

        report_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(report_dir / "study.json", doc)
        for kind, path in _write_reports(doc, report_dir).items():
            err.print(f"{kind}: {path}")
    code = gate_exit_code(doc["comparisons"], metric)
    err.print({0: "no regression", 1: "[red]WORSE[/red]", 3: "[yellow]INCONCLUSIVE[/yellow]"}[code])
    raise typer.Exit(code)


@app.command()
def accuracy(
    quick: bool = typer.Option(False, "--quick", help="short windows: a smoke check, not the published table"),
    output: Path = typer.Option(Path("docs/accuracy.md"), "--out", help="where to write the table"),
    store: Optional[Path] = StoreOpt,
) -> None:
    """Measure the known-cost synthetic SUT at 20-90% utilization; write docs/accuracy.md."""
    from perflab.store.atomic import write_atomic
    from perflab.store.catalog import Store
    from perflab.study.accuracy import render_accuracy, run_accuracy
    from perflab.sut.fingerprint import machine_fingerprint
    from perflab.sut.placement import resolve_placement

    result = run_accuracy(Store(store), quick=quick, on_progress=lambda text: err.print(text))
    fingerprint = {**machine_fingerprint(), "placement": resolve_placement(None, None).describe()}
    text = render_accuracy(result, fingerprint)
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(output, lambda tmp: tmp.write_text(text))
    out.print(text)
    err.print(f"written: {output}")


@app.command()
def metrics(
    markdown: bool = typer.Option(False, "--markdown", help="the reference as Markdown (docs/metrics.md)"),
) -> None:
    """List the metric catalog: labels, keys, units, sources, formulas."""
    from perflab.report.metric_reference import render_metric_reference

    if markdown:
        print(render_metric_reference(), end="")
        return
    from rich.table import Table

    from perflab.reduce.registry import REGISTRY

    table = Table(title="perflab metric catalog", title_justify="left")
    for col in ("group", "label", "key", "unit", "formula"):
        table.add_column(col)
    keys = set(REGISTRY.perflab_keys())
    for m in REGISTRY:
        if m.key in keys:
            formula = "; ".join(f.expression for f in m.formulas) if m.formulas else "measured"
            table.add_row(m.group, m.label, m.key, m.unit or "", formula)
    out.print(table)


@app.command()
def derive(
    table: Path = typer.Argument(..., help="a published measurement table (seed-table CSV format)"),
    check: bool = typer.Option(False, "--check", help="exit 1 when a derivable row disagrees beyond rounding"),
) -> None:
    """Recompute a published table's derived rows with perflab's formulas."""
    from perflab.derive.command import run_derive

    raise typer.Exit(run_derive(table, check, out))


def main() -> None:
    """Entry point: one clear line and exit 2 for bad input; never a traceback for it.

    typer's standalone mode handles usage errors (exit 2) and typer.Exit; perflab's own
    exceptions propagate out of it and are reported here.
    """
    try:
        app()
    except InputError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        sys.exit(EXIT_USAGE)
    except SutFailure as exc:
        err.print(f"[red]SUT failure:[/red] {exc}", highlight=False)
        sys.exit(1)


if __name__ == "__main__":
    main()
