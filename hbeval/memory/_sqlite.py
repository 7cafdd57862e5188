"""EDM's own tables in the SQLite file the store uses; versioned with a mini-migration.

EDM does not touch the store's tables. It owns four tables, all prefixed ``edm_``:

* ``edm_meta(key, value)`` — ``schema_version`` of these tables. A file written by a newer
  hbeval (a higher version) is refused with :class:`EDMSchemaError`; older ones are migrated
  forward, one version at a time, each step in its own transaction.
* ``edm_episodes`` — admitted episodes, one row each; metrics are REAL columns, ``NULL`` when
  undefined with the reason in ``metrics_undefined`` (JSON).
* ``edm_vectors(episode_id, agent_id, embedder, dim, vector)`` — the context's embedding as a
  little-endian float32 BLOB, keyed by embedder name, so switching embedders never overwrites a
  vector; indexed by agent so one agent's vectors load in one scan.
* ``edm_quarantine`` — unsafe episodes, kept apart as JSON with the reasons; never indexed,
  never returned by retrieval.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ._episode import EDM_METRICS, EDMSchemaError, Episode

EDM_SCHEMA_VERSION = 1
"""Version of the ``edm_*`` tables this hbeval reads and writes."""
DEFAULT_DB_PATH = Path(".hbeval") / "hbeval.db"
"""Where the store (and so EDM) lives when no path is given: ``./.hbeval/hbeval.db``."""
MEMORY_DB = ":memory:"

_EPISODE_COLUMNS = (
    "episode_id",
    "agent_id",
    "route",
    "run_id",
    "trial_key",
    "domain",
    "context",
    "summary",
    "pei",
    "frr",
    "irs",
    "ti",
    "metrics_undefined",
    "metrics_source",
    "evidence_level",
    "evidence",
    "passed",
    "forbidden_tools_run",
    "measurement_fingerprint",
    "battery_fingerprint",
    "metric_versions",
    "scoring_version",
    "policy",
    "created_at",
)
_SELECT_EPISODE = f"SELECT {', '.join(_EPISODE_COLUMNS)} FROM edm_episodes"

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
            pei REAL,
            frr REAL,
            irs REAL,
            ti REAL,
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
            episode_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            embedder TEXT NOT NULL,
            dim INTEGER NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (episode_id, embedder)
        )""",
        "CREATE INDEX edm_vectors_agent ON edm_vectors (agent_id, embedder)",
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


class DBLocationError(ValueError):
    """``--db`` / ``url_or_path`` is not a SQLite path, ``sqlite:///`` or ``postgresql://`` URL."""


def resolve_db(url_or_path: str | Path | None) -> str:
    """A filesystem path (or ``:memory:``) from a path, a ``sqlite:///path`` URL or None; a
    ``postgresql://`` (or ``postgres://``) store URL is returned as given.

    None means the store's default, ``./.hbeval/hbeval.db``. Other URL schemes are refused.
    """
    if url_or_path is None:
        return str(DEFAULT_DB_PATH)
    if isinstance(url_or_path, Path):
        return str(url_or_path)
    if not isinstance(url_or_path, str) or not url_or_path.strip():
        raise DBLocationError(f"db must be a path or sqlite:///path, got {url_or_path!r}")
    text = url_or_path.strip()
    if text in (MEMORY_DB, "sqlite://", "sqlite:///:memory:"):
        return MEMORY_DB
    if text.startswith("sqlite:///"):
        path = text[len("sqlite:///") :]
        if not path:
            raise DBLocationError(f"db URL {text!r} names no file")
        return path
    if "://" in text:
        if text.partition("://")[0].lower() in ("postgresql", "postgres"):
            return text
        raise DBLocationError(
            f"db must be a SQLite path, sqlite:///path or postgresql://user@host:port/db, "
            f"got {text!r}"
        )
    return text


MMAP_SIZE = 1 << 31
"""Bytes of an EDM database file SQLite may map into memory (it caps this at its own limit)."""


def connect(path: str) -> sqlite3.Connection:
    """Open (creating the parent folder of) a SQLite file in autocommit mode."""
    if path != MEMORY_DB:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    conn.execute("PRAGMA busy_timeout = 30000")
    if path != MEMORY_DB:
        # Read the file through a memory map (up to SQLite's limit, 2 GB as built): a query
        # ranking approximate candidates reads a few dozen scattered pages, each otherwise a
        # read() system call with a copy.
        conn.execute(f"PRAGMA mmap_size = {MMAP_SIZE}")
    return conn


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def schema_version(conn: sqlite3.Connection) -> int:
    """Version of the ``edm_*`` tables in ``conn``; 0 when they do not exist yet."""
    if not _has_table(conn, "edm_meta"):
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


