"""Pi coding-agent sessions (JSONL): a ``session`` header line, then one entry per line.

Layout versions 1 to 3, migrated on read as Pi does: version 1 has no ``id``/``parentId`` (a
linear list: each entry's parent is the line before it); version 2 links entries into a tree
through ``parentId``; version 3 renamed the ``hookMessage`` role to ``custom``. The **active
branch** is the path from the last entry up to the root; entries on other branches are left out
(and counted as skipped).

On the branch, ``message`` entries carry ``message.role``: ``user`` (a prompt), ``assistant``
(content blocks ``text``, ``thinking`` and ``toolCall`` {id, name, arguments}, with ``usage``
and ``stopReason``), ``toolResult`` (``toolCallId``, ``toolName``, ``content``, ``isError``).
**One run per user prompt**: a prompt and everything up to the next prompt. ``compaction``
entries are kept as spans named "compaction" in the run they fall in. Shell commands the user
ran (``bashExecution``) and extension messages are not the agent's calls: skipped, counted.
Pi records no success: every run is unlabelled unless a labels file names it by its source
id ``<session id>/p<prompt number>``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ._common import (
    BlockKinds,
    ImportedTrial,
    ImportRefused,
    Skipped,
    TraceBuilder,
    assistant_blocks,
    jsonl_lines,
    text_of,
)

FORMAT = "pi"
_PI_BLOCKS = BlockKinds(reasoning="thinking", reasoning_key="thinking", tool_call="toolCall")
VERSIONS = (1, 2, 3)
_SKIPPED_ROLES = {
    "bashExecution": "a shell command the user ran, not a call of the agent",
    "custom": "an extension's message, not a call of the agent",
    "hookMessage": "an extension's message, not a call of the agent",
    "branchSummary": "a summary of another branch",
    "compactionSummary": "a summary written by compaction",
}


def wants(path: Path) -> bool:
    """Whether a file inside a folder given to ``import`` is one to read."""
    return path.suffix == ".jsonl"


def sniff(head: bytes, path: str) -> bool:
    """Whether a file's first line is a Pi session header."""
    first = head.split(b"\n", 1)[0]
    try:
        obj = json.loads(first)
    except ValueError:
        return False
    return (
        isinstance(obj, Mapping)
        and obj.get("type") == "session"
        and "timestamp" in obj
        and "createdAt" not in obj
    )


