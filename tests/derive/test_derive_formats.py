"""derive on tables written here: malformed files, cell conventions, and table families the
shared seed tables do not include (rows recognized by label, never by file name)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from perflab.derive.checks import Status, judge
from perflab.derive.command import derive_table, run_derive
from perflab.derive.interval import Interval
from perflab.derive.table import Cell, Kind, read_table
from perflab.errors import InputError


def write(tmp_path: Path, text: str, name: str = "table.csv") -> Path:
    path = tmp_path / name
    path.write_text(text.strip() + "\n")
    return path


def statuses(path: Path) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for check in derive_table(path).checks:
        out.setdefault((check.row, check.column), []).append(check.status.value)
    return out


# -- malformed files ----------------------------------------------------------------------

def test_binary_file_is_input_error(tmp_path):
    path = tmp_path / "table.csv"
    path.write_bytes(b"\x00\x01\x02PK\x03\x04")
    with pytest.raises(InputError, match="not a CSV"):
        read_table(path)


def test_no_shape_is_input_error_naming_what_it_saw(tmp_path):
    path = write(tmp_path, "label,RUN1\nwidgets,1.00")
    with pytest.raises(InputError) as info:
        run_derive(path, True, Console(file=io.StringIO()))
    assert info.value.line == 1 and info.value.field == "label" and info.value.file == path
    # what it saw (the heading, its columns and rows), and what it expected
    assert "saw a CSV table headed `label`, 1 columns (`RUN1`) and 1 rows (`widgets`)" in info.value.message
    assert "expected the seed-table format (first column `metric`" in info.value.message


@pytest.mark.parametrize("heading", ["Run Id:", ""])
def test_rows_the_registry_names_make_a_metric_table_under_any_heading(tmp_path, heading):
    # A seed prints the heading blank, or a caption: the rows are metrics all the same.
    base = derive_table(write(tmp_path, CMS_WITH_CHANGES, "metric.csv"))
    path = write(tmp_path, CMS_WITH_CHANGES.replace("metric,RUN1", f"{heading},RUN1"), "other.csv")
    assert read_table(path).layout == "metric"
    got = derive_table(path)
    assert [(c.row, c.column, c.status) for c in got.checks] == [(c.row, c.column, c.status) for c in base.checks]
    assert base.tally.checked >= 10 and not got.disagreements


def test_ragged_row_is_input_error(tmp_path):
    path = write(tmp_path, "metric,RUN1,RUN2\nETR,10.00,11.00\nETR (T),9.00\nETR RATIO,1.111,1.222")
    with pytest.raises(InputError) as info:
        read_table(path)
    assert "row has 2 cells but the header has 3 columns" in info.value.message and "`RUN2` holds numbers" in \
        info.value.message
    assert info.value.line == 3 and info.value.field == "ETR (T)"
    assert str(info.value).startswith(f"{path}:3: ETR (T): ")


def test_empty_and_runless_tables_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="empty"):
        read_table(write(tmp_path, "", "empty.csv"))
    with pytest.raises(InputError, match="no run columns"):
        read_table(write(tmp_path, "metric\nETR (T)", "runless.csv"))


def test_unterminated_quote_is_input_error(tmp_path):
    with pytest.raises(InputError):
        read_table(write(tmp_path, 'metric,RUN1\n"ETR (T),1.00'))


# -- cells and intervals --------------------------------------------------------------------

@pytest.mark.parametrize("text,kind,value,half", [
    ("26.872", Kind.NUMBER, 26.872, 0.0005),
    ("548.00", Kind.NUMBER, 548.0, 0.005),
    ("5860", Kind.NUMBER, 5860.0, 0.5),
    ("105K", Kind.NUMBER, 105 * 1024.0, 512.0),
    ("1,233", Kind.NUMBER, 1233.0, 0.5),
    ("41.6%", Kind.NUMBER, 41.6, 0.05),
    ("-3.154", Kind.NUMBER, -3.154, 0.0005),
    ("na", Kind.NA, None, 0.0),
    ("27.501?", Kind.UNKNOWN, None, 0.0),
    ("?", Kind.UNKNOWN, None, 0.0),
    ("512M", Kind.TEXT, None, 0.0),
    ("1 dedicated", Kind.TEXT, None, 0.0),
    ("", Kind.EMPTY, None, 0.0),
])
def test_cell_conventions(text, kind, value, half):
    cell = Cell.parse(text)
    assert cell.kind is kind
    if value is not None:
        assert cell.value == pytest.approx(value) and cell.half == pytest.approx(half)


def test_interval_arithmetic_and_judging():
    a, b = Interval.around(10, 0.5), Interval.around(4, 0.5)
    assert (a + b) == Interval(13, 15) and (a - b) == Interval(5, 7)
    assert (a / b).lo == pytest.approx(9.5 / 4.5) and (a / b).hi == pytest.approx(10.5 / 3.5)
    assert not (a / Interval(-0.1, 0.1)).bounded
    status, reason, _ = judge(Cell.parse("2.5"), a / Interval(-0.1, 0.1))
    assert status is Status.UNKNOWN and "zero" in reason
    assert judge(Cell.parse("2.5"), a / b)[0] is Status.AGREE
    assert judge(Cell.parse("3.5"), a / b)[0] is Status.DISAGREE


# -- other table families, recognized by label ------------------------------------------------

CMS_WITH_CHANGES = """
metric,RUN1,RUN2,DELTA,PERCENT
SOME NEW ROW,7,8,,
USERS,100,100,,
PROCESSORS,2,2,,
ETR (T),50.00,52.00,2.00,4.0
TOTAL (H),160.00,150.00,,
UTIL/PROC (H),80.00,75.00,,
ITR (H),62.50,69.33,,
ITRR (H),1.000,1.109,,
PBT/CMD (H),32.000,28.846,-3.154,-9.9
CP/CMD (H),12.000,10.846,,
EMUL/CMD (H),20.000,18.000,,
TVR (H),1.60,1.60,,
SFS CP CPU/CMD (V),2.0000,1.9000,,
SFS VIRT CPU/CMD (V),1.5000,1.4000,,
SFS TOT CPU/CMD (V),3.5000,3.3000,,
"""


def test_cms_table_in_another_order_with_change_columns(tmp_path):
    path = write(tmp_path, CMS_WITH_CHANGES)
    found = statuses(path)
    assert found[("UTIL/PROC (H)", "RUN2")] == ["agree"]        # PROCESSORS (H) falls back to PROCESSORS
    assert found[("ITRR (H)", "RUN2")] == ["agree"]
    assert found[("TVR (H)", "RUN2")] == ["agree", "approx"]
    assert found[("SFS TOT CPU/CMD (V)", "RUN1")] == ["agree"]  # a server block, by prefix
    assert found[("ETR (T)", "DELTA")] == ["agree"] and found[("ETR (T)", "PERCENT")] == ["agree"]
    assert found[("PBT/CMD (H)", "PERCENT")] == ["agree"]
    result = derive_table(path)
    assert result.disagreements == []
    assert any("SOME NEW ROW" in note for note in result.notes)


def test_change_columns_catch_a_wrong_percent(tmp_path):
    path = write(tmp_path, CMS_WITH_CHANGES.replace("-3.154,-9.9", "-3.154,-8.9"))
    assert [(c.row, c.column) for c in derive_table(path).disagreements] == [("PBT/CMD (H)", "PERCENT")]


VSE_TWO_COMPARISONS = """
metric,A1,A2,B1,B2
RELEASE,before,after,before,after
ITR,14.894,18.994,14.000,18.564
ITRR,1.00,1.28,1.00,1.33
ETR,6.211,7.368,5.600,6.720
ETRR,1.00,1.19,1.00,1.20
elapsed seconds,541,456,600,500
processor busy %,41.7,38.8,40.0,36.2
processor seconds,225.6,176.9,240.0,181.0
"""


def test_vse_table_restarts_its_base_at_a_printed_one(tmp_path):
    path = write(tmp_path, VSE_TWO_COMPARISONS)
    result = derive_table(path)
    assert result.context == "batch"
    assert result.disagreements == []
    itrr = {c.column: c for c in result.checks if c.row == "ITRR"}
    assert itrr["B2"].formula.endswith("of B1") and itrr["A2"].formula.endswith("of A1")
    found = statuses(path)
    assert found[("ITR", "A2")] == ["agree"]            # ITR = ETR * elapsed / processor seconds
    assert found[("processor seconds", "B2")] == ["agree"]


def test_server_capacity_table_by_server_prefix(tmp_path):
    path = write(tmp_path, """
