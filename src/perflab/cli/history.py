"""`perflab history` and `perflab bisect`: results over time (docs/history.md). Parsing and
dispatch only; the work is in perflab.history and perflab.bisect."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from perflab.cli.options import MeasurementOpt, NoMonitorOpt, StabilizationOpt, StoreOpt
from perflab.errors import InputError
from perflab.history.edivisive import PERMUTATIONS, SIGNIFICANCE
from perflab.safe_text import console
from perflab.safe_text import terminal as escape

out = console()
err = console(stderr=True)


def history_command(
    metric: list[str] | None = typer.Option(None, "--metric", "-m", help="metric keys to analyse (default: itr_s)"),
    by: str = typer.Option("time", "--by", help="order each series by time, or by the version its runs measured"),
    version_from: str = typer.Option("auto", "--version-from", help="a run's version: release (target.release), "
                                     "label, sut (the SUT's own version) or auto (the release, else the label)"),
    ignore: list[str] | None = typer.Option(None, "--ignore", metavar="FIELD", help="a workload field that is the "
                                            "software under test, not the configuration (e.g. a knob): runs that "
                                            "differ in it stay one series (repeatable)"),
    workload: str | None = typer.Option(None, "--workload", help="only this workload's series"),
    host: str | None = typer.Option(None, "--host", help="only this host's series (host name or digest)"),
    series: str | None = typer.Option(None, "--series", help="only this series (its id, or a prefix)"),
    reference: list[str] | None = typer.Option(None, "--reference", metavar="WORKLOAD", help="a workload whose "
                                               "series is the host's reference: its changes are the host's "
                                               "(repeatable; A/A studies' runs are references anyway)"),
    relative: bool = typer.Option(False, "--relative", help="each run of a study over its block's base run (a duet's "
                                  "partner): the host's speed cancels"),
    recent: int = typer.Option(5, "--recent", min=1, help="a change point among a series' last N runs is new"),
    gate: bool = typer.Option(False, "--gate", help="exit 6 when a new change point is the software's (or unknown)"),
    fail_on: str = typer.Option("any", "--fail-on", help="with --gate: any new change point, or only worse ones"),
    significance: float = typer.Option(SIGNIFICANCE, "--significance", help="the permutation test's level"),
    permutations: int = typer.Option(PERMUTATIONS, "--permutations", help="permutations per test"),
    confirm: bool = typer.Option(False, "--confirm", help="run the study that decides each change point between two "
                                 "versions, and attach its verdict"),
    versions_file: Path | None = typer.Option(None, "--versions", metavar="FILE", help="with --confirm: how a version "
                                              "is set up (a bisect versions file); default: releases by target.release"),
    blocks: int | None = typer.Option(None, "--blocks", help="with --confirm: blocks of each study"),
    measurement: str | None = MeasurementOpt,
    stabilization: str | None = StabilizationOpt,
    as_json: bool = typer.Option(False, "--json", help="the history as JSON"),
    store: Path | None = StoreOpt,
) -> None:
    """Change points over the store's history: each series of like runs (one workload, configuration,
    host and arrangement), ordered by time or version, analysed by E-Divisive means with a
    permutation test.

    Exit codes: 0 done; 2 bad input; with --gate, 6 when a change point among a series' last
    --recent runs is the software's (or of unknown cause; the host's are reported, not failed).

    Example: `perflab history --metric itr_s --by version --gate`
    """
    from perflab.history.analysis import HistoryOptions, build_history
    from perflab.history.model import Order
    from perflab.history.render import render_history
    from perflab.store.catalog import Store

    if by not in ("time", "version"):
        raise InputError(f"expected time or version, got {by!r}", field="--by")
    order: Order = "version" if by == "version" else "time"
    options = HistoryOptions(metrics=list(metric) if metric else HistoryOptions().metrics, order=order,
                             version_from=version_from, ignore=list(ignore or []), workload=workload, host=host,
                             series=series, references=list(reference or []), relative=relative, recent=recent,
                             fail_on=fail_on, significance=significance, permutations=permutations)
    home = Store(store).home
    doc = build_history(home, options)
    if confirm:
        from perflab.history.confirm import ConfirmOptions, confirm_history

        confirm_history(doc, Store(store), ConfirmOptions(
            versions_file=versions_file, blocks=blocks, measurement=_seconds(measurement, "--measurement"),
            stabilization=_seconds(stabilization, "--stabilization")), on_progress=lambda text: err.print(escape(text)))
    if as_json:
        sys.stdout.write(json.dumps(doc.dump(), indent=2, ensure_ascii=False) + "\n")
    else:
        render_history(doc, out)
    if gate and doc.exit_code:
        raise typer.Exit(doc.exit_code)


def _seconds(text: str | None, option: str) -> float | None:
    from perflab.workload.model import parse_duration

    try:
        return None if text is None else parse_duration(text)
    except ValueError as exc:
        raise InputError(str(exc), field=option) from None


def bisect_command(
    versions: Path = typer.Argument(..., metavar="VERSIONS", help="versions file: a study, the versions (oldest "
                                    "first) and what each sets (docs/history.md)"),
    blocks: int | None = typer.Option(None, "--blocks", help="blocks of each step's study (default: the file's, else "
                                      "the study's)"),
    max_blocks: int | None = typer.Option(None, "--max-blocks", help="an INCONCLUSIVE step runs again with more "
                                          "blocks, up to this many (default 24)"),
    measurement: str | None = MeasurementOpt,
    stabilization: str | None = StabilizationOpt,
    no_monitor: bool = NoMonitorOpt,
    as_json: bool = typer.Option(False, "--json", help="print bisect.json instead of the table"),
    keep: Path | None = typer.Option(None, "--keep", metavar="PAGE", help="store the bisect's report and each step's "
                                     "study beside the page that publishes it (its reports/ directory)"),
    store: Path | None = StoreOpt,
) -> None:
    """Find where the study's primary metric changed in an ordered list of versions: about
    log2(n) studies of two versions each, more blocks for an INCONCLUSIVE one; every step is
    reported with its verdict and interval, and the finding names the version, or the range, or
    says that the change is gradual.

    Prints the bisect's directory (bisect.json, report.md, each step's study file). Exit codes: 0
    a finding (a version, a gradual change, no change); 2 bad input; 3 a step stayed INCONCLUSIVE
    at --max-blocks; 4 a study had no comparison; 130 interrupted (the steps so far are kept).

    Example: `perflab bisect examples/bisect/sqlite-releases.yaml --keep docs/release-trend.md`
    """
    from perflab.bisect.report import render_markdown, render_terminal
    from perflab.bisect.runner import BisectRunner, StepOptions
    from perflab.errors import EXIT_INCONCLUSIVE, EXIT_INTERRUPTED, EXIT_NO_COMPARISON, EXIT_OK
    from perflab.store.atomic import write_atomic
    from perflab.store.catalog import Store

    if blocks is not None and blocks < 3:
        raise InputError("expected 3 or more blocks", field="--blocks")
    if keep is not None and not keep.is_file():
        raise InputError("no such page: the bisect's report is kept beside a page that exists", field="--keep")
    runner = BisectRunner(versions, Store(store), StepOptions(measurement=_seconds(measurement, "--measurement"),
                                                              stabilization=_seconds(stabilization, "--stabilization"),
                                                              monitor=not no_monitor),
                          blocks=blocks, max_blocks=max_blocks, progress=lambda text: err.print(escape(text)))
    err.print(f"bisect [bold]{escape(runner.bisect_id)}[/bold] -> {escape(runner.dir)}")
    try:
        doc = runner.run()
    finally:
        if runner.dir.exists():
            write_atomic(runner.dir / "report.md", lambda tmp: tmp.write_text(render_markdown(runner.doc)))
    if as_json:
        sys.stdout.write(json.dumps(doc.dump(), indent=2, ensure_ascii=False) + "\n")
    else:
        render_terminal(doc, err)
        out.print(str(runner.dir), soft_wrap=True, highlight=False, markup=False)
    kind = doc.finding.kind if doc.finding is not None else "interrupted"
    if keep is not None and doc.finding is not None:  # an interrupted bisect is not published
        from perflab.report.book.layout import keep_report

        kept = keep_report(runner.dir, keep)
        err.print(f"kept: {escape(str(kept.directory))} (and each step's study beside it)")
    code = {"undecided": EXIT_INCONCLUSIVE, "no-comparison": EXIT_NO_COMPARISON,
            "interrupted": EXIT_INTERRUPTED}.get(kind, EXIT_OK)
    if code:
        raise typer.Exit(code)
