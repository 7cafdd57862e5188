"""An import stores trial by trial: while its trials are read, scored and stored it holds one
trial's events at a time (plus each trial's small report entry), not every event of the
recording; and one redactor serves the whole import, so a secret redacts to the same text in
every trial."""

from __future__ import annotations

import json
import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

from hbeval.importers import import_recordings
from hbeval.store import SQLiteStore


def _kv(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _trace(t: int, result: str = "in stock") -> list[dict[str, Any]]:
    tid, root, t0 = f"{t:032x}", f"{t:014x}00", 1_700_000_000_000_000_000
    spans = []
    for i in range(4):
        at = t0 + i * 100_000_000
        spans.append(
            {
                "traceId": tid,
                "spanId": f"{t:014x}{i + 1:02x}",
                "parentSpanId": root,
                "name": "execute_tool lookup",
                "startTimeUnixNano": str(at),
                "endTimeUnixNano": str(at + 10_000_000),
                "attributes": [
                    _kv("gen_ai.operation.name", "execute_tool"),
                    _kv("gen_ai.tool.name", "lookup"),
                    _kv("gen_ai.tool.call.id", f"c{t}-{i}"),
                    _kv("gen_ai.tool.call.result", f"{result} {i} " + "x" * 300),
                ],
                "status": {"code": 1},
            }
        )
    spans.append(
        {
            "traceId": tid,
            "spanId": root,
            "name": "agent",
            "startTimeUnixNano": str(t0),
            "endTimeUnixNano": str(t0 + 900_000_000),
            "status": {"code": 1},
        }
    )
    return spans


def _write(path: Path, traces: int, result: str = "in stock") -> None:
    with path.open("w", encoding="utf-8") as fh:
        for t in range(traces):
            for sp in _trace(t, result):
                req = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [sp]}]}]}
                fh.write(json.dumps(req) + "\n")


class _Watched(SQLiteStore):
    """A real SQLite store that notes the traced memory when each trial is written."""

    peak_at_last_trial = 0

    def record_trial_bundle(self, *args: Any, **kwargs: Any) -> Any:
        _, peak = tracemalloc.get_traced_memory()
        type(self).peak_at_last_trial = peak
        return super().record_trial_bundle(*args, **kwargs)


def _trial_phase_peak(tmp: Path, traces: int) -> tuple[int, int]:
    rec = tmp / f"r{traces}.jsonl"
    _write(rec, traces)
    store = _Watched(tmp / f"s{traces}.db")
    import_recordings("otlp-json", [rec], store=store)  # warm: modules loaded
    store2 = _Watched(tmp / f"t{traces}.db")
    tracemalloc.start()
    try:
        summary = import_recordings("otlp-json", [rec], store=store2)
    finally:
        tracemalloc.stop()
    assert summary.trials == traces
    return _Watched.peak_at_last_trial - rec.stat().st_size, traces * 5


def test_the_trial_phase_holds_one_trial_not_every_event(tmp_path: Path) -> None:
    small, spans_small = _trial_phase_peak(tmp_path, 60)
    large, spans_large = _trial_phase_peak(tmp_path, 240)
    slope = (large - small) / (spans_large - spans_small)
    # Holding every event costs over 5 kB a span of this recording (each span is a tool
    # start and end with a 300-character result); a trial at a time leaves only each trial's
    # report entry, well under that.
    assert slope < 2_500, (small, large, slope)


def test_a_secret_redacts_to_the_same_text_in_every_trial(tmp_path: Path) -> None:
    rec = tmp_path / "r.jsonl"
    secret = "sk-proj-" + "A1b2C3d4" * 5
    _write(rec, 3, result=f"token {secret}")
    db = tmp_path / "s.db"
    import_recordings("otlp-json", [rec], store=SQLiteStore(db))
    texts = []
    with sqlite3.connect(db) as conn:
        for table in ("event_rows", "event_streams", "trials", "reports"):
            for row in conn.execute(f"SELECT * FROM {table}"):
                texts.extend(str(v) for v in row if isinstance(v, (str, bytes)))
    joined = "\n".join(texts)
    assert secret not in joined
    import re

    tokens = re.findall(r"\[REDACTED[^\]]*\]", joined)
    assert tokens, "the secret was not redacted"
    assert len(set(tokens)) == 1, set(tokens)
