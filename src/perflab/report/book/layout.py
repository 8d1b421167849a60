"""Where a published study's report is kept in the repository, and reading it back.

A number on a page is evidence only if the report it came from is kept (DESIGN.md: "a
published number names the settings, arrangement and host it holds under, its report is stored
in the repository, and one command reruns it"). One layout for every page: a page's reports sit
beside it, one directory per study or suite, named by its id:

    docs/reports/<id>/                 for README.md and the pages in docs/
    docs/case-studies/reports/<id>/    for the case studies
        report.md      the report as perflab wrote it (perflab study / suite)
        report.json    a study's report.json: the study record, every run with its metric rows
        suite.json     a suite's record instead (its studies are directories of their own)
        bisect.json    a bisect's record instead (`perflab bisect`: each step's study kept beside it)
        run.json       a single run's report for a program instead (`perflab run --keep PAGE`: the
                       run's record, gates and every metric, as `perflab show` reduces them)

`keep_report` copies a study's (or suite's) directory from a perflab store into that layout,
`keep_run` writes a single run's reports there (a run's directory in the store holds its data, not
its reports);
`Library` finds every stored report under a root and answers "is this id stored, and where":
a study or suite id by its directory, a run id by the stored report that lists it.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.errors import InputError
from perflab.records.study import StudyDocument, read_study_document
from perflab.records.suite import SuiteDocument, read_suite_document

#: The directory a page's stored reports are in, beside the page.
REPORTS = "reports"
REPORT_MD = "report.md"
REPORT_JSON = "report.json"
SUITE_JSON = "suite.json"
BISECT_JSON = "bisect.json"
RUN_JSON = "run.json"
#: The record each kind of report keeps beside its report.md.
RECORDS = {"suite": SUITE_JSON, "bisect": BISECT_JSON, "run": RUN_JSON, "study": REPORT_JSON}
#: A study, suite or run id as perflab makes them: UTC date and time, the name, 4 hex digits
#: (20261128-003516-sqlite-release-a05c).
ID = re.compile(r"(?<![\w-])(20\d{6}-\d{6}-[a-z0-9][a-z0-9-]*?-[0-9a-f]{4})(?![\w-])")
#: An id shortened on a page to its time and suffix ("…234844…f6bf", "20261126-210530-…-d9a1").
ELIDED = re.compile(r"(?:(20\d{6})-)?…?(\d{6})-?…-?([0-9a-f]{4})(?![\w-])")


def ids_in(text: str) -> list[str]:
    """Every full id in a text, in order, each once."""
    return list(dict.fromkeys(ID.findall(text)))


@dataclass(frozen=True)
class StoredReport:
    """One stored study or suite report: its directory and what it holds."""

    id: str
    directory: Path

    @property
    def markdown(self) -> Path:
        return self.directory / REPORT_MD

    @property
    def kind(self) -> str:
        return _kind_of(self.directory)

    @property
    def record(self) -> Path | None:
        """report.json (a study), suite.json (a suite) or bisect.json (a bisect); None for a report
        kept as Markdown only."""
        path = self.directory / RECORDS[self.kind]
        return path if path.is_file() else None

    def text(self) -> str:
        return self.markdown.read_text(encoding="utf-8") if self.markdown.is_file() else ""

    def study(self) -> StudyDocument:
        if self.kind != "study" or self.record is None:
            raise InputError(f"stored report {self.id} has no {REPORT_JSON}: a study record is needed",
                             file=self.directory)
        return read_study_document(self.record)

    def suite(self) -> SuiteDocument:
        if self.kind != "suite":
            raise InputError(f"stored report {self.id} is not a suite's", file=self.directory)
        return read_suite_document(self.directory / SUITE_JSON)

    def data(self) -> Any:
        """The stored record as plain JSON (None when there is none)."""
        return json.loads(self.record.read_text(encoding="utf-8")) if self.record is not None else None

    def run_ids(self) -> list[str]:
        """The runs (and a suite's studies) this report lists: in its record, else in its text."""
        data = self.data()
        found: list[str] = []
        if isinstance(data, dict):
            found += [str(r.get("run_id")) for r in data.get("runs") or [] if isinstance(r, dict) and r.get("run_id")]
            for key in ("members", "steps"):  # a suite's studies, a bisect's steps
                found += [str(m.get("study_id")) for m in data.get(key) or []
                          if isinstance(m, dict) and m.get("study_id")]
        found += ids_in(self.text())
        return [i for i in dict.fromkeys(found) if i != self.id]


@dataclass
class Library:
    """Every stored report under a root (the repository's docs/), by id."""

    root: Path
    reports: dict[str, StoredReport] = field(default_factory=dict)
    runs: dict[str, list[str]] = field(default_factory=dict)      # run id -> the reports listing it

    @classmethod
    def scan(cls, root: Path) -> Library:
        library = cls(Path(root))
        for holder in sorted(Path(root).rglob(REPORTS)):
            for directory in sorted(holder.iterdir()) if holder.is_dir() else []:
                if directory.is_dir() and ID.fullmatch(directory.name):
                    library.reports[directory.name] = StoredReport(directory.name, directory)
        for report in library.reports.values():
            for run in report.run_ids():
                library.runs.setdefault(run, []).append(report.id)
        return library

    def find(self, id_: str) -> StoredReport | None:
        return self.reports.get(id_)

    def holds(self, id_: str) -> bool:
        """A study or suite stored by its id, or a run a stored report lists."""
        return id_ in self.reports or id_ in self.runs

    def known_ids(self) -> Iterator[str]:
        yield from self.reports
        yield from self.runs

    def expand(self, day: str | None, time: str, suffix: str) -> list[str]:
        """The stored ids an elided citation ("…234844…f6bf") can mean."""
        return sorted({i for i in self.known_ids()
                       if i.endswith(f"-{suffix}") and i[9:15] == time and (day is None or i.startswith(day))})


def _kind_of(directory: Path) -> str:
    """A report directory's kind by the record it holds: a suite's, a bisect's, a run's, else a
    study's."""
    for kind in ("suite", "bisect", "run"):
        if (directory / RECORDS[kind]).is_file():
            return kind
    return "study"


def reports_dir(page: Path) -> Path:
    """Where a page's stored reports go: reports/ beside it (README.md's: docs/reports/)."""
    page = Path(page)
    if (page.parent / "docs").is_dir():         # README.md at the top of the checkout
        return page.parent / "docs" / REPORTS
    return page.parent / REPORTS


def keep_report(source: Path, page: Path) -> StoredReport:
    """Copy a study's, suite's or bisect's report from a perflab store (its directory) beside a page.

    A study keeps report.md and report.json (its run rows inside); a suite keeps report.md and
    suite.json, a bisect report.md and bisect.json, and each of their studies is kept beside them
    the same way (their directories are the store's studies/<id>, next to suites/<id> and
    bisects/<id>). Returns the stored report."""
    source = Path(source)
    kind = _kind_of(source)
    needed = [REPORT_MD, RECORDS[kind]]
    missing = [name for name in needed if not (source / name).is_file()]
    if missing:
        raise InputError(f"not a study, suite or bisect directory with its reports: {', '.join(missing)} missing "
                         "(perflab study, suite and bisect write them)", file=source)
    if not ID.fullmatch(source.name):
        raise InputError("the directory's name is not a study or suite id", file=source)
    target = reports_dir(page) / source.name
    target.mkdir(parents=True, exist_ok=True)
    for name in needed:
        shutil.copyfile(source / name, target / name)
    members: list[str] = []
    if kind == "suite":
        members = [m.study_id for m in read_suite_document(source).members if m.study_id]
    elif kind == "bisect":
        steps = json.loads((source / BISECT_JSON).read_text(encoding="utf-8")).get("steps") or []
        members = [str(step["study_id"]) for step in steps if isinstance(step, dict) and step.get("study_id")]
    for study_id in members:
        studies = source.parent.parent / "studies" / study_id
        if studies.is_dir():
            keep_report(studies, page)
    return StoredReport(source.name, target)


def keep_run(run_dir: Path, page: Path) -> StoredReport:
    """Write a single run's reports beside a page: report.md as `perflab show` prints it and
    run.json (the run's record, gates and every reduced metric), from the run's directory in a
    store. A run is kept whatever its outcome: a failed or invalid run's report says so."""
    from perflab.report.run.export import render_json, render_markdown
    from perflab.report.run.model import build_report, study_of
    from perflab.store.atomic import write_atomic

    run_dir = Path(run_dir)
    if not (run_dir / RUN_JSON).is_file():
        raise InputError(f"not a run directory: no {RUN_JSON} (perflab run writes it)", file=run_dir)
    if not ID.fullmatch(run_dir.name):
        raise InputError("the directory's name is not a run id", file=run_dir)
    report = build_report(run_dir, study_of(run_dir), charts=False)
    target = reports_dir(page) / run_dir.name
    target.mkdir(parents=True, exist_ok=True)
    for name, text in ((REPORT_MD, render_markdown(report)), (RUN_JSON, render_json(report))):
        write_atomic(target / name, functools.partial(Path.write_text, data=text, encoding="utf-8"))
    return StoredReport(run_dir.name, target)
