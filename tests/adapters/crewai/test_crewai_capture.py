"""Capture of CrewAI runs: model calls, tool calls and spans, the same on both tool paths."""

from __future__ import annotations

import os
from typing import Any

import pytest

from hbeval_core.contract import Task
from hbeval_core.events import (
    ModelEnd,
    ModelStart,
    RunEnd,
    RunStart,
    SpanEnd,
    SpanStart,
    ToolEnd,
    ToolStart,
)
from tests.adapters.crewai.test_crewai_fixtures import (
    ORIGINAL_HOME_STATE,
    ran_tools,
    scripted_crew,
    scripted_llm,
)

QUESTION = "Look up order A1, then add 2 and 3."
TASK = Task(id="two_tools", question=QUESTION)
PATHS = pytest.mark.parametrize("native", [False, True], ids=["react", "native"])


def _trial(crew: Any, **adapter_kwargs: Any) -> Any:
    from hbeval_crewai import CrewAIAdapter

    return CrewAIAdapter(**adapter_kwargs).run_trial(crew, TASK, None, None)


def _of(events: list[Any], cls: type) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


@PATHS
def test_model_starts_equal_the_scripted_model_calls(native: bool) -> None:
    crew = scripted_crew(native=native)
    result = _trial(crew)
    calls = scripted_llm(crew).calls
    assert len(calls) == 3
    assert len(_of(result.events, ModelStart)) == len(calls)
    assert len(_of(result.events, ModelEnd)) == len(calls)


@PATHS
def test_spans_nest_crew_task_agent_and_close(native: bool) -> None:
    result = _trial(scripted_crew(native=native))
    starts = {e.scope: e for e in _of(result.events, SpanStart)}
    assert set(starts) == {"crew", "task", "agent"}
    assert starts["task"].parent_id == starts["crew"].span_id
    assert starts["agent"].parent_id == starts["task"].span_id
    assert starts["agent"].name == "clerk"
    ends = _of(result.events, SpanEnd)
    assert {e.span_id for e in ends} == {e.span_id for e in starts.values()}
    assert all(e.status == "ok" for e in ends)
    for e in _of(result.events, ToolStart) + _of(result.events, ModelStart):
        assert e.parent_id == starts["agent"].span_id


def _meaning(events: list[Any]) -> list[tuple[Any, ...]]:
    """What a trace says, without ids, timings and path-specific attributes."""
    out: list[tuple[Any, ...]] = []
    for e in events:
        if isinstance(e, ModelEnd):
            out.append(
                (
                    "model_end",
                    e.text,
                    tuple((c.name, tuple(sorted(c.args.items()))) for c in e.tool_calls),
                )
            )
        elif isinstance(e, ToolStart):
            out.append(("tool_start", e.tool, tuple(sorted(e.args.items()))))
        elif isinstance(e, ToolEnd):
            out.append(("tool_end", e.tool, e.status, str(e.result)))
        else:
            out.append((e.kind,))
    return out


def test_both_tool_paths_give_traces_with_the_same_meaning() -> None:
    react = _trial(scripted_crew(native=False)).events
    native = _trial(scripted_crew(native=True)).events
    a, b = _meaning(react), _meaning(native)
    # The final answer's wording differs ("Thought: ... Final Answer: done" vs "done").
    assert [x for x in a if x[0] != "model_end"] == [x for x in b if x[0] != "model_end"]
    assert [x[2] for x in a if x[0] == "model_end"] == [x[2] for x in b if x[0] == "model_end"]
    for events in (react, native):
        # Every model input after a tool call reads its result as a tool message answering it.
        starts = _of(events, ModelStart)
        issued = [c.id for e in _of(events, ModelEnd) for c in e.tool_calls]
        answered = [m.tool_call_id for s in starts[1:] for m in s.messages if m.role == "tool"]
        assert answered == issued


def test_react_call_ids_are_made_up_and_native_ids_are_the_models() -> None:
    react = _trial(scripted_crew(native=False)).events
    native = _trial(scripted_crew(native=True)).events
    assert [e.call_id for e in _of(react, ToolStart)] == ["call-1", "call-2"]
    assert [e.call_id for e in _of(native, ToolStart)] == ["tc-0", "tc-1"]


def test_a_model_reply_that_never_explains_is_recorded_without_text() -> None:
    script = [("", "lookup", {"query": "order A1"}), ("done", None, {})]
    for native in (False, True):
        events = _trial(scripted_crew(native=native, script=script)).events
        first = _of(events, ModelEnd)[0]
        assert first.text is None and [c.name for c in first.tool_calls] == ["lookup"]


def test_user_hooks_keep_working_and_a_user_block_is_recorded() -> None:
    from crewai.hooks.dispatch import InterceptionPoint, register, unregister

    seen: list[str] = []

    def user_guard(ctx: Any) -> Any:
        seen.append(ctx.tool_name)
        return False if ctx.tool_name == "lookup" else None

    register(InterceptionPoint.PRE_TOOL_CALL, user_guard)
    try:
        crew = scripted_crew()
        result = _trial(crew)
    finally:
        unregister(InterceptionPoint.PRE_TOOL_CALL, user_guard)
    assert seen == ["lookup", "add"]
    assert ran_tools(crew) == ["add"]
    ends = _of(result.events, ToolEnd)
    assert [(e.tool, e.status) for e in ends] == [("lookup", "error"), ("add", "ok")]
    assert ends[0].attrs["blocked_by"] == "user_hook"
    assert [e.tool for e in _of(result.events, ToolStart)] == ["lookup", "add"]


