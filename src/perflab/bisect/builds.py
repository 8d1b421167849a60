"""Git revisions under test: each checked out and built once, into a directory of its own.

`perflab bisect` with `git:` in its versions file builds a revision the first time a step needs
it: the revision's tree (`git archive`, so the repository's own working tree is never touched) is
unpacked into `<build>/src`, and the file's build command runs there with `{build}` standing for
the revision's directory. The directory is kept and reused, as the release cache keeps releases
(perflab.sut.releases): `$PERFLAB_RELEASES/../builds/<repo>-<commit>/`, complete once its
`perflab-build.json` exists (a killed build is redone), one build at a time per revision (a lock).
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

from perflab.errors import InputError
from perflab.sut.releases import cache_root, file_lock

MANIFEST = "perflab-build.json"
BUILD_TIMEOUT_S = 3600.0




def builds_root() -> Path:
    return cache_root().parent / "builds"


def resolve_revision(repo: Path, revision: str) -> str:
    """The full commit id of `revision` in `repo`; InputError when git does not know it."""
    try:
        done = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"cannot run git: {exc}", field="git.repo") from None
    if done.returncode != 0 or not done.stdout.strip():
        raise InputError(f"{repo} has no revision {revision!r}", field="versions")
    return done.stdout.strip()


def build_dir(repo: Path, commit: str, root: Path | None = None) -> Path:
    return (root or builds_root()) / f"{repo.name}-{commit[:12]}"


def ensure_build(repo: Path, revision: str, command: list[str], root: Path | None = None) -> Path:
    """The built revision's directory (built now when it is not complete)."""
    commit = resolve_revision(repo, revision)
    final = build_dir(repo, commit, root)
    if (final / MANIFEST).is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(final.parent / f".{final.name}.lock"):  # one build of a revision at a time
        if (final / MANIFEST).is_file():
            return final
        if final.exists():
            shutil.rmtree(final)        # a build that was killed: done again
        source = final / "src"
        source.mkdir(parents=True)
        try:
            archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit], capture_output=True,
                                     timeout=600)
            if archive.returncode != 0:
                raise InputError(f"git archive {commit[:12]} failed: {archive.stderr.decode(errors='replace').strip()}",
                                 field="versions")
            with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
                tar.extractall(source, filter="data")
            argv = [part.replace("{build}", str(final)) for part in command]
            try:
                done = subprocess.run(argv, cwd=source, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise InputError(f"the build of {revision} did not run: {exc}", field="git.build") from None
            if done.returncode != 0:
                last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no message"]
                raise InputError(f"the build of {revision} ({commit[:12]}) failed with exit code {done.returncode}: "
                                 f"{last[0]}", field="git.build")
            (final / MANIFEST).write_text(json.dumps({"revision": revision, "commit": commit, "command": argv,
                                                      "repo": str(repo)}, indent=1) + "\n")
        except BaseException:
            shutil.rmtree(final, ignore_errors=True)
            raise
    return final
