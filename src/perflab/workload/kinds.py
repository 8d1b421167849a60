"""The registry of target kinds: every kind of system under test perflab drives, named once,
with what perflab does with it.

A workload's `target.kind` decides its model (what `target:` may say), the transaction body it
runs, whether it is a server over the network (drive/server_run.py) or code in perflab's own
worker processes (drive/local_run.py), what runs its transactions (a SUT adapter in the worker,
or an executor in the driver), how its pathlength is counted, what the driver counts for it
(connections and TLS handshakes, or commits) and whether perflab's compiled loop can run its
users. Every place that needs one of those facts asks `KINDS` (k6's executors register
themselves in one file; this is that file for targets), so a kind is never known in one place
and forgotten in another.

Adding a kind: its model (workload/targets.py, or a module of its own: a `kind: Literal[...]`
field and its options), its adapter file (drive/adapters/: a `SutAdapter` for code run in the
worker, or an `executor(context)` factory for a server over the network), and one line in
`_LINES` below. The registry refuses, when it is built, a line whose model does not carry its
name, a body no transaction has, a reference that is not `module:name` of a module that exists,
facts that contradict each other (a compiled-loop engine for a kind run in the workers), and a
target model in workload/targets.py that no line registers.

The references are strings, resolved by the drive/ side that uses them (drive/adapters/
registry.py): the workload stage reads what a kind is without importing the code that runs it.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import typing
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Annotated, Any, Literal

from pydantic import Field

from perflab.records.run import PathlengthMethod
from perflab.workload import targets
from perflab.workload.targets import (
    CommandTarget,
    HttpTarget,
    PostgresTarget,
    PythonTarget,
    SqliteTarget,
    TargetModel,
    TcpTarget,
)

#: The transaction bodies a kind can run: each a field of workload.model.Transaction.
BODIES = ("sql", "call", "command", "http", "tcp")
Body = Literal["sql", "call", "command", "http", "tcp"]
PATHLENGTH_METHODS: tuple[str, ...] = typing.get_args(PathlengthMethod)
_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


class KindError(ValueError):
    """A registry line that cannot be right (refused when the registry is built), or a kind no
    line names (refused when it is asked for)."""


@dataclass(frozen=True)
class TargetKind:
    """What perflab does with one kind of target."""

    name: str
    #: the pydantic model of `target:` (its `kind` field is Literal[name])
    model: type[TargetModel]
    #: the transaction body it runs (workload/checks.py refuses any other)
    body: Body
    #: "module:name": a SutAdapter class (run in perflab's worker processes) or, for a network kind,
    #: an executor factory `executor(context) -> executor` (drive/adapters/context.py)
    runs: str
    #: a server reached over the network (drive/server_run.py), not code in perflab's workers
    network: bool = False
    #: how the counted pass counts its instructions (drive/pathlength/); None: it is not counted
    pathlength: PathlengthMethod | None = None
    #: "module:name" of what the driver counts for it beside the SUT's counters (a class made
    #: once per run: connections and TLS handshakes, or commits); None: nothing
    counts: str | None = None
    #: "module:name" of the compiled loop's engine for its users (drive/load/native_*.py), whose
    #: `reason(workload, executor)` says why a workload cannot have it; None: the Python path only
    native: str | None = None
    #: its worker enforces a transaction's deadline itself (a command's process group is killed
    #: there), so the pool waits a grace longer before it kills the worker
    worker_deadline: bool = False
    #: "module:name" of how a study adds a known cost to one of its transactions (study/knob.py:
    #: `add(transaction, units)` on the transaction as the workload's dump holds it); None: a
    #: study of this kind cannot measure its own bias. The knob's truth is each transaction's own
    #: CPU: a kind run in perflab's workers (the worker measures it), or PostgreSQL's backend
    #: (target.backend_cpu, a server perflab starts).
    knob: str | None = None

    def refs(self) -> Iterator[tuple[str, str]]:
        """(field, "module:name") of every reference the line holds."""
        yield "runs", self.runs
        for field in ("counts", "native", "knob"):
            ref = getattr(self, field)
            if ref is not None:
                yield field, ref


def _model_kind(model: type) -> str | None:
    """The name a model's `kind: Literal[...]` field carries, or None when it has no such field."""
    fields = getattr(model, "model_fields", None)
    if not fields or "kind" not in fields:
        return None
    args = typing.get_args(fields["kind"].annotation)
    return args[0] if len(args) == 1 and isinstance(args[0], str) else None


def _module_exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent that is not a package, or not importable
        return False


