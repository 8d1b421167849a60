"""The run store: one directory per run, indexed by an embedded SQLite catalog.

The catalog is an index, not the data: every row can be rebuilt from the run directories'
run.json files (`Store.rescan`). SQLite's transactions keep it readable whatever happens to
a writer (SIGKILL included), and a row is only ever added after its run.json exists.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from perflab.errors import InputError

DEFAULT_HOME = "perflab-runs"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created TEXT NOT NULL,
    workload TEXT NOT NULL,
    label TEXT,
    study TEXT,
    status TEXT NOT NULL,
    reason TEXT,
    valid INTEGER,
    users INTEGER,
    rate REAL,
    pid INTEGER,
    etr_t REAL,
    path TEXT NOT NULL
)
"""


def store_home(explicit: str | Path | None = None) -> Path:
    return Path(explicit or os.environ.get("PERFLAB_HOME") or DEFAULT_HOME)


def new_run_id(workload_name: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in workload_name)[:40]
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{safe}-{secrets.token_hex(2)}"


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class RunRow:
    run_id: str
    created: str
    workload: str
    label: str | None
    study: str | None
    status: str
    reason: str | None
    valid: bool | None
    users: int | None
    rate: float | None
    pid: int | None
    etr_t: float | None
    path: str

    @property
    def shown_status(self) -> str:
        # A run still marked running whose driver is gone was killed (SIGKILL, power loss).
        if self.status == "running" and not pid_alive(self.pid):
            return "abandoned"
        return self.status


class Store:
    def __init__(self, home: str | Path | None = None):
        self.home = store_home(home)
        self.runs_dir = self.home / "runs"

    # --- catalog ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.home / "catalog.sqlite", timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(_SCHEMA)
        return conn

    def index(self, run: dict[str, Any], etr_t: float | None = None) -> None:
        """Insert or update the catalog row of a run from its run.json content."""
        cfg = run.get("config", {})
        row = (
            run["run_id"], run.get("created", ""), run.get("workload", {}).get("name", "?"), run.get("label"),
            run.get("study"), run.get("status", "?"), run.get("reason"),
            None if run.get("valid") is None else int(bool(run.get("valid"))),
            cfg.get("users"), cfg.get("rate"), run.get("pid"), etr_t, str(self.run_dir(run["run_id"])),
        )
        with self._connect() as conn:
            conn.execute("INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", row)

    def rows(self, limit: int | None = None) -> list[RunRow]:
        try:
            with self._connect() as conn:
                query = "SELECT * FROM runs ORDER BY created DESC, run_id DESC"
                if limit:
                    query += f" LIMIT {int(limit)}"
                return [_row(r) for r in conn.execute(query)]
        except sqlite3.DatabaseError:
            # A damaged index is rebuilt from the run directories, which hold the data.
            self.rescan(rebuild=True)
            with self._connect() as conn:
                return [_row(r) for r in conn.execute("SELECT * FROM runs ORDER BY created DESC")]

    def rescan(self, rebuild: bool = False) -> int:
        """Re-index every run directory that has a readable run.json."""
        if rebuild:
            (self.home / "catalog.sqlite").unlink(missing_ok=True)
        count = 0
        for run_json in sorted(self.runs_dir.glob("*/run.json")):
            try:
                run = json.loads(run_json.read_text())
            except (OSError, ValueError):
                continue
            self.index(run)
            count += 1
        return count

    # --- run directories --------------------------------------------------------------------

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    def create_run_dir(self, run_id: str) -> Path:
        path = self.run_dir(run_id)
        path.mkdir(parents=True, exist_ok=False)
        return path

    def resolve(self, ref: str) -> Path:
        """A run directory from a run id, a unique id prefix, 'last', or a path."""
        candidate = Path(ref)
        if (candidate / "run.json").exists():
            return candidate
        if ref == "last":
            rows = self.rows(limit=1)
            if not rows:
                raise InputError("no runs in the store yet", field="RUN")
            return Path(rows[0].path)
        if (self.run_dir(ref) / "run.json").exists():
            return self.run_dir(ref)
        matches = [p.parent for p in self.runs_dir.glob(f"{ref}*/run.json")]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise InputError(f"{ref!r} matches {len(matches)} runs; give more of the id", field="RUN")
        raise InputError(f"no run {ref!r} in {self.runs_dir}", field="RUN")

    def iter_runs(self) -> Iterator[dict]:
        for run_json in sorted(self.runs_dir.glob("*/run.json")):
            try:
                yield json.loads(run_json.read_text())
            except (OSError, ValueError):
                continue


def _row(r: tuple) -> RunRow:
    values = list(r)
    values[7] = None if values[7] is None else bool(values[7])
    return RunRow(*values)
