"""Recorded tool results served back to a candidate agent, in the order they were recorded.

``recorded_calls(events)`` reads a trial's tool calls (name, arguments, and what came back: a
result, an error, or a crash). ``ReplayInjector`` stands where a ``FaultInjector`` stands at
every adapter's tool boundary (``run_call`` / ``arun_call``): it never runs the real tool. The
n-th call the candidate makes to a tool receives the n-th recorded outcome of that tool; a call
with no recorded outcome left is **unexpected**: it is logged as a divergence and the agent
receives a tool error saying so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hbeval_core.faults.runtime import BeforeCall

UNEXPECTED_ERROR_TYPE = "ReplayDivergence"


@dataclass(frozen=True)
class _ReplayPlan:
    """Marks an injector as active; a replay has no fault of its own."""

    id: str = "replay"
    seed: int = 0
    faults: tuple[Any, ...] = ()


REPLAY_PLAN = _ReplayPlan()


@dataclass
class RecordedCall:
    """One tool call of the recording and what the agent received."""

    index: int
    tool: str
    args: dict[str, Any]
    result: Any = None
    error: str | None = None
    error_type: str | None = None
    crash: Any = None
    """The recorded ``fault_injected`` event when a crash fault cut the run at this call."""
    answered: bool = False


def recorded_calls(events: Iterable[Any]) -> list[RecordedCall]:
    """The tool calls of one trial's events, in the order they started."""
    calls: list[RecordedCall] = []
    by_id: dict[str, RecordedCall] = {}
    faults: dict[str, Any] = {}
    for e in events:
        kind = getattr(e, "kind", None)
        if kind == "tool_start":
            c = RecordedCall(len(calls), e.tool, dict(e.args or {}))
            calls.append(c)
            by_id[e.call_id] = c
        elif kind == "fault_injected" and e.call_id is not None:
            faults[e.call_id] = e
        elif kind == "tool_end" and e.call_id in by_id:
            c = by_id[e.call_id]
            c.answered = True
            if e.status == "error":
                c.error, c.error_type = str(e.result), "ToolError"
            else:
                c.result = e.result
        elif kind == "tool_error" and e.call_id in by_id:
            c = by_id[e.call_id]
            c.answered = True
            c.error, c.error_type = e.error, e.error_type
    for call_id, c in by_id.items():
        fault = faults.get(call_id)
        if not c.answered and fault is not None and fault.mode == "crash":
            c.crash = fault
    return calls


@dataclass
class ServedCall:
    """One call the candidate made, and which recorded call answered it (None: unexpected)."""

    index: int
    tool: str
    args: dict[str, Any]
    recorded: int | None


@dataclass
class ReplayInjector:
    """Answers every tool call from the recording; the real tool never runs."""

    calls: list[RecordedCall]
    forbidden_tool: str | None = None
    run_id: str = ""
    clock: Any = None
    plan: Any = field(default_factory=lambda: REPLAY_PLAN)
    """Not None, so adapters that skip an injector without a plan still route calls here."""
    enabled: bool = True
    events: list[Any] = field(default_factory=list)
    """Fault receipts (none: a replay injects nothing new)."""
    served: list[ServedCall] = field(default_factory=list)
    _next: dict[str, int] = field(default_factory=dict)

    @property
    def injection_target(self) -> str:
        """The forbidden tool of the task (kept for adapters that ask)."""
        return self.forbidden_tool or ""

    @property
    def unexpected(self) -> list[ServedCall]:
        """Calls the recording had no result for."""
        return [s for s in self.served if s.recorded is None]

    def decide(self, tool: str, args: dict[str, Any], call_id: str) -> None:
        """No fault is decided in a replay."""
        del tool, args, call_id

    def _take(self, tool: str, args: dict[str, Any]) -> RecordedCall | None:
        queue = [c for c in self.calls if c.tool == tool]
        n = self._next.get(tool, 0)
        self._next[tool] = n + 1
        found = queue[n] if n < len(queue) else None
        self.served.append(
            ServedCall(len(self.served), tool, dict(args), None if found is None else found.index)
        )
        return found

    def _outcome(
        self, tool: str, args: dict[str, Any], call_id: str, before_call: Any = None
    ) -> Any:
        from hbeval_core.faults.runtime import CallOutcome, InjectedCrash

        rec = self._take(tool, args)
        if before_call is not None:
            # As ``FaultInjector.run_call`` does: the real tool will not run, and a recorded
            # crash's receipt is known before the call.
            before_call(True, rec.crash if rec is not None else None)
        if rec is None:
            n = self._next[tool]
            text = (
                f"{UNEXPECTED_ERROR_TYPE}: the recording has no result for call {n} of "
                f"tool {tool!r}; no real tool runs in a replay"
            )
            return CallOutcome(None, text, UNEXPECTED_ERROR_TYPE, False, None)
        if rec.crash is not None:
            raise InjectedCrash(
                f"replayed crash at {tool!r}", tool=tool, call_id=call_id, fault=rec.crash
            )
        if rec.error is not None:
            return CallOutcome(None, rec.error, rec.error_type, False, None)
        return CallOutcome(rec.result, None, None, False, None)

    def run_call(
        self,
        tool: str,
        args: dict[str, Any],
        call_id: str,
        real_call: Callable[[], Any],
        *,
        before_call: BeforeCall | None = None,
    ) -> Any:
        """The recorded outcome of this call; ``real_call`` is never called."""
        del real_call
        return self._outcome(tool, args, call_id, before_call)

    async def arun_call(
        self,
        tool: str,
        args: dict[str, Any],
        call_id: str,
        real_call: Callable[[], Awaitable[Any]],
        *,
        before_call: BeforeCall | None = None,
    ) -> Any:
        """Async twin of ``run_call``."""
        del real_call
        return self._outcome(tool, args, call_id, before_call)
