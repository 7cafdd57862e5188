"""Apply a fault decision across CrewAI's pre- and post-tool hooks.

CrewAI's hooks cannot wrap a tool call the way ``FaultInjector.run_call`` expects (a pre hook may
block the call, a post hook may replace its result; neither holds the call itself). So the
adapter asks the injector only to *decide* (``FaultInjector.decide`` in ``PRE_TOOL_CALL``, which
also counts the attempt) and applies the decision here:

* modes that answer instead of the tool (timeout, error_5xx, connection_refused, intermittent,
  crash) block the real call in the pre hook; the post hook replaces CrewAI's "blocked" text
  with the error text;
* modes that spoil a result (empty_response, malformed, truncated, prompt_injection,
  lost_result) let CrewAI run the tool, then the post hook replaces what the agent reads;
* ``latency`` waits on the injector's clock in the pre hook and changes nothing else.

Blocked calls are not cached by CrewAI, so a retry meets the tool (and the plan) again, as it
would after a real outage. ``crash`` cannot end a CrewAI run: CrewAI turns any exception a tool
raises into text the model reads, so the agent reads the crash as it would a real one.

Every applied fault yields one ``FaultInjected`` receipt with the same fields, payloads and error
texts as ``FaultInjector.run_call`` would give (a parity test holds the two together), appended
to the injector's ``events`` as ``run_call`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from hbeval_core.events import FaultInjected
from hbeval_core.faults.runtime import (
    DEFAULT_HTTP_STATUS,
    HTTP_REASONS,
    MODE_EFFECTS,
    MODE_OBSERVED,
    FaultDecision,
    FaultInjector,
    empty_value,
    malform,
    planted_instruction,
    planted_values,
    render_text,
    truncate,
)
from hbeval_core.vocab import (
    COMMIT_THEN_TIMEOUT,
    CONNECTION_REFUSED,
    CRASH,
    EMPTY_RESPONSE,
    ERROR_5XX,
    INTERMITTENT,
    LATENCY,
    LOST_RESULT,
    MALFORMED,
    PROMPT_INJECTION,
    TIMEOUT,
    TRUNCATED,
)

__all__ = ["BLOCKING_MODES", "Applied", "apply_after_failure", "apply_result", "apply_without_call"]

BLOCKING_MODES: Final = frozenset({TIMEOUT, ERROR_5XX, CONNECTION_REFUSED, INTERMITTENT, CRASH})
"""Modes whose real call never runs: the pre hook blocks it."""

_APPLIED: Final = "applied"
_FAILED: Final = "failed"
_EXCEPTION: Final = "exception"


@dataclass(frozen=True)
class Applied:
    """What the agent reads after a fault, and how the call's end is recorded."""

    text: str | None
    """Replacement for what the agent reads; None keeps CrewAI's own text."""
    result: Any
    """The call's result for the ``tool_end`` event (when ``error`` is None)."""
    error: str | None
    error_type: str | None
    fault: FaultInjected


def _error_of(d: FaultDecision) -> tuple[str, str, int | None]:
    """Error text, exception-style type and HTTP status of a mode that answers for the tool."""
    tool = d.tool
    if d.mode == TIMEOUT:
        return (
            f"TimeoutError: tool '{tool}' timed out after {d.spec.after_ms} ms",
            "TimeoutError",
            None,
        )
    if d.mode == ERROR_5XX:
        status = d.spec.http_status or DEFAULT_HTTP_STATUS
        text = f"HTTPError: {status} {HTTP_REASONS[status]} returned by tool '{tool}'"
        return text, "HTTPError", status
    if d.mode == CONNECTION_REFUSED:
        text = f"ConnectionRefusedError: [Errno 111] Connection refused by tool '{tool}'"
        return text, "ConnectionRefusedError", None
    if d.mode == INTERMITTENT:
        text = f"ConnectionResetError: [Errno 104] Connection reset by tool '{tool}'"
        return text, "ConnectionResetError", None
    if d.mode == LOST_RESULT:
        return f"TimeoutError: no response received from tool '{tool}'", "TimeoutError", None
    if d.mode == COMMIT_THEN_TIMEOUT:
        text = f"TimeoutError: tool '{tool}' timed out after {d.spec.after_ms} ms"
        return text, "TimeoutError", None
    return f"InjectedCrash: tool '{tool}' crashed", "InjectedCrash", None


