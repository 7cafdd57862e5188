#!/usr/bin/env bash
# The test command: set up ./.venv with every extra, start a throwaway PostgreSQL server for the
# store tests, then lint and run the whole suite. The whole suite includes the tests marked slow
# (tests/test_wheel.py builds the wheel and runs `hbeval demo` from it in a fresh venv); CI runs
# them. Arguments go to pytest: `scripts/test.sh -m "not slow"` leaves the slow ones out.
set -euo pipefail
cd "$(dirname "$0")/.."
export CREWAI_DISABLE_TELEMETRY=true OTEL_SDK_DISABLED=true CREWAI_TRACING_ENABLED=false \
  CREWAI_DISABLE_VERSION_CHECK=true
scripts/setup-venv.sh all,test
.venv/bin/ruff check .
.venv/bin/ruff format --check .
if [ -z "${HBEVAL_TEST_POSTGRES_URL:-}" ]; then
  # Installs Debian's postgresql when no server binaries are found. Without a server the
  # PostgreSQL tests skip, saying why (under CI=true they fail instead).
  pgdir="$(mktemp -d -u "${TMPDIR:-/tmp}/hbeval-pg.XXXXXX")"
  trap 'scripts/postgres-server.sh stop "$pgdir"' EXIT
  if url="$(HBEVAL_INSTALL_POSTGRES=1 scripts/postgres-server.sh start "$pgdir")"; then
    export HBEVAL_TEST_POSTGRES_URL="$url"
  else
    echo "warning: could not start PostgreSQL; the PostgreSQL tests will skip (fail under CI)" >&2
  fi
fi
.venv/bin/python -m pytest "$@"
