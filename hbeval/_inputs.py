"""Small input files read whole (labels, invariants, a trace on stdin), each up to a limit.

A device or a pipe that never ends (``/dev/zero``) is refused once the limit is passed, with the
limit in the message, instead of being read until memory runs out.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

__all__ = ["INPUT_FILE_LIMIT", "STDIN_LIMIT", "TooLarge", "read_bounded", "read_stream_bounded"]

INPUT_FILE_LIMIT = 64 * 1024 * 1024
"""Most bytes read from a labels or invariants file (64 MiB)."""
STDIN_LIMIT = 512 * 1024 * 1024
"""Most bytes of a trace read from stdin (``hbeval score -``: 512 MiB; a file has no limit)."""


class TooLarge(ValueError):
    """An input past its limit; the message names it, the limit and what to do."""


def read_stream_bounded(fh: BinaryIO, what: str, limit: int) -> bytes:
    """At most ``limit`` bytes of ``fh``; ``TooLarge`` naming ``what`` when there are more."""
    data = fh.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(
            f"{what} is larger than {limit // (1024 * 1024)} MiB, the most hbeval reads from it "
            "(an endless device such as /dev/zero?)"
        )
    return data


def read_bounded(path: str | Path, what: str, limit: int = INPUT_FILE_LIMIT) -> bytes:
    """The bytes of the file at ``path``, refused past ``limit`` (OSError when unreadable)."""
    with open(path, "rb") as fh:
        return read_stream_bounded(fh, f"{what} {str(path)!r}", limit)
