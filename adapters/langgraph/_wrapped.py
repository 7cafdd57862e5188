"""What fault wrappers and tool hooks report to ``HBEvalCallbackHandler`` themselves.

A wrapper that runs a tool call under the fault injector (the ToolNode wrapper in ``_faults``,
the ``BaseTool`` hook in ``_toolhook``, a ``faultable`` function run from a node) silences the
tool's own callbacks for that call (``begin_managed_call`` / ``begin_managed_run``) and records
it in two parts: ``begin_tool_call`` before the tool runs (``tool_start``, and the fault's
receipt when the injector knows it in advance), ``end_tool_call`` once it returned or raised
(the receipt otherwise, then ``tool_end`` / ``tool_error``). A call that never returns (a tool
hanging until the runner's timeout cuts the trial) thus shows as started.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from uuid import UUID

from hbeval_core.capture import ToolCallRecord
from hbeval_core.events import FaultInjected
from hbeval_core.faults.boundary import CallReport, CallReporter, report_start
from hbeval_core.vocab import SCOPE_NODE

from . import _convert
from ._keys import ATTR_LANGGRAPH_NODE, ATTR_SYNTHETIC
from ._runs import NIL, key_of

if TYPE_CHECKING:
    import threading
    from collections import deque

    from hbeval_core.capture._recorder import Logged
    from hbeval_core.events import EventBase

    from ._runs import Run

__all__ = ["WrappedCall", "WrapperReports"]


class WrapperReports:
    """The handler's side of tool calls and faults a wrapper records itself."""

    if TYPE_CHECKING:
        _log: deque[Logged] | None
        _lock: threading.RLock
        _runs: dict[Any, Run]
        _managed: set[tuple[UUID | None, str]]
        _managed_runs: set[Any]

        def stop_logging(self) -> None: ...
        def fail(self, where: str, exc: BaseException) -> None: ...
        def current_run_id(self) -> str: ...
        def _run_id_for(self, root: UUID) -> str: ...
        def _span_of(self, run: UUID | None) -> str | None: ...
        def emit(self, cls: type[EventBase], **fields: Any) -> EventBase: ...
        def emit_tool_start(
            self, call: ToolCallRecord, args: dict[str, Any], *, fault: FaultInjected | None = None
        ) -> EventBase: ...
        def emit_tool_end(self, call: ToolCallRecord, **fields: Any) -> EventBase: ...
        def tool_started_locked(self, rkey: Any, call_id: str) -> None: ...

    def begin_managed_call(self, node_run_id: UUID | None, call_id: str) -> None:
        """A fault wrapper takes over reporting of this tool call (its callbacks stay silent)."""
        if self._log is not None:
            self.stop_logging()
        with self._lock:
            self._managed.add((node_run_id, call_id))

    def end_managed_call(self, node_run_id: UUID | None, call_id: str) -> None:
        """The fault wrapper is done with this tool call."""
        with self._lock:
            self._managed.discard((node_run_id, call_id))

    def begin_managed_run(self, run_id: UUID) -> None:
        """A tool hook reports the tool run ``run_id`` itself (its callbacks stay silent)."""
        if self._log is not None:
            self.stop_logging()
        with self._lock:
            self._managed_runs.add(key_of(run_id))

    def end_managed_run(self, run_id: UUID) -> None:
        """The tool hook is done with the tool run ``run_id``."""
        with self._lock:
            self._managed_runs.discard(key_of(run_id))

    def _node_and_root(self, node_run_id: UUID | None) -> tuple[Run | None, Any]:
        """The node's run record (None if unknown) and the root run it belongs to (the node
        itself, or ``NIL``, when unknown). Called under ``_lock``."""
        node_rec = self._runs.get(key_of(node_run_id)) if node_run_id is not None else None
        return node_rec, node_rec.root if node_rec is not None else (node_run_id or NIL)

    def begin_tool_call(
        self,
        *,
        node_run_id: UUID | None,
        call_id: str,
        tool: str,
        args: Mapping[str, Any],
        fault: FaultInjected | None = None,
        synthetic: bool = False,
    ) -> ToolCallRecord | None:
        """Record the start of a tool call a wrapper runs, before the tool runs: ``tool_start``,
        then ``fault``'s receipt when it is known in advance. ``synthetic`` marks calls whose
        real tool will not run. Returns the call for ``end_tool_call`` (None: not recorded).
        """
        if self._log is not None:
            self.stop_logging()
        try:
            with self._lock:
                node_rec, root = self._node_and_root(node_run_id)
                if node_rec is not None:
                    self.tool_started_locked(node_rec.rkey, call_id)
                attrs: dict[str, Any] = {ATTR_SYNTHETIC: True} if synthetic else {}
                if node_rec is not None and node_rec.scope == SCOPE_NODE:
                    attrs[ATTR_LANGGRAPH_NODE] = node_rec.name
                call = ToolCallRecord(
                    call_id, tool, self._run_id_for(root), self._span_of(node_run_id), attrs
                )
            args = {str(k): _convert.jsonable(v) for k, v in args.items()}
            self.emit_tool_start(call, args, fault=fault)
            return call
        except Exception as exc:
            self.fail("begin_tool_call", exc)
            return None

    def end_tool_call(
        self,
        call: ToolCallRecord | None,
        *,
        node_run_id: UUID | None,
        call_id: str,
        tool: str,
        args: Mapping[str, Any],
        fault: FaultInjected | None,
        result: Any = None,
        status: str = "ok",
        error: str | None = None,
        error_type: str | None = None,
        latency_ms: float | None = None,
        synthetic: bool = False,
    ) -> None:
        """Record how a tool call a wrapper ran ended: the fault's receipt (unless the start
        had it), then ``tool_error`` (``error`` set: the call raised out of the tool node) or
        ``tool_end`` with ``status``; as hb-derive/1 requires, the receipt precedes the end.

        ``call`` is what ``begin_tool_call`` returned; None records the start first.
        """
        if call is None:
            call = self.begin_tool_call(
                node_run_id=node_run_id, call_id=call_id, tool=tool, args=args, synthetic=synthetic
            )
            if call is None:
                return
        try:
            if error is not None:
                end: dict[str, Any] = {"error": error, "error_type": error_type}
            else:
                end = {"result": _convert.jsonable(result), "status": status}
            self.emit_tool_end(call, fault=fault, latency_ms=latency_ms, **end)
        except Exception as exc:
            self.fail("end_tool_call", exc)

    def record_fault(self, *, node_run_id: UUID | None, fault: FaultInjected) -> None:
        """Record a fault that hit something other than a tool call (a node-level fault)."""
        if self._log is not None:
            self.stop_logging()
        try:
            with self._lock:
                _, root = self._node_and_root(node_run_id)
                run_id, parent = self._run_id_for(root), self._span_of(node_run_id)
            self.emit_fault(fault, run_id, parent)
        except Exception as exc:
            self.fail("record_fault", exc)

    def emit_fault(
        self, fault: FaultInjected | None, run_id: str | None = None, parent_id: Any = ...
    ) -> EventBase | None:
        """Record a fault's receipt as of now (validated: its fields come from the injector)."""
        if fault is None:
            return None
        fields = {
            k: getattr(fault, k)
            for k in type(fault).model_fields
            if k not in ("run_id", "seq", "ts", "parent_id")
        }
        if parent_id is not ...:
            fields["parent_id"] = parent_id
        return self.emit(FaultInjected, run_id=run_id or self.current_run_id(), **fields)


