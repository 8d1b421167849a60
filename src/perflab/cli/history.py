"""`perflab history`: results over time (docs/history.md). Parsing and dispatch only; the work
is in perflab.history."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from perflab.cli.options import StoreOpt
from perflab.errors import InputError
from perflab.history.edivisive import PERMUTATIONS, SIGNIFICANCE
from perflab.safe_text import console

out = console()


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
    if as_json:
        sys.stdout.write(json.dumps(doc.dump(), indent=2, ensure_ascii=False) + "\n")
    else:
        render_history(doc, out)
    if gate and doc.exit_code:
        raise typer.Exit(doc.exit_code)

