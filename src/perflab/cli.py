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

from perflab.errors import EXIT_USAGE, InputError, SutFailure

app = typer.Typer(
    name="perflab",
    help="perflab: a performance evaluation lab. Drive a system under test, measure what every "
    "transaction costs, compare releases.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)

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
    out.print(result.run_id)
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
