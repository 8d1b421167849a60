"""The set-up installs every system program the tests use: tests/programs.py's table is the one
list scripts/setup-system.sh installs from, and no test looks a program up any other way."""

from __future__ import annotations

import re
import subprocess

import programs

TESTS = programs.REPO / "tests"
SETUP = programs.REPO / "scripts" / "setup-system.sh"


def test_every_program_in_the_table_says_how_it_is_installed():
    assert programs.PROGRAMS, "the table is empty"
    for program in programs.PROGRAMS.values():
        assert program.how in ("apt", "go", "go-static"), program
        if program.how.startswith("go"):
            assert re.fullmatch(r"[\w./-]+@v[\w.+-]+", program.what), program  # pinned


def test_no_test_looks_a_program_up_outside_the_table():
    # shutil.which or a hard-coded /usr/bin path in a test would bypass the table (and the set-up):
    # such a program could be missing after README's test command, and the test would skip.
    offenders = []
    for path in TESTS.rglob("*.py"):
        if path.name == "programs.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"shutil\.which\(|find_k6\(\)|find_go_tool\(|Path\(\"/usr/(s?bin|lib/postgresql)", line):
                offenders.append(f"{path.relative_to(programs.REPO)}:{number}: {line.strip()}")
    assert not offenders, "look programs up through tests/programs.py:\n" + "\n".join(offenders)


def test_the_setup_reads_the_table_and_a_second_call_installs_nothing():
    assert "system-programs.tsv" in SETUP.read_text()
    missing = [name for name in programs.PROGRAMS if programs.location(name) is None]
    done = subprocess.run(["bash", str(SETUP)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    if not missing:
        # Everything is there (README's test command ran it first): the set-up says so and stops.
        assert "every program the tests use is installed" in done.stdout, done.stdout


def test_the_makefile_test_target_runs_the_setup_first():
    makefile = (programs.REPO / "Makefile").read_text()
    prerequisites = makefile.split("\ntest:", 1)[1].split("\n", 1)[0].split()
    assert prerequisites[0] == "system", prerequisites  # before the environment: gcc builds the compiled loop
    system = makefile.split("\nsystem:", 1)[1].split("\n\n", 1)[0]
    assert "scripts/setup-system.sh" in system, system
