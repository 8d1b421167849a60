"""Writing the reports of a study: one exporter per format behind one small interface.

An exporter knows its file name and turns a study dict into text; `write_reports` renders all of
them first and only then writes, each file atomically (temporary file, fsync, rename), so a
failure while rendering leaves the previous reports in place and a reader never sees half a
file. A new format is one more entry in EXPORTERS.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from perflab.records.study import StudyDocument
from perflab.report.html import render_html
from perflab.report.json_export import render_json
from perflab.report.markdown import render_markdown
from perflab.store.atomic import write_atomic


@dataclass(frozen=True)
class Exporter:
    format: str                                     # the key write_reports returns the path under
    filename: str
    render: Callable[[StudyDocument], str]


EXPORTERS: tuple[Exporter, ...] = (
    Exporter("markdown", "report.md", render_markdown),
    Exporter("html", "report.html", render_html),
    Exporter("json", "report.json", render_json),
)


def write_reports(study: StudyDocument, directory: Path,
                  exporters: tuple[Exporter, ...] = EXPORTERS) -> dict[str, Path]:
    """Write report.md, report.html and report.json into `directory`; return {format: path}."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    texts = {e.format: e.render(study) for e in exporters}
    paths: dict[str, Path] = {}
    for exporter in exporters:
        path = directory / exporter.filename
        text = texts[exporter.format]
        def write(tmp: Path, text: str = text) -> None:
            tmp.write_text(text, encoding="utf-8")

        write_atomic(path, write)
        paths[exporter.format] = path
    return paths
