# perflab: the two commands of the README, and a few more.
VENV ?= .venv
STAMP := $(VENV)/.perflab-installed

.PHONY: demo demo-full demo-run test test-fast lint install clean accuracy system

$(STAMP): pyproject.toml scripts/bootstrap-venv.sh
	./scripts/bootstrap-venv.sh $(VENV)
	touch $(STAMP)

install: $(STAMP)

# The system programs the tests use for real (scripts/system-programs.tsv: nginx, wrk, PostgreSQL
# 15, Chromium, valgrind, k6, runsc...), as root on Debian; only what is missing, saying what and
# how long (about 3 minutes the first time, k6 and runsc built from the Go module proxy; a second
# or so after).
system:
	./scripts/setup-system.sh

# The main job on the embedded default: SQLite 3.40.1 -> 3.54.1 through apsw (a duet; about 5 minutes after set-up, a counted pass after each measured run).
demo: $(STAMP)
	$(VENV)/bin/perflab study examples/sqlite-release-study.yaml

# The same study at full length (5-minute windows after 1 minute of stabilization, 6 blocks; about 40 minutes).
demo-full: $(STAMP)
	$(VENV)/bin/perflab study examples/sqlite-release-study.yaml --measurement 5m --stabilization 1m --blocks 6

# One run of the debit-credit workload and its summary.
demo-run: $(STAMP)
	$(VENV)/bin/perflab run examples/debit-credit.yaml

# Regenerate docs/accuracy.md (known-cost SUT at 20-90% utilization; run on a quiet machine).
accuracy: $(STAMP)
	$(VENV)/bin/perflab accuracy

# The tests (what CI runs: .ci/run calls `make test`), after the set-up of the system programs
# they use (`make system`: a newcomer's `make test` runs the suite CI runs): both tiers, each phase with a count of
# its outcomes at the end (tests/conftest.py). The lab tier is every test that starts a real run
# or a real system -- perflab's driver against SQLite, the synthetic SUT, PostgreSQL, nginx, Ray,
# network namespaces, monitors of real processes, Chromium -- and the long simulations of the
# statistics; it keeps every truth test. tests/tiers.py decides, by rule. The fast tier runs
# first, on every CPU (-n auto: its tests start no real run and share nothing). The lab tier runs
# in two phases: the `shared` lab tests -- the simulations, and real systems checked for exit
# codes, reasons, stored runs and pages, never a measured value (tests/tiers.py's LAB_SHARED) --
# two at a time; then every other lab test one at a time (its runs pin the driver and the SUT to
# CPUs and measure them).
# PYTHONDONTWRITEBYTECODE is unset for the tests: the suite starts hundreds of interpreters (each
# pytest worker rewrites every test module's asserts, each perflab command compiles its modules),
# and without cached bytecode every one of them compiles again -- 8 s of each pytest process's
# collection on this machine.
test: system $(STAMP)
	@unset PYTHONDONTWRITEBYTECODE; \
	$(VENV)/bin/pytest -q -m "not lab" -n auto --dist loadfile; fast=$$?; \
	$(VENV)/bin/pytest -q -m "lab and shared" -n 2 --dist loadfile; shared=$$?; \
	$(VENV)/bin/pytest -q -m "lab and not shared"; quiet=$$?; \
	for rc in $$fast $$shared $$quiet; do if [ $$rc -ne 0 ]; then exit $$rc; fi; done

# The linters (.ci/run calls `make lint` before the tests): ruff, then mypy over src/perflab at the
# strictness pyproject.toml's [tool.mypy] states and why (every package, serve/ included).
# Both must say nothing. mypy keeps its cache in .mypy_cache: about 30 s of CPU the first time, a
# few seconds after a change.
lint: $(STAMP)
	$(VENV)/bin/python -m ruff check src/perflab
	$(VENV)/bin/python -m mypy src/perflab

# The fast tier alone: unit tests, synthetic run directories, and studies, compare, capacity and
# the dashboard driven through the model driver (perflab.drive.model_driver: known cost, noise,
# drift) -- no real run. About 1.5 minutes on this 2-CPU machine (1,199 tests in 84 s, measured
# 2026-11-28 14:06 in a fresh clone's .ci/run), spread over every CPU; the loop to run while
# working, `make test` before pushing. The lab tier's shared phase took 195 s there (87 tests, two
# at a time) and its quiet phase 434 s (90 tests, one at a time): 11.9 minutes for `make test`
# (issue 24's goal: 15). The same suite took 18.0 minutes in the morning's fresh clones (the fast
# tier 204-212 s): this machine's speed differs from one part of a day to another by more than the
# 2-3.5 % it wanders within minutes.
test-fast: $(STAMP)
	@unset PYTHONDONTWRITEBYTECODE; $(VENV)/bin/pytest -q -m "not lab" -n auto --dist loadfile

clean:
	rm -rf $(VENV) perflab-runs .pytest_cache .mypy_cache .ruff_cache
