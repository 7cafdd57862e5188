"""OpenClaw transcripts: Pi session JSONL files, and the agent database's transcript table.

OpenClaw writes a session's transcript in Pi's session layout (a ``session`` header, then
``message``/``compaction``/... entries linked by ``parentId``), either as a ``.jsonl`` file or
as rows of the per-agent SQLite database: ``transcript_events(session_id, seq, event_json,
created_at)``, one row per line, ``seq`` from 0 (the header). Both are read by the Pi reader
(``_pi``): the active branch, one run per user prompt, compactions kept as spans. A database
row that cannot be read is named as ``transcript_events[session_id=..., seq=...]``.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path

from . import _pi
from ._common import ImportedTrial, ImportRefused, Skipped

FORMAT = "openclaw"
SQLITE_MAGIC = b"SQLite format 3\x00"
TABLE = "transcript_events"


def wants(path: Path) -> bool:
    """Transcript files and agent databases inside a folder given to ``import``."""
    return path.suffix in (".jsonl", ".sqlite", ".db")


def sniff(head: bytes, path: str) -> bool:
    """An SQLite database whose schema (on its first pages) names the transcript table.

    OpenClaw's JSONL transcripts are Pi's session format, so ``auto`` names them ``pi``.
    """
    return head.startswith(SQLITE_MAGIC) and TABLE.encode() in head


def read(
    path: str,
    data: bytes,
    run_id_of: Callable[[str, int], str],
    skipped: list[Skipped],
) -> list[ImportedTrial]:
    """Trials of a transcript file or of every session in an agent database."""
    if not data.startswith(SQLITE_MAGIC):
        return _pi.read(path, data, run_id_of, skipped)
    trials: list[ImportedTrial] = []
    for session_id, rows in _sessions(path, data):
        seqs = [seq for seq, _ in rows]
        where = f"{path}#{TABLE}[session_id={session_id}]"
        text = "\n".join(event for _, event in rows).encode("utf-8")
        try:
            trials.extend(_pi.read(where, text, run_id_of, skipped))
        except ImportRefused as exc:
            row = (
                f"{TABLE}[session_id={session_id}, seq={seqs[exc.line - 1]}]"
                if exc.line is not None and 0 < exc.line <= len(seqs)
                else f"{TABLE}[session_id={session_id}]"
            )
            field = f"{row}.event_json" + (f".{exc.field}" if exc.field else "")
            raise ImportRefused(path, exc.reason, field=field) from None
    for t in trials:
        t.source_file = path
    return trials


def _open(data: bytes) -> tuple[sqlite3.Connection, str | None]:
    """The database held in ``data`` (the very bytes whose sha256 the manifest records).

    Python 3.11+ opens the bytes in memory; before that a private temporary copy is read.
    """
    deserialize = getattr(sqlite3.Connection, "deserialize", None)
    if deserialize is not None:
        conn = sqlite3.connect(":memory:")
        deserialize(conn, data)
        return conn, None
    fd, tmp = tempfile.mkstemp(suffix=".sqlite")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return sqlite3.connect(f"file:{tmp}?mode=ro", uri=True), tmp


def _sessions(path: str, data: bytes) -> list[tuple[str, list[tuple[int, str]]]]:
    """Each session's rows ``(seq, event_json)`` in ``seq`` order, sessions in id order."""
    tmp: str | None = None
    conn: sqlite3.Connection | None = None
    try:
        try:
            conn, tmp = _open(data)
            names = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.DatabaseError as exc:
            raise ImportRefused(path, f"not a readable SQLite database: {exc}") from None
        if TABLE not in names:
            raise ImportRefused(
                path, f"no {TABLE} table (not an OpenClaw agent database)", field=TABLE
            )
        try:
            rows = conn.execute(
                f"SELECT session_id, seq, event_json FROM {TABLE} ORDER BY session_id, seq"
            ).fetchall()
        except sqlite3.DatabaseError as exc:
            raise ImportRefused(
                path, f"cannot read the table: {exc}", field=f"{TABLE}.event_json"
            ) from None
    finally:
        if conn is not None:
            conn.close()
        if tmp is not None:
            os.unlink(tmp)
    out: dict[str, list[tuple[int, str]]] = {}
    for session_id, seq, event in rows:
        if not isinstance(event, str):
            raise ImportRefused(
                path,
                "not stored as JSON text",
                field=f"{TABLE}[session_id={session_id}, seq={seq}].event_json",
            )
        if "\n" in event or "\r" in event:  # JSON text never needs a raw newline
            raise ImportRefused(
                path,
                "holds a raw line break (not one JSON value)",
                field=f"{TABLE}[session_id={session_id}, seq={seq}].event_json",
            )
        out.setdefault(str(session_id), []).append((int(seq), event))
    if not out:
        raise ImportRefused(path, f"the {TABLE} table is empty", field=TABLE)
    return sorted(out.items())