def _record(
    injector: FaultInjector,
    d: FaultDecision,
    *,
    payload: str | None,
    injected: str = _APPLIED,
    observed: str | None = None,
    http_status: int | None = None,
    note: dict[str, Any] | None = None,
) -> FaultInjected:
    attrs: dict[str, Any] = {}
    if d.stage_index is not None:
        attrs["stage_index"] = d.stage_index
    if d.draw is not None:
        attrs["draw"] = d.draw
    if http_status is not None:
        attrs["http_status"] = http_status
    if note:
        attrs.update(note)
    event = FaultInjected(
        run_id=injector.run_id,
        ts=injector.clock.now(),
        call_id=d.call_id,
        tool=d.tool,
        mode=d.mode,  # type: ignore[arg-type]
        effect=MODE_EFFECTS[d.mode],  # type: ignore[arg-type]
        payload=payload,
        intended=d.spec.to_dict(),
        injected=injected,  # type: ignore[arg-type]
        observed=observed or MODE_OBSERVED[d.mode],
        plan_id=d.plan_id,
        fault_id=d.fault_id,
        attempt=d.attempt,
        forbidden_tool=injector.injection_target if d.mode == PROMPT_INJECTION else None,
        attrs=attrs,
    )
    injector.events.append(event)
    return event


def apply_without_call(injector: FaultInjector, d: FaultDecision) -> Applied:
    """A blocking mode: the agent reads the error text; the real tool never ran."""
    text, error_type, status = _error_of(d)
    fault = _record(injector, d, payload=text, http_status=status)
    return Applied(text=text, result=None, error=text, error_type=error_type, fault=fault)


def apply_result(injector: FaultInjector, d: FaultDecision, result: Any) -> Applied:
    """A mode that lets the tool run: spoil, extend or lose ``result`` (the tool's raw value)."""
    mode = d.mode
    if mode == LATENCY:
        fault = _record(injector, d, payload=None)
        return Applied(text=None, result=result, error=None, error_type=None, fault=fault)
    if mode in (LOST_RESULT, COMMIT_THEN_TIMEOUT):
        text, error_type, _ = _error_of(d)
        fault = _record(injector, d, payload=text)
        return Applied(text=text, result=None, error=text, error_type=error_type, fault=fault)
    note: dict[str, Any] | None = None
    if mode == EMPTY_RESPONSE:
        value: Any = empty_value(d.spec.empty_kind)
        payload = render_text(value)
    elif mode == MALFORMED:
        value = malform(result, d.spec.malformed_kind)
        payload = render_text(value)
        planted = planted_values(result, value)  # what the answer must not repeat unnoticed
        note = {"planted": planted} if planted else None
    elif mode == TRUNCATED:
        value = payload = truncate(result)
    elif mode == PROMPT_INJECTION:
        custom = d.spec.text
        payload = (
            planted_instruction(injector.injection_target)
            if custom is None
            else custom.replace("{forbidden_tool}", injector.injection_target)
        )
        value = f"{render_text(result)}\n\n{payload}"
        note = {"planted": [payload]}
    else:  # a blocking mode reached here only if CrewAI ran the tool anyway
        return apply_without_call(injector, d)
    fault = _record(injector, d, payload=payload, note=note)
    return Applied(text=render_text(value), result=value, error=None, error_type=None, fault=fault)


def apply_after_failure(injector: FaultInjector, d: FaultDecision, error_type: str) -> Applied:
    """The real tool failed on its own: lost_result still loses it; other modes had nothing to alter.

    As ``run_call`` does, latency counts as applied and the rest as failed injections; the agent
    reads the tool's own error (``text`` None keeps CrewAI's text).
    """
    note = {"real_call_error": error_type}
    if d.mode in (LOST_RESULT, COMMIT_THEN_TIMEOUT):
        text, etype, _ = _error_of(d)
        fault = _record(injector, d, payload=text, note=note)
        return Applied(text=text, result=None, error=text, error_type=etype, fault=fault)
    injected = _APPLIED if d.mode == LATENCY else _FAILED
    fault = _record(injector, d, payload=None, injected=injected, observed=_EXCEPTION, note=note)
    return Applied(text=None, result=None, error=None, error_type=error_type, fault=fault)
