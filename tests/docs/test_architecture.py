"""The architecture as a law: data flows one way, so no package imports a later stage, and a
private name (`_x`) never crosses a module boundary; and docs/architecture.md as its map: a row
for every package and module, files that exist, a glossary of the rows the registry has."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "perflab"

#: Pipeline order: a package may import only packages of a lower rank (or its own).
RANKS = {
    "errors": 0, "caveats": 0, "tools": 0, "safe_text": 0, "redact": 0, "extras": 0, "values": 0, "files": 0, "limits": 0, "http_server": 0,
    "arrow_arrays": 0,
    "stats": 1, "records": 1, "catalog": 1,
    "workload": 2, "store": 2,
    "sut": 3, "monitor": 3,
    "drive": 4,
    "reduce": 5, "derive": 6,
    "study": 7, "capacity": 7, "outcome": 7,
    "report": 8, "accuracy": 8,   # accuracy: repeated real studies of known added costs
    "history": 8, "bisect": 8,    # results over time: they read the store, run studies, print as report/ does
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


# -- docs/architecture.md: a row for every package, and a glossary that names real rows --------

DOC = SRC.parents[1] / "docs" / "architecture.md"


def _section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    assert f"\n## {title}\n" in text, f"docs/architecture.md has no section '## {title}'"
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _package_rows() -> list[list[str]]:
    """The cells of the package table: | package | stage | open first | what it does |."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in _section("The packages, and the one file to open first in each").splitlines()
            if line.startswith("|")]
    return [row for row in rows[2:] if len(row) >= 4]


def test_every_package_and_module_has_a_row_in_architecture_md():
    named = {row[0].strip("`") for row in _package_rows()}
    wanted = {f"{p.name}/" for p in SRC.iterdir() if (p / "__init__.py").exists()}
    wanted |= {p.name for p in SRC.glob("*.py") if p.name != "__init__.py"}
    assert not wanted - named, f"docs/architecture.md has no row for {sorted(wanted - named)}: add one " \
                               "(package | stage | open first | what it does)"
    assert not named - wanted, f"docs/architecture.md has rows for what src/perflab lacks: {sorted(named - wanted)}"


def test_every_subpackage_is_named_in_its_packages_rows():
    text = {}
    for row in _package_rows():
        text[row[0].strip("`")] = text.get(row[0].strip("`"), "") + " ".join(row[1:])
    missing = [f"{p.parent.relative_to(SRC)}/" for p in SRC.glob("*/*/__init__.py")
               if f"`{p.parent.relative_to(SRC)}/`" not in text.get(f"{p.parent.parent.name}/", "")
               and f"`{p.parent.name}/`" not in text.get(f"{p.parent.parent.name}/", "")]
    assert not missing, f"sub-packages no row of their package names: {missing}"


def test_the_files_to_open_first_exist():
    missing = [f"{row[0]}: {name}" for row in _package_rows()
               for name in re.findall(r"`([^`]+\.py)`", row[2]) if not (SRC / name).is_file()]
    assert not missing, "docs/architecture.md names files src/perflab does not have:\n" + "\n".join(missing)


def test_the_glossary_defines_the_words_and_names_real_rows():
    from perflab.catalog.registry import REGISTRY

    glossary = _section("Glossary")
    for word in ("seed reports", "Random seed", "Duet", "Block", "A/A", "Margin", "EQUIVALENT", "BETTER",
                 "WORSE", "INCONCLUSIVE", "(T)", "(S)", "(H)", "(V)", "(I)", "`drive/`", "`derive/`"):
        assert word in glossary, f"the glossary does not define {word!r}"
    # Every row label it defines in bold (`**ITR (S)**`) is one the metric registry knows.
    labels = set(re.findall(r"\*\*([A-Z][A-Z/ ]*[A-Z](?: \([A-Z]\))?)\*\*", glossary))
    labels -= {"CMD", "A/A", "EQUIVALENT", "BETTER", "WORSE", "INCONCLUSIVE"}
    for label in ("ETR (T)", "ITR (S)", "ITRR (S)", "PBT/CMD (S)", "CP/CMD (S)", "EMUL/CMD (S)", "TVR (S)",
                  "UTIL/PROC (S)"):
        assert label in labels, f"the glossary does not define {label}"
    unknown = sorted(label for label in labels if REGISTRY.by_label(label) is None)
    assert not unknown, f"the glossary defines rows the metric registry does not have: {unknown}"
