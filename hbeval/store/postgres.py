"""The shared store: PostgreSQL, for many machines writing one set of runs.

``PostgresStore("postgresql://user@host:5432/db")`` keeps the same tables, keys and refusals as
:class:`~hbeval.store.SQLiteStore` (the queries are shared, see ``_sql``), in the database's
current schema. Differences are only of dialect: identity columns instead of ``INTEGER PRIMARY
KEY``, ``DOUBLE PRECISION`` for ``REAL``, one ``INSERT ... SELECT FROM unnest(...)`` per event
batch, and row locks where SQLite relies on its single writer. Every trial bundle is one
transaction. Concurrent writers are safe: a clash on a trial or attempt key waits for the other
transaction and then either matches what it stored (a no-op) or is refused.

Migrations run in one transaction under an advisory lock, so two processes opening a new
database at once do not both create the schema; a database written by a newer hbeval is refused
before anything in it is touched. Needs ``psycopg`` 3 (``pip install 'hbeval[postgres]'``).
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from hbeval_core.vocab import EVENTS_FORMAT, STORE_SCHEMA_VERSION

from ._sql import Conn, Cursor, SQLStore, meta_schema_version
from .errors import NoStoreError, StoreDamagedError, StoreError, StoreVersionError

SCHEMES = ("postgresql", "postgres")
"""URL schemes that name a PostgreSQL store."""
_MIGRATION_LOCK = 0x68626576616C  # pg_advisory_xact_lock key while migrating ("hbeval")


def is_postgres_url(text: object) -> bool:
    """True when ``text`` is a ``postgresql://`` (or ``postgres://``) URL."""
    if not isinstance(text, str) or "://" not in text:
        return False
    return text.partition("://")[0].lower() in SCHEMES


def public_url(url: str) -> str:
    """The URL with any password replaced by ``***``, for messages."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


# --------------------------------------------------------------------------------------------
# Migrations: the same versions as SQLite's (``sqlite.MIGRATIONS``), in PostgreSQL's dialect.
# Migration i moves a store from version i to i + 1; never edit a released one.
# --------------------------------------------------------------------------------------------
def _v0_to_v1(conn: Conn) -> None:
    """The initial schema."""
    # Long because: the initial schema's DDL, one statement per table; a released migration
    # is never edited, so it is not split either.
    statements = (
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            agent_id TEXT NOT NULL,
            battery TEXT NOT NULL,
            measurement_fingerprint TEXT NOT NULL,
            manifest_hash TEXT,
            config TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            status TEXT NOT NULL,
            finished_at DOUBLE PRECISION
        )""",
        "CREATE INDEX runs_by_agent ON runs (agent_id, created_at)",
        """CREATE TABLE trials (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            trial_key TEXT NOT NULL,
            task_id TEXT NOT NULL,
            scenario_index INTEGER NOT NULL,
            trial_index INTEGER NOT NULL,
            fault_type TEXT,
            domain TEXT,
            outcome TEXT NOT NULL,
            verdict TEXT,
            started_at DOUBLE PRECISION,
            ended_at DOUBLE PRECISION,
            latency_ms DOUBLE PRECISION,
            attempts INTEGER NOT NULL,
            UNIQUE (run_id, trial_key)
        )""",
        """CREATE TABLE attempts (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            trial_key TEXT NOT NULL,
            attempt INTEGER NOT NULL CHECK (attempt >= 0),
            outcome TEXT NOT NULL,
            error TEXT,
            error_type TEXT,
            infra SMALLINT NOT NULL CHECK (infra IN (0, 1)),
            started_at DOUBLE PRECISION,
            ended_at DOUBLE PRECISION,
            UNIQUE (run_id, trial_key, attempt)
        )""",
        """CREATE TABLE event_streams (
            stream_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            trial_key TEXT NOT NULL,
            UNIQUE (run_id, trial_key)
        )""",
        """CREATE TABLE event_rows (
            stream_id BIGINT NOT NULL REFERENCES event_streams (stream_id),
            seq INTEGER NOT NULL,
            attempt INTEGER,
            kind TEXT NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (stream_id, seq)
        )""",
        """CREATE VIEW events AS
            SELECT s.run_id AS run_id, s.trial_key AS trial_key, e.seq AS seq,
                   e.attempt AS attempt, e.kind AS kind, e.body AS body
            FROM event_rows AS e JOIN event_streams AS s ON s.stream_id = e.stream_id""",
        """CREATE TABLE metrics (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            trial_key TEXT NOT NULL,
            name TEXT NOT NULL,
            value DOUBLE PRECISION,
            reason TEXT,
            CHECK ((value IS NULL) = (reason IS NOT NULL)),
            UNIQUE (run_id, trial_key, name)
        )""",
        """CREATE TABLE reports (
            report_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            agent_id TEXT NOT NULL,
            measurement_fingerprint TEXT NOT NULL,
            saved_at DOUBLE PRECISION NOT NULL,
            body TEXT NOT NULL
        )""",
        "CREATE INDEX reports_by_run ON reports (run_id, report_id)",
        "CREATE INDEX reports_by_measurement ON reports (agent_id, measurement_fingerprint)",
    )
    for statement in statements:
        conn.execute(statement)
    conn.execute("INSERT INTO meta (key, value) VALUES ('events_format', ?)", (EVENTS_FORMAT,))


