#!/usr/bin/env bash
# A plain install, as a user gets it: build perflab's wheel from this checkout, install it with
# no extras into a clean virtual environment, and use it -- `perflab --version`, a short study on
# SQLite (scripts/plain-install-study.yaml) with its reports, `perflab show` of a run and its HTML
# report, the agent's --help. Exits non-zero when any of it fails. .ci/run calls it before
# `make test`, whose environment has every extra installed and so cannot see a missing one.
# About a minute once the dependencies are in pip's cache.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/perflab-plain.XXXXXX")"
trap 'rm -rf "$work"' EXIT
unset PYTHONPATH   # nothing but the wheel: no source tree on the path

"$python" -m venv "$work/venv"
py="$work/venv/bin/python"
perflab="$work/venv/bin/perflab"
(cd "$repo" && "$py" -m pip wheel -q --no-deps -w "$work/dist" .)
wheel="$(ls "$work"/dist/perflab-*.whl)"
"$py" -m pip install -q "$wheel"
echo "plain install: $(basename "$wheel") into a clean virtual environment, no extras (${SECONDS} s)"

# No package of an extra came in through the plain dependencies.
for module in aiohttp asyncpg httptools pgserver prometheus_client ray; do
  if "$py" -c "import $module" 2>/dev/null; then
    echo "plain install: $module is importable without its extra (a dependency pulled it in)" >&2
    exit 1
  fi
done

# Every file the package reads besides its modules (templates, static files) is in the wheel.
installed="$("$py" -c 'import os, perflab; print(os.path.dirname(perflab.__file__))')"
for file in $(cd "$repo/src/perflab" && find . -type f ! -name '*.py' ! -path '*/__pycache__/*'); do
  [ -f "$installed/$file" ] || { echo "plain install: the wheel lacks perflab/${file#./} (package-data)" >&2; exit 1; }
done

cd "$work"   # run where no perflab source is: only the installed wheel can be imported
version="$("$perflab" --version)"
[ "$version" = "perflab $("$py" -c 'import perflab; print(perflab.__version__)')" ] || {
  echo "plain install: --version says '$version'" >&2; exit 1; }
"$perflab" agent --help >/dev/null

code=0
"$perflab" study "$repo/scripts/plain-install-study.yaml" --store "$work/store" >"$work/study.out" \
  2>"$work/study.err" || code=$?
# 4: every pair was excluded by a gate (a loaded host): the tool still ran the study and wrote its reports.
if [ "$code" != 0 ] && [ "$code" != 4 ]; then
  cat "$work/study.err" >&2
  echo "plain install: perflab study exited $code" >&2
  exit 1
fi
study_dir="$(tail -n 1 "$work/study.out")"
for report in study.json report.md report.html report.json; do
  [ -s "$study_dir/$report" ] || { echo "plain install: the study wrote no $report" >&2; exit 1; }
done
grep -q "plain-install" "$study_dir/report.html"

"$perflab" show last --store "$work/store" >/dev/null
html="$("$perflab" show last --html --store "$work/store")"
grep -q "<!DOCTYPE html>" "$html"
echo "plain install: perflab study (exit $code), its reports, show and show --html ran from the wheel (${SECONDS} s)"
