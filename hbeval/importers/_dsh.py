"""DeepSeek Harness (DSH) session logs: ``session.jsonl`` or ``session.jsonl.zstd``.

A header line (``type`` "session", ``id``, ``createdAt``, and ``parentSession`` for a
sub-agent's session), then ``{type, data}`` events (``seq`` and ``time`` when the harness
recorded them). What becomes of them:

* ``user/message`` -> the run's input and a message the next model call reads;
* ``assistant/message`` -> a model call: content blocks ``text``, ``reasoning``, ``tool-call``
  {id, name, arguments as JSON text}; ``usage`` {inputTokens, outputTokens}. The content sits
  in ``data.message.content`` (current layout) or ``data.content`` (older);
* ``tool/call`` -> checked against the reply that issued it; ``tool/result`` -> the call's end:
  ``tool-result`` blocks {toolCallId, content, isError} in ``data.message.content``, or
  ``data.callId``/``data.content``/``data.isError`` (older); ``data.error`` {name, code} marks an
  error too and gives its type;
* ``turn/end`` {reason.kind}: completed -> ok, error -> error, aborted -> cancelled, max-tokens
  -> ok (the model stopped; the run did not fail);
* ``compaction/start|summary|end`` -> a span named "compaction". Streaming chunks and UI
  events carry nothing the trace needs and are counted as skipped.

One trial per session file; a sub-agent's session (its header names ``parentSession``) nests
as a span in its parent's run when the parent is imported too (``combine``), and is its own
trial otherwise. DSH records no success: unlabelled unless a labels file names the trial by
its source id, the file's path. A ``.zstd`` file is one or more concatenated zstd frames; it
needs the ``zstandard`` package (``pip install 'hbeval[zstd]'``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hbeval_core.events import EventBase, SpanEnd, SpanStart

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

FORMAT = "dsh"
_DSH_BLOCKS = BlockKinds(reasoning="reasoning", reasoning_key="text", tool_call="tool-call")
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_END_STATUS = {"completed": "ok", "max-tokens": "ok", "error": "error", "aborted": "cancelled"}
_KEPT = {
    "user/message",
    "assistant/message",
    "tool/call",
    "tool/result",
    "turn/start",
    "turn/end",
    "compaction/start",
    "compaction/summary",
    "compaction/end",
}


def wants(path: Path) -> bool:
    """Session logs only: ``session.jsonl``, ``session.N.jsonl`` and their ``.zstd`` forms."""
    name = path.name
    if name.endswith(".zstd"):
        name = name[: -len(".zstd")]
    if not (name.startswith("session") and name.endswith(".jsonl")):
        return False
    middle = name[len("session") : -len(".jsonl")]
    return middle == "" or (middle.startswith(".") and middle[1:].isdigit())


def sniff(head: bytes, path: str) -> bool:
    """A zstd-compressed file named like a session log, or a DSH session header line."""
    if head.startswith(_ZSTD_MAGIC):
        return path.endswith(".jsonl.zstd")
    try:
        obj = json.loads(head.split(b"\n", 1)[0])
    except ValueError:
        return False
    return isinstance(obj, Mapping) and obj.get("type") == "session" and "createdAt" in obj


def _decompress(path: str, data: bytes) -> bytes:
    try:
        import zstandard
    except ImportError:
        raise ImportRefused(
            path, "a .zstd session needs the zstandard package: pip install 'hbeval[zstd]'"
        ) from None
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(
            io.BytesIO(data), read_across_frames=True
        )
        return reader.read()
    except zstandard.ZstdError as exc:
        raise ImportRefused(path, f"not a readable zstd stream: {exc}") from None


def _blocks(data: Mapping[str, Any]) -> list[Any]:
    msg = data.get("message")
    content = msg.get("content") if isinstance(msg, Mapping) else data.get("content")
    return content if isinstance(content, list) else []


def read(
    path: str,
    data: bytes,
    run_id_of: Callable[[str, int], str],
    skipped: list[Skipped],
) -> list[ImportedTrial]:
    """The session file as one trial."""
    # Long because: one pass over the session's records in order, one branch per record kind,
    # each feeding the one trace builder; the checks of each record stay beside its use.
    if data.startswith(_ZSTD_MAGIC):
        data = _decompress(path, data)
    try:
        lines = jsonl_lines(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ImportRefused(path, f"not UTF-8 text: {exc}") from None
    rows: list[tuple[int, dict[str, Any]]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise ImportRefused(path, f"not valid JSON: {exc}", line=n) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            raise ImportRefused(
                path, "each line must be an object with a string type", line=n, field="type"
            )
        rows.append((n, obj))
    if not rows or rows[0][1]["type"] != "session":
        raise ImportRefused(
            path, "the first line must be the session header (type 'session')", line=1, field="type"
        )
    header = rows[0][1]
    source_id = path
    b = TraceBuilder(run_id_of(source_id, 0))
    first_input = None
    for _, ev in rows[1:]:
        if ev["type"] == "user/message" and isinstance(ev.get("data"), Mapping):
            first_input = text_of(_blocks(ev["data"]))
            break
    b.run_start(task_id=source_id, trial=0, input=first_input, ts=_time(header.get("createdAt")))
    status, error, last_text = "ok", None, None
    turns_open = 0
    issued: dict[str, str] = {}
    counts: dict[str, int] = {}
    for n, ev in rows[1:]:
        kind = ev["type"]
        data_ = ev.get("data")
        if kind not in _KEPT:
            counts[kind] = counts.get(kind, 0) + 1
            continue
        if not isinstance(data_, Mapping):
            raise ImportRefused(path, "missing or not an object", line=n, field="data")
        ts = _time(ev.get("time"))
        if kind == "user/message":
            b.message("user", text_of(_blocks(data_)))
        elif kind == "turn/start":
            turns_open += 1
        elif kind == "turn/end":
            turns_open = max(0, turns_open - 1)
            reason = data_.get("reason")
            rkind = reason.get("kind") if isinstance(reason, Mapping) else None
            status = _END_STATUS.get(str(rkind), "ok")
            err = reason.get("error") if isinstance(reason, Mapping) else None
            error = (
                str(err.get("message") if isinstance(err, Mapping) else err or rkind)
                if status != "ok"
                else None
            )
        elif kind == "assistant/message":
            text, reasoning, calls = assistant_blocks(
                _blocks(data_), _DSH_BLOCKS, path=path, line=n, field="data.message.content"
            )
            issued.update({cid: name for cid, name, _ in calls if cid is not None})
            raw_usage = data_.get("usage")
            usage: Mapping[str, Any] = raw_usage if isinstance(raw_usage, Mapping) else {}
            msg = data_.get("message")
            src = msg.get("source") if isinstance(msg, Mapping) else None
            b.model_call(
                text=text,
                tool_calls=calls,
                reasoning=reasoning,
                model=src.get("model") if isinstance(src, Mapping) else None,
                usage=(_count(usage.get("inputTokens")), _count(usage.get("outputTokens"))),
                ts=ts,
            )
            if text:
                last_text = text
        elif kind == "tool/call":
            call_id = data_.get("callId")
            if not isinstance(call_id, str):
                raise ImportRefused(path, "missing or not a string", line=n, field="data.callId")
            if call_id not in issued:
                skipped.append(
                    Skipped(path, f"line {n} tool/call {call_id}", "no assistant reply issued it")
                )
        elif kind == "tool/result":
            err_info = data_.get("error")
            error_type = None
            if isinstance(err_info, Mapping):
                error_type = str(err_info.get("name") or err_info.get("code") or "error")
            results = [
                blk
                for blk in _blocks(data_)
                if isinstance(blk, Mapping) and blk.get("type") == "tool-result"
            ]
            if results:
                for k, blk in enumerate(results):
                    call_id = blk.get("toolCallId")
                    if not isinstance(call_id, str):
                        raise ImportRefused(
                            path,
                            "missing or not a string",
                            line=n,
                            field=f"data.message.content[{k}].toolCallId",
                        )
                    is_error = bool(blk.get("isError")) or err_info is not None
                    b.tool_result(
                        call_id=call_id,
                        name=issued.get(call_id),
                        result=text_of(blk.get("content")),
                        is_error=is_error,
                        error_type=error_type if is_error else None,
                        ts=ts,
                    )
            else:
                call_id = data_.get("callId")
                if not isinstance(call_id, str):
                    raise ImportRefused(
                        path,
                        "missing: a tool/result names its call (data.callId or a tool-result block)",
                        line=n,
                        field="data.callId",
                    )
                is_error = bool(data_.get("isError")) or err_info is not None
                b.tool_result(
                    call_id=call_id,
                    name=issued.get(call_id),
                    result=text_of(data_.get("content")),
                    is_error=is_error,
                    error_type=error_type if is_error else None,
                    ts=ts,
                )
        elif kind.startswith("compaction/"):
            b.span(kind.replace("/", "_"), {"data": dict(data_), "source_line": n}, ts=ts)
    if turns_open and status == "ok":
        status, error = "cancelled", "the session ended inside a turn (no turn/end)"
    for call_id, tool in b.unanswered_calls():
        skipped.append(Skipped(path, f"call {call_id} ({tool})", "no tool/result answered it"))
    b.run_end(status=status, output=last_text, error=error)
    for what, count in sorted(counts.items()):
        skipped.append(
            Skipped(path, what, "streaming or interface event, not an agent step", count)
        )
    attrs: dict[str, Any] = {"session_id": _header_id(path, header, "id")}
    if header.get("parentSession") is not None:
        attrs["parent_session"] = _header_id(path, header, "parentSession")
        depth = header.get("delegationDepth")
        if depth is not None and (
            isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 2**31
        ):
            raise ImportRefused(
                path,
                f"must be a whole number >= 0 (the sub-agent's nesting depth), got "
                f"{str(depth)[:40]}",
                line=1,
                field="delegationDepth",
            )
        attrs["depth"] = depth or 1
    return [
        ImportedTrial(
            task_id=source_id,
            trial_index=0,
            events=b.events,
            label=None,
            source_id=source_id,
            source_file=path,
            response_text=last_text,
            status=status,
            attrs=attrs,
        )
    ]


def _header_id(path: str, header: Mapping[str, Any], name: str) -> str | None:
    """A session id from the header: text (a number is read as its text), or None."""
    value = header.get(name)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ImportRefused(
        path, f"must be a session id (text), got {type(value).__name__}", line=1, field=name
    )


def combine(trials: list[ImportedTrial], skipped: list[Skipped]) -> list[ImportedTrial]:
    """Nest each sub-agent session in its parent's run when the parent was imported too.

    The parent is the session in the same folder whose header ``id`` the child's
    ``parentSession`` names (recorded ids may be placeholders that repeat across folders). The
    child's events join the parent's trace before its run end, inside a span (scope ``agent``,
    name ``subagent <id>``), their call and span ids prefixed with the child's session id so
    they cannot collide with the parent's. Deeper sessions are nested first. Sessions whose
    parent links form a cycle (A -> B -> C -> A) have no top: each stays its own trial, and
    the cycle is reported among the skipped items; only what was really nested is counted.
    """
    index = {(str(Path(t.source_file).parent), t.attrs.get("session_id")): t for t in trials}

    def parent_of(t: ImportedTrial) -> ImportedTrial | None:
        parent_id = t.attrs.get("parent_session")
        if parent_id is None:
            return None
        parent = index.get((str(Path(t.source_file).parent), parent_id))
        return None if parent is t else parent

    in_cycle: set[int] = set()
    for t in trials:
        chain: list[ImportedTrial] = []
        seen: set[int] = set()
        node: ImportedTrial | None = t
        while node is not None and id(node) not in seen and id(node) not in in_cycle:
            seen.add(id(node))
            chain.append(node)
            node = parent_of(node)
        if node is not None and id(node) in seen:  # the walk came back: a new cycle
            loop = chain[chain.index(node) :]
            in_cycle.update(id(n) for n in loop)
            names = " -> ".join(str(n.attrs.get("session_id")) for n in [*loop, loop[0]])
            skipped.append(
                Skipped(
                    str(Path(node.source_file).parent),
                    f"parentSession cycle {names}",
                    f"no session in it is the top; each of its {len(loop)} sessions is "
                    "imported as its own trial, none nested",
                )
            )

    def depth(t: ImportedTrial) -> int:
        n, node = 0, parent_of(t)
        while node is not None and id(node) not in in_cycle and n <= len(trials):
            n, node = n + 1, parent_of(node)
        return n + (node is not None)

    nested: set[int] = set()
    for child in sorted(trials, key=lambda t: -depth(t)):
        parent = parent_of(child)
        if parent is None or id(child) in in_cycle:
            continue
        _nest(parent, child)
        nested.add(id(child))
    if nested:
        skipped.append(
            Skipped(
                "(dsh)",
                "sub-agent sessions",
                "nested as a span in their parent session's run",
                len(nested),
            )
        )
    return [t for t in trials if id(t) not in nested]


def _nest(parent: ImportedTrial, child: ImportedTrial) -> None:
    run_id = parent.events[0].run_id if parent.events else child.events[0].run_id
    session = str(child.attrs.get("session_id"))
    prefix = f"{session}:"
    body: list[EventBase] = []
    for e in child.events:
        kind = getattr(e, "kind", None)
        if kind in ("run_start", "run_end"):
            continue
        update: dict[str, Any] = {"run_id": run_id}
        if hasattr(e, "call_id") and getattr(e, "call_id", None) is not None:
            update["call_id"] = prefix + e.call_id
        if hasattr(e, "span_id"):
            update["span_id"] = prefix + e.span_id
        if kind == "model_end":
            update["tool_calls"] = [
                c.model_copy(update={"id": prefix + c.id})
                for c in e.tool_calls  # type: ignore[attr-defined]
            ]
        if kind == "model_start":
            update["messages"] = [
                m
                if m.tool_call_id is None
                else m.model_copy(update={"tool_call_id": prefix + m.tool_call_id})
                for m in e.messages  # type: ignore[attr-defined]
            ]
        body.append(e.model_copy(update=update))
    span_id = f"subagent-{session}"
    name = f"subagent {session}"
    start = SpanStart(
        run_id=run_id,
        span_id=span_id,
        scope="agent",
        name=name,
        attrs={"source_file": child.source_file, "status": child.status},
    )
    end = SpanEnd(
        run_id=run_id,
        span_id=span_id,
        scope="agent",
        name=name,
        status="error" if child.status == "error" else "ok",
    )
    events = list(parent.events)
    at = (
        len(events) - 1
        if events and getattr(events[-1], "kind", None) == "run_end"
        else len(events)
    )
    events[at:at] = [start, *body, end]
    parent.events = [e.model_copy(update={"seq": i}) for i, e in enumerate(events)]


def _time(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value) / 1000.0 if value > 1e11 else float(value)
    return None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
