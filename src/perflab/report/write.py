"""Writing reports: one exporter per format behind one small interface, for every document.

An exporter knows its format, its file name and how a document becomes its text; a study (its
report.md, report.html, report.json), a run (report/run/export.py) and a book (report/book/)
each have a tuple of them. `write_exports` renders every format first and only then writes,
each file atomically (store/atomic.py: temporary file, fsync, rename), so a failure while
rendering leaves the previous reports in place and a reader never sees half a file. A new
format is one more entry in a document's tuple; the escaping is the format's own writer's
(report/markdown.py, report/html.py's environment, report/json_export.py's `dumps`), shared by
every document.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from perflab.records.study import StudyDocument
from perflab.report.html import render_html
from perflab.report.json_export import render_json
from perflab.report.markdown import render_markdown
from perflab.store.atomic import write_atomic

D = TypeVar("D")


@dataclass(frozen=True)
class Exporter(Generic[D]):
    format: str                                     # the key write_exports returns the path under
    filename: str
    render: Callable[[D], str]

    @property
    def suffix(self) -> str:
        """The file name's extension ("md", "html", "json"): the dashboard's URLs name it."""
        return self.filename.rsplit(".", 1)[-1]


def write_exports(doc: D, directory: Path, exporters: Sequence[Exporter[D]]) -> dict[str, Path]:
    """Render `doc` in every format, then write each file into `directory` atomically; return
    {format: path}."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    texts = {e.format: e.render(doc) for e in exporters}
    paths: dict[str, Path] = {}
    for exporter in exporters:
        path = directory / exporter.filename
        text = texts[exporter.format]

        def write(tmp: Path, text: str = text) -> None:
            tmp.write_text(text, encoding="utf-8")

        write_atomic(path, write)
        paths[exporter.format] = path
    return paths


#: A study's reports.
EXPORTERS: tuple[Exporter[StudyDocument], ...] = (
    Exporter("markdown", "report.md", render_markdown),
    Exporter("html", "report.html", render_html),
    Exporter("json", "report.json", render_json),
)


def write_reports(study: StudyDocument, directory: Path,
                  exporters: Sequence[Exporter[StudyDocument]] = EXPORTERS) -> dict[str, Path]:
    """Write report.md, report.html and report.json into `directory`; return {format: path}."""
    return write_exports(study, directory, exporters)
