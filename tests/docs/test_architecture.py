"""The architecture as a law: data flows one way, so no package imports a later stage, and a
private name (`_x`) never crosses a module boundary (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "perflab"

#: Pipeline order: a package may import only packages of a lower rank (or its own).
RANKS = {
    "errors": 0, "caveats": 0, "tools": 0, "safe_text": 0, "redact": 0,
    "stats": 1, "records": 1, "catalog": 1,
    "workload": 2, "store": 2,
    "sut": 3, "monitor": 3,
    "drive": 4,
    "reduce": 5, "derive": 6,
    "study": 7, "capacity": 7,
    "report": 8,
    "serve": 9,
    "cli": 10, "__init__": 10,
}


def _imports():
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).parts
        package = parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("perflab"):
                yield path, package, node.module, [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("perflab"):
                        yield path, package, alias.name, []


def test_every_package_has_a_rank():
    packages = {p.name.removesuffix(".py") for p in SRC.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert packages <= set(RANKS), packages - set(RANKS)


def test_no_package_imports_a_later_stage():
    wrong = []
    for path, package, module, _names in _imports():
        parts = module.split(".")
        if len(parts) < 2:
            continue
        target = parts[1]
        if target != package and RANKS[target] > RANKS[package]:
            wrong.append(f"{path.relative_to(SRC)} imports {module} ({package} rank {RANKS[package]} < "
                         f"{target} rank {RANKS[target]})")
    assert not wrong, "\n".join(wrong)


def test_no_private_name_crosses_a_module_boundary():
    wrong = [f"{path.relative_to(SRC)}: from {module} import {name}"
             for path, _package, module, names in _imports() for name in names
             if name.startswith("_") and not name.startswith("__")]
    assert not wrong, "\n".join(wrong)
