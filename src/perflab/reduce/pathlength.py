"""INSTRUCTIONS (I) from the counted pass (pathlength.parquet, drive/pathlength/): the window's
completed transactions, each at its name's mean count.

Why per name: the counted pass draws its transactions from the mix, so its proportions of each
transaction differ a little from the window's; weighting each name's mean by the window's count
of that name makes INSTR/CMD (I) the window's own mix at the counted pathlengths. A name the pass
did not count (rare in a long mix) gets the mean of all counted transactions, and the note says so.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from perflab.reduce.transactions import WindowTransactions, read_parquet


def counts_by_name(path: Path) -> dict[str, np.ndarray]:
    """The counted pass's instructions per transaction name (sorted by name): the completed
    transactions with a count only."""
    table = read_parquet(path, ["transaction", "instructions", "ok"])
    names = np.asarray([str(n) for n in table.column("transaction").to_pylist()])
    counts = table.column("instructions").to_numpy(zero_copy_only=False).astype(np.float64)
    good = np.asarray(table.column("ok").to_pylist(), dtype=bool) & ~np.isnan(counts)
    return {name: counts[good & (names == name)] for name in sorted(set(names[good].tolist()))}


def counted_instructions(path: Path, tx: WindowTransactions) -> tuple[float | None, str]:
    """The window's INSTRUCTIONS (I) from the counted pass, and a note on how it was made."""
    counted = counts_by_name(path)
    if not counted:
        return None, "the counted pass has no completed transaction with a count: INSTR/CMD (I) is na"
    every = np.concatenate(list(counted.values()))
    overall = float(every.mean())
    by_name = {name: float(values.mean()) for name, values in counted.items()}
    window_ok = tx.ok
    if tx.tx_code is None or tx.tx_names is None:
        total = overall * int(window_ok.sum())
        uncounted: list[str] = []
    else:
        total, uncounted = 0.0, []
        for code, name in enumerate(tx.tx_names):
            n = int((window_ok & (tx.tx_code == code)).sum())
            if n == 0:
                continue
            if name not in by_name:
                uncounted.append(name)
            total += n * by_name.get(name, overall)
    note = (f"INSTR/CMD (I) is the counted pass's: {every.size} transactions counted under valgrind after "
            f"the window (pathlength.parquet), each name's mean weighted by the window's completed transactions")
    if uncounted:
        note += f"; {', '.join(uncounted)} not counted, taken at the mean of all ({overall:,.0f})"
    return (total if math.isfinite(total) else None), note
