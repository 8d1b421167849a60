"""The `perflab` command: parses arguments and dispatches to the stages; nothing else.

Exit codes (perflab.errors, README "Exit codes"): 0 success; 1 a primary verdict is WORSE
(compare, study --gate), a SUT failed (run), a derived row disagrees (derive --check); 2 bad
input (file, line, field, what was expected -- never a traceback); 3 a primary verdict is
INCONCLUSIVE (compare, study --gate); 4 a primary metric has no valid comparison (study, compare);
5 a run complete but invalid (run); 130 a run interrupted (Ctrl-C, SIGTERM), stored and marked so.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import typer

from perflab.cli.agent import agent_command
from perflab.cli.archive import archive_app
from perflab.cli.capacity import capacity_app
from perflab.cli.history import bisect_command, history_command
from perflab.cli.options import (
    MARKUP_MODE,
    MeasurementOpt,
    NoMonitorOpt,
    PerflabGroup,
    StabilizationOpt,
    StoreOpt,
    completion_option,
)
from perflab.cli.serve import serve_command
from perflab.errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NO_COMPARISON,
    EXIT_OK,
    EXIT_USAGE,
    InputError,
    StorageError,
    SutFailure,
)
from perflab.safe_text import console
from perflab.safe_text import terminal as escape

app = typer.Typer(
    name="perflab",
    cls=PerflabGroup,                # --help without type tags (perflab.cli.options)
    rich_markup_mode=MARKUP_MODE,
    no_args_is_help=True,
    add_completion=False,            # perflab's own --show-completion SHELL, --install-completion SHELL (below)
    pretty_exceptions_enable=False,
)
app.add_typer(capacity_app, name="capacity")
app.add_typer(archive_app, name="archive")
# No emoji codes, 200 columns when piped (perflab.safe_text.console).
out = console()
err = console(stderr=True)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("perflab")
        except PackageNotFoundError:   # run from a source tree that was never installed
            from perflab import __version__ as number
        print(f"perflab {number}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="print perflab's version and exit"),
    show_completion: str | None = completion_option("show"),
    install_completion: str | None = completion_option("install"),
) -> None:
    """perflab: a performance evaluation lab. Drive a system under test, measure what every
    transaction costs, compare releases.

    Start with `perflab run examples/debit-credit.yaml`, then `perflab show`; `perflab COMMAND
    --help` says more about each command.
    """


def _seconds(text: str | None, option: str) -> float | None:
    from perflab.workload.model import parse_duration

    try:
        return None if text is None else parse_duration(text)
    except ValueError as exc:
        raise InputError(str(exc), field=option) from None


@app.command()
def validate(workload: Path = typer.Argument(..., help="workload, study or suite YAML file")) -> None:
    """Check a workload, study or suite file (and the files it names); print a summary or the
    first problem (file:line: field: message). Nothing is run and nothing is written.

    Example: `perflab validate examples/sqlite-release-study.yaml`
    """
    from perflab.workload.fast_yaml import collector_paused

    with collector_paused():   # a file of 10,000 entries validates in a second, not several
        _validate(workload)


def _validate(workload: Path) -> None:
    from perflab.workload.loader import load_workload, read_yaml

    data = read_yaml(workload)
    if isinstance(data, dict) and "studies" in data and "target" not in data and "workload" not in data:
        from perflab.study.suite import load_suite

        loaded = load_suite(workload)
        out.print(f"[green]ok[/green] {escape(workload)}: suite {escape(repr(loaded.suite.name))}, "
                  f"{escape(loaded.base)} -> {escape(loaded.new)} under {len(loaded.members)} workloads "
                  f"({escape(', '.join(m.entry.name for m in loaded.members))}); averaged: "
                  f"{escape(', '.join(loaded.suite.metrics))}")
        return
    if "workload" in data and "target" not in data:   # a study file names its workload; a workload has a target
        from perflab.study.load import load_study

        study, w, _path = load_study(workload)
        points = len(study.sweep.values) if study.sweep is not None else 1
        out.print(f"[green]ok[/green] {escape(workload)}: study {escape(repr(study.name))}, "
                  f"{len(study.configurations)} configurations, {points} sweep points, {study.blocks} blocks; "
                  f"workload {escape(repr(w.name))}, {w.describe_load()}")
        _say_core(out, w)
        return
    w = load_workload(workload, data)
    out.print(f"[green]ok[/green] {escape(workload)}: workload {escape(repr(w.name))}, {len(w.transactions)} "
              f"transactions, {len(w.scripts)} scripts, {w.describe_load()}, target {w.target.kind}")
    _say_core(out, w)


def _say_core(out, w) -> None:
    """Which loop will run the users (perflab's compiled loop, or the Python path and why)."""
    from perflab.workload.kinds import KINDS

    if KINDS.of(w.target).native is None or w.driver.kind != "native":
        return
    from perflab.drive.load.native_http import core_for

    out.print(f"  driver core: {escape(core_for(w).sentence())}")


@app.command()
def schema(kind: str = typer.Argument("workload", help="workload, study or suite")) -> None:
    """Print the JSON schema of workload (or study, or suite) files, for editors.

    Example: `perflab schema study > study.schema.json`
    """
    from pydantic import BaseModel

    from perflab.study.model import Study
    from perflab.study.suite import SuiteFile
    from perflab.workload.model import Workload

    models: dict[str, type[BaseModel]] = {"workload": Workload, "study": Study, "suite": SuiteFile}
    if kind not in models:
        raise InputError(f"unknown schema {kind!r}; expected 'workload', 'study' or 'suite'", field="KIND")
    out.print_json(json.dumps(models[kind].model_json_schema(by_alias=True)))


@app.command()
def run(
    workload: Path = typer.Argument(..., help="workload YAML file"),
    users: int | None = typer.Option(None, "--users", "-u", min=1, help="simulated users (closed loop)"),
    rate: float | None = typer.Option(None, "--rate", "-r", min=0.001, help="arrivals per second (open loop)"),
    duration: str | None = typer.Option(None, "--duration", "-d", help="measurement period, e.g. 30s, 5m"),
    seed: int | None = typer.Option(None, "--seed", help="random seed (script choices, think times, parameters)"),
    label: str | None = typer.Option(None, "--label", help="a name for this configuration"),
    workers: int | None = typer.Option(None, "--workers", min=1, help="SUT worker processes"),
    sut_cpus: str | None = typer.Option(None, "--sut-cpus", help="CPUs for the SUT, e.g. 1 or 1-3"),
    driver_cpus: str | None = typer.Option(None, "--driver-cpus", help="CPUs for the driver"),
    no_monitor: bool = NoMonitorOpt,
    drivers: str | None = typer.Option(None, "--drivers", help="drive from several hosts: a Ray cluster, "
                                          "ray://HEAD:10001 or auto (pip install 'perflab[ray]')"),
    driver_count: int | None = typer.Option(None, "--driver-count", min=1, help="driver processes on the "
                                               "cluster (default: one per node)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress display"),
    threshold: list[str] | None = typer.Option(
        None, "--threshold", metavar="EXPR", help="a limit the run must meet, e.g. 'resp_p95_t < 0.5' (repeatable; "
        "added to the workload's thresholds); exit 1 when one is violated"),
    changes: list[str] | None = typer.Option(None, "--set", metavar="PATH=VALUE", help="change one workload field "
                                             "for this run, as a study configuration's `set:` does (repeatable; the "
                                             "value is YAML), e.g. --set target.driver=apsw"),
    keep: Path | None = typer.Option(None, "--keep", metavar="PAGE", help="store the run's report beside PAGE "
                                     "(docs/reports/ID/ for README.md and docs/; report.md and run.json), as a page "
                                     "citing the run needs"),
    store: Path | None = StoreOpt,
) -> None:
    """Drive the workload's SUT, store the run, print its summary and the run id.

    Exit codes: 0 done, 1 the SUT failed or a threshold is violated, 2 bad input, 5 the run is
    invalid (a hung transaction, errors above 1%, a saturated driver...: stored with the reasons),
    130 interrupted (Ctrl-C, SIGTERM; the run is stored, marked interrupted).

    Example: `perflab run examples/debit-credit.yaml --users 8 --duration 30s`
    """
    from perflab.catalog.thresholds import evaluate, parse_threshold, violated
    from perflab.drive.plan import RunRequest
    from perflab.drive.run import execute_run
    from perflab.outcome import judge_outcome, run_exit_code
    from perflab.reduce.reduce import reduce_run
    from perflab.report.progress import RunProgress
    from perflab.report.terminal import outcome_markup, render_summary, render_thresholds
    from perflab.store.catalog import CatalogError, Store
    from perflab.sut.placement import parse_cpus
    from perflab.workload.loader import load_workload

    if keep is not None and not keep.is_file():   # before the run, not after it
        raise InputError("the page to keep the run's report beside does not exist", file=keep, field="--keep")
    w = with_changes(load_workload(workload), changes or [], workload)
    try:
        extra = [parse_threshold(text).expression for text in threshold or []]
    except ValueError as exc:
        raise InputError(str(exc), field="--threshold") from None
    if extra:   # stored with the run (run.json's workload), so its report shows them
        w = w.model_copy(update={"thresholds": list(dict.fromkeys([*w.thresholds, *extra]))})
    request = RunRequest(w, workload, users=users, rate=rate, duration=_seconds(duration, "--duration"), seed=seed,
                         label=label, workers=workers, sut_cpus=parse_cpus(sut_cpus, "--sut-cpus"),
                         driver_cpus=parse_cpus(driver_cpus, "--driver-cpus"), monitor=not no_monitor,
                         drivers=drivers, driver_count=driver_count)
    st = Store(store)
    progress = None if quiet else RunProgress(err)
    from perflab.drive.lifecycle import Terminated

    try:
        result = execute_run(request, st, progress)
    except Terminated:  # SIGTERM before the run was opened: nothing stored
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        if progress:
            progress.close()
    metrics = reduce_run(result.run_dir)
    assert metrics.record is not None  # the run was just stored, run.json with it
    outcome = judge_outcome(metrics.record, metrics)
    try:
        st.set_etr(result.run_id, metrics.values.get("etr_t"), outcome)
    except CatalogError as exc:  # e.g. the disk filled: the run is stored; `runs --rescan` indexes its ETR
        err.print(f"[yellow]note:[/yellow] {escape(exc)}", highlight=False, soft_wrap=True)
    render_summary(metrics, err)
    checked = evaluate(w.thresholds, metrics.values)
    render_thresholds(checked, err)
    err.print(outcome_markup(outcome) + (f": {escape(result.reason)}" if result.reason else ""))
    if keep is not None:
        from perflab.report.book.layout import keep_run

        err.print(f"kept: {escape(keep_run(result.run_dir, keep).directory)}", highlight=False)
    out.print(result.run_id, soft_wrap=True, highlight=False, markup=False)
    code = run_exit_code(outcome, bool(violated(checked)))
    if code:
        raise typer.Exit(code)


@app.command()
def runs(
    limit: int = typer.Option(30, "--limit", "-n", min=1, max=10**9, help="how many runs (newest first)"),
    rescan: bool = typer.Option(False, "--rescan", help="rebuild the catalog from the run directories"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
    store: Path | None = StoreOpt,
) -> None:
    """List stored runs.

    Example: `perflab runs -n 10`
    """
    from rich.table import Table

    from perflab.report.terminal import outcome_markup
    from perflab.store.catalog import Store

    st = Store(store)
    if rescan:
        from perflab.reduce.reduce import reduce_run

        def etr_of(run_dir: Path) -> float | None:  # for runs a lost catalog had the ETR (T) of
            return reduce_run(run_dir).values.get("etr_t")

        err.print(f"indexed {st.rescan(rebuild=True, etr_of=etr_of)} runs")
    else:
        st.reconcile()  # runs whose driver was killed between run.json and the catalog
    rows = st.rows(limit=limit)
    if as_json:
        out.print_json(json.dumps([{**r.__dict__, "status": r.shown_status, **r.shown_outcome_fields} for r in rows]))
        return
    table = Table(title=f"runs in {escape(st.runs_dir)}", title_justify="left")
    for col in ("run id", "created", "workload", "label", "status", "users/rate", "ETR (T)"):
        table.add_column(col)
    for r in rows:
        load = f"{r.users:,}" if r.users else (f"{r.rate:,g}/s" if r.rate else "")
        status = outcome_markup(r.shown_outcome)  # escaped, coloured by its tone
        etr = "" if r.etr_t is None else f"{r.etr_t:,.2f}"
        table.add_row(escape(r.run_id), escape(r.created), escape(r.workload), escape(r.label or ""), status,
                      load, etr)
    out.print(table)


@app.command()
def show(
    run_ref: str = typer.Argument("last", metavar="RUN", help="run id, unique prefix, path, or 'last'"),
    as_json: bool = typer.Option(False, "--json", help="metrics as JSON, keyed as in the metric catalog"),
    html: bool = typer.Option(False, "--html", help="write the run's self-contained report.html into its directory"),
    store: Path | None = StoreOpt,
) -> None:
    """Show a run's metrics, grouped as the seed reports group them.

    Example: `perflab show last --html` (writes the run's report.html and prints its path)
    """
    from perflab.store.catalog import Store

    run_dir = Store(store).resolve(run_ref)
    if html:
        from perflab.report.run.export import write_run_html

        return out.print(str(write_run_html(run_dir)), soft_wrap=True, highlight=False, markup=False)
    if as_json:
        from perflab.reduce.memory import reuse_freed_memory
        from perflab.reduce.reduce import reduce_run

        reuse_freed_memory()  # one reduction, then exit: freed arrays are reused, not faulted in anew
        metrics = reduce_run(run_dir).to_json()
        if out.is_terminal:
            return out.print_json(json.dumps(metrics))  # coloured
        # Piped: the text rich's print_json writes (indent 2, no wrapping), without its
        # highlighting pass (a fifth of a second for a run of 300 intervals).
        sys.stdout.write(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n")
        return None
    from perflab.report.run.model import build_report, study_of
    from perflab.report.terminal import render_run

    render_run(build_report(run_dir, study_of(run_dir), charts=False, strict=True), out)


def with_changes(workload: Any, changes: list[str], path: Path) -> Any:
    """The workload with `--set PATH=VALUE` changes applied (a study configuration's rules: a
    field by dotted path, a list entry by its name); a bad one is bad input naming the path."""
    if not changes:
        return workload
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    from perflab.study.configure import ChangeError, configured_workload
    from perflab.study.model import Configuration

    fields: dict[str, Any] = {}
    for text in changes:
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            raise InputError(f"{text!r}: expected PATH=VALUE, e.g. target.driver=apsw", field="--set")
        try:
            fields[name.strip()] = YAML(typ="safe", pure=True).load(value) if value.strip() else value
        except YAMLError as exc:
            raise InputError(f"{name}: the value is not YAML: {str(exc).splitlines()[0]}", field="--set") from None
    try:
        return configured_workload(workload, Configuration(name="--set", set=fields))
    except ChangeError as exc:
        raise InputError(f"{exc.path}: {exc}", file=path, field="--set") from None


@app.command()
def study(
    study_file: Path | None = typer.Argument(None, metavar="STUDY", help="study YAML file (not with --resume)"),
    measurement: str | None = MeasurementOpt,
    stabilization: str | None = StabilizationOpt,
    blocks: int | None = typer.Option(None, "--blocks", help="override the number of blocks (at least 3)"),
    aa: bool = typer.Option(False, "--aa", help="A/A: run the base against itself; report the noise and the "
                            "blocks the margin needs"),
    duet: bool = typer.Option(False, "--duet", help="run each block's two configurations at the same time on the "
                              "same CPUs (as `duet: true` in the file): the host's slow spells cancel from their ratio"),
    arrangement: str | None = typer.Option(None, "--arrangement", help="how a block's two runs run, whatever the "
                                              "file says: one-at-a-time, interleaved (many short pairs), duet or "
                                              "split-duet (docs/studies.md)"),
    gate: bool = typer.Option(False, "--gate", help="exit like `perflab compare` (1 WORSE, 3 INCONCLUSIVE)"),
    resume: str | None = typer.Option(None, "--resume", metavar="ID", help="continue a stored study that was "
                                      "interrupted or killed: the blocks it measured are kept, the rest run as "
                                      "planned (with the files and options it began with)"),
    no_monitor: bool = NoMonitorOpt,
    store: Path | None = StoreOpt,
) -> None:
    """Run a study: calibrate, interleaved blocks, gates, verdicts; write the reports.

    Prints the report directory. Exit codes: 0 done (with --gate: every primary verdict
    EQUIVALENT or BETTER), 1 a primary verdict is WORSE (--gate), 2 bad input, 3 a primary
    verdict is INCONCLUSIVE (--gate), 4 a primary metric has no valid comparison (always),
    130 interrupted (always, whatever the partial verdict: its reports are written).

    Example: `perflab study examples/sqlite-release-study.yaml --measurement 30s --blocks 4`;
    `perflab study --resume 20261206-233330-sqlite-release-36dc` (a study stopped half-way)
    """
    from perflab.report.progress import StudyProgress
    from perflab.report.terminal import render_verdicts
    from perflab.report.write import write_reports
    from perflab.store.catalog import Store
    from perflab.study.runner import StudyOptions, StudyRunner

    options = StudyOptions(measurement=_seconds(measurement, "--measurement"),
                           stabilization=_seconds(stabilization, "--stabilization"), blocks=blocks,
                           monitor=not no_monitor, aa=aa, duet=duet, arrangement=arrangement)
    progress = StudyProgress(err)
    if resume is not None and (study_file is not None or measurement or stabilization or blocks or aa or duet
                               or arrangement):
        raise InputError("--resume continues a study with the file and options it began with: give only its id "
                         "(and --store, --gate, --no-monitor)", field="--resume")
    runner = StudyRunner(study_file, Store(store), options, on_event=progress.event, observer=progress,
                         resume=resume)
    err.print(f"study [bold]{escape(runner.study_id)}[/bold] -> {escape(runner.dir)}")
    try:
        doc = runner.run()
    except KeyboardInterrupt:
        err.print("interrupted before the study had begun: nothing was measured")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except StorageError as exc:
        progress.close()
        _store_full(runner, exc)
    finally:
        progress.close()
    # A Ctrl-C or SIGTERM while the reports are written is remembered, not raised: the reports
    # of an interrupted study are what the user stopped it to read.
    with runner.signals.installed(), runner.signals.deferred():
        paths = {"study": runner.dir / "study.json", **write_reports(doc, runner.dir)}
        render_verdicts(doc, err)
        for kind, path in paths.items():
            err.print(f"{kind}: {escape(path)}")
        out.print(str(runner.dir), soft_wrap=True, highlight=False, markup=False)
    if doc.status == "interrupted" or runner.signals.received:
        raise typer.Exit(EXIT_INTERRUPTED)  # a partial verdict is no answer, whatever it says
    code = doc.verdict.exit_code if doc.verdict is not None else EXIT_OK
    if gate or code == EXIT_NO_COMPARISON:
        raise typer.Exit(code)


def _store_full(runner, exc: StorageError) -> None:
    """The store could not be written during a study (its disk is full): the study stops, marked
    failed with the reason where study.json can still be written (else it keeps its last state,
    "running", with the runs measured until then), in one line and exit 1 -- not exit 2, the
    study file was good. The runs before are kept; the run that met the full disk is marked
    failed with the reason (drive/lifecycle.py)."""
    from perflab.errors import storage_reason
    from perflab.store.atomic import write_json_atomic
    from perflab.study.document import now_iso

    doc = getattr(runner, "doc", None)
    said = "nothing was measured"
    if doc is not None:
        doc.status, doc.reason, doc.finished = "failed", f"the store could not be written: {exc.message}", now_iso()
        try:
            write_json_atomic(runner.dir / "study.json", doc.dump())
            said = f"study.json marks it failed, with the {len(doc.runs)} runs measured"
        except OSError as again:
            said = (f"study.json could not be updated either ({storage_reason(again)}): it keeps the "
                    f"{len(doc.runs)} runs measured until then")
    err.print(f"[red]error:[/red] {escape(exc)}; the study stopped: {escape(said)}", highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_FAILED)


@app.command()
def suite(
    suite_file: Path = typer.Argument(..., metavar="SUITE", help="suite YAML file: one study per workload"),
    measurement: str | None = MeasurementOpt,
    stabilization: str | None = StabilizationOpt,
    blocks: int | None = typer.Option(None, "--blocks", help="override every study's number of blocks (at least 3)"),
    gate: bool = typer.Option(False, "--gate", help="exit by the average of the suite's first metric (1 WORSE, "
                              "3 INCONCLUSIVE)"),
    no_monitor: bool = NoMonitorOpt,
    store: Path | None = StoreOpt,
) -> None:
    """Measure one change under several workloads: a study per workload, then their average (the
    LSPR's shape: a row per workload and an Average row).

    Every study the suite names must compare the same two configurations. Each runs as `perflab
    study` would and keeps its own report; the suite writes suite.json and report.md. Exit codes:
    as `perflab study`, the average's verdict deciding under --gate; 4 when the first metric has
    no average (a workload without an interval), 130 interrupted.

    Example: `perflab suite examples/lspr/sqlite-release-suite.yaml`
    """
    from perflab.report.progress import StudyProgress
    from perflab.report.suite import render_suite_markdown, render_suite_terminal
    from perflab.report.write import write_reports
    from perflab.store.atomic import write_atomic
    from perflab.store.catalog import Store
    from perflab.study.runner import StudyOptions, StudyRunner
    from perflab.study.suite import SuiteRunner

    runs = Store(store)
    runner = SuiteRunner(suite_file, runs)
    count = len(runner.doc.members)
    err.print(f"suite [bold]{escape(runner.suite_id)}[/bold] -> {escape(runner.dir)}")

    def run_study(path: Path, name: str):
        index = next(i for i, m in enumerate(runner.doc.members, start=1) if m.name == name)
        options = StudyOptions(measurement=_seconds(measurement, "--measurement"),
                               stabilization=_seconds(stabilization, "--stabilization"), blocks=blocks,
                               monitor=not no_monitor)
        progress = StudyProgress(err)
        study_runner = StudyRunner(path, runs, options, on_event=progress.event, observer=progress)
        err.print(f"workload {index} of {count}, [bold]{escape(name)}[/bold]: study "
                  f"{escape(study_runner.study_id)}")
        try:
            doc = study_runner.run()
        finally:
            progress.close()
        write_reports(doc, study_runner.dir)
        return doc, study_runner.dir

    try:
        doc = runner.run(run_study)
    finally:
        report = runner.dir / "report.md"
        if runner.dir.exists():
            write_atomic(report, lambda tmp: tmp.write_text(render_suite_markdown(runner.doc,
                                                                                  runner.loaded.suite.notes)))
    render_suite_terminal(doc, err)
    err.print(f"suite: {escape(runner.dir / 'suite.json')}")
    err.print(f"report: {escape(report)}")
    out.print(str(runner.dir), soft_wrap=True, highlight=False, markup=False)
    if doc.status == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)
    code = doc.verdict.exit_code if doc.verdict is not None else EXIT_OK
    if gate or code == EXIT_NO_COMPARISON:
        raise typer.Exit(code)


@app.command()
def compare(
    a: str = typer.Argument(..., metavar="A", help="base: run ids (comma-separated), label:NAME, or "
                            "study:STUDY_ID:CONFIG"),
    b: str = typer.Argument(..., metavar="B", help="new: the same forms"),
    metric: list[str] | None = typer.Option(None, "--metric", "-m", help="primary metrics: their verdicts decide "
                                               "the exit code (default: the study's, else itr_s)"),
    margin: float | None = typer.Option(None, "--margin", help="equivalence margin (0.03 = ±3%)"),
    confidence: float | None = typer.Option(None, "--confidence", help="the level of the intervals, 1 - alpha "
                                               "(0.95); the older spelling of --family-alpha"),
    family_alpha: float | None = typer.Option(None, "--family-alpha",
                                                 help="error rate of all claims of a change together (0.05)"),
    report_dir: Path | None = typer.Option(None, "--out", metavar="DIR", help="also write report.md/html/json here"),
    store: Path | None = StoreOpt,
) -> None:
    """Compare stored runs or run groups (a regression gate for CI pipelines).

    Runs of one study keep the study's gates, criteria and verdicts; other runs are judged by
    the gates for single runs. Exit codes: 0 every primary verdict EQUIVALENT or BETTER; 1 one
    is WORSE; 2 bad input; 3 one is INCONCLUSIVE (more runs needed); 4 no valid comparison.

    Example: `perflab compare label:before label:after --metric etr_t --out compare/`
    """
    from perflab.catalog.registry import COMPONENT_COMPARED, REGISTRY
    from perflab.report.terminal import render_verdicts
    from perflab.report.write import write_reports
    from perflab.stats.criteria import Criteria
    from perflab.store.atomic import write_json_atomic
    from perflab.store.catalog import Store
    from perflab.study.groups import comparison_document

    criteria = None
    if (margin, confidence, family_alpha) != (None, None, None):
        try:  # --confidence c is --family-alpha 1 - c: one alpha (perflab.stats.criteria)
            criteria = Criteria.from_fields(margin, confidence, family_alpha)
        except ValueError as exc:
            raise InputError(str(exc), field="--margin/--confidence/--family-alpha") from None
    unknown = REGISTRY.unknown_keys(metric or [], COMPONENT_COMPARED)
    if unknown:
        raise InputError(f"unknown metric key {unknown[0]!r}: `perflab metrics` lists the keys", field="--metric")
    doc = comparison_document(Store(store), a, b, criteria, primary=list(metric) if metric else None)
    render_verdicts(doc, err)
    if report_dir is not None:
        report_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(report_dir / "study.json", doc.dump())
        for kind, path in write_reports(doc, report_dir).items():
            err.print(f"{kind}: {escape(path)}")
    raise typer.Exit(doc.verdict.exit_code if doc.verdict is not None else EXIT_NO_COMPARISON)


@app.command()
def accuracy(
    quick: bool = typer.Option(False, "--quick", help="short windows: a smoke check, not the published table; with "
                               "--studies: this host's duet bound for SQLite in about 15 minutes"),
    output: Path = typer.Option(Path("docs/accuracy.md"), "--out", metavar="FILE", help="where to write the table"),
    studies: bool = typer.Option(False, "--studies", help="run the study arrangements against known truths instead "
                                 "(hours, resumable), fit this host's bias bounds into the run store and write "
                                 "their section of the page"),
    check: bool = typer.Option(False, "--check", help="with --studies: fresh studies with this host's bound on, "
                               "never used to fit it: the bound's test (coverage, A/A, power)"),
    cases: str | None = typer.Option(None, "--cases", help="with --studies: the known-cost systems "
                                     "(default synthetic,sqlite,postgres; --quick: sqlite)"),
    arrangements: str | None = typer.Option(None, "--arrangements",
                                            help="with --studies: the arrangements to measure (default "
                                                 "one-at-a-time,duet,split-duet; --quick: duet)"),
    effects: str | None = typer.Option(None, "--effects", help="with --studies: added CPU per transaction, percent "
                                       "(default 0,3,5,10; --quick: 0,10; --check: 0,1,5)"),
    repeats: int | None = typer.Option(None, "--repeats", help="with --studies: studies per cell (default 2; --quick "
                                       "3)"),
    blocks: int | None = typer.Option(None, "--blocks", help="with --studies: blocks per study (default 6)"),
    session: str | None = typer.Option(None, "--session", help="with --studies: the session's name (default: today); "
                                       "a session goes on where it stopped"),
    self_calibration: str | None = typer.Option(None, "--self-calibration", help="with --studies: the pairs' own bias "
                                                "measurement in knob blocks: auto, on, off (default off; --check: auto, "
                                                "which takes this host's bound where it has one)"),
    results: Path = typer.Option(Path("docs/accuracy-studies.jsonl"), "--results", metavar="FILE",
                                 help="with --studies: where each study's result is appended (and read back)"),
    examples: Path = typer.Option(Path("examples"), "--examples", metavar="DIR",
                                  help="with --studies: the checkout's examples directory"),
    summary_only: bool = typer.Option(False, "--summary-only", help="with --studies: run nothing; fit the bounds and "
                                      "rewrite the section from the results file"),
    keep: Path | None = typer.Option(None, "--keep", metavar="PAGE", help="store each run's report (with --studies: "
                                     "each study's) beside PAGE (for docs/accuracy.md: docs/reports/ID/), as the page's "
                                     "citations need"),
    store: Path | None = StoreOpt,
) -> None:
    """Measure perflab against systems of known cost; write docs/accuracy.md.

    Without --studies: the known-cost synthetic SUT at 20-90% utilization (the metrics). With
    --studies: repeated studies of known added costs in every arrangement (the designs: their
    bias, coverage, false claims and power); this host's bias bound per arrangement and target
    kind is fitted from them and kept in the run store (--store), where the studies of this
    host read it.

    Example: `perflab accuracy --quick --out /tmp/accuracy.md`;
    `perflab accuracy --studies --quick`; `perflab accuracy --studies --check --repeats 20`
    """
    from perflab.accuracy.page import write_metrics_page, write_studies_section
    from perflab.store.catalog import Store

    def say(text: str) -> None:
        err.print(escape(text))

    if studies:
        plan = StudyPlanOptions(quick, check, cases, arrangements, effects, repeats, blocks, session,
                                self_calibration, keep).plan()
        try:
            text = write_studies_section(Store(store), output, plan, results, examples, summary_only, say)
        except KeyboardInterrupt:
            err.print(f"stopped: what was measured is in {escape(results)}; the same command goes on where it stopped")
            raise typer.Exit(EXIT_INTERRUPTED) from None
    else:
        if keep is not None and not keep.is_file():
            raise InputError("the page to keep the runs' reports beside does not exist", file=keep, field="--keep")
        text = write_metrics_page(Store(store), output, quick, say, keep)
    out.print(text, markup=False)
    err.print(f"written: {escape(output)}")


@dataclass(frozen=True)
class StudyPlanOptions:
    """`perflab accuracy --studies`'s plan as the command line gives it (None: the mode's default)."""

    quick: bool
    check: bool
    cases: str | None
    arrangements: str | None
    effects: str | None
    repeats: int | None
    blocks: int | None
    session: str | None
    self_calibration: str | None = None
    keep: Path | None = None

    def plan(self) -> Any:
        from perflab.accuracy.experiment import CHECK, QUICK, Plan

        base = QUICK if self.quick else (CHECK if self.check else Plan())
        try:
            effect_values = (tuple(float(e) / 100.0 for e in self.effects.split(",") if e.strip())
                             if self.effects is not None else base.effects)
        except ValueError:
            raise InputError(f"expected percentages such as 0,3,5,10, got {self.effects!r}", field="--effects") from None
        known = ("one-at-a-time", "duet", "split-duet", "interleaved")
        chosen = (tuple(a.strip() for a in self.arrangements.split(",") if a.strip())
                  if self.arrangements is not None else base.arrangements)
        if not chosen or any(a not in known for a in chosen):
            raise InputError(f"expected some of {', '.join(known)}, got {self.arrangements!r}", field="--arrangements")
        repeats = base.repeats if self.repeats is None else self.repeats
        blocks = base.blocks if self.blocks is None else self.blocks
        if repeats < 1 or blocks < 3:
            raise InputError("expected --repeats of 1 or more and --blocks of 3 or more", field="--repeats/--blocks")
        cases = (tuple(c.strip() for c in self.cases.split(",") if c.strip()) if self.cases is not None
                 else base.cases)
        calibration = self.self_calibration or base.self_calibration
        if calibration not in ("auto", "on", "off"):
            raise InputError(f"expected auto, on or off, got {calibration!r}", field="--self-calibration")
        return dataclasses.replace(base, cases=cases, arrangements=chosen, effects=effect_values, repeats=repeats,
                                   blocks=blocks, role="check" if self.check else "fit", session=self.session or "",
                                   self_calibration=cast(Literal["auto", "on", "off"], calibration), keep=self.keep)


@app.command()
def bounds(store: Path | None = StoreOpt) -> None:
    """This host's bias bounds: what a duet's or split duet's intervals are widened by here.

    A bound is measured on the machine it applies to (`perflab accuracy --studies --quick`) and
    kept in the run store; a study on a host without one measures its own where it can (knob
    blocks) and says so. Example: `perflab bounds --store perflab-runs`
    """
    from perflab.records.bias import HostIdentity
    from perflab.store.bias import bounds_path, read_bounds
    from perflab.store.catalog import Store
    from perflab.sut.fingerprint import machine_fingerprint

    home = Store(store).home
    host = HostIdentity.of(machine_fingerprint())
    stored = read_bounds(home, host)
    out.print(f"this host: {escape(host.describe())} ({escape(bounds_path(home, host))})")
    if stored is None or not stored.bounds:
        out.print("no bias bound measured here: a duet or split duet measures its own in knob blocks where perflab "
                  "can add a known cost (SQLite, python, PostgreSQL perflab starts), else states its own interval. "
                  "`perflab accuracy --studies --quick` measures this host's duet bound for SQLite in about 15 "
                  "minutes (--cases, --arrangements for others).")
        return
    for b in stored.bounds:
        out.print(f"{b.arrangement} on {b.target}: k {b.k_low:+.3f} to {b.k_high:+.3f}, a {100 * b.a_low:+.2f} to "
                  f"{100 * b.a_high:+.2f} points, a {100 * b.level:g}% prediction for the next study, from "
                  f"{b.fit.studies} studies over {len(set(b.days))} day(s) ({', '.join(sorted(set(b.days)))})")


@app.command()
def metrics(
    markdown: bool = typer.Option(False, "--markdown", help="the reference as Markdown (docs/metrics.md)"),
) -> None:
    """List the metric catalog: labels, keys, units, sources, formulas.

    Example: `perflab metrics --markdown > metrics.md`
    """
    from perflab.report.metric_reference import render_metric_reference, render_metric_table

    if markdown:
        print(render_metric_reference(), end="")
    else:
        out.print(render_metric_table())


@app.command()
def derive(
    table: Path = typer.Argument(..., help="a published measurement table (seed-table CSV format)"),
    check: bool = typer.Option(False, "--check", help="exit 1 when a derivable row disagrees beyond rounding"),
) -> None:
    """Recompute a published table's derived rows with perflab's formulas.

    Example: `perflab derive tests/capacity/data/06-t31-processor-capacity-9021.csv --check`
    """
    from perflab.derive.command import run_derive

    raise typer.Exit(run_derive(table, check, out))


@app.command()
def page(
    page_file: Path = typer.Argument(..., metavar="PAGE", help="a page of the docs (Markdown)"),
    write: bool = typer.Option(False, "--write", help="rewrite the page's tables from its stored reports"),
    run: bool = typer.Option(False, "--run", help="run the page's studies and suites, show each table beside "
                             "the page's"),
    sources: list[Path] = typer.Option([], "--from", metavar="DIR", help="a study or suite directory already run "
                                       "(repeatable): show its tables beside the page's"),
    keep: bool = typer.Option(False, "--keep", help="with --run or --from: store the reports beside the page "
                              "and make the page's tables from them"),
    measurement: str | None = MeasurementOpt,
    stabilization: str | None = StabilizationOpt,
    blocks: int | None = typer.Option(None, "--blocks", help="with --run: override the number of blocks"),
    store: Path | None = StoreOpt,
) -> None:
    """A page's measured tables: made again from its stored reports, or beside a rerun of it.

    Exit codes: 0 the page agrees with its stored reports (or was rewritten, or a rerun was
    shown), 1 its tables differ (--write rewrites them), 2 bad input.

    Example: `perflab page docs/case-studies/durable-writes.md --run`
    """
    from perflab.report.book.page_command import run_page

    options = [flag for name, value in (("--measurement", measurement), ("--stabilization", stabilization),
                                        ("--blocks", str(blocks) if blocks is not None else None))
               if value is not None for flag in (name, value)]
    raise typer.Exit(run_page(page_file, write=write, run=run, sources=sources, keep=keep, store=store,
                              options=options, out=out, err=err))


@app.command()
def book(
    sources: list[str] = typer.Argument(..., metavar="SOURCE...", help="study or suite directories, stored ids, "
                                        "or a directory holding reports/ (docs/case-studies: every stored report)"),
    output: Path = typer.Option(Path("book"), "--out", metavar="DIR", help="where book.md, book.html and book.pdf "
                                "go"),
    title: str | None = typer.Option(None, "--title", help="the book's title (default: from its studies)"),
    pdf: bool = typer.Option(True, "--pdf/--no-pdf", help="also print book.pdf where a browser (chromium) is "
                             "installed"),
    store: Path | None = StoreOpt,
) -> None:
    """Bind several studies, or a suite, into one report in the seeds' form: a title page, the
    key findings (one line per comparison: the change, the verdict, the interval), a chapter per
    study (workload, configuration, hardware and software, discussion, tables, charts), a glossary.

    Example: `perflab book docs/case-studies --out book/` (the case studies from their stored reports)
    """
    from perflab.report.book.book import Sources, assemble
    from perflab.report.book.page_command import library_for
    from perflab.report.book.render import write_book
    from perflab.store.catalog import store_home

    docs = Path.cwd() / "docs"
    library = library_for(docs / "README.md") if docs.is_dir() else None
    made = assemble(sources, Sources(store_home(store), library), title)
    paths, missing = write_book(made, output, pdf=pdf)
    for note in made.notes + missing:
        err.print(f"note: {escape(note)}", highlight=False)
    for kind, path in paths.items():
        err.print(f"{kind}: {escape(path)}", highlight=False)
    out.print(str(output), soft_wrap=True, highlight=False, markup=False)


app.command("serve")(serve_command)
app.command("history")(history_command)
app.command("bisect")(bisect_command)
app.command("agent")(agent_command)


def main() -> None:
    """Entry point: one clear line and exit 2 for bad input; never a traceback for it.

    typer runs in click's non-standalone mode, so its usage errors (unknown option, missing
    argument, a bad value) come here as exceptions and are printed as one line
    (`perflab run: no such option: --x (perflab run --help)`) instead of a multi-line box.
    """
    try:   # typer >= 0.22 carries its own copy of click
        from typer._click import exceptions as click_errors
    except ImportError:
        from click import exceptions as click_errors  # type: ignore[no-redef]  # the same module, older typer

    try:
        code = app(prog_name="perflab", standalone_mode=False)
    except click_errors.NoArgsIsHelpError:
        sys.exit(EXIT_USAGE)   # typer has printed the help (stdout), as before
    except click_errors.ClickException as exc:
        err.print(escape(_usage_line(exc)), highlight=False, soft_wrap=True)
        sys.exit(EXIT_USAGE)
    except typer.Abort:
        err.print("Aborted!", markup=False, highlight=False)
        sys.exit(EXIT_FAILED)
    except InputError as exc:
        err.print(f"[red]error:[/red] {escape(exc)}", highlight=False, soft_wrap=True)
        sys.exit(EXIT_USAGE)
    except SutFailure as exc:
        err.print(f"[red]SUT failure:[/red] {escape(exc)}", highlight=False)
        sys.exit(EXIT_FAILED)
    sys.exit(code if isinstance(code, int) and not isinstance(code, bool) else EXIT_OK)


def _usage_line(exc) -> str:
    """A click error as one line: `COMMAND: message (COMMAND --help)`."""
    message = " ".join(str(exc.format_message()).split()) or type(exc).__name__
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return f"perflab: {message}"
    message = message[:1].lower() + message[1:]
    return f"{ctx.command_path}: {message} ({ctx.command_path} --help)"


