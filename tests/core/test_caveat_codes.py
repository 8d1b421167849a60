"""Warnings with codes (issue 41, item 5): every note a program or a test might act on carries a
code of its own, and what perflab decides on is a code, a type or a number -- never the words of
a message."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from perflab import caveats as cav
from perflab.records.study import Design
from perflab.report.discussion import shared_cpus
from perflab.store.catalog import _busy  # noqa: PLC2701 (the rule under test)

SRC = Path(__file__).resolve().parents[2] / "src" / "perflab"


def test_no_source_makes_a_note_without_its_own_code():
    made = [f"{p.relative_to(SRC)}:{n}" for p in SRC.rglob("*.py") if p.name != "caveats.py"
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if "Code.NOTE" in line]
    assert not made, made
    with pytest.raises(ValueError):
        cav.note(cav.Code.NOTE, "a note with no code of its own")
    with pytest.raises(ValueError):
        cav.note(cav.Code.ERROR_RATE, "a gate's code: made by its own constructor")
    assert cav.note(cav.Code.ERRORS, "3 transactions ended in an error", errors=3).code == "errors"


def test_every_code_is_made_by_a_constructor_a_note_or_a_remark():
    text = (SRC / "caveats.py").read_text(encoding="utf-8")
    made = set(re.findall(r"code=Code\.([A-Z_]+)", text))
    for code in cav.Code:
        assert code.name in made or code in cav.NOTE_CODES or code in cav.REMARK_CODES \
            or code in (cav.Code.NOTE, cav.Code.LEGACY, cav.Code.MONITOR), code   # the last: older files' only


def test_a_locked_catalog_is_told_by_sqlite_s_code(tmp_path):
    path = tmp_path / "x.db"
    holder = sqlite3.connect(path)
    holder.execute("create table t(x)")
    holder.execute("begin exclusive")
    other = sqlite3.connect(path, timeout=0.01)
    with pytest.raises(sqlite3.OperationalError) as raised:
        other.execute("PRAGMA journal_mode=WAL")
    assert _busy(raised.value)
    with pytest.raises(sqlite3.OperationalError) as raised:
        sqlite3.connect(tmp_path / "y.db").execute("select * from no_such_table")
    assert not _busy(raised.value)


def test_a_shared_placement_is_a_recorded_fact_and_older_files_keep_theirs():
    from perflab.records.study import StudyDocument

    shared = "driver on CPU 0, SUT on CPU 0 (shared: the driver's CPU use is included in the SUT's CPUs' busy time)"
    assert Design(placement=shared).shared_cpus is True             # a study.json before the field
    assert Design(placement="driver on CPU 0, SUT on CPU 1").shared_cpus is None
    assert shared_cpus(StudyDocument(design=Design(placement="p", shared_cpus=True))) == "p"
    assert shared_cpus(StudyDocument(design=Design(placement="shared: a label of mine", shared_cpus=False))) is None


def test_a_full_disk_is_told_by_its_code():
    import errno
    import os

    from perflab.errors import storage_reason

    class SqliteFull(sqlite3.OperationalError):
        sqlite_errorcode = 13

    full = os.strerror(errno.ENOSPC)
    assert storage_reason(SqliteFull("database or disk is full")) == full
    assert storage_reason(OSError(errno.ENOSPC, "No space left on device")) == full
    assert storage_reason(OSError("Error writing bytes to file. Detail: [errno 28] No space left on device")) == full
    assert storage_reason(sqlite3.OperationalError("the disk is full of ideas")) == "the disk is full of ideas"
