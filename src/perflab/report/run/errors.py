"""The error messages of a run's failed transactions, most frequent first."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import cast

import numpy as np

from perflab.reduce.window import Window
from perflab.report.view import Table

#: Distinct error messages listed (the most frequent first), and the characters kept of each.
ERROR_ROWS = 20
ERROR_CHARS = 300
COLUMNS = ["message", "transaction", "count", "in window"]


def error_table(run_dir: Path, window: Window | None) -> Table | None:
    """Counted over the whole run, not only the window: an error during stabilization is worth
    seeing too; "in window" says how many of them the measurement counted. None without
    transactions.parquet (or when it cannot be read: the reduction says why)."""
    path = Path(run_dir) / "transactions.parquet"
    if not path.exists():
        return None
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path, columns=["ok", "error", "end", "transaction"])
    except Exception:  # pyarrow raises several types for a damaged file; the reduction reports it
        return None
    # a bool column stays one: pyarrow's stubs type fill_null's result as any value
    ok = cast("pa.ChunkedArray[pa.BooleanScalar]", pc.fill_null(table.column("ok"), pa.scalar(False)))
    failed = table.filter(pc.invert(ok))
    if failed.num_rows == 0:
        return Table(list(COLUMNS), [])
    ends = failed.column("end").to_numpy(zero_copy_only=False)
    inside = window.contains(ends) if window is not None else np.zeros(len(ends), bool)
    counts: Counter[tuple[str, str]] = Counter()
    in_window: Counter[tuple[str, str]] = Counter()
    for message, tx, flag in zip(failed.column("error").to_pylist(), failed.column("transaction").to_pylist(), inside):
        key = (str(message or "(no message)")[:ERROR_CHARS], str(tx))
        counts[key] += 1
        in_window[key] += int(flag)
    rows = [[message, tx, str(n), str(in_window[(message, tx)])] for (message, tx), n in counts.most_common(ERROR_ROWS)]
    return Table(list(COLUMNS), rows)
