"""derive on the seeds' other table shapes, transcribed under data/ from the seed reports (they
are not in shared/): parameter-first tables with a `Delta (%)` column (001's IEBCOPY tables),
Delta/Pct. pairs between runs of another table (003 Table 33, derived from Table 34 beside
it, and refused without it), DELTA/PERCENT beside two runs with a `?`
base (003 Table 43), repeated run/run/Delta/Pct. groups (003 Tables 47 and 49, with values
printed once for two rows), a Delta column whose heading names a run the table does not
have (001's GRS table), and the z/OS LSPR release table (001: workloads x n-way, an Average
row).

Expected values are the printed tables' own arithmetic, worked out in the comments."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from perflab.derive.checks import Check, Status
from perflab.derive.command import derive_table, run_derive
from perflab.derive.headers import Change, change_heading
from perflab.derive.table import Cell, Kind

DATA = Path(__file__).parent / "data"
SRC = Path(__file__).resolve().parents[2] / "src"


def console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=200, color_system=None), buffer


def cells(path: Path) -> dict[tuple[str, str], Check]:
    """Checks by (row, column); the cells looked up here have one check each."""
    return {(c.row, c.column): c for c in derive_table(path).checks}


def statuses(path: Path) -> dict[tuple[str, str], Status]:
    return {key: check.status for key, check in cells(path).items()}


def edited(tmp_path: Path, name: str, old: str, new: str) -> Path:
    """A copy of a fixture with one printed value changed."""
    text = (DATA / name).read_text()
    assert text.count(old) == 1, f"{old!r} must occur once in {name}"
    target = tmp_path / name
    target.write_text(text.replace(old, new))
    return target


def percent(new: float, old: float) -> float:
    return 100 * (new - old) / old


# -- parameter-first tables (z/OS 1.13 IEBCOPY) ------------------------------------------------

# (file, cells checked, unknown, na): every printed Delta (%) beside two printed times is checked.
IEBCOPY = [
    ("001-iebcopy-pds-to-pds-fb.csv", 2, 0, 4),     # LRECL 132 and 4096: `*` (not run) and `---`
    ("001-iebcopy-pds-to-pds-vb.csv", 6, 0, 0),
    ("001-iebcopy-loadlib-blksize.csv", 9, 0, 0),   # three stacked BLKSIZE tables
    ("001-iebcopy-compress-pds-vb.csv", 5, 1, 0),   # CPU 0.000 -> 0.000: a base that rounds to zero
]


@pytest.mark.parametrize("name,checked,unknown,na", IEBCOPY, ids=[t[0] for t in IEBCOPY])
def test_iebcopy_tables_are_read_and_their_delta_checked(name, checked, unknown, na):
    path = DATA / name
    out, buffer = console()
    assert run_derive(path, True, out) == 0, buffer.getvalue()
    result = derive_table(path)
    assert result.layout == "parameter"
    tally = result.tally
    assert (tally.checked, tally.counts[Status.AGREE]) == (checked, checked)
    assert tally.counts[Status.UNKNOWN] == unknown and tally.counts[Status.NA] == na
    assert all(c.column == "Delta (%)" for c in result.checks)


def test_iebcopy_delta_is_percent_of_the_earlier_release():
    found = cells(DATA / "001-iebcopy-pds-to-pds-vb.csv")
    # Elapsed, LRECL 4096: 100 * (8.820 - 21.840) / 21.840 = -59.615, printed -59.62.
    check = found[("LRECL (elapsed s) 4096", "Delta (%)")]
    assert check.status is Status.AGREE and check.recomputed is not None
    assert check.recomputed.lo <= percent(8.820, 21.840) <= check.recomputed.hi
    assert check.formula == "100 * (V1R13 - V1R12) / V1R12"
    # The stacked CPU table is named by its own heading row.
    assert found[("LRECL (CPU s) 132", "Delta (%)")].status is Status.AGREE      # 0.005 -> 0.001: -80.00


def test_iebcopy_not_run_rows_are_na_and_a_zero_base_is_unknown():
    fb = statuses(DATA / "001-iebcopy-pds-to-pds-fb.csv")
    assert fb[("LRECL (elapsed s) 132", "Delta (%)")] is Status.NA              # `*`, `*`, `---`
    compress = cells(DATA / "001-iebcopy-compress-pds-vb.csv")
    zero = compress[("LRECL (CPU s) 80", "Delta (%)")]                            # 0.000 -> 0.000, printed 0.000
    assert zero.status is Status.UNKNOWN and "zero" in zero.reason


@pytest.mark.parametrize("old,new,row", [
    ("80,2.460,0.780,-68.29", "80,2.460,0.780,-58.29", "LRECL (elapsed s) 80"),      # the delta itself
    ("132,3.360,1.260,-62.50", "132,3.360,1.360,-62.50", "LRECL (elapsed s) 132"),   # a time it follows from
    # CPU times printed to 0.001 s only bound the change to 100 * (0.001 - 0.005) / 0.005 within
    # [-111, -54.5] %: -60 would still agree, -40 cannot.
    ("4096,0.005,0.001,-80.00", "4096,0.005,0.001,-40.00", "LRECL (CPU s) 4096"),
])
def test_a_corrupted_iebcopy_table_fails_naming_the_cell(tmp_path, old, new, row):
    path = edited(tmp_path, "001-iebcopy-pds-to-pds-vb.csv", old, new)
    out, buffer = console()
    assert run_derive(path, True, out) == 1
    assert [(c.row, c.column) for c in derive_table(path).disagreements] == [(row, "Delta (%)")]
    assert "✗ line" in buffer.getvalue() and f"{row} / Delta (%)" in buffer.getvalue()


# -- Table 33: Delta/Pct. pairs between runs of Table 34 --------------------------------------

T33 = "003-t33-storage-constrained-deltas.csv"
T34 = "003-t34-storage-constrained-9021-720.csv"


def alone(tmp_path: Path, name: str) -> Path:
    """A fixture copied where no other table sits beside it."""
    target = tmp_path / name
    target.write_text((DATA / name).read_text())
    return target


def test_pct_after_delta_without_its_runs_is_not_derivable(tmp_path):
    path = alone(tmp_path, T33)
    result = derive_table(path)
    assert run_derive(path, True, console()[0]) == 0
    assert not result.disagreements and result.tally.checked == 0
    found = [c for c in result.checks if c.status is Status.NOT_DERIVABLE]
    assert len(found) == 24                       # 4 rows x 3 (Delta, Pct.) pairs
    assert all("not columns of this table" in c.reason and "no table beside it" in c.reason for c in found)


def test_table_33_is_derived_from_table_34_beside_it():
    # "Y64F4809 - Y64F480E": moving from the first run to the second (the report's text), with
    # the values Table 34 prints: AVG LAST (T) 0.700 -> 0.804 = +0.104, 100 * 0.104 / 0.700 =
    # 14.86 % (printed 14.8 %); PBT/CMD of Y64F480E -> Y64F480D 31.654 -> 36.035 = +4.381, 13.84 %;
    # Y64F480A -> Y64F4808: AVG LAST (T) 9.767 -> 63.246 = +53.479, 547.55 % (printed 547.5 %).
    path = DATA / T33
    result = derive_table(path)
    assert run_derive(path, True, console()[0]) == 0
    assert any(T34 in note for note in result.notes)
    found = cells(path)
    first = found[("AVG LAST (T)", "Y64F4809 - Y64F480E Delta")]
    assert first.status is Status.AGREE and first.formula == "Y64F480E - Y64F4809"
    assert first.recomputed.lo <= 0.804 - 0.700 <= first.recomputed.hi
    pct = found[("AVG LAST (T)", "Pct. (column 3)")]
    assert pct.status is Status.AGREE and pct.recomputed.lo <= percent(0.804, 0.700) <= pct.recomputed.hi
    assert found[("PBT/CMD", "Y64F480E - Y64F480D Delta")].recomputed.lo <= 36.035 - 31.654
    last = found[("AVG LAST (T)", "Pct. (column 7)")]
    assert last.status is Status.AGREE and last.recomputed.lo <= percent(63.246, 9.767) <= last.recomputed.hi
    # 24 cells: 23 agree; XSTOR/CMD's 136.0% is marked `?` in the transcription (next test)
    assert (result.tally.checked, result.tally.counts[Status.AGREE]) == (23, 23)
    doubtful = found[("XSTOR/CMD", "Pct. (column 5)")]
    assert doubtful.status is Status.UNKNOWN
    assert doubtful.recomputed.lo <= percent(36.925, 15.661) <= doubtful.recomputed.hi


def test_table_33_without_its_question_mark_fails_where_the_report_is_wrong(tmp_path):
    # XSTOR/CMD Y64F480E -> Y64F480D: 100 * 21.264 / 15.661 = 135.78 %, printed 136.0 % (the
    # delta 21.264 itself agrees): the report's own slip, found by deriving Table 33 from Table 34.
    path = edited(tmp_path, T33, "136.0%?", "136.0%")
    (tmp_path / T34).write_text((DATA / T34).read_text())
    bad = derive_table(path).disagreements
    assert [(c.row, c.column) for c in bad] == [("XSTOR/CMD", "Pct. (column 5)")]


def test_table_33_with_its_run_ids_in_a_row_is_derived_the_same(tmp_path):
    # As printed: "Run Id: Y64F4809 - Y64F480E ..." above bare "Delta Pct." headings.
    lines = (DATA / T33).read_text().splitlines()
    lines[0] = "metric,Delta,Pct.,Delta,Pct.,Delta,Pct."
    lines.insert(1, "Run Id,Y64F4809 - Y64F480E,,Y64F480E - Y64F480D,,Y64F480A - Y64F4808,")
    path = tmp_path / T33
    path.write_text("\n".join(lines) + "\n")
    (tmp_path / T34).write_text((DATA / T34).read_text())
    result = derive_table(path)
    assert (result.tally.checked, result.tally.counts[Status.AGREE]) == (23, 23)
    assert cells(path)[("PAGE/CMD", "Delta (column 2)")].formula == "Y64F480E - Y64F4809"


def test_a_corrupted_table_34_fails_the_table_33_cells_computed_from_it(tmp_path):
    # PBT/CMD of Y64F480E 31.654 -> 31.754: the four cells that use it no longer agree
    # (+0.510 and 1.63 % from Y64F4809, printed 0.410 and 1.3 %; +4.281 and 13.48 % to
    # Y64F480D, printed 4.381 and 13.8 %); the third pair does not use it.
    path = alone(tmp_path, T33)
    text = (DATA / T34).read_text()
    assert text.count("PBT/CMD,85.916,41.822,36.035,31.654,") == 1
    (tmp_path / T34).write_text(text.replace("PBT/CMD,85.916,41.822,36.035,31.654,",
                                             "PBT/CMD,85.916,41.822,36.035,31.754,"))
    bad = {(c.row, c.column) for c in derive_table(path).disagreements}
    assert bad == {("PBT/CMD", "Y64F4809 - Y64F480E Delta"), ("PBT/CMD", "Pct. (column 3)"),
                   ("PBT/CMD", "Y64F480E - Y64F480D Delta"), ("PBT/CMD", "Pct. (column 5)")}


@pytest.mark.parametrize("header", [
    "metric,Delta,Pct.,Delta,Pct.,Delta,Pct.",
    # The printed run pairs without the word Delta: read as columns of their own, each Pct.
    # has one column before it -- the shape derive used to fail 8 of 8 cells on.
    "metric,Y64F4809 - Y64F480E,Pct.,Y64F480E - Y64F480D,Pct.,Y64F480A - Y64F4808,Pct.",
])
def test_table_33_under_other_headings_is_never_failed(tmp_path, header):
    path = edited(tmp_path, "003-t33-storage-constrained-deltas.csv",
                  (DATA / "003-t33-storage-constrained-deltas.csv").read_text().splitlines()[0], header)
    result = derive_table(path)
    assert not result.disagreements
    pct = [c for c in result.checks if c.column.startswith("Pct.")]
    assert len(pct) == 12 and {c.status for c in pct} == {Status.NOT_DERIVABLE}


# -- Table 43: DELTA and PERCENT beside two runs, one base marked `?` --------------------------

def test_dfw_table_checks_changes_and_a_question_mark_base_is_unknown():
    path = DATA / "003-t43-dfw-database.csv"
    assert run_derive(path, True, console()[0]) == 0
    found = statuses(path)
    # 309.0? (49.4 + 260.6 = 310.0): DELTA -165.6 and PERCENT -54 were computed from it.
    busy = "Database Busy Msec/Sec"
    assert found[(busy, "DELTA")] is Status.UNKNOWN and found[(busy, "PERCENT")] is Status.UNKNOWN
    # e.g. Pct Busy 26.0 -> 9.2: -16.8, -64.6 % printed -65; DASD Resp 260.6 -> 91.7: -168.9
    # printed -169.0 (within the rounding of both runs); Active 398 -> 219: -179, -45.0 %.
    agreeing = ["Database Rate (total)", "Database Pct Busy", "Database Serv", "Database Resp",
                "Database CPU Msec/Sec", "Database DASD Resp Msec/Sec", "Database Active Msec/Sec"]
    for row in agreeing:
        assert found[(row, "DELTA")] is Status.AGREE and found[(row, "PERCENT")] is Status.AGREE, row
    assert found[("Database Pct Read", "DELTA")] is Status.NA          # printed '-': no change given
    assert derive_table(path).tally.checked == 19                      # 14 changes + 5 row formulas


def test_without_the_question_mark_the_row_fails_but_its_printed_delta_agrees(tmp_path):
    # The delta is checked against the printed cells (143.4 - 309.0 = -165.6), never against a
    # recomputed 310.0; only the sum row itself shows the report's error.
    path = edited(tmp_path, "003-t43-dfw-database.csv", "309.0?", "309.0")
    bad = derive_table(path).disagreements
    assert [(c.row, c.column) for c in bad] == [("Database Busy Msec/Sec", "Y34V3251")]
    assert statuses(path)[("Database Busy Msec/Sec", "DELTA")] is Status.AGREE


def test_a_delta_from_a_question_mark_base_is_unknown_whatever_it_prints(tmp_path):
    # Changing the printed delta to the recomputed base's value (143.4 - 310.0) must not agree
    # either: nothing computed from a `?` cell is ever judged.
    path = edited(tmp_path, "003-t43-dfw-database.csv", "-165.6,-54", "-166.6,-54")
    assert statuses(path)[("Database Busy Msec/Sec", "DELTA")] is Status.UNKNOWN


# -- Table 47: repeated run/run/Delta/Pct. groups by trace number ------------------------------

T47 = "003-t47-pipelines-prpq-vs-vm.csv"


def test_trace_table_checks_every_group_and_leaves_marked_cells_unknown():
    path = DATA / T47
    assert run_derive(path, True, console()[0]) == 0
    result = derive_table(path)
    # 7 rows x 3 groups x (Delta, Pct.) = 42 cells; 6 depend on a `?` cell.
    assert (result.tally.checked, result.tally.counts[Status.AGREE]) == (36, 36)
    unknown = sorted((c.row, c.column) for c in result.checks if c.status is Status.UNKNOWN)
    assert unknown == sorted([
        ("No. 2", "Delta (column 4)"), ("No. 2", "Pct. (column 5)"),      # VM 38.335? (0.023 says 38.345)
        ("No. 5", "Delta (column 8)"), ("No. 5", "Pct. (column 9)"),      # VM 34844? (-104 says 34849)
        ("No. AVG", "Delta (column 12)"), ("No. AVG", "Pct. (column 13)"),  # 2? (206 - 208 = -2)
    ])
    pct_after_unknown_delta = next(c for c in result.checks if c.row == "No. AVG" and c.column == "Pct. (column 13)")
    assert "2?" in pct_after_unknown_delta.reason
    # Group 3, trace 5: 168 -> 156 privops: -12, 100 * -12 / 168 = -7.14 %.
    privops = next(c for c in result.checks if c.row == "No. 5" and c.column == "Pct. (column 13)")
    assert privops.status is Status.AGREE and privops.formula == "100 * (VM - PRPQ) / PRPQ"


def test_trace_table_without_its_question_marks_fails_where_the_ocr_did(tmp_path):
    path = edited(tmp_path, T47, "38.335?", "38.335")
    # 38.335 - 38.322 = 0.013, printed 0.023; 0.034 %, printed 0.06 %.
    bad = derive_table(path).disagreements
    assert sorted((c.row, c.column) for c in bad) == [("No. 2", "Delta (column 4)"), ("No. 2", "Pct. (column 5)")]


def test_a_corrupted_trace_cell_fails_naming_its_group(tmp_path):
    path = edited(tmp_path, T47, "-281,-0.61%", "-281,-0.71%")
    out, buffer = console()
    assert run_derive(path, True, out) == 1
    assert [(c.row, c.column) for c in derive_table(path).disagreements] == [("No. 3", "Pct. (column 9)")]
    assert "No. 3 / Pct. (column 9)" in buffer.getvalue()


T49 = "003-t49-rexx-vs-pipelines.csv"


def test_a_value_printed_once_for_two_rows_leaves_the_second_not_derivable():
    # Table 49 prints one Pipelines value across rows 8a/8b and 9a/9b and one REXX value across
    # 10a/10b; the second row's cell is blank, as printed: its changes are not guessed.
    result = derive_table(DATA / T49)
    assert run_derive(DATA / T49, True, console()[0]) == 0
    tally = result.tally
    # 17 rows x 2 groups x (Delta, Pct.) = 68: 12 on rows 8b, 9b, 10b; 2 on row 7's 39.076?
    # (44.084 - 5.000 = 39.084 printed as 39.076).
    assert (tally.checked, tally.counts[Status.NOT_DERIVABLE], tally.counts[Status.UNKNOWN]) == (54, 12, 2)
    blank = {c.row for c in result.checks if c.status is Status.NOT_DERIVABLE}
    assert blank == {"No. 8b", "No. 9b", "No. 10b"}


def test_filling_a_blank_makes_its_changes_checkable(tmp_path):
    # 9b: 43.242 - 64.090 = -20.848; 100 * -20.848 / 64.090 = -32.53, printed -32.5 %.
    path = edited(tmp_path, T49, "9b,64.090,,", "9b,64.090,43.242,")
    found = statuses(path)
    assert found[("No. 9b", "Delta (column 4)")] is Status.AGREE
    assert found[("No. 9b", "Pct. (column 5)")] is Status.AGREE
    assert found[("No. 9b", "Delta (column 8)")] is Status.NOT_DERIVABLE        # pathlength still blank


# -- which runs a change compares: named, adjacent, or not determined ---------------------------

def test_a_heading_naming_a_run_not_in_the_table_is_not_derivable():
    # "Delta V1.11 to V.12 w/GRS and allocation": there is no column V.12 ...; the adjacent pair
    # (the two V1.12 runs) would be a guess, and a wrong one (-25 % elapsed, printed -50 %).
    path = DATA / "001-grs-open-datasets-delta.csv"
    result = derive_table(path)
    delta = [c for c in result.checks if c.column.startswith("Delta")]
    assert len(delta) == 4 and {c.status for c in delta} == {Status.NOT_DERIVABLE}
    assert "V.12 w/GRS and allocation" in delta[0].reason
    assert result.tally.checked == 3 and not result.disagreements      # ITR = ETR / CPU %, as in shared 30


def test_a_heading_naming_both_runs_is_checked_between_them(tmp_path):
    path = edited(tmp_path, "001-grs-open-datasets-delta.csv", "Delta V1.11 to V.12 w/GRS and allocation",
                  "Delta V1.11 to V1.12 w/MEMDSENQMGMT")
    found = statuses(path)
    column = "Delta V1.11 to V1.12 w/MEMDSENQMGMT"
    # The cells carry %, so the Delta is relative: 239.5 / 480.7 = -50.2 %, 75.7 / 59.5 = +27.2 %,
    # 529.3 / 335.6 = +57.7 %; but 400.8 / 199.7 = +100.7 % is printed +100 % (rounds to 101).
    assert found[("Elapsed time (s)", column)] is Status.AGREE
    assert found[("LPAR CPU%", column)] is Status.AGREE
    assert found[("ITR", column)] is Status.AGREE
    assert found[("ETR (open data sets per s)", column)] is Status.DISAGREE


@pytest.mark.parametrize("header,status,reason", [
    ("metric,R1,R2,R3,DELTA", Status.NOT_DERIVABLE, "3 run columns"),
    ("metric,R1,DELTA,R2,R3", Status.NOT_DERIVABLE, "only one run column"),
    ("metric,R1,R2,R3,Delta R1 to R3", Status.AGREE, ""),          # 14 - 10 = 4
    ("metric,R1,R2,R3,Delta R2 to R3", Status.DISAGREE, ""),       # 14 - 12 = 2, printed 4
])
def test_the_compared_runs_come_from_the_table_or_nowhere(tmp_path, header, status, reason):
    values = {"R1": "10", "R2": "12", "R3": "14"}
    heads = header.split(",")
    row = ["SOME ROW"] + [values.get(h, "4") for h in heads[1:]]
    path = tmp_path / "table.csv"
    path.write_text(f"{header}\n{','.join(row)}\n")
    check = next(c for c in derive_table(path).checks if c.column.startswith(("DELTA", "Delta")))
    assert check.status is status and reason in check.reason


def test_a_descriptive_column_between_parameter_and_releases_is_not_a_run(tmp_path):
    # 100 * (0.780 - 2.340) / 2.340 = -66.67 whether or not a Format column comes first; a
    # column of text only compares nothing.
    path = tmp_path / "iebcopy.csv"
    path.write_text("LRECL,Format,V1R12,V1R13,Delta (%)\n80,FB,2.340,0.780,-66.67\n80,VB,2.460,0.780,-68.29\n")
    assert [c.status for c in derive_table(path).checks] == [Status.AGREE, Status.AGREE]


# -- headings and cells --------------------------------------------------------------------------

@pytest.mark.parametrize("header,kind", [
    ("DELTA", Change.DELTA), ("Delta", Change.DELTA), ("Y64F4809 - Y64F480E Delta", Change.DELTA),
    ("PERCENT", Change.PERCENT), ("Pct.", Change.PERCENT), ("Delta (%)", Change.PERCENT),
    ("% change", Change.PERCENT), ("%", Change.PERCENT), ("Pct..1", Change.PERCENT),
    ("Pct Busy", None), ("50% load", None), ("Y63R5866", None), ("V1.12 w/GRS exploitation", None),
    ("DFW ON", None), ("LRECL", None),
])
def test_change_headings(header, kind):
    found = change_heading(header)
    assert (found.kind if found else None) is kind


@pytest.mark.parametrize("text,kind,value", [
    ("-", Kind.NA, None), ("---", Kind.NA, None), ("*", Kind.NA, None),
    ("0 %", Kind.NUMBER, 0.0), ("+100%", Kind.NUMBER, 100.0), ("-0.96%", Kind.NUMBER, -0.96), ("2?", Kind.UNKNOWN, None),
])
def test_change_cell_conventions(text, kind, value):
    cell = Cell.parse(text)
    assert cell.kind is kind and cell.value == (pytest.approx(value) if value is not None else None)


def test_a_metrics_heading_is_a_metric_table(tmp_path):
    # JES3plus (seed 000) heads its row labels "Metrics"; nothing in it is derivable.
    path = tmp_path / "jes3.csv"
    path.write_text("Metrics,IBM JES3 Single LPAR,JES3plus Single LPAR\n"
                    'Actual Job Counts,"2,321","4,106"\nAverage Channel Utilization,12.68%,.99%\n')
    result = derive_table(path)
    assert result.layout == "metric" and result.checks == []


# -- malformed parameter tables: one line, exit 2 ---------------------------------------------------

def cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "perflab.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120)


@pytest.mark.parametrize("text,where,expected", [
    ("LRECL,V1R12,V1R13,Delta (%)\n80,2.340,0.780,-66.67\n132,3.360,1.260\n", ":3: 132: ", "header has 4 columns"),
    ("LRECL,V1R12,V1R13\n80,2.340,0.780\n", ":1: LRECL: ", "Delta (%)"),
])
def test_malformed_parameter_table_is_one_message_and_exit_2(tmp_path, text, where, expected):
    path = tmp_path / "iebcopy.csv"
    path.write_text(text)
    done = cli("derive", str(path), "--check")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr + done.stdout
    message = done.stderr.strip()
    assert f"{path}{where}" in message and expected in message and len(message.splitlines()) == 1


# -- the z/OS LSPR release table: workloads x n-way, with an Average row ------------------------

LSPR = "001-lspr-zos-v112-release.csv"


def test_lspr_table_checks_its_average_row():
    # z/OS V1.12 over V1.11, ITR change per LSPR workload: the Average is the mean of the
    # workloads measured at that n-way ('-': not measured there).
    # 1w: (1.9 - 0.2 + 0.2 + 0.2) / 4 = 0.525, printed 0.5 %; 12w: (1.5 + 0.1 + 1.7) / 3 = 1.1;
    # 32w: (1.2 + 4.0 + 4.6 + 1.2) / 4 = 2.75, printed 2.7 (within the inputs' rounding);
    # 64w: (2.5 + 3.4) / 2 = 2.95, printed 3.0.
    path = DATA / LSPR
    out, buffer = console()
    assert run_derive(path, True, out) == 0, buffer.getvalue()
    result = derive_table(path)
    assert result.layout == "average" and result.context == "n-way"
    assert (result.tally.checked, result.tally.counts[Status.AGREE]) == (4, 4)
    found = cells(path)
    for column, mean in (("1w on z10", 0.525), ("12w on z10 with HD=YES", 1.1), ("32w on z10 with HD=YES", 2.75),
                         ("64w on z10 with HD=YES", 2.95)):
        check = found[("Average", column)]
        assert check.recomputed.lo <= mean <= check.recomputed.hi, column
    assert found[("Average", "64w on z10 with HD=YES")].formula == "mean_of(WASDB, OLTP-W), not measured: OLTP-T, CB-L"
    assert "columns by n-way: 1w, 12w, 32w, 64w" in buffer.getvalue()
    assert "2.7% 2.75 ✓" in buffer.getvalue()


@pytest.mark.parametrize("old,new,column", [
    ("2.7%,3.0%,", "2.9%,3.0%,", "32w on z10 with HD=YES"),       # the mean is 2.75: 2.9 is out of rounding
    ("0.5%,1.1%", "0.7%,1.1%", "1w on z10"),
    # a workload above: OLTP-W at 12w 0.1 -> 1.1 makes the mean 1.43, printed 1.1
    ("-0.2%,0.1%,4.0%", "-0.2%,1.1%,4.0%", "12w on z10 with HD=YES"),
    # a '-' (not measured) read as a measurement: CB-L at 12w 0.0 makes the mean 0.825
    ("0.2%,-,1.2%", "0.2%,0.0%,1.2%", "12w on z10 with HD=YES"),
])
def test_a_corrupted_lspr_table_fails_naming_the_average_cell(tmp_path, old, new, column):
    path = edited(tmp_path, LSPR, old, new)
    out, buffer = console()
    assert run_derive(path, True, out) == 1
    assert [(c.row, c.column) for c in derive_table(path).disagreements] == [("Average", column)]


def test_lspr_shape_under_other_headings_and_with_doubt(tmp_path):
    text = (DATA / LSPR).read_text()
    # the seed-table heading `metric` and bold copied from the report read the same
    path = tmp_path / "metric.csv"
    path.write_text(text.replace("Workload,", "metric,").replace("Average,0.5%", "<b>Average</b>,<b>0.5%</b>"))
    result = derive_table(path)
    assert (result.tally.checked, result.tally.counts[Status.AGREE]) == (4, 4)
    # a doubtful cell above: the mean is shown, the Average not judged (checks.py's rule)
    path = edited(tmp_path, LSPR, "1.9%,1.5%", "1.9%?,1.5%")
    check = cells(path)[("Average", "1w on z10")]
    assert check.status is Status.UNKNOWN and "1.9%?" in check.reason and check.recomputed is not None
    # a blank cell above is not a measurement of 0 and not a '-': not derivable
    path = edited(tmp_path, LSPR, "1.9%,1.5%,1.2%", "1.9%,,1.2%")
    assert cells(path)[("Average", "12w on z10 with HD=YES")].status is Status.NOT_DERIVABLE
