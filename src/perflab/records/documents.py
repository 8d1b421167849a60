"""Reading a stored JSON record into its model: one way for run.json and study.json alike --
a missing, unreadable or malformed file, or one that is not the model, is an InputError naming
the file (and the field), never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from perflab.errors import InputError

M = TypeVar("M", bound=BaseModel)


def read_json(path: Path, filename: str, what: str) -> tuple[Any, Path]:
    """The parsed JSON of `path` (a file, or a directory holding `filename`)."""
    path = Path(path)
    if path.is_dir():
        path = path / filename
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"not a {what} directory: {filename} is missing", file=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {getattr(exc, 'strerror', None) or exc}", file=path) from None
    try:
        return json.loads(text), path
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", file=path, line=exc.lineno) from None


def validate(model: type[M], upgrade: Callable[[dict[str, Any]], dict[str, Any]], data: Any,
             source: Path | str | None, what: str) -> M:
    """`data` brought to the current format by `upgrade`, as a `model`."""
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", file=source, line=1)
    try:
        return model.model_validate(upgrade(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"not a perflab {what}: {first['msg']}", file=source, field=where) from None
    except ValueError as exc:
        raise InputError(str(exc), file=source) from None
