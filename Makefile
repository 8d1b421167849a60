# perflab: the two commands of the README, and a few more.
VENV ?= .venv
STAMP := $(VENV)/.perflab-installed

.PHONY: demo demo-full demo-run test test-fast install clean accuracy

$(STAMP): pyproject.toml scripts/bootstrap-venv.sh
	./scripts/bootstrap-venv.sh $(VENV)
	touch $(STAMP)

install: $(STAMP)

# The main job on the embedded default: SQLite 3.40.1 -> 3.54.1 through apsw (a duet; about 2 minutes after set-up).
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

# The tests (what CI runs: .ci/run calls `make test`): both tiers, and a count of each at the end.
# The lab tier is every test that starts a real run or a real system -- perflab's driver against
# SQLite, the synthetic SUT, PostgreSQL, nginx, Ray, network namespaces, monitors of real
# processes, Chromium -- and keeps every truth test; tests/tiers.py decides, by rule.
test: $(STAMP)
	$(VENV)/bin/pytest -q

# The fast tier alone: unit tests, synthetic run directories, and studies, compare, capacity and
# the dashboard driven through the model driver (perflab.drive.model_driver: known cost, noise,
# drift) -- no real run. The loop to run while working; `make test` before pushing.
test-fast: $(STAMP)
	$(VENV)/bin/pytest -q -m "not lab"

clean:
	rm -rf $(VENV) perflab-runs .pytest_cache
