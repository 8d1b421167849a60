"""Turn a study configuration into the workload it runs: the base workload with its changes.

A change names a workload field by dotted path: `target.driver`, `timing.measurement`,
`transactions.debit_credit.kwargs.cpu_ms` (a list element by its name) or
`transactions.0.sql` (by index).
"""

from __future__ import annotations

import copy
from typing import Any

from perflab import caveats as cav
from perflab.caveats import Caveat, Code
from perflab.errors import some_of
from perflab.study.model import Configuration, Study
from perflab.workload.checks import check_references
from perflab.workload.model import Workload


class ChangeError(ValueError):
    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path


def _step(node: Any, part: str, path: str) -> Any:
    if isinstance(node, dict):
        if part not in node:
            node[part] = {}
        return node, part
    if isinstance(node, list):
        if part.isdigit():
            index = int(part)
            if index >= len(node):
                raise ChangeError(path, f"index {index} is beyond the {len(node)} entries")
            return node, index
        for i, item in enumerate(node):
            if isinstance(item, dict) and item.get("name") == part:
                return node, i
        names = [item.get("name") for item in node if isinstance(item, dict)]
        raise ChangeError(path, f"no entry named {part!r}; entries: {some_of(names)}")
    raise ChangeError(path, f"{part!r}: cannot descend into a {type(node).__name__}")


def apply_changes(workload: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """The workload's dump with the changes set, `workload` left as it was.

    Only the maps and lists on a changed path are copied; the rest is shared with `workload`
    (a deep copy per configuration made a study of 10,000 configurations copy the workload
    10,000 times). The result is for validating into a Workload: change neither it nor the
    values it shares."""
    data = dict(workload)
    for path, value in changes.items():
        parts = path.split(".")
        node: Any = data
        for part in parts[:-1]:
            container, key = _step(node, part, path)
            child = container[key]
            if child is None and isinstance(container, dict):
                child = {}  # an optional block the base leaves out: set one field of it
            elif isinstance(child, (dict, list)):
                child = copy.copy(child)   # this level is changed: the caller's stays as it was
            container[key] = child
            node = child
        container, key = _step(node, parts[-1], path)
        container[key] = value
    return data


def configured_workload(base: Workload, config: Configuration) -> Workload:
    """Validate the changed workload; a bad change raises ChangeError naming its path."""
    data = apply_changes(_dumped(base), config.set)
    try:
        workload = Workload.model_validate(data)
        check_references(workload)
    except Exception as exc:  # pydantic.ValidationError or LocatedError
        first = next(iter(config.set), "set")
        raise ChangeError(first, f"the changed workload is not valid: {_first_problem(exc)}") from None
    # Think-time files were loaded for the base; the copies need their data too.
    copy_loaded_think(base, workload)
    return workload


def _dumped(base: Workload) -> dict[str, Any]:
    """The base workload's dump, made once for the configurations of a study (each of them
    changes a copy of it; apply_changes leaves it as it was). The last base is kept."""
    if not _LAST_DUMP or _LAST_DUMP[0][0] is not base:
        _LAST_DUMP[:] = [(base, base.model_dump(mode="json", by_alias=True))]
    return _LAST_DUMP[0][1]


#: The last base workload configured_workload dumped, and its dump.
_LAST_DUMP: list[tuple[Workload, dict[str, Any]]] = []


def _first_problem(exc: Exception) -> str:
    """One line: the first field pydantic names and what it said, or the error's own text."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            error = errors(include_url=False)[0]
            where = ".".join(str(p) for p in error["loc"])
            value = error.get("input")
            got = f" (got {value!r})" if isinstance(value, (str, int, float)) else ""
            return " ".join(f"{where}: {error['msg'].removeprefix('Value error, ')}{got}".split())
        except (IndexError, KeyError, TypeError):
            pass
    return " ".join(str(exc).split())


def copy_loaded_think(base: Workload, new: Workload) -> None:
    from perflab.workload.thinktime import EmpiricalThink

    if isinstance(base.think, EmpiricalThink) and isinstance(new.think, EmpiricalThink):
        new.think._data = list(base.think._data)
    for b, n in zip(base.scripts, new.scripts):
        for bs, ns in zip(b.steps, n.steps):
            if isinstance(bs.think, EmpiricalThink) and isinstance(ns.think, EmpiricalThink):
                ns.think._data = list(bs.think._data)


def one_variable_warnings(study: Study) -> list[Caveat]:
    """The seeds compared measurement pairs that differ in one thing; say when they do not."""
    if not study.configurations:
        return []
    base = study.configurations[0].changes()
    warnings: list[Caveat] = []
    for config in study.configurations[1:]:
        other = config.changes()
        differing = sorted(k for k in set(base) | set(other) if base.get(k) != other.get(k))
        if len(differing) > 1:
            warnings.append(cav.remark(Code.MORE_THAN_ONE_CHANGE, f"{config.name!r} differs from the base in "
                                       f"{len(differing)} things ({', '.join(differing)}): its effects cannot be "
                                       "attributed to one change", config=config.name, changes=differing))
    return warnings


def sqlite_release(workload: Workload) -> tuple[str, str | None] | None:
    """(binding, SQLite version) of a SQLite workload, as far as perflab can tell without running
    it: the stdlib module's library is this interpreter's; an apsw wheel's version starts with
    the SQLite release it bundles (apsw 3.40.1.0 bundles SQLite 3.40.1). None: not SQLite."""
    from perflab.workload.model import SqliteTarget

    target = workload.target
    if not isinstance(target, SqliteTarget):
        return None
    if target.driver == "stdlib":
        import sqlite3

        return "stdlib sqlite3", sqlite3.sqlite_version
    if target.release is not None:
        from perflab.workload.requirement import parse_requirement

        version = parse_requirement(target.release).version
    else:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as installed_version

        try:
            version = installed_version("apsw")
        except PackageNotFoundError:
            return "apsw", None
    return "apsw", ".".join(version.split(".")[:3])


def two_changes(base: Workload, other: Workload) -> str | None:
    """Why `other` differs from `base` in more than one thing, when perflab can tell: a SQLite
    study that changes the binding changes the library with it (Python's sqlite3 links the
    system's SQLite, each apsw wheel bundles its own), so its ratio is not the release's."""
    a, b = sqlite_release(base), sqlite_release(other)
    if a is None or b is None or a[0] == b[0] or a[1] == b[1] or None in (a[1], b[1]):
        return None
    return (f"differs from the base in the SQLite binding ({a[0]} -> {b[0]}) and in the SQLite release "
            f"({a[1]} -> {b[1]}): two changes at once, so neither can be measured. Compare releases through "
            f"one binding: driver: apsw with release: apsw=={a[1]}.0 in the base and release: apsw=={b[1]}.0 here "
            f"(or compare bindings on one release: stdlib against apsw=={a[1]}.0)")
