"""Fixtures shared by every test folder. Helpers live in cli_helpers.py (importable by name)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    path.mkdir()
    return path