def migrate(conn: sqlite3.Connection) -> int:
    """Create or migrate the ``edm_*`` tables to :data:`EDM_SCHEMA_VERSION`; returns it.

    Each step runs in an immediate transaction and re-reads the version inside it, so two
    processes opening the same file at once migrate it exactly once.
    """
    _refuse_newer(schema_version(conn))
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS edm_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            current = schema_version(conn)
            _refuse_newer(current)
            if current == EDM_SCHEMA_VERSION:
                conn.execute("COMMIT")
                return current
            target = current + 1
            for statement in _MIGRATIONS[target]:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO edm_meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(target),),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


# ------------------------------------------------------------------------------------------
# Rows
# ------------------------------------------------------------------------------------------
_DUMPS_CACHE: dict[tuple[Any, ...], str] = {}
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False).encode
"""``json.dumps`` with these options, its encoder made once instead of on every call."""


def _dumps(value: Any) -> str:
    """Compact sorted JSON; small flat dicts of scalars (repeated on every row) are memoised."""
    if not value:
        return "[]" if isinstance(value, (list, tuple)) else "{}"
    key: tuple[Any, ...] | None = None
    if isinstance(value, dict) and len(value) <= 8:
        items = tuple(value.items())
        if all(isinstance(v, (str, int, float, bool, type(None))) for _, v in items):
            key = tuple(sorted((k, type(v).__name__, v) for k, v in items))
            cached = _DUMPS_CACHE.get(key)
            if cached is not None:
                return cached
    text = _ENCODE(value)
    if key is not None and len(_DUMPS_CACHE) < 4096:
        _DUMPS_CACHE[key] = text
    return text


def episode_row(
    ep: Episode, route: str | None = None, policy_json: str | None = None
) -> tuple[Any, ...]:
    """``ep`` as a row of ``edm_episodes`` (in column order); route/policy override ``ep``'s."""
    return (
        ep.episode_id,
        ep.agent_id,
        route if route is not None else ep.route,
        ep.run_id,
        ep.trial_key,
        ep.domain,
        ep.context,
        ep.summary,
        *(ep.metrics.get(m) for m in EDM_METRICS),
        _dumps(ep.metrics_undefined),
        ep.metrics_source,
        ep.evidence_level,
        _dumps(ep.evidence),
        None if ep.passed is None else int(ep.passed),
        _dumps(list(ep.forbidden_tools_run)),
        ep.measurement_fingerprint,
        ep.battery_fingerprint,
        _dumps(ep.metric_versions),
        ep.scoring_version,
        policy_json if policy_json is not None else _dumps(ep.policy),
        ep.created_at,
    )


def row_episode(row: Sequence[Any]) -> Episode:
    """An ``edm_episodes`` row back as an :class:`Episode` (SQL NULL metrics stay None)."""
    d = dict(zip(_EPISODE_COLUMNS, row, strict=True))
    return Episode(
        episode_id=d["episode_id"],
        agent_id=d["agent_id"],
        route=d["route"],
        run_id=d["run_id"],
        trial_key=d["trial_key"],
        domain=d["domain"],
        context=d["context"],
        summary=d["summary"],
        metrics={m: d[m] for m in EDM_METRICS},
        metrics_undefined=json.loads(d["metrics_undefined"]),
        metrics_source=d["metrics_source"],
        evidence_level=d["evidence_level"],
        evidence=json.loads(d["evidence"]),
        passed=None if d["passed"] is None else bool(d["passed"]),
        forbidden_tools_run=tuple(json.loads(d["forbidden_tools_run"])),
        measurement_fingerprint=d["measurement_fingerprint"],
        battery_fingerprint=d["battery_fingerprint"],
        metric_versions=json.loads(d["metric_versions"]),
        scoring_version=d["scoring_version"],
        policy=json.loads(d["policy"]),
        created_at=d["created_at"],
    )


def vector_blob(vector: npt.NDArray[np.float32]) -> bytes:
    """A vector as little-endian float32 bytes."""
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


