# perflab: the two commands of the README, and a few more.
VENV ?= .venv
STAMP := $(VENV)/.perflab-installed

.PHONY: demo test install clean accuracy

$(STAMP): pyproject.toml scripts/bootstrap-venv.sh
	./scripts/bootstrap-venv.sh $(VENV)
	touch $(STAMP)

install: $(STAMP)

# The main job on the embedded default.
demo: $(STAMP)
	$(VENV)/bin/perflab run examples/debit-credit.yaml

# The tests (what CI runs).
test: $(STAMP)
	$(VENV)/bin/pytest -q

clean:
	rm -rf $(VENV) perflab-runs .pytest_cache
