"""`perflab derive --check` on the shared seed tables, and on corrupted copies of them."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from perflab.derive.checks import Status
from perflab.derive.command import derive_table, run_derive

SEED_TABLES = Path(os.environ.get("PERFLAB_SEED_TABLES", Path(__file__).resolve().parents[3] / "shared" / "spec"
                                  / "seed-tables"))
TABLES = sorted(SEED_TABLES.glob("*.csv")) if SEED_TABLES.is_dir() else []
pytestmark = pytest.mark.skipif(not TABLES, reason=f"seed tables not found in {SEED_TABLES}")


def console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=200, color_system=None), buffer


def table(prefix: str) -> Path:
    return next(p for p in TABLES if p.name.startswith(prefix))


# Minimum exact checks each shared table must make (so a check that silently stops applying
# is noticed), and the approximate (RTM-internal) identities it reports.
EXPECTED = {
    "01": (34, 8), "02": (36, 8), "04": (34, 8), "06": (67, 16), "08": (102, 22), "09": (33, 8), "11": (35, 8),
    "15": (16, 0), "16": (14, 0), "19": (81, 0), "21": (4, 0), "22": (27, 0), "23": (4, 0), "30": (3, 0),
}


@pytest.mark.parametrize("path", TABLES, ids=[p.name for p in TABLES])
def test_every_shared_table_passes_check(path):
    out, buffer = console()
    assert run_derive(path, True, out) == 0, buffer.getvalue()
    result = derive_table(path)
    tally = result.tally
    checked, approximate = EXPECTED[path.name[:2]]
    assert tally.checked >= checked
    assert tally.approximate >= approximate
    assert tally.counts[Status.APPROX_OFF] == 0
    assert "0 disagree" in buffer.getvalue()


def test_output_shows_printed_and_recomputed_values():
    out, buffer = console()
    run_derive(table("01"), False, out)
    text = buffer.getvalue()
    assert "1.158 1.1582 ✓" in text          # ETR RATIO of Y64R5865: printed, recomputed, agrees
    assert "checked 34 cells in 16 derivable rows: 34 agree, 0 disagree" in text


def _corrupt(tmp_path: Path, prefix: str, row: str, column: int, value: str, siblings: tuple[str, ...] = ()) -> Path:
    source = table(prefix)
    lines = source.read_text().splitlines()
    for i, line in enumerate(lines):
        cells = line.split(",")
        if cells[0] == row:
            cells[column] = value
            lines[i] = ",".join(cells)
            break
    else:
        raise AssertionError(f"row {row} not in {source.name}")
    target = tmp_path / source.name
    target.write_text("\n".join(lines) + "\n")
    for other in siblings:
        shutil.copy(table(other), tmp_path)
    return target


@pytest.mark.parametrize("prefix,row,column,value,also", [
    ("01", "ETR RATIO", 2, "1.159", ()),            # one unit in the last digit beyond rounding
    ("01", "ITR (H)", 2, "237.35", ("ITRR (H)",)),  # ITRR (H) is computed from the printed ITR (H)
    ("06", "ITRR (H)", 3, "2.800", ()),
    ("08", "TOT INT ADJ", 1, "31.600", ()),
    ("02", "SFS TOT CPU/CMD (V)", 2, "3.7371", ()),
    ("09", "TVR", 1, "1.70", ()),
    ("15", "Processor Seconds", 1, "816.697", ()),
    ("16", "ETRR", 3, "0.98", ()),
    ("19", "Blocking Factor (Blocks/BIO)", 1, "1.46", ()),
    ("30", "ITR", 2, "459.1", ()),
])
def test_a_corrupted_derived_cell_fails_naming_the_row(tmp_path, prefix, row, column, value, also):
    path = _corrupt(tmp_path, prefix, row, column, value)
    out, buffer = console()
    assert run_derive(path, True, out) == 1
    assert run_derive(path, False, console()[0]) == 0        # without --check it only reports
    bad = derive_table(path).disagreements
    assert {c.row for c in bad} == {row, *also}
    assert "✗ line" in buffer.getvalue() and row in buffer.getvalue()


def test_a_corrupted_raw_cell_fails_the_rows_derived_from_it(tmp_path):
    path = _corrupt(tmp_path, "01", "READS/SEC", 1, "300")
    rows = {c.row for c in derive_table(path).disagreements}
    assert rows == {"PAGE/CMD"}


def test_unknown_cells_make_dependent_checks_unknown_not_failures(tmp_path):
    path = _corrupt(tmp_path, "01", "READS/SEC", 1, "300?")
    result = derive_table(path)
    assert not result.disagreements
    unknown = [c for c in result.checks if c.status is Status.UNKNOWN]
    assert [(c.row, c.column) for c in unknown] == [("PAGE/CMD", "Y63R5866")]
    assert run_derive(path, True, console()[0]) == 0


def test_a_question_mark_on_an_intermediate_is_bridged_by_the_raw_rows():
    # Table 6: PBT/CMD of Y34F2644 is printed '27.501?'; TVR = PBT/CMD / EMUL/CMD is still
    # checked, because PBT/CMD = 10 * TOTAL / ETR (T) is recomputable from raw rows.
    checks = derive_table(table("04")).checks
    tvr = [c for c in checks if c.row == "TVR" and c.column == "Y34F2644"]
    assert [c.status for c in tvr] == [Status.AGREE]


def test_suspect_cells_stay_unknown_even_when_recomputable():
    # Table 11: ITRR of H14R0287 is printed '1.043?' but ITR / ITR[first] = 1.057: it was rightly doubted.
    check = next(c for c in derive_table(table("09")).checks if c.row == "ITRR" and c.column == "H14R0287")
    assert check.status is Status.UNKNOWN
    assert check.recomputed is not None and check.recomputed.lo > 1.05


def test_approximate_rtm_rows_never_fail(tmp_path):
    near = derive_table(_corrupt(tmp_path, "01", "EMUL ITR", 1, "78.90"))  # +0.7 %: within ~1 %
    assert not near.disagreements
    assert any(c.row == "EMUL ITR" and c.column == "Y63R5866" and c.status is Status.APPROX for c in near.checks)
    far_dir = tmp_path / "far"
    far_dir.mkdir()
    far = derive_table(_corrupt(far_dir, "01", "EMUL ITR", 2, "75.00"))    # +7 %: reported, not failing
    off = [c for c in far.checks if c.status is Status.APPROX_OFF]
    assert [(c.row, c.column) for c in off] == [("EMUL ITR", "Y64R5865")]
    assert not far.disagreements
    assert run_derive(far.path, True, console()[0]) == 0


def test_release_matrix_composes_symbols_from_the_pairs_table(tmp_path):
    result = derive_table(table("22"))
    composed = next(c for c in result.checks
                    if c.row.startswith("VM/XA 2.0 -> VM/ESA 1.1") and c.column == "itrr_printed")
    assert composed.status is Status.AGREE and composed.formula == "compose(R20*R21*R1E)"
    assert any("from 21-" in note for note in result.notes)
    path = _corrupt(tmp_path, "22", "VM/XA 2.0", 0, "VM/XA 2.0", siblings=("21",))
    lines = path.read_text().splitlines()
    lines = [line.replace(",1.10,R20*R21*R1E", ",1.15,R20*R21*R1E") for line in lines]
    path.write_text("\n".join(lines) + "\n")
    bad = derive_table(path).disagreements
    assert [(c.row, c.column) for c in bad] == [("VM/XA 2.0 -> VM/ESA 1.1", "itrr_printed")]


def test_pairs_avg_rows_and_cross_references(tmp_path):
    checks = derive_table(table("21")).checks
    avg = next(c for c in checks if c.row.startswith("pair avg: VM/SP 5"))
    assert avg.status is Status.AGREE and avg.formula == "mean_of(itr_ratio of pairs 1, 2)"
    pair12 = [c for c in checks if c.row.startswith("pair 12")]
    assert {c.column for c in pair12} == {"itr_ratio", "base_pg_per_cmd"}
    assert all(c.status is Status.AGREE for c in pair12)
    lines = table("21").read_text().splitlines()
    lines = [line.replace("VM/SP 6,,,,,,,,,0.82,R5", "VM/SP 6,,,,,,,,,0.85,R5") for line in lines]
    (tmp_path / "pairs.csv").write_text("\n".join(lines) + "\n")
    bad = derive_table(tmp_path / "pairs.csv").disagreements
    assert [c.row for c in bad] == ["pair avg: VM/SP 5 -> VM/SP 6"]


def test_run_summary_ratios_through_a_tabulated_anchor():
    checks = derive_table(table("23")).checks
    ratio = next(c for c in checks if c.row == "H14R0287" and c.column == "itr_ratio")
    assert ratio.status is Status.AGREE
    assert any(c.row == "H17R0281" and c.formula == "base row" and c.status is Status.AGREE for c in checks)


def test_tvr_h_follows_cp_plus_emul():
    # Table 31, Y24R2161: 22.850 / 15.386 = 1.4851 is out of rounding of the printed 1.48;
    # (CP + EMUL) / EMUL = 1.4849 is in. The PBT form is reported as approximate.
    checks = [c for c in derive_table(table("06")).checks if c.row == "TVR(H)" and c.column == "Y24R2161"]
    assert sorted(c.status.value for c in checks) == ["agree", "approx"]


def test_doubtful_cells_are_read_shown_and_never_judged(tmp_path):
    # release_matrix.py's rule. Pair 6 prints 1.064?: the avg row R21 = mean(1.064?, 1.029) =
    # 1.0465 is shown beside the printed 1.04 but not judged, whatever pair 6 reads as.
    checks = derive_table(table("21")).checks
    r21 = next(c for c in checks if c.row.startswith("pair avg: VM/XA 2.1"))
    assert r21.status is Status.UNKNOWN and "pair 6 printed '1.064?'" in r21.reason
    assert r21.recomputed is not None and r21.recomputed.lo <= (1.064 + 1.029) / 2 <= r21.recomputed.hi
    lines = [line.replace(",1.064?,", ",1.500?,") for line in table("21").read_text().splitlines()]
    (tmp_path / "pairs.csv").write_text("\n".join(lines) + "\n")
    assert not derive_table(tmp_path / "pairs.csv").disagreements
    # In the matrix, R13C? is read as R13C (0.95): 0.82 x 1.07 x 0.95 = 0.8335 is shown beside
    # the seeds' 0.83-0.84, not judged; without the `?` the same cell agrees.
    matrix = derive_table(table("22")).checks
    cell = next(c for c in matrix if c.row == "VM/SP 5 -> VM/ESA 1.1 (9221)"
                and c.column == "itrr_recomputed_from_symbols")
    assert cell.status is Status.UNKNOWN and "R13C?" in cell.reason
    assert cell.recomputed is not None and cell.recomputed.lo <= 0.82 * 1.07 * 0.95 <= cell.recomputed.hi
    path = _corrupt(tmp_path, "22", "VM/SP 5", 0, "VM/SP 5", siblings=("21",))
    path.write_text(path.read_text().replace("R5*R6*R13C?", "R5*R6*R13C"))
    cell = next(c for c in derive_table(path).checks if c.row == "VM/SP 5 -> VM/ESA 1.1 (9221)"
                and c.column == "itrr_recomputed_from_symbols")
    assert cell.status is Status.AGREE
