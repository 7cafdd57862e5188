#!/usr/bin/env bash
# Create ./.venv (once) and install hbeval editable with the extras named in $1 (default: all,test).
# Re-running is cheap: pip skips what is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-all,test}"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=".venv/.hbeval-installed-${extras//,/-}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip setuptools wheel >&2
  .venv/bin/python -m pip install -q -e ".[${extras}]" >&2
  touch "$stamp"
fi
