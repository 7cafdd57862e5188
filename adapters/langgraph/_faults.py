"""Fault injection into a compiled LangGraph graph, without editing the graph.

Tool level (the battery's route): every ``ToolNode`` of the graph, found recursively through
subgraphs, gets a wrapper composed with whatever ``_wrap_tool_call`` / ``_awrap_tool_call`` it
already had (create_agent puts middleware there). The wrapper hands each call to
``FaultInjector.run_call``; an injected error comes back as
``ToolMessage(status="error", content=<error text>)`` so the run goes on and the model reads the
fault, exactly as it would read a real tool failure. ``crash`` raises out of the tool and aborts
the run. The patch is reference-counted per ToolNode and undone when the last scope exits,
restoring the exact original attributes; the injector itself lives in a context variable, so
concurrent trials on one graph never see each other's faults.

Our wrapper sits *inside* existing middleware (closest to the real tool): a user's retry or
error-handling middleware meets an injected fault the way it would meet a real one.

Node level (``node_faults``): a scoped wrap of one node's runnable (instance attributes
``invoke`` / ``ainvoke``). Error modes raise ``NodeFaultError`` out of the node, ``latency``
delays it, ``crash`` raises ``InjectedCrash``; modes that spoil a result also raise
``NodeFaultError`` (a node's output is a state update; a corrupted one is a failed node).

Private LangGraph attributes touched, each with a named contract test in
tests/adapters/langgraph/test_langgraph_contract.py: ``ToolNode._wrap_tool_call``, ``ToolNode._awrap_tool_call``,
``ToolNode.tools_by_name`` (read only), ``graph.nodes[name].bound``.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.messages import ToolMessage

from hbeval_core.contract import current_trial
from hbeval_core.events import FaultInjected
from hbeval_core.faults.boundary import faulted_call
from hbeval_core.faults.runtime import FaultInjector, InjectedCrash, render_text
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt import ToolNode
from langgraph.pregel import Pregel

from . import _convert
from ._active import ACTIVE_INJECTOR, handlers_of
from ._handler import HBEvalCallbackHandler
from ._keys import ATTR_NODE_FAULT
from ._wrapped import WrappedCall

__all__ = [
    "ACTIVE_INJECTOR",
    "NodeFaultError",
    "arun_tool_call",
    "find_tool_nodes",
    "node_faults",
    "run_tool_call",
    "tool_faults",
]


class NodeFaultError(RuntimeError):
    """An injected fault made a graph node fail (node-level faults only)."""

    def __init__(self, message: str, *, node: str, fault: FaultInjected | None) -> None:
        super().__init__(message)
        self.node = node
        self.fault = fault


# ------------------------------------------------------------------------------------------
# Finding the parts of a graph
# ------------------------------------------------------------------------------------------
def find_tool_nodes(graph: Any) -> list[Any]:
    """Every ``ToolNode`` in a compiled graph and, recursively, in its subgraphs."""
    found: dict[int, Any] = {}
    seen: set[int] = set()

    def walk(g: Any) -> None:
        if id(g) in seen:
            return
        seen.add(id(g))
        for node in getattr(g, "nodes", {}).values():
            bound = getattr(node, "bound", None)
            if isinstance(bound, ToolNode):
                found.setdefault(id(bound), bound)
            elif isinstance(bound, Pregel):
                walk(bound)
        # Subgraphs LangGraph can see inside a node's function (not only nodes that are graphs).
        if isinstance(g, Pregel):
            for _, sub in g.get_subgraphs(recurse=False):
                walk(sub)

    walk(graph)
    return list(found.values())


def _request_context(request: Any) -> tuple[list[HBEvalCallbackHandler], UUID | None]:
    runtime = getattr(request, "runtime", None)
    return handlers_of(getattr(runtime, "config", None))


def _new_faults(injector: FaultInjector, call_id: str, before: int) -> FaultInjected | None:
    """The receipt the injector recorded for ``call_id`` after ``before`` of them existed."""
    mine = [e for e in list(injector.events) if e.call_id == call_id]
    return mine[-1] if len(mine) > before else None


def _count_faults(injector: FaultInjector, call_id: str) -> int:
    return sum(1 for e in list(injector.events) if e.call_id == call_id)


# ------------------------------------------------------------------------------------------
# One tool call through the injector
# ------------------------------------------------------------------------------------------
@dataclass
class _Call(WrappedCall):
    """One tool call under fault injection: who reports it, and what the real tool returned."""

    handlers: list[HBEvalCallbackHandler]
    node_run: UUID | None
    name: str
    args: dict[str, Any]
    call_id: str
    injector: FaultInjector
    before: int
    t0: float
    original: Any = None
    ran: bool = False

    def content_of(self, out: Any) -> Any:
        self.original, self.ran = out, True
        return out.content if isinstance(out, ToolMessage) else out

    def message(self, outcome: Any) -> Any:
        """What the agent receives: the real message, an altered copy, or an error message."""
        if outcome.error is not None:
            return ToolMessage(
                content=outcome.error, name=self.name, tool_call_id=self.call_id, status="error"
            )
        original = self.original
        real = original.content if isinstance(original, ToolMessage) else original
        if self.ran and outcome.result is real:
            return original
        content = outcome.result if isinstance(outcome.result, str) else render_text(outcome.result)
        if isinstance(original, ToolMessage):
            return original.model_copy(update={"content": content})
        return ToolMessage(content=content, name=self.name, tool_call_id=self.call_id)

    def report_outcome(self, outcome: Any, message: Any) -> None:
        result, status = _convert.tool_output(message)
        self.report(
            fault=outcome.fault, result=result, status=status, synthetic=not outcome.called_real
        )

    def report_raised(self, exc: BaseException) -> None:
        if isinstance(exc, InjectedCrash):
            fault: FaultInjected | None = exc.fault
        else:
            fault = _new_faults(self.injector, self.call_id, self.before)
        self.report(
            fault=fault,
            error=f"{type(exc).__name__}: {exc}",
            error_type=type(exc).__name__,
            synthetic=isinstance(exc, InjectedCrash),
        )

    def close(self) -> None:
        for h in self.handlers:
            h.end_managed_call(self.node_run, self.call_id)


def _open_call(request: Any, injector: FaultInjector | None) -> _Call | None:
    """Check the halt boundary; return the call to inject into, or None to run it untouched."""
    handlers, node_run = _request_context(request)
    for h in handlers:
        # An enforced Safe Halt stops the run here, before any tool can run.
        h.check_tool_boundary(node_run)
    trial = current_trial()
    if trial is not None:
        trial.check_tool_boundary()  # budgets and timeouts of the battery run
    inj = injector if injector is not None else ACTIVE_INJECTOR.get()
    if inj is None or not inj.enabled or inj.plan is None:
        return None
    call = request.tool_call
    args = call.get("args")
    c = _Call(
        handlers=handlers,
        node_run=node_run,
        name=str(call.get("name") or ""),
        args=dict(args) if isinstance(args, dict) else {"input": args},
        call_id=str(call.get("id") or ""),
        injector=inj,
        before=0,
        t0=time.perf_counter(),
    )
    c.before = _count_faults(inj, c.call_id)
    for h in handlers:
        # The wrapper reports this call itself (the fault must precede its end event).
        h.begin_managed_call(node_run, c.call_id)
    return c


def run_tool_call(
    request: Any, execute: Callable[[Any], Any], injector: FaultInjector | None = None
) -> Any:
    """Run one tool call through the active fault injector (a ``wrap_tool_call`` body)."""
    c = _open_call(request, injector)
    if c is None:
        return execute(request)
    try:
        with faulted_call():  # the tools' own BaseTool hook lets this call through
            outcome = c.injector.run_call(
                c.name,
                c.args,
                c.call_id,
                lambda: c.content_of(execute(request)),
                before_call=c.start,
            )
    except GraphBubbleUp:
        c.close()
        raise  # interrupts are control flow, not tool failures
    except Exception as exc:
        c.close()
        c.report_raised(exc)
        raise
    c.close()
    message = c.message(outcome)
    c.report_outcome(outcome, message)
    return message


async def arun_tool_call(
    request: Any,
    execute: Callable[[Any], Awaitable[Any]],
    injector: FaultInjector | None = None,
) -> Any:
    """Async twin of ``run_tool_call`` (an ``awrap_tool_call`` body)."""
    c = _open_call(request, injector)
    if c is None:
        return await execute(request)

    async def real() -> Any:
        return c.content_of(await execute(request))

    try:
        with faulted_call():
            outcome = await c.injector.arun_call(
                c.name, c.args, c.call_id, real, before_call=c.start
            )
    except GraphBubbleUp:
        c.close()
        raise
    except Exception as exc:
        c.close()
        c.report_raised(exc)
        raise
    c.close()
    message = c.message(outcome)
    c.report_outcome(outcome, message)
    return message


# ------------------------------------------------------------------------------------------
# Patching tool nodes (reference-counted, exact restore)
# ------------------------------------------------------------------------------------------
@dataclass
class _ToolNodePatch:
    node: Any
    wrap: Any
    awrap: Any
    patched_async: bool
    refs: int


_patch_lock = threading.Lock()
_tool_patches: dict[int, _ToolNodePatch] = {}


def _compose_sync(inner: Callable[..., Any] | None) -> Callable[..., Any]:
    if inner is None:

        def hbeval_wrap_tool_call(request: Any, execute: Callable[[Any], Any]) -> Any:
            return run_tool_call(request, execute)

    else:

        def hbeval_wrap_tool_call(request: Any, execute: Callable[[Any], Any]) -> Any:
            return inner(request, lambda req: run_tool_call(req, execute))

    return hbeval_wrap_tool_call


def _compose_async(inner: Callable[..., Any] | None) -> Callable[..., Any]:
    if inner is None:

        async def hbeval_awrap_tool_call(
            request: Any, execute: Callable[[Any], Awaitable[Any]]
        ) -> Any:
            return await arun_tool_call(request, execute)

    else:

        async def hbeval_awrap_tool_call(
            request: Any, execute: Callable[[Any], Awaitable[Any]]
        ) -> Any:
            async def ours(req: Any) -> Any:
                return await arun_tool_call(req, execute)

            return await inner(request, ours)

    return hbeval_awrap_tool_call


def patch_tool_node(node: Any) -> None:
    """Route ``node``'s tool calls through the active injector (reference-counted)."""
    with _patch_lock:
        patch = _tool_patches.get(id(node))
        if patch is not None:
            patch.refs += 1
            return
        wrap, awrap = node._wrap_tool_call, node._awrap_tool_call
        # With only a sync wrapper, ToolNode runs it under ainvoke too; an async wrapper of ours
        # could not call a sync inner one, so then the sync route is the only one we patch.
        patch_async = awrap is not None or wrap is None
        node._wrap_tool_call = _compose_sync(wrap)
        if patch_async:
            node._awrap_tool_call = _compose_async(awrap)
        _tool_patches[id(node)] = _ToolNodePatch(node, wrap, awrap, patch_async, 1)


