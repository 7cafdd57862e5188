"""Check that an output file can be written before any work is done for it.

An output path is resolved (symlinks followed) and refused when it is a folder, the store or
one of its ``-wal``/``-shm``/``-journal`` files, any other SQLite database, or a file the same
command reads. Writing itself goes through :func:`hbeval.store._atomic.write_atomic`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["output_problem", "store_file", "write_output"]

_SQLITE_MAGIC = b"SQLite format 3\x00"
_STORE_SIDE_FILES = ("", "-wal", "-shm", "-journal")


def store_file(db: str | os.PathLike[str] | None) -> Path | None:
    """The SQLite file behind ``--db`` (None: the default store), or None for PostgreSQL and
    in-memory stores and for values that are not a store at all."""
    from ..store.postgres import is_postgres_url
    from ..store.sqlite import MEMORY, resolve_path

    if is_postgres_url(db):
        return None
    try:
        path = resolve_path(db)
    except ValueError:
        return None
    return None if path == MEMORY else Path(path)


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False


def output_problem(
    path: Path,
    *,
    make_parents: bool = False,
    store: str | os.PathLike[str] | bool | None = False,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
) -> str | None:
    """Why ``path`` cannot be written as a file, or None when it can.

    ``store`` is the command's ``--db`` value (None: the default store; False: the command uses
    no store); ``inputs`` the files the command reads. The check writes nothing lasting: an
    existing file is opened for appending (not truncated), a new one is created and removed
    again. ``make_parents`` creates missing folders first, as the command would when it writes.
    """
    real = _real(path)
    if real.is_dir():
        return f"{path} is a directory; give a file path"
    if store is not False:
        db = store_file(store)  # type: ignore[arg-type]
        if db is not None:
            base = _real(db)
            for side in _STORE_SIDE_FILES:
                if real == Path(f"{base}{side}"):
                    what = "the store" if not side else f"the store's {side[1:]} file"
                    return f"{path} is {what} ({db}); writing there would destroy it. Give another file"
    for given in inputs:
        if given is not None and _real(given) == real:
            return f"{path} is also an input of this command ({given}); give another file"
    if _is_sqlite(real):
        return (
            f"{path} is an SQLite database (a store?); refusing to overwrite it. Give another file"
        )
    parent = real.parent
    if make_parents:
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return f"cannot create the folder {parent}: {exc.strerror or exc}"
    if not parent.is_dir():
        return f"the folder {parent} does not exist"
    try:
        if real.exists():
            with open(real, "a", encoding="utf-8"):
                pass
        else:
            fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.close(fd)
            os.unlink(real)
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    return None


def write_output(path: Path, data: str | bytes, *, mode: int | None = None) -> Path:
    """Write an output whole or not at all (the previous file survives a failure)."""
    from ..store._atomic import write_atomic

    real = _real(path)
    real.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(real, data, mode=mode)
