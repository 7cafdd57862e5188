"""The embedded default store: one SQLite file, versioned schema, nothing dropped or overwritten.

Schema (version ``vocab.STORE_SCHEMA_VERSION``; ``meta`` holds it):

- ``runs``: one row per run (identity, config JSON, status).
- ``trials``: a trial's final result, ``UNIQUE(run_id, trial_key)``.
- ``attempts``: every attempt of a trial, ``UNIQUE(run_id, trial_key, attempt)``.
- ``event_streams`` + ``event_rows``: events, one row each, ordered by ``seq`` within a trial.
  A trial's ``(run_id, trial_key)`` is stored once in ``event_streams`` and each event row
  carries its small integer ``stream_id``: the ordering index is then on two integers instead of
  two repeated strings, which is about a quarter cheaper to maintain at ingest rates and smaller
  on disk. The view ``events`` shows them as ``(run_id, trial_key, seq, attempt, kind, body)``.
- ``metrics``: ``value`` REAL NULL with ``reason`` TEXT NULL, and a CHECK that exactly one is
  NULL (undefined is never zero). Run-level metrics use ``trial_key = ''`` because NULLs would
  defeat the UNIQUE constraint.
- ``reports``: report JSON with the run's ``agent_id`` and ``measurement_fingerprint`` beside it.

Migrations are functions applied in order inside one transaction; a store written by a newer
hbeval is refused before anything in it is touched. The queries every call runs are shared with
the PostgreSQL store (``_sql.SQLStore``); this module holds what is SQLite's own: opening, pragmas,
migrations and the event insert.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path
from typing import cast

from hbeval_core.vocab import EVENTS_FORMAT, STORE_SCHEMA_VERSION

from ._sql import Conn, SQLStore, meta_schema_version
from .errors import NoStoreError, StoreDamagedError, StoreError, StoreVersionError

DEFAULT_PATH = Path(".hbeval") / "hbeval.db"
"""Where the store lives when no path is given, relative to the working directory."""
MEMORY = ":memory:"
"""Path of a private in-memory SQLite database (gone when the store closes)."""


# --------------------------------------------------------------------------------------------
# Migrations. Migration i moves a store from version i to i + 1. Never edit a released one:
# its DDL is what older stores were built with. Add a new function and bump
# vocab.STORE_SCHEMA_VERSION instead.
# --------------------------------------------------------------------------------------------
def _v0_to_v1(conn: sqlite3.Connection) -> None:
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
            created_at REAL NOT NULL,
            status TEXT NOT NULL,
            finished_at REAL
        )""",
        "CREATE INDEX runs_by_agent ON runs (agent_id, created_at)",
        """CREATE TABLE trials (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            trial_key TEXT NOT NULL,
            task_id TEXT NOT NULL,
            scenario_index INTEGER NOT NULL,
            trial_index INTEGER NOT NULL,
            fault_type TEXT,
            domain TEXT,
            outcome TEXT NOT NULL,
            verdict TEXT,
            started_at REAL,
            ended_at REAL,
            latency_ms REAL,
            attempts INTEGER NOT NULL,
            UNIQUE (run_id, trial_key)
        )""",
        """CREATE TABLE attempts (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            trial_key TEXT NOT NULL,
            attempt INTEGER NOT NULL CHECK (attempt >= 0),
            outcome TEXT NOT NULL,
            error TEXT,
            error_type TEXT,
            infra INTEGER NOT NULL CHECK (infra IN (0, 1)),
            started_at REAL,
            ended_at REAL,
            UNIQUE (run_id, trial_key, attempt)
        )""",
        """CREATE TABLE event_streams (
            stream_id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            trial_key TEXT NOT NULL,
            UNIQUE (run_id, trial_key)
        )""",
        """CREATE TABLE event_rows (
            id INTEGER PRIMARY KEY,
            stream_id INTEGER NOT NULL REFERENCES event_streams (stream_id),
            seq INTEGER NOT NULL,
            attempt INTEGER,
            kind TEXT NOT NULL,
            body TEXT NOT NULL
        )""",
        "CREATE UNIQUE INDEX event_rows_order ON event_rows (stream_id, seq)",
        """CREATE VIEW events AS
            SELECT s.run_id AS run_id, s.trial_key AS trial_key, e.seq AS seq,
                   e.attempt AS attempt, e.kind AS kind, e.body AS body
            FROM event_rows AS e JOIN event_streams AS s ON s.stream_id = e.stream_id""",
        """CREATE TABLE metrics (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            trial_key TEXT NOT NULL,
            name TEXT NOT NULL,
            value REAL,
            reason TEXT,
            CHECK ((value IS NULL) = (reason IS NOT NULL)),
            UNIQUE (run_id, trial_key, name)
        )""",
        """CREATE TABLE reports (
            report_id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            agent_id TEXT NOT NULL,
            measurement_fingerprint TEXT NOT NULL,
            saved_at REAL NOT NULL,
            body TEXT NOT NULL
        )""",
        "CREATE INDEX reports_by_run ON reports (run_id, report_id)",
        "CREATE INDEX reports_by_measurement ON reports (agent_id, measurement_fingerprint)",
    )
    for statement in statements:
        conn.execute(statement)
    conn.execute("INSERT INTO meta (key, value) VALUES ('events_format', ?)", (EVENTS_FORMAT,))


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (_v0_to_v1,)
"""Migration functions in order; ``MIGRATIONS[i]`` moves a store from version i to i + 1."""

