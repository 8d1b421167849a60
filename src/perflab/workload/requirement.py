"""A release named by a pinned pip requirement (`apsw==3.40.1.0`): parsed here, where the
workload schema can check it; installed by perflab.sut.releases."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([A-Za-z0-9][A-Za-z0-9.+!_-]*)\s*$")


@dataclass(frozen=True)
class Requirement:
    """A pinned requirement: one distribution at one version."""

    name: str
    version: str

    @property
    def text(self) -> str:
        return f"{self.name}=={self.version}"

    @property
    def directory_name(self) -> str:
        return f"{canonical_name(self.name)}-{self.version}"


def canonical_name(name: str) -> str:
    """PEP 503 normalized name: apsw, Foo_Bar and foo.bar are one project."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_requirement(text: str) -> Requirement:
    """`apsw==3.40.1.0` -> Requirement; anything but an exact pin is refused (a range would make
    the release under test depend on the day the cache was filled)."""
    match = _PIN.match(str(text))
    if match is None:
        raise ValueError(f"a release is a pinned pip requirement such as apsw==3.40.1.0, got {text!r}")
    return Requirement(match.group(1), match.group(2))


