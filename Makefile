# perflab: the two commands of the README, and a few more.
VENV ?= .venv
STAMP := $(VENV)/.perflab-installed

.PHONY: demo demo-full demo-run test install clean accuracy

$(STAMP): pyproject.toml scripts/bootstrap-venv.sh
	./scripts/bootstrap-venv.sh $(VENV)
	touch $(STAMP)

install: $(STAMP)

# The main job on the embedded default: the SQLite 3.40 -> 3.54 release study (about 4 minutes).
demo: $(STAMP)
	$(VENV)/bin/perflab study examples/sqlite-release-study.yaml

# The same study at full length (2-minute measurement windows, 30 s stabilization; about 40 minutes).
demo-full: $(STAMP)
	$(VENV)/bin/perflab study examples/sqlite-release-study.yaml --measurement 2m --stabilization 30s

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
