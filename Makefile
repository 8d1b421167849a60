# perflab: the two commands of the README, and a few more.
VENV ?= .venv
STAMP := $(VENV)/.perflab-installed

.PHONY: demo demo-full demo-run test install clean accuracy

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

# The tests (what CI runs).
test: $(STAMP)
	$(VENV)/bin/pytest -q

clean:
	rm -rf $(VENV) perflab-runs .pytest_cache