def unpatch_tool_node(node: Any) -> None:
    """Undo one ``patch_tool_node``; the last one restores the original attributes."""
    with _patch_lock:
        patch = _tool_patches.get(id(node))
        if patch is None:
            return
        patch.refs -= 1
        if patch.refs > 0:
            return
        node._wrap_tool_call = patch.wrap
        node._awrap_tool_call = patch.awrap
        del _tool_patches[id(node)]


@contextmanager
def tool_faults(graph: Any, injector: FaultInjector | None) -> Iterator[list[Any]]:
    """Inside the block, tool calls of ``graph`` (and its subgraphs) meet ``injector``'s faults.

    Every ToolNode is patched, and every other LangChain tool run in the block (a tool a node
    calls itself with ``tool.invoke(args)``) meets the same injector through the ``BaseTool``
    hook; each call is injected once. Yields the patched ToolNodes. Nothing of the graph is left
    changed on exit.
    """
    from ._toolhook import install_tool_hook

    # Tools run from the graph's own nodes (no ToolNode) meet the faults through this hook.
    install_tool_hook()
    nodes = find_tool_nodes(graph)
    patched: list[Any] = []
    token = ACTIVE_INJECTOR.set(injector)
    try:
        for node in nodes:
            patch_tool_node(node)
            patched.append(node)
        yield nodes
    finally:
        for node in patched:
            unpatch_tool_node(node)
        ACTIVE_INJECTOR.reset(token)


