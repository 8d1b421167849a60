"""A report book: several studies, or a suite, bound into one document in the seeds' form.

The seeds are books, not single reports: a title page, a summary of the key findings up front,
then a chapter per measurement (workload, configuration, hardware and software, measurement
discussion, tables, charts), and a glossary. `Book` is that document as data; render.py prints
it as Markdown and as self-contained HTML. Each chapter is a study's report as perflab already
renders it (report/view.py's StudyView, report/markdown.py, the HTML report's body): the book adds
the binding -- title page, contents, findings, glossary -- and renders no study itself.

A chapter comes from a study's record (study.json, or report.json kept beside a page), from a
suite (its LSPR table first, then a chapter per workload's study), or, for a report kept before
records were, from its report.md alone (its text, and its General Observations' first claim as
its finding).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

from perflab.errors import InputError
from perflab.records.study import StudyDocument, read_study_document
from perflab.records.suite import SuiteDocument, read_suite_document
from perflab.report import numbers as fmt
from perflab.report.book.layout import ID, REPORT_JSON, REPORT_MD, REPORTS, SUITE_JSON, Library
from perflab.report.discussion import headline
from perflab.report.view import StudyView, interval_cell, study_view, verdict_cell


@dataclass(frozen=True)
class Finding:
    """One line of the summary: the change, the verdict, the interval that decided it."""
    change: str
    metric: str
    verdict: str
    interval: str


@dataclass
class Chapter:
    number: int
    id: str
    title: str
    findings: list[Finding]
    study: StudyDocument | None = None        # a chapter from a record
    suite: SuiteDocument | None = None        # a suite's LSPR table
    markdown: str | None = None               # a report kept as Markdown only
    source: str = ""                          # where it was read from

    @property
    def anchor(self) -> str:
        return f"chapter-{self.number}"

    def view(self) -> StudyView | None:
        return study_view(self.study) if self.study is not None else None


@dataclass
class Book:
    title: str
    subtitle: str
    created: str
    chapters: list[Chapter] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def metric_keys(self) -> list[str]:
        """The metrics the book's studies compare, for the glossary."""
        keys: list[str] = []
        for chapter in self.chapters:
            if chapter.study is not None:
                keys += [e.key for c in chapter.study.comparisons for e in c.metrics]
            if chapter.suite is not None:
                keys += [r.key for r in chapter.suite.average]
        return list(dict.fromkeys(keys))


# -- findings ------------------------------------------------------------------------------------

def study_findings(study: StudyDocument) -> list[Finding]:
    """One finding per comparison: its headline metric (the first primary), ratio, the interval
    that decided the verdict, and the verdict."""
    found = []
    for comparison in study.comparisons:
        entry = headline(study, comparison)
        change = f"{comparison.base} → {comparison.new}"
        if entry is None:
            found.append(Finding(change, fmt.NA, "no comparison", fmt.NA))
            continue
        ratio = fmt.ratio(entry.ratio, entry) if entry.ratio is not None else fmt.NA
        found.append(Finding(change, fmt.label_of(entry.key, entry), verdict_cell(entry),
                             f"{ratio} {interval_cell(study, entry)}"))
    if not found:
        what = f"a sweep of {study.sweep.factor}" if study.sweep is not None else "no comparison"
        found.append(Finding(study.title, fmt.NA, what, fmt.NA))
    return found


def suite_findings(suite: SuiteDocument) -> list[Finding]:
    found = []
    for row in suite.average[:1]:
        if row.ratio is None or row.ci_low is None or row.ci_high is None:
            found.append(Finding(f"{suite.base} → {suite.new}, average of {len(suite.members)} workloads",
                                 row.label, f"na: {row.reason}", fmt.NA))
            continue
        found.append(Finding(f"{suite.base} → {suite.new}, average of {len(suite.members)} workloads", row.label,
                             row.verdict or "no verdict",
                             f"{fmt.pct(row.ratio - 1.0)} [{fmt.pct(row.ci_low - 1.0)}, {fmt.pct(row.ci_high - 1.0)}]"))
    return found


_OBSERVATION = re.compile(r"^## General Observations\s*\n+\*\*(?P<title>.+?)\.\*\* (?P<text>[^\n]+)", re.M)
_TITLE = re.compile(r"^# (.+)$", re.M)
#: "ELAPSED (T) decreased by 58% [...]": the row a generated observation opens with.
_METRIC = re.compile(r"^(.+?) (?:increased|decreased|changed|rose|fell|was|did not change)\b")


def markdown_findings(text: str) -> list[Finding]:
    """A report kept as Markdown only: the first General Observation's change and first sentence."""
    match = _OBSERVATION.search(text)
    if match is None:
        return [Finding("(see the chapter)", fmt.NA, "na", fmt.NA)]
    text = match.group("text")
    metric = _METRIC.match(text)
    verdict = re.search(r"\b(BETTER|WORSE|EQUIVALENT|INCONCLUSIVE)\b", text)
    interval = re.search(r"\[([^\]]+?)\\?\]", text)
    return [Finding(match.group("title").replace("\\", ""), metric.group(1).replace("\\", "") if metric else fmt.NA,
                    verdict.group(1) if verdict else "na", f"[{interval.group(1)}]" if interval else fmt.NA)]


