"""Releases of a PyPI package installed side by side for the case-study tests, each into a
directory of its own under PERFLAB_TEST_PACKAGES (kept between sessions)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("PERFLAB_TEST_PACKAGES", "/var/tmp/perflab-test-packages"))


def installed_releases(package: str, versions: tuple[str, ...]) -> dict[str, Path]:
    """version -> the directory holding `package` at that version (installed once; the test is
    skipped, saying why, when the package index cannot provide it)."""
    out = {}
    for version in versions:
        target = CACHE / f"{package}-{version}"
        if not (target / package).is_dir():
            done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-cache-dir", "--target",
                                   str(target), f"{package}=={version}"], capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                pytest.skip(f"cannot install {package}=={version} from the package index: "
                            f"{done.stderr.strip()[-300:]}")
        out[version] = target
    return out
