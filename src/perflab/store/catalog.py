"""The run store: one directory per run, indexed by an embedded SQLite catalog.

The catalog is an index, not the data: every row can be rebuilt from the run directories'
run.json files (`Store.rescan`). SQLite's transactions keep it readable whatever happens to
a writer (SIGKILL included), and a row is only ever added after its run.json exists.

perflab never deletes the catalog. A catalog error (disk full, locked, damaged) is reported as
such; `perflab runs --rescan` rebuilds the index into a new file beside it and swaps it in with
one rename, so a reader sees the old catalog or the new one, never none.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.errors import InputError
from perflab.records.run import RunRecord, parse_run_record
from perflab.store.outcome import OutcomeKind, RunOutcome, outcome_of, record_outcome

#: A row of the catalog's runs table, as sqlite3 gives and takes it (the columns of _SCHEMA).
Row = tuple[Any, ...]
#: An outcome judged with a run's reduction, as a catalog stored it: (kind, reasons as JSON,
#: judged, the status it was judged at).
Judged = tuple[Any, ...]

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
    path TEXT NOT NULL,
    outcome TEXT,
    outcome_reasons TEXT,
    judged INTEGER
)
"""
#: Every column, in the table's order (a catalog made before a column existed has it added at
#: its end: `_migrate`).
_COLUMNS = ("run_id", "created", "workload", "label", "study", "status", "reason", "valid", "users", "rate", "pid",
            "etr_t", "path", "outcome", "outcome_reasons", "judged")
#: Columns added after the first catalogs were written, with their types.
_ADDED = {"outcome": "TEXT", "outcome_reasons": "TEXT", "judged": "INTEGER"}


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


def shown_status(status: str, pid: int | None) -> str:
    """A run's status as every list shows it (perflab.store.status): a run still marked
    `running` whose driver is gone was killed (SIGKILL, power loss), and is `abandoned`."""
    return "abandoned" if status == "running" and not pid_alive(pid) else status


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
    outcome: str | None = None            # the run's outcome as last judged (perflab.outcome), stored
    outcome_reasons: str | None = None    # its reasons: a JSON list of caveats
    judged: bool | None = None            # judged with the run's reduction (every gate), not its record alone

    @property
    def shown_status(self) -> str:
        return shown_status(self.status, self.pid)

    @property
    def shown_outcome_fields(self) -> dict[str, Any]:
        """The shown outcome as `perflab runs --json` gives it (kind, reasons' sentences, judged)."""
        outcome = self.shown_outcome
        return {"outcome": outcome.kind.value, "outcome_reasons": outcome.reason_texts(), "judged": outcome.judged}

    @property
    def shown_outcome(self) -> RunOutcome:
        """The run's outcome as lists show it (perflab.outcome): running or abandoned while its
        status says running, else the outcome stored when it was last judged (a row indexed by an
        older perflab has none: what its status and validity say)."""
        status = self.shown_status
        if status in ("running", "abandoned"):
            return RunOutcome(OutcomeKind(status), judged=False)
        if self.outcome is None:
            kind = status if status != "complete" else ("invalid" if self.valid is False else "complete")
            return outcome_of(kind, [self.reason] if self.reason else None, judged=False)
        try:
            reasons = json.loads(self.outcome_reasons or "[]")
        except ValueError:
            reasons = []
        return outcome_of(self.outcome, reasons if isinstance(reasons, list) else [], bool(self.judged))


class CatalogError(InputError):
    """The catalog could not be read or written; the run directories are untouched."""


#: How long an open of the catalog is tried again while another process holds a lock on it.
OPEN_RETRY_S = 30.0


