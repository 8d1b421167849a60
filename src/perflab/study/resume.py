"""Resuming a study (`perflab study --resume ID`): the seeds' measurements ran for hours, and a
study killed by SIGKILL, the OOM killer, a reboot or a CI timeout keeps its runs in the store;
this continues it instead of measuring again what it had measured.

What is kept: study.json is rewritten after every run, so it holds every judged run, the
calibration (when it had finished), the knob's truth and the schedule. A block whose runs were
all stored is kept with its gates; a block with a run missing (killed inside its window) or
interrupted is measured again whole, its stored runs set aside (they stay in the store), because
a pair's runs belong to one moment of the host. The schedule and each block's random stream
(stats.schedule.block_seed) are the planned ones, so a resumed study is the study it would have
been. It runs with the study and workload files it began with: a file that changed since is
refused (a resumed study would compare runs of two workloads).
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from perflab.errors import InputError
from perflab.records.study import StudyDocument, read_study_document
from perflab.store.catalog import Store, is_plain_name


def stored_study(store: Store, study_id: str) -> StudyDocument:
    path = store.home / "studies" / study_id / "study.json"
    if not is_plain_name(study_id) or not path.is_file():
        raise InputError(f"no study {study_id!r} in {store.home / 'studies'}", field="--resume")
    doc = read_study_document(path)
    if doc.kind != "study" or not doc.study_path:
        raise InputError(f"{study_id} is not a study perflab ran (a comparison of stored runs has nothing to resume)",
                         field="--resume")
    return doc


def resumable(doc: StudyDocument, options):
    """(the study file, the options) a stored study ran with: what the command line said then
    (blocks, windows, A/A, arrangement) is in its design, and wins over what it says now."""
    design = doc.design
    timing = design.timing
    return Path(doc.study_path or ""), dataclasses.replace(
        options, aa=design.aa, duet=False, arrangement=design.arrangement, blocks=design.blocks,
        measurement=timing.get("measurement"), stabilization=timing.get("stabilization"), stagger=timing.get("stagger"))


def file_hash(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def input_hashes(study_path: Path, workload_path: Path) -> dict[str, str]:
    return {"study": file_hash(study_path), "workload": file_hash(workload_path)}


def check_inputs(doc: StudyDocument, study_path: Path, workload_path: Path) -> None:
    """Refuse to resume with a study or workload file that changed since the study began."""
    now = input_hashes(study_path, workload_path)
    for name, path in (("study", study_path), ("workload", workload_path)):
        was = doc.inputs.get(name)
        if was is not None and was != now[name]:
            raise InputError(f"the {name} file changed since the study began (sha256 {was[:12]} then, {now[name][:12]} "
                             f"now): a resumed study would compare runs of two {name}s; run it as a new study",
                             file=path, field="--resume")


def complete_blocks(doc: StudyDocument, schedule: list[tuple[int, str]]) -> tuple[set[int], set[int]]:
    """(blocks whose every scheduled run is stored in the document and was not interrupted, blocks
    begun but not finished: measured again)."""
    planned: dict[int, set[str]] = {}
    for block, name in schedule:
        planned.setdefault(block, set()).add(name)
    stored: dict[int, set[str]] = {}
    broken: set[int] = set()
    for run in doc.runs:
        if run.block is None:
            continue
        stored.setdefault(run.block, set()).add(run.config)
        if run.status == "interrupted":
            broken.add(run.block)
    done = {b for b, names in planned.items() if names <= stored.get(b, set()) and b not in broken}
    begun = {b for b in stored if b in planned and b not in done}
    return done, begun
