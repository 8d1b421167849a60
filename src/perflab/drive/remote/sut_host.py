"""A SUT on a host of its own: the monitor the workload names there (`monitor:`), reached
before the run and recorded in run.json (sut.host). docs/distributed.md tells the user's side.

Before the run, `probe_sut_host` reaches the monitor once: an unreachable or wrong monitor is
bad input (exit 2, naming the workload's line) rather than a run measured without its (S)
rows. During the run the monitor process reads it (monitor/sources/remote.py); at the end the
lifecycle copies what it saw -- samples, losses, clock offsets -- into `sut.host`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from perflab.errors import InputError
from perflab.monitor.sources.remote import HostInfo, RemoteSpec, RemoteUnavailable, probe
from perflab.records.run import SutHostRecord
from perflab.workload.model import RemoteMonitor, Workload

REDACTED = "(redacted)"


def _where(workload_path: Path, loc: tuple) -> tuple[int | None, str]:
    """The line of a workload field, for messages about it (the file is read again: the model
    does not keep positions)."""
    from perflab.workload.loader import line_of, read_yaml

    try:
        return line_of(read_yaml(Path(workload_path)), loc), ".".join(map(str, loc))
    except InputError:
        return None, ".".join(map(str, loc))


def remote_spec(workload: Workload, workload_path: Path) -> RemoteSpec | None:
    """The picklable spec of the workload's remote monitor (the token read from its variable)."""
    block: RemoteMonitor | None = workload.monitor
    if block is None:
        return None
    token = block.token
    if block.token_env is not None:
        token = os.environ.get(block.token_env)
        if not token:
            line, field = _where(workload_path, ("monitor", "token_env"))
            raise InputError(f"the environment variable {block.token_env} (the agent's token) is not set",
                             file=workload_path, line=line, field=field)
    if block.agent is not None:
        return RemoteSpec("agent", block.agent, token=token, timeout_s=block.timeout)
    assert block.node_exporter is not None  # one of agent and node_exporter (RemoteMonitor._one_monitor)
    return RemoteSpec("node_exporter", block.node_exporter, process_url=block.process_exporter,
                      groups=tuple(block.groups) if block.groups else None, timeout_s=block.timeout)


def probe_sut_host(spec: RemoteSpec, workload_path: Path) -> HostInfo:
    """Reach the SUT host's monitor before the run; InputError (file:line) when it cannot be used."""
    try:
        info = probe(spec)
    except RemoteUnavailable as exc:
        line, field = _where(workload_path, ("monitor", spec.kind))
        raise InputError(f"the SUT host's monitor cannot be used: {exc}", file=workload_path, line=line,
                         field=field) from None
    if spec.kind == "agent" and not ({"s", "h"} & set(info.provides)):
        line, field = _where(workload_path, ("monitor", "agent"))
        raise InputError(f"the agent at {spec.url} measures nothing (its sources: {info.sources})",
                         file=workload_path, line=line, field=field)
    return info


def same_machine(info: HostInfo) -> bool | None:
    if info.boot_id is None:
        return None
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() == info.boot_id
    except OSError:
        return None


def host_record(spec: RemoteSpec, info: HostInfo, cpus: list[int] | None) -> SutHostRecord:
    """The run's sut.host before the run (the monitor's account is added at its end)."""
    return SutHostRecord(monitor=spec.kind, url=spec.url, process_exporter=spec.process_url, hostname=info.hostname,
                         same_machine=same_machine(info), cpus=list(cpus or info.cpus),
                         memory_bytes=info.memory_bytes, provides=list(info.provides),
                         clock_offset_s=info.clock_offset_s, clock_error_s=info.clock_error_s,
                         wall_offset_s=info.wall_offset_s)


def account(host: SutHostRecord, status: dict[str, Any]) -> SutHostRecord:
    """sut.host completed with the monitor process's account of its remote source."""
    keys = ("samples", "failures", "lost_at", "lost_reason", "gaps", "clock_offset_s", "clock_error_s",
            "clock_drift_s", "wall_offset_s")
    update = {k: status[k] for k in keys if status.get(k) is not None}
    return host.model_copy(update=update)


def redacted(workload: dict[str, Any]) -> dict[str, Any]:
    """The workload as run.json keeps it: without the agent's token (run directories get copied
    and served; the token is the only lock on the SUT host's counters)."""
    monitor = workload.get("monitor")
    if isinstance(monitor, dict) and monitor.get("token"):
        workload = {**workload, "monitor": {**monitor, "token": REDACTED}}
    return workload
