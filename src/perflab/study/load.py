"""Reading a study file: the study, the workload it names, each configuration's workload, all
checked before anything runs -- every mistake one InputError naming the file, its line and the
field (exit 2), never a traceback after the study's directory exists.

`load_study` is the steps in order: the file and the options that override its arrangement,
the workload file, each configuration's changes and each sweep value's, what a pair of runs at
once needs of a service, the one-change rule, the class keys of its metrics. Running the study
is study/runner.py's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perflab.catalog.registry import class_key
from perflab.errors import InputError
from perflab.study.configure import ChangeError, configured_workload, two_changes
from perflab.study.model import SPECIAL_FACTORS, Configuration, Study, check_study
from perflab.workload.checks import LocatedError
from perflab.workload.loader import line_of, load_workload, read_yaml, validate_model
from perflab.workload.model import Workload
from perflab.workload.service_port import names_service_port

#: The arrangements `--arrangement` names.
ARRANGEMENT_OPTIONS = ("one-at-a-time", "interleaved", "duet", "split-duet")


def load_study(path: Path, aa: bool = False, duet: bool = False, arrangement: str | None = None) -> \
        tuple[Study, Workload, Path]:
    """Validate a study file and the workload it names; errors point at file:line. `duet`,
    `arrangement`: the command line asks for an arrangement (`--duet`, `--arrangement`) the file
    may not give; what it cannot do is then said of the option."""
    path = Path(path)
    data = read_yaml(path)
    study, option = _study_of(path, data, aa, duet, arrangement)
    workload_path = _workload_path(path, data, study)
    workload = load_workload(workload_path)
    configured = _configured(path, data, study, workload)
    _check_sweep(path, data, study, workload)
    _check_pair_ports(path, data, study, configured, workload_path.parent, option)
    _check_one_change(path, data, study, configured)
    _check_class_keys(path, data, study, configured or [workload])
    return study, workload, workload_path


def _study_of(path: Path, data: Any, aa: bool, duet: bool, arrangement: str | None) -> tuple[Study, str | None]:
    """The study as the file gives it, with the command line's arrangement over the file's;
    and the option that asked for it (None: the file's own)."""
    study = validate_model(Study, data, path)
    option = "--arrangement" if arrangement is not None else ("--duet" if duet else None)
    if arrangement is not None and arrangement not in ARRANGEMENT_OPTIONS:
        raise InputError(f"expected one-at-a-time, interleaved, duet or split-duet, got {arrangement!r}",
                         field="--arrangement")
    if option is not None:
        study = study.model_copy(update={"arrangement": arrangement or "duet", "duet": False})
    try:
        check_study(study, aa)
    except LocatedError as exc:
        if exc.loc in (("duet",), ("arrangement",)) and option is not None:
            raise InputError(str(exc), file=path, field=option) from None
        raise InputError(str(exc), file=path, line=line_of(data, exc.loc), field=".".join(map(str, exc.loc))) from None
    return study, option


def _workload_path(path: Path, data: Any, study: Study) -> Path:
    try:
        workload_path = (path.parent / study.workload).resolve()
        found = workload_path.exists()
    except (OSError, ValueError) as exc:   # a NUL byte, a name too long
        raise InputError(f"not a usable file name: {getattr(exc, 'strerror', None) or exc}", file=path,
                         line=line_of(data, ("workload",)), field="workload") from None
    if not found:
        raise InputError(f"workload file not found: {study.workload}", file=path, line=line_of(data, ("workload",)),
                         field="workload")
    return workload_path


def _configured(path: Path, data: Any, study: Study, workload: Workload) -> list[Workload]:
    """Each configuration's workload: the base workload with its changes."""
    configured = []
    for i, config in enumerate(study.configurations):
        try:
            configured.append(configured_workload(workload, config))
        except ChangeError as exc:
            raise InputError(str(exc), file=path, line=line_of(data, ("configurations", i, "set", exc.path)),
                             field=f"configurations[{i}].set.{exc.path}") from None
    return configured


def _check_sweep(path: Path, data: Any, study: Study, workload: Workload) -> None:
    """Every sweep point must make a valid workload: a bad value is a file:line error now."""
    if study.sweep is None or study.sweep.factor in SPECIAL_FACTORS:
        return
    for i, value in enumerate(study.sweep.values):
        for config in study.configurations or [Configuration(name="base")]:
            try:
                configured_workload(workload, sweep_point(config, study.sweep.factor, value, config.name))
            except ChangeError as exc:
                raise InputError(f"value {value!r}: {exc}", file=path, line=line_of(data, ("sweep", "values", i)),
                                 field=f"sweep.values[{i}]") from None


def _check_pair_ports(path: Path, data: Any, study: Study, configured: list[Workload], workload_dir: Path,
                      option: str | None) -> None:
    """Two servers of a pair at once: a fixed port is served by a network namespace per run
    (fixed_port_duet); a service in a namespace of its own over a veth pair is not nested in
    another, so it must listen on {service_port}."""
    networked = [w for w in configured if w.service is not None and w.service.network]
    if not study.runs_together or not fixed_port_duet(networked, workload_dir):
        return
    duet_field = option or ("arrangement" if study.arrangement is not None else "duet")
    raise InputError("a duet runs two servers of this workload at once: a service with its own network "
                     "(service.network) must listen on {service_port} (a free port chosen per run) -- in its "
                     "command or a file it renders, and in the target's base_url (docs/real-systems.md)",
                     file=path, line=line_of(data, (duet_field,)) if option is None else None, field=duet_field)


def _check_one_change(path: Path, data: Any, study: Study, configured: list[Workload]) -> None:
    """Each configuration changes one thing against the first (the seeds' one-variable rule)."""
    for i, other in enumerate(configured[1:], start=1):
        why = two_changes(configured[0], other)
        if why is not None:
            raise InputError(f"configuration {study.configurations[i].name!r} {why}", file=path,
                             line=line_of(data, ("configurations", i)), field=f"configurations[{i}]")


def _check_class_keys(path: Path, data: Any, study: Study, workloads: list[Workload]) -> None:
    """A per-class metric key names a class the workload has: a misspelt class would be na in
    every run, and a primary one would end the study in exit 4."""
    classes = {t.tx_class for w in workloads for t in w.transactions}
    for name in ("metrics", "gate_metrics"):
        for i, key in enumerate(getattr(study, name) or []):
            split = class_key(key)
            if split is not None and split[1] not in classes:
                raise InputError(f"{key!r}: the workload has no class {split[1]!r} (its classes: "
                                 f"{', '.join(sorted(classes))})", file=path, line=line_of(data, (name, i)),
                                 field=f"{name}[{i}]")


def fixed_port_duet(workloads: list[Workload], workload_dir: Path) -> bool:
    """Whether a duet of these workloads needs a network namespace per run: a service that listens
    on a fixed port (not `{service_port}`), which two servers cannot share in one namespace."""
    return any(w.service is not None and not names_service_port(w, workload_dir) for w in workloads)


def sweep_point(config: Configuration, factor: str, value: Any, name: str) -> Configuration:
    """`config` with the swept factor set to `value`, named `name`."""
    point = config.model_copy(deep=True)
    point.name = name
    if factor in ("sut_cpus", "memory_limit", "workers"):
        setattr(point, factor, getattr(Configuration.model_validate({"name": "x", factor: value}), factor))
    elif factor not in ("users", "rate"):
        point.set = {**point.set, factor: value}
    return point
