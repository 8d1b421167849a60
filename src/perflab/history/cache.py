"""What each run's reduction gave, kept so that a history of hundreds of runs is read in a moment.

A history reads every run of the store, and reducing one real run takes a tenth of a second to a
second and a half (docs/performance.md); a CI job runs `perflab history` after every run. The
values and the outcome of each reduced run are kept in `<store>/history/metrics.sqlite`, keyed by
the run id and the size and modification time of the files its reduction reads: a run reduced
again (re-reduced with a new metric, its run.json rewritten) is read anew. The cache is an index
like the catalog: deleting it loses nothing but time.

`perflab serve` opens it read-only (the dashboard never writes the store) and keeps what it had to
reduce in memory.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from perflab.errors import InputError
from perflab.values import finite

#: The files a run's reduction reads: when one of them changes, the cached values are stale.
INPUTS = ("run.json", "transactions.parquet", "samples.parquet", "thinks.parquet", "pathlength.parquet")
#: Bumped when what is cached changes meaning (the rows, the outcome rule).
CACHE_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS reduced (
    run_id TEXT PRIMARY KEY,
    stamp TEXT NOT NULL,
    reduced TEXT NOT NULL
)
"""


@dataclass(frozen=True)
class Reduced:
    """One run as a history needs it: every value of its reduction by catalog key (per-class rows
    as `key.class`), and its outcome under the one exclusion rule (perflab.outcome)."""

    values: dict[str, float | None]
    outcome: str
    reasons: list[str] = field(default_factory=list)

    def dump(self) -> str:
        return json.dumps({"values": self.values, "outcome": self.outcome, "reasons": self.reasons,
                           "version": CACHE_VERSION}, separators=(",", ":"))

    @classmethod
    def load(cls, text: str) -> Reduced | None:
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
            return None
        values = {str(k): finite(v) for k, v in (data.get("values") or {}).items()}
        return cls(values, str(data.get("outcome") or "complete"), [str(r) for r in data.get("reasons") or []])


def stamp(run_dir: Path) -> str:
    """The size and modification time of each input file (absent ones as '-')."""
    parts = []
    for name in INPUTS:
        try:
            st = (run_dir / name).stat()
            parts.append(f"{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append("-")
    return "|".join(parts)


def reduce_for_history(run_dir: Path) -> Reduced:
    """Reduce one run and judge it with the one exclusion rule."""
    from perflab.outcome import judge_outcome
    from perflab.reduce.reduce import reduce_run

    metrics = reduce_run(run_dir)
    values = {k: finite(v) for k, v in metrics.values.items()}
    for cls, row in metrics.per_class.items():
        for key, value in row.items():
            values[f"{key}.{cls}"] = finite(value)
    assert metrics.record is not None    # reduce_run read run.json
    outcome = judge_outcome(metrics.record, metrics)
    return Reduced(values, outcome.kind.value, outcome.reason_texts())


class MetricsCache:
    """The cache of one store. `writable=False`: read what is there, never write (the dashboard)."""

    def __init__(self, home: Path, writable: bool = True):
        self.path = Path(home) / "history" / "metrics.sqlite"
        self.writable = writable
        self._memory: dict[tuple[str, str], Reduced] = {}

    def _connect(self) -> sqlite3.Connection | None:
        try:
            if self.writable:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=30)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(_SCHEMA)
                return conn
            if not self.path.is_file():
                return None
            return sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)
        except (sqlite3.Error, OSError) as exc:
            if not self.writable:
                return None
            raise InputError(f"cannot open the history's cache ({exc}); deleting it loses nothing but time",
                             file=self.path) from None

    def put(self, run_dir: Path, reduced: Reduced) -> None:
        """Keep `reduced` as the run's values at its files' current stamp."""
        conn = self._connect()
        if conn is None:
            return
        try:
            with conn:
                conn.execute("INSERT OR REPLACE INTO reduced (run_id, stamp, reduced) VALUES (?, ?, ?)",
                             (run_dir.name, stamp(run_dir), reduced.dump()))
        except sqlite3.Error as exc:
            raise InputError(f"cannot use the history's cache ({exc})", file=self.path) from None
        finally:
            conn.close()

    def reduced(self, run_dirs: list[Path]) -> dict[str, Reduced | InputError]:
        """Each run's reduction, from the cache where it is current, else reduced now (and kept).
        A run that cannot be reduced gives the InputError that says why."""
        stamps = {d.name: stamp(d) for d in run_dirs}
        found: dict[str, Reduced | InputError] = {}
        conn = self._connect()
        try:
            if conn is not None:
                try:
                    rows = conn.execute("SELECT run_id, stamp, reduced FROM reduced").fetchall()
                except sqlite3.Error:
                    rows = []
                for run_id, seen, text in rows:
                    if stamps.get(run_id) == seen:
                        loaded = Reduced.load(text)
                        if loaded is not None:
                            found[run_id] = loaded
            fresh: list[tuple[str, str, str]] = []
            for run_dir in run_dirs:
                run_id = run_dir.name
                if run_id in found:
                    continue
                memo = self._memory.get((run_id, stamps[run_id]))
                if memo is not None:
                    found[run_id] = memo
                    continue
                try:
                    result = reduce_for_history(run_dir)
                except InputError as exc:
                    found[run_id] = exc
                    continue
                found[run_id] = result
                self._memory[(run_id, stamps[run_id])] = result
                fresh.append((run_id, stamps[run_id], result.dump()))
            if fresh and conn is not None and self.writable:
                with conn:
                    conn.executemany("INSERT OR REPLACE INTO reduced (run_id, stamp, reduced) VALUES (?, ?, ?)", fresh)
        except sqlite3.Error as exc:
            raise InputError(f"cannot use the history's cache ({exc}); deleting it loses nothing but time",
                             file=self.path) from None
        finally:
            if conn is not None:
                conn.close()
        return found
