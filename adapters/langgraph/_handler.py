"""``HBEvalCallbackHandler``: LangChain callbacks in, hb-events/1 events and live metrics out.

Drop it into any LangGraph or LangChain run::

    handler = HBEvalCallbackHandler()
    graph.invoke(inputs, config={"callbacks": [handler]})
    handler.events            # model, tool, node and graph events, tied by run and parent ids
    handler.monitor.metrics   # live PEI / FRR / IRS / TI

How LangChain runs map to events (run ids are LangChain's full UUIDs, never shortened):

* the outermost chain (a graph's root) -> ``run_start`` + ``span_start`` scope graph, and at its
  end ``span_end`` + ``run_end``;
* a chain tagged ``graph:step:N`` whose name is its ``langgraph_node`` -> a node span;
  the chain holding a node that belongs to a nested graph becomes a graph span;
* ``on_chat_model_start`` / ``on_llm_end`` -> ``model_start`` (every input message) /
  ``model_end`` (text, reasoning, tool calls, usage, latency);
* ``on_tool_start`` / ``on_tool_end`` / ``on_tool_error`` -> ``tool_start`` / ``tool_end``
  (``status`` error when the ToolMessage says so) / ``tool_error``.

Every other chain (prompts, sequences) emits nothing but is remembered, so that events inside
it name the nearest span as their ``parent_id``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from hbeval_core.events import (
    ChatMessage,
    Directive,
    EventBase,
    FaultInjected,
    Halt,
    ModelEnd,
    ModelStart,
    RunEnd,
    RunStart,
    SpanEnd,
    SpanStart,
    ToolEnd,
    ToolError,
    ToolStart,
)
from hbeval_core.monitor import Directive as MonitorDirective
from hbeval_core.monitor import Monitor, SafeHaltError
from hbeval_core.vocab import SCOPE_GRAPH, SCOPE_NODE

from . import _convert
from ._keys import (
    ATTR_FRAMEWORK_RUN_ID,
    ATTR_LANGGRAPH_NODE,
    ATTR_LANGGRAPH_STEP,
    ATTR_LATENCY_MS,
    ATTR_STEP_INDEX,
    ATTR_SYNTHETIC,
    FRAMEWORK,
)

__all__ = ["HBEvalCallbackHandler"]

log = logging.getLogger("hbeval.langgraph")

_NODE_TAG = "graph:step:"
_RUN_STATUS_FOR = {
    "SafeHaltError": "halted",
    "BudgetExceeded": "halted",
    "TrialCancelled": "timeout",
    "InjectedCrash": "cancelled",
    "CancelledError": "cancelled",
}

_KIND_CHAIN = 0
_KIND_MODEL = 1
_KIND_TOOL = 2


@dataclass(slots=True)
class _Run:
    """What the handler remembers about one open LangChain run."""

    kind: int
    parent: UUID | None
    root: UUID
    name: str
    t0: float
    sid: str  # str(run id), computed once: UUID.__str__ is surprisingly costly per event
    scope: str | None = None  # "graph" or "node" when the run is a span
    call_id: str | None = None
    managed: bool = False  # a fault wrapper reports this tool call itself
    step: Any = None
    top: bool = False  # the outermost run: it opens and closes a hbeval run


class HBEvalCallbackHandler(BaseCallbackHandler):
    """Records a LangGraph run as hbeval events and feeds them to a live ``Monitor``.

    Thread-safe: parallel tool calls and concurrent runs may share one handler (events are
    appended under a lock; each run's events carry its own ``run_id``). Errors inside the handler
    are logged and swallowed, so capture never breaks the agent; ``strict=True`` re-raises them
    (for tests). The only exception it raises on purpose is ``SafeHaltError`` once an enforced
    halt was decided (``Monitor(enforce=True, ...)``), at the next tool boundary.

    Args:
        run_id: Run id every event carries. Default: the LangChain id of each outermost run, so
            one handler can watch many runs.
        monitor: Where events are folded into live metrics; a fresh ``Monitor()`` by default.
        strict: Re-raise the handler's own errors instead of logging them.
        on_directive: Called with each monitor ``Directive`` (Adapt-Plan re-plan, retry, ...).
        on_halt: Called with the halt record when the monitor decides a Safe Halt.
        on_event: Called with every event as it is recorded (a streaming sink).
        run_info: Extra ``run_start`` fields (agent_id, task_id, scenario, trial, input).
    """

    # Our own guard decides what escapes a callback (see _guard); LangChain must let it through.
    raise_error: bool = True
    # Cheap and thread-safe, so no executor hop per event under ainvoke.
    run_inline: bool = True

    def __init__(
        self,
        *,
        run_id: str | None = None,
        monitor: Monitor | None = None,
        strict: bool = False,
        on_directive: Callable[[MonitorDirective], Any] | None = None,
        on_halt: Callable[[dict[str, Any]], Any] | None = None,
        on_event: Callable[[EventBase], Any] | None = None,
        run_info: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.run_id = run_id
        self.monitor = monitor if monitor is not None else Monitor(strict=strict)
        self.strict = strict
        self.on_directive = on_directive
        self.on_halt = on_halt
        self.on_event = on_event
        self.run_info: dict[str, Any] = dict(run_info or {})
        self.events: list[EventBase] = []
        """Every event recorded so far, in the order it was recorded."""
        self.errors: list[str] = []
        """The handler's own errors that were swallowed (empty when all is well)."""
        # Re-entrant: a Monitor callback the user registered runs under it and may read us.
        self._lock = threading.RLock()
        self._runs: dict[UUID, _Run] = {}
        self._managed: set[tuple[UUID | None, str]] = set()
        self._seq = 0
        self._directives_seen = 0
        self._halt_seen = False
        self._halt_raised: set[UUID] = set()
        self._root_ids: dict[UUID, str] = {}
        # Per run: LangChain message id -> (content, converted message); see chat_messages.
        self._messages: dict[UUID, dict[str, Any]] = {}
        self.trial: Any = None
        """The battery trial this handler records (a runner ``TrialContext``), if any."""

    # ------------------------------------------------------------------ public helpers
    def events_of(self, run_id: str) -> list[EventBase]:
        """The events of one run (a handler that watched several runs holds them all)."""
        with self._lock:
            return [e for e in self.events if e.run_id == run_id]

    @property
    def run_ids(self) -> list[str]:
        """Run ids seen so far, in order of first appearance."""
        with self._lock:
            return list(dict.fromkeys(e.run_id for e in self.events))

    def check_tool_boundary(self, node_run_id: UUID | None = None) -> None:
        """Raise ``SafeHaltError`` when an enforced halt was decided: no tool may run after it.

        ``node_run_id`` (the LangChain run that is about to call the tool) lets the handler
        remember which run was halted, so a graph that swallows the error is stopped again at
        its next model call.
        """
        monitor = self.monitor
        if monitor.halted and monitor.enforce and monitor.halt_record is not None:
            with self._lock:
                rec = self._runs.get(node_run_id) if node_run_id is not None else None
                self._halt_raised.add(rec.root if rec is not None else (node_run_id or _NIL))
            raise SafeHaltError(monitor.halt_record)

    # ------------------------------------------------------------------ internals
    def _fail(self, where: str, exc: BaseException) -> None:
        # Capture never breaks the user's agent: our own errors are logged and swallowed.
        if self.strict:
            raise exc
        self.errors.append(f"{where}: {type(exc).__name__}: {exc}")
        log.warning("hbeval handler error in %s: %r", where, exc, exc_info=True)

    def _run_id_for(self, root: UUID) -> str:
        if self.run_id is not None:
            return self.run_id
        rid = self._root_ids.get(root)
        if rid is None:
            rid = self._root_ids[root] = str(root)
        return rid

    def _span_of(self, run: UUID | None) -> str | None:
        """The nearest enclosing span of ``run`` (itself included), as a parent id."""
        runs = self._runs
        while run is not None:
            rec = runs.get(run)
            if rec is None:
                # An ancestor we never saw (the handler joined mid-run): name it as it is.
                return str(run)
            if rec.scope is not None:
                return rec.sid
            run = rec.parent
        return None

    def _root_of(self, parent: UUID | None, run_id: UUID) -> UUID:
        if parent is None:
            return run_id
        rec = self._runs.get(parent)
        return rec.root if rec is not None else parent

    def _emit_locked(self, cls: type[EventBase], root: UUID, fields: dict[str, Any]) -> EventBase:
        """Build, number and record one event; the caller holds the lock."""
        fields["run_id"] = self._run_id_for(root)
        fields["seq"] = self._seq
        fields["ts"] = time.time()
        self._seq += 1
        event = _make(cls, fields)
        if not self._keep(event):
            return event
        self.events.append(event)
        if cls not in _UNOBSERVED:
            # Observed under the lock so the live monitor sees events in list order, even when
            # parallel tool calls report from several threads.
            self.monitor.observe(event)
        return event

    def _keep(self, event: EventBase) -> bool:
        """Whether the battery trial (if any) still accepts events: a timeout cuts the trace."""
        trial = self.trial
        if trial is None:
            return True
        record = getattr(trial, "record", None)
        return True if record is None else bool(record(event))

    def _after_emit(self, events: Sequence[EventBase]) -> None:
        """Fan out to user callbacks and surface monitor signals, outside the lock."""
        if self.on_event is not None:
            for event in events:
                self._call_user(self.on_event, event)
        self._poll_monitor(events[-1] if events else None)

    def _poll_monitor(self, last: EventBase | None) -> None:
        """Turn new monitor directives and a new halt into events and user callbacks."""
        monitor = self.monitor
        if len(monitor.directives) == self._directives_seen and (
            self._halt_seen or not monitor.halted
        ):
            return  # the common case, checked without the lock
        new_directives: list[MonitorDirective] = []
        halt_record: dict[str, Any] | None = None
        extra: list[EventBase] = []
        with self._lock:
            if len(monitor.directives) > self._directives_seen:
                new_directives = list(monitor.directives[self._directives_seen :])
                self._directives_seen += len(new_directives)
            if monitor.halted and not self._halt_seen:
                self._halt_seen = True
                halt_record = dict(monitor.halt_record or {})
            if not new_directives and halt_record is None:
                return
            run_id = last.run_id if last is not None else (self.run_id or "")
            parent = last.parent_id if last is not None else None
            for d in new_directives:
                extra.append(self._signal_locked(Directive, run_id, parent, _directive_fields(d)))
            if halt_record is not None:
                fields = _halt_fields(halt_record, enforced=monitor.enforce)
                extra.append(self._signal_locked(Halt, run_id, parent, fields))
        for event in extra:
            if self.on_event is not None:
                self._call_user(self.on_event, event)
        for d in new_directives:
            if self.on_directive is not None:
                self._call_user(self.on_directive, d)
        if halt_record is not None and self.on_halt is not None:
            self._call_user(self.on_halt, halt_record)

    def _signal_locked(
        self, cls: type[EventBase], run_id: str, parent: str | None, fields: dict[str, Any]
    ) -> EventBase:
        fields.update(run_id=run_id, parent_id=parent, seq=self._seq, ts=time.time())
        self._seq += 1
        event = _make(cls, fields)
        if self._keep(event):
            self.events.append(event)
        return event

    def _call_user(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:
            self._fail(f"user callback {getattr(fn, '__name__', fn)!r}", exc)

    def _halt_now(self, root: UUID) -> None:
        """Raise ``SafeHaltError`` at a tool boundary when an enforced halt is pending."""
        monitor = self.monitor
        if monitor.halted and monitor.enforce and monitor.halt_record is not None:
            with self._lock:
                self._halt_raised.add(root)
            raise SafeHaltError(monitor.halt_record)

    # ------------------------------------------------------------------ chains: runs and spans
    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """A chain began: the graph root, a node, or a runnable inside a node."""
        try:
            name = kwargs.get("name") or (serialized or {}).get("name") or ""
            node = (metadata or {}).get("langgraph_node")
            is_node = (
                node is not None
                and node == name
                and any(t.startswith(_NODE_TAG) for t in tags or ())
            )
            emitted: list[EventBase] = []
            with self._lock:
                parent = self._runs.get(parent_run_id) if parent_run_id is not None else None
                # The outermost run we see roots a run of its own, even when LangChain names a
                # parent we never saw (a tracing context, or a handler added mid-run).
                root = run_id if parent is None else parent.root
                rec = _Run(
                    _KIND_CHAIN, parent_run_id, root, str(name), time.perf_counter(), str(run_id)
                )
                if parent is None:
                    rec.scope = SCOPE_GRAPH
                    rec.top = True
                    self._runs[run_id] = rec
                    fields: dict[str, Any] = {
                        "parent_id": str(parent_run_id) if parent_run_id else None,
                        "framework": FRAMEWORK,
                        "input": _convert.jsonable(
                            self.run_info["input"]
                            if "input" in self.run_info
                            else _convert.input_text(inputs)
                        ),
                        "attrs": {ATTR_FRAMEWORK_RUN_ID: rec.sid},
                    }
                    for key in ("agent_id", "task_id", "scenario", "trial"):
                        if key in self.run_info:
                            fields[key] = self.run_info[key]
                    emitted.append(self._emit_locked(RunStart, root, fields))
                    emitted.append(self._span_start_locked(run_id, rec, root))
                elif is_node:
                    if parent.scope is None:
                        # A node whose parent is no span: that parent is a nested graph.
                        parent.scope = SCOPE_GRAPH
                        emitted.append(self._span_start_locked(parent_run_id, parent, root))  # type: ignore[arg-type]
                    rec.scope = SCOPE_NODE
                    rec.step = (metadata or {}).get("langgraph_step")
                    self._runs[run_id] = rec
                    emitted.append(self._span_start_locked(run_id, rec, root))
                else:
                    self._runs[run_id] = rec
            if emitted:
                self._after_emit(emitted)
        except Exception as exc:
            self._fail("on_chain_start", exc)

    def _span_start_locked(self, run_id: UUID, rec: _Run, root: UUID) -> EventBase:
        attrs: dict[str, Any] = {ATTR_FRAMEWORK_RUN_ID: rec.sid}
        if rec.scope == SCOPE_NODE:
            attrs[ATTR_LANGGRAPH_NODE] = rec.name
            if rec.step is not None:
                attrs[ATTR_LANGGRAPH_STEP] = rec.step
        return self._emit_locked(
            SpanStart,
            root,
            {
                "span_id": rec.sid,
                "scope": rec.scope,
                "name": rec.name,
                "parent_id": self._span_of(rec.parent),
                "attrs": attrs,
            },
        )

    def _chain_done(self, run_id: UUID, error: BaseException | None, output: Any) -> None:
        emitted: list[EventBase] = []
        with self._lock:
            rec = self._runs.pop(run_id, None)
            if rec is None or rec.scope is None:
                return
            top = rec.top
            fields: dict[str, Any] = {
                "span_id": rec.sid,
                "scope": rec.scope,
                "name": rec.name,
                "parent_id": self._span_of(rec.parent),
                "attrs": {
                    ATTR_FRAMEWORK_RUN_ID: rec.sid,
                    ATTR_LATENCY_MS: (time.perf_counter() - rec.t0) * 1000.0,
                },
            }
            if error is not None:
                fields["status"] = "error"
                fields["error"] = f"{type(error).__name__}: {error}"
            emitted.append(self._emit_locked(SpanEnd, rec.root, fields))
            if top:
                end: dict[str, Any] = {
                    "parent_id": str(rec.parent) if rec.parent else None,
                    "attrs": {ATTR_FRAMEWORK_RUN_ID: rec.sid},
                }
                if error is not None:
                    end["status"] = _RUN_STATUS_FOR.get(type(error).__name__, "error")
                    end["error"] = f"{type(error).__name__}: {error}"
                else:
                    end["output"] = _convert.last_ai_text(output)
                emitted.append(self._emit_locked(RunEnd, rec.root, end))
                self._halt_raised.discard(rec.root)
                self._root_ids.pop(rec.root, None)
                self._messages.pop(rec.root, None)
        self._after_emit(emitted)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A chain returned; spans and the run close here."""
        try:
            self._chain_done(run_id, None, outputs)
        except Exception as exc:
            self._fail("on_chain_end", exc)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A chain raised; the span (and, at the top, the run) ends with status error."""
        try:
            self._chain_done(run_id, error, None)
        except Exception as exc:
            self._fail("on_chain_error", exc)

    # ------------------------------------------------------------------ model calls
    def _model_start(
        self,
        run_id: UUID,
        parent_run_id: UUID | None,
        model: str | None,
        messages: list[Any],
        metadata: Mapping[str, Any] | None,
    ) -> None:
        if self.trial is not None:
            self.trial.count_turn()  # budgets count model turns the same way in every adapter
        with self._lock:
            root = self._root_of(parent_run_id, run_id)
            halted_before = root in self._halt_raised
            rec = _Run(
                _KIND_MODEL, parent_run_id, root, model or "", time.perf_counter(), str(run_id)
            )
            rec.call_id = rec.sid
            self._runs[run_id] = rec
            attrs: dict[str, Any] = {ATTR_FRAMEWORK_RUN_ID: rec.sid}
            node = (metadata or {}).get("langgraph_node")
            if node is not None:
                attrs[ATTR_LANGGRAPH_NODE] = node
            event = self._emit_locked(
                ModelStart,
                root,
                {
                    "call_id": rec.sid,
                    "model": model,
                    "messages": messages,
                    "parent_id": self._span_of(parent_run_id),
                    "attrs": attrs,
                },
            )
        self._after_emit([event])
        if halted_before:
            # The graph turned our SafeHaltError into a tool result (handle_tool_errors=True)
            # and went back to the model: stop here instead, so no further tool can run.
            self._halt_now(root)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[Any]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """A chat model call began: record every message the model is about to read."""
        try:
            parent = self._runs.get(parent_run_id) if parent_run_id is not None else None
            root = parent.root if parent is not None else (parent_run_id or run_id)
            cache = self._messages.get(root)
            if cache is None:
                cache = self._messages.setdefault(root, {})
            converted = _convert.chat_messages(messages[0] if messages else [], cache)
            model = _model_name(serialized, kwargs)
        except Exception as exc:
            self._fail("on_chat_model_start", exc)
            return
        try:
            self._model_start(run_id, parent_run_id, model, converted, metadata)
        except SafeHaltError:
            raise
        except Exception as exc:
            self._fail("on_chat_model_start", exc)

    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """A completion-style model call began; each prompt counts as a user message."""
        try:
            converted = [ChatMessage(role="user", content=str(p)) for p in prompts]
            model = _model_name(serialized, kwargs)
        except Exception as exc:
            self._fail("on_llm_start", exc)
            return
        try:
            self._model_start(run_id, parent_run_id, model, converted, metadata)
        except SafeHaltError:
            raise
        except Exception as exc:
            self._fail("on_llm_start", exc)

    def _model_end(self, run_id: UUID, fields: dict[str, Any]) -> None:
        with self._lock:
            rec = self._runs.pop(run_id, None)
            if rec is None:
                return
            fields["call_id"] = rec.call_id
            fields["latency_ms"] = (time.perf_counter() - rec.t0) * 1000.0
            fields["parent_id"] = self._span_of(rec.parent)
            fields["attrs"] = {ATTR_FRAMEWORK_RUN_ID: rec.sid}
            event = self._emit_locked(ModelEnd, rec.root, fields)
            if rec.root == run_id:
                # A bare model call (no graph around it) is its own run: nothing else ends it.
                self._messages.pop(run_id, None)
                self._root_ids.pop(run_id, None)
        self._after_emit([event])

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A model call returned: its text, reasoning, tool calls and token usage."""
        try:
            generations = getattr(response, "generations", None) or [[]]
            gen = generations[0][0] if generations and generations[0] else None
            message = getattr(gen, "message", None)
            text: str | None
            if message is not None:
                text = _convert.content_text(message.content)
                reasoning = _convert.reasoning_text(message)
                calls = _convert.tool_calls(message)
            else:
                text = getattr(gen, "text", None)
                reasoning = None
                calls = []
            fields: dict[str, Any] = {
                "text": text,
                "reasoning": reasoning,
                "tool_calls": calls,
                "usage": _convert.usage(message, getattr(response, "llm_output", None)),
            }
            self._model_end(run_id, fields)
        except Exception as exc:
            self._fail("on_llm_end", exc)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A model call raised."""
        try:
            self._model_end(run_id, {"error": f"{type(error).__name__}: {error}"})
        except Exception as exc:
            self._fail("on_llm_error", exc)

    # ------------------------------------------------------------------ tool calls
    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """A tool began. An enforced halt stops it here, before its body runs."""
        root: UUID | None = None
        try:
            name = (serialized or {}).get("name") or kwargs.get("name") or ""
            call_id = kwargs.get("tool_call_id")
            event: EventBase | None = None
            with self._lock:
                root = self._root_of(parent_run_id, run_id)
                rec = _Run(
                    _KIND_TOOL, parent_run_id, root, str(name), time.perf_counter(), str(run_id)
                )
                rec.call_id = str(call_id) if call_id else rec.sid
                rec.managed = (parent_run_id, rec.call_id) in self._managed
                self._runs[run_id] = rec
                if not rec.managed:
                    attrs: dict[str, Any] = {ATTR_FRAMEWORK_RUN_ID: rec.sid}
                    node = (metadata or {}).get("langgraph_node")
                    if node is not None:
                        attrs[ATTR_LANGGRAPH_NODE] = node
                    event = self._emit_locked(
                        ToolStart,
                        root,
                        {
                            "call_id": rec.call_id,
                            "tool": rec.name,
                            "args": _convert.tool_args(inputs, input_str),
                            "parent_id": self._span_of(parent_run_id),
                            "attrs": attrs,
                        },
                    )
            if event is not None:
                self._after_emit([event])
        except Exception as exc:
            self._fail("on_tool_start", exc)
        if root is not None:
            self._halt_now(root)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A tool returned (a ToolMessage with status error still counts as an errored call)."""
        try:
            with self._lock:
                rec = self._runs.pop(run_id, None)
                if rec is None or rec.managed:
                    return
                result, status = _convert.tool_output(output)
                event = self._emit_locked(
                    ToolEnd,
                    rec.root,
                    {
                        "call_id": rec.call_id,
                        "tool": rec.name,
                        "result": result,
                        "status": status,
                        "latency_ms": (time.perf_counter() - rec.t0) * 1000.0,
                        "parent_id": self._span_of(rec.parent),
                        "attrs": {ATTR_FRAMEWORK_RUN_ID: rec.sid},
                    },
                )
            self._after_emit([event])
        except Exception as exc:
            self._fail("on_tool_end", exc)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A tool raised."""
        try:
            with self._lock:
                rec = self._runs.pop(run_id, None)
                if rec is None or rec.managed:
                    return
                event = self._emit_locked(
                    ToolError,
                    rec.root,
                    {
                        "call_id": rec.call_id,
                        "tool": rec.name,
                        "error": f"{type(error).__name__}: {error}",
                        "error_type": type(error).__name__,
                        "latency_ms": (time.perf_counter() - rec.t0) * 1000.0,
                        "parent_id": self._span_of(rec.parent),
                        "attrs": {ATTR_FRAMEWORK_RUN_ID: rec.sid},
                    },
                )
            self._after_emit([event])
        except Exception as exc:
            self._fail("on_tool_error", exc)

    # ------------------------------------------------------------------ fault wrappers report here
    def begin_managed_call(self, node_run_id: UUID | None, call_id: str) -> None:
        """A fault wrapper takes over reporting of this tool call (its callbacks stay silent)."""
        with self._lock:
            self._managed.add((node_run_id, call_id))

    def end_managed_call(self, node_run_id: UUID | None, call_id: str) -> None:
        """The fault wrapper is done with this tool call."""
        with self._lock:
            self._managed.discard((node_run_id, call_id))

    def record_tool_call(
        self,
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
        """Record a whole tool call a wrapper ran: ``tool_start``, the fault, then its end.

        The fault's receipt comes before the call's end, as hb-derive/1 requires. ``error``
        set means the call raised out of the tool node (``tool_error``); otherwise ``tool_end``
        with ``status``. ``synthetic`` marks calls whose real tool never ran.
        """
        try:
            with self._lock:
                node_rec = self._runs.get(node_run_id) if node_run_id is not None else None
                root = node_rec.root if node_rec is not None else (node_run_id or _NIL)
                parent = self._span_of(node_run_id)
                attrs: dict[str, Any] = {}
                if synthetic:
                    attrs[ATTR_SYNTHETIC] = True
                if node_rec is not None and node_rec.scope == SCOPE_NODE:
                    attrs[ATTR_LANGGRAPH_NODE] = node_rec.name
                emitted = [
                    self._emit_locked(
                        ToolStart,
                        root,
                        {
                            "call_id": call_id,
                            "tool": tool,
                            "args": {str(k): _convert.jsonable(v) for k, v in args.items()},
                            "parent_id": parent,
                            "attrs": dict(attrs),
                        },
                    )
                ]
                if fault is not None:
                    emitted.append(
                        self._emit_locked(
                            FaultInjected,
                            root,
                            {
                                **{
                                    k: getattr(fault, k)
                                    for k in type(fault).model_fields
                                    if k not in ("run_id", "seq", "ts", "parent_id")
                                },
                                "parent_id": parent,
                            },
                        )
                    )
                end_fields: dict[str, Any] = {
                    "call_id": call_id,
                    "tool": tool,
                    "latency_ms": latency_ms,
                    "parent_id": parent,
                    "attrs": dict(attrs),
                }
                if error is not None:
                    end_fields.update(error=error, error_type=error_type)
                    emitted.append(self._emit_locked(ToolError, root, end_fields))
                else:
                    end_fields.update(result=_convert.jsonable(result), status=status)
                    emitted.append(self._emit_locked(ToolEnd, root, end_fields))
            self._after_emit(emitted)
        except Exception as exc:
            self._fail("record_tool_call", exc)

    def record_fault(self, *, node_run_id: UUID | None, fault: FaultInjected) -> None:
        """Record a fault that hit something other than a tool call (a node-level fault)."""
        try:
            with self._lock:
                node_rec = self._runs.get(node_run_id) if node_run_id is not None else None
                root = node_rec.root if node_rec is not None else (node_run_id or _NIL)
                fields = {
                    k: getattr(fault, k)
                    for k in type(fault).model_fields
                    if k not in ("run_id", "seq", "ts", "parent_id")
                }
                fields["parent_id"] = self._span_of(node_run_id)
                event = self._emit_locked(FaultInjected, root, fields)
            self._after_emit([event])
        except Exception as exc:
            self._fail("record_fault", exc)


_NIL = UUID(int=0)

# Events hb-derive/1 never reads: not worth a trip through the monitor's lock.
_UNOBSERVED: frozenset[type[EventBase]] = frozenset({SpanStart, SpanEnd, RunStart})


def _make(cls: type[EventBase], fields: dict[str, Any]) -> EventBase:
    """Build an event, validated (pydantic-core is faster at this than ``model_construct``).

    A value that fails validation (an odd provider field) must not cost the whole event: it is
    kept unvalidated instead, and the conformance suite checks that normal events round-trip.
    """
    try:
        return cls(**fields)
    except ValueError:
        return cls.model_construct(**fields)


def _model_name(serialized: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> str | None:
    params = kwargs.get("invocation_params") or {}
    for key in ("model", "model_name", "model_id"):
        value = params.get(key)
        if isinstance(value, str) and value:
            return value
    name = kwargs.get("name") or (serialized or {}).get("name")
    if name:
        return str(name)
    kind = params.get("_type")
    return str(kind) if kind else None


def _directive_fields(d: MonitorDirective) -> dict[str, Any]:
    return {
        "action": d.action,
        "reason": d.reason,
        "metric": d.metric,
        "value": d.metric_value,
        "tool": d.target,
        "attrs": {ATTR_STEP_INDEX: d.step_index},
    }


def _halt_fields(record: Mapping[str, Any], *, enforced: bool) -> dict[str, Any]:
    trigger = record.get("trigger_source") or "policy"
    if trigger not in ("policy", "policy_engine", "halt_signal", "manual"):
        trigger = "policy"
    return {
        "metric": record.get("metric"),
        "value": record.get("metric_value"),
        "threshold": record.get("threshold"),
        "reason": str(record.get("reason") or ""),
        "trigger": trigger,
        "enforced": enforced,
        "attrs": {ATTR_STEP_INDEX: record.get("step_index")},
    }