def test_scoped_hooks_the_caller_had_still_fire_inside_a_capture() -> None:
    from crewai.hooks.dispatch import InterceptionPoint, register_scoped, scoped_hooks

    from hbeval_crewai import capture

    seen: list[str] = []
    with scoped_hooks():
        register_scoped(InterceptionPoint.POST_TOOL_CALL, lambda ctx: seen.append(ctx.tool_name))
        with capture(run_id="r") as rec:
            scripted_crew().kickoff(inputs={"question": QUESTION})
    assert seen == ["lookup", "add"]
    assert len(_of(rec.events, ToolEnd)) == 2


def test_instrument_records_every_kickoff_and_uninstrument_restores_everything() -> None:
    from crewai.hooks.dispatch import InterceptionPoint, get_hooks

    from hbeval_crewai import capture, instrument, is_instrumented, uninstrument

    crew = scripted_crew(native=True)
    llm = crew.agents[0].llm
    before = {p: get_hooks(p) for p in InterceptionPoint}
    rec = instrument()
    try:
        assert instrument() is rec and is_instrumented()
        crew.kickoff(inputs={"question": QUESTION})
        assert crew.agents[0].llm is llm  # unwrapped when the kickoff ended
        crew.kickoff(inputs={"question": QUESTION})
        # Inside a capture block the global hooks stand down: recorded once, by the block.
        with capture(run_id="scoped") as scoped:
            crew.kickoff(inputs={"question": QUESTION})
    finally:
        uninstrument()
        uninstrument()
    assert not is_instrumented()
    assert {p: get_hooks(p) for p in InterceptionPoint} == before
    assert crew.agents[0].llm is llm
    assert rec.run_ids == ["crewai-1", "crewai-2"]
    for run_id in rec.run_ids:
        events = rec.events_of(run_id)
        assert isinstance(events[0], RunStart) and isinstance(events[-1], RunEnd)
        assert len(_of(events, ModelStart)) == 3 and len(_of(events, ToolStart)) == 2
    assert {e.run_id for e in scoped.events} == {"scoped"}
    assert len(_of(scoped.events, ToolStart)) == 2


def test_custom_llm_is_proxied_only_during_the_run() -> None:
    from hbeval_crewai import RecordingLLM, capture

    crew = scripted_crew()
    llm = crew.agents[0].llm
    seen: list[Any] = []

    def spy(ctx: Any) -> None:
        seen.append(ctx.llm)

    from crewai.hooks.dispatch import InterceptionPoint, register_scoped, scoped_hooks

    with scoped_hooks(), capture(run_id="r"):
        register_scoped(InterceptionPoint.PRE_MODEL_CALL, spy)
        crew.kickoff(inputs={"question": QUESTION})
    assert seen and all(isinstance(x, RecordingLLM) and x.inner is llm for x in seen)
    assert crew.agents[0].llm is llm


def test_capture_keeps_crew_usage_metrics_of_the_inner_llm() -> None:
    crew = scripted_crew()
    _trial(crew)
    assert crew.usage_metrics is not None


def test_version_outside_the_range_is_refused_with_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hbeval_crewai import SUPPORTED, UnsupportedVersionError, _hooks, _version, check_supported

    assert SUPPORTED == ">=1.15,<2"
    assert check_supported("1.15.30") == "1.15.30"
    for bad in ("1.14.9", "2.0.0", "1.15.0rc1"):
        with pytest.raises(UnsupportedVersionError, match=r"crewai >=1\.15,<2"):
            check_supported(bad)
    monkeypatch.setattr(_version, "installed_version", lambda: "2.1.0")
    monkeypatch.setattr(_hooks._INSTRUMENTOR, "_checked", False)
    with pytest.raises(UnsupportedVersionError, match=r"found crewai 2\.1\.0"):
        _hooks.instrument()
    assert not _hooks.is_instrumented()
    result = _trial(scripted_crew())
    assert result.status == "error" and result.infra and "2.1.0" in (result.error or "")


def test_pyproject_extra_matches_supported() -> None:
    import pathlib

    import tomllib

    from hbeval_crewai import SUPPORTED

    root = pathlib.Path(__file__).resolve().parents[3]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert extras["crewai"] == [f"crewai{SUPPORTED}"]


def test_nothing_is_written_under_the_real_home_folder() -> None:
    from tests.adapters.crewai.test_crewai_fixtures import OFFLINE_ROOT

    assert os.environ["HOME"].startswith(str(OFFLINE_ROOT))
    assert os.environ["XDG_DATA_HOME"].startswith(str(OFFLINE_ROOT))
    _trial(scripted_crew())
    for path, existed in ORIGINAL_HOME_STATE.items():
        assert os.path.exists(path) == existed, path
