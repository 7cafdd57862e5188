"""``LangGraphAdapter``: a compiled graph (or a factory of one) as a battery target.

One trial: the task's question goes in as ``{"messages": [HumanMessage(question)]}``; the graph
runs with a fresh ``HBEvalCallbackHandler`` attached through the context-variable hook and with
its ToolNodes routed through the trial's ``FaultInjector``; the final state, the trace and how the
run ended come back as a ``TrialResult``. Nothing of the user's graph is changed after the trial.

With a memory attached (``memory_hook``, done by ``run_battery(..., memory=edm)``) each trial
first recalls the precedents of its own agent id for the question. When any qualify, a
``SystemMessage`` listing them goes into the input messages just before the question, so the
model reads them on its first call; the ``run_start`` event records what was recalled in
``attrs["memory_recall"]``; and the trial's ``Monitor`` gets a precedents lookup, so Adapt-Plan
directives carry the same precedents. The scored episode is admitted by the runner at the end
of the run, not here.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hbeval_core.capture import Trial, TrialTemplate, capture_metadata, result_of, run_to_end
from hbeval_core.contract import Ended, Task, TrialResult, token_usage
from hbeval_core.events import EventBase, RunStart
from hbeval_core.live.monitor import Directive as MonitorDirective
from hbeval_core.live.monitor import Monitor

from . import _convert
from ._keys import FRAMEWORK

if TYPE_CHECKING:
    from hbeval_core.faults.boundary import CallReport, CallReporter

__all__ = ["LangGraphAdapter", "is_langgraph_target", "resolve_graph"]

log = logging.getLogger("hbeval.langgraph")

_DEFAULT_AGENT_ID = "default"
"""The agent id precedents are recalled for outside a battery run."""
_INJECTOR: ContextVar[Any] = ContextVar("hbeval_langgraph_adapter_injector", default=None)
_MEMORY: ContextVar[Any] = ContextVar("hbeval_langgraph_memory", default=None)


# Exception class names -> TrialResult.status. Matched by name so this module need not import
# the runner's or the injector's exception classes just to classify.
def is_langgraph_target(target: Any) -> bool:
    """Whether ``target`` is a LangGraph graph or a factory marked as returning one.

    Looks only at type and module names, so it never imports LangGraph to answer "no".
    """
    if type(target).__module__.startswith("langgraph"):
        return True
    if callable(target):
        if getattr(target, "__hbeval_target_kind__", None) == FRAMEWORK:
            return True
        try:
            annotation = inspect.signature(target).return_annotation
        except (TypeError, ValueError):
            return False
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__module__", "")
        return isinstance(text, str) and (
            "CompiledStateGraph" in text or text.startswith("langgraph")
        )
    return False


def resolve_graph(target: Any) -> Any:
    """The graph to run: ``target`` itself, or what a no-argument factory returns."""
    if type(target).__module__.startswith("langgraph"):
        return target
    if callable(target):
        graph = target()
        if not hasattr(graph, "invoke"):
            raise TypeError(
                f"target factory {getattr(target, '__name__', target)!r} returned {type(graph).__name__}; "
                "it must return a compiled LangGraph graph"
            )
        return graph
    raise TypeError(
        f"a LangGraph target must be a compiled graph or a factory returning one (got {type(target).__name__})"
    )


class LangGraphAdapter(TrialTemplate):
    """The core ``Adapter`` for LangGraph: instrument, scope, run trials, inject faults.

    Args:
        monitor_factory: Builds each trial's ``Monitor`` (e.g. with ``enforce=True`` and a halt
            policy); a plain ``Monitor()`` by default.
        on_directive: Called with every monitor directive of every trial.
        config: Extra ``RunnableConfig`` for each trial's run (``recursion_limit`` defaults to 50).
        input_builder: ``(task, question) -> graph input``; the default is
            ``{"messages": [SystemMessage(task.system)?, HumanMessage(question)]}``.
        strict: Re-raise capture errors (tests).
    """

    name = FRAMEWORK
    scripted_model_faults = True
    """A battery's model faults reach this framework's scripted models (``hbeval_langgraph.testing``) as
    the provider's own exceptions; a real provider client gets them through the proxy."""
    _injector_var = _INJECTOR
    _memory_var = _MEMORY

    def __init__(
        self,
        *,
        monitor_factory: Callable[[], Monitor] | None = None,
        on_directive: Callable[[MonitorDirective], Any] | None = None,
        config: Mapping[str, Any] | None = None,
        input_builder: Callable[[Task, str], Any] | None = None,
        strict: bool = False,
    ) -> None:
        self.monitor_factory = monitor_factory
        self.on_directive = on_directive
        self.config: dict[str, Any] = {"recursion_limit": 50, **dict(config or {})}
        self.input_builder = input_builder
        self.strict = strict
        self._memory: Any = None

    # ------------------------------------------------------------------ protocol: capture
    def instrument(self) -> None:
        """Get LangChain ready to hand runs to hbeval (registers the hook once). Idempotent.

        The adapter records per trial (``run_trial``, ``scope``), so it sets no process-wide
        handler: a battery of thousands of trials keeps each trace with its own trial. For
        capture of every run in an app, use ``hbeval_langgraph.instrument()``.
        """
        from ._hook import ensure_hook

        ensure_hook()

    def uninstrument(self) -> None:
        """Nothing to undo: trials restore what they patch when they end. Idempotent."""

    @contextmanager
    def scope(self, run_id: str) -> Iterator[Any]:
        """Record every run started in the block under ``run_id``; yields the handler."""
        from ._hook import capture

        with capture(run_id=run_id, strict=self.strict) as handler:
            yield handler

    def memory_hook(self, memory: Any) -> None:
        """Recall this agent's precedents before each trial's first model call (None detaches).

        ``memory`` has ``recall(context, agent_id) -> list[str]`` (an ``hbeval.memory.EDM``
        returns only qualified episodes of that agent id at or above its similarity threshold)
        and optionally ``precedents_for(context, agent_id)`` for Adapt-Plan directives. Kept on
        the adapter as well as in this context: the runner's worker threads do not inherit
        context variables.
        """
        super().memory_hook(memory)

    # ------------------------------------------------------------------ protocol: trials
    def _inputs(self, task: Task, question: str) -> Any:
        if self.input_builder is not None:
            return self.input_builder(task, question)
        from langchain_core.messages import HumanMessage, SystemMessage

        messages: list[Any] = [SystemMessage(task.system)] if task.system else []
        messages.append(HumanMessage(question))
        return {"messages": messages}

    def _monitor(self, lookup: Callable[[Any], list[Any]] | None) -> Monitor:
        """The trial's monitor; with ``lookup``, Adapt-Plan directives carry memory precedents.

        A ``monitor_factory`` gets the lookup only if it accepts a ``precedents`` keyword.
        """
        factory = self.monitor_factory
        if factory is None:
            return Monitor(precedents=lookup) if lookup is not None else Monitor()
        if lookup is not None and _accepts_keyword(factory, "precedents"):
            return factory(precedents=lookup)  # type: ignore[call-arg]
        return factory()

    def factory_kwargs(self, factory: Any, task: Task) -> dict[str, Any]:
        """What a battery passes the target factory for ``task``: a fresh ``InMemorySaver`` as
        ``checkpointer`` when the task resumes interrupts and the factory takes that keyword."""
        if getattr(task, "resume", ()) and _accepts_checkpointer(factory):
            from langgraph.checkpoint.memory import InMemorySaver

            return {"checkpointer": InMemorySaver()}
        return {}

    def prepare_trial(self, target: Any, trial: Trial) -> _Prepared:
        """Recall memory, build the trial's handler and monitor, the graph and its input."""
        from ._handler import HBEvalCallbackHandler

        task, ctx = trial.task, trial.ctx
        memory = self.current_memory()
        recall: Any = None
        lookup: Callable[[Any], list[Any]] | None = None
        if memory is not None:
            from hbeval_core.contract import precedent_lookup, recall_precedents

            agent_id = ctx.agent_id if ctx is not None else _DEFAULT_AGENT_ID
            recall = recall_precedents(memory, trial.question, agent_id, strict=self.strict)
            try:
                lookup = precedent_lookup(memory, trial.question, agent_id)
            except Exception as exc:  # memory never breaks the agent
                if self.strict:
                    raise
                log.warning("memory precedent lookup could not be built: %r", exc)
        handler = trial.recorder = HBEvalCallbackHandler(
            run_id=trial.run_id,
            monitor=self._monitor(lookup),
            strict=self.strict,
            on_directive=self.on_directive,
            run_info=trial.run_info(),
        )
        handler.trial = ctx
        resume = tuple(getattr(task, "resume", ()) or ())
        graph = resumable_graph(target, task) if resume else resolve_graph(target)
        inputs = self._inputs(task, trial.question)
        delivery = "none"
        if recall is not None and recall.message() is not None:
            inputs, delivery = _with_precedents(inputs, recall.message())
        return _Prepared(handler, graph, inputs, resume, recall, delivery)

    def execute_trial(self, prepared: _Prepared, trial: Trial) -> None:
        """Stream the graph with capture, tool faults and ``faultable`` reporting in place."""
        from hbeval_core.faults.boundary import reporting_to

        from ._faults import tool_faults
        from ._hook import capture

        graph, inputs, resume = prepared.graph, prepared.inputs, prepared.resume
        with (
            capture(prepared.handler),
            tool_faults(graph, trial.injector),
            reporting_to(_reporter(prepared.handler)),
        ):
            # stream(values) rather than invoke: a run that raises still leaves the last
            # state it reached, which verifiers and scoring can read.
            driver = _Driver(graph)
            if resume or getattr(graph, "checkpointer", None) is not None:
                reached: list[Any] = [None]
                try:
                    trial.final = _run_across_interrupts(
                        driver, inputs, dict(self.config), resume, trial.run_id, reached
                    )
                finally:
                    trial.final = reached[0] if trial.final is None else trial.final
            else:
                last: list[Any] = [None]
                try:
                    driver.stream(inputs, dict(self.config), last)
                finally:
                    trial.final = last[0]

    def trial_result(self, prepared: _Prepared, trial: Trial, ended: Ended) -> TrialResult:
        """The trace (with the memory recall on its ``run_start``), the answer, the messages."""
        handler = prepared.handler
        events: list[EventBase] = list(handler.events)
        if prepared.recall is not None:
            events = _record_recall(events, prepared.recall.record(prepared.delivery))
        return result_of(
            trial,
            ended,
            events,
            response_text=_convert.last_ai_text(
                trial.final, getattr(trial.task, "answer_from", None)
            ),
            metadata=capture_metadata(handler.errors, usage=token_usage(events)),
            messages=_messages_of(trial.final),
        )


