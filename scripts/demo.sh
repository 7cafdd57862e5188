#!/usr/bin/env bash
# The main job: set up ./.venv (with the frameworks the demo agents use), then run `hbeval demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
export CREWAI_DISABLE_TELEMETRY=true OTEL_SDK_DISABLED=true CREWAI_TRACING_ENABLED=false \
  CREWAI_DISABLE_VERSION_CHECK=true
scripts/setup-venv.sh all,test
exec .venv/bin/hbeval demo "$@"
