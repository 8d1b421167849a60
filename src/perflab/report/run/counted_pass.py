"""A run's counted pass, one row per transaction name: how many were counted and their
instructions (pathlength.parquet, drive/pathlength/). INSTR/CMD (I) is the window's mix at these
means (reduce/pathlength.py); the spread within a name is what a page quoting "every count the
same to the instruction" or "the counts spread by the accounts they touch" needs to cite."""

from __future__ import annotations

from pathlib import Path

from perflab.reduce.pathlength import counts_by_name
from perflab.report.view import Table

TITLE = "Counted pass (I): instructions per transaction"
COLUMNS = ["transaction", "counted", "mean (instr)", "min (instr)", "max (instr)", "s.d. (instr)"]


def counted_pass_table(run_dir: Path) -> Table | None:
    """One row per counted transaction name (completed, with a count); None without a pass."""
    path = Path(run_dir) / "pathlength.parquet"
    if not path.is_file():
        return None
    rows = []
    for name, values in counts_by_name(path).items():
        spread = f"{values.std(ddof=1):,.0f}" if values.size > 1 else "na"
        rows.append([name, f"{values.size:,}", f"{values.mean():,.0f}", f"{values.min():,.0f}",
                     f"{values.max():,.0f}", spread])
    return Table(list(COLUMNS), rows) if rows else None
