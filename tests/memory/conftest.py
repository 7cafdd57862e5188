"""The two databases EDM keeps its tables in: the store's SQLite file and a PostgreSQL store.

``backend`` runs a test once on each: ``backend.db`` is what ``EDM(...)``, ``open_edm`` and
``--db`` take; ``backend.sql`` reads or changes the database directly (``?`` placeholders), as
a test needs to damage it or look under EDM's API.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass(frozen=True)
class Backend:
    name: str
    db: str
    """A SQLite path, or a ``postgresql://`` URL whose current schema is new and empty."""

    @property
    def url(self) -> str:
        """The same database as a URL (``sqlite:///path`` for SQLite)."""
        return self.db if self.name == "postgres" else f"sqlite:///{self.db}"

    def sql(self, query: str, *args: Any) -> list[tuple[Any, ...]]:
        """Run one statement on the database itself; its rows (none for a write)."""
        if self.name == "sqlite":
            conn = sqlite3.connect(self.db)
            try:
                cur = conn.execute(query, args)
                rows = cur.fetchall()
                conn.commit()
                return rows
            finally:
                conn.close()
        import psycopg

        with psycopg.connect(self.db, autocommit=True) as pg:
            cur = pg.execute(query.replace("?", "%s"), args or None)
            return [tuple(r) for r in cur.fetchall()] if cur.description else []

    def tables(self) -> set[str]:
        """The names of the database's tables."""
        if self.name == "sqlite":
            if not Path(self.db).exists():
                return set()
            return {r[0] for r in self.sql("SELECT name FROM sqlite_master WHERE type='table'")}
        return {
            r[0]
            for r in self.sql(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
        }


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        return Backend("sqlite", str(tmp_path / "store" / "hbeval.db"))
    return Backend("postgres", request.getfixturevalue("postgres_url"))
