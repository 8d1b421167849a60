"""What the server reads from the store: catalog rows with filters, studies, run directories,
and the reports rendered from them (cached by the files' modification times).

Nothing here writes to the store. Ids in URLs are checked against a strict pattern before they
name a path, so a request can only reach `<store>/runs/<id>/` and `<store>/studies/<id>/`.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from perflab.errors import InputError
from perflab.records.live import LiveStatus, read_live
from perflab.records.run import RunRecord, read_run_record
from perflab.records.study import StudyDocument, read_study_document
from perflab.report.answer import answer_text
from perflab.store.catalog import RunRow, Store, shown_status
from perflab.store.outcome import OutcomeKind, RunOutcome, record_outcome
from perflab.store.status import current_run, study_status

#: Run and study ids as new_run_id makes them (and any sane hand-made name): no separators,
#: no "..", nothing a shell or a glob would read specially.
ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
STATUSES = ("running", "complete", "failed", "interrupted", "abandoned")
#: What a list's status filter also accepts: a run's outcome (perflab.store.outcome).
OUTCOMES = tuple(k.value for k in OutcomeKind if k.value not in STATUSES)
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
RUN_FILES = {"run.json": "application/json", "transactions.parquet": "application/vnd.apache.parquet",
             "samples.parquet": "application/vnd.apache.parquet", "live.json": "application/json"}


class NotFound(Exception):
    """An id in an address that names nothing in this store (a 404, not a bug)."""


def check_id(value: str, what: str) -> str:
    if not ID.match(value or "") or ".." in value:
        raise InputError(f"not a {what} id: {value!r}", field=what)
    return value


@dataclass
class RunFilter:
    workload: str = ""
    label: str = ""
    status: str = ""
    study: str = ""
    since: str = ""
    until: str = ""
    limit: int = 500

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> RunFilter:
        def text(name: str) -> str:
            return (query.get(name) or "").strip()

        f = cls(workload=text("workload"), label=text("label"), status=text("status"), study=text("study"),
                since=text("since"), until=text("until"))
        if f.status and f.status not in STATUSES + OUTCOMES:
            raise InputError(f"expected one of {', '.join(STATUSES + OUTCOMES)}, got {f.status!r}", field="status")
        for name in ("since", "until"):
            if getattr(f, name) and not DATE.match(getattr(f, name)):
                raise InputError(f"expected a date YYYY-MM-DD, got {getattr(f, name)!r}", field=name)
        limit = (query.get("limit") or "").strip()
        if limit:
            if not limit.isdigit() or not 1 <= int(limit) <= 100_000:
                raise InputError(f"expected a number from 1 to 100000, got {limit!r}", field="limit")
            f.limit = int(limit)
        return f

    def matches(self, row: RunRow, status: str, outcome: str | None = None) -> bool:
        def contains(value: str | None, wanted: str) -> bool:
            return not wanted or wanted.casefold() in (value or "").casefold()

        created = (row.created or "")[:10]
        # A label names a configuration (as compare's label:NAME does): matched whole; the
        # other text filters match a part, ignoring case.
        return (contains(row.workload, self.workload) and (not self.label or row.label == self.label)
                and contains(row.study, self.study) and (not self.status or self.status in (status, outcome))
                and (not self.since or created >= self.since) and (not self.until or created <= self.until))

    def query(self) -> dict[str, str]:
        """The filter as query parameters (the live stream of a list page asks with the same)."""
        out = {k: getattr(self, k) for k in ("workload", "label", "status", "study", "since", "until") if getattr(self, k)}
        if self.limit != RunFilter.limit:
            out["limit"] = str(self.limit)
        return out


@dataclass
class RunEntry:
    row: RunRow
    status: str                 # the catalog's shown status: running / abandoned / complete ...

    @property
    def running(self) -> bool:
        return self.status == "running"

    @property
    def outcome(self) -> RunOutcome:
        """What the run's outcome is (perflab.store.outcome): what the list shows."""
        return self.row.shown_outcome

    def as_json(self) -> dict[str, Any]:
        return {**self.row.__dict__, "status": self.status, **self.row.shown_outcome_fields}