def _ts(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) / 1000.0 if value > 1e11 else float(value)
    if isinstance(value, str):
        try:
            return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _entries(path: str, data: bytes) -> tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]:
    """The header and the entries (with their line numbers), migrated to version 3."""
    lines = jsonl_lines(data.decode("utf-8", errors="strict"))
    rows: list[tuple[int, dict[str, Any]]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise ImportRefused(path, f"not valid JSON: {exc}", line=n) from None
        if not isinstance(obj, dict):
            raise ImportRefused(path, "each line must be a JSON object", line=n)
        if not isinstance(obj.get("type"), str):
            raise ImportRefused(path, "missing or not a string", line=n, field="type")
        rows.append((n, obj))
    if not rows or rows[0][1]["type"] != "session":
        raise ImportRefused(
            path, "the first line must be the session header (type 'session')", line=1, field="type"
        )
    header = rows[0][1]
    version = header.get("version", 1)
    if version not in VERSIONS:
        raise ImportRefused(
            path,
            f"session version {version!r} is not one this importer reads ({VERSIONS[0]}-{VERSIONS[-1]})",
            line=rows[0][0],
            field="version",
        )
    entries = rows[1:]
    if version == 1:
        prev: str | None = None
        for i, (_, e) in enumerate(entries):
            e["id"] = f"e{i}"
            e["parentId"] = prev
            prev = e["id"]
            if e["type"] == "compaction" and isinstance(e.get("firstKeptEntryIndex"), int):
                e["firstKeptEntryId"] = f"e{e['firstKeptEntryIndex'] - 1}"
    if version < 3:
        for _, e in entries:
            msg = e.get("message")
            if isinstance(msg, dict) and msg.get("role") == "hookMessage":
                msg["role"] = "custom"
    for n, e in entries:
        if not isinstance(e.get("id"), str):
            raise ImportRefused(
                path, "missing (version 2 and 3 entries have ids)", line=n, field="id"
            )
    return header, entries


def _branch(
    path: str, entries: list[tuple[int, dict[str, Any]]]
) -> list[tuple[int, dict[str, Any]]]:
    """The active branch, root first: from the last entry up through ``parentId``."""
    if not entries:
        return []
    by_id = {e["id"]: (n, e) for n, e in entries}
    out = []
    cur: tuple[int, dict[str, Any]] | None = entries[-1]
    seen: set[str] = set()
    while cur is not None:
        n, e = cur
        if e["id"] in seen:
            raise ImportRefused(path, "parentId forms a cycle", line=n, field="parentId")
        seen.add(e["id"])
        out.append(cur)
        parent = e.get("parentId")
        if parent is None:
            break
        if parent not in by_id:
            raise ImportRefused(
                path, f"names no entry of this file ({parent!r})", line=n, field="parentId"
            )
        cur = by_id[parent]
    out.reverse()
    return out


def read(
    path: str,
    data: bytes,
    run_id_of: Callable[[str, int], str],
    skipped: list[Skipped],
) -> list[ImportedTrial]:
    """One trial per user prompt on the session's active branch."""
    # Long because: one pass over the active branch's entries in order, one branch per entry
    # kind, each feeding the current trial's trace builder.
    try:
        header, entries = _entries(path, data)
    except UnicodeDecodeError as exc:
        raise ImportRefused(path, f"not UTF-8 text: {exc}") from None
    session_id = str(header.get("id") or Path(path).stem)
    branch = _branch(path, entries)
    off_branch = len(entries) - len(branch)
    if off_branch:
        skipped.append(
            Skipped(path, "entries on other branches", "not on the active branch", off_branch)
        )

    trials: list[ImportedTrial] = []
    counts: dict[str, int] = {}
    state: dict[str, Any] = {"b": None, "n": 0, "last_text": None, "status": "ok", "error": None}
    model = header.get("modelId")

    def close() -> None:
        b = state["b"]
        if b is None:
            return
        b.run_end(status=state["status"], output=state["last_text"], error=state["error"])
        source_id = f"{session_id}/p{state['n']}"
        trials.append(
            ImportedTrial(
                task_id=source_id,
                trial_index=0,
                events=b.events,
                label=None,
                source_id=source_id,
                source_file=path,
                response_text=state["last_text"],
                status=state["status"],
            )
        )
        for call_id, tool in b.unanswered_calls():
            skipped.append(
                Skipped(path, f"{source_id} call {call_id} ({tool})", "no tool result answered it")
            )

    def open_run(prompt: str, ts: float | None) -> TraceBuilder:
        close()
        state["n"] += 1
        source_id = f"{session_id}/p{state['n']}"
        b = TraceBuilder(run_id_of(source_id, 0))
        b.run_start(task_id=source_id, trial=0, input=prompt, ts=ts)
        b.message("user", prompt)
        state.update(b=b, last_text=None, status="ok", error=None)
        return b

    for n, e in branch:
        kind = e["type"]
        ts = _ts(e.get("timestamp"))
        if kind == "model_change":
            model = e.get("modelId", model)
            continue
        if kind == "compaction":
            b = state["b"] or open_run("", ts)
            b.span(
                "compaction",
                {
                    "summary": e.get("summary"),
                    "tokens_before": e.get("tokensBefore"),
                    "first_kept_entry_id": e.get("firstKeptEntryId"),
                    "source_line": n,
                },
                ts=ts,
            )
            continue
        if kind != "message":
            counts[kind] = counts.get(kind, 0) + 1
            continue
        msg = e.get("message")
        if not isinstance(msg, Mapping):
            raise ImportRefused(path, "missing or not an object", line=n, field="message")
        role = msg.get("role")
        if role == "user":
            b = open_run(text_of(msg.get("content")), ts)
            continue
        if role in _SKIPPED_ROLES:
            counts[f"message role {role}"] = counts.get(f"message role {role}", 0) + 1
            continue
        if role == "assistant":
            b = state["b"] or open_run("", ts)
            content = msg.get("content") or []
            if not isinstance(content, list):
                raise ImportRefused(
                    path, "must be a list of blocks", line=n, field="message.content"
                )
            text, thinking, calls = assistant_blocks(
                content, _PI_BLOCKS, path=path, line=n, field="message.content"
            )
            raw_usage = msg.get("usage")
            usage: Mapping[str, Any] = raw_usage if isinstance(raw_usage, Mapping) else {}
            tin, tout = usage.get("input"), usage.get("output")
            stop = msg.get("stopReason")
            error = msg.get("errorMessage") if stop in ("error", "aborted") else None
            b.model_call(
                text=text,
                tool_calls=calls,
                reasoning=thinking,
                model=str(msg.get("model") or model or "") or None,
                usage=(
                    tin if isinstance(tin, int) and tin >= 0 else None,
                    tout if isinstance(tout, int) and tout >= 0 else None,
                ),
                error=str(error) if error else None,
                ts=ts,
                attrs={"stop_reason": stop} if stop else None,
            )
            if text:
                state["last_text"] = text
            if stop == "error":
                state["status"], state["error"] = "error", str(error or "model error")
            elif stop == "aborted":
                state["status"], state["error"] = "cancelled", str(error or "aborted")
            else:
                state["status"], state["error"] = "ok", None
            continue
        if role == "toolResult":
            b = state["b"] or open_run("", ts)
            call_id = msg.get("toolCallId")
            if not isinstance(call_id, str):
                raise ImportRefused(
                    path, "missing or not a string", line=n, field="message.toolCallId"
                )
            is_error = msg.get("isError", False)
            if not isinstance(is_error, bool):
                raise ImportRefused(path, "must be true or false", line=n, field="message.isError")
            b.tool_result(
                call_id=call_id,
                name=msg.get("toolName"),
                result=text_of(msg.get("content")),
                is_error=is_error,
                ts=ts,
            )
            continue
        raise ImportRefused(path, f"unknown message role {role!r}", line=n, field="message.role")
    close()
    for what, count in sorted(counts.items()):
        skipped.append(Skipped(path, what, "not an agent step (kept out of the trace)", count))
    return trials
