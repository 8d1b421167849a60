"""Fixtures for monitor tests (helpers live in helpers.py)."""

from __future__ import annotations

import pytest

from .helpers import Child


@pytest.fixture
def spawn():
    children: list[Child] = []

    def make(body: str, *args: str, **kw) -> Child:
        c = Child(body, *args, **kw)
        children.append(c)
        return c

    yield make
    for c in children:
        c.kill()
