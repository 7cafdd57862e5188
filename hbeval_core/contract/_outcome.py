"""What a task's verifier reads: one ``Outcome`` per trial, the same shape on every framework.

``verify(outcome, trace) -> bool``. The ``Outcome`` holds the agent's final answer as text
(``final_text``), the framework's final state (``state``), the conversation (``messages``), the
tool calls the trace recorded (``tool_calls``), how the run ended (``status``, ``error``) and the
framework's own result object (``raw``).

A verifier receives the ``Outcome`` when its first parameter is annotated ``Outcome``, or is
named ``outcome`` and not annotated with another type (``Any`` counts as none). Any other verifier receives the object earlier versions passed, unchanged: the graph
state dict (LangGraph), the ``CrewOutput`` (CrewAI), the ``{response, stop_reason, messages}``
dict (AutoGen), or the agent's return value (plain). An ``Outcome`` also answers key and
attribute lookups it does not define itself from ``state``, so ``outcome["messages"]`` on a graph
state works too.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..vocab import FAULT_INJECTED, TOOL_END, TOOL_ERROR, TOOL_START

__all__ = [
    "Message",
    "Outcome",
    "ToolCall",
    "outcome_of",
    "tool_calls_of",
    "verifier_input",
    "wants_outcome",
]


@dataclass(frozen=True)
class Message:
    """One message of the conversation: ``role`` is user, assistant, tool or system."""

    role: str
    content: str
    name: str | None = None
    """Who wrote it, when the framework names it (an agent's name, a tool's name)."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call the trace recorded, in call order.

    ``ok`` is true when the call returned without error; ``fault`` names the fault mode hbeval
    injected on it (None when none was).
    """

    name: str
    args: dict[str, Any]
    call_id: str
    result: Any = None
    error: str | None = None
    ok: bool = False
    fault: str | None = None


@dataclass(frozen=True)
class Outcome:
    """A trial's result as a verifier reads it, whatever the framework."""

    final_text: str
    """The agent's final answer ("" when it gave none)."""
    state: Any
    """The framework's final state (graph state, ``CrewOutput``, AutoGen dict, return value)."""
    messages: tuple[Message, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    error: str | None = None
    """The error text when the run did not end normally, else None."""
    status: str = "ok"
    """ok, error, timeout, halted, cancelled or skipped (as ``TrialResult.status``)."""
    raw: Any = None
    """The framework's own result: graph state, ``CrewOutput`` or flow result, AutoGen
    ``TaskResult``, or the plain agent's return value."""
    framework: str | None = field(default=None, compare=False)

    @property
    def ok(self) -> bool:
        """Whether the run ended normally (status ok)."""
        return self.status == "ok"

    def called(self, name: str) -> list[ToolCall]:
        """The calls of tool ``name`` that returned without error, in order."""
        return [c for c in self.tool_calls if c.name == name and c.ok]

    # -- lookups the Outcome does not define go to ``state``, so verifiers written for the
    # framework's own object keep working when their parameter is called ``outcome``.
    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            state = object.__getattribute__(self, "state")
        except AttributeError:
            raise AttributeError(name) from None
        try:
            return getattr(state, name)
        except AttributeError:
            raise AttributeError(
                f"'Outcome' has no attribute {name!r} (nor has its state, a "
                f"{type(state).__name__}); use final_text, state, messages, tool_calls, error, "
                "status or raw"
            ) from None

    def __getitem__(self, key: Any) -> Any:
        return self.state[key]

    def __contains__(self, item: Any) -> bool:
        return item in self.state

    def get(self, key: Any, default: Any = None) -> Any:
        """``state.get(key, default)`` when the state is a mapping, else ``default``."""
        if isinstance(self.state, Mapping):
            return self.state.get(key, default)
        return default


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def tool_calls_of(events: Sequence[Any]) -> tuple[ToolCall, ...]:
    """The tool calls of a trace in start order, each with its result, error and fault."""
    starts: list[Any] = []
    ends: dict[str, Any] = {}
    faults: dict[str, str] = {}
    for e in events:
        kind = _get(e, "kind")
        if kind == TOOL_START:
            starts.append(e)
        elif kind in (TOOL_END, TOOL_ERROR):
            ends.setdefault(str(_get(e, "call_id")), e)
        elif kind == FAULT_INJECTED and _get(e, "call_id") is not None:
            faults.setdefault(str(_get(e, "call_id")), str(_get(e, "mode")))
    calls = []
    for s in starts:
        cid = str(_get(s, "call_id"))
        end = ends.get(cid)
        end_kind = _get(end, "kind") if end is not None else None
        errored = end_kind == TOOL_ERROR or (
            end_kind == TOOL_END and _get(end, "status") == "error"
        )
        error = None
        if end_kind == TOOL_ERROR:
            error = str(_get(end, "error"))
        elif errored:
            error = str(_get(end, "result"))
        calls.append(
            ToolCall(
                name=str(_get(s, "tool")),
                args=dict(_get(s, "args") or {}),
                call_id=cid,
                result=_get(end, "result") if end_kind == TOOL_END else None,
                error=error,
                ok=end is not None and not errored,
                fault=faults.get(cid),
            )
        )
    return tuple(calls)


def outcome_of(result: Any, *, framework: str | None = None) -> Outcome:
    """The ``Outcome`` of a ``TrialResult``: what its adapter recorded, normalised."""
    state = result.final_state
    text = result.response_text
    if text is None and isinstance(state, str):
        text = state
    raw = getattr(result, "raw", None)
    messages = getattr(result, "messages", None) or ()
    return Outcome(
        final_text=text if isinstance(text, str) else "",
        state=state,
        messages=tuple(messages),
        tool_calls=tool_calls_of(result.events),
        error=result.error,
        status=result.status,
        raw=state if raw is None else raw,
        framework=framework,
    )


def wants_outcome(verify: Callable[..., Any]) -> bool:
    """Whether ``verify`` takes an ``Outcome``: its first parameter is annotated ``Outcome``, or is
    named ``outcome`` with no other annotation than ``Any``."""
    try:
        sig = inspect.signature(verify)
    except (TypeError, ValueError):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = [p for p in sig.parameters.values() if p.kind in positional]
    if not params:
        return False
    first = params[0]
    annotation = first.annotation
    if isinstance(annotation, str):
        annotation = annotation.rsplit(".", 1)[-1].strip("'\" ")
    if annotation is Outcome or annotation == "Outcome":
        return True
    if annotation in (inspect.Parameter.empty, Any, "Any"):
        return first.name == "outcome"
    return False


def verifier_input(verify: Callable[..., Any], result: Any) -> Any:
    """What ``verify`` receives for ``result``: the ``Outcome``, or the legacy final state."""
    return outcome_of(result) if wants_outcome(verify) else result.final_state
