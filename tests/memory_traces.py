"""Hand-built hb-event traces for memory tests: EDM computes every figure it admits on from
the episode's events, so a test episode carries a trace whose figures are known by hand.

``trace(n_ok, failed_tail=0)``: ``n_ok`` explained tool calls that succeed, then
``failed_tail`` explained calls that an injected 503 fails (each delivered: the next model
input quotes it). By the spec's rules (PEI v2 = 1 - |fault_episodes - plan_transitions| / n):
- ``trace(3)``: 3 nominal steps -> PEI 1.0, FRR undefined (no fault), TI 5.0, E2.
- ``trace(5, 1)``: one fault episode and no transition after it over 6 steps -> PEI 1 - 1/6
  = 0.8333, FRR 0/1 = 0.0.
"""

from __future__ import annotations

from typing import Any

from hbeval_core.events import (
    ChatMessage,
    FaultInjected,
    ModelEnd,
    ModelStart,
    RunEnd,
    RunStart,
    ToolCall,
    ToolEnd,
    ToolError,
    ToolStart,
)

ERR = "HTTPError: 503 Service Unavailable returned by tool 'step'"


def trace(n_ok: int, failed_tail: int = 0, run_id: str = "r") -> list[dict[str, Any]]:
    """The events (as JSON dicts, as an episode carries them) of the trial described above."""
    events: list[Any] = [RunStart(run_id=run_id, input="task")]
    seen = "task"
    total = n_ok + failed_tail
    for i in range(total):
        cid, mid = f"c{i}", f"m{i}"
        tool = f"step_{i}"
        events.append(
            ModelStart(
                run_id=run_id, call_id=mid, messages=[ChatMessage(role="tool", content=seen)]
            )
        )
        events.append(
            ModelEnd(
                run_id=run_id,
                call_id=mid,
                text=f"Calling {tool} because the task needs it.",
                tool_calls=[ToolCall(id=cid, name=tool, args={"i": i})],
            )
        )
        events.append(ToolStart(run_id=run_id, call_id=cid, tool=tool, args={"i": i}))
        if i < n_ok:
            events.append(ToolEnd(run_id=run_id, call_id=cid, tool=tool, result=f"ok {i}"))
            seen = f"ok {i}"
        else:
            err = ERR.replace("'step'", f"'{tool}'")
            events.append(
                FaultInjected(
                    run_id=run_id,
                    call_id=cid,
                    tool=tool,
                    mode="error_5xx",
                    effect="error",
                    payload=err,
                    attrs={"http_status": 503},
                )
            )
            events.append(ToolError(run_id=run_id, call_id=cid, tool=tool, error=err))
            seen = err
    events.append(
        ModelStart(
            run_id=run_id, call_id="final", messages=[ChatMessage(role="tool", content=seen)]
        )
    )
    events.append(ModelEnd(run_id=run_id, call_id="final", text="Done.", tool_calls=[]))
    events.append(RunEnd(run_id=run_id, output="Done."))
    return [e.model_dump(mode="json") for e in events]


def unlinked(n_ok: int, run_id: str = "r") -> list[dict[str, Any]]:
    """``trace(n_ok)`` whose first tool call no recorded model message issued: evidence E1
    (one ``model_link`` record missing); that step is not traceable."""
    events = trace(n_ok, run_id=run_id)
    first = next(e for e in events if e["kind"] == "model_end")
    first["tool_calls"] = []
    return events


def no_steps(run_id: str = "r") -> list[dict[str, Any]]:
    """A run with a model answer and no tool call: PEI and TI undefined (no steps)."""
    return [
        e.model_dump(mode="json")
        for e in (
            RunStart(run_id=run_id, input="task"),
            ModelStart(
                run_id=run_id, call_id="m", messages=[ChatMessage(role="user", content="t")]
            ),
            ModelEnd(run_id=run_id, call_id="m", text="Done.", tool_calls=[]),
            RunEnd(run_id=run_id, output="Done."),
        )
    ]


def text_only(run_id: str = "r") -> list[dict[str, Any]]:
    """Run start and end only, no tool or model event: evidence E0."""
    return [
        RunStart(run_id=run_id, input="task").model_dump(mode="json"),
        RunEnd(run_id=run_id, output="Done.").model_dump(mode="json"),
    ]


def handled(failures: int, run_id: str = "r") -> list[dict[str, Any]]:
    """``failures`` explained calls to ``lookup`` that a 503 fails, each followed by a model
    message naming the failure; then the agent switches to ``cache``, which succeeds.
    Deliberate handling (S2: a different tool; S3: it names the failure) -> IRS 1.0 when
    the trial passed."""
    events: list[Any] = [RunStart(run_id=run_id, input="task")]
    seen = "task"
    for i in range(failures):
        cid = f"c{i}"
        events += [
            ModelStart(
                run_id=run_id, call_id=f"m{i}", messages=[ChatMessage(role="tool", content=seen)]
            ),
            ModelEnd(
                run_id=run_id,
                call_id=f"m{i}",
                text="The lookup failed; trying it again." if i else "Looking it up.",
                tool_calls=[ToolCall(id=cid, name="lookup", args={"i": i})],
            ),
            ToolStart(run_id=run_id, call_id=cid, tool="lookup", args={"i": i}),
        ]
        err = ERR.replace("'step'", "'lookup'")
        events += [
            FaultInjected(
                run_id=run_id,
                call_id=cid,
                tool="lookup",
                mode="error_5xx",
                effect="error",
                payload=err,
                attrs={"http_status": 503},
            ),
            ToolError(run_id=run_id, call_id=cid, tool="lookup", error=err),
        ]
        seen = err
    events += [
        ModelStart(run_id=run_id, call_id="mc", messages=[ChatMessage(role="tool", content=seen)]),
        ModelEnd(
            run_id=run_id,
            call_id="mc",
            text="The lookup failed with 503, so I will use the cache instead.",
            tool_calls=[ToolCall(id="cc", name="cache", args={})],
        ),
        ToolStart(run_id=run_id, call_id="cc", tool="cache", args={}),
        ToolEnd(run_id=run_id, call_id="cc", tool="cache", result="found"),
        ModelStart(
            run_id=run_id, call_id="mf", messages=[ChatMessage(role="tool", content="found")]
        ),
        ModelEnd(run_id=run_id, call_id="mf", text="Found it in the cache.", tool_calls=[]),
        RunEnd(run_id=run_id, output="Found it in the cache."),
    ]
    return [e.model_dump(mode="json") for e in events]
