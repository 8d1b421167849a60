"""Releases under test by package version: a pip requirement, installed once into a cache.

A release study compares two releases of one system through the same code path. For a SUT that
ships as a Python package -- SQLite through `apsw`, whose wheels bundle one SQLite release each
(apsw 3.40.1.0 bundles SQLite 3.40.1) -- the release is named by a pinned pip requirement
(`apsw==3.40.1.0`). perflab installs it with the running interpreter's pip into a directory of
its own, once, and puts that directory first on the SUT processes' import path, so two
releases of the same package can be measured by the same perflab in the same study.

Cache: `$PERFLAB_RELEASES`, else `$XDG_CACHE_HOME/perflab/releases`, else
`~/.cache/perflab/releases`; one directory per release, `<name>-<version>/`. A directory is
complete when its `perflab-release.json` exists: the install goes to a temporary directory that
is renamed into place, so a killed install never leaves a half release behind, and a file lock
keeps two perflab processes from installing the same release at once. A complete release is
reused without asking the index, so a machine that installed it once runs offline.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from perflab.errors import InputError
from perflab.workload.requirement import Requirement, canonical_name, parse_requirement  # noqa: F401 (re-exported)

#: Marks a complete release directory and records what it holds.
MANIFEST = "perflab-release.json"
#: pip's words for "the index could not be reached" (as opposed to "no such version").
_OFFLINE_HINTS = ("connection", "network is unreachable", "temporary failure in name resolution",
                  "name or service not known", "max retries", "timed out", "proxy", "ssl")
INSTALL_TIMEOUT_S = 600.0


def cache_root() -> Path:
    explicit = os.environ.get("PERFLAB_RELEASES")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "perflab" / "releases"


@dataclass(frozen=True)
class InstalledRelease:
    """A release on disk: where it is, what was asked for, and the exact versions installed."""

    requirement: Requirement
    path: Path
    versions: dict[str, str]

    def fingerprint(self) -> dict:
        """What a run records about the release it measured."""
        return {"requirement": self.requirement.text, "versions": dict(self.versions), "path": str(self.path)}


def release_dir(requirement: Requirement, root: Path | None = None) -> Path:
    return (root or cache_root()) / requirement.directory_name


def installed(requirement: Requirement, root: Path | None = None) -> InstalledRelease | None:
    """The release when it is complete in the cache, else None."""
    path = release_dir(requirement, root)
    manifest = path / MANIFEST
    if not manifest.is_file():
        return None
    try:
        data = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return None
    return InstalledRelease(requirement, path, dict(data.get("versions") or {}))


def ensure(text: str, root: Path | None = None) -> InstalledRelease:
    """The release named by `text`, installed into the cache first when it is not there.

    Raises InputError (exit 2, one line) when the requirement is not a pin, or when pip cannot
    install it -- saying whether the index could not be reached and what to do then.
    """
    try:
        requirement = parse_requirement(text)
    except ValueError as exc:
        raise InputError(str(exc), field="target.release") from None
    root = root or cache_root()
    found = installed(requirement, root)
    if found is not None:
        return found
    root.mkdir(parents=True, exist_ok=True)
    with file_lock(root / f".{requirement.directory_name}.lock"):
        found = installed(requirement, root)  # another process may have finished it meanwhile
        if found is not None:
            return found
        return _install(requirement, root)


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """One holder at a time across processes (an flock on `path`): one install of a release, one
    build of a revision (perflab.bisect.builds)."""
    with open(path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _install(requirement: Requirement, root: Path) -> InstalledRelease:
    final = release_dir(requirement, root)
    staging = Path(tempfile.mkdtemp(prefix=f".{requirement.directory_name}-", dir=root))
    try:
        # The running interpreter's pip: the wheel must match the Python the SUT workers run.
        # --target ignores the packages of perflab's own environment, so the release and its
        # dependencies are all installed here; --no-warn-conflicts keeps pip from comparing
        # them with perflab's environment, which they are meant to differ from.
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                   "--no-warn-conflicts", "--no-input", "--target", str(staging), requirement.text]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise InputError(_install_failure(requirement, final, "pip did not finish within "
                                              f"{INSTALL_TIMEOUT_S:.0f} s", offline=True),
                             field="target.release") from None
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).strip()
            raise InputError(_install_failure(requirement, final, detail, offline=_looks_offline(detail)),
                             field="target.release")
        versions = _distributions(staging)
        if canonical_name(requirement.name) not in {canonical_name(n) for n in versions}:
            raise InputError(f"pip installed {requirement.text} but no {requirement.name} distribution is in "
                             f"{staging}", field="target.release")
        (staging / MANIFEST).write_text(json.dumps({"requirement": requirement.text, "versions": versions,
                                                    "python": sys.version.split()[0]}, indent=1) + "\n")
        if final.exists():  # an incomplete directory from an older perflab: replaced whole
            shutil.rmtree(final)
        os.rename(staging, final)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return InstalledRelease(requirement, final, versions)


def _looks_offline(detail: str) -> bool:
    lowered = detail.lower()
    return any(hint in lowered for hint in _OFFLINE_HINTS)


def _install_failure(requirement: Requirement, final: Path, detail: str, offline: bool) -> str:
    last = detail.splitlines()[-1] if detail else "no message"
    todo = (f"Run once where the index can be reached (the release is then cached in {final}), copy that "
            f"directory from a machine that has it, or point pip at a mirror (PIP_INDEX_URL, PIP_FIND_LINKS)")
    if offline:
        return f"cannot install {requirement.text}: the package index could not be reached ({last}). {todo}"
    if "from versions: none" in detail:
        # pip says this both for a project the index lacks and for an index it could not read.
        return (f"cannot install {requirement.text}: pip found no version of {requirement.name} (the package index "
                f"could not be reached, or does not have it). {todo}")
    return f"cannot install {requirement.text} with pip: {last}"


def _distributions(directory: Path) -> dict[str, str]:
    """Name -> version of every distribution pip put in `directory` (from *.dist-info/METADATA)."""
    versions: dict[str, str] = {}
    for info in sorted(directory.glob("*.dist-info")):
        name = version = None
        try:
            lines = (info / "METADATA").read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            if not line.strip():
                break  # the headers end at the first blank line
            key, _, value = line.partition(":")
            if key == "Name":
                name = value.strip()
            elif key == "Version":
                version = value.strip()
        if name and version:
            versions[name] = version
    return versions


def requirements_of(target) -> list[str]:
    """The pinned requirements a workload's target names (`target.release`), in order."""
    release = getattr(target, "release", None)
    if not release:
        return []
    return [release] if isinstance(release, str) else list(release)


def ensure_all(texts: list[str], root: Path | None = None) -> list[InstalledRelease]:
    return [ensure(text, root) for text in texts]


def release_fingerprint(releases: list[InstalledRelease]) -> dict:
    """The fingerprint entry of a run's releases: requirement -> exact versions installed."""
    return {r.requirement.text: dict(r.versions) for r in releases}


def call_with_path(paths: list[str], function, *args):
    """`function(*args)` in a fresh interpreter whose imports look in `paths` first.

    The driver process may already have imported another release of the same package (a study
    runs every configuration from one process, and a module can be imported once), so whatever
    must import the release under test in the driver's stead -- a SQLite adapter's `prepare`,
    which creates the database and reads the library's version -- runs here. `function` must be
    importable by name (spawn pickles it by reference)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=prepend_path,
                             initargs=(list(paths),)) as pool:
        return pool.submit(function, *args).result()


def prepend_path(paths: list[str]) -> None:
    """Put the releases first on this process's import path (a SUT worker, or call_with_path)."""
    for entry in reversed(paths):
        if entry in sys.path:
            sys.path.remove(entry)
        sys.path.insert(0, entry)
