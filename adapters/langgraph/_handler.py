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
  (``status`` error when the ToolMessage says so) / ``tool_error``;
* a tool call the graph answered without running a tool (``ToolNode`` answers a call to a tool
  it does not have with an error ``ToolMessage``, and no tool callback fires) -> ``tool_start``
  + ``tool_end`` status error, marked ``synthetic``, when the chain that wrote that message ends.

Every other chain (prompts, sequences) emits nothing but is remembered, so that events inside
it name the nearest span as their ``parent_id``.

Cost: LangChain calls the handler inline, about ten times per tool call. A handler nothing
watches live (it made its own monitor, and has no ``on_event`` sink, no ``on_directive`` or
``on_halt`` callback, no ``strict``) only logs each callback (``_logged``): its arguments and
both clocks. The log is recorded on first read of ``events``, ``errors`` or ``first_error``,
with the clocks it logged, into exactly the events, metrics and monitor signals recording at
once makes; reading ``monitor`` records it and stops logging, since whoever holds the monitor
may read it at any time. Otherwise each callback is recorded as it comes, on the capture base's
fast path (``hbeval_core.capture.DeferredRecorder``): events the monitor folds are built from
values the handler checked without a second validation (anything it can't vouch for is
validated), and span events, run starts and model input messages wait until ``events`` is read.
Runs are looked up by their UUID's integer, and each run's record keeps its parent's, its root's
id and its own id text, so no event walks the tree.
``benchmarks/bench_langgraph_overhead.py`` measures both.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from hbeval_core.capture import DeferredRecorder, never_raises
from hbeval_core.contract import describe_error, run_status_of
from hbeval_core.events import (
    ChatMessage,
    EventBase,
    ModelEnd,
    ModelStart,
    RunEnd,
    ToolEnd,
    ToolError,
    ToolStart,
    Usage,
)
from hbeval_core.live.monitor import Directive as MonitorDirective
from hbeval_core.live.monitor import Monitor, SafeHaltError
from hbeval_core.vocab import SCOPE_GRAPH, SCOPE_NODE

from . import _convert
from ._keys import ATTR_FRAMEWORK_RUN_ID, ATTR_LANGGRAPH_NODE, ATTR_SYNTHETIC, FRAMEWORK
from ._logged import LoggedCallbacks
from ._runs import (
    NIL,
    STR_ONLY,
    Run,
    Said,
    key_of,
    make,
    model_name,
    plain_messages,
    run_start,
    span_end,
    span_start,
    uuid_text,
)
from ._wrapped import WrapperReports

__all__ = ["HBEvalCallbackHandler"]


_NODE_TAG = "graph:step:"
_INF = float("inf")


