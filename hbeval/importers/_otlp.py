"""OTLP/JSON trace exports: the collector's file exporter (one ``ExportTraceServiceRequest`` per
line) or one such document.

``resourceSpans[].scopeSpans[].spans[]`` with ``traceId``/``spanId``/``parentSpanId`` (hex),
``name``, ``startTimeUnixNano``/``endTimeUnixNano`` (integers, written as strings),
``attributes`` as ``[{key, value: {stringValue|intValue|doubleValue|boolValue|arrayValue|
kvlistValue|bytesValue}}]``, ``events`` and ``status`` {code (2 or "STATUS_CODE_ERROR" is an
error), message}. One trial per trace; spans are mapped by ``_spans.TraceMapper`` in the order
they ended. With ``group_by="session"`` the traces that carry the same ``session.id`` (or
``gen_ai.conversation.id``) make one trial, across files too; a trace without one stays a trial
of its own. Telemetry records no success: unlabelled unless a labels file names trace (or
session) ids.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ._common import ImportedTrial, ImportRefused, Skipped, jsonl_lines
from ._spans import SpanData, TraceMapper

FORMAT = "otlp-json"
_ERROR_CODES = {2, "2", "STATUS_CODE_ERROR"}


def wants(path: Path) -> bool:
    """JSON and JSON-lines files inside a folder given to ``import``."""
    return path.suffix in (".json", ".jsonl")


def sniff(head: bytes, path: str) -> bool:
    """Whether the first bytes hold an OTLP trace request."""
    return b'"resourceSpans"' in head[:4096] or b'"resource_spans"' in head[:4096]


def any_value(value: Any) -> Any:
    """An OTLP/JSON ``AnyValue`` as a plain Python value."""
    if not isinstance(value, Mapping):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return attributes((value["kvlistValue"] or {}).get("values", []))
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def attributes(items: Any) -> dict[str, Any]:
    """``[{key, value}]`` as a dict."""
    out: dict[str, Any] = {}
    for item in items or []:
        if isinstance(item, Mapping) and isinstance(item.get("key"), str):
            out[item["key"]] = any_value(item.get("value"))
    return out


_HEX = re.compile(r"^[0-9a-fA-F]+$")


def _id(value: str) -> str:
    """A trace or span id as lowercase hex; OTLP/JSON writes hex, a plain proto3 JSON dump base64.

    Any other id is kept as written (its case included), so that the redaction of identifiers
    sees a key shape such as ``AKIA...`` as it is.
    """
    if _HEX.match(value) and len(value) in (16, 32):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except ValueError:
        return value
    return raw.hex() if len(raw) in (8, 16) else value


def _nanos(value: Any) -> float | None:
    try:
        return int(value) / 1e9
    except (TypeError, ValueError):
        return None


def _documents(path: str, data: bytes) -> list[tuple[int | None, Any]]:
    text = data.decode("utf-8", errors="strict")
    try:
        return [(None, json.loads(text))]
    except ValueError:
        pass
    docs: list[tuple[int | None, Any]] = []
    for n, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip():
            continue
        try:
            docs.append((n, json.loads(line)))
        except ValueError as exc:
            raise ImportRefused(path, f"not valid JSON: {exc}", line=n) from None
    return docs


def spans_of(path: str, data: bytes) -> list[SpanData]:
    """Every span of a file, refusing one that lacks an id."""
    try:
        docs = _documents(path, data)
    except UnicodeDecodeError as exc:
        raise ImportRefused(path, f"not UTF-8 text: {exc}") from None
    out: list[SpanData] = []
    for line, doc in docs:
        if not isinstance(doc, Mapping) or "resourceSpans" not in doc:
            raise ImportRefused(
                path,
                "expected an ExportTraceServiceRequest object",
                line=line,
                field="resourceSpans",
            )
        for i, rs in enumerate(doc["resourceSpans"] or []):
            for j, ss in enumerate((rs or {}).get("scopeSpans") or []):
                for k, sp in enumerate((ss or {}).get("spans") or []):
                    where = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                    if not isinstance(sp, Mapping):
                        raise ImportRefused(
                            path, "a span must be an object", line=line, field=where
                        )
                    for name in ("traceId", "spanId"):
                        if not isinstance(sp.get(name), str) or not sp[name]:
                            raise ImportRefused(path, "missing", line=line, field=f"{where}.{name}")
                    status = sp.get("status") or {}
                    out.append(
                        SpanData(
                            trace_id=_id(sp["traceId"]),
                            span_id=_id(sp["spanId"]),
                            parent_id=_id(sp["parentSpanId"]) if sp.get("parentSpanId") else None,
                            name=str(sp.get("name") or ""),
                            start=_nanos(sp.get("startTimeUnixNano")),
                            end=_nanos(sp.get("endTimeUnixNano")),
                            attributes=attributes(sp.get("attributes")),
                            events=[
                                (str(e.get("name")), attributes(e.get("attributes")))
                                for e in sp.get("events") or []
                                if isinstance(e, Mapping)
                            ],
                            status_error=status.get("code") in _ERROR_CODES,
                            status_message=status.get("message") or None,
                        )
                    )
    return out


GROUP_BY = ("trace", "session")
"""How spans become trials: one per trace (default), or one per session."""
SESSION_KEYS = ("session.id", "gen_ai.conversation.id")
"""Span attributes naming the session or conversation a trace belongs to (OpenInference, GenAI)."""


def session_of(spans: list[SpanData]) -> str | None:
    """The session id a trace's spans carry (the root's first), or None."""
    ordered = sorted(spans, key=lambda s: s.parent_id is not None)
    for s in ordered:
        for key in SESSION_KEYS:
            value = s.attributes.get(key)
            if value not in (None, ""):
                return str(value)
    return None


def read(
    path: str,
    data: bytes,
    run_id_of: Callable[[str, int], str],
    skipped: list[Skipped],
    *,
    group_by: str = "trace",
) -> list[ImportedTrial]:
    """One trial per trace (or per session), its spans mapped in the order they ended."""
    by_trace: dict[str, list[SpanData]] = {}
    for s in spans_of(path, data):
        by_trace.setdefault(s.trace_id, []).append(s)
    if group_by == "trace":
        return [
            _trial(path, trace_id, spans, run_id_of, skipped, session=False)
            for trace_id, spans in by_trace.items()
        ]
    groups: dict[str, list[SpanData]] = {}
    no_session = 0
    for trace_id, spans in by_trace.items():
        key = session_of(spans)
        if key is None:
            no_session += 1
            key = trace_id
        groups.setdefault(key, []).extend(spans)
    if no_session:
        skipped.append(
            Skipped(
                path,
                "traces without session.id or gen_ai.conversation.id",
                "imported one trial per trace",
                no_session,
            )
        )
    trials = []
    for key, spans in groups.items():
        t = _trial(path, key, spans, run_id_of, skipped, session=True)
        t.attrs["spans"] = spans
        trials.append(t)
    return trials


def combine_sessions(trials: list[ImportedTrial], skipped: list[Skipped]) -> list[ImportedTrial]:
    """Join a session's trials read from several files into one (its spans mapped together)."""
    by_key: dict[str, list[ImportedTrial]] = {}
    for t in trials:
        by_key.setdefault(t.task_id, []).append(t)
    out = []
    for key, group in by_key.items():
        if len(group) == 1:
            group[0].attrs.pop("spans", None)
            out.append(group[0])
            continue
        spans = [s for t in group for s in t.attrs.pop("spans", [])]
        run_id: str = group[0].events[0].run_id

        def same_run(_task: str, _trial_index: int, rid: str = run_id) -> str:
            return rid

        t = _trial(group[0].source_file, key, spans, same_run, [], session=True)
        t.attrs["files"] = sorted({g.source_file for g in group})
        out.append(t)
    return out


