"""The runs going on now, and the CPUs each uses: `<store>/active/<run id>.json`.

Two perflab runs on the same CPUs measure each other's load, so each says so: a run registers
its CPUs (driver and SUT) when it opens and withdraws them when it is stored. A run that finds a
live run on any of its CPUs -- when it opens or when it ends -- is invalid with a caveat naming
the other (caveats.concurrent_run), and it leaves the other a note
(`<other id>.<own id>.overlap`), so the run that started first learns of the second too, even
when the second ended first. A registration whose driver is gone (a SIGKILLed run) is ignored
and removed. Files are written whole (a temporary file renamed into place) but not fsynced:
they only matter while their driver lives, and a run's start-up should not wait on the disk.
None of this ever fails a run -- a store that cannot take the files (a full disk) only loses
the check. The two runs of a duet (study/duet.py) share their CPUs by design: registered with the
same duet key, they are not concurrent runs to each other.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.store.catalog import pid_alive

ACTIVE_DIR = "active"


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@dataclass(frozen=True)
class ActiveRun:
    run_id: str
    pid: int
    cpus: frozenset[int]
    duet: str | None = None


class ActiveRuns:
    def __init__(self, home: Path):
        self.dir = Path(home) / ACTIVE_DIR

    def _read(self, path: Path) -> ActiveRun | None:
        try:
            data = json.loads(path.read_text())
            return ActiveRun(str(data["run_id"]), int(data["pid"]), frozenset(int(c) for c in data["cpus"]),
                             data.get("duet"))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def live(self, exclude: str | None = None) -> list[ActiveRun]:
        """The registered runs whose driver is alive (stale registrations are removed)."""
        found: list[ActiveRun] = []
        try:
            paths = sorted(self.dir.glob("*.json"))
        except OSError:
            return found
        for path in paths:
            run = self._read(path)
            if run is None or run.run_id == exclude:
                continue
            if not pid_alive(run.pid):
                path.unlink(missing_ok=True)
                continue
            found.append(run)
        return found

    def register(self, run_id: str, cpus: list[int], duet: str | None = None) -> list[ActiveRun]:
        """Register this run; the live runs sharing a CPU with it (each is left a note), its duet
        partner aside."""
        mine = frozenset(int(c) for c in cpus)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            _write(self.dir / f"{run_id}.json", {"run_id": run_id, "pid": os.getpid(), "cpus": sorted(mine),
                                                 "duet": duet})
        except OSError:
            return []
        return self._overlapping(run_id, mine, duet)

    def _overlapping(self, run_id: str, mine: frozenset[int], duet: str | None) -> list[ActiveRun]:
        others = [r for r in self.live(exclude=run_id) if r.cpus & mine and not (duet and r.duet == duet)]
        for other in others:
            try:
                _write(self.dir / f"{other.run_id}.{run_id}.overlap",
                       {"run_id": run_id, "pid": os.getpid(), "cpus": sorted(mine), "duet": duet})
            except OSError:
                pass
        return others

    def withdraw(self, run_id: str, cpus: list[int], duet: str | None = None) -> list[ActiveRun]:
        """Unregister this run; every run that shared a CPU with it while it ran: those live now,
        and those that left a note meanwhile (its duet partner aside)."""
        mine = frozenset(int(c) for c in cpus)
        others = {r.run_id: r for r in self._overlapping(run_id, mine, duet)}
        try:
            notes = sorted(self.dir.glob(f"{run_id}.*.overlap"))
        except OSError:
            notes = []
        for path in notes:
            run = self._read(path)
            if run is not None and run.cpus & mine and not (duet and run.duet == duet):
                others.setdefault(run.run_id, run)
            path.unlink(missing_ok=True)
        (self.dir / f"{run_id}.json").unlink(missing_ok=True)
        # a note left for a run that is gone (it was SIGKILLed) is removed by the next run
        for path in self.dir.glob("*.overlap") if self.dir.exists() else []:
            if not (self.dir / f"{path.name.split('.', 1)[0]}.json").exists():
                path.unlink(missing_ok=True)
        return list(others.values())
