"""`perflab bisect`: the studies of a bisect, run and kept.

A bisect lives in `<store>/bisects/<id>/`: `bisect.json` (a `BisectDocument`, rewritten after every
step, so an interrupted bisect keeps its steps), `report.md`, and `step-N.yaml`, the study file each
step ran -- the versions file's study with its configurations replaced by the step's two versions
(the study's first configuration's settings, with the version's on top) -- so that any step can be
run again by hand with `perflab study`. Each step's study is an ordinary study of the store
(`studies/<id>/`, its own reports).

The decisions are perflab.bisect.search's; this module only runs a study and reads its answer.
The same step runner serves `perflab history --confirm` (`run_pair`): the study that decides a
change point between two versions.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.bisect.model import BisectDocument, Step
from perflab.bisect.plan import VersionsFile, load_versions
from perflab.bisect.search import Bisect, planned_studies
from perflab.catalog.registry import REGISTRY, base_key
from perflab.errors import InputError
from perflab.records.study import StudyDocument
from perflab.store.atomic import write_atomic, write_json_atomic
from perflab.store.catalog import Store, new_run_id
from perflab.workload.loader import plain, read_yaml

Progress = Callable[[str], None]


@dataclass
class StepOptions:
    """What every step's study is run with (`perflab study`'s options)."""

    measurement: float | None = None
    stabilization: float | None = None
    monitor: bool = True
    #: A run's executor other than perflab's own (the tests' model driver: StudyOptions.executor).
    executor: Callable[..., Any] | None = None


@dataclass(frozen=True)
class Side:
    """One configuration of a step: its name and what it sets."""

    name: str
    settings: dict[str, Any]


def pair_study(study_path: Path, base: Side, new: Side) -> dict[str, Any]:
    """The study file's data with its configurations replaced by `base` and `new` (the file's first
    configuration's settings kept beneath each), its workload path made absolute."""
    data = plain(read_yaml(study_path))
    if data.get("sweep") is not None:
        raise InputError("a bisect compares two versions at a time; this study is a sweep", file=study_path,
                         field="sweep")
    configurations = data.get("configurations") or []
    common = dict((configurations[0] or {}).get("set") or {}) if configurations else {}
    first = configurations[0] if configurations else {}
    extra = {k: v for k, v in first.items() if k in ("sut_cpus", "memory_limit", "workers")}
    data["workload"] = str((study_path.parent / str(data.get("workload", ""))).resolve())
    data["configurations"] = [{"name": side.name, "set": {**common, **side.settings}, **extra} for side in (base, new)]
    return data


def write_study(path: Path, data: dict[str, Any], comment: str) -> None:
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    text = "".join(f"# {line}\n" for line in comment.splitlines()) + buffer.getvalue()
    write_atomic(path, lambda tmp: tmp.write_text(text))


def step_of(doc: StudyDocument, metric: str) -> dict[str, Any]:
    """A finished study's answer on `metric`: verdict, ratio, interval, blocks."""
    found: dict[str, Any] = {"study_id": doc.study_id, "status": doc.status, "arrangement": doc.design.arrangement}
    row = None
    if doc.comparisons:
        row = next((m for m in doc.comparisons[0].metrics if m.key == metric), None)
    if row is None:
        found["reason"] = doc.reason or f"the study compared no {metric}"
        return found
    found.update(verdict=row.verdict, ratio=row.ratio, ci_low=row.ci_low, ci_high=row.ci_high,
                 level=row.level or doc.design.confidence, n_blocks=row.n_blocks, blocks_needed=row.blocks_needed,
                 reason=row.no_comparison)
    if row.verdict is not None and (row.ci_low is None or row.ci_high is None or row.ratio is None):
        found["verdict"] = None
        found["reason"] = row.no_comparison or "no interval"
    return found