# ------------------------------------------------------------------------------------------
# Node-level faults
# ------------------------------------------------------------------------------------------
_MISSING = object()


def _node_runner(
    name: str,
    orig_invoke: Callable[..., Any],
    orig_ainvoke: Callable[..., Awaitable[Any]],
    injector: FaultInjector | None,
) -> tuple[Callable[..., Any], Callable[..., Awaitable[Any]]]:
    counter = itertools.count()
    lock = threading.Lock()

    def next_call_id() -> str:
        with lock:
            return f"node:{name}:{next(counter)}"

    def finish(outcome: Any, real: list[Any], handlers: Sequence[Any], node_run: Any) -> Any:
        if outcome.fault is not None:
            for h in handlers:
                h.record_fault(node_run_id=node_run, fault=_with_node(outcome.fault, name))
        if outcome.error is not None:
            raise NodeFaultError(outcome.error, node=name, fault=outcome.fault)
        if real and outcome.result is real[0]:
            return outcome.result
        mode = outcome.fault.mode if outcome.fault is not None else "fault"
        raise NodeFaultError(
            f"{mode}: the output of node '{name}' was spoiled ({render_text(outcome.result)[:200]})",
            node=name,
            fault=outcome.fault,
        )

    def failed(
        exc: BaseException, inj: FaultInjector, call_id: str, handlers: Any, node_run: Any
    ) -> None:
        fault = exc.fault if isinstance(exc, InjectedCrash) else _new_faults(inj, call_id, 0)
        if fault is not None:
            for h in handlers:
                h.record_fault(node_run_id=node_run, fault=_with_node(fault, name))

    def invoke(input: Any, config: Any = None, **kwargs: Any) -> Any:
        inj = injector if injector is not None else ACTIVE_INJECTOR.get()
        if inj is None or not inj.enabled or inj.plan is None:
            return orig_invoke(input, config, **kwargs)
        handlers, node_run = handlers_of(config)
        call_id = next_call_id()
        real: list[Any] = []

        def real_call() -> Any:
            real.append(orig_invoke(input, config, **kwargs))
            return real[0]

        try:
            outcome = inj.run_call(name, {}, call_id, real_call)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            failed(exc, inj, call_id, handlers, node_run)
            raise
        return finish(outcome, real, handlers, node_run)

    async def ainvoke(input: Any, config: Any = None, **kwargs: Any) -> Any:
        inj = injector if injector is not None else ACTIVE_INJECTOR.get()
        if inj is None or not inj.enabled or inj.plan is None:
            return await orig_ainvoke(input, config, **kwargs)
        handlers, node_run = handlers_of(config)
        call_id = next_call_id()
        real: list[Any] = []

        async def real_call() -> Any:
            real.append(await orig_ainvoke(input, config, **kwargs))
            return real[0]

        try:
            outcome = await inj.arun_call(name, {}, call_id, real_call)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            failed(exc, inj, call_id, handlers, node_run)
            raise
        return finish(outcome, real, handlers, node_run)

    return invoke, ainvoke


