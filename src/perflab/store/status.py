"""The status a run or a study is shown with: the one "abandoned" rule.

run.json and study.json say `running` from their start until they end; a driver killed with
SIGKILL (or a machine that lost power) leaves them at `running` for ever. Every list, page and
comparison shows such a run or study as `abandoned`, by the rules here and nowhere else.
"""

from __future__ import annotations

import time

from perflab.records.study import StudyDocument
from perflab.store.catalog import RunRow, Store, is_plain_name, shown_status

#: Between two runs of a study (a reduction, a calibration step) none of its runs is running:
#: a study.json rewritten this recently still counts as a study going on.
STUDY_QUIET_S = 60.0

__all__ = ["STUDY_QUIET_S", "current_run", "shown_status", "study_status"]


def current_run(store: Store, study_id: str | None) -> RunRow | None:
    """The study's run in progress, from the catalog (runs record their study id): a row still
    `running` whose driver is alive."""
    if not study_id:
        return None
    return next((row for row in store.rows() if row.study == study_id and row.shown_status == "running"), None)


def study_status(store: Store, doc: StudyDocument, now: float | None = None) -> str:
    """A study's status; `running` only while one of its runs is, or its study.json was written
    in the last STUDY_QUIET_S seconds; else a study.json that says running is `abandoned`."""
    if doc.status != "running":
        return doc.status
    if current_run(store, doc.study_id) is not None:
        return "running"
    if not doc.study_id or not is_plain_name(doc.study_id):
        return "abandoned"
    try:
        written = (store.home / "studies" / doc.study_id / "study.json").stat().st_mtime
    except OSError:
        return "abandoned"
    return "running" if (time.time() if now is None else now) - written < STUDY_QUIET_S else "abandoned"
