"""`perflab page PAGE`: a page's measured tables from its stored reports, or beside a rerun.

* `perflab page PAGE` makes every table block again from the stored reports and says whether the
  page agrees with them (exit 0) or not (exit 1; `--write` rewrites the blocks);
* `perflab page PAGE --run` runs the studies and suites the page's marker names, exactly as
  `perflab study` / `perflab suite` would (the same command, in a child process, its progress on
  the terminal), and prints each of the page's tables beside the rerun's: the page's row, then
  yours;
* `--from DIR` does the same with studies or suites already run (their store directories);
* `--keep` stores the rerun's reports beside the page (layout.py) and points the page's tables at
  them: the page's tables are then the rerun's, and the prose is the author's to update.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from perflab.errors import InputError
from perflab.records.study import read_study_document
from perflab.records.suite import SuiteDocument, read_suite_document
from perflab.report.book.layout import SUITE_JSON, Library, keep_report
from perflab.report.book.page import Page, Record, point_at, read_page, regenerate, same_file, side_by_side
from perflab.report.book.tables import make_table
from perflab.safe_text import terminal
from perflab.store.atomic import write_atomic

#: `perflab study` and `perflab suite` exit with these after a complete run (a verdict, or no
#: comparison): a rerun that ended so has reports to show.
_FINISHED = (0, 1, 3, 4)


def checkout_of(page: Path) -> Path:
    """The checkout a page belongs to (the directory holding docs/), else the page's directory."""
    path = Path(page).resolve()
    for parent in path.parents:
        if (parent / "docs").is_dir():
            return parent
    return path.parent


def library_for(page: Path) -> Library:
    root = checkout_of(page)
    return Library.scan(root / "docs" if (root / "docs").is_dir() else root)


def load_record(directory: Path) -> tuple[str, str, Record]:
    """(id, its study or suite file, the record) of a store's study or suite directory."""
    directory = Path(directory)
    if (directory / SUITE_JSON).is_file():
        suite = read_suite_document(directory)
        return suite.suite_id, suite.suite_path, suite
    study = read_study_document(directory)
    return study.study_id or directory.name, study.study_path or "", study


def rerun(page: Page, store: Path | None, options: list[str], err: Console) -> list[Path]:
    """Run the page's studies and suites as `perflab study|suite FILE` would; their directories."""
    if not page.reruns:
        raise InputError("the page names no study or suite to rerun: expected a marker "
                         "`<!-- perflab page: study FILE -->` at its top", file=page.path)
    checkout = checkout_of(page.path)
    made = []
    for item in page.reruns:
        command = [sys.executable, "-m", "perflab.cli", item.kind, item.file, *options]
        if store is not None:
            command += ["--store", str(store)]
        err.print(f"rerun: {terminal(item.command())} {terminal(' '.join(options))}", highlight=False)
        done = subprocess.run(command, cwd=checkout, stdout=subprocess.PIPE, text=True)
        printed = [line for line in done.stdout.splitlines() if line.strip()]
        if done.returncode not in _FINISHED or not printed or not Path(printed[-1]).is_dir():
            raise InputError(f"`{item.command()}` ended with exit code {done.returncode} and no report directory",
                             file=page.path)
        made.append(Path(printed[-1]))
    return made


def show(tables: list, console: Console) -> None:
    for title, made in tables:
        shown = Table(title=terminal(title), title_justify="left")
        for column in made.columns:
            shown.add_column(terminal(column))
        for row in made.rows:
            shown.add_row(*(terminal(c) for c in row))
        console.print(shown)


def run_page(path: Path, *, write: bool, run: bool, sources: list[Path], keep: bool, store: Path | None,
             options: list[str], out: Console, err: Console) -> int:
    page = read_page(path)
    library = library_for(page.path)
    directories = list(sources) + (rerun(page, store, options, err) if run else [])
    if keep and not directories:
        raise InputError("--keep stores a rerun's reports: give --run or --from DIR", field="--keep")
    if directories:
        yours = {}
        for directory in directories:
            id_, file, record = load_record(directory)
            yours[file or id_] = (id_, record)
        show(side_by_side(page, library, yours), out)
        # A rerun no table of the page names (a page whose tables are still typed): its own
        # comparison of the primary metrics, so the reader has the rerun's answer to set beside
        # the page's prose.
        tabled = [b.file for b in page.blocks]
        for file, (id_, record) in yours.items():
            if not any(same_file(t, file) for t in tabled):
                kind = "suite" if isinstance(record, SuiteDocument) else "comparison"
                show([(f"yours: {id_} ({file}; no table of the page names it)", make_table(kind, record, []))], out)
        if not keep:
            return 0
        kept = {}
        for directory in directories:
            stored = keep_report(directory, page.path)
            id_, file, _ = load_record(directory)
            kept[file] = stored.id
            err.print(f"kept: {terminal(stored.directory)}", highlight=False)
        page = point_at(page, kept)
        library = library_for(page.path)
        write = True
    text = regenerate(page, library)
    if text == page.text:
        err.print(f"{terminal(page.path)}: its {len(page.blocks)} tables agree with the stored reports",
                  highlight=False)
        return 0
    if write:
        write_atomic(page.path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        err.print(f"written: {terminal(page.path)} ({len(page.blocks)} tables from the stored reports)",
                  highlight=False)
        return 0
    err.print(f"{terminal(page.path)}: its tables differ from the stored reports (--write rewrites them)",
              highlight=False)
    return 1
