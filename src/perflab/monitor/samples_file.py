"""samples.parquet from the monitor's rows: one float64 column per counter, in the order the
columns first appeared, and the monitor's metadata under the schema key `perflab.samples`
(docs/architecture.md has the column contract).

Two processes write it through this one function: the driver, from the rows the monitor hands
over when asked to stop (the driver has pyarrow loaded already, so the write costs it a few
milliseconds), and the monitor itself when the driver is gone or asked it to end otherwise
(SIGTERM, a closed control pipe, its own error): then the monitor imports pyarrow, about
0.3-0.5 CPU-s, at the end -- never while it samples.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The schema metadata key that carries the monitor's interval, t0, sources' status and end.
META_KEY = "perflab.samples"


@dataclass(frozen=True)
class SampleRows:
    """What the monitor hands over when it stops: its rows, the columns in first-seen order, the
    metadata of the file, and the summary of the run's sampling."""

    columns: list[str]
    rows: list[dict[str, float]]
    meta: dict[str, Any]
    summary: dict[str, Any]


def write_samples(out: Path, columns: Sequence[str], rows: Sequence[Mapping[str, float]],
                  meta: Mapping[str, Any]) -> None:
    """Write samples.parquet atomically (a reader sees no file or the whole one). A counter
    missing from a row (its source came later, or failed once) is a null there."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from perflab import arrow_arrays
    from perflab.store.atomic import write_atomic

    table = pa.table({n: arrow_arrays.numbers([row.get(n) for row in rows], pa.float64()) for n in columns})
    table = table.replace_schema_metadata({META_KEY: json.dumps(dict(meta))})
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, lambda tmp: pq.write_table(table, tmp))
