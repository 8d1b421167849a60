"""`{service_port}`: a TCP port for the service, chosen free when a run starts.

A workload that hard-codes its server's port can run once at a time: two runs of it at once --
the two runs of a duet block (docs/studies.md, "Duet"), or two people's runs on one machine --
would both try to listen there. Writing `{service_port}` instead (in the service's command, env,
rendered files, setup and ready probe, and in the target's `base_url`) lets each run take a port
nobody listens on when it starts. The run's record holds the workload with the port filled in,
so run.json says where the server listened.

Only text is replaced: an integer field (the TCP target's `port`) cannot hold the token.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from perflab.workload.model import Workload

TOKEN = "{service_port}"


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on at `host` now (the kernel's choice for an ephemeral bind)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def replace_in_text(value: Any, old: str, new: str) -> Any:
    """`value` with `old` replaced by `new` in every string it holds: models field by field
    (a copy, unvalidated: only text changes), lists, tuples and dict values; the same object
    when nothing changed."""
    if isinstance(value, str):
        return value.replace(old, new) if old in value else value
    if isinstance(value, BaseModel):
        update = {}
        for name in type(value).model_fields:
            old_value = getattr(value, name)
            new_value = replace_in_text(old_value, old, new)
            if new_value is not old_value:
                update[name] = new_value
        return value.model_copy(update=update) if update else value
    if isinstance(value, (list, tuple)):
        items = [replace_in_text(v, old, new) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else type(value)(items)
    if isinstance(value, dict):
        entries = {k: replace_in_text(v, old, new) for k, v in value.items()}
        return value if all(entries[k] is value[k] for k in value) else entries
    return value


def names_service_port(workload: Workload, workload_dir: Path) -> bool:
    """Whether a workload's service listens on `{service_port}`: the token in its own text
    (command, env, ready, setup) or in a file it renders (`service.files`, read from
    `workload_dir`) -- and, for an HTTP target, in the base_url the driver sends to."""
    service = workload.service
    if service is None:
        return False
    base_url = getattr(workload.target, "base_url", None)
    if base_url is not None and TOKEN not in base_url:
        return False
    if TOKEN in service.model_dump_json(by_alias=True):
        return True
    for template in service.files.values():
        try:
            if TOKEN in (workload_dir / template).read_text(errors="replace"):
                return True
        except OSError:
            continue  # a missing file is the run's error to report, with its name
    return False