MIGRATIONS: tuple[Callable[[Conn], None], ...] = (_v0_to_v1,)
"""PostgreSQL's migration functions; ``MIGRATIONS[i]`` moves a store from version i to i + 1."""

if len(MIGRATIONS) != STORE_SCHEMA_VERSION:  # pragma: no cover - a packaging mistake
    raise RuntimeError("PostgreSQL migrations do not reach vocab.STORE_SCHEMA_VERSION")


def _psycopg() -> Any:
    """The psycopg module, or a StoreError saying how to install it."""
    try:
        import psycopg
    except ImportError:
        raise StoreError(
            "a postgresql:// store needs psycopg 3: pip install 'hbeval[postgres]'"
        ) from None
    return psycopg


class _Conn:
    """A psycopg connection speaking the shared SQL's ``?`` placeholders."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    @staticmethod
    def _sql(sql: str) -> str:
        return sql.replace("%", "%%").replace("?", "%s")

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        return self.raw.execute(self._sql(sql), tuple(parameters) or None)  # type: ignore[no-any-return]

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any:
        with self.raw.cursor() as cursor:
            cursor.executemany(self._sql(sql), [tuple(p) for p in parameters])


def _schema_version(conn: Conn, where: str) -> int:
    """The schema version of the database's current schema: 0 when it has no hbeval tables."""
    tables = {
        r[0]
        for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchall()
    }
    if "meta" not in tables:
        if tables & {"runs", "trials", "attempts", "metrics", "reports"}:
            raise StoreVersionError(
                f"{where} has hbeval-like tables but no meta table (not an hbeval store); "
                "refusing to touch it"
            )
        return 0
    return meta_schema_version(conn, where)


