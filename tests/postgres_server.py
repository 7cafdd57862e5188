"""A real PostgreSQL server for the store tests, and a fresh schema for each test.

``scripts/test.sh`` starts a throwaway server and exports its URL as ``HBEVAL_TEST_POSTGRES_URL``.
Without it (pytest run by hand) the session starts one itself with
``scripts/postgres-server.sh`` when PostgreSQL's binaries are installed. When no server can be
had, the PostgreSQL tests skip saying why; under ``CI=true`` they fail instead.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ENV = "HBEVAL_TEST_POSTGRES_URL"
SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "postgres-server.sh"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"PostgreSQL tests cannot run under CI: {reason}", pytrace=False)
    pytest.skip(f"no PostgreSQL server: {reason} (scripts/test.sh starts one)")


@pytest.fixture(scope="session")
def postgres_admin_url() -> Iterator[str]:
    """The URL of a server the tests may create schemas on."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed (pip install -e '.[postgres]')")
    url = os.environ.get(ENV)
    if url:
        yield url
        return
    folder = tempfile.mkdtemp(prefix="hbeval-pg-")
    os.rmdir(folder)  # the script creates it with the server's owner
    try:
        started = subprocess.run(
            ["bash", str(SCRIPT), "start", folder],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        _unavailable(f"{ENV} is not set and starting a server failed ({exc})")
    if started.returncode != 0:
        _unavailable(
            f"{ENV} is not set and starting a server failed: {started.stderr.strip()[-300:]}"
        )
    try:
        yield started.stdout.strip()
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", folder], check=False, timeout=120)


@pytest.fixture
def postgres_url(postgres_admin_url: str) -> Iterator[str]:
    """A URL whose current schema is new and empty; dropped after the test."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in postgres_admin_url else "?"
    options = urllib.parse.quote(f"-csearch_path={schema}")
    yield f"{postgres_admin_url}{sep}options={options}"
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
