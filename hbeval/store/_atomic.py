"""Files written whole or not at all: a temporary file beside the target, fsync, rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(
    path: str | os.PathLike[str], data: bytes | str, *, mode: int | None = None
) -> Path:
    """Write ``data`` to ``path`` so that a reader sees the old file or the whole new one.

    The bytes go to a temporary file in the target's folder, are flushed to disk, and the file
    is renamed over the target; a failure (a full disk, an interrupt) removes the temporary file
    and leaves the previous file as it was. A symlink is followed: its target is replaced.
    ``mode`` sets the new file's permissions (default: the old file's, else 0o644 less umask).
    Returns the path written (symlinks resolved).
    """
    target = Path(os.path.realpath(path))
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if mode is None:
        try:
            mode = target.stat().st_mode & 0o7777
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o644 & ~umask
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)
    return target


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable (where the platform allows opening a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