def _with_node(fault: FaultInjected, node: str) -> FaultInjected:
    return fault.model_copy(update={"attrs": {**fault.attrs, ATTR_NODE_FAULT: node}})


@contextmanager
def node_faults(
    graph: Any, nodes: str | Iterable[str], injector: FaultInjector | None = None
) -> Iterator[None]:
    """Inside the block, the named nodes of ``graph`` meet faults (``wrap_node``).

    The plan's targets name nodes (``FaultSpec(target="model", mode="error_5xx", ...)``). With
    ``injector=None`` the injector set by ``tool_faults`` / the adapter is used; give node
    faults their own injector when tool faults run too, so call counts do not mix.
    """
    names = [nodes] if isinstance(nodes, str) else list(nodes)
    saved: list[tuple[Any, Any, Any]] = []
    try:
        for name in names:
            if name not in graph.nodes:
                raise KeyError(f"graph has no node {name!r}; nodes: {', '.join(graph.nodes)}")
            bound = graph.nodes[name].bound
            own = vars(bound)
            saved.append((bound, own.get("invoke", _MISSING), own.get("ainvoke", _MISSING)))
            invoke, ainvoke = _node_runner(name, bound.invoke, bound.ainvoke, injector)
            # Instance attributes shadow the class's methods; the compiled graph keeps calling
            # ``bound.invoke`` at run time, so no graph structure changes.
            object.__setattr__(bound, "invoke", invoke)
            object.__setattr__(bound, "ainvoke", ainvoke)
        yield
    finally:
        for bound, inv, ainv in reversed(saved):
            for attr, old in (("invoke", inv), ("ainvoke", ainv)):
                if old is _MISSING:
                    vars(bound).pop(attr, None)
                else:
                    object.__setattr__(bound, attr, old)