if len(MIGRATIONS) != STORE_SCHEMA_VERSION:  # pragma: no cover - a packaging mistake
    raise RuntimeError("store migrations do not reach vocab.STORE_SCHEMA_VERSION")


# --------------------------------------------------------------------------------------------
# Opening
# --------------------------------------------------------------------------------------------
def resolve_path(path_or_url: str | os.PathLike[str] | None) -> str:
    """The filesystem path (or ``:memory:``) for a path, an ``sqlite:///`` URL, or None (default).

    URLs follow SQLAlchemy's convention: ``sqlite:///rel/path.db`` is relative to the working
    directory, ``sqlite:////abs/path.db`` is absolute, ``sqlite://`` is in memory.
    """
    if path_or_url is None:
        return str(DEFAULT_PATH)
    text = os.fspath(path_or_url)
    if "://" in text:
        scheme, _, rest = text.partition("://")
        if scheme.lower() in ("postgresql", "postgres"):
            raise StoreError(
                f"{text!r} is a PostgreSQL URL, not an SQLite path; open it with open_store()"
            )
        if scheme.lower() != "sqlite":
            raise StoreError(
                f"unsupported store URL {text!r}: use a path, sqlite:///path or "
                "postgresql://user@host:port/db"
            )
        if rest in ("", "/", "/:memory:"):
            return MEMORY
        if not rest.startswith("/"):
            raise StoreError(f"malformed SQLite URL {text!r}: expected sqlite:///path")
        text = rest[1:]
    if text == MEMORY:
        return MEMORY
    if not text:
        raise StoreError("empty store path")
    return os.path.expanduser(text)


def _schema_version(conn: sqlite3.Connection, where: str) -> int:
    """The schema version of an open database: 0 when empty; refuses foreign databases."""
    try:
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{where} is not an SQLite database ({exc})") from None
    if "meta" not in tables:
        if tables:
            raise StoreVersionError(
                f"{where} is an SQLite database without an hbeval meta table "
                "(not an hbeval store); refusing to touch it"
            )
        return 0
    return meta_schema_version(conn, where)


_SQLITE_FULL = 13  # SQLite's primary result codes (the typeshed stubs lack them)
_SQLITE_NOT_WRITABLE = (8, 14, 3)  # SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_PERM


