"""A store's runs as a history reads them: each run's series key, time, version and host.

Unlike runs are never one series. The key (perflab.history.model.SeriesKey) is

* the workload's name;
* the configuration: a digest of the workload as run.json keeps it, without what is not the
  configuration -- the version under test (`target.release`, and any field `--ignore` names), its
  description and thresholds, its own load and timing (the run's resolved ones stand instead) --
  plus the load (users or rate; for a calibrated study, the calibration's target, since the users
  it finds move with the host), the SUT's processors, workers and memory limit, and the window;
* the host: a digest of its host name, CPU model, cores, memory and architecture (the host's
  kernel, OS and Python are its state, carried by each point, so an upgrade of the kernel is a
  change the history can see instead of a new series);
* the arrangement: one-at-a-time, duet or split-duet (a duet's run shares its CPUs by design).

The version a run measured: `release` (the pinned requirement the release cache installed,
run.json `fingerprint.sut_release`), `label` (`perflab run --label`, a study's configuration
name), `sut` (the SUT's own version string), or `auto`: the release, else the label.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from perflab.errors import InputError
from perflab.history.model import Calibration, SeriesKey, Skipped
from perflab.records.fingerprint import identity
from perflab.records.run import RunRecord, parse_run_record
from perflab.records.study import StudyDocument, read_study_document

VersionFrom = Literal["auto", "release", "label", "sut"]
VERSION_SOURCES: tuple[str, ...] = ("auto", "release", "label", "sut")
#: The machine's identity: a series never spans two of them (records/fingerprint.py's `series-host`).
HOST_IDENTITY = identity("series-host")
#: The host's software: its state, carried by each point (a change of it is the host's change).
HOST_SOFTWARE = ("kernel", "os", "python")
#: Workload fields that are not the configuration: the version, words, limits checked after the
#: run, and the load and timing the run resolved (RunConfig has the resolved ones).
NOT_CONFIGURATION = ("target.release", "description", "thresholds", "load", "timing")


@dataclass
class RunInfo:
    """One run of the store, read for a history."""

    run_id: str
    run_dir: Path
    record: RunRecord
    key: SeriesKey
    time: float
    version: str | None
    study: StudyDocument | None
    purpose: str | None
    aa: bool = False
    calibration: Calibration | None = None
    host_software: dict[str, str | None] = field(default_factory=dict)


def digest(data: Any, length: int = 10) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:length]


def _drop(data: dict[str, Any], path: str) -> None:
    """Remove a field named as a study's `set` names it (perflab.study.configure): dotted, a list
    element by its name or index."""
    node: Any = data
    parts = path.split(".")
    for part in parts[:-1]:
        node = _child(node, part)
        if node is None:
            return
    if isinstance(node, dict):
        node.pop(parts[-1], None)
    elif isinstance(node, list):
        child = _child(node, parts[-1])
        if child is not None:
            node.remove(child)


def _child(node: Any, part: str) -> Any:
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list):
        if part.isdigit():
            return node[int(part)] if int(part) < len(node) else None
        return next((item for item in node if isinstance(item, dict) and item.get("name") == part), None)
    return None


def run_time(record: RunRecord) -> float:
    """When the run started, seconds since the epoch (its clock's t0; else its `created`)."""
    if record.clock is not None:
        return float(record.clock.t0_epoch)
    try:
        return dt.datetime.fromisoformat(record.created).timestamp()
    except ValueError:
        return 0.0


def version_of(record: RunRecord, source: str) -> str | None:
    """The version the run measured (module doc: `--version-from`)."""
    releases = record.fingerprint.get("sut_release")
    release = ", ".join(sorted(releases)) if isinstance(releases, dict) and releases else None
    if source == "release":
        return release
    if source == "label":
        return record.label
    if source == "sut":
        value = record.fingerprint.get("sut_version")
        return str(value) if value else None
    return release or record.label


def _load_words(record: RunRecord, study: StudyDocument | None) -> tuple[Any, str]:
    load = study.design.load if study is not None else None
    if load is not None and load.mode == "calibrated" and load.target_util is not None:
        share = f", {load.share}" if load.share else ""
        return ("calibrated", load.target_util, load.share_fraction), f"calibrated to {load.target_util:g}% UTIL/PROC (S){share}"
    cfg = record.config
    if cfg.users is not None:
        return ("users", cfg.users), f"{cfg.users:,} users"
    if cfg.rate is not None:
        return ("rate", cfg.rate), f"{cfg.rate:g}/s"
    if cfg.jobs is not None:
        return ("jobs", cfg.jobs, cfg.initiators), f"{cfg.jobs} jobs, {cfg.initiators} initiators"
    return ("workload",), "the workload's load"


def arrangement_of(record: RunRecord, study: StudyDocument | None) -> str:
    if study is not None and study.design.arrangement:
        return study.design.arrangement
    if record.config.duet:
        return "duet"
    return "one-at-a-time"


def series_key(record: RunRecord, study: StudyDocument | None, ignore: Iterable[str] = ()) -> SeriesKey:
    workload = copy.deepcopy(record.workload)
    for path in (*NOT_CONFIGURATION, *ignore):
        _drop(workload, path)
    cfg = record.config
    load, load_words = _load_words(record, study)
    arrangement = arrangement_of(record, study)
    configuration = digest({"workload": workload, "load": load, "processors": cfg.processors,
                            "cpus": len(cfg.sut_cpus), "workers": cfg.workers, "memory": cfg.real_storage_bytes,
                            "stabilization": cfg.stabilization_s, "measurement": cfg.measurement_s,
                            "arrangement": arrangement})
    fp = record.fingerprint
    host = digest({k: fp.get(k) for k in HOST_IDENTITY})
    window = f"{cfg.stabilization_s:g} s + {cfg.measurement_s:g} s"
    return SeriesKey(workload=record.workload_name, configuration=configuration, host=host,
                     hostname=str(fp.get("hostname") or "?"), arrangement=arrangement, load=load_words, window=window)


def _calibration(study: StudyDocument | None, study_id: str) -> Calibration | None:
    if study is None or not study.design.load.calibration:
        return None
    load = study.design.load
    chosen = next((s for s in load.calibration if s.run_id == load.calibration_run), load.calibration[-1])
    return Calibration(study=study_id, users=chosen.users, rate=chosen.rate, util_proc_s=chosen.util_proc_s,
                       etr_t=chosen.etr_t, run_id=chosen.run_id)


@dataclass
class StoreRuns:
    runs: list[RunInfo]
    skipped: list[Skipped]


def read_runs(home: Path, version_from: str = "auto", ignore: Iterable[str] = ()) -> StoreRuns:
    """Every run of the store that can be part of a history; the others, with the reason."""
    if version_from not in VERSION_SOURCES:
        raise InputError(f"expected one of {', '.join(VERSION_SOURCES)}, got {version_from!r}", field="--version-from")
    ignore = tuple(ignore)
    runs_dir = Path(home) / "runs"
    studies: dict[str, StudyDocument | None] = {}
    runs: list[RunInfo] = []
    skipped: list[Skipped] = []
    try:
        paths = sorted(runs_dir.glob("*/run.json"))
    except OSError:
        paths = []
    for path in paths:
        run_id = path.parent.name
        try:
            record = parse_run_record(json.loads(path.read_text(encoding="utf-8")), path)
        except (OSError, ValueError, InputError) as exc:
            skipped.append(Skipped(run_id=run_id, reason=f"run.json cannot be read: {exc}"))
            continue
        if record.status == "running":
            skipped.append(Skipped(run_id=run_id, reason="still running, or abandoned"))
            continue
        purpose = record.config.purpose
        if purpose not in (None, "measure"):
            skipped.append(Skipped(run_id=run_id, reason=f"a study's {purpose} run, not a measurement"))
            continue
        study = None
        if record.study:
            if record.study not in studies:
                try:
                    studies[record.study] = read_study_document(Path(home) / "studies" / record.study / "study.json")
                except InputError:
                    studies[record.study] = None
            study = studies[record.study]
        fp = record.fingerprint
        runs.append(RunInfo(run_id=run_id, run_dir=path.parent, record=record,
                            key=series_key(record, study, ignore), time=run_time(record),
                            version=version_of(record, version_from), study=study, purpose=purpose,
                            aa=bool(study is not None and study.design.aa),
                            calibration=_calibration(study, record.study or ""),
                            host_software={k: (None if fp.get(k) is None else str(fp.get(k))) for k in HOST_SOFTWARE}))
    return StoreRuns(runs, skipped)