class Store:
    def __init__(self, home: str | Path | None = None):
        self.home = store_home(home)
        self.runs_dir = self.home / "runs"
        self.catalog_path = self.home / "catalog.sqlite"

    # --- catalog ---------------------------------------------------------------------------

    def _connect(self, path: Path | None = None) -> sqlite3.Connection:
        # Two processes opening one catalog at once (a duet's two runs storing themselves) can
        # meet a lock SQLite's busy handler does not wait on (setting WAL, or a read that turns
        # into the schema's write): "database is locked" at once. Such an open is tried again.
        deadline = time.monotonic() + OPEN_RETRY_S
        while True:
            try:
                self.runs_dir.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(path or self.catalog_path, timeout=30)
                try:
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.execute(_SCHEMA)
                    _migrate(conn)
                except BaseException:
                    conn.close()
                    raise
                return conn
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() >= deadline:
                    raise self._error(exc, "open") from None
                time.sleep(0.05)
            except (sqlite3.Error, OSError) as exc:
                raise self._error(exc, "open") from None

    def _error(self, exc: Exception, doing: str) -> CatalogError:
        detail = getattr(exc, "strerror", None) or str(exc)
        return CatalogError(f"cannot {doing} the catalog ({detail}); the runs themselves are untouched -- "
                            f"`perflab runs --rescan` rebuilds the catalog from them", file=self.catalog_path)

    def index(self, record: RunRecord, etr_t: float | None = None) -> None:
        """Insert or update the catalog row of a run. `etr_t` None keeps a value already indexed
        (ETR (T) is filled in after reduction, by whoever reduced the run)."""
        self._write(self.catalog_path, [self._row_of(record, etr_t)])

    def set_etr(self, run_id: str, etr_t: float | None, outcome: RunOutcome | None = None) -> None:
        """What the run's reduction tells: its ETR (T) and, when given, its outcome judged with
        every gate (perflab.outcome.judge_outcome(record, metrics))."""
        with self._connect() as conn:
            try:
                if outcome is None:
                    conn.execute("UPDATE runs SET etr_t = ? WHERE run_id = ?", (etr_t, run_id))
                else:
                    conn.execute("UPDATE runs SET etr_t = ?, outcome = ?, outcome_reasons = ?, judged = ? "
                                 "WHERE run_id = ?", (etr_t, *_outcome_columns(outcome), run_id))
            except sqlite3.Error as exc:
                raise self._error(exc, "update") from None

    def _row_of(self, record: RunRecord, etr_t: float | None, judged: Judged | None = None) -> Row:
        """The catalog row of a record. Its outcome is what the record alone says, unless
        `judged` -- an outcome judged with the run's reduction, as an older catalog stored it
        (kind, reasons, judged, the status it was judged at) -- is given for the same status."""
        cfg = record.config
        outcome = _outcome_columns(record_outcome(record))
        if judged is not None and judged[0] is not None and judged[2] and record.status == judged[3]:
            outcome = tuple(judged[:3])
        return (record.run_id, record.created, record.workload_name, record.label, record.study, record.status,
                record.reason, None if record.valid is None else int(bool(record.valid)), cfg.users, cfg.rate,
                record.pid, etr_t, str(self.run_dir(record.run_id)), *outcome)

    def _write(self, path: Path, rows: list[Row]) -> None:
        conn = self._connect(path)
        try:
            with conn:
                # Keep an ETR (T) already indexed when the new row has none (re-indexing a run), and
                # an outcome judged with the run's reduction while its status is the same.
                keep = "runs.judged = 1 AND runs.status = excluded.status AND excluded.judged = 0"
                conn.executemany(
                    f"INSERT INTO runs ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
                    "ON CONFLICT(run_id) DO UPDATE SET "
                    "created=excluded.created, workload=excluded.workload, label=excluded.label, "
                    "study=excluded.study, status=excluded.status, reason=excluded.reason, valid=excluded.valid, "
                    "users=excluded.users, rate=excluded.rate, pid=excluded.pid, "
                    "etr_t=COALESCE(excluded.etr_t, runs.etr_t), path=excluded.path, "
                    f"outcome=CASE WHEN {keep} THEN runs.outcome ELSE excluded.outcome END, "
                    f"outcome_reasons=CASE WHEN {keep} THEN runs.outcome_reasons ELSE excluded.outcome_reasons END, "
                    f"judged=CASE WHEN {keep} THEN runs.judged ELSE excluded.judged END", rows)
        except sqlite3.Error as exc:
            raise self._error(exc, "write") from None
        finally:
            conn.close()

    def rows(self, limit: int | None = None) -> list[RunRow]:
        conn = self._connect()
        try:
            query = f"SELECT {', '.join(_COLUMNS)} FROM runs ORDER BY created DESC, run_id DESC"
            if limit:
                query += f" LIMIT {int(limit)}"
            return [_row(r) for r in conn.execute(query)]
        except sqlite3.Error as exc:
            raise self._error(exc, "read") from None
        finally:
            conn.close()

    def row(self, run_id: str) -> RunRow | None:
        """The catalog row of one run, or None when the catalog has none."""
        conn = self._connect()
        try:
            found = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        except sqlite3.Error as exc:
            raise self._error(exc, "read") from None
        finally:
            conn.close()
        return None if found is None else _row(found)

    def reconcile(self) -> int:
        """Index what run.json files say and the catalog does not: a driver killed between writing
        a run.json and its catalog row leaves a run unlisted (at its opening) or listed as
        running (at its end). Cheap: one directory listing, and run.json read only for those
        runs. Returns the number of rows written; a catalog that cannot be written is left as is
        (listing it still works)."""
        known = {r.run_id: r for r in self.rows()}
        fixes = []
        for run_json in self.runs_dir.glob("*/run.json"):
            row = known.get(run_json.parent.name)
            if row is not None and not (row.status == "running" and row.shown_status == "abandoned"):
                continue
            try:
                record = parse_run_record(json.loads(run_json.read_text()), run_json)
            except (OSError, ValueError, InputError):
                continue
            if row is None or record.status != row.status:
                fixes.append(self._row_of(record, None))
        if fixes:
            try:
                self._write(self.catalog_path, fixes)
            except CatalogError:
                return 0
        return len(fixes)

    def _old_etr(self) -> dict[str, float]:
        """ETR (T) values the current catalog holds (they are kept across a rescan)."""
        return {run_id: etr for run_id, (etr, _) in self._old_reduced().items() if etr is not None}

    def _old_reduced(self) -> dict[str, tuple[float | None, Judged | None]]:
        """What the current catalog holds from the runs' reductions -- ETR (T), and the outcome
        judged with every gate (kind, reasons, judged, the status it was judged at) -- kept
        across a rescan."""
        if not self.catalog_path.exists():
            return {}
        try:
            conn = sqlite3.connect(f"file:{self.catalog_path}?mode=ro", uri=True, timeout=30)
            try:
                names = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
                if "judged" not in names:   # a catalog from before outcomes were stored
                    return {r[0]: (r[1], None) for r in conn.execute(
                        "SELECT run_id, etr_t FROM runs WHERE etr_t IS NOT NULL")}
                return {r[0]: (r[1], (r[2], r[3], r[4], r[5]) if r[4] else None) for r in conn.execute(
                    "SELECT run_id, etr_t, outcome, outcome_reasons, judged, status FROM runs "
                    "WHERE etr_t IS NOT NULL OR judged = 1")}
            finally:
                conn.close()
        except sqlite3.Error:
            return {}

    def rescan(self, rebuild: bool = False, etr_of: Callable[[Path], float | None] | None = None) -> int:
        """Re-index every run directory that has a readable run.json.

        rebuild: build a complete new catalog in a temporary file and rename it over the old one
        (atomic); runs indexed meanwhile by a concurrent writer are carried over from the old one.
        ETR (T) is kept from the old catalog; a finished run it has none for (the catalog was
        lost) gets `etr_of(run_dir)` -- the reduction, which the store does not import.
        """
        records = []
        for run_json in sorted(self.runs_dir.glob("*/run.json")):
            try:
                records.append(parse_run_record(json.loads(run_json.read_text()), run_json))
            except (OSError, ValueError, InputError):
                continue
        if not rebuild:
            self._write(self.catalog_path, [self._row_of(r, None) for r in records])
            return len(records)
        reduced = self._old_reduced()
        etr = {run_id: value for run_id, (value, _) in reduced.items() if value is not None}
        if etr_of is not None:
            for r in records:
                if r.run_id not in etr and r.status != "running":
                    try:
                        value = etr_of(self.run_dir(r.run_id))
                    except Exception:  # a run that cannot be reduced keeps a blank ETR (T)
                        value = None
                    if value is not None and value == value:
                        etr[r.run_id] = value
        tmp = self.home / f".catalog.{os.getpid()}.{secrets.token_hex(3)}.sqlite"
        try:
            self._write(tmp, [self._row_of(r, etr.get(r.run_id), (reduced.get(r.run_id) or (None, None))[1])
                              for r in records])
            os.replace(tmp, self.catalog_path)
        finally:
            for leftover in (tmp, Path(str(tmp) + "-wal"), Path(str(tmp) + "-shm")):
                leftover.unlink(missing_ok=True)
        # Whatever a concurrent writer indexed while the new file was built (its run.json may
        # have appeared after the scan) is indexed again from its directory.
        seen = {r.run_id for r in records}
        late = [p for p in self.runs_dir.glob("*/run.json") if p.parent.name not in seen]
        for run_json in late:
            try:
                self.index(parse_run_record(json.loads(run_json.read_text()), run_json))
            except (OSError, ValueError, InputError):
                continue
        return len(records) + len(late)

    # --- run directories --------------------------------------------------------------------

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    def create_run_dir(self, run_id: str) -> Path:
        path = self.run_dir(run_id)
        path.mkdir(parents=True, exist_ok=False)
        return path

    def run_is_live(self, run_id: str) -> bool | None:
        """Whether a run of this store may still be running (its run.json says running and its
        driver's pid is alive); None when this store has no such run."""
        path = self.run_dir(run_id) / "run.json"
        try:
            record = parse_run_record(json.loads(path.read_text()), path)
        except (OSError, ValueError, InputError):
            return None
        return shown_status(record.status, record.pid) == "running"

    def resolve(self, ref: str) -> Path:
        """A run directory from a run id, a unique id prefix, 'last', or a path.

        `ref` is matched as text, never as a glob pattern: `**`, `/` or a 5,000-character
        reference is "no run", not a traceback."""
        candidate = Path(ref)
        if ref and _is_file(candidate / "run.json"):
            return candidate
        if ref == "last":
            rows = self.rows(limit=1)
            if not rows:
                raise InputError("no runs in the store yet", field="RUN")
            return Path(rows[0].path)
        matches = []
        if is_plain_name(ref):
            if _is_file(self.run_dir(ref) / "run.json"):
                return self.run_dir(ref)
            try:
                children = sorted(self.runs_dir.iterdir())
            except OSError:
                children = []
            matches = [p for p in children if p.name.startswith(ref) and _is_file(p / "run.json")]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise InputError(f"{ref!r} matches {len(matches)} runs; give more of the id", field="RUN")
        raise InputError(f"no run {ref!r} in {self.runs_dir}", field="RUN")


