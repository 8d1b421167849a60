#!/usr/bin/env bash
# Create the project's virtual environment and install perflab into it.
# Works on a fresh Debian machine with Python 3.11 as root: installs python3-venv if the
# interpreter lacks the venv module.
set -euo pipefail
venv="${1:-.venv}"
python="${PYTHON:-python3}"
if ! "$python" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null; then
  echo "perflab needs Python 3.11 or newer (found: $("$python" --version 2>&1))" >&2
  exit 1
fi
if ! "$python" -m venv --help >/dev/null 2>&1 || ! "$python" -c 'import ensurepip' 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
  else
    echo "the Python venv module is missing: install python3-venv" >&2
    exit 1
  fi
fi
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -e ".[test,all]"   # all: every feature's extra (pyproject.toml)
