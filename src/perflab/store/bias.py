"""Where a host's bias bounds live: `<store>/bias/<host key>.json`, beside the runs they were
measured from, never in the installed package (records/bias.py says why). Written atomically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from perflab.errors import InputError
from perflab.records.bias import HostBound, HostBounds, HostIdentity
from perflab.store.atomic import write_json_atomic

DIRECTORY = "bias"


def bounds_path(home: Path, host: HostIdentity) -> Path:
    return Path(home) / DIRECTORY / f"{host.key}.json"


def read_bounds(home: Path, host: HostIdentity) -> HostBounds | None:
    path = bounds_path(home, host)
    if not path.is_file():
        return None
    try:
        stored = HostBounds.model_validate_json(path.read_text())
    except (ValidationError, ValueError) as exc:
        raise InputError(f"not a bias file: {str(exc).splitlines()[0]}", file=path) from None
    return stored if stored.host == host else None   # a hash collision is no match


def write_bounds(home: Path, host: HostIdentity, bounds: list[HostBound]) -> Path:
    """Replace this host's bounds of the arrangements and targets given, keeping the others."""
    path = bounds_path(home, host)
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = read_bounds(home, host)
    new = {(b.arrangement, b.target) for b in bounds}
    merged = [b for b in (kept.bounds if kept else []) if (b.arrangement, b.target) not in new] + list(bounds)
    write_json_atomic(path, HostBounds(host=host, bounds=merged).model_dump(mode="json"))
    return path


def host_bound(home: Path, fingerprint: dict[str, Any], arrangement: str, target: str) -> HostBound | None:
    """This machine's bound for a study of `target` in `arrangement`, or None: a kind is bounded
    only by cases of its own kind (a PostgreSQL dilution never widens a SQLite study)."""
    stored = read_bounds(home, HostIdentity.of(fingerprint))
    return None if stored is None else stored.find(arrangement, target)