@dataclass
class _Prepared:
    """What ``prepare_trial`` built for one trial."""

    handler: Any
    graph: Any
    inputs: Any
    resume: tuple[Any, ...]
    recall: Any
    delivery: str


_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def _messages_of(state: Any) -> tuple[Any, ...]:
    """A graph state's ``messages`` as ``Message`` records (empty when it has none)."""
    from hbeval_core.contract import Message

    messages = state.get("messages") if isinstance(state, Mapping) else None
    out = []
    for msg in messages if isinstance(messages, list) else ():
        kind = getattr(msg, "type", None)
        if kind is None:
            continue
        name = getattr(msg, "name", None)
        out.append(
            Message(
                role=_ROLES.get(str(kind), str(kind)),
                content=_convert.content_text(getattr(msg, "content", "")) or "",
                name=name if isinstance(name, str) else None,
            )
        )
    return tuple(out)


class GraphInterrupted(RuntimeError):
    """The graph paused with ``interrupt()`` and the task has no resume value left for it."""


def _accepts_checkpointer(factory: Any) -> bool:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    param = params.get("checkpointer")
    return param is not None and param.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )


def resumable_graph(target: Any, task: Task) -> Any:
    """The graph for a task that resumes interrupts: it must keep checkpoints between calls.

    A graph compiled with a checkpointer is used as it is. A factory that takes a
    ``checkpointer`` keyword gets a fresh ``InMemorySaver`` per trial. Otherwise the trial cannot
    resume, and the error says how to allow it; hbeval never swaps a graph's checkpointer itself.
    """
    if not type(target).__module__.startswith("langgraph") and _accepts_checkpointer(target):
        from langgraph.checkpoint.memory import InMemorySaver

        graph = target(checkpointer=InMemorySaver())
        if not hasattr(graph, "invoke"):
            raise TypeError(f"target factory returned {type(graph).__name__}, not a graph")
        return graph
    graph = resolve_graph(target)
    if getattr(graph, "checkpointer", None) is None:
        raise ValueError(
            f"task {task.id!r} gives 'resume' values but the graph has no checkpointer, so it "
            "cannot pause and resume: compile it with one (graph.compile(checkpointer="
            "InMemorySaver())) or let the factory take a 'checkpointer' keyword argument"
        )
    return graph


