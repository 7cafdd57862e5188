"""EDM's tables in a PostgreSQL store: the same ``edm_*`` tables and versions as in SQLite.

``EDM("postgresql://...")`` keeps its episodes beside the store's tables, in the database's
current schema, as ``EDM(path)`` does in the store's SQLite file. Only the dialect differs:
``DOUBLE PRECISION`` for ``REAL``, ``BYTEA`` for the vectors' float32 bytes, an identity column
``seq`` numbering ``edm_vectors`` rows in storage order where SQLite has its ``rowid``, and
``ON CONFLICT`` for SQLite's ``INSERT OR IGNORE`` / ``OR REPLACE``. Migrations run in one
transaction under an advisory lock (two processes opening a new database migrate it once); the
change counter (``edm_meta.generation``) is bumped in one statement, so concurrent writers on
several machines never lose a bump and every reader notices their writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._episode import EDMSchemaError
from ._sqlite import EDM_SCHEMA_VERSION, EDMTables

__all__ = ["PgEDMTables", "has_edm_tables", "pg_connect", "pg_migrate"]

_MIGRATION_LOCK = 0x6862657664  # pg_advisory_xact_lock key while migrating the edm_* tables

_MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE edm_episodes (
            episode_id TEXT PRIMARY KEY,
            agent_id TEXT NOT NULL,
            route TEXT NOT NULL,
            run_id TEXT,
            trial_key TEXT,
            domain TEXT,
            context TEXT NOT NULL,
            summary TEXT NOT NULL,
            pei DOUBLE PRECISION,
            frr DOUBLE PRECISION,
            irs DOUBLE PRECISION,
            ti DOUBLE PRECISION,
            metrics_undefined TEXT NOT NULL,
            metrics_source TEXT NOT NULL,
            evidence_level TEXT NOT NULL,
            evidence TEXT NOT NULL,
            passed INTEGER,
            forbidden_tools_run TEXT NOT NULL,
            measurement_fingerprint TEXT,
            battery_fingerprint TEXT,
            metric_versions TEXT NOT NULL,
            scoring_version TEXT,
            policy TEXT NOT NULL,
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX edm_episodes_agent ON edm_episodes (agent_id, created_at)",
        """CREATE TABLE edm_vectors (
            seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
            episode_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            embedder TEXT NOT NULL,
            dim INTEGER NOT NULL,
            vector BYTEA NOT NULL,
            PRIMARY KEY (episode_id, embedder)
        )""",
        "CREATE INDEX edm_vectors_agent ON edm_vectors (agent_id, embedder, seq)",
        """CREATE TABLE edm_quarantine (
            episode_id TEXT PRIMARY KEY,
            agent_id TEXT NOT NULL,
            reasons TEXT NOT NULL,
            record TEXT NOT NULL,
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX edm_quarantine_agent ON edm_quarantine (agent_id, created_at)",
    ),
}


def pg_connect(url: str) -> Any:
    """A psycopg connection (autocommit: every write is an explicit transaction).

    Raises ValueError naming the store (password hidden) when psycopg is missing or the server
    does not answer.
    """
    from ..store.postgres import public_url

    try:
        import psycopg
    except ImportError:
        raise ValueError(
            "a postgresql:// memory needs psycopg 3: pip install 'hbeval[postgres]'"
        ) from None
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split())
        raise ValueError(f"cannot connect to {public_url(url)}: {reason}") from None


def _tables(conn: Any) -> set[str]:
    rows = conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
    ).fetchall()
    return {r[0] for r in rows}


def has_edm_tables(url: str) -> bool:
    """Whether the database at ``url`` holds EDM's tables (nothing is created)."""
    raw = pg_connect(url)
    try:
        return "edm_meta" in _tables(raw)
    finally:
        raw.close()


def _version(conn: Any) -> int:
    if "edm_meta" not in _tables(conn):
        return 0
    row = conn.execute("SELECT value FROM edm_meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        return 0
    try:
        return int(row[0])
    except (TypeError, ValueError) as exc:
        raise EDMSchemaError(f"edm_meta.schema_version is not an integer: {row[0]!r}") from exc


def _refuse_newer(version: int) -> None:
    if version > EDM_SCHEMA_VERSION:
        raise EDMSchemaError(
            f"the EDM tables are at schema version {version}, newer than this hbeval "
            f"understands ({EDM_SCHEMA_VERSION}); upgrade hbeval to read them"
        )


def pg_migrate(conn: Any) -> int:
    """Create or migrate the ``edm_*`` tables to :data:`EDM_SCHEMA_VERSION`; returns it.

    ``conn`` speaks ``?`` placeholders (``store.postgres._Conn``). All missing steps run in one
    transaction under an advisory lock, re-reading the version inside it.
    """
    _refuse_newer(_version(conn))
    with conn.raw.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS edm_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )
        current = _version(conn)
        _refuse_newer(current)
        for target in range(current + 1, EDM_SCHEMA_VERSION + 1):
            for statement in _MIGRATIONS[target]:
                conn.execute(statement)
        if current < EDM_SCHEMA_VERSION:
            conn.execute(
                "INSERT INTO edm_meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(EDM_SCHEMA_VERSION),),
            )
    return EDM_SCHEMA_VERSION


class PgEDMTables(EDMTables):
    """:class:`EDMTables` in PostgreSQL's dialect (one connection; callers hold the lock)."""

    _ROWID = "seq"
    _VECTOR_ORDER = " ORDER BY seq"
    _UPSERT_VECTOR = (
        "INSERT INTO edm_vectors (episode_id, agent_id, embedder, dim, vector) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (episode_id, embedder) DO UPDATE SET "
        "agent_id = excluded.agent_id, dim = excluded.dim, vector = excluded.vector"
    )
    _ADD_VECTOR = (
        "INSERT INTO edm_vectors (episode_id, agent_id, embedder, dim, vector) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (episode_id, embedder) DO NOTHING"
    )
    _ADD_QUARANTINE = (
        "INSERT INTO edm_quarantine (episode_id, agent_id, reasons, record, created_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (episode_id) DO NOTHING"
    )

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        with self.conn.raw.transaction():
            yield self.conn

    def _bump(self, conn: Any) -> None:
        # One statement takes the row lock and increments: concurrent writers each get their own
        # step, so a writer can tell whether another wrote since it last looked.
        row = conn.execute(
            "INSERT INTO edm_meta (key, value) VALUES ('generation', '1') "
            "ON CONFLICT (key) DO UPDATE SET value = (edm_meta.value::bigint + 1)::text "
            "RETURNING value"
        ).fetchone()
        after = int(row[0])
        self.last_bump = (after - 1, after)

    def data_version(self) -> int:
        """PostgreSQL has no ``PRAGMA data_version``: the change counter stands in for it."""
        return self.generation()
