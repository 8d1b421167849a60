#!/usr/bin/env bash
# Run every benchmark (perflab and its peers, 3 repetitions) and regenerate docs/performance.md.
# Arguments go to bench/run_all.py (--only PART,..., --reps N, --render, --smoke).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || make install
[ "${1:-}" = "--smoke" ] || [ "${1:-}" = "--render" ] || ./bench/setup_peers.sh
exec .venv/bin/python bench/run_all.py "$@"