def _busy(exc: sqlite3.Error) -> bool:
    """Another connection holds the database ("database is locked"): SQLite's own code, its
    primary part (an extended code such as SQLITE_BUSY_RECOVERY is a kind of it)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def is_plain_name(ref: str) -> bool:
    """A run or study id (or a prefix of one): one path component, nothing a filesystem reads
    as a path or refuses (/, NUL, . and .., longer than a file name can be)."""
    return bool(ref) and "/" not in ref and "\0" not in ref and ref not in (".", "..") and len(ref.encode()) <= 255


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):   # a name too long, a NUL byte
        return False


def _row(r: Row) -> RunRow:
    values = list(r)
    values[7] = None if values[7] is None else bool(values[7])
    values[15] = None if values[15] is None else bool(values[15])
    return RunRow(*values)


def _outcome_columns(outcome: RunOutcome) -> tuple[str, str, int]:
    """An outcome as the catalog stores it: kind, reasons (JSON caveats), judged."""
    return (outcome.kind.value, json.dumps([c.model_dump(mode="json") for c in outcome.reasons]),
            int(outcome.judged))


def _migrate(conn: sqlite3.Connection) -> None:
    """Add the columns a catalog written by an older perflab lacks (their values: NULL, shown
    from the status until the run is indexed again). Two processes may race to add one: the
    loser's "duplicate column" is the winner's work."""
    have = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    for name, kind in _ADDED.items():
        if name not in have:
            try:
                conn.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
            except sqlite3.OperationalError:
                if name not in {r[1] for r in conn.execute("PRAGMA table_info(runs)")}:
                    raise