metric,DFW OFF
Elapsed Seconds,1800
Calendar CPU Secs,48
Calendar CPU Msec/Sec,26.7
Calendar Rate (total),8.4
Calendar Resp,27.9
Calendar DASD Resp Msec/Sec,234.4
Calendar Busy Msec/Sec,261.1
Calendar Pct True Dormnt,26.2
Calendar Pct True Non-Dormnt,73.8
Calendar Pct Test Idle,58.0
Calendar Active Msec/Sec,310
Database CPU Msec/Sec,49.4
Database DASD Resp Msec/Sec,260.6
Database Busy Msec/Sec,309.0
""")
    result = derive_table(path)
    agree = {c.row for c in result.checks if c.status is Status.AGREE}
    assert {"Calendar CPU Msec/Sec", "Calendar DASD Resp Msec/Sec", "Calendar Busy Msec/Sec",
            "Calendar Active Msec/Sec"} <= agree
    # The report's own error (methodology 6.3): 49.4 + 260.6 = 310.0, printed 309.0.
    assert [c.row for c in result.disagreements] == ["Database Busy Msec/Sec"]


def test_instver_transfer_rate(tmp_path):
    path = write(tmp_path, """
metric,small,large
MESSAGE SIZE (Bytes),100,32000
TIME PER ITERATION (ms),1.25,39.91
TRANSFER RATE (Kb/sec),80.00,801.90
""")
    found = statuses(path)
    assert found[("TRANSFER RATE (Kb/sec)", "small")] == ["agree"]
    assert found[("TRANSFER RATE (Kb/sec)", "large")] == ["agree"]


def test_matrix_alone_uses_its_own_symbol_rows(tmp_path):
    path = write(tmp_path, """
from,to,case,itrr_printed,derivation,notes
A,B,,1.02,R20,
B,C,,1.04,R21,
A,C,,1.06,R20*R21,
A,D,,1.20,R20*R99,
""")
    result = derive_table(path)
    by_row = {c.row: c for c in result.checks}
    assert by_row["A -> B"].status is Status.DEFINES
    assert by_row["A -> C"].status is Status.AGREE
    assert by_row["A -> D"].status is Status.UNKNOWN and "R99" in by_row["A -> D"].reason


def test_rendering_survives_a_narrow_terminal(tmp_path):
    buffer = io.StringIO()
    code = run_derive(write(tmp_path, CMS_WITH_CHANGES), True, Console(file=buffer, width=60, color_system=None))
    assert code == 0
    assert "0 disagree" in buffer.getvalue()