def write_failure(path: str, exc: sqlite3.Error) -> StoreError | None:
    """Plain words for a write SQLite could not make for a reason outside the store (a full
    disk, a read-only file or folder); None for any other error."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        code &= 0xFF  # the primary result code of an extended one
    if code == _SQLITE_FULL:
        return StoreError(
            f"the disk holding {path} is full ({exc}); nothing of this write was stored, and "
            "what was stored before is intact: free some space and run the command again"
        )
    if code in _SQLITE_NOT_WRITABLE:
        return StoreError(
            f"{path} cannot be written ({exc}): the file or its folder is read-only for this "
            "user; nothing was stored. Read commands still work on it"
        )
    return None


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already done so after an error."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")


class SQLiteStore(SQLStore):
    """The embedded default store: a :class:`StoreWriter` on one SQLite file (or ``:memory:``).

    Opens (and creates) ``path_or_url`` — a path, an ``sqlite:///path`` URL, ``":memory:"``, or
    None for ``./.hbeval/hbeval.db`` — in WAL mode with ``synchronous=NORMAL`` and foreign keys
    on, and migrates it to the current schema. A store from a newer hbeval raises
    :class:`StoreVersionError` and is left untouched.

    With ``read_only`` the file is opened with SQLite's ``mode=ro``: nothing is created, migrated
    or written, so read commands work on a store the user may not write (a store from an older
    hbeval is migrated first, which needs write access). A read that fails because the file is
    damaged (a bad page, a dropped table, a record that is not JSON) raises
    :class:`StoreDamagedError` naming the store.

    Threads: the store holds one connection and a lock, and every call takes the lock. SQLite
    allows one writer at a time anyway, so a connection per thread would add lock-retry loops
    but no write throughput, and an in-memory database exists only on its own connection. Reads
    are short (``iter_events`` reads in pages and releases the lock between them).
    """

    _integrity_errors = (sqlite3.IntegrityError,)

    def __init__(
        self, path_or_url: str | os.PathLike[str] | None = None, *, read_only: bool = False
    ) -> None:
        self.path = resolve_path(path_or_url)
        self.read_only = read_only and self.path != MEMORY
        self._lock = threading.RLock()  # re-entered by the writes inside ``transaction()``
        self._outer = False
        if self.read_only:
            conn = self._open_read_only()
            if conn is not None:
                self._conn: sqlite3.Connection | None = conn
                return
            self.read_only = False  # an older schema: migrate it through a normal open
        if self.path != MEMORY:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        try:
            # Read the version before any pragma: switching to WAL writes the file header.
            version = _schema_version(conn, self.path)
            self._refuse_newer(version)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            if version < STORE_SCHEMA_VERSION:
                self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def _open_read_only(self) -> sqlite3.Connection | None:
        """A ``mode=ro`` connection, or None when the store needs migrating first."""
        if not Path(self.path).exists():
            raise NoStoreError(f"no store at {self.path}")
        if not Path(self.path).is_file():  # a folder, a device: not a missing store, a wrong one
            raise StoreError(f"no store at {self.path}")
        uri = "file:" + urllib.parse.quote(os.path.abspath(self.path))
        last: sqlite3.Error | None = None
        # A WAL store in a folder the user cannot write has no -shm file to share: read it as
        # immutable then (nobody can be writing it from here either).
        for query in ("?mode=ro", "?mode=ro&immutable=1"):
            conn = sqlite3.connect(
                uri + query,
                uri=True,
                timeout=30.0,
                isolation_level=None,
                check_same_thread=False,
            )
            try:
                version = _schema_version(conn, self.path)
            except StoreVersionError:
                conn.close()
                raise
            except (StoreError, sqlite3.Error) as exc:
                conn.close()
                last = exc if isinstance(exc, sqlite3.Error) else sqlite3.DatabaseError(str(exc))
                continue
            self._refuse_newer_on(conn, version)
            if version < STORE_SCHEMA_VERSION:
                conn.close()
                return None
            conn.execute("PRAGMA query_only = ON")
            return conn
        raise StoreDamagedError(f"{self.path} cannot be opened for reading ({last})")

    def _refuse_newer_on(self, conn: sqlite3.Connection, version: int) -> None:
        try:
            self._refuse_newer(version)
        except BaseException:
            conn.close()
            raise

    def _refuse_newer(self, version: int) -> None:
        if version > STORE_SCHEMA_VERSION:
            raise StoreVersionError(
                f"store schema v{version} is newer than this hbeval (v{STORE_SCHEMA_VERSION}); "
                f"upgrade hbeval to open {self.path}"
            )

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Apply the missing migrations in one transaction (all of them, or none)."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-read under the write lock: another process may have migrated meanwhile.
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
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise

    # ------------------------------------------------------------------ plumbing
    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def close(self) -> None:
        """Close the connection (checkpointing the WAL into the file). Idempotent."""
        with self._lock:
            if self._conn is not None:
                if not self.read_only:
                    with suppress(sqlite3.Error):  # advisory: keeps query plans good
                        self._conn.execute("PRAGMA optimize")
                self._conn.close()
                self._conn = None

    @property
    def schema_version(self) -> int:
        """The schema version of the open store."""
        with self._lock:
            return _schema_version(self._live(), self.path)

    def _live(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"{self!r} is closed")
        return self._conn

    @contextmanager
    def _write(self) -> Iterator[Conn]:
        """One transaction under the lock: committed if the block returns, rolled back if not.

        Inside ``transaction()`` it is a savepoint of the open transaction instead.
        """
        if self.read_only:
            raise StoreError(f"{self.path} was opened read-only; nothing was written")
        with self._lock:
            conn = self._live()
            if self._outer:
                conn.execute("SAVEPOINT hbeval_write")
                try:
                    yield conn
                    conn.execute("RELEASE hbeval_write")
                except BaseException:
                    if conn.in_transaction:  # SQLite may have rolled all of it back already
                        with suppress(sqlite3.Error):
                            conn.execute("ROLLBACK TO hbeval_write")
                            conn.execute("RELEASE hbeval_write")
                    raise
                return
            with self._committed(conn):
                yield conn

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Every write in the block is one transaction: all of them are stored, or none.

        Other threads wait until the block ends; nested blocks join the outer one. An error
        (a refused record, a full disk) rolls the whole block back and is raised.
        """
        if self.read_only:
            raise StoreError(f"{self.path} was opened read-only; nothing was written")
        with self._lock:
            if self._outer:
                yield
                return
            try:
                with self._committed(self._live()):
                    self._outer = True
                    yield
            finally:
                self._outer = False

    @contextmanager
    def _committed(self, conn: sqlite3.Connection) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any error; a failed write is told plainly."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            yield
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(conn)
            plain = write_failure(self.path, exc)
            if plain is None:
                raise
            raise plain from None
        except BaseException:
            _rollback(conn)
            raise

    @contextmanager
    def _read(self) -> Iterator[Conn]:
        with self._lock:
            try:
                yield self._live()
            except sqlite3.DatabaseError as exc:  # a damaged page, a dropped table, ...
                raise StoreDamagedError(
                    f"{self.path} cannot be read ({exc}); the store is damaged or was changed "
                    "by hand: restore it from a backup"
                ) from None

    def _stream_end(self, conn: Conn, run_id: str, trial_key: str) -> tuple[int, int]:
        return _stream_end(cast(sqlite3.Connection, conn), run_id, trial_key)

    def _insert_rows(
        self,
        conn: Conn,
        stream: int,
        attempt: int | None,
        start: int,
        kinds: list[str],
        bodies: list[str],
    ) -> None:
        _insert_rows(conn, stream, attempt, start, kinds, bodies)


