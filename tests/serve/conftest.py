"""Fixtures of the serve tests: one real store, driven once per session (about 20 s)."""

from __future__ import annotations

import pytest

from .serve_data import Stored, build_store


@pytest.fixture(scope="session")
def stored(tmp_path_factory) -> Stored:
    return build_store(tmp_path_factory.mktemp("serve"))
