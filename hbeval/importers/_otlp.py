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
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ._common import ImportedTrial, ImportRefused, Skipped
from ._spans import SpanData, TraceMapper

FORMAT = "otlp-json"
_ERROR_CODES = {2, "2", "STATUS_CODE_ERROR"}


def wants(path: Path) -> bool:
    """JSON and JSON-lines files inside a folder given to ``import``."""
    return path.suffix in (".json", ".jsonl")


def sniff(head: bytes, path: str) -> bool:
    """Whether the first bytes hold an OTLP trace request."""
    return b'"resourceSpans"' in head[:4096] or b'"resource_spans"' in head[:4096]


class _Shape(ValueError):
    """A part of an OTLP document of the wrong JSON type: ``where`` is its path inside."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where = where
        self.message = message


def _listed(value: Any, where: str, what: str) -> list[Any]:
    """``value`` as a JSON list (null counts as empty); any other type is a ``_Shape``."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Shape(where, f"must be a list of {what}, got {type(value).__name__}")
    return value


def _object(value: Any, where: str) -> Mapping[str, Any]:
    """``value`` as a JSON object (null counts as empty); any other type is a ``_Shape``."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _Shape(where, f"must be an object, got {type(value).__name__}")
    return value


def any_value(value: Any, where: str = "value") -> Any:
    """An OTLP/JSON ``AnyValue`` as a plain Python value; a part of the wrong type raises
    ``ValueError`` naming its path (``where`` is the value's own)."""
    if not isinstance(value, Mapping):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return _number(int, value["intValue"], f"{where}.intValue")
    if "doubleValue" in value:
        return _number(float, value["doubleValue"], f"{where}.doubleValue")
    if "arrayValue" in value:
        arr = _object(value["arrayValue"], f"{where}.arrayValue")
        items = _listed(arr.get("values"), f"{where}.arrayValue.values", "AnyValue objects")
        return [any_value(v, f"{where}.arrayValue.values[{n}]") for n, v in enumerate(items)]
    if "kvlistValue" in value:
        kv = _object(value["kvlistValue"], f"{where}.kvlistValue")
        return attributes(kv.get("values"), f"{where}.kvlistValue.values")
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def _number(kind: Callable[[Any], Any], raw: Any, where: str) -> Any:
    if isinstance(raw, (dict, list)) or isinstance(raw, bool):
        raise _Shape(where, f"must be a number, got {type(raw).__name__}")
    try:
        return kind(raw)
    except (TypeError, ValueError, OverflowError):
        raise _Shape(where, f"must be a number, got {str(raw)[:40]!r}") from None


def attributes(items: Any, where: str = "attributes") -> dict[str, Any]:
    """``[{key, value}]`` as a dict; a list of the wrong shape raises ``ValueError`` naming it."""
    out: dict[str, Any] = {}
    for n, item in enumerate(_listed(items, where, "{key, value} objects")):
        if isinstance(item, Mapping) and isinstance(item.get("key"), str):
            out[item["key"]] = any_value(item.get("value"), f"{where}[{n}].value")
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
    """Nanoseconds since the epoch as seconds; None when absent, unreadable or out of range
    (before 1970, or past the year 9999)."""
    try:
        seconds = int(value) / 1e9
    except (TypeError, ValueError, OverflowError):
        return None
    return seconds if 0 <= seconds < 253402300800 else None


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """The numbered lines of ``data`` split on ``\n`` only (a ``\r`` before it dropped), one at a
    time, so that a file of many requests is never held as text or parsed all at once."""
    start, n, size = 0, 0, len(data)
    while start < size:
        end = data.find(b"\n", start)
        end = size if end < 0 else end
        n += 1
        line = data[start:end]
        yield n, line[:-1] if line.endswith(b"\r") else line
        start = end + 1


def _decoded(path: str, raw: bytes, line: int | None) -> str:
    try:
        return raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise ImportRefused(path, f"not UTF-8 text: {exc}", line=line) from None


def _documents(path: str, data: bytes) -> Iterator[tuple[int | None, Any]]:
    """The requests of a file: one document (any layout), or one per line, yielded in turn."""
    lines = ((n, raw) for n, raw in _lines(data) if raw.strip())
    first = next(lines, None)
    if first is None:
        return
    second = next(lines, None)
    if second is not None:  # more than one line holds text
        try:
            yield first[0], json.loads(_decoded(path, first[1], first[0]))
        except ValueError as exc:
            try:  # a document over several lines (pretty-printed)
                whole = json.loads(_decoded(path, data, None))
            except ValueError:
                raise ImportRefused(path, f"not valid JSON: {exc}", line=first[0]) from None
            yield None, whole
            return
        for n, raw in itertools.chain((second,), lines):
            try:
                yield n, json.loads(_decoded(path, raw, n))
            except ValueError as exc:
                raise ImportRefused(path, f"not valid JSON: {exc}", line=n) from None
        return
    try:
        yield None, json.loads(_decoded(path, data, None))
    except ValueError as exc:
        raise ImportRefused(path, f"not valid JSON: {exc}", line=first[0]) from None


def _requests(path: str, data: bytes) -> Iterator[tuple[int | None, Mapping[str, Any]]]:
    """The file's ``ExportTraceServiceRequest`` objects in turn; anything else is refused."""
    for line, doc in _documents(path, data):
        if not isinstance(doc, Mapping) or "resourceSpans" not in doc:
            raise ImportRefused(
                path,
                "expected an ExportTraceServiceRequest object",
                line=line,
                field="resourceSpans",
            )
        yield line, doc


def _spans_in(path: str, line: int | None, doc: Mapping[str, Any]) -> list[SpanData]:
    try:
        return _document_spans(path, line, doc)
    except _Shape as exc:
        raise ImportRefused(path, exc.message, line=line, field=exc.where) from None


def _trace_ids(path: str, line: int | None, doc: Mapping[str, Any]) -> list[str]:
    """The trace ids of a request's spans, read without mapping the spans; a request of an
    unexpected shape is mapped whole, so that its refusal names the part."""
    out: list[str] = []
    try:
        for rs in doc["resourceSpans"]:
            for ss in rs.get("scopeSpans") or ():
                for sp in ss.get("spans") or ():
                    tid = sp["traceId"]
                    if not isinstance(tid, str) or not tid:
                        raise TypeError(tid)
                    out.append(_id(tid))
    except (TypeError, KeyError, AttributeError):
        return [s.trace_id for s in _spans_in(path, line, doc)]
    return out


def spans_of(path: str, data: bytes) -> list[SpanData]:
    """Every span of a file, refusing one that lacks an id or has a part of the wrong type.

    A file of one request per line is parsed a line at a time: only the spans are kept, never
    the whole text or every parsed request at once.
    """
    out: list[SpanData] = []
    for line, doc in _requests(path, data):
        out.extend(_spans_in(path, line, doc))
    return out


def traces_of(path: str, data: bytes) -> Iterator[tuple[str, list[SpanData]]]:
    """Each trace's spans, traces in the order they first appear, holding only the traces
    still open: a first pass notes the last request each trace appears in, the second hands a
    trace on once that request is read. A file whose traces follow one another holds one
    trace at a time; spans of a trace spread over the file are held until its last one."""
    last: dict[str, int] = {}
    for n, (line, doc) in enumerate(_requests(path, data)):
        for tid in _trace_ids(path, line, doc):
            last[tid] = n
    if len(last) <= 1:  # nothing to hand on early: one pass
        by_trace: dict[str, list[SpanData]] = {}
        for s in spans_of(path, data):
            by_trace.setdefault(s.trace_id, []).append(s)
        yield from by_trace.items()
        return
    order = iter(last)  # first appearance
    head = next(order, None)
    open_traces: dict[str, list[SpanData]] = {}
    for n, (line, doc) in enumerate(_requests(path, data)):
        for s in _spans_in(path, line, doc):
            open_traces.setdefault(s.trace_id, []).append(s)
        while head is not None and last[head] <= n:
            yield head, open_traces.pop(head)
            head = next(order, None)


def _document_spans(path: str, line: int | None, doc: Mapping[str, Any]) -> list[SpanData]:
    out: list[SpanData] = []
    resources = _listed(doc["resourceSpans"], "resourceSpans", "ResourceSpans objects")
    for i, rs in enumerate(resources):
        scopes = _object(rs, f"resourceSpans[{i}]").get("scopeSpans")
        for j, ss in enumerate(
            _listed(scopes, f"resourceSpans[{i}].scopeSpans", "ScopeSpans objects")
        ):
            where_ss = f"resourceSpans[{i}].scopeSpans[{j}]"
            spans = _listed(_object(ss, where_ss).get("spans"), f"{where_ss}.spans", "spans")
            for k, sp in enumerate(spans):
                where = f"{where_ss}.spans[{k}]"
                if not isinstance(sp, Mapping):
                    raise _Shape(where, "a span must be an object")
                out.append(_span(sp, where))
    return out


def _span(sp: Mapping[str, Any], where: str) -> SpanData:
    for name in ("traceId", "spanId"):
        if not isinstance(sp.get(name), str) or not sp[name]:
            raise _Shape(f"{where}.{name}", "missing")
    parent = sp.get("parentSpanId")
    if parent is not None and not isinstance(parent, str):
        raise _Shape(f"{where}.parentSpanId", f"must be hex text, got {type(parent).__name__}")
    status = _object(sp.get("status"), f"{where}.status")
    message = status.get("message")
    events = []
    for n, e in enumerate(_listed(sp.get("events"), f"{where}.events", "span events")):
        if isinstance(e, Mapping):
            events.append(
                (
                    str(e.get("name")),
                    attributes(e.get("attributes"), f"{where}.events[{n}].attributes"),
                )
            )
    code = status.get("code")
    return SpanData(
        trace_id=_id(sp["traceId"]),
        span_id=_id(sp["spanId"]),
        parent_id=_id(parent) if parent else None,
        name=str(sp.get("name") or ""),
        start=_nanos(sp.get("startTimeUnixNano")),
        end=_nanos(sp.get("endTimeUnixNano")),
        attributes=attributes(sp.get("attributes"), f"{where}.attributes"),
        events=events,
        status_error=isinstance(code, (int, str)) and code in _ERROR_CODES,
        status_message=None if message in (None, "") else str(message),
    )


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
) -> Iterable[ImportedTrial]:
    """One trial per trace (yielded in turn), or per session, its spans mapped in the order
    they ended."""
    if group_by == "trace":  # a trial at a time, each built once its trace is read whole
        return (
            _trial(path, trace_id, spans, run_id_of, skipped, session=False)
            for trace_id, spans in traces_of(path, data)
        )
    by_trace: dict[str, list[SpanData]] = {}
    for s in spans_of(path, data):
        by_trace.setdefault(s.trace_id, []).append(s)
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
