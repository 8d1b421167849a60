"""The order of versions: releases by their version numbers, anything else by first appearance.

A version is what perflab.history.runs.version_of gives: a pinned requirement (`apsw==3.40.1.0`,
several joined by ", "), a label, or the SUT's own version string. Releases compare by PEP 440
(packaging, which pip itself uses: 3.9.2 < 3.40.1); when any version of a series is not one (a
commit id, a name), the series keeps the order in which the versions first ran -- a CI job runs
commits in their order.
"""

from __future__ import annotations

from collections.abc import Sequence

from packaging.version import InvalidVersion, Version


def release_number(version: str) -> Version | None:
    """The PEP 440 version in a requirement (`apsw==3.40.1.0`) or a bare number (`3.40.1`)."""
    text = version.split(",")[0].strip()
    if "==" in text:
        text = text.split("==", 1)[1].strip()
    try:
        return Version(text)
    except InvalidVersion:
        return None


def version_ranks(versions_in_time_order: Sequence[str]) -> dict[str, int]:
    """Each distinct version's place (0 first)."""
    distinct = list(dict.fromkeys(versions_in_time_order))
    numbers = [release_number(v) for v in distinct]
    if distinct and all(n is not None for n in numbers):
        order = sorted(range(len(distinct)), key=lambda i: (numbers[i], distinct[i]))
        return {distinct[i]: rank for rank, i in enumerate(order)}
    return {v: rank for rank, v in enumerate(distinct)}
