#!/usr/bin/env bash
# perflab's PostgreSQL driver beside pgbench on the same SQL (issue 28, item 1): the debit-credit
# workload (examples/postgres/debit-credit.yaml) and its pgbench twin, alternated REPS times, each
# line the driver's CPU per transaction (DRIVER SEC / COMMANDS (T), `perflab show --json`).
# The driver on CPU 0, PostgreSQL 15 on CPU 1; run it under the lab's quiet lock, nothing else
# running. Optional: TREE=/path/to/another/src to put a second perflab source tree beside it.
#   bash bench/pg_driver_cost.sh [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-3}"
store="$(mktemp -d)"
py=.venv/bin/python
per_tx() {
  local d
  d=$(ls -td "$store"/runs/* | head -1)
  .venv/bin/perflab show --json "$d" --store "$store" | $py -c "
import json, sys; v = json.load(sys.stdin); v = v.get('values', v)
print(f\"$1 {1e6 * v['driver_sec'] / v['tx_ok']:.1f} us/tx  ETR (T) {v['etr_t']:.0f}/s\")"
}
for rep in $(seq "$reps"); do
  if [ -n "${TREE:-}" ]; then
    PYTHONPATH="$TREE" $py -m perflab.cli run examples/postgres/debit-credit.yaml --store "$store" --quiet >/dev/null 2>&1 || true
    per_tx "perflab ($TREE)"
  fi
  .venv/bin/perflab run examples/postgres/debit-credit.yaml --store "$store" --quiet >/dev/null 2>&1 || true
  per_tx "perflab"
  .venv/bin/perflab run examples/postgres/debit-credit-pgbench.yaml --store "$store" --quiet >/dev/null 2>&1 || true
  per_tx "pgbench"
done
rm -rf "$store"
