"""`perflab accuracy`'s two jobs, each writing the page (docs/accuracy.md by default) at the
path it is given: the known-cost metrics (accuracy/metrics.py) or the arrangements' studies of
known added costs and this host's fitted bias bounds (accuracy/experiment.py, summary.py).

A path inside perflab's own installed package is refused: the package is what pip manages (an
upgrade would lose the page, a read-only install would fail after hours of studies), and a page
meant for a checkout's docs/ belongs there.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import perflab
from perflab.errors import InputError

Say = Callable[[str], None]


def check_output(path: Path, option: str) -> Path:
    """`path`, unless it lies inside the installed perflab package: InputError naming `option`."""
    package = Path(perflab.__file__).resolve().parent
    resolved = Path(path).resolve()
    if resolved == package or package in resolved.parents:
        raise InputError(f"{path} is inside the installed perflab package ({package}): give a path of your own "
                         "(a checkout's docs/accuracy.md, or a file anywhere else)", field=option)
    return Path(path)


def write_metrics_page(store: Any, output: Path, quick: bool, say: Say, keep: Path | None = None) -> str:
    """The known-cost synthetic SUT at 20-90% utilization, measured and written into `output`
    (its other experiments' sections kept); the page's text. `keep`: a page beside which each
    run's report is stored (the page cites the runs by id)."""
    from perflab.accuracy.metrics import run_accuracy
    from perflab.accuracy.metrics_doc import render_accuracy, with_kept_sections
    from perflab.store.atomic import write_atomic
    from perflab.sut.fingerprint import machine_fingerprint
    from perflab.sut.placement import resolve_placement

    output = check_output(output, "--out")
    result = run_accuracy(store, quick=quick, on_progress=say)
    if keep is not None:
        from perflab.report.book.layout import keep_run

        for run_id in [level.run_id for level in result["levels"]] + [result["io"]["run_id"]]:
            say(f"kept: {keep_run(store.resolve(run_id), keep).directory}")
    fingerprint = {**machine_fingerprint(), "placement": resolve_placement(None, None).describe()}
    # The runs link to their kept reports when they are kept beside this very page.
    linked = keep is not None and Path(keep).resolve() == Path(output).resolve()
    text = with_kept_sections(render_accuracy(result, fingerprint, linked),
                              output.read_text() if output.is_file() else None)
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(output, lambda tmp: tmp.write_text(text))
    return text


def write_studies_section(store: Any, output: Path, plan: Any, results: Path, examples: Path, summary_only: bool,
                          say: Say) -> str:
    """The studies of the plan (unless `summary_only`), appended to `results`; every host's bias
    bounds fitted from them (this host's kept in its run store); the page's section rewritten in
    `output`; the section's text. KeyboardInterrupt: stopped, what was measured kept in
    `results` (the same call goes on where it stopped)."""
    from perflab.accuracy import render, summary
    from perflab.accuracy.experiment import read_all, run_experiment
    from perflab.records.bias import HostIdentity
    from perflab.store.bias import write_bounds
    from perflab.study.document import now_iso
    from perflab.sut.fingerprint import machine_fingerprint

    output = check_output(output, "--out")
    results = check_output(results, "--results")
    results.parent.mkdir(parents=True, exist_ok=True)
    if not summary_only:
        run_experiment(store, examples, results, plan, on_progress=say)
    knobs, done, truths = read_all(results)
    if not done:
        raise InputError("no accuracy study results yet", file=results)
    here = HostIdentity.of(machine_fingerprint())
    hosts = {HostIdentity.model_validate(r.host).key: HostIdentity.model_validate(r.host) for r in done if r.host}
    bounds = {}
    for host in hosts.values():
        fitted = summary.fit_bounds(done, truths, host.model_dump(mode="json"), measured=now_iso())
        if fitted:
            bounds[host.describe()] = fitted
        if host == here and fitted:
            say(f"this host's bounds ({len(fitted)}): {write_bounds(store.home, here, fitted)}")
    if here.describe() not in bounds:
        say("no bound for this host from these results: a bound needs 4 or more studies of an arrangement and "
            "kind on this host, A/A studies and studies of a change among them")
    table = summary.cells([r for r in done if r.role == "fit"], truths)
    checks = summary.check_rows(done, truths)
    where = (f"Hosts: {'; '.join(h.describe() for h in hosts.values())}." if hosts else
             "Measured before perflab kept each host's bound (perflab 0.2).")
    section = render.render(table, knobs, where, truths, bounds, checks)
    render.write(output, render.with_section(output.read_text() if output.is_file() else "", section))
    return section
