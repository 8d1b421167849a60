"""`perflab history --confirm`: the study that decides a change point between two versions.

A change point says that a series moved between two runs; the runs either side measured two
versions, but one after the other, on whatever the host was doing then. The study that decides it
runs both versions again in interleaved blocks, in the arrangement the accuracy table recommends
(`arrangement: auto`, perflab.study.arrangement: a duet where the drivers can keep up), and its
verdict and interval on the series' metric are attached to the change point.

The study is the series' own runs' setting: their workload file, load (the fixed users or rate, or
the calibration rule of their study), window, and the two versions. A version is set up

* with `--versions FILE` (a `perflab bisect` versions file): as that file sets it up (its study
  then gives the workload, load and window);
* else as a release: a version of the form `name==X` (what `target.release` installs through the
  release cache) is set as the workload's `target.release`.

A change point of the host (perflab.history.cause), or one whose either side carries no version,
gets no study, and says why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.bisect.runner import Side, StepOptions, pair_study, run_pair, step_of, write_study
from perflab.errors import InputError
from perflab.history.model import ChangePoint, Confirmation, HistoryDocument, Series
from perflab.records.run import read_run_record
from perflab.store.catalog import Store
from perflab.workload.requirement import parse_requirement

#: Blocks of a confirming study when neither the command line nor the versions file says.
CONFIRM_BLOCKS = 6


@dataclass
class ConfirmOptions:
    versions_file: Path | None = None
    blocks: int | None = None
    measurement: float | None = None
    stabilization: float | None = None
    #: A run's executor other than perflab's own (the tests' model driver).
    executor: Callable[..., Any] | None = None


def release_setting(version: str, current: Any) -> Any:
    """`target.release` for a version such as `apsw==3.40.1.0` (several: "a==1, b==2"), shaped as
    the workload's own (one requirement, or a list)."""
    texts = [v.strip() for v in version.split(",") if v.strip()]
    for text in texts:
        try:
            parse_requirement(text)
        except ValueError:
            raise InputError(f"version {version!r} is not a release (name==version): give --versions FILE to say how "
                             "it is set up", field="--confirm") from None
    return texts if isinstance(current, list) or len(texts) > 1 else texts[0]


def _generated_study(series: Series, cp: ChangePoint, store: Store, metric: str, blocks: int) -> dict[str, Any]:
    """A study of the two releases either side of `cp`, in the setting of the series' runs."""
    record = read_run_record(store.run_dir(cp.after))
    if not record.workload_path or not Path(record.workload_path).is_file():
        raise InputError(f"the run's workload file {record.workload_path or '?'} is not on this machine: give "
                         "--versions FILE (its study names the workload)", field="--confirm")
    current = (record.workload.get("target") or {}).get("release")
    cfg = record.config
    study_doc = None
    if record.study:
        from perflab.records.study import read_study_document

        try:
            study_doc = read_study_document(store.home / "studies" / record.study / "study.json")
        except InputError:
            study_doc = None
    load: dict[str, Any]
    if study_doc is not None and study_doc.design.load.mode == "calibrated" and study_doc.design.load.target_util:
        load = {"calibrate": {"target_util": study_doc.design.load.target_util}}
    elif cfg.users is not None:
        load = {"users": cfg.users}
    elif cfg.rate is not None:
        load = {"rate": cfg.rate}
    else:
        load = {}
    assert cp.before_version is not None and cp.after_version is not None   # checked by the caller
    return {
        "name": f"confirm-{series.key.workload}",
        "title": f"{series.key.workload}: {cp.before_version} -> {cp.after_version} (perflab history --confirm)",
        "workload": str(Path(record.workload_path).resolve()),
        "configurations": [{"name": v, "set": {"target.release": release_setting(v, current)}}
                           for v in (cp.before_version, cp.after_version)],
        **({"load": load} if load else {}),
        "arrangement": "auto",
        "blocks": blocks,
        "timing": {"stabilization": f"{cfg.stabilization_s:g}s", "measurement": f"{cfg.measurement_s:g}s"},
        "gate_metrics": [metric],
    }


def confirm_change_point(series: Series, cp: ChangePoint, store: Store, options: ConfirmOptions,
                         progress: Callable[[str], None] | None = None) -> Confirmation:
    base, new = cp.before_version, cp.after_version
    if not base or not new or base == new:
        return Confirmation(base=base or "?", new=new or "?", reason="the runs either side do not carry two versions")
    if cp.cause == "host":
        return Confirmation(base=base, new=new, reason=f"the host's change ({cp.cause_reason}): no study of the "
                            "software decides it")
    metric = series.metric
    directory = store.home / "history" / "confirm"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{series.id}-{cp.before}-{cp.after}.yaml"
    blocks = options.blocks
    try:
        if options.versions_file is not None:
            from perflab.bisect.plan import load_versions

            plan, study_path = load_versions(options.versions_file)
            names = plan.names()
            missing = [v for v in (base, new) if v not in names]
            if missing:
                raise InputError(f"version {missing[0]!r} is not in the versions file", file=options.versions_file,
                                 field="versions")
            if plan.git is not None:
                raise InputError("--confirm builds no git revisions: run `perflab bisect` on the two versions",
                                 file=options.versions_file, field="git")
            data = pair_study(study_path, Side(base, plan.settings(names.index(base))),
                              Side(new, plan.settings(names.index(new))))
            data["gate_metrics"] = [metric]
            blocks = blocks or plan.blocks
        else:
            data = _generated_study(series, cp, store, metric, blocks or CONFIRM_BLOCKS)
        write_study(path, data, f"perflab history --confirm: series {series.id}, change point at run {cp.after}\n"
                    f"{base} -> {new}")
        doc = run_pair(path, store, StepOptions(measurement=options.measurement, stabilization=options.stabilization,
                                                executor=options.executor), blocks, progress)
    except InputError as exc:
        return Confirmation(base=base, new=new, reason=str(exc))
    found = step_of(doc, metric)
    return Confirmation(base=base, new=new, study_id=found.get("study_id"), verdict=found.get("verdict"),
                        ratio=found.get("ratio"), ci_low=found.get("ci_low"), ci_high=found.get("ci_high"),
                        level=found.get("level"), blocks=found.get("n_blocks"), arrangement=found.get("arrangement"),
                        reason=found.get("reason"))


def confirm_history(doc: HistoryDocument, store: Store, options: ConfirmOptions,
                    on_progress: Callable[[str], None] | None = None) -> int:
    """Confirm every change point of `doc` between two versions; returns how many studies ran."""
    ran = 0
    for series in doc.series:
        for cp in series.change_points:
            if on_progress is not None:
                on_progress(f"confirming {series.key.workload} ({series.id}) change point at run {cp.after}: "
                            f"{cp.before_version or '?'} -> {cp.after_version or '?'}")
            cp.confirmation = confirm_change_point(series, cp, store, options, on_progress)
            ran += cp.confirmation.study_id is not None
    return ran
