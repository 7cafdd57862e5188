"""An OTLP/JSON-lines recording is read a line at a time: reading it holds its spans, not the
whole text and every parsed request at once (10^6 spans took 5.0 GB before). The reader's
memory beyond the spans it returns stays flat as the file grows; ``benchmarks/bench_import.py
--spans N`` prints the whole import's time and peak RSS."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest

from hbeval.importers import ImportRefused
from hbeval.importers._otlp import spans_of


def _kv(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _span(trace: int, n: int) -> dict[str, Any]:
    return {
        "traceId": f"{trace:032x}",
        "spanId": f"{trace:014x}{n:02x}",
        "parentSpanId": None if n == 0 else f"{trace:014x}00",
        "name": "execute_tool lookup",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000100000000",
        "attributes": [
            _kv("gen_ai.operation.name", "execute_tool"),
            _kv("gen_ai.tool.name", "lookup"),
            _kv("gen_ai.tool.call.result", "x" * 200),
        ],
        "status": {"code": 1},
    }


def _request(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}


def _jsonl(count: int, per_trace: int = 10) -> bytes:
    lines = [json.dumps(_request([_span(i // per_trace, i % per_trace)])) for i in range(count)]
    return ("\n".join(lines) + "\n").encode()


def _transient(data: bytes) -> tuple[int, int]:
    """Peak bytes allocated while reading ``data`` beyond what the returned spans keep."""
    tracemalloc.start()
    try:
        spans = spans_of("big.jsonl", data)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return len(spans), peak - kept


def test_reading_a_jsonl_recording_holds_one_request_at_a_time() -> None:
    small, large = _jsonl(1_000), _jsonl(4_000)
    n_small, extra_small = _transient(small)
    n_large, extra_large = _transient(large)
    assert (n_small, n_large) == (1_000, 4_000)
    # Every parsed request held at once costs well over a kilobyte a span (over 4 MB here);
    # one line at a time costs a line, whatever the file's length.
    assert extra_large < 1 << 20, extra_large
    assert extra_large < len(large) / 10
    assert extra_large < 2 * extra_small + (256 << 10), (extra_small, extra_large)


def test_a_bad_line_is_named_and_crlf_lines_and_one_document_still_read() -> None:
    good = json.dumps(_request([_span(0, 0)]))
    data = f"{good}\r\n\r\n{good}\r\n{{nope\n".encode()
    with pytest.raises(ImportRefused) as err:
        spans_of("x.jsonl", data)
    assert err.value.line == 4
    assert len(spans_of("x.jsonl", f"{good}\r\n{good}\r\n".encode())) == 2
    whole = json.dumps(_request([_span(0, 0), _span(0, 1), _span(0, 2)]), indent=2).encode()
    assert [s.span_id for s in spans_of("x.json", whole)] == [
        "0000000000000000",
        "0000000000000001",
        "0000000000000002",
    ]
    with pytest.raises(ImportRefused) as bad:
        spans_of("x.jsonl", good.encode() + b"\n\xff\xfe\n")
    assert bad.value.line == 2 and "not UTF-8" in str(bad.value)