class EDMTables:
    """Reads and writes of the ``edm_*`` tables on one connection (callers hold the lock).

    SQLite's dialect; ``_pg.PgEDMTables`` overrides the few statements PostgreSQL spells
    differently (the class attributes below, transactions, the change counter).
    """

    _ROWID = "rowid"
    """The column that numbers ``edm_vectors`` rows in storage order."""
    _VECTOR_ORDER = ""
    """ORDER BY of one agent's vectors: SQLite's index scan already gives storage order."""
    _UPSERT_VECTOR = (
        "INSERT OR REPLACE INTO edm_vectors "
        "(episode_id, agent_id, embedder, dim, vector) VALUES (?, ?, ?, ?, ?)"
    )
    _ADD_VECTOR = (
        "INSERT OR IGNORE INTO edm_vectors (episode_id, agent_id, embedder, dim, vector) "
        "VALUES (?, ?, ?, ?, ?)"
    )
    _ADD_QUARANTINE = (
        "INSERT OR IGNORE INTO edm_quarantine "
        "(episode_id, agent_id, reasons, record, created_at) VALUES (?, ?, ?, ?, ?)"
    )

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.last_bump: tuple[int, int] | None = None
        """(generation before, after) of this connection's latest write, for the caller."""

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        """One write transaction: committed if the block returns, rolled back if not."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _bump(self, conn: Any) -> None:
        before = self.generation()
        conn.execute(
            "INSERT INTO edm_meta (key, value) VALUES ('generation', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(before + 1),),
        )
        self.last_bump = (before, before + 1)

    def generation(self) -> int:
        """Counter bumped by every admission or deletion, from any process."""
        row = self.conn.execute("SELECT value FROM edm_meta WHERE key = 'generation'").fetchone()
        return 0 if row is None else int(row[0])

    def data_version(self) -> int:
        """SQLite's ``PRAGMA data_version``: changes when another connection commits."""
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    def write_batch(
        self,
        episodes: Sequence[tuple[Episode, str]],
        vectors: npt.NDArray[np.float32],
        embedder: str,
        quarantined: Sequence[tuple[Episode, Sequence[str]]],
        policy: dict[str, Any],
    ) -> None:
        """Insert admitted (episode, route) pairs with their vectors, and quarantined
        episodes with their reasons, in one transaction; ``policy`` is recorded on each."""
        policy_json = _dumps(policy)
        with self._transaction() as conn:
            if episodes:
                conn.executemany(
                    f"INSERT INTO edm_episodes ({', '.join(_EPISODE_COLUMNS)}) "
                    f"VALUES ({', '.join('?' * len(_EPISODE_COLUMNS))})",
                    [episode_row(ep, route, policy_json) for ep, route in episodes],
                )
                dim = int(vectors.shape[1])
                conn.executemany(
                    self._UPSERT_VECTOR,
                    [
                        (ep.episode_id, ep.agent_id, embedder, dim, vector_blob(vectors[i]))
                        for i, (ep, _) in enumerate(episodes)
                    ],
                )
            if episodes:
                self._bump(conn)
            if quarantined:
                conn.executemany(
                    self._ADD_QUARANTINE,
                    [
                        (
                            ep.episode_id,
                            ep.agent_id,
                            _dumps(list(r)),
                            _dumps(ep.as_dict()),
                            ep.created_at,
                        )
                        for ep, r in quarantined
                    ],
                )

    def add_vectors(
        self,
        agent_id: str,
        ids: Sequence[str],
        vectors: npt.NDArray[np.float32],
        embedder: str,
    ) -> None:
        """Store vectors computed later for one agent's episodes (e.g. a new embedder's)."""
        rows = [
            (eid, agent_id, embedder, int(vectors.shape[1]), vector_blob(vectors[i]))
            for i, eid in enumerate(ids)
        ]
        with self._transaction() as conn:
            conn.executemany(self._ADD_VECTOR, rows)

    def existing(self, ids: Iterable[str], table: str = "edm_episodes") -> set[str]:
        """Which of ``ids`` are already in ``table`` (edm_episodes or edm_quarantine)."""
        if table not in ("edm_episodes", "edm_quarantine"):
            raise ValueError(table)
        wanted = list(dict.fromkeys(ids))
        found: set[str] = set()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = self.conn.execute(
                f"SELECT episode_id FROM {table} WHERE episode_id IN ({', '.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
            found.update(r[0] for r in rows)
        return found

    def get(self, episode_id: str) -> Episode | None:
        """One admitted episode by id."""
        row = self.conn.execute(f"{_SELECT_EPISODE} WHERE episode_id = ?", (episode_id,)).fetchone()
        return None if row is None else row_episode(row)

    def get_many(self, ids: Sequence[str]) -> dict[str, Episode]:
        """Admitted episodes by id (missing ids are left out)."""
        if not ids:
            return {}
        rows = self.conn.execute(
            f"{_SELECT_EPISODE} WHERE episode_id IN ({', '.join('?' * len(ids))})", list(ids)
        ).fetchall()
        return {r[0]: row_episode(r) for r in rows}

    def episodes(self, agent_id: str | None, limit: int | None = None) -> list[Episode]:
        """Admitted episodes, oldest first; one agent's, or all when ``agent_id`` is None."""
        sql = _SELECT_EPISODE
        args: list[Any] = []
        if agent_id is not None:
            sql += " WHERE agent_id = ?"
            args.append(agent_id)
        sql += " ORDER BY created_at, episode_id"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [row_episode(r) for r in self.conn.execute(sql, args).fetchall()]

    def quarantined(self, agent_id: str | None) -> list[dict[str, Any]]:
        """Quarantined (unsafe) episodes with their reasons, oldest first."""
        sql = "SELECT record, reasons FROM edm_quarantine"
        args: list[Any] = []
        if agent_id is not None:
            sql += " WHERE agent_id = ?"
            args.append(agent_id)
        sql += " ORDER BY created_at, episode_id"
        out = []
        for record, reasons in self.conn.execute(sql, args).fetchall():
            item = json.loads(record)
            item["quarantine_reasons"] = json.loads(reasons)
            out.append(item)
        return out

    def count(self, agent_id: str | None) -> int:
        """How many admitted episodes (one agent's, or all)."""
        if agent_id is None:
            row = self.conn.execute("SELECT COUNT(*) FROM edm_episodes").fetchone()
        else:
            row = self.conn.execute(
                "SELECT COUNT(*) FROM edm_episodes WHERE agent_id = ?", (agent_id,)
            ).fetchone()
        return int(row[0])

    def vectors(
        self, agent_id: str, embedder: str, dim: int
    ) -> tuple[list[str], npt.NDArray[np.float32], list[tuple[str, str]]]:
        """One agent's stored vectors for ``embedder`` (a read-only matrix in insertion order),
        and (id, context) of its episodes that have no such vector yet."""
        rows = self.conn.execute(
            "SELECT episode_id, vector FROM edm_vectors "
            f"WHERE agent_id = ? AND embedder = ? AND dim = ?{self._VECTOR_ORDER}",
            (agent_id, embedder, dim),
        ).fetchall()
        ids = [eid for eid, blob in rows if len(blob) == 4 * dim]
        blobs = [blob for _, blob in rows if len(blob) == 4 * dim]
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), dim)
        missing: list[tuple[str, str]] = []
        if self.count(agent_id) != len(ids):
            have = set(ids)
            missing = [
                (eid, context)
                for eid, context in self.conn.execute(
                    "SELECT episode_id, context FROM edm_episodes WHERE agent_id = ? "
                    "ORDER BY created_at, episode_id",
                    (agent_id,),
                ).fetchall()
                if eid not in have
            ]
        return ids, matrix.astype(np.float32, copy=False), missing

    def vector_rows(
        self, agent_id: str, embedder: str, dim: int, after_rowid: int = 0
    ) -> tuple[npt.NDArray[np.int64], list[str], npt.NDArray[np.float32]]:
        """(rowids, episode ids, matrix) of one agent's vectors with rowid > ``after_rowid``."""
        rowid = self._ROWID
        rows = self.conn.execute(
            f"SELECT {rowid}, episode_id, vector FROM edm_vectors "
            f"WHERE agent_id = ? AND embedder = ? AND dim = ? AND {rowid} > ? ORDER BY {rowid}",
            (agent_id, embedder, dim, after_rowid),
        ).fetchall()
        rows = [r for r in rows if len(r[2]) == 4 * dim]
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), dim)
        return rowids, [r[1] for r in rows], matrix.astype(np.float32, copy=False)

    def candidate_vectors(
        self, agent_id: str, embedder: str, dim: int, rowids: Sequence[int]
    ) -> tuple[list[int], list[str], npt.NDArray[np.float32]]:
        """(rowids, episode ids, stored vectors) of the given ``edm_vectors`` rowids, only for
        episodes of ``agent_id`` still admitted (a deleted one has no row to join)."""
        if not rowids:
            return [], [], np.zeros((0, dim), dtype=np.float32)
        rowid = self._ROWID
        rows = self.conn.execute(
            f"SELECT v.{rowid}, v.episode_id, v.vector FROM edm_vectors v "
            "JOIN edm_episodes e ON e.episode_id = v.episode_id AND e.agent_id = v.agent_id "
            f"WHERE v.{rowid} IN ({', '.join('?' * len(rowids))}) "
            "AND v.agent_id = ? AND v.embedder = ? AND v.dim = ?",
            [*rowids, agent_id, embedder, dim],
        ).fetchall()
        rows = [r for r in rows if len(r[2]) == 4 * dim]
        matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), dim)
        return [r[0] for r in rows], [r[1] for r in rows], matrix.astype(np.float32, copy=False)

    def delete(self, episode_id: str) -> bool:
        """Remove an admitted episode and all its vectors; True when it existed."""
        with self._transaction() as conn:
            cur = conn.execute("DELETE FROM edm_episodes WHERE episode_id = ?", (episode_id,))
            removed = bool(cur.rowcount > 0)
            conn.execute("DELETE FROM edm_vectors WHERE episode_id = ?", (episode_id,))
            if removed:
                self._bump(conn)
        return removed
