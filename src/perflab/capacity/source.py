"""Where capacity planning reads its inputs: a stored study's study.json.

`read_study` is the one place that opens a study document: through the StudyDocument model
(perflab.records.study), so older formats are upgraded and a malformed file is one clear error;
capacity's code then reads the document's current JSON form (docs/architecture.md).
"""

from __future__ import annotations

from pathlib import Path

from perflab.errors import InputError
from perflab.records.study import read_study_document
from perflab.store.catalog import is_plain_name, store_home


def study_json_path(ref: str | Path, store: str | Path | None = None) -> Path:
    """The study.json that *ref* names: a study.json file, a study directory, or a study id (or
    unique prefix) under `<store>/studies`. Called by `read_study`."""
    candidate = Path(ref)
    if _is_file(candidate):
        return candidate
    if _is_file(candidate / "study.json"):
        return candidate / "study.json"
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
    raise InputError(f"no study {str(ref)!r}: not a study.json, a study directory, or an id in {studies}",
                     field="STUDY")


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):   # a name too long, a NUL byte
        return False


def read_study(ref: str | Path, store: str | Path | None = None) -> dict:
    """The study document (study.json as a dict) with `_path` set to the file it came from.

    Called by the `perflab capacity` subcommands and by `capacity_summary`'s callers; a report
    that already holds the document passes it to `capacity_summary` directly.
    """
    path = study_json_path(ref, store)
    doc = read_study_document(path).dump()
    doc["_path"] = str(path)
    return doc
