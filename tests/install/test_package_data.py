"""The wheel carries every file the package reads besides its modules: templates, static files.

setuptools puts a non-Python file into the wheel only when a [tool.setuptools.package-data]
pattern names it; a new template nobody added there works in a checkout and is missing from
every install. scripts/check-plain-install.sh checks the same on the built wheel.
"""

from __future__ import annotations

import fnmatch
import subprocess
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "perflab"


def _data_files() -> list[str]:
    """Tracked non-Python files under src/perflab, relative to the package. The C sources and
    headers are not data: setup.py compiles them into the package (its Extension and its depends;
    MANIFEST.in puts the headers in the sdist)."""
    listed = subprocess.run(["git", "ls-files", "src/perflab"], cwd=REPO, capture_output=True, text=True, check=True)
    return [str(Path(f).relative_to("src/perflab")) for f in listed.stdout.split() if not f.endswith((".py", ".c", ".h"))]


def test_the_c_sources_are_the_extensions_of_setup_py():
    """Each tracked C source or header under src/perflab is named by setup.py (a source compiled,
    a header among the extension's depends: else neither built nor rebuilt when it changes), and
    each header is in MANIFEST.in (else an sdist would not carry it)."""
    listed = subprocess.run(["git", "ls-files", "src/perflab"], cwd=REPO, capture_output=True, text=True, check=True)
    sources = [f for f in listed.stdout.split() if f.endswith((".c", ".h"))]
    setup = (REPO / "setup.py").read_text()
    assert sources and all(f'"{source}"' in setup for source in sources), sources
    manifest = (REPO / "MANIFEST.in").read_text().split()
    headers = [f for f in sources if f.endswith(".h")]
    assert all(any(fnmatch.fnmatch(h, pattern) for pattern in manifest) for h in headers), headers


def test_every_data_file_is_package_data():
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["perflab"]
    files = _data_files()
    assert any(f.startswith("report/templates/") for f in files)   # the list is not empty by mistake
    missing = [f for f in files if not any(fnmatch.fnmatch(f, p) for p in patterns)]
    assert missing == [], f"not in [tool.setuptools.package-data] of pyproject.toml: {missing}"
