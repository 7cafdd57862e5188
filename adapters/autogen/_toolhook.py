"""Faults for every AutoGen tool run, whoever calls it: one class-level hook on ``BaseTool.run_json``.

``AssistantAgent`` turns already pass each tool call through ``HBEvalWorkbench``. Agents written
by hand (a ``BaseChatAgent`` whose own loop calls ``await tool.run_json(args, token,
call_id=...)``, or its own ``StaticWorkbench(...).call_tool(...)``) never meet that wrapper, so
the hook sits where every ``FunctionTool`` and every ``StaticWorkbench`` call ends:
``autogen_core.tools.BaseTool.run_json``.

Pure delegation unless the current context has an injector with something to inject and no
outer boundary handles the call (``hbeval_core.faults.boundary``): a call through
``HBEvalWorkbench`` is injected once, by the workbench. When it injects, an error mode raises
``ToolCallError`` carrying the error text (a workbench turns it into an error ``ToolResult``
the model reads, as it would a real failure); a result-altering mode returns the spoiled value;
``crash`` raises ``InjectedCrash``. The call and its receipt go to the run's recorder.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from hbeval_core.events import FaultInjected, ToolEnd, ToolError, ToolStart
from hbeval_core.faults.boundary import (
    CallReport,
    ToolCallError,
    acall_through,
    active_injector,
    current_reporter,
    next_call_id,
)
from hbeval_core.faults.runtime import InjectedCrash

from . import _convert
from ._keys import ATTR_SYNTHETIC
from ._recorder import ACTIVE_RECORDER, RunRecorder

__all__ = [
    "install_tool_hook",
    "is_tool_hook_installed",
    "recorder_reporter",
    "uninstall_tool_hook",
]

_lock = threading.Lock()
_original: list[Any] = []


def is_tool_hook_installed() -> bool:
    """Whether ``BaseTool.run_json`` is hooked."""
    return bool(_original)


def install_tool_hook() -> None:
    """Hook ``autogen_core.tools.BaseTool.run_json`` (once per process; idempotent)."""
    if _original:
        return
    from autogen_core.tools import BaseTool

    with _lock:
        if _original:
            return
        original = BaseTool.__dict__["run_json"]
        _hooked_run_json.__wrapped__ = original  # type: ignore[attr-defined]
        BaseTool.run_json = _hooked_run_json  # type: ignore[method-assign]
        _original.append(original)


def uninstall_tool_hook() -> None:
    """Put the original ``BaseTool.run_json`` back. Idempotent."""
    from autogen_core.tools import BaseTool

    with _lock:
        if not _original:
            return
        BaseTool.run_json = _original.pop()  # type: ignore[method-assign]


class _RecorderReporter:
    """A ``CallReporter`` writing each reported call into a run's trace: its start (with the
    fault's receipt when known in advance) before the tool runs, the rest after."""

    def __init__(self, rec: RunRecorder) -> None:
        self.rec = rec

    def start(self, r: CallReport) -> tuple[FaultInjected | None]:
        """Record ``tool_start`` (and the known receipt); returns the receipt it recorded."""
        rec = self.rec
        rec.reported_calls.add(r.call_id)
        rec.emit(
            ToolStart,
            call_id=r.call_id,
            tool=r.tool,
            args=_convert.jsonable(dict(r.args)),
            attrs=_attrs(r),
        )
        rec.emit_fault(r.fault)
        return (r.fault,)

    def __call__(self, r: CallReport) -> None:
        opened = r.opened if r.opened is not None else self.start(r)
        rec = self.rec
        if r.fault is not opened[0]:
            rec.emit_fault(r.fault)
        attrs = _attrs(r)
        if r.error is not None:
            rec.emit(
                ToolError,
                call_id=r.call_id,
                tool=r.tool,
                error=r.error,
                error_type=r.error_type,
                latency_ms=r.latency_ms,
                attrs=attrs,
            )
            return
        rec.emit(
            ToolEnd,
            call_id=r.call_id,
            tool=r.tool,
            result=r.result if isinstance(r.result, str) else _convert.jsonable(r.result),
            status=r.status,
            latency_ms=r.latency_ms,
            attrs=attrs,
        )


def _attrs(r: CallReport) -> dict[str, Any]:
    attrs: dict[str, Any] = dict(r.attrs)
    if r.synthetic:
        attrs[ATTR_SYNTHETIC] = True
    return attrs


def recorder_reporter(rec: RunRecorder) -> Any:
    """A ``CallReporter`` writing each reported call into ``rec``'s trace."""
    return _RecorderReporter(rec)


async def _hooked_run_json(
    self: Any,
    args: Mapping[str, Any],
    cancellation_token: Any,
    call_id: str | None = None,
) -> Any:
    """``BaseTool.run_json`` with the run's faults (pure delegation when there are none)."""
    original = _hooked_run_json.__wrapped__  # type: ignore[attr-defined]
    rec = ACTIVE_RECORDER.get()
    injector = active_injector(rec.injector if rec is not None else None)
    if injector is None:
        return await original(self, args, cancellation_token, call_id=call_id)
    name = str(self.name)
    arguments = dict(args or {})
    if rec is not None:
        cid = str(call_id) if call_id else rec.fallback_call_id()
        blocked = rec.tool_boundary(name)
        if blocked is not None:
            # No tool runs after an abort; the stream fallback must not report it either.
            rec.reported_calls.add(cid)
            raise ToolCallError(blocked, tool=name, call_id=cid)
        reporter = recorder_reporter(rec)
    else:
        from hbeval_core.contract import current_trial

        trial = current_trial()
        if trial is not None:
            trial.check_tool_boundary()
        cid = str(call_id) if call_id else next_call_id(injector, name)
        reporter = current_reporter()

    async def real() -> Any:
        return await original(self, args, cancellation_token, call_id=call_id)

    try:
        return await acall_through(injector, name, arguments, cid, real, reporter)
    except InjectedCrash as crash:
        if rec is not None:
            # The tool "raised out": the run is over, even if the agent's loop catches it.
            rec.abort_by(crash, str(crash) or f"InjectedCrash: tool {name!r} crashed")
        raise