class HBEvalCallbackHandler(WrapperReports, LoggedCallbacks, DeferredRecorder, BaseCallbackHandler):
    """Records a LangGraph run as hbeval events and feeds them to a live ``Monitor``.

    Thread-safe: parallel tool calls and concurrent runs may share one handler (events are
    appended under a lock; each run's events carry its own ``run_id``). Errors inside the handler
    are logged and swallowed, so capture never breaks the agent; ``strict=True`` re-raises them
    (for tests). The only exception it raises on purpose is ``SafeHaltError`` once an enforced
    halt was decided (``Monitor(enforce=True, ...)``), at the next tool boundary.

    Made with its own monitor and no callback of the user's, it logs the callbacks and records
    them when ``events``, ``errors``, ``first_error`` or ``monitor`` is first read (the agent
    pays only the log; the events and metrics are the same, stamped when each callback came).
    Pass a ``monitor`` to have every step folded as it happens.

    Args:
        run_id: Run id every event carries. Default: the LangChain id of each outermost run, so
            one handler can watch many runs.
        monitor: Where events are folded into live metrics; a fresh ``Monitor()`` by default.
        strict: Re-raise the handler's own errors instead of logging them.
        on_directive: Called with each monitor ``Directive`` (Adapt-Plan re-plan, retry, ...).
        on_halt: Called with the halt record when the monitor decides a Safe Halt.
        on_event: Called with every event as it is recorded (a streaming sink).
        run_info: Extra ``run_start`` fields (agent_id, task_id, scenario, trial, input).
        max_events: Keep at most this many events (the newest, trimmed each time a run ends);
            None keeps every event. ``instrument()`` gives its long-lived handler a window of
            ``DEFAULT_EVENT_WINDOW`` events, or 0 (keep none) when an ``on_event`` sink
            receives them.
    """

    log = logging.getLogger("hbeval.langgraph")

    # Our own guard decides what escapes a callback (see _guard); LangChain must let it through.
    raise_error: bool = True
    # Cheap and thread-safe, so no executor hop per event under ainvoke.
    run_inline: bool = True

    # Callback kinds nothing here reads: LangChain skips them instead of calling a no-op.
    # (Tool callbacks answer to ``ignore_agent``, so that one stays False.)
    @property
    def ignore_retry(self) -> bool:
        """Retries are not recorded (the tool or model call that retried is)."""
        return True

    @property
    def ignore_retriever(self) -> bool:
        """Retriever runs are not recorded."""
        return True

    @property
    def ignore_custom_event(self) -> bool:
        """Custom events are not recorded."""
        return True

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
        max_events: int | None = None,
    ) -> None:
        if max_events is not None and (
            isinstance(max_events, bool) or not isinstance(max_events, int) or max_events < 0
        ):
            raise ValueError(f"max_events must be an int >= 0 or None (got {max_events!r})")
        self.max_events = max_events
        DeferredRecorder.__init__(
            self,
            run_id=run_id,
            monitor=monitor,
            strict=strict,
            on_event=on_event,
            on_directive=on_directive,
            on_halt=on_halt,
        )
        self.run_info: dict[str, Any] = dict(run_info or {})
        self._runs: dict[Any, Run] = {}  # by key_of(LangChain run id)
        self._managed: set[tuple[UUID | None, str]] = set()
        self._managed_runs: set[Any] = set()
        self._halt_raised: set[UUID] = set()
        self._root_ids: dict[UUID, str] = {}
        # Per run: the messages its model calls converted so far; see chat_messages.
        self._messages: dict[Any, _convert.MessageCache] = {}  # by key_of(root)
        # Per run: tool calls its models issued that no tool has started yet, by call id.
        self._issued: dict[Any, dict[str, Any]] = {}  # by key_of(root)
        if (
            monitor is None
            and on_event is None
            and on_directive is None
            and on_halt is None
            and not strict
        ):
            # Nothing watches each step as it happens: log the callbacks (see ``_logged``).
            self._log = deque()

    def build(self, cls: type[EventBase], fields: dict[str, Any]) -> EventBase:
        """Monitor signals and wrapper reports are validated (their values are not ours)."""
        return make(cls, fields)

    def check_tool_boundary(self, node_run_id: UUID | None = None) -> None:
        """Raise ``SafeHaltError`` when an enforced halt was decided: no tool may run after it.

        ``node_run_id`` (the LangChain run that is about to call the tool) lets the handler
        remember which run was halted, so a graph that swallows the error is stopped again at
        its next model call.
        """
        if self._log is not None:
            self.stop_logging()
        if self._monitor.halted:
            rec = self._runs.get(key_of(node_run_id)) if node_run_id is not None else None
            self._halt_now(rec.root if rec is not None else (node_run_id or NIL))

    # ------------------------------------------------------------------ internals
    def _run_id_for(self, root: UUID) -> str:
        if self.run_id is not None:
            return self.run_id
        rid = self._root_ids.get(root)
        if rid is None:
            rid = self._root_ids[root] = uuid_text(root)
        return rid

    def _span_of(self, run: UUID | None) -> str | None:
        """The nearest enclosing span of ``run`` (itself included), as a parent id."""
        runs = self._runs
        while run is not None:
            rec = runs.get(key_of(run))
            if rec is None:
                # An ancestor we never saw (the handler joined mid-run): name it as it is.
                return str(run)
            if rec.scope is not None:
                return rec.sid
            run = rec.parent
        return None

    def _parent_span(self, rec: Run) -> str | None:
        """``_span_of(rec.parent)``, read off the parent's record while it is open."""
        p = rec.prec
        if p is not None and p.open and p.scope is not None:
            return p.sid
        return self._span_of(rec.parent)

    def _new_run(
        self, run_id: UUID, key: Any, parent_run_id: UUID | None, name: str, sid: str
    ) -> Run:
        """A record for a run that starts now, tied to its parent's; the caller holds the lock.

        Its root is the parent's root; a parent we never saw roots the run itself, and a run
        with no parent is its own root.
        """
        if parent_run_id is None:
            return Run(None, run_id, key, name, self._clock(), sid, sid, None)
        pkey = getattr(parent_run_id, "int", parent_run_id)  # key_of, inline
        prec = self._runs.get(pkey)
        if prec is None:
            rid = uuid_text(parent_run_id)
            return Run(parent_run_id, parent_run_id, pkey, name, self._clock(), sid, rid, None)
        return Run(parent_run_id, prec.root, prec.rkey, name, self._clock(), sid, prec.rid, prec)

    def _after(self, event: EventBase | None, run_id: Any, parent_id: str | None) -> None:
        """After recording (outside the lock): the sink gets ``event`` (None: given already, or
        deferred), then new monitor signals become events carrying ``run_id``/``parent_id``.

        It has nothing to do without a sink, a step or a halt, so the callbacks check those
        first and skip the call (a tool call makes about nine callbacks)."""
        if event is not None and self.on_event is not None:
            self.call_user(self.on_event, event)
        # drain_monitor asks monitor_pending itself (asking twice would find nothing the second
        # time); only a completed step or a halt can have left something to record.
        if self._stepped or (self._halt_seen is False and self._monitor.halted):
            self.drain_monitor(run_id, parent_id)

    def _halt_now(self, root: UUID) -> None:
        """Raise ``SafeHaltError`` at a tool boundary when an enforced halt is pending."""
        monitor = self._monitor
        if monitor.halted and monitor.enforce and monitor.halt_record is not None:
            with self._lock:
                self._halt_raised.add(root)
            raise SafeHaltError(monitor.halt_record)

    # ------------------------------------------------------------------ chains: runs and spans
    def _record_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        run_id: UUID,
        parent_run_id: UUID | None,
        tags: list[str] | None,
        metadata: dict[str, Any] | None,
        kwargs: dict[str, Any],
    ) -> None:
        try:
            name = kwargs.get("name") or (serialized or {}).get("name") or ""
            node = metadata.get("langgraph_node") if metadata else None
            is_node = False
            if node is not None and node == name:
                for tag in tags or ():
                    if tag.startswith(_NODE_TAG):
                        is_node = True
                        break
            key = getattr(run_id, "int", run_id)
            with self._lock:
                runs = self._runs
                parent = (
                    runs.get(getattr(parent_run_id, "int", parent_run_id))
                    if parent_run_id is not None
                    else None
                )
                sid = uuid_text(run_id)
                if parent is None:
                    # The outermost run we see roots a run of its own, even when LangChain names
                    # a parent we never saw (a tracing context, or a handler added mid-run).
                    rec = Run(parent_run_id, run_id, key, str(name), self._clock(), sid, sid, None)
                    rec.scope = SCOPE_GRAPH
                    rec.top = True
                    runs[key] = rec
                    rid = self.run_id if self.run_id is not None else sid
                    fields = self._run_start_fields(parent_run_id, inputs, sid, rid)
                    first = self.record_deferred_locked(run_start, fields)
                    parent_id = fields["parent_id"]  # == _span_of(parent_run_id): never seen
                    last = self.record_deferred_locked(span_start, rec, parent_id, rid)
                elif is_node:
                    rec = Run(
                        parent_run_id, parent.root, parent.rkey, str(name), self._clock(), sid,
                        parent.rid, parent,
                    )  # fmt: skip
                    rid = self.run_id if self.run_id is not None else rec.rid
                    first = None
                    if parent.scope is None:
                        # A node whose parent is no span: that parent is a nested graph.
                        parent.scope = SCOPE_GRAPH
                        first = self.record_deferred_locked(
                            span_start, parent, self._parent_span(parent), rid
                        )
                    rec.scope = SCOPE_NODE
                    rec.step = metadata.get("langgraph_step")  # type: ignore[union-attr]
                    runs[key] = rec
                    parent_id = parent.sid
                    last = self.record_deferred_locked(span_start, rec, parent_id, rid)
                else:
                    runs[key] = Run(
                        parent_run_id, parent.root, parent.rkey, str(name), self._clock(), sid,
                        parent.rid, parent,
                    )  # fmt: skip
                    return
            if self.on_event is not None:
                if first is not None:
                    self.call_user(self.on_event, first)
                if last is not None:
                    self.call_user(self.on_event, last)
            # ``_after(None, ...)`` inline: a chain callback is a third of all callbacks.
            if self._stepped or (self._halt_seen is False and self._monitor.halted):
                self.drain_monitor(rid, parent_id)
        except Exception as exc:
            self.fail("on_chain_start", exc)

    def _run_start_fields(
        self, parent_run_id: UUID | None, inputs: Any, sid: str, rid: str
    ) -> dict[str, Any]:
        """The ``run_start`` fields of a graph run LangChain calls ``sid``, recorded as ``rid``."""
        run_info = self.run_info
        fields: dict[str, Any] = {
            "parent_id": uuid_text(parent_run_id) if parent_run_id else None,
            "framework": FRAMEWORK,
            "input": _convert.jsonable(
                run_info["input"]
                if "input" in run_info
                else (inputs.text if type(inputs) is Said else _convert.input_text(inputs))
            ),
            "attrs": {ATTR_FRAMEWORK_RUN_ID: sid},
            "run_id": rid,
        }
        for field in ("agent_id", "task_id", "scenario", "trial"):
            if field in run_info:
                fields[field] = run_info[field]
        return fields

    def _chain_done(self, run_id: UUID, error: BaseException | None, output: Any) -> None:
        with self._lock:
            rec = self._runs.pop(getattr(run_id, "int", run_id), None)
            if rec is None:
                return
            rec.open = False
            if rec.scope is None:
                return
            rid = self.run_id if self.run_id is not None else rec.rid
            parent_id = self._parent_span(rec)
            latency = (self._clock() - rec.t0) * 1000.0
            message = None if error is None else f"{type(error).__name__}: {error}"
            span = self.record_deferred_locked(span_end, rec, parent_id, rid, latency, message)
            end = None
            if rec.top:
                fields: dict[str, Any] = {
                    "parent_id": str(rec.parent) if rec.parent else None,
                    "attrs": {ATTR_FRAMEWORK_RUN_ID: rec.sid},
                    "run_id": rid,
                }
                if error is not None:
                    fields["status"] = run_status_of(error)
                    fields["error"] = message
                else:
                    fields["output"] = (
                        output.text if type(output) is Said else _convert.last_ai_text(output)
                    )
                end = self.record_checked_locked(RunEnd, fields, True)
                parent_id = fields["parent_id"]
                self._halt_raised.discard(rec.root)
                self._root_ids.pop(rec.root, None)
                self._messages.pop(rec.rkey, None)
                self._issued.pop(rec.rkey, None)
                if self.max_events is not None:
                    self._trim_locked(self.max_events)
        if self.on_event is not None:
            if span is not None:
                self.call_user(self.on_event, span)
            if end is not None:
                self.call_user(self.on_event, end)
        if self._stepped or (self._halt_seen is False and self._monitor.halted):  # _after, inline
            self.drain_monitor(rid, parent_id)

    # The callbacks LangChain calls most catch their own errors inline rather than through
    # ``never_raises``: its wrapper would repack every call's keyword arguments (a tool call
    # makes about five such callbacks).
    def _record_chain_end(self, outputs: Any, run_id: UUID) -> None:
        try:
            if self._issued and type(outputs) is not Said:
                self._unrun_calls(outputs, run_id)
            self._chain_done(run_id, None, outputs)
        except Exception as exc:
            self.fail("on_chain_end", exc)

    def _unrun_calls(self, outputs: Any, run_id: UUID) -> None:
        """Record the issued calls a chain answered with an error ``ToolMessage`` while no tool
        ran for them (a call to a tool the ``ToolNode`` does not have): the agent read a failed
        call, so the trace holds one."""
        messages = _convert.tool_messages(outputs)
        if not messages:
            return
        recorded: list[EventBase] = []
        with self._lock:
            rec = self._runs.get(getattr(run_id, "int", run_id))
            issued = self._issued.get(rec.rkey) if rec is not None else None
            if rec is None or not issued:
                return
            parent_id = rec.sid if rec.scope is not None else self._parent_span(rec)
            rid = self.run_id if self.run_id is not None else rec.rid
            for msg in messages:
                call = issued.pop(str(getattr(msg, "tool_call_id", "") or ""), None)
                if call is None or getattr(msg, "status", None) != "error":
                    continue
                ids: dict[str, Any] = {
                    "call_id": call.id,
                    "tool": call.name,
                    "parent_id": parent_id,
                    "run_id": rid,
                }
                attrs = {ATTR_FRAMEWORK_RUN_ID: rec.sid, ATTR_SYNTHETIC: True}
                start = {**ids, "args": dict(call.args), "attrs": dict(attrs)}
                recorded.append(self.record_checked_locked(ToolStart, start, False))
                result = _convert.jsonable(msg.content)
                end = {**ids, "result": result, "status": "error", "attrs": attrs}
                recorded.append(self.record_checked_locked(ToolEnd, end, False))
        if recorded:
            if self.on_event is not None:
                for event in recorded:
                    self.call_user(self.on_event, event)
            if self._stepped or (self._halt_seen is False and self._monitor.halted):
                self.drain_monitor(rid, parent_id)

    @never_raises("on_chain_error")
    def _record_chain_error(self, error: BaseException, run_id: UUID) -> None:
        self._chain_done(run_id, error, None)

    # ------------------------------------------------------------------ model calls
    def _model_start(self, where: str, *args: Any) -> None:
        """Record a model call's start; only an enforced halt escapes (to stop the graph)."""
        try:
            self._model_started(*args)
        except SafeHaltError:
            raise
        except Exception as exc:
            self.fail(where, exc)

    def _model_started(
        self,
        run_id: UUID,
        parent_run_id: UUID | None,
        model: str | None,
        messages: list[Any],
        metadata: Mapping[str, Any] | None,
        fill: Callable[[], None] | None = None,
    ) -> None:
        self.count_turn()
        key = getattr(run_id, "int", run_id)
        with self._lock:
            sid = uuid_text(run_id)
            rec = self._new_run(run_id, key, parent_run_id, model or "", sid)
            root = rec.root
            halted_before = bool(self._halt_raised) and root in self._halt_raised
            rec.call_id = sid
            self._runs[key] = rec
            attrs: dict[str, Any] = {ATTR_FRAMEWORK_RUN_ID: sid}
            node = metadata.get("langgraph_node") if metadata else None
            if node is not None:
                attrs[ATTR_LANGGRAPH_NODE] = node
            fields: dict[str, Any] = {
                "call_id": sid,
                "model": model,
                "messages": messages,
                "parent_id": self._parent_span(rec),
                "attrs": attrs,
                "run_id": self.run_id if self.run_id is not None else rec.rid,
            }
            checked = (model is None or type(model) is str) and type(messages) is list
            if fill is not None:
                # Before the monitor sees the event, in case it fails.
                self.add_finisher_locked("model_start messages", fill)
            event = self.record_checked_locked(ModelStart, fields, checked)
        if self.on_event is not None or self._stepped or self._monitor.halted:
            self._after(event, fields["run_id"], fields["parent_id"])
        if halted_before:
            # The graph turned our SafeHaltError into a tool result (handle_tool_errors=True)
            # and went back to the model: stop here instead, so no further tool can run.
            self._halt_now(root)

    def _record_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: list[Any],
        run_id: UUID,
        parent_run_id: UUID | None,
        metadata: dict[str, Any] | None,
        kwargs: dict[str, Any],
        taken: list[Any] | None,
    ) -> None:
        """``taken``: each message's content when the call was logged (None: read them now)."""
        try:
            parent = (
                self._runs.get(getattr(parent_run_id, "int", parent_run_id))
                if parent_run_id is not None
                else None
            )
            if parent is not None:
                rkey = parent.rkey
            else:
                root = parent_run_id or run_id
                rkey = getattr(root, "int", root)
            cache = self._messages.get(rkey)
            if cache is None:
                cache = self._messages.setdefault(rkey, _convert.MessageCache())
            fill: Callable[[], None] | None = None
            # Deferring the conversion is safe when nothing but the stock monitor (which never
            # reads model inputs) sees the event before ``events`` is read: no sink, no trial,
            # no strict mode (whose errors must surface in the callback).
            contents = (
                (taken if taken is not None else _convert.message_contents(inputs))
                if self.trial is None
                and self.on_event is None
                and not self.strict
                and type(self._monitor) is Monitor
                else None
            )
            if contents is not None and plain_messages(inputs, contents):
                # Only the monitor sees the event during the run, and it never reads the
                # messages: note what the model read now, convert it when events are read
                # (plain LangChain messages with text content: that conversion can't fail).
                converted: list[Any] = []
                fill = partial(_fill, converted, list(inputs), contents, cache)
            else:
                converted = _convert.chat_messages(inputs, cache, taken or contents)
            model = model_name(serialized, kwargs)
        except Exception as exc:
            self.fail("on_chat_model_start", exc)
            return
        self._model_start(
            "on_chat_model_start", run_id, parent_run_id, model, converted, metadata, fill
        )

    def _record_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        run_id: UUID,
        parent_run_id: UUID | None,
        metadata: dict[str, Any] | None,
        kwargs: dict[str, Any],
    ) -> None:
        try:
            converted = [ChatMessage(role="user", content=str(p)) for p in prompts]
            model = model_name(serialized, kwargs)
        except Exception as exc:
            self.fail("on_llm_start", exc)
            return
        self._model_start("on_llm_start", run_id, parent_run_id, model, converted, metadata)

    def _model_end(self, run_id: UUID, fields: dict[str, Any], checked: bool) -> None:
        with self._lock:
            rec = self._runs.pop(getattr(run_id, "int", run_id), None)
            if rec is None:
                return
            rec.open = False
            latency = (self._clock() - rec.t0) * 1000.0
            fields["call_id"] = rec.call_id
            fields["latency_ms"] = latency
            fields["parent_id"] = self._parent_span(rec)
            fields["attrs"] = {ATTR_FRAMEWORK_RUN_ID: rec.sid}
            fields["run_id"] = self.run_id if self.run_id is not None else rec.rid
            event = self.record_checked_locked(ModelEnd, fields, checked and 0.0 <= latency < _INF)
            calls = fields.get("tool_calls")
            if calls and rec.parent is not None:
                issued = self._issued.get(rec.rkey)
                if issued is None:
                    issued = self._issued[rec.rkey] = {}
                for call in calls:
                    if call.id:
                        issued[call.id] = call
            if rec.parent is None:
                # A bare model call (no graph around it) is its own run: nothing else ends it.
                self._messages.pop(rec.rkey, None)
                self._root_ids.pop(run_id, None)
                if self.max_events is not None:
                    self._trim_locked(self.max_events)
        if self.on_event is not None or self._stepped or self._monitor.halted:
            self._after(event, fields["run_id"], fields["parent_id"])

    def _record_llm_end(self, response: Any, run_id: UUID) -> None:
        try:
            self._llm_end(response, run_id)
        except Exception as exc:
            self.fail("on_llm_end", exc)

    def _llm_end(self, response: Any, run_id: UUID) -> None:
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
        usage = _convert.usage(message, getattr(response, "llm_output", None))
        fields: dict[str, Any] = {
            "text": text,
            "reasoning": reasoning,
            "tool_calls": calls,
            "usage": usage,
        }
        checked = (
            (text is None or type(text) is str)
            and (reasoning is None or type(reasoning) is str)
            and type(calls) is list
            and (usage is None or type(usage) is Usage)
        )
        self._model_end(run_id, fields, checked)

    @never_raises("on_llm_error")
    def _record_llm_error(self, error: BaseException, run_id: UUID) -> None:
        self._model_end(run_id, {"error": f"{type(error).__name__}: {error}"}, True)

    # ------------------------------------------------------------------ tool calls
    def tool_started_locked(self, rkey: Any, call_id: str) -> None:
        """A tool began for ``call_id`` in the run ``rkey`` roots; the caller holds the lock."""
        issued = self._issued.get(rkey)
        if issued:
            issued.pop(call_id, None)

    def _record_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        run_id: UUID,
        parent_run_id: UUID | None,
        metadata: dict[str, Any] | None,
        inputs: dict[str, Any] | None,
        kwargs: dict[str, Any],
    ) -> None:
        """An enforced halt stops the tool here, before its body runs."""
        root: UUID | None = None
        try:
            name = (serialized or {}).get("name") or kwargs.get("name") or ""
            call_id = kwargs.get("tool_call_id")
            event: EventBase | None = None
            fields: dict[str, Any] | None = None
            key = getattr(run_id, "int", run_id)
            with self._lock:
                sid = uuid_text(run_id)
                rec = self._new_run(run_id, key, parent_run_id, str(name), sid)
                root = rec.root
                rec.call_id = str(call_id) if call_id else sid
                if call_id and self._issued:
                    self.tool_started_locked(rec.rkey, rec.call_id)
                rec.managed = (
                    bool(self._managed) and (parent_run_id, rec.call_id) in self._managed
                ) or (bool(self._managed_runs) and key in self._managed_runs)
                self._runs[key] = rec
                if not rec.managed:
                    attrs: dict[str, Any] = {ATTR_FRAMEWORK_RUN_ID: sid}
                    node = metadata.get("langgraph_node") if metadata else None
                    if node is not None:
                        attrs[ATTR_LANGGRAPH_NODE] = node
                    args = _convert.tool_args(inputs, input_str)
                    fields = {
                        "call_id": rec.call_id,
                        "tool": rec.name,
                        "args": args,
                        "parent_id": self._parent_span(rec),
                        "attrs": attrs,
                        "run_id": self.run_id if self.run_id is not None else rec.rid,
                    }
                    checked = type(args) is dict and set(map(type, args)) <= STR_ONLY
                    event = self.record_checked_locked(ToolStart, fields, checked)
            if fields is not None:
                if self.on_event is not None or self._stepped or self._monitor.halted:
                    self._after(event, fields["run_id"], fields["parent_id"])
        except Exception as exc:
            self.fail("on_tool_start", exc)
        if root is not None and self._monitor.halted:
            self._halt_now(root)

    def _record_tool_end(self, output: Any, run_id: UUID) -> None:
        try:
            self._tool_done(run_id, output, None)
        except Exception as exc:
            self.fail("on_tool_end", exc)

    @never_raises("on_tool_error")
    def _record_tool_error(self, error: BaseException, run_id: UUID) -> None:
        self._tool_done(run_id, None, error)

    def _tool_done(self, run_id: UUID, output: Any, error: BaseException | None) -> None:
        with self._lock:
            rec = self._runs.pop(getattr(run_id, "int", run_id), None)
            if rec is None:
                return
            rec.open = False
            if rec.managed:
                return
            latency = (self._clock() - rec.t0) * 1000.0
            fields: dict[str, Any] = {
                "call_id": rec.call_id,
                "tool": rec.name,
                "latency_ms": latency,
                "parent_id": self._parent_span(rec),
                "attrs": {ATTR_FRAMEWORK_RUN_ID: rec.sid},
                "run_id": self.run_id if self.run_id is not None else rec.rid,
            }
            checked = 0.0 <= latency < _INF
            if error is None:
                fields["result"], status = _convert.tool_output(output)
                fields["status"] = status
                checked = checked and (status == "ok" or status == "error")
                event = self.record_checked_locked(ToolEnd, fields, checked)
            else:
                fields["error"] = describe_error(error)
                fields["error_type"] = type(error).__name__
                event = self.record_checked_locked(ToolError, fields, checked)
        if self.on_event is not None or self._stepped or self._monitor.halted:
            self._after(event, fields["run_id"], fields["parent_id"])


def _fill(
    target: list[Any], messages: list[Any], contents: list[Any], cache: _convert.MessageCache
) -> None:
    """Convert a model call's input messages, as the model read them, into ``target``."""
    target.extend(_convert.chat_messages(messages, cache, contents))