def run_pair(study_file: Path, store: Store, options: StepOptions, blocks: int | None,
             progress: Progress | None = None) -> StudyDocument:
    """Run one study file as `perflab study` does (its reports written beside it)."""
    from perflab.report.write import write_reports
    from perflab.study.runner import StudyOptions, StudyRunner

    study_options = StudyOptions(measurement=options.measurement, stabilization=options.stabilization, blocks=blocks,
                                 monitor=options.monitor)
    if options.executor is not None:     # else StudyOptions' own (a test's model driver patches it in)
        study_options.executor = options.executor
    runner = StudyRunner(study_file, store, study_options)
    if progress is not None:
        progress(f"study {runner.study_id} ({study_file.name}, {blocks or runner.study.blocks} blocks)")
    doc = runner.run()
    write_reports(doc, runner.dir)
    return doc


class BisectRunner:
    def __init__(self, versions_path: Path, store: Store, options: StepOptions | None = None,
                 blocks: int | None = None, max_blocks: int | None = None, progress: Progress | None = None):
        from perflab.study.runner import load_study

        self.versions_path = Path(versions_path)
        self.plan, self.study_path = load_versions(self.versions_path)
        study, _workload, _ = load_study(self.study_path)
        if study.sweep is not None:
            raise InputError("a bisect compares two versions at a time; the study is a sweep", file=self.study_path,
                             field="sweep")
        self.store = store
        self.options = options or StepOptions()
        self.blocks = blocks or self.plan.blocks or study.blocks
        self.max_blocks = max(self.blocks, max_blocks or self.plan.max_blocks)
        self.progress = progress or (lambda text: None)
        metric = study.gate_metrics[0]
        entry = REGISTRY[base_key(metric)]
        self.bisect_id = new_run_id(f"bisect-{study.name}")
        self.dir = store.home / "bisects" / self.bisect_id
        names = self.plan.names()
        self.doc = BisectDocument(bisect_id=self.bisect_id, versions_file=str(self.versions_path.resolve()),
                                  study_file=str(self.study_path), metric=metric, label=entry.label,
                                  direction=entry.direction.value, margin=study.margin, versions=names,
                                  studies_planned=planned_studies(len(names)))
        self._builds: dict[int, Path] = {}

    def _side(self, index: int) -> Side:
        build = None
        if self.plan.git is not None:
            build = self._builds.get(index)
            if build is None:
                from perflab.bisect.builds import ensure_build

                self.progress(f"building {self.plan.names()[index]}")
                build = ensure_build(Path(self.plan.git.repo), self.plan.names()[index], self.plan.git.build)
                self._builds[index] = build
        return Side(self.plan.names()[index], self.plan.settings(index, build))

    def _save(self) -> None:
        write_json_atomic(self.dir / "bisect.json", self.doc.dump())

    def measure(self, base: int, new: int, blocks: int, purpose: str) -> Step:
        number = len(self.doc.steps) + 1
        names = self.doc.versions
        path = self.dir / f"step-{number}.yaml"
        write_study(path, pair_study(self.study_path, self._side(base), self._side(new)),
                    f"perflab bisect {self.bisect_id}, step {number}: {names[base]} -> {names[new]} ({purpose})\n"
                    f"from {self.study_path}")
        self.progress(f"step {number}: {names[base]} -> {names[new]} ({purpose})")
        doc = run_pair(path, self.store, self.options, blocks, self.progress)
        step = Step(number=number, base=base, new=new, base_version=names[base], new_version=names[new],
                    purpose=purpose, blocks=blocks, metric=self.doc.metric, **step_of(doc, self.doc.metric))
        self.doc.steps.append(step)
        self._save()
        self.progress(f"step {number}: {step.verdict or 'no verdict'} "
                      + (f"{step.ratio:.4f} [{step.ci_low:.4f}, {step.ci_high:.4f}]"
                         if step.ratio is not None and step.ci_low is not None and step.ci_high is not None else
                         (step.reason or "")))
        return step

    def run(self) -> BisectDocument:
        self.dir.mkdir(parents=True, exist_ok=False)
        self._save()
        try:
            finding = Bisect(self.doc, self.measure, self.blocks, self.max_blocks).run()
        except BaseException:
            self.doc.status = "interrupted"
            self._save()
            raise
        self.doc.finding = finding
        self.doc.status = "interrupted" if finding.kind == "interrupted" else "complete"
        self._save()
        return self.doc


def versions_of(path: Path) -> tuple[VersionsFile, Path]:
    """A versions file (for `history --confirm --versions`)."""
    return load_versions(path)
