"""Fixtures shared by every test folder, and the two tiers (tests/tiers.py: the rule; the
Makefile: `make test-fast`, `make test`). Helpers live in cli_helpers.py and model_helpers.py
(importable by name)."""

from __future__ import annotations

from pathlib import Path

import programs
import pytest
import tiers

#: A fast-tier test that runs longer than this is named in the session's summary.
FAST_TEST_S = 30.0


def pytest_collection_modifyitems(config, items):
    """Mark every test that starts a real run or system `lab`, and the lab tests that may run
    beside another `shared` (tiers.py says how each is told)."""
    for item in items:
        if tiers.item_is_lab(item):
            item.add_marker(pytest.mark.lab)
            if tiers.item_is_shared(item):
                item.add_marker(pytest.mark.shared)


def pytest_runtest_setup(item):
    """A test that needs a system program it cannot find fails, naming the set-up that installs
    it (tests/programs.py): README's test command installs every one, so this is never a skip."""
    missing = programs.missing(item)
    if missing:
        pytest.fail(programs.failure(missing), pytrace=False)
    not_built = programs.compiled_loop_missing(item)
    if not_built:
        pytest.fail(not_built, pytrace=False)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """How many tests of each tier ran and how they ended: a lab tier that CI runs is reported by
    count, so a truth test that stopped running shows."""
    counts: dict[str, dict[str, int]] = {}
    for outcome in ("passed", "failed", "error", "skipped", "xfailed", "xpassed"):
        for report in terminalreporter.stats.get(outcome, []):
            if outcome == "passed" and getattr(report, "when", "call") != "call":
                continue
            tier = "lab" if "lab" in getattr(report, "keywords", {}) else "fast"
            counts.setdefault(tier, {}).setdefault(outcome, 0)
            counts[tier][outcome] += 1
    if counts:
        terminalreporter.write_sep("-", "tiers")
        for tier in ("fast", "lab"):
            if tier in counts:
                terminalreporter.write_line(f"{tier}: " + ", ".join(f"{n} {o}" for o, n in sorted(counts[tier].items())))
        slow = sorted(((r.duration, r.nodeid) for r in terminalreporter.stats.get("passed", [])
                       if r.when == "call" and "lab" not in r.keywords and r.duration > FAST_TEST_S), reverse=True)
        if slow:
            terminalreporter.write_line(f"fast-tier tests over {FAST_TEST_S:g} s (the tier's budget is 5 minutes: "
                                        f"tests/tiers.py): " + ", ".join(f"{n} {d:.0f} s" for d, n in slow[:5]))


@pytest.fixture(autouse=True)
def _a_fast_test_starts_no_real_run(request):
    """The rule's check: a test outside the lab tier that stored a real run in its tmp_path
    belongs in the lab tier (mark it `lab`, or teach tiers.py what it calls)."""
    watched = request.node.get_closest_marker("lab") is None and "tmp_path" in request.fixturenames
    tmp_path = request.getfixturevalue("tmp_path") if watched else None
    yield
    real = tiers.real_runs(tmp_path) if watched else []
    if real:
        pytest.fail(f"this test stored {len(real)} real run(s) ({real[0]}) but is not in the lab tier: mark it "
                    f"@pytest.mark.lab, or add what it calls to tests/tiers.py's LAB_NAMES", pytrace=False)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    path.mkdir()
    return path
