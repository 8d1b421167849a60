"""The versions file of `perflab bisect`: a study, an ordered list of versions, and how a version is
set up.

    study: ../sqlite-release-study.yaml        # its workload, load, arrangement, timing, margin
    set: {target.release: "apsw=={version}"}   # what a version sets in the workload
    versions: [3.40.1.0, 3.41.2.0, 3.42.0.1]   # oldest first

Each step of the bisect is the study with its configurations replaced by two versions (the older
first, the base). A version is a name, or `{name: ..., set: {...}}` with settings of its own. With
`git:` the versions are revisions of a repository, each built once by a command into a directory
of its own, which `{build}` names in `set` (perflab.bisect.builds):

    git: {repo: ../myproject, build: [pip, install, --no-deps, --target, "{build}", .]}
    set: {target.path: ["{build}"]}
    versions: [4f1c2e0, 9b7a113, c0ffee1]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from perflab.errors import InputError
from perflab.workload.loader import read_yaml, validate_model
from perflab.workload.model import Strict

#: The most blocks an INCONCLUSIVE step is run again with before the bisect reports it undecided.
MAX_BLOCKS = 24
#: The most versions a file may list (a bisect of 4,096 versions is 12 steps).
MAX_VERSIONS = 4096


class Version(Strict):
    name: str = Field(min_length=1)
    set: dict[str, Any] | None = Field(default=None, description="this version's own settings (default: the "
                                       "file's `set`)")


class Git(Strict):
    repo: str = Field(description="a git repository (a path, relative to the versions file)")
    build: list[str] = Field(min_length=1, description="the command that builds a revision, run in a checkout of it; "
                             "{build}: the directory it builds into (kept per revision, reused)")


class VersionsFile(Strict):
    study: str = Field(description="the study file (relative to this file): workload, load, arrangement, timing, "
                       "margin; its configurations are replaced by the two versions of each step")
    set: dict[str, Any] = Field(default_factory=dict, description="what a version sets in the workload: dotted "
                                "paths as a study's `set`; {version} is the version's name, {build} its build "
                                "directory (git)")
    versions: list[str | Version] = Field(min_length=2, max_length=MAX_VERSIONS, description="oldest first")
    git: Git | None = None
    blocks: int | None = Field(default=None, ge=3, description="blocks of each step's study (default: the study's)")
    max_blocks: int = Field(default=MAX_BLOCKS, ge=3, description="an INCONCLUSIVE step is run again with more "
                            "blocks, up to this many")

    @model_validator(mode="after")
    def _check(self) -> VersionsFile:
        names = [v if isinstance(v, str) else v.name for v in self.versions]
        seen = set()
        for name in names:
            if name in seen:
                raise ValueError(f"version {name!r} is listed twice")
            seen.add(name)
        if not self.set and any(isinstance(v, str) or v.set is None for v in self.versions):
            raise ValueError("give `set` (what a version sets in the workload), or a `set` for every version")
        if self.blocks is not None and self.blocks > self.max_blocks:
            raise ValueError(f"blocks ({self.blocks}) is above max_blocks ({self.max_blocks})")
        return self

    def names(self) -> list[str]:
        return [v if isinstance(v, str) else v.name for v in self.versions]

    def settings(self, index: int, build: Path | None = None) -> dict[str, Any]:
        """What version `index` sets, its placeholders filled in."""
        v = self.versions[index]
        template = self.set if isinstance(v, str) or v.set is None else v.set
        name = v if isinstance(v, str) else v.name
        return {path: fill(value, name, build) for path, value in template.items()}


def fill(value: Any, version: str, build: Path | None) -> Any:
    """`{version}` and `{build}` in every string of a setting (lists and mappings included)."""
    if isinstance(value, str):
        text = value.replace("{version}", version)
        return text.replace("{build}", str(build)) if build is not None else text
    if isinstance(value, list):
        return [fill(v, version, build) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, version, build) for k, v in value.items()}
    return value


def load_versions(path: Path) -> tuple[VersionsFile, Path]:
    """The versions file and the study file it names (resolved); errors name file, line, field."""
    path = Path(path)
    data = read_yaml(path)
    versions = validate_model(VersionsFile, data, path)
    study = (path.parent / versions.study).resolve()
    if not study.is_file():
        raise InputError(f"study file not found: {versions.study}", file=path, field="study")
    if versions.git is not None:
        repo = (path.parent / versions.git.repo).resolve()
        if not (repo / ".git").exists() and not (repo / "HEAD").is_file():
            raise InputError(f"not a git repository: {versions.git.repo}", file=path, field="git.repo")
        versions.git.repo = str(repo)
    return versions, study
