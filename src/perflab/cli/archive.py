"""`perflab archive export` and `perflab archive import`: a team's runs brought into one store
(perflab.store.archive; docs/history.md, "A team's history"). Parsing and dispatch only."""

from __future__ import annotations

from pathlib import Path

import typer

from perflab.cli.options import MARKUP_MODE, PerflabGroup, StoreOpt
from perflab.errors import EXIT_FAILED
from perflab.safe_text import console
from perflab.safe_text import terminal as escape

archive_app = typer.Typer(cls=PerflabGroup, rich_markup_mode=MARKUP_MODE, no_args_is_help=True,
                          help="Move runs between stores: export them (with their files and studies) into a tar "
                               "archive on one machine, import it into another.")
out = console()
err = console(stderr=True)


@archive_app.command("export")
def export_command(
    file: Path = typer.Argument(..., metavar="FILE", help="the archive to write: .tar, .tar.gz or .tgz"),
    run: list[str] | None = typer.Option(None, "--run", metavar="RUN", help="a run id or unique prefix (repeatable; "
                                         "default: every finished run)"),
    workload: str | None = typer.Option(None, "--workload", help="only this workload's runs"),
    since: str | None = typer.Option(None, "--since", metavar="WHEN", help="only runs started at or after this date or "
                                     "time (ISO 8601: 2026-12-01, 2026-12-01T08:00)"),
    store: Path | None = StoreOpt,
) -> None:
    """Write the store's finished runs (their directories whole), the studies they belong to and a
    manifest of every file's checksum into one archive.

    Example: `perflab archive export lab-2.tar --since 2026-12-01`
    """
    from perflab.store.archive import export_archive
    from perflab.store.catalog import Store
    from perflab.sut.fingerprint import machine_fingerprint

    result = export_archive(Store(store), file, run or (), workload, since, source=machine_fingerprint())
    err.print(f"exported {len(result.runs)} runs and {len(result.studies)} studies ({result.bytes:,} bytes)")
    out.print(str(result.path), soft_wrap=True, highlight=False, markup=False)


@archive_app.command("import")
def import_command(
    files: list[Path] = typer.Argument(..., metavar="FILE...", help="archives written by `perflab archive export`"),
    store: Path | None = StoreOpt,
) -> None:
    """Bring archived runs into this store: each checked against its manifest, unpacked and renamed
    into place whole, then indexed and reduced. A run already here is kept: skipped when its files
    are the same, refused when they differ. The history keeps each host's runs a series of their own.

    Exit codes: 0 every run imported or already here; 1 a run was refused (the reason is printed); 2
    an archive that cannot be read.

    Example: `perflab archive import lab-1.tar lab-2.tar`
    """
    from perflab.outcome import judge_outcome
    from perflab.reduce.reduce import reduce_run
    from perflab.store.archive import import_archive
    from perflab.store.catalog import CatalogError, Store

    st = Store(store)
    refused = 0
    for file in files:
        result = import_archive(st, file)
        for run_id in result.imported:       # the lists show ETR (T) and the outcome, as after `perflab run`
            try:
                metrics = reduce_run(st.run_dir(run_id))
                assert metrics.record is not None   # reduce_run read run.json
                st.set_etr(run_id, metrics.values.get("etr_t"), judge_outcome(metrics.record, metrics))
            except (CatalogError, Exception) as exc:  # noqa: BLE001 -- a run that cannot be reduced stays listed
                err.print(f"[yellow]note:[/yellow] {escape(run_id)}: not reduced ({escape(exc)})", soft_wrap=True)
        err.print(f"{escape(file)}: {len(result.imported)} runs imported, {len(result.same)} already here, "
                  f"{len(result.refused)} refused; {len(result.studies)} studies", highlight=False)
        for run_id, why in result.refused:
            err.print(f"  [red]refused[/red] {escape(run_id)}: {escape(why)}", soft_wrap=True, highlight=False)
        refused += len(result.refused)
        for run_id in result.imported:
            out.print(run_id, soft_wrap=True, highlight=False, markup=False)
    if refused:
        raise typer.Exit(EXIT_FAILED)
