"""Where capacity planning reads its inputs: a stored study's study.json.

`read_study` is the one place that opens a study document: through the StudyDocument model
(perflab.records.study), so older formats are upgraded and a malformed file is one clear error.
Capacity's code reads the model's attributes (docs/architecture.md); the one thing it needs that
the record does not carry -- the file the document came from, for error messages -- travels
beside it in a `StudySource`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perflab.errors import InputError
from perflab.records.study import StudyDocument, read_study_document
from perflab.store.catalog import is_plain_name, store_home


@dataclass(frozen=True)
class StudySource:
    """A study document and the study.json it was read from (None: built in memory -- a report's
    own document, a `runs:A..B` comparison). Every capacity model that reads a study takes one."""

    document: StudyDocument
    path: Path | None = None


def study_json_path(ref: str | Path, store: str | Path | None = None) -> Path:
    """The study.json that *ref* names: a study.json file, a study directory (or a study's report
    directory kept beside a page), or a study id (or unique prefix) under `<store>/studies`.
    Called by `read_study`."""
    candidate = Path(ref)
    if _is_file(candidate):
        return candidate
    if _is_file(candidate / "study.json"):
        return candidate / "study.json"
    # a study's report kept beside a page (docs/reports/<id>/report.json): the same study record,
    # so a page's capacity numbers are re-derived from the repository alone (the name is
    # report/book/layout.py's REPORT_JSON, spelled out: capacity comes before report in the stages)
    if _is_file(candidate / "report.json"):
        return candidate / "report.json"
    studies = store_home(store) / "studies"
    matches = []
    if is_plain_name(str(ref)):   # an id or prefix, matched as text (never a glob pattern)
        exact = studies / str(ref) / "study.json"
        if exact.is_file():
            return exact
        try:
            children = sorted(studies.iterdir())
        except OSError:
            children = []
        matches = [p / "study.json" for p in children if p.name.startswith(str(ref)) and _is_file(p / "study.json")]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise InputError(f"{str(ref)!r} matches {len(matches)} studies; give more of the id", field="STUDY")
    raise InputError(f"no study {str(ref)!r}: not a study.json, a study directory, a kept report directory, or an "
                     f"id in {studies}",
                     field="STUDY")


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):   # a name too long, a NUL byte
        return False


def read_study(ref: str | Path, store: str | Path | None = None) -> StudySource:
    """The study document *ref* names, with the file it came from.

    Called by the `perflab capacity` subcommands; a report that already holds the document wraps
    it in a `StudySource` itself.
    """
    path = study_json_path(ref, store)
    return StudySource(read_study_document(path), path)
