#!/usr/bin/env bash
# Installs the system programs the tests use for real (scripts/system-programs.tsv: nginx, wrk,
# PostgreSQL 15, Chromium, valgrind, k6, runsc...), as root on Debian. Idempotent: each program is
# looked for first and only what is missing is installed; a second call installs nothing and says
# so. `make test` calls it before the tests, and .ci/run through `make test`: the suite a newcomer
# runs is the suite CI runs.
# First time on a fresh machine: about 1.5 minutes of Debian packages, 2 of k6 and 2.5 of runsc
# (both built from the Go module proxy; runsc statically: the sandbox re-executes it in an empty
# chroot, where a dynamically linked runsc finds no ELF interpreter).
set -euo pipefail
cd "$(dirname "$0")/.."
table=scripts/system-programs.tsv
export DEBIAN_FRONTEND=noninteractive

present() {  # a program is there: an absolute path that is executable, or a name on PATH
  local where=$1
  case "$where" in
    python3-dev) python3 -c 'import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' 2>/dev/null ;;
    python3-venv) python3 -c 'import ensurepip' 2>/dev/null ;;
    /*.h) [ -f "$where" ] ;;  # a header (a build input: OpenSSL's for the compiled loop's TLS)
    /*) [ -x "$where" ] ;;
    *) command -v "$where" >/dev/null || [ -x "$(go_path)/bin/$where" ] ;;
  esac
}
go_bin() { command -v go || echo /usr/local/go/bin/go; }
go_path() { local g; g=$(go_bin); [ -x "$g" ] && "$g" env GOPATH || echo "$HOME/go"; }

apt_need=() go_need=()
while IFS=$'\t' read -r program where how what; do
  case "$program" in ''|'#'*) continue ;; esac
  if [ "$how" = go ] || [ "$how" = go-static ]; then
    # A Go program is pinned: the version `go version -m` names must be the table's.
    bin="$(go_path)/bin/$where"
    module=${what%@*} version=${what##*@}
    if [ -x "$bin" ] && "$(go_bin)" version -m "$bin" 2>/dev/null | grep -Eq "^[[:space:]]+(mod|path)[[:space:]]+${module%%/runsc}.*[[:space:]]$version([[:space:]]|$)"; then
      continue
    fi
    go_need+=("$how $program $what")
  elif ! present "$where"; then
    apt_need+=("$what")
  fi
done < "$table"

if [ ${#apt_need[@]} -eq 0 ] && [ ${#go_need[@]} -eq 0 ]; then
  echo "setup-system: every program the tests use is installed ($table)"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "setup-system: missing ${apt_need[*]:-} ${go_need[*]:-}; installing them needs root on Debian (apt-get)." >&2
  echo "setup-system: the tests that use them will fail, naming this script." >&2
  exit 0
fi

if [ ${#apt_need[@]} -gt 0 ]; then
  start=$SECONDS
  echo "setup-system: installing Debian packages: ${apt_need[*]} (about 1.5 minutes the first time)"
  # perflab starts its own servers per run: keep the packages from starting theirs (and from
  # failing where there is no init system) with a policy-rc.d that refuses, for the install only.
  policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; made_policy=1; fi
  trap '[ "$made_policy" = 1 ] && rm -f "$policy"' EXIT
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${apt_need[@]}" >/dev/null
  echo "setup-system: Debian packages installed in $((SECONDS - start)) s"
fi
for entry in "${go_need[@]}"; do
  read -r how program what <<<"$entry"
  start=$SECONDS
  echo "setup-system: building $program ($what) from the Go module proxy (about 2-2.5 minutes)"
  if [ "$how" = go-static ]; then CGO_ENABLED=0 "$(go_bin)" install "$what"; else "$(go_bin)" install "$what"; fi
  echo "setup-system: $program built in $((SECONDS - start)) s"
done
# PostgreSQL refuses to run as root: perflab runs its servers as the `postgres` user, which the
# Debian package creates; make sure it exists even if the package was installed differently.
id -u postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
echo "setup-system: done in ${SECONDS} s"
