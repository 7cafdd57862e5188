#!/usr/bin/env bash
# The test command: set up ./.venv with every extra, then lint and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
export CREWAI_DISABLE_TELEMETRY=true OTEL_SDK_DISABLED=true CREWAI_TRACING_ENABLED=false \
  CREWAI_DISABLE_VERSION_CHECK=true
scripts/setup-venv.sh all,test
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest "$@"
