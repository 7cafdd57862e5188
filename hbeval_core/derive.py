"""Fold a stream of events into steps (derivation ``hb-derive/1``).

A **step** is one tool call's outcome (``tool_end`` or ``tool_error``, injected faults included),
or an explicit ``step`` event whose fields are taken verbatim (the reference-compatible path).

For a tool step:

* ``had_fault``: the call errored (``tool_error``, or ``tool_end`` with status ``error``) or a
  fault was injected into it (a ``fault_injected`` event with the same ``call_id``, which
  adapters emit before the call's end event).
* ``success``: the call returned without error and no fault emptied, corrupted, truncated or
  lost its result (effects in ``vocab.RESULT_SPOILING_EFFECTS``).
* ``replanned``: a ``replan`` event since the previous step, or: the previous step failed, a
  model call happened after it, and this call differs from the failed one in tool or arguments.
* ``traceable``: the model reply that issued the call (a ``model_end`` whose ``tool_calls``
  carries this ``call_id``) states a reason, as non-empty text or reasoning content. A call no
  reply claims is not traceable. A scripted agent that never explains itself scores low TI.
* ``recovered_intentionally`` / ``handled_deliberately``: left undefined (``None``). Deliberate
  handling is judged per trial by scoring (signals S1-S6), not per step from the trace.
* ``action``: ``"<tool>(<canonical JSON of the arguments>)"``, so an identical retry repeats an
  action and a changed call is a new one.

Changing any of these rules bumps ``vocab.DERIVE_VERSION``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .vocab import (
    DERIVE_VERSION,
    FAULT_INJECTED,
    MODEL_END,
    MODEL_START,
    REPLAN,
    RESULT_SPOILING_EFFECTS,
    RUN_END,
    STEP,
    TOOL_END,
    TOOL_ERROR,
    TOOL_START,
)

if TYPE_CHECKING:
    from .events import EventBase

__all__ = ["DERIVE_VERSION", "Deriver", "StepRecord", "action_label", "derive_steps"]


@dataclass(slots=True)
class StepRecord:
    """One step, as the live metrics see it."""

    index: int
    action: str = ""
    success: bool = True
    had_fault: bool = False
    recovered_intentionally: bool | None = None
    traceable: bool = True
    replanned: bool = False
    handled_deliberately: bool | None = None
    run_id: str | None = None
    tool: str | None = None
    call_id: str | None = None
    fault_modes: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        """The record_step keyword arguments of this step."""
        return {
            "action": self.action,
            "success": self.success,
            "had_fault": self.had_fault,
            "recovered_intentionally": self.recovered_intentionally,
            "traceable": self.traceable,
            "replanned": self.replanned,
            "handled_deliberately": self.handled_deliberately,
        }


def action_label(tool: str, args: Any) -> str:
    """The action string of a tool call: tool name plus canonical JSON of its arguments."""
    try:
        canon = json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        canon = repr(args)
    return f"{tool}({canon})"


class _RunState:
    """Derivation state of one run; per-call entries are dropped once the call ends."""

    __slots__ = (
        "args",
        "faults",
        "last_failed_action",
        "model_since_failure",
        "pending_replan",
        "reasons",
    )

    def __init__(self) -> None:
        self.reasons: dict[str, bool] = {}
        self.faults: dict[str, list[tuple[str, str]]] = {}
        self.args: dict[str, Any] = {}
        self.pending_replan = False
        self.last_failed_action: str | None = None
        self.model_since_failure = False


class Deriver:
    """Streaming hb-derive/1: feed events one at a time, get at most one step back per event.

    Events of several runs may interleave; state is kept per run id and per open call, so
    memory stays bounded by the number of calls in flight, not by the length of the trace.
    """

    version = DERIVE_VERSION

    def __init__(self) -> None:
        self._runs: dict[str, _RunState] = {}
        self._index = 0

    @property
    def steps_derived(self) -> int:
        """How many steps this deriver has produced."""
        return self._index

    def _state(self, run_id: str) -> _RunState:
        st = self._runs.get(run_id)
        if st is None:
            st = self._runs[run_id] = _RunState()
        return st

    def feed(self, event: EventBase) -> StepRecord | None:
        """Consume one event; return the step it completes, if any."""
        kind: str = event.kind  # type: ignore[attr-defined]
        if kind == TOOL_START:
            self._state(event.run_id).args[event.call_id] = event.args  # type: ignore[attr-defined]
            return None
        if kind == TOOL_END or kind == TOOL_ERROR:
            return self._tool_step(event, kind)
        if kind == MODEL_END:
            st = self._state(event.run_id)
            st.model_since_failure = True
            has_reason = bool((event.text or "").strip() or (event.reasoning or "").strip())  # type: ignore[attr-defined]
            for call in event.tool_calls:  # type: ignore[attr-defined]
                st.reasons[call.id] = has_reason
                st.args.setdefault(call.id, call.args)
            return None
        if kind == MODEL_START:
            self._state(event.run_id).model_since_failure = True
            return None
        if kind == FAULT_INJECTED:
            call_id = event.call_id  # type: ignore[attr-defined]
            if call_id is not None:
                self._state(event.run_id).faults.setdefault(call_id, []).append(
                    (event.mode, event.effect)  # type: ignore[attr-defined]
                )
            return None
        if kind == REPLAN:
            self._state(event.run_id).pending_replan = True
            return None
        if kind == STEP:
            return self._explicit_step(event)
        if kind == RUN_END:
            self._runs.pop(event.run_id, None)
        return None

    def _explicit_step(self, ev: Any) -> StepRecord:
        step = StepRecord(
            index=self._index,
            action=ev.action,
            success=ev.success,
            had_fault=ev.had_fault,
            recovered_intentionally=ev.recovered_intentionally,
            traceable=ev.traceable,
            replanned=ev.replanned,
            handled_deliberately=ev.handled_deliberately,
            run_id=ev.run_id,
            metadata=dict(ev.metadata),
        )
        self._index += 1
        return step

    def _tool_step(self, ev: Any, kind: str) -> StepRecord:
        st = self._state(ev.run_id)
        call_id: str = ev.call_id
        tool: str = ev.tool
        faults = st.faults.pop(call_id, None)
        args = st.args.pop(call_id, None)
        traceable = st.reasons.pop(call_id, False)
        errored = kind == TOOL_ERROR or ev.status == "error"
        spoiled = faults is not None and any(eff in RESULT_SPOILING_EFFECTS for _, eff in faults)
        success = not errored and not spoiled
        action = action_label(tool, args if args is not None else {})

        replanned = st.pending_replan
        if (
            not replanned
            and st.last_failed_action is not None
            and st.model_since_failure
            and action != st.last_failed_action
        ):
            replanned = True
        st.pending_replan = False
        if success:
            st.last_failed_action = None
        else:
            st.last_failed_action = action
        st.model_since_failure = False

        step = StepRecord(
            index=self._index,
            action=action,
            success=success,
            had_fault=errored or faults is not None,
            traceable=traceable,
            replanned=replanned,
            run_id=ev.run_id,
            tool=tool,
            call_id=call_id,
            fault_modes=tuple(m for m, _ in faults) if faults else (),
        )
        self._index += 1
        return step


def derive_steps(events: Iterable[EventBase]) -> Iterator[StepRecord]:
    """Derive the steps of an event stream, in order."""
    deriver = Deriver()
    feed = deriver.feed
    for ev in events:
        step = feed(ev)
        if step is not None:
            yield step
