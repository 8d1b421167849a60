"""derive on the seeds' tables as they are printed, not as the shared transcriptions write them:
tab-separated with `<b>` around the Average row (001's LSPR table copied from the seed, lines
135-140), the Average row one cell short (the Comments cell left off), transposed (n-ways down
the side), a Markdown table, Table 33's headings with or without spaces around `->`, and a
refusal that names the shape it saw and the shapes it expected.

Each variant is checked against the same printed arithmetic as the transcription it restates
(test_derive_shapes.py): the same cells, the same outcomes."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from perflab.derive.checks import Status
from perflab.derive.command import derive_table, run_derive
from perflab.derive.headers import change_heading
from perflab.derive.table import read_table
from perflab.errors import InputError

DATA = Path(__file__).parent / "data"
LSPR = DATA / "001-lspr-zos-v112-release.csv"
T33 = DATA / "003-t33-storage-constrained-deltas.csv"
T34 = DATA / "003-t34-storage-constrained-9021-720.csv"
# The printed means (test_derive_shapes.py works them out): 1w 0.525, 12w 1.1, 32w 2.75, 64w 2.95.
MEANS = {"1w on z10": 0.525, "12w on z10 with HD=YES": 1.1, "32w on z10 with HD=YES": 2.75,
         "64w on z10 with HD=YES": 2.95}


def averages(path: Path) -> dict[str, tuple[Status, float, float]]:
    """Each Average cell's outcome and the recomputed mean's range, by n-way."""
    found = {}
    for check in derive_table(path).checks:
        assert check.row == "Average", check
        assert check.recomputed is not None
        found[check.column] = (check.status, check.recomputed.lo, check.recomputed.hi)
    return found


def assert_lspr_read(path: Path) -> None:
    got = averages(path)
    assert set(got) == set(MEANS)
    for column, mean in MEANS.items():
        status, lo, hi = got[column]
        assert status is Status.AGREE and lo <= mean <= hi, column
    out = io.StringIO()
    assert run_derive(path, True, Console(file=out, width=200)) == 0, out.getvalue()


# -- the z/OS LSPR table as 001 prints it ---------------------------------------------------------

def test_lspr_table_copied_from_the_seed_is_read_as_printed():
    # Lines 135-140 of 001_c1584cbabe73b634.txt as they are: tabs, <b> around the Average row.
    path = DATA / "001-lspr-zos-v112-as-printed.tsv"
    assert "\t" in path.read_text() and "<b>Average</b>" in path.read_text()
    assert_lspr_read(path)
    assert "read as printed: tab-separated" in derive_table(path).notes


@pytest.mark.parametrize("source,drop", [(LSPR, ","), (DATA / "001-lspr-zos-v112-as-printed.tsv", "\t")])
def test_an_average_row_one_cell_short_is_read_with_its_comment_blank(tmp_path, source, drop):
    # As printed, the Average row has no Comments cell: 5 cells under 6 headings.
    lines = source.read_text().rstrip("\n").split("\n")
    assert lines[-1].endswith(drop)
    lines[-1] = lines[-1][:-1]
    path = tmp_path / source.name
    path.write_text("\n".join(lines) + "\n")
    assert len(lines[-1].split(drop)) == 5 and len(lines[0].split(drop)) == 6
    assert_lspr_read(path)
    assert any("has 5 cells under 6 headings: `Comments` read as blank" in n for n in derive_table(path).notes)


def test_a_row_short_where_other_rows_print_numbers_is_refused_naming_the_column(tmp_path):
    # The 64w cell left off the Average row: which cell moved is not in the file.
    path = tmp_path / "lspr.csv"
    path.write_text(LSPR.read_text().replace("Average,0.5%,1.1%,2.7%,3.0%,", "Average,0.5%,1.1%,2.7%"))
    with pytest.raises(InputError) as info:
        read_table(path)
    assert info.value.line == 6 and info.value.field == "Average"
    assert "row has 4 cells but the header has 6 columns" in info.value.message
    assert "`64w on z10 with HD=YES` holds numbers" in info.value.message


def test_the_lspr_table_transposed_is_read_the_same():
    path = DATA / "001-lspr-zos-v112-transposed.csv"
    assert path.read_text().startswith("n-way,WASDB")
    assert_lspr_read(path)
    assert any(n.startswith("read transposed") for n in derive_table(path).notes)


def test_a_corrupted_transposed_lspr_table_fails_at_its_average_cell(tmp_path):
    # 32w printed 2.9% where the mean is 2.75: out of the inputs' rounding, as in the upright table.
    path = tmp_path / "t.csv"
    text = (DATA / "001-lspr-zos-v112-transposed.csv").read_text()
    assert text.count(",1.2%,2.7%") == 1
    path.write_text(text.replace(",1.2%,2.7%", ",1.2%,2.9%"))
    assert [(c.row, c.column) for c in derive_table(path).disagreements] == [("Average", "32w on z10 with HD=YES")]


def test_the_lspr_table_as_a_markdown_table(tmp_path):
    rows = [line.split("\t") for line in (DATA / "001-lspr-zos-v112-as-printed.tsv").read_text().splitlines()]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    path = tmp_path / "lspr.md"
    path.write_text("The LSPR table:\n\n" + "\n".join(lines) + "\n")
    assert_lspr_read(path)


# -- Table 33's headings, with or without spaces --------------------------------------------------

def table_33(tmp_path: Path, pair: str) -> Path:
    """Table 33 with each run pair written `A<pair>B`, Table 34 beside it."""
    shutil.copy(T34, tmp_path / T34.name)
    text = T33.read_text()
    first = text.splitlines()[0]
    path = tmp_path / T33.name
    path.write_text(text.replace(first, first.replace(" - ", pair)))
    return path


def outcomes(path: Path) -> dict[tuple[str, str], Status]:
    return {(c.row, c.column.split(" (")[0] if c.column.startswith("Pct.") else c.column.split(" ")[-1]): c.status
            for c in derive_table(path).checks}


@pytest.mark.parametrize("pair", ["->", " -> ", " → ", "→", " to ", "-", "=>"])
def test_table_33_reads_its_run_pairs_however_they_are_written(tmp_path, pair):
    # 24 cells: 23 agree with Table 34's printed values, the 24th is printed `136.0%?` (unknown).
    path = table_33(tmp_path, pair)
    result = derive_table(path)
    assert result.tally.checked == 23 and result.tally.counts[Status.AGREE] == 23, pair
    assert result.tally.counts[Status.UNKNOWN] == 1
    assert not [c for c in result.checks if c.status is Status.NOT_DERIVABLE]


def test_table_33_with_arrows_fails_where_table_34_disagrees(tmp_path):
    # A PBT/CMD of Y64F480E changed in Table 34: both changes that use it fail, as with spaces.
    path = table_33(tmp_path, "->")
    t34 = tmp_path / T34.name
    text = t34.read_text()
    line = next(li for li in text.splitlines() if li.startswith("PBT/CMD,"))
    cells = line.split(",")
    cells[4] = f"{float(cells[4]) + 2:.3f}"     # Y64F480E
    t34.write_text(text.replace(line, ",".join(cells)))
    bad = {(c.row, c.column) for c in derive_table(path).disagreements}
    assert bad == {("PBT/CMD", "Y64F4809->Y64F480E Delta"), ("PBT/CMD", "Pct. (column 3)"),
                   ("PBT/CMD", "Y64F480E->Y64F480D Delta"), ("PBT/CMD", "Pct. (column 5)")}


@pytest.mark.parametrize("heading,pair", [
    ("Y64F4809->Y64F480E Delta", ("Y64F4809", "Y64F480E")),
    ("Delta (V1.11->V1.12)", ("V1.11", "V1.12")),
    ("Delta V1.11 to V1.12", ("V1.11", "V1.12")),
    ("Pct. A->B", ("A", "B")),
])
def test_arrow_headings_name_their_runs(heading, pair):
    found = change_heading(heading)
    assert found is not None and found.pair() == pair


def test_a_hyphen_inside_a_run_id_never_splits_it():
    found = change_heading("Delta 20261128-003516-sqlite-release-a05c")
    assert found is not None and found.hyphen_pair() is None
    joined = change_heading("Y64F4809-Y64F480E Delta")
    assert joined is not None and joined.hyphen_pair() == ("Y64F4809", "Y64F480E")


# -- transposed metric tables ---------------------------------------------------------------------

def test_table_34_transposed_gives_the_same_checks(tmp_path):
    rows = [line.split(",") for line in T34.read_text().splitlines()]
    assert all(len(r) == len(rows[0]) for r in rows)
    turned = [list(c) for c in zip(*rows)]
    turned[0][0] = "Run Id"
    path = tmp_path / "t34.csv"
    path.write_text("\n".join(",".join(r) for r in turned) + "\n")
    upright = {(c.row, c.column): (c.status, c.recomputed) for c in derive_table(T34).checks}
    result = derive_table(path)
    assert {(c.row, c.column): (c.status, c.recomputed) for c in result.checks} == upright
    assert len(upright) > 100


# -- refusals: the shape seen and the shapes expected -----------------------------------------------

def test_a_table_of_no_shape_is_refused_naming_what_it_saw(tmp_path):
    path = tmp_path / "dump.tsv"
    path.write_text("Dump Size\tNo real storage constraint\tReal storage constrained\n10 GB\t91%\t86%\n"
                    "20 GB\t92%\t76%\n")
    with pytest.raises(InputError) as info:
        read_table(path)
    message = info.value.message
    assert info.value.line == 1 and info.value.field == "Dump Size"
    assert ("saw a tab-separated table headed `Dump Size`, 2 columns (`No real storage constraint`, `Real storage "
            "constrained`) and 2 rows (`10 GB`, `20 GB`), read as printed and transposed") in message
    assert "no change column" in message and "no row or column labelled `Average`" in message
    assert "expected the seed-table format" in message and "or one of these transposed" in message


def test_a_sentence_copied_above_a_tab_separated_table_is_left_out(tmp_path):
    path = tmp_path / "lspr.txt"
    path.write_text("z/OS V1.12 performance Results - LSPR Workloads\n\n"
                    + (DATA / "001-lspr-zos-v112-as-printed.tsv").read_text())
    assert_lspr_read(path)
    assert "text above the table left out (line 1)" in derive_table(path).notes