# -- sources -------------------------------------------------------------------------------------

@dataclass
class Sources:
    """Where the book's chapters are read from: a perflab store and the repository's stored reports."""
    store: Path | None
    library: Library | None

    def study_dir(self, id_: str) -> Path | None:
        if self.library is not None and self.library.find(id_) is not None:
            return self.library.reports[id_].directory
        if self.store is not None:
            for kind in ("studies", "suites"):
                if (self.store / kind / id_).is_dir():
                    return self.store / kind / id_
        return None


def _record_dir(path: Path) -> str | None:
    if (path / SUITE_JSON).is_file():
        return "suite"
    if (path / "study.json").is_file() or (path / REPORT_JSON).is_file():
        return "study"
    if (path / REPORT_MD).is_file():
        return "markdown"
    return None


def _read_study(path: Path) -> StudyDocument:
    return read_study_document(path if (path / "study.json").is_file() else path / REPORT_JSON)


def expand(arguments: list[str], sources: Sources) -> list[Path]:
    """Each argument as the study or suite directories it names, in order: a directory of one
    (a store's studies/ID, a stored reports/ID), a directory holding reports/ (every stored report
    under it, in id order: the case studies), or an id (stored in the repository or the store)."""
    found: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir() and _record_dir(path):
            found.append(path)
        elif path.is_dir() and (path / REPORTS).is_dir():
            found += sorted(d for d in (path / REPORTS).iterdir() if d.is_dir() and ID.fullmatch(d.name)
                            and _record_dir(d))
        elif ID.fullmatch(argument) and sources.study_dir(argument) is not None:
            found.append(sources.study_dir(argument))          # type: ignore[arg-type]
        else:
            raise InputError("not a study or suite directory, a directory of stored reports, or a stored id",
                             file=argument)
    return list(dict.fromkeys(found))


def assemble(arguments: list[str], sources: Sources, title: str | None = None) -> Book:
    directories = expand(arguments, sources)
    if not directories:
        raise InputError("no study or suite to bind: give study or suite directories, ids, or a directory "
                         "holding reports/", field="SOURCE")
    chapters: list[Chapter] = []
    notes: list[str] = []
    taken: set[str] = set()
    for directory in directories:
        kind = _record_dir(directory)
        if kind == "suite":
            suite = read_suite_document(directory)
            chapters.append(Chapter(len(chapters) + 1, suite.suite_id, suite.title or suite.name,
                                    suite_findings(suite), suite=suite, source=str(directory)))
            taken.add(suite.suite_id)
            for member in suite.members:
                where = sources.study_dir(member.study_id) if member.study_id else None
                if where is None and member.study_id:
                    sibling = directory.parent.parent / "studies" / member.study_id
                    where = sibling if sibling.is_dir() else directory.parent / member.study_id
                if where is None or not where.is_dir() or _record_dir(where) != "study":
                    notes.append(f"{suite.suite_id}: the study of {member.name} ({member.study_id or 'not run'}) "
                                 "is not stored: no chapter")
                    continue
                study = _read_study(where)
                if (study.study_id or where.name) in taken:
                    continue
                taken.add(study.study_id or where.name)
                chapters.append(Chapter(len(chapters) + 1, study.study_id or where.name,
                                        f"{member.name}: {study.title}", study_findings(study), study=study,
                                        source=str(where)))
        elif kind == "study":
            study = _read_study(directory)
            if (study.study_id or directory.name) in taken:
                continue
            taken.add(study.study_id or directory.name)
            chapters.append(Chapter(len(chapters) + 1, study.study_id or directory.name, study.title,
                                    study_findings(study), study=study, source=str(directory)))
        else:
            text = (directory / REPORT_MD).read_text(encoding="utf-8")
            heading = _TITLE.search(text)
            chapters.append(Chapter(len(chapters) + 1, directory.name, heading.group(1) if heading else directory.name,
                                    markdown_findings(text), markdown=text, source=str(directory)))
            taken.add(directory.name)
            notes.append(f"{directory.name}: kept as Markdown only (no record): its chapter is its report as "
                         "written, its finding read from its General Observations")
    subtitle = (f"{len(chapters)} chapters: " + ", ".join(c.id for c in chapters)) if chapters else ""
    made = Book(title or _title(chapters), subtitle, dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                chapters, notes)
    return made


def _title(chapters: list[Chapter]) -> str:
    if len(chapters) == 1:
        return chapters[0].title
    suites = [c for c in chapters if c.suite is not None]
    if suites:
        return f"{suites[0].title}: a performance report"
    return "perflab performance report"
