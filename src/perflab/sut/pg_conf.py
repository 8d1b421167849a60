"""postgresql.conf as perflab writes it: settings appended under a header (the last line of a
setting wins, so a copied data directory -- a template, a base backup -- takes this run's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def conf_value(value: Any) -> str:
    """A postgresql.conf value: booleans as on/off, numbers bare, everything else quoted."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (int, float)):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def append_settings(conf: Path, settings: dict[str, Any], header: str) -> None:
    with open(conf, "a") as f:
        f.write(f"\n# {header}\n")
        for key, value in settings.items():
            f.write(f"{key} = {conf_value(value)}\n")
