#!/usr/bin/env bash
# Install what the benchmarks compare perflab with, outside the project venv.
#   nginx-light, wrk           Debian packages (the HTTP target and the C reference generator)
#   redis-server, redis-tools  Debian packages (the TCP target and redis-benchmark, tcp_driver_cost.py)
#   Locust, py-spy, pyinstrument   bench/.venv-peers (a venv of their own: not perflab dependencies)
#   k6                         go install go.k6.io/k6@latest (into $(go env GOPATH)/bin)
# wrk2 is not installed: it is C and none of the reachable registries carries it.
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
need=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v wrk >/dev/null || need+=(wrk)
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-benchmark >/dev/null || need+=(redis-tools)
command -v taskset >/dev/null || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# nginx-light starts a service on port 80 when it can; the benchmark runs its own on 127.0.0.1:18080
# (and redis-server its own on 127.0.0.1:17379, bench/redis_server.py).
if [ ! -x .venv-peers/bin/locust ]; then
  python3 -m venv .venv-peers
  .venv-peers/bin/pip install -q locust py-spy pyinstrument
fi
if ! command -v k6 >/dev/null && [ ! -x "$(go env GOPATH 2>/dev/null)/bin/k6" ]; then
  if command -v go >/dev/null; then
    (cd /tmp && go install go.k6.io/k6@latest)
  else
    echo "go is not installed: k6 rows will be missing" >&2
  fi
fi
echo "peers ready: nginx $(nginx -v 2>&1 | cut -d/ -f2), $(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2)," \
     "$(.venv-peers/bin/locust --version 2>&1 | head -1), $("$(go env GOPATH)/bin/k6" version 2>/dev/null | head -1)"
