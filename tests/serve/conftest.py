"""Fixtures of the serve tests: one store of model runs, made once per session."""

from __future__ import annotations

import pytest

from .serve_data import Stored, build_store


@pytest.fixture(scope="session")
def stored(tmp_path_factory) -> Stored:
    return build_store(tmp_path_factory.mktemp("serve"))