# Events go in as multi-row INSERTs: one statement per chunk binds two values per event (kind,
# body) and computes stream, seq and attempt in SQL. That is 1.6 to 1.8 times faster than
# executemany's one statement per row (benchmarks/bench_store_ingest.py, "floor" vs "bare").
# Chunk sizes are powers of two, so any batch is a few chunks and the connection's statement
# cache holds every shape.
_CHUNK_SIZES = (128, 64, 32, 16, 8, 4, 2, 1)


@cache
def _insert_sql(rows: int) -> str:
    """``INSERT`` of ``rows`` events: ?1 stream, ?2 attempt, ?3 first seq, then kind/body pairs."""
    values = ", ".join(f"(?1, ?3 + {i}, ?2, ?{4 + 2 * i}, ?{5 + 2 * i})" for i in range(rows))
    return f"INSERT INTO event_rows (stream_id, seq, attempt, kind, body) VALUES {values}"


def _insert_rows(
    conn: Conn,
    stream: int,
    attempt: int | None,
    start: int,
    kinds: list[str],
    bodies: list[str],
) -> None:
    """Insert one stream's events as seq ``start, start + 1, ...``, in the caller's transaction."""
    total = len(bodies)
    pairs: list[str] = [""] * (2 * total)
    pairs[0::2] = kinds
    pairs[1::2] = bodies
    done = 0
    for size in _CHUNK_SIZES:
        sql = _insert_sql(size)
        while total - done >= size:
            conn.execute(sql, [stream, attempt, start + done, *pairs[2 * done : 2 * (done + size)]])
            done += size


def _stream_end(conn: sqlite3.Connection, run_id: str, trial_key: str) -> tuple[int, int]:
    """A trial's event stream id (created if new) and the seq its next event gets."""
    row = conn.execute(
        "SELECT stream_id FROM event_streams WHERE run_id = ? AND trial_key = ?",
        (run_id, trial_key),
    ).fetchone()
    if row is None:
        cursor = conn.execute(
            "INSERT INTO event_streams (run_id, trial_key) VALUES (?, ?)", (run_id, trial_key)
        )
        return int(cursor.lastrowid or 0), 0
    start = conn.execute(
        "SELECT COALESCE(MAX(seq) + 1, 0) FROM event_rows WHERE stream_id = ?", (row[0],)
    ).fetchone()[0]
    return int(row[0]), int(start)


def open_store(
    url_or_path: str | os.PathLike[str] | None = None, *, read_only: bool = False
) -> SQLiteStore:
    """Open (creating if needed) the SQLite store at a path or ``sqlite:///`` URL; None: default.

    ``read_only`` opens an existing store without writing to it (``StoreError`` when absent).
    """
    return SQLiteStore(url_or_path, read_only=read_only)
