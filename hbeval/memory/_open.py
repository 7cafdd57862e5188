"""Open EDM the way every command and tool does: a store path or URL, read-only unless writing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._edm import EDM
    from ._embed import Embedder

__all__ = ["EMBEDDERS", "open_memory"]

EMBEDDERS = ("hash", "minilm")
"""The embedders a command can name (``--embedder``)."""


def open_memory(
    db: str | None, *, write: bool = False, embedder: str = "hash", read_only: bool = False
) -> EDM:
    """EDM as the ``memory`` commands open it; the caller closes it.

    ``read_only`` (the MCP server) never writes the file, not even to create EDM's tables: the
    episodes are read through a read-only connection into an in-memory EDM, so an immutable
    or read-only store works and its bytes stay as they were.

    An absent file is an empty in-memory EDM unless ``write``. Raises ValueError naming the
    option at fault (``--db``, ``--embedder``).
    """
    import sqlite3

    from ..store.postgres import is_postgres_url
    from ._edm import EDM
    from ._embed import HashingEmbedder, MiniLMEmbedder
    from ._episode import EDMSchemaError
    from ._sqlite import MEMORY_DB, DBLocationError, resolve_db

    try:
        path = resolve_db(db)
    except DBLocationError as exc:
        raise ValueError(f"--db: {exc}") from None
    factories: dict[str, Callable[[], Embedder]] = {
        "hash": HashingEmbedder,
        "minilm": MiniLMEmbedder,
    }
    factory = factories.get(embedder)
    if factory is None:
        raise ValueError(f"--embedder must be one of {', '.join(EMBEDDERS)}, got {embedder!r}")
    if is_postgres_url(path):
        return _open_postgres_memory(path, write=write, factory=factory)
    if path != MEMORY_DB and not Path(path).exists() and not write:
        path = MEMORY_DB
    if path != MEMORY_DB and Path(path).is_dir():
        raise ValueError(f"--db: {path!r} is a directory, not a SQLite file")
    try:
        if read_only and path != MEMORY_DB:
            return _read_only_memory(path, factory)
        return EDM(path, embedder=factory())
    except EDMSchemaError as exc:
        raise ValueError(f"--db: {exc}") from None
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"--db: {path!r} is not a usable SQLite database ({exc})") from None


def _open_postgres_memory(url: str, *, write: bool, factory: Callable[[], Embedder]) -> EDM:
    """EDM in a PostgreSQL store; a database without EDM's tables reads as an empty memory
    (nothing is created unless ``write``), as an absent SQLite file does."""
    from ._edm import EDM
    from ._episode import EDMSchemaError
    from ._pg import has_edm_tables

    try:
        if not write and not has_edm_tables(url):
            return EDM(embedder=factory())
        return EDM(url, embedder=factory())
    except EDMSchemaError as exc:
        raise ValueError(f"--db: {exc}") from None
    except ValueError as exc:  # psycopg missing, or the server did not answer
        raise ValueError(f"--db: {exc}") from None


def _read_only_memory(path: str, factory: Callable[[], Embedder]) -> EDM:
    """An in-memory EDM holding the ``edm_*`` rows of the SQLite file at ``path``, read with a
    read-only connection (immutable when the folder cannot be written); none when the file has
    no EDM tables."""
    import os
    import sqlite3
    import urllib.parse

    from ._edm import EDM
    from ._sqlite import EDM_SCHEMA_VERSION, schema_version

    uri = "file:" + urllib.parse.quote(os.path.abspath(path))
    src: sqlite3.Connection | None = None
    last: Exception | None = None
    for query in ("?mode=ro", "?mode=ro&immutable=1"):
        conn = sqlite3.connect(uri + query, uri=True, check_same_thread=False)
        try:
            version = schema_version(conn)
        except sqlite3.Error as exc:
            conn.close()
            last = exc
            continue
        src = conn
        break
    if src is None:
        raise sqlite3.DatabaseError(f"cannot be read ({last})")
    edm = EDM(embedder=factory())
    try:
        if version == 0:
            return edm
        if version != EDM_SCHEMA_VERSION:
            raise ValueError(
                f"{path}: the EDM tables are at schema version {version}, not "
                f"{EDM_SCHEMA_VERSION}; open the store once with `hbeval memory` to migrate them"
            )
        tables = [
            r[0]
            for r in src.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'edm\\_%' "
                "ESCAPE '\\'"
            )
        ]
        dst = edm._conn
        known = {r[0] for r in dst.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        dst.execute("BEGIN")
        for table in (t for t in tables if t in known):
            rows = src.execute(f'SELECT * FROM "{table}"')
            width = len(rows.description)
            dst.executemany(
                f'INSERT OR REPLACE INTO "{table}" VALUES ({", ".join("?" * width)})', rows
            )
        dst.execute("COMMIT")
        edm._generation = edm._tables.generation()
    except BaseException:
        edm.close()
        raise
    finally:
        src.close()
    return edm
