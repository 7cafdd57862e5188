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

__all__ = [
    "DERIVE_VERSION",
    "Deriver",
    "StepRecord",
    "action_label",
    "canonical_args",
    "derive_steps",
]


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


_encode_str = json.encoder.encode_basestring_ascii
_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)  # untyped in typeshed
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
_BIG = 10**15  # ints below this print the same through repr and json, whatever the int limits


def canonical_args(args: Any) -> str:
    """Arguments as canonical JSON (sorted keys), so two calls compare by content.

    Exactly ``json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)`` (non-ASCII
    escaped), or ``repr(args)`` when that fails. It runs once per tool step, so the commonest
    shapes skip the encoder's setup: no arguments, and one text or integer argument, are
    spelled out with the encoder's own string escaping; anything else goes through the C
    encoder built exactly as ``json.dumps`` builds it.
    """
    if args.__class__ is dict and len(args) < 2:
        if not args:
            return "{}"
        [(key, value)] = args.items()
        if key.__class__ is str:
            cls = value.__class__
            if cls is str:
                return f"{{{_encode_str(key)}:{_encode_str(value)}}}"
            if cls is int and -_BIG < value < _BIG:
                return f"{{{_encode_str(key)}:{value!r}}}"
    try:
        if _make_encoder is None:  # pragma: no cover - CPython always has the C encoder
            return _CANONICAL.encode(args)
        # What JSONEncoder.encode does for one object: a fresh encoder (and circular-reference
        # memo) per call, so concurrent callers share nothing.
        return "".join(
            _make_encoder({}, str, _encode_str, None, ":", ",", True, False, True)(args, 0)
        )
    except (TypeError, ValueError):
        return repr(args)


def action_label(tool: str, args: Any) -> str:
    """The action string of a tool call: tool name plus canonical JSON of its arguments."""
    return f"{tool}({canonical_args(args)})"


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
        # The hot path of scoring a trace: the run's state is looked up inline.
        ev: Any = event
        kind: str = ev.kind
        if kind == TOOL_START:
            (self._runs.get(ev.run_id) or self._state(ev.run_id)).args[ev.call_id] = ev.args
            return None
        if kind == TOOL_END or kind == TOOL_ERROR:
            return self._tool_step(ev, kind)
        if kind == MODEL_END:
            st = self._runs.get(ev.run_id) or self._state(ev.run_id)
            st.model_since_failure = True
            calls = ev.tool_calls
            if calls:
                text, reasoning = ev.text, ev.reasoning
                has_reason = bool((text and text.strip()) or (reasoning and reasoning.strip()))
                reasons, args = st.reasons, st.args
                for call in calls:
                    reasons[call.id] = has_reason
                    args.setdefault(call.id, call.args)
            return None
        if kind == MODEL_START:
            (self._runs.get(ev.run_id) or self._state(ev.run_id)).model_since_failure = True
            return None
        if kind == FAULT_INJECTED:
            call_id = ev.call_id
            if call_id is not None:
                self._state(ev.run_id).faults.setdefault(call_id, []).append((ev.mode, ev.effect))
            return None
        if kind == REPLAN:
            self._state(ev.run_id).pending_replan = True
            return None
        if kind == STEP:
            return self._explicit_step(ev)
        if kind == RUN_END:
            self._runs.pop(ev.run_id, None)
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
        run_id: str = ev.run_id
        st = self._runs.get(run_id) or self._state(run_id)
        call_id: str = ev.call_id
        tool: str = ev.tool
        faults = st.faults.pop(call_id, None)
        args = st.args.pop(call_id, None)
        traceable = st.reasons.pop(call_id, False)
        errored = kind == TOOL_ERROR or ev.status == "error"
        if faults is None:
            success = not errored
            had_fault = errored
            modes: tuple[str, ...] = ()
        else:
            success = not errored and not any(eff in RESULT_SPOILING_EFFECTS for _, eff in faults)
            had_fault = True
            modes = tuple(m for m, _ in faults)
        action = f"{tool}({canonical_args(args if args is not None else {})})"

        replanned = st.pending_replan
        last_failed = st.last_failed_action
        if (
            not replanned
            and last_failed is not None
            and st.model_since_failure
            and action != last_failed
        ):
            replanned = True
        st.pending_replan = False
        st.last_failed_action = None if success else action
        st.model_since_failure = False

        index = self._index
        self._index = index + 1
        return StepRecord(
            index,
            action,
            success,
            had_fault,
            None,
            traceable,
            replanned,
            None,
            run_id,
            tool,
            call_id,
            modes,
            {},
        )


def derive_steps(events: Iterable[EventBase]) -> Iterator[StepRecord]:
    """Derive the steps of an event stream, in order."""
    deriver = Deriver()
    feed = deriver.feed
    for ev in events:
        step = feed(ev)
        if step is not None:
            yield step
