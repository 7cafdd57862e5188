"""Finding 13 of the second adversarial pass: hidden tracebacks in the importers.

A part of a recording of the wrong JSON type (an OTLP ``arrayValue`` as a list, ``kvlistValue``
as a string, ``resourceSpans`` of strings or an object, ``status`` as a string; a tool-call or
session id that is a list; ``tool_calls`` that is not a list; a DSH ``delegationDepth`` that is
a list or 1e400; a trial number past 64 bits) ended in "unexpected error X" naming no file or
field. Each is now refused, exit 2, naming the file, the line or path, and the field; and a
structural fuzz over every importer finds no input that ends any other way than exit 0 or a
refusal.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from hbeval.cli import app

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "imports"
PI = Path("/work/shared/corpora/pi/before-compaction.jsonl")


def _short(value: Any) -> Any:
    """``value`` with long strings cut (seeds stay small; their structure is what matters)."""
    if isinstance(value, str):
        return value[:120]
    if isinstance(value, list):
        return [_short(v) for v in value]
    if isinstance(value, dict):
        return {k: _short(v) for k, v in value.items()}
    return value


def _tau_bench() -> list[Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{}"}}
    traj = [
        {"role": "user", "content": "Where is my order?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "get", "content": "shipped"},
        {"role": "assistant", "content": "It has shipped."},
    ]
    return [{"task_id": "t1", "trial": 0, "reward": 1.0, "traj": traj, "info": {}}]


def _otlp() -> dict[str, Any]:
    def kv(key: str, value: Any) -> dict[str, Any]:
        return {"key": key, "value": value}

    tool = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "parentSpanId": "00f067aa0ba902b7",
        "name": "execute_tool get",
        "startTimeUnixNano": "1700000000100000000",
        "endTimeUnixNano": "1700000000200000000",
        "attributes": [
            kv("gen_ai.operation.name", {"stringValue": "execute_tool"}),
            kv("gen_ai.tool.name", {"stringValue": "get"}),
            kv("gen_ai.tool.call.id", {"stringValue": "c1"}),
            kv("tags", {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "3"}]}}),
            kv("extra", {"kvlistValue": {"values": [kv("k", {"doubleValue": 1.5})]}}),
        ],
        "events": [
            {"name": "exception", "attributes": [kv("exception.message", {"stringValue": "x"})]}
        ],
        "status": {"code": 2, "message": "boom"},
    }
    model = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "c7ad6b7169203331",
        "parentSpanId": "00f067aa0ba902b7",
        "name": "chat",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000050000000",
        "attributes": [
            kv("gen_ai.operation.name", {"stringValue": "chat"}),
            kv("gen_ai.usage.input_tokens", {"intValue": "12"}),
            kv(
                "gen_ai.output.messages",
                {
                    "stringValue": json.dumps(
                        [
                            {
                                "role": "assistant",
                                "parts": [
                                    {
                                        "type": "tool_call",
                                        "id": "c1",
                                        "name": "get",
                                        "arguments": {},
                                    }
                                ],
                            }
                        ]
                    )
                },
            ),
        ],
    }
    root = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "00f067aa0ba902b7",
        "name": "agent",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000300000000",
        "attributes": [kv("session.id", {"stringValue": "s1"})],
        "status": {"code": 1},
    }
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [model, tool, root]}]}]}


def _dsh() -> list[Any]:
    return [
        {
            "type": "session",
            "version": 0,
            "id": "K",
            "createdAt": 0,
            "parentSession": "P",
            "delegationDepth": 1,
        },
        {"type": "turn/start", "data": {"turn": 1}},
        {"type": "user/message", "data": {"content": [{"type": "text", "text": "hi"}]}},
        {
            "type": "assistant/message",
            "data": {
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "ok"},
                        {"type": "tool-call", "id": "c1", "name": "ls", "arguments": "{}"},
                    ],
                },
                "usage": {"inputTokens": 3, "outputTokens": 3},
            },
        },
        {
            "type": "tool/result",
            "data": {
                "message": {
                    "content": [
                        {
                            "type": "tool-result",
                            "toolCallId": "c1",
                            "content": "a b",
                            "isError": False,
                        }
                    ]
                }
            },
        },
        {"type": "turn/end", "data": {"reason": {"kind": "completed"}}},
    ]


def _jsonl(path: Path, lines: int | None = None) -> list[Any]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]
    return _short(rows[:lines] if lines else rows)


def _seeds() -> dict[str, tuple[str, str, Any]]:
    """format -> (file name, "json" or "jsonl", the parsed seed)."""
    seeds: dict[str, tuple[str, str, Any]] = {
        "tau-bench": ("tau.json", "json", _tau_bench()),
        "tau2": (
            "results.json",
            "json",
            _short(json.loads((FIXTURES / "tau2_results.json").read_text())),
        ),
        "otlp-json": ("trace.json", "json", _otlp()),
        "dsh": ("session.jsonl", "jsonl", _dsh()),
        "openclaw": ("s.jsonl", "jsonl", _jsonl(FIXTURES / "openclaw_session.jsonl")),
        "hermes": ("trajectories.jsonl", "jsonl", _jsonl(FIXTURES / "hermes_trajectories.jsonl")),
    }
    if PI.exists():
        seeds["pi"] = ("session.jsonl", "jsonl", _jsonl(PI, 14))
    return seeds


SEEDS = _seeds()


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*at, i))
    return out


def _replaced(seed: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    doc = copy.deepcopy(seed)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return doc


def _write(folder: Path, name: str, kind: str, doc: Any) -> Path:
    path = folder / name
    if kind == "json":
        path.write_text(json.dumps(doc), encoding="utf-8")
    else:
        rows = doc if isinstance(doc, list) else [doc]
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _check(fmt: str, path: Path, db: Path) -> Any:
    res = CliRunner().invoke(app, ["import", fmt, str(path), "--db", str(db)])
    out = res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), (
        f"{type(res.exception).__name__}: {res.exception}"
    )
    assert "Traceback" not in out and "unexpected error" not in out, out
    assert res.exit_code in (0, 2), (res.exit_code, out)
    if res.exit_code == 2:
        assert str(path) in out, out  # the refusal names the file
    return res


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**63, -1, 10**400, 1e308, float("inf"), -1e300]),
    st.floats(allow_nan=True),
    st.text(max_size=4),
    st.lists(st.one_of(st.integers(), st.text(max_size=2)), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@pytest.mark.parametrize("fmt", sorted(SEEDS))
def test_each_seed_imports(fmt: str, tmp_path: Path) -> None:
    name, kind, seed = SEEDS[fmt]
    res = _check(fmt, _write(tmp_path, name, kind, seed), tmp_path / "hb.db")
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("fmt", sorted(SEEDS))
def test_no_structural_change_to_a_recording_ends_in_a_traceback(
    fmt: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    name, kind, seed = SEEDS[fmt]
    paths = _paths(seed)
    folder = tmp_path_factory.mktemp(f"fuzz-{fmt}")
    db = folder / "hb.db"

    @settings(
        max_examples=int(os.environ.get("HBEVAL_FUZZ_EXAMPLES", "15")),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(where=st.sampled_from(paths), value=VALUES)
    def one(where: tuple[Any, ...], value: Any) -> None:
        _check(fmt, _write(folder, name, kind, _replaced(seed, where, value)), db)

    one()


# Each case of the finding, named: exit 2 naming the file, where, and the field.
def _otlp_case(change: str) -> dict[str, Any]:
    doc = _otlp()
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    attrs = spans[1]["attributes"]
    if change == "arrayValue as a list":
        attrs[3]["value"] = {"arrayValue": [{"stringValue": "a"}]}
    elif change == "kvlistValue as a string":
        attrs[4]["value"] = {"kvlistValue": "k=v"}
    elif change == "resourceSpans of strings":
        doc["resourceSpans"] = ["x", "y"]
    elif change == "resourceSpans an object":
        doc["resourceSpans"] = {"scopeSpans": []}
    elif change == "status a string":
        spans[1]["status"] = "ERROR"
    return doc


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ("arrayValue as a list", "attributes[3].value.arrayValue"),
        ("kvlistValue as a string", "attributes[4].value.kvlistValue"),
        ("resourceSpans of strings", "resourceSpans[0]"),
        ("resourceSpans an object", "resourceSpans"),
        ("status a string", "spans[1].status"),
    ],
)
def test_otlp_parts_of_the_wrong_type_are_refused_naming_them(
    tmp_path: Path, change: str, field: str
) -> None:
    path = _write(tmp_path, "trace.json", "json", _otlp_case(change))
    res = _check("otlp-json", path, tmp_path / "hb.db")
    assert res.exit_code == 2, res.output
    assert field in res.output, res.output


@pytest.mark.parametrize(
    ("fmt", "change", "field"),
    [
        ("tau-bench", ("traj", 1, "tool_calls", 0, "id"), "[0].traj[1].tool_calls[0].id"),
        ("tau-bench", ("traj", 2, "tool_call_id"), "[0].traj[2].tool_call_id"),
        ("tau-bench", ("traj", 1, "tool_calls"), "[0].traj[1].tool_calls"),
    ],
)
def test_ids_and_lists_of_the_wrong_type_are_refused_naming_them(
    tmp_path: Path, fmt: str, change: tuple[Any, ...], field: str
) -> None:
    name, kind, seed = SEEDS[fmt]
    doc = _replaced(seed, (0, *change), {"not": "a list"} if change[-1] == "tool_calls" else ["x"])
    res = _check(fmt, _write(tmp_path, name, kind, doc), tmp_path / "hb.db")
    assert res.exit_code == 2, res.output
    assert repr(field) in res.output, res.output


def test_tau2_tool_calls_not_a_list_is_refused_naming_it(tmp_path: Path) -> None:
    name, kind, seed = SEEDS["tau2"]
    doc = copy.deepcopy(seed)
    sims = doc["simulations"]
    msg = next(
        m for m in sims[0]["messages"] if m.get("role") == "assistant" and m.get("tool_calls")
    )
    msg["tool_calls"] = 5
    res = _check("tau2", _write(tmp_path, name, kind, doc), tmp_path / "hb.db")
    assert res.exit_code == 2, res.output
    assert ".tool_calls'" in res.output, res.output


# ``export otlp`` of a stored run whose recorded times or token counts OTLP cannot carry (a
# store written before imports refused them): the times count as unrecorded, the counts are
# sent as text, and the request is built and encoded.
@pytest.mark.parametrize(
    ("ts", "tokens"),
    [(-5.0, 2**70), (1e300, -(2**70)), (float("inf"), 10**30), (-1e-3, 2**64)],
)
def test_export_builds_spans_for_times_and_counts_out_of_range(
    tmp_path: Path, ts: float, tokens: int
) -> None:
    from hbeval.export._otlp import ExportSummary, TrialSource, build_trace_request
    from hbeval.export._send import _trials
    from hbeval.store import open_store
    from hbeval_core.events.model import Usage

    name, kind, seed = SEEDS["tau-bench"]
    db = tmp_path / "hb.db"
    assert _check("tau-bench", _write(tmp_path, name, kind, seed), db).exit_code == 0
    with open_store(str(db), read_only=True) as store:
        (run,) = store.list_runs()
        report = store.get_report(run.run_id)
        assert report is not None
        trial = _trials(report, "report")[0]
        events = list(store.iter_events(run.run_id, trial["trial_key"]))
    changed = []
    for e in events:
        update: dict[str, Any] = {"ts": ts}
        if e.kind == "model_end":
            update["usage"] = Usage.model_construct(input_tokens=tokens, output_tokens=tokens)
        changed.append(e.model_copy(update=update))
    summary = ExportSummary(run_id=run.run_id)
    request = build_trace_request(report, [TrialSource(trial, changed)], summary)
    assert request.SerializeToString()
    spans = request.resource_spans[0].scope_spans[0].spans
    assert summary.model_spans == 2 and summary.tool_spans == 1
    assert all(0 < s.start_time_unix_nano <= s.end_time_unix_nano < 2**63 for s in spans)
    sent = {a.key: a.value for s in spans for a in s.attributes if a.key.startswith("gen_ai.usage")}
    assert sent["gen_ai.usage.input_tokens"].string_value == str(tokens)
