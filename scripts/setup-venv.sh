#!/usr/bin/env bash
# Create ./.venv (once) and install hbeval editable with the extras named in $1 (default: all,test).
# Each framework extra installs in its own step (CrewAI alone is about 1 GB), so a failure names it.
# Re-running is cheap: a stamp per extra set skips what is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-all,test}"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=".venv/.hbeval-installed-${extras//,/-}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip setuptools wheel >&2
  steps=()
  for extra in ${extras//,/ }; do
    if [ "$extra" = "all" ]; then steps+=(langgraph autogen crewai); else steps+=("$extra"); fi
  done
  .venv/bin/python -m pip install -q -e . >&2
  for extra in "${steps[@]}"; do
    start=$(date +%s)
    echo "setup: installing [$extra]" >&2
    .venv/bin/python -m pip install -q -e ".[$extra]" >&2
    echo "setup: [$extra] installed in $(( $(date +%s) - start ))s" >&2
  done
  touch "$stamp"
fi
