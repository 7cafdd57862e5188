"""Check that an output file can be written before any work is done for it."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["output_problem"]


def output_problem(path: Path, *, make_parents: bool = False) -> str | None:
    """Why ``path`` cannot be written as a file, or None when it can.

    The check writes nothing lasting: an existing file is opened for appending (not truncated),
    a new one is created and removed again. ``make_parents`` creates missing folders first, as
    the command would when it writes.
    """
    if path.is_dir():
        return f"{path} is a directory; give a file path"
    parent = path.parent
    if make_parents:
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return f"cannot create the folder {parent}: {exc.strerror or exc}"
    if not parent.is_dir():
        return f"the folder {parent} does not exist"
    try:
        if path.exists():
            with open(path, "a", encoding="utf-8"):
                pass
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.close(fd)
            os.unlink(path)
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    return None