def _async_only(graph: Any, depth: int = 0) -> bool:
    """Whether a node of ``graph`` (or of a subgraph node) has only an async function, so the
    graph runs only through LangGraph's async API (``invoke`` refuses it)."""
    nodes = getattr(graph, "nodes", None)
    if not isinstance(nodes, Mapping) or depth > 8:
        return False
    for node in nodes.values():
        bound = getattr(node, "bound", None)
        if bound is None:
            continue
        if getattr(bound, "func", "") is None and getattr(bound, "afunc", None) is not None:
            return True
        if bound is not graph and _async_only(bound, depth + 1):
            return True
    return False


class _Driver:
    """Runs a graph from the trial's thread: ``stream``/``get_state``, or their async forms
    when a node is async-only (a node written ``async def`` that awaits ``tool.ainvoke``)."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.is_async = _async_only(graph)

    def stream(self, payload: Any, config: dict[str, Any], last: list[Any]) -> None:
        """Stream state values; ``last[0]`` holds the latest, also when the run raises."""
        if not self.is_async:
            for chunk in self.graph.stream(payload, config=config, stream_mode="values"):
                last[0] = chunk
            return

        async def drive() -> None:
            async for chunk in self.graph.astream(payload, config=config, stream_mode="values"):
                last[0] = chunk

        run_to_end(drive())

    def get_state(self, config: dict[str, Any]) -> Any:
        if not self.is_async:
            return self.graph.get_state(config)
        return run_to_end(self.graph.aget_state(config))


def _run_across_interrupts(
    driver: _Driver,
    inputs: Any,
    config: dict[str, Any],
    resume: tuple[Any, ...],
    run_id: str,
    reached: list[Any],
) -> Any:
    """Run the graph, resuming each ``interrupt()`` with the next of ``resume``; one trial.

    The invocations run inside one outer runnable, so the trace has one run with the graph's
    calls beneath it (a tool call issued before a pause still links to its model reply).
    Checkpoints go to a thread of this trial's own. Returns the final graph state; raises
    ``GraphInterrupted`` when the graph pauses once more than ``resume`` has values for.
    ``reached[0]`` holds the state reached so far, for a run that raises.
    """
    import uuid

    from langchain_core.runnables import RunnableLambda

    from langgraph.types import Command

    configurable = dict(config.get("configurable") or {})
    configurable["thread_id"] = f"hbeval-{run_id}-{uuid.uuid4().hex[:8]}"
    thread = {"configurable": configurable}
    outer = {k: v for k, v in config.items() if k != "configurable"}

    graph = driver.graph

    def drive(first: Any) -> Any:
        payload, left = first, list(resume)
        while True:
            last: list[Any] = [None]
            try:
                driver.stream(payload, thread, last)
            finally:
                if isinstance(last[0], Mapping):
                    reached[0] = {k: v for k, v in last[0].items() if k != "__interrupt__"}
            snapshot = driver.get_state(thread)
            reached[0] = snapshot.values
            paused = tuple(getattr(snapshot, "interrupts", ()) or ())
            if not paused:
                return snapshot.values
            if len(left) < len(paused):
                used = len(resume) - len(left)
                waiting = ", ".join(f"interrupt({p.value!r})" for p in paused)
                raise GraphInterrupted(
                    f"the graph paused at {waiting} after {used} resume value(s); add "
                    f"{len(paused) - len(left)} more value(s) to resume it with to the task's "
                    "'resume' list (one per pending interrupt, in the order they are listed)"
                )
            if len(paused) == 1:
                payload = Command(resume=left.pop(0))
            else:
                # Parallel branches paused together: LangGraph needs one value per interrupt id.
                payload = Command(resume={p.id: left.pop(0) for p in paused})

    name = str(getattr(graph, "name", None) or "LangGraph")
    return RunnableLambda(drive, name=name).invoke(inputs, config=outer)  # type: ignore[arg-type]


class _Reporter:
    """Records calls of ``faultable`` functions run from a node, under that node's span: the
    start before the function runs, the rest once it returned or raised."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler

    @staticmethod
    def _node_run() -> Any:
        from langchain_core.runnables.config import var_child_runnable_config

        from ._active import handlers_of

        return handlers_of(var_child_runnable_config.get())[1]

    def start(self, report: CallReport) -> Any:
        return self.handler.begin_tool_call(
            node_run_id=self._node_run(),
            call_id=report.call_id,
            tool=report.tool,
            args=report.args,
            fault=report.fault,
            synthetic=report.synthetic,
        )

    def __call__(self, report: CallReport) -> None:
        self.handler.end_tool_call(
            report.opened,
            node_run_id=self._node_run(),
            call_id=report.call_id,
            tool=report.tool,
            args=report.args,
            fault=report.fault,
            result=report.result,
            status=report.status,
            error=report.error,
            error_type=report.error_type,
            latency_ms=report.latency_ms,
            synthetic=report.synthetic,
        )


