"""Faults for every LangChain tool run, whoever calls it: one class-level hook on ``BaseTool``.

A graph built with ``ToolNode`` (or ``create_agent``) runs its tools through the ToolNode patch
in ``_faults``. Graphs that call tools from their own nodes (``tool.invoke(args)``,
``await tool.ainvoke(call)``, from any node, subgraph or ``Send`` branch) never pass a
ToolNode, so the hook sits one level lower: ``BaseTool.run`` and ``BaseTool.arun``, the methods
every ``invoke`` / ``ainvoke`` of every LangChain tool ends in.

The hook is pure delegation unless the current context has an injector with something to
inject (a battery trial's, or the one ``tool_faults`` set) and no outer boundary handles the
call already (``hbeval_core.faults.boundary``); a call through a patched ToolNode is therefore
injected once, by the ToolNode wrapper, with its receipts unchanged.

When it injects, it runs the call as the ToolNode wrapper does: the tool's own callbacks are
silenced for this run id and the handler records ``tool_start``, the receipt and the end itself.
What the caller receives:

* error modes: the error text, as a ``ToolMessage(status="error")`` when the call carried a
  tool-call id (``tool.invoke(tool_call)``), else as the string the tool returned, which is what
  a tool with ``handle_tool_error`` set returns, so the node hands the model a result it can
  react to instead of failing the graph;
* result-altering modes: the spoiled result in the shape the tool returns (a copy of its
  ``ToolMessage`` with new content, or the bare value);
* ``crash``: ``InjectedCrash`` raised out of the tool.

Installed once per process (``install_tool_hook``) by the LangGraph adapter and
``instrument()``; ``uninstall_tool_hook`` restores the two original methods (tests).

Private LangChain attribute touched (contract-tested in tests/adapters/langgraph/test_langgraph_contract.py):
``BaseTool._filter_injected_args`` (read; the arguments the model chose, without injected ones).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from hbeval_core.contract import current_trial
from hbeval_core.events import FaultInjected
from hbeval_core.faults.boundary import (
    active_injector,
    current_reporter,
    faulted_call,
)
from hbeval_core.faults.runtime import FaultInjector, InjectedCrash, render_text
from langgraph.errors import GraphBubbleUp

from ._active import ACTIVE_INJECTOR, handlers_of
from ._wrapped import WrappedCall

__all__ = ["install_tool_hook", "is_tool_hook_installed", "uninstall_tool_hook"]

_lock = threading.Lock()
_originals: dict[str, Any] = {}

# run()'s positional parameters after tool_input: verbose, start_color, color, callbacks.
_CALLBACKS_POSITION = 3


def is_tool_hook_installed() -> bool:
    """Whether ``BaseTool.run`` / ``BaseTool.arun`` are hooked."""
    return bool(_originals)


def install_tool_hook() -> None:
    """Hook ``BaseTool.run`` and ``BaseTool.arun`` (once per process; idempotent)."""
    if _originals:
        return
    with _lock:
        if _originals:
            return
        run, arun = BaseTool.__dict__["run"], BaseTool.__dict__["arun"]
        _hooked_run.__wrapped__ = run  # type: ignore[attr-defined]
        _hooked_arun.__wrapped__ = arun  # type: ignore[attr-defined]
        BaseTool.run = _hooked_run  # type: ignore[method-assign]
        BaseTool.arun = _hooked_arun  # type: ignore[method-assign]
        _originals.update(run=run, arun=arun)


def uninstall_tool_hook() -> None:
    """Put the original ``BaseTool.run`` / ``BaseTool.arun`` back. Idempotent."""
    with _lock:
        if not _originals:
            return
        BaseTool.run = _originals["run"]  # type: ignore[method-assign]
        BaseTool.arun = _originals["arun"]  # type: ignore[method-assign]
        _originals.clear()


def _context_injector() -> FaultInjector | None:
    return active_injector(ACTIVE_INJECTOR.get())


# ------------------------------------------------------------------------------------------
# One hooked call
# ------------------------------------------------------------------------------------------
class _HookedCall(WrappedCall):
    """One tool run under the injector: its identity, who records it, what the tool returned."""

    def __init__(
        self, tool: BaseTool, tool_input: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        self.tool = tool
        self.name = str(tool.name)
        if kwargs.get("run_id") is None:
            # Our own run id, so the tool's callbacks for exactly this run can be silenced.
            kwargs["run_id"] = uuid.uuid4()
        self.run_id: uuid.UUID = kwargs["run_id"]
        tool_call_id = kwargs.get("tool_call_id")
        self.tool_call_id = str(tool_call_id) if tool_call_id else None
        self.call_id = self.tool_call_id or str(self.run_id)
        self.args = _arguments(tool, tool_input)
        callbacks = kwargs.get("callbacks")
        if callbacks is None and len(args) > _CALLBACKS_POSITION:
            callbacks = args[_CALLBACKS_POSITION]
        if callbacks is None:
            config = kwargs.get("config")
            callbacks = config.get("callbacks") if isinstance(config, dict) else None
        handlers, node_run = handlers_of({"callbacks": callbacks})
        from ._hook import current_handler

        active = current_handler()
        if active is not None and all(h is not active for h in handlers):
            handlers.append(active)
        self.handlers = handlers
        self.node_run = node_run
        if not handlers:
            # No LangChain handler in this run (a tool called from a plain agent, say): the
            # trial's own reporter records it.
            self.reporter = current_reporter()
        self.original: Any = None
        self.ran = False
        self.t0 = time.perf_counter()

    def begin(self, injector: FaultInjector) -> int:
        for h in self.handlers:
            h.check_tool_boundary(self.node_run)
        trial = current_trial()
        if trial is not None:
            trial.check_tool_boundary()
        for h in self.handlers:
            h.begin_managed_run(self.run_id)
        return sum(1 for e in list(injector.events) if e.call_id == self.call_id)

    def close(self) -> None:
        for h in self.handlers:
            h.end_managed_run(self.run_id)

    def content_of(self, out: Any) -> Any:
        self.original, self.ran = out, True
        return out.content if isinstance(out, ToolMessage) else out

    def output(self, outcome: Any) -> Any:
        """What the caller receives, in the shape this tool returns."""
        if outcome.error is not None:
            if self.tool_call_id is None:
                return outcome.error
            return ToolMessage(
                content=outcome.error,
                name=self.name,
                tool_call_id=self.tool_call_id,
                status="error",
            )
        original = self.original
        real = original.content if isinstance(original, ToolMessage) else original
        if self.ran and outcome.result is real:
            return original
        if isinstance(original, ToolMessage):
            content = outcome.result
            if not isinstance(content, str):
                content = render_text(content)
            return original.model_copy(update={"content": content})
        if self.tool_call_id is not None:
            return ToolMessage(
                content=render_text(outcome.result), name=self.name, tool_call_id=self.tool_call_id
            )
        return outcome.result

    def report_outcome(self, outcome: Any, out: Any) -> None:
        from ._convert import tool_output

        if outcome.error is not None:
            result, status = outcome.error, "error"
        else:
            result, status = tool_output(out)
        self.report(
            fault=outcome.fault, result=result, status=status, synthetic=not outcome.called_real
        )

    def report_raised(self, exc: BaseException, injector: FaultInjector, before: int) -> None:
        fault: FaultInjected | None
        if isinstance(exc, InjectedCrash):
            fault = exc.fault
        else:
            mine = [e for e in list(injector.events) if e.call_id == self.call_id]
            fault = mine[-1] if len(mine) > before else None
        self.report(
            fault=fault,
            error=f"{type(exc).__name__}: {exc}",
            error_type=type(exc).__name__,
            synthetic=isinstance(exc, InjectedCrash),
        )


def _arguments(tool: BaseTool, tool_input: Any) -> dict[str, Any]:
    """The arguments the model chose (injected ones left out), as the tool-start event shows them."""
    if isinstance(tool_input, dict):
        filtered = getattr(tool, "_filter_injected_args", None)
        try:
            args = filtered(tool_input) if callable(filtered) else tool_input
        except Exception:
            args = tool_input
        return dict(args)
    return {"input": tool_input}


def _hooked_run(self: BaseTool, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
    """``BaseTool.run`` with the trial's faults (pure delegation when there are none)."""
    original: Callable[..., Any] = _hooked_run.__wrapped__  # type: ignore[attr-defined]
    injector = _context_injector()
    if injector is None:
        return original(self, tool_input, *args, **kwargs)
    call = _HookedCall(self, tool_input, args, kwargs)
    before = call.begin(injector)

    def real() -> Any:
        return call.content_of(original(self, tool_input, *args, **kwargs))

    try:
        with faulted_call():
            outcome = injector.run_call(
                call.name, call.args, call.call_id, real, before_call=call.start
            )
    except GraphBubbleUp:
        call.close()
        raise  # interrupts are control flow, not tool failures
    except Exception as exc:
        call.close()
        call.report_raised(exc, injector, before)
        raise
    call.close()
    out = call.output(outcome)
    call.report_outcome(outcome, out)
    return out


async def _hooked_arun(self: BaseTool, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
    """Async twin of ``_hooked_run`` (``BaseTool.arun``)."""
    original: Callable[..., Awaitable[Any]] = _hooked_arun.__wrapped__  # type: ignore[attr-defined]
    injector = _context_injector()
    if injector is None:
        return await original(self, tool_input, *args, **kwargs)
    call = _HookedCall(self, tool_input, args, kwargs)
    before = call.begin(injector)

    async def real() -> Any:
        return call.content_of(await original(self, tool_input, *args, **kwargs))

    try:
        with faulted_call():
            outcome = await injector.arun_call(
                call.name, call.args, call.call_id, real, before_call=call.start
            )
    except GraphBubbleUp:
        call.close()
        raise
    except Exception as exc:
        call.close()
        call.report_raised(exc, injector, before)
        raise
    call.close()
    out = call.output(outcome)
    call.report_outcome(outcome, out)
    return out
