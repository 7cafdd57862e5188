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


def open_memory(db: str | None, *, write: bool = False, embedder: str = "hash") -> EDM:
    """EDM as the ``memory`` commands open it; the caller closes it.

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