class WrappedCall:
    """One tool call a wrapper runs under the injector, recorded in two parts by each of our
    handlers (with none, by the trial's ``reporter``): its start before the tool runs
    (``start``, the injector's ``before_call``), its end once it returned or raised."""

    handlers: list[Any]
    node_run: UUID | None
    name: str
    args: dict[str, Any]
    call_id: str
    t0: float
    reporter: CallReporter | None = None
    """Where the call is reported when no handler of ours sees it."""
    opened: list[Any] | None = None
    """What each handler's (or the reporter's) start returned; None until it was recorded."""

    def start(self, synthetic: bool, fault: FaultInjected | None) -> None:
        """Record the call's start (and ``fault``'s receipt when known in advance)."""
        if self.handlers:
            self.opened = [
                h.begin_tool_call(
                    node_run_id=self.node_run,
                    call_id=self.call_id,
                    tool=self.name,
                    args=self.args,
                    fault=fault,
                    synthetic=synthetic,
                )
                for h in self.handlers
            ]
        elif self.reporter is not None:
            report = CallReport(
                call_id=self.call_id,
                tool=self.name,
                args=dict(self.args),
                fault=fault,
                synthetic=synthetic,
            )
            self.opened = [report_start(self.reporter, report)]

    def report(self, **fields: Any) -> None:
        """Record the rest of the call: the receipt unless the start had it, then its end."""
        latency = (time.perf_counter() - self.t0) * 1000.0
        opened = self.opened
        if self.handlers:
            for i, h in enumerate(self.handlers):
                h.end_tool_call(
                    opened[i] if opened is not None else None,
                    node_run_id=self.node_run,
                    call_id=self.call_id,
                    tool=self.name,
                    args=self.args,
                    latency_ms=latency,
                    **fields,
                )
        elif self.reporter is not None:
            self.reporter(
                CallReport(
                    call_id=self.call_id,
                    tool=self.name,
                    args=dict(self.args),
                    latency_ms=latency,
                    opened=opened[0] if opened is not None else None,
                    **fields,
                )
            )