def _trial(
    path: str,
    key: str,
    spans: list[SpanData],
    run_id_of: Callable[[str, int], str],
    skipped: list[Skipped],
    *,
    session: bool,
) -> ImportedTrial:
    """One trial from the spans of a trace (or of a session's traces)."""
    spans.sort(key=lambda s: (s.end if s.end is not None else float("inf"), s.start or 0.0))
    root = next((s for s in spans if s.parent_id is None), None)
    mapper = TraceMapper(run_id_of(key, 0), key, end_on_root=not session)
    root_input = root.attributes.get("input.value") if root is not None else None
    other = 0
    for s in spans:
        mapper.feed(s, root_input=root_input)
        other += s.role == "other" and s.parent_id is not None
    if session and mapper.roots:
        mapper.finish()
    if not mapper.ended:
        mapper.builder.run_end(status="ok", output=mapper.response_text)
        skipped.append(Skipped(path, f"trace {key} root span", "not in the file; run end assumed"))
    if other:
        skipped.append(
            Skipped(path, "chain, agent and other spans", "no tool or model call", other)
        )
    for call_id, tool in mapper.builder.unanswered_calls():
        skipped.append(
            Skipped(path, f"trace {key} call {call_id} ({tool})", "no tool span answered it")
        )
    return ImportedTrial(
        task_id=key,
        trial_index=0,
        events=mapper.events,
        label=None,
        source_id=key,
        source_file=path,
        response_text=mapper.response_text,
        status=mapper.status,
        attrs={"traces": len({s.trace_id for s in spans})} if session else {},
    )
