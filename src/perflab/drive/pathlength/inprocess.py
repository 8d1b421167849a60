"""An in-process SUT (sqlite, python) counted inside its worker: the worker runs under callgrind
and dumps one labelled part per counted call (drive/pathlength/worker.py); here are the command
that starts it and the reading of its dumps into instructions per transaction.

Each part holds the call and the two client requests around it. The empty calls (`null-N`)
hold the requests alone; their median is subtracted from every transaction's part, so a
transaction's count is the adapter's call and the SUT's work: the instructions a transaction
costs the worker, the pathlength the seeds' hardware counters gave.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from perflab.drive.pathlength.functions import CodeRange, median_part, profile_of, read_parts, write_profile
from perflab.drive.pathlength.valgrind import callgrind_parts, callgrind_prefix, labelled_counts

#: empty calls counted to measure the client requests' own instructions (their median is used:
#: the first may include a one-off cost, e.g. the label's first lookup)
NULLS = 9


def worker_command(spec_path: Path, out_file: Path) -> list[str]:
    """The counted worker under callgrind (the same interpreter as the driver's)."""
    return [*callgrind_prefix(str(out_file)), sys.executable, "-m", "perflab.drive.pathlength.worker",
            str(spec_path)]


@dataclass(frozen=True)
class InProcessCounts:
    overhead: float             # the median empty call's instructions, subtracted
    per_transaction: list[float | None]  # in the counted order; None: no dump for it


def read_counts(callgrind_file: Path, transactions: int, nulls: int = NULLS) -> InProcessCounts:
    """Each counted transaction's instructions, less the requests' own. Raises ValueError when
    the file holds none of the empty calls (callgrind did not see the client requests)."""
    counts = labelled_counts(callgrind_parts(callgrind_file))
    empty = [counts[f"null-{n}"] for n in range(nulls) if f"null-{n}" in counts]
    if not empty:
        raise ValueError(f"{callgrind_file.name} has no dump of the client requests (parts: {len(counts)})")
    overhead = float(statistics.median(empty))
    per_tx: list[float | None] = []
    for n in range(transactions):
        part = counts.get(f"tx-{n}")
        per_tx.append(None if part is None else max(0.0, part - overhead))
    return InProcessCounts(overhead, per_tx)


def write_functions(callgrind_file: Path, names: list[str | None], code: list[CodeRange], run_dir: Path,
                    nulls: int = NULLS) -> int:
    """The per-function tables of the counted transactions (drive/pathlength/functions.py):
    `names[n]` is counted transaction n's name, None when its count is not used. Returns the
    functions written."""
    prefix = "Client Request: "
    parts = {p.trigger.removeprefix(prefix): p for p in read_parts(callgrind_file, code)
             if p.trigger.startswith(prefix)}
    empty = median_part([parts[f"null-{n}"] for n in range(nulls) if f"null-{n}" in parts])
    if empty is None:
        raise ValueError(f"{callgrind_file.name} has no dump of the client requests")
    profile = profile_of([(n, name, parts[f"tx-{n}"]) for n, name in enumerate(names) if f"tx-{n}" in parts], empty)
    return write_profile(profile, run_dir)