class KindRegistry:
    """The kinds, checked once as a whole when built (see the module's text)."""

    def __init__(self, kinds: Iterable[TargetKind], models_of: Iterable[ModuleType] = ()):
        self._kinds: dict[str, TargetKind] = {}
        for kind in kinds:
            self._check(kind)
            self._kinds[kind.name] = kind
        if not self._kinds:
            raise KindError("no target kind is registered")
        registered = {kind.model for kind in self._kinds.values()}
        for module in models_of:
            for name, model in inspect.getmembers(module, inspect.isclass):
                if model.__module__ == module.__name__ and _model_kind(model) is not None and model not in registered:
                    raise KindError(f"{module.__name__}.{name} is the model of target kind {_model_kind(model)!r}, "
                                    f"which no line of the registry names (workload/kinds.py)")

    def _check(self, kind: TargetKind) -> None:
        where = f"target kind {kind.name!r}"
        if not _NAME.match(kind.name):
            raise KindError(f"{where}: a kind's name is lower-case letters, digits and _")
        if kind.name in self._kinds:
            raise KindError(f"{where} is registered twice")
        if not (isinstance(kind.model, type) and issubclass(kind.model, TargetModel)):
            raise KindError(f"{where}: its model is not a target model (a workload.targets.TargetModel subclass)")
        if _model_kind(kind.model) != kind.name:
            raise KindError(f"{where}: its model {kind.model.__name__} has no `kind: Literal[{kind.name!r}]` field "
                            f"(it says {_model_kind(kind.model)!r})")
        if kind.body not in BODIES:
            raise KindError(f"{where}: body {kind.body!r} is none of a transaction's ({', '.join(BODIES)})")
        if kind.pathlength is not None and kind.pathlength not in PATHLENGTH_METHODS:
            raise KindError(f"{where}: pathlength {kind.pathlength!r} is none of {', '.join(PATHLENGTH_METHODS)}")
        if kind.native is not None and not kind.network:
            raise KindError(f"{where}: the compiled loop drives servers over the network; a kind run in perflab's "
                            f"workers has no `native` engine")
        if kind.counts is not None and not kind.network:
            raise KindError(f"{where}: driver counts are a network driver's; a kind run in perflab's workers has none")
        if kind.worker_deadline and kind.network:
            raise KindError(f"{where}: a network kind has no worker to enforce its deadline")
        for field, ref in kind.refs():
            if not _REF.match(ref):
                raise KindError(f"{where}: {field} {ref!r} is not 'package.module:name'")
            if not _module_exists(ref.split(":")[0]):
                raise KindError(f"{where}: {field} names module {ref.split(':')[0]}, which does not exist")

    def __getitem__(self, name: str) -> TargetKind:
        kind = self._kinds.get(name)
        if kind is None:
            raise KindError(f"unknown target kind {name!r}; registered: {', '.join(self._kinds)}")
        return kind

    def __iter__(self) -> Iterator[TargetKind]:
        return iter(self._kinds.values())

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def of(self, target: Any) -> TargetKind:
        """The kind of a target model (a workload's `target`)."""
        return self[target.kind]

    def names(self, network: bool | None = None) -> tuple[str, ...]:
        """Every kind's name, or the network (True) or in-process (False) kinds' only."""
        return tuple(k.name for k in self if network is None or k.network == network)

    def counted(self) -> tuple[str, ...]:
        """The kinds whose pathlength the counted pass counts."""
        return tuple(k.name for k in self if k.pathlength is not None)

    def union(self) -> Any:
        """The type of a workload's `target`: one of the registered models, told apart by `kind`."""
        models = tuple(k.model for k in self)
        if len(models) == 1:
            return models[0]
        return Annotated[typing.Union[models], Field(discriminator="kind")]  # noqa: UP007 -- a tuple of types


def words(names: Iterable[str]) -> str:
    """Kinds in a sentence: "postgres, http, tcp"."""
    return ", ".join(names)


# --- the kinds -------------------------------------------------------------------------------
# One line a kind. The adapters are in drive/adapters/, the compiled loop's engines in drive/load/.

_ADAPTERS = "perflab.drive.adapters"
_LINES = [
    TargetKind("sqlite", SqliteTarget, "sql", f"{_ADAPTERS}.sqlite:SqliteAdapter", pathlength="client_requests",
               knob="perflab.sut.knob:add_sqlite_statement"),
    TargetKind("python", PythonTarget, "call", f"{_ADAPTERS}.python_call:PythonCallAdapter",
               pathlength="client_requests", knob="perflab.sut.knob:add_parameter"),
    TargetKind("command", CommandTarget, "command", f"{_ADAPTERS}.command:CommandAdapter", pathlength="per_command",
               worker_deadline=True),
    TargetKind("postgres", PostgresTarget, "sql", f"{_ADAPTERS}.postgres:executor", network=True,
               pathlength="server_backend", counts=f"{_ADAPTERS}.counts:CommitCounts",
               native="perflab.drive.load.native_pg:NativePgEngine", knob="perflab.sut.knob:add_postgres_statement"),
    TargetKind("http", HttpTarget, "http", f"{_ADAPTERS}.http:executor", network=True,
               counts=f"{_ADAPTERS}.counts:ConnectionCounts", native="perflab.drive.load.native_http:NativeHttpEngine"),
    TargetKind("tcp", TcpTarget, "tcp", f"{_ADAPTERS}.tcp:executor", network=True,
               counts=f"{_ADAPTERS}.counts:ConnectionCounts", native="perflab.drive.load.native_http:NativeTcpEngine"),
]

KINDS = KindRegistry(_LINES, models_of=[targets])
