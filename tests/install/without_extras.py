"""Python as on a plain `pip install perflab`: no package of pyproject's extras can be imported.

    python tests/install/without_extras.py import-all        # JSON: how each perflab module imported
    python tests/install/without_extras.py cli ARGS...       # `perflab ARGS...`

The test environment has every extra installed, so a meta path finder stands in for their
absence: it refuses the import names of every package listed in
[project.optional-dependencies] (read from pyproject.toml, so a new extra is refused too).
"""

from __future__ import annotations

import importlib
import importlib.abc
import json
import pkgutil
import re
import sys
import tomllib
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def optional_distributions() -> dict[str, set[str]]:
    """Extra -> the distributions it installs (names as written, without versions or extras)."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    extras = data["project"]["optional-dependencies"]
    core = {_name(d) for d in data["project"]["dependencies"]}
    out = {}
    for extra, requirements in extras.items():
        names = {_name(r) for r in requirements}
        out[extra] = {n for n in names if n not in core and n != "perflab"}
    return out


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0].lower()


def import_name(distribution: str) -> str:
    """prometheus-client -> prometheus_client, ray -> ray (every optional package here is named so)."""
    return distribution.replace("-", "_")


BLOCKED = frozenset(import_name(d) for names in optional_distributions().values() for d in names)


class RefuseExtras(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (refused: an optional extra)", name=name)
        return None


def install() -> None:
    for name in list(sys.modules):
        if name.split(".")[0] in BLOCKED:
            del sys.modules[name]
    sys.meta_path.insert(0, RefuseExtras())


def import_all() -> dict[str, dict[str, str]]:
    """module -> {"outcome": "ok" | "missing_extra" | "error", "detail": ...}."""
    import perflab
    from perflab.extras import MissingExtra

    results = {}
    # A __main__ module is a program (importing perflab.cli.__main__ runs the CLI), not a module.
    names = ["perflab"] + [m.name for m in pkgutil.walk_packages(perflab.__path__, "perflab.")
                           if not m.name.endswith(".__main__")]
    for name in names:
        try:
            importlib.import_module(name)
            results[name] = {"outcome": "ok", "detail": ""}
        except MissingExtra as exc:
            results[name] = {"outcome": "missing_extra", "detail": str(exc)}
        except BaseException:  # noqa: BLE001 -- reported, with the traceback, by the test
            results[name] = {"outcome": "error", "detail": traceback.format_exc()}
    return results


if __name__ == "__main__":
    install()
    if sys.argv[1] == "import-all":
        print(json.dumps(import_all()))
    elif sys.argv[1] == "cli":
        sys.argv = ["perflab", *sys.argv[2:]]
        from perflab.cli import main

        main()
    else:
        raise SystemExit(f"unknown mode {sys.argv[1]!r}")