class PostgresStore(SQLStore):
    """A :class:`StoreWriter` on a PostgreSQL database (the current schema of ``url``).

    Opens one connection (autocommit; each write is an explicit transaction) and migrates the
    database to the current schema. With ``read_only`` the session is read-only and nothing is
    created or migrated: an empty database raises ``StoreError``. Threads share the connection
    under a lock, as with SQLite; processes and machines each open their own store.
    """

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        if not is_postgres_url(url):
            raise StoreError(f"{url!r} is not a postgresql:// URL")
        psycopg = _psycopg()
        self.url = url
        self.path = public_url(url)
        self.read_only = read_only
        self._integrity_errors = (psycopg.errors.UniqueViolation,)
        self._errors: type[BaseException] = psycopg.Error
        self._lock = threading.RLock()  # re-entered by the writes inside ``transaction()``
        self._outer = False
        try:
            raw = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            reason = " ".join(str(exc).split())  # libpq's message spans lines
            raise StoreError(f"cannot connect to the store at {self.path}: {reason}") from None
        self._raw: Any = raw
        try:
            conn = _Conn(raw)
            version = _schema_version(conn, self.path)
            self._refuse_newer(version)
            if read_only:
                if version == 0:
                    raise NoStoreError(
                        f"no hbeval store at {self.path}: the database holds no hbeval tables; "
                        "point --db at the database your runs were written to (a battery run "
                        "or `hbeval store copy` creates the tables)"
                    )
                raw.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            if version < STORE_SCHEMA_VERSION and not read_only:
                self._migrate(conn)
            elif version < STORE_SCHEMA_VERSION:
                raise StoreVersionError(
                    f"{self.path} has store schema v{version}; open it once for writing to "
                    f"migrate it to v{STORE_SCHEMA_VERSION}"
                )
        except BaseException:
            raw.close()
            raise

    def _refuse_newer(self, version: int) -> None:
        if version > STORE_SCHEMA_VERSION:
            raise StoreVersionError(
                f"store schema v{version} is newer than this hbeval (v{STORE_SCHEMA_VERSION}); "
                f"upgrade hbeval to open {self.path}"
            )

    def _migrate(self, conn: _Conn) -> None:
        """Apply the missing migrations in one transaction, under an advisory lock."""
        with self._raw.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))
            # Re-read under the lock: another process may have migrated meanwhile.
            version = _schema_version(conn, self.path)
            self._refuse_newer(version)
            for migrate in MIGRATIONS[version:]:
                migrate(conn)
            if version < STORE_SCHEMA_VERSION:
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(STORE_SCHEMA_VERSION),),
                )

    # ------------------------------------------------------------------ plumbing
    def __repr__(self) -> str:
        return f"PostgresStore({self.path!r})"

    def close(self) -> None:
        """Close the connection. Idempotent."""
        with self._lock:
            if self._raw is not None:
                self._raw.close()
                self._raw = None

    @property
    def schema_version(self) -> int:
        """The schema version of the open store."""
        with self._read() as conn:
            return _schema_version(conn, self.path)

    def _live(self) -> Any:
        if self._raw is None:
            raise StoreError(f"{self!r} is closed")
        return self._raw

    @contextmanager
    def _write(self) -> Iterator[Conn]:
        """One transaction under the lock: committed if the block returns, rolled back if not."""
        if self.read_only:
            raise StoreError(f"{self.path} was opened read-only; nothing was written")
        with self._lock:
            raw = self._live()
            with self._committed(raw):
                yield _Conn(raw)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Every write in the block is one transaction: all of them are stored, or none.

        Each write inside is a savepoint, so a refused one can be caught without losing the
        rest; other threads wait until the block ends; nested blocks join the outer one.
        """
        if self.read_only:
            raise StoreError(f"{self.path} was opened read-only; nothing was written")
        with self._lock:
            if self._outer:
                yield
                return
            raw = self._live()
            self._outer = True
            try:
                with self._committed(raw):
                    yield
            finally:
                self._outer = False

    @contextmanager
    def _committed(self, raw: Any) -> Iterator[None]:
        """One server transaction (a savepoint when one is open); a failed write is told plainly."""
        try:
            with raw.transaction():
                yield
        except self._errors as exc:
            raise StoreError(
                f"{self.path}: the write failed ({exc}); nothing was written"
            ) from None

    @contextmanager
    def _read(self) -> Iterator[Conn]:
        with self._lock:
            try:
                yield _Conn(self._live())
            except self._errors as exc:
                raise StoreDamagedError(
                    f"{self.path} cannot be read ({exc}); the store is damaged or unreachable"
                ) from None

    # ------------------------------------------------------------------ dialect
    def _stream_end(self, conn: Conn, run_id: str, trial_key: str) -> tuple[int, int]:
        """The trial's stream (created if new, locked for this transaction) and its next seq."""
        conn.execute(
            "INSERT INTO event_streams (run_id, trial_key) VALUES (?, ?) "
            "ON CONFLICT (run_id, trial_key) DO NOTHING",
            (run_id, trial_key),
        )
        stream = conn.execute(
            "SELECT stream_id FROM event_streams WHERE run_id = ? AND trial_key = ? FOR UPDATE",
            (run_id, trial_key),
        ).fetchone()[0]
        start = conn.execute(
            "SELECT COALESCE(MAX(seq) + 1, 0) FROM event_rows WHERE stream_id = ?", (stream,)
        ).fetchone()[0]
        return int(stream), int(start)

    def _insert_rows(
        self,
        conn: Conn,
        stream: int,
        attempt: int | None,
        start: int,
        kinds: list[str],
        bodies: list[str],
    ) -> None:
        """One statement per batch: the kinds and bodies travel as two arrays."""
        conn.execute(
            "INSERT INTO event_rows (stream_id, seq, attempt, kind, body) "
            "SELECT ?, ? + t.n - 1, ?::integer, t.kind, t.body "
            "FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS t(kind, body, n)",
            (stream, start, attempt, kinds, bodies),
        )
