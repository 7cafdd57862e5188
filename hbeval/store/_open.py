"""Opening a store from what a user types after ``--db``: a path, ``sqlite:///``, ``postgresql://``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from .postgres import is_postgres_url
from .sqlite import MEMORY, SQLiteStore, resolve_path

if TYPE_CHECKING:
    from ._sql import SQLStore


def open_store(
    url_or_path: str | os.PathLike[str] | None = None, *, read_only: bool = False
) -> SQLStore:
    """Open (creating and migrating if needed) the store at a path or URL; None: the default.

    ``postgresql://user@host:port/db`` (or ``postgres://``) opens a :class:`PostgresStore`;
    anything else is SQLite (a path, ``sqlite:///path``, ``:memory:``). ``read_only`` opens an
    existing store without writing to it (``StoreError`` when there is none).
    """
    if is_postgres_url(url_or_path):
        from .postgres import PostgresStore

        return PostgresStore(os.fspath(url_or_path), read_only=read_only)  # type: ignore[arg-type]
    return SQLiteStore(url_or_path, read_only=read_only)


def store_exists(url_or_path: str | os.PathLike[str] | None) -> bool:
    """Whether there may be a store to read at ``url_or_path`` without creating one.

    A SQLite file must exist; a PostgreSQL URL always may (the server answers when opened).
    """
    if is_postgres_url(url_or_path):
        return True
    path = resolve_path(url_or_path)
    return path == MEMORY or Path(path).exists()
