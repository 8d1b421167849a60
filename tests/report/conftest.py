"""Fixtures of the report tests: the synthetic study of study_data, fresh for every test."""

from __future__ import annotations

import pytest

from .study_data import make_study, make_sweep_study


@pytest.fixture
def study() -> dict:
    return make_study()


@pytest.fixture
def sweep_study() -> dict:
    return make_sweep_study()