def _reporter(handler: Any) -> CallReporter:
    """Where ``faultable`` functions run from the graph's nodes report their calls."""
    return _Reporter(handler)


def _accepts_keyword(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn`` takes the keyword argument ``name`` (or any keyword)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD
        or (p.name == name and p.kind is not inspect.Parameter.POSITIONAL_ONLY)
        for p in params
    )


def _with_precedents(inputs: Any, text: str) -> tuple[Any, str]:
    """``inputs`` with a ``SystemMessage(text)`` just before the first human message.

    Only a ``{"messages": [...]}`` input can carry it; any other shape is left as it is and
    the delivery is "none" (a custom ``input_builder`` decides its own input).
    """
    if not isinstance(inputs, Mapping) or not isinstance(inputs.get("messages"), list):
        return inputs, "none"
    from langchain_core.messages import SystemMessage

    messages = list(inputs["messages"])
    at = next(
        (i for i, m in enumerate(messages) if getattr(m, "type", None) == "human"),
        len(messages),
    )
    messages.insert(at, SystemMessage(text))
    return {**inputs, "messages": messages}, "system_message"


def _record_recall(events: list[EventBase], record: dict[str, Any]) -> list[EventBase]:
    """The trace with ``record`` under ``attrs["memory_recall"]`` of its first ``run_start``.

    The recall happens before the graph starts, so the run's own start event is where it is
    recorded; the event is copied, never mutated.
    """
    from hbeval_core.contract import ATTR_MEMORY_RECALL

    for i, event in enumerate(events):
        if isinstance(event, RunStart):
            attrs = {**event.attrs, ATTR_MEMORY_RECALL: record}
            events[i] = event.model_copy(update={"attrs": attrs})
            break
    return events
