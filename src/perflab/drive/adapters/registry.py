"""What each target kind's registry line names (workload/kinds.py), resolved to the code that
runs it: the SUT adapter of a kind run in perflab's workers, the executor of a network kind,
what the driver counts for it, and its compiled-loop engine.

The registry holds "module:name" strings so that the workload stage never imports the drive
stage; the names are imported here, the first time a run needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from perflab.workload.kinds import KINDS, KindError, TargetKind

if TYPE_CHECKING:
    from perflab.drive.adapters.base import SutAdapter
    from perflab.drive.adapters.context import NetworkContext


def resolve(ref: str) -> Any:
    """The object a registry reference ("package.module:name") names."""
    module, name = ref.split(":")
    try:
        return getattr(importlib.import_module(module), name)
    except AttributeError:
        raise KindError(f"the target kind registry names {ref}, which {module} does not define") from None


def adapter_class(kind: str) -> type[SutAdapter]:
    """The SUT adapter that runs a kind's transactions in perflab's worker processes."""
    entry = KINDS[kind]
    if entry.network:
        raise KindError(f"a {kind} target is a server over the network: it has an executor, no in-process adapter")
    adapter: type[SutAdapter] = resolve(entry.runs)
    return adapter


def make_executor(context: NetworkContext) -> Any:
    """The driver-side executor of a network kind's transactions (execute(tx, params, user))."""
    entry = KINDS.of(context.workload.target)
    if not entry.network:
        raise KindError(f"a {entry.name} target runs in perflab's worker processes: it has no network executor")
    return resolve(entry.runs)(context)


def driver_counts(entry: TargetKind) -> Any:
    """What the driver counts for a network kind (connections and TLS handshakes, commits), made
    for one run; None for a kind it counts nothing for."""
    return None if entry.counts is None else resolve(entry.counts)()


def native_engine(entry: TargetKind) -> Any:
    """The compiled loop's engine class for the kind's users, or None (the Python path only)."""
    return None if entry.native is None else resolve(entry.native)