class StoreView:
    """The server's read-only window on a store."""

    def __init__(self, home: Path):
        self.store = Store(home)
        self.home = self.store.home
        self.studies_dir = self.home / "studies"
        self._studies: dict[Path, tuple[tuple[int, int], StudyDocument | InputError]] = {}
        self._lock = threading.Lock()

    # -- runs ----------------------------------------------------------------------------

    def runs(self, f: RunFilter | None = None) -> list[RunEntry]:
        f = f or RunFilter()
        out: list[RunEntry] = []
        for row in self.store.rows():
            entry = RunEntry(row, row.shown_status)
            if f.matches(row, entry.status, entry.outcome.kind.value):
                out.append(entry)
                if len(out) >= f.limit:
                    break
        return out

    def run_dir(self, run_id: str) -> Path:
        check_id(run_id, "run")
        path = self.store.run_dir(run_id)
        if not (path / "run.json").is_file() or path.resolve().parent != self.store.runs_dir.resolve():
            raise NotFound(run_id)
        return path

    def run_record(self, run_id: str) -> RunRecord:
        """The run's run.json; InputError (file, field) when it cannot be read as one."""
        return read_run_record(self.run_dir(run_id) / "run.json")

    def run_outcome(self, record: RunRecord) -> RunOutcome:
        """The run's outcome as the lists show it: the catalog's (judged when the run was
        reduced), else what its record alone says."""
        row = self.store.row(record.run_id)
        return row.shown_outcome if row is not None else record_outcome(record)

    @staticmethod
    def run_status(record: RunRecord) -> str:
        """As the catalog shows it (perflab.store.status)."""
        return shown_status(record.status, record.pid)

    def live(self, run_id: str) -> LiveStatus | None:
        try:
            return read_live(self.run_dir(run_id))
        except (NotFound, InputError):
            return None

    @staticmethod
    def version(items: Iterable[Any]) -> str:
        """A short digest of what a list page shows, so its live stream can tell it changed."""
        return hashlib.sha1(json.dumps(list(items), default=str).encode()).hexdigest()[:16]

    def runs_version(self, entries: list[RunEntry]) -> str:
        return self.version((e.row.run_id, e.status, e.row.valid, e.row.etr_t, e.outcome.kind.value) for e in entries)

    # -- studies -------------------------------------------------------------------------

    def study_dir(self, study_id: str) -> Path:
        check_id(study_id, "study")
        path = self.studies_dir / study_id
        if not (path / "study.json").is_file() or path.resolve().parent != self.studies_dir.resolve():
            raise NotFound(study_id)
        return path

    def study(self, study_id: str) -> StudyDocument:
        """The study's study.json; InputError (file, field) when it cannot be read as one."""
        return self._read_study(self.study_dir(study_id) / "study.json")

    def _read_study(self, path: Path) -> StudyDocument:
        """study.json, parsed once per version of the file (it is rewritten after every run)."""
        stat = path.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            cached = self._studies.get(path)
        if cached is None or cached[0] != key:
            try:
                result: StudyDocument | InputError = read_study_document(path)
            except InputError as exc:
                result = exc
            cached = (key, result)
            with self._lock:
                self._studies[path] = cached
        if isinstance(cached[1], InputError):
            raise cached[1]
        return cached[1]

    def studies(self, workload: str = "", status: str = "", since: str = "", until: str = "") -> list[StudySummary]:
        for name, value in (("since", since), ("until", until)):
            if value and not DATE.match(value):
                raise InputError(f"expected a date YYYY-MM-DD, got {value!r}", field=name)
        out: list[StudySummary] = []
        if not self.studies_dir.is_dir():
            return out
        for path in self.studies_dir.glob("*/study.json"):
            if not ID.match(path.parent.name):
                continue
            try:
                doc = self._read_study(path)
            except OSError:
                continue
            except InputError as exc:      # listed, with why it cannot be shown
                summary = unreadable_summary(path.parent.name, exc)
            else:
                summary = study_summary(doc, path.parent.name)
                summary.status = self.study_status(doc)
            if workload and workload.casefold() not in (summary.workload or "").casefold():
                continue
            if status and summary.status != status:
                continue
            created = (summary.created or "")[:10]
            if (since and created < since) or (until and created > until):
                continue
            out.append(summary)
        return sorted(out, key=lambda s: (s.created or "", s.study_id), reverse=True)

    def studies_version(self, studies: list[StudySummary]) -> str:
        return self.version((s.study_id, s.status, s.runs) for s in studies)

    def study_status(self, doc: StudyDocument) -> str:
        """As every list shows it (perflab.store.status: `abandoned` once nothing of it runs)."""
        return study_status(self.store, doc)

    def current_run(self, doc: StudyDocument) -> RunEntry | None:
        """The study's run in progress, from the catalog (runs record their study id)."""
        row = current_run(self.store, doc.study_id)
        return None if row is None else RunEntry(row, row.shown_status)

    def refs(self) -> list[str]:
        """Suggestions for the compare form: run ids, label:NAME, study:ID:CONFIG."""
        rows = self.store.rows(limit=300)
        labels = sorted({r.label for r in rows if r.label})
        out = [f"label:{label}" for label in labels]
        for s in self.studies()[:50]:
            out += [f"study:{s.study_id}:{c}" for c in s.configs]
        return out + [r.run_id for r in rows if r.status == "complete"]


@dataclass
class StudySummary:
    """A study as the studies list and a study's page head show it."""

    study_id: str
    status: str                 # study.json's; the list's, once StoreView.study_status has judged it
    name: str | None = None
    title: str | None = None
    created: str | None = None
    finished: str | None = None
    workload: str | None = None
    configs: list[str] = field(default_factory=list)
    runs: int = 0               # measured runs done
    valid: int = 0
    planned: int = 0
    verdict: str | None = None  # answer_text
    problem: str | None = None  # why study.json cannot be read (status `unreadable`)


def study_summary(doc: StudyDocument, study_id: str) -> StudySummary:
    return StudySummary(
        study_id=doc.study_id or study_id, name=doc.name, title=doc.title,
        status=doc.status, created=doc.created, finished=doc.finished, workload=doc.workload.name,
        configs=[c.name for c in doc.configurations], runs=len(doc.runs),
        valid=sum(1 for r in doc.runs if r.valid), planned=len(doc.design.schedule),
        verdict=answer_text(doc))


def unreadable_summary(study_id: str, problem: InputError) -> StudySummary:
    """A study whose study.json cannot be read: listed, with the reason, never hidden."""
    return StudySummary(study_id=study_id, status="unreadable", problem=problem.message)


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Cache(Generic[K, V]):
    """A small least-recently-used map of rendered reports, keyed by what they depend on."""

    def __init__(self, size: int = 24):
        self.size = size
        self.items: OrderedDict[K, V] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: K, make: Callable[[], V]) -> V:
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        value = make()
        with self.lock:
            self.items[key] = value
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return value


#: Modification time and size of each of a report's files (None when absent).
FileKey = tuple[tuple[int, int] | None, ...]


def file_key(*paths: Path) -> FileKey:
    """Modification time and size of each file (None when absent): a report's cache key."""
    out: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            stat = path.stat()
            out.append((stat.st_mtime_ns, stat.st_size))
        except OSError:
            out.append(None)
    return tuple(out)
