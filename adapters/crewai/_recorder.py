"""Record a CrewAI run as hbeval events: the hook functions and the LLM proxy report here.

One ``CrewAIRecorder`` holds the events of the runs it watched, in the order they happened, and
feeds each one to a live ``Monitor``. CrewAI calls it from several places:

* interception hooks (``crewai.hooks``): ``EXECUTION_START`` / ``EXECUTION_END`` (crew spans, and
  where the agents' LLMs are wrapped and unwrapped), ``PRE_STEP`` / ``POST_STEP`` of kind
  ``task`` (task and agent spans), ``PRE_TOOL_CALL`` / ``POST_TOOL_CALL`` (tool events, fault
  injection, tool boundaries), ``PRE_MODEL_CALL`` (memory precedents, and a halt fallback);
* ``RecordingLLM``: one ``model_start`` / ``model_end`` pair per model call, on both tool paths.

Hooks are synchronous, so events land in the order CrewAI did things (CrewAI's event bus runs
handlers in a thread pool and would not). Parallel native tool calls run in worker threads; the
pre and post hooks of one call are paired by the identity of the ``tool_input`` dict CrewAI
hands to both.

Capture never breaks the user's crew: an error in this module is logged, kept in ``errors`` and
swallowed (``strict=True`` keeps the first one and raises it at the next model call, which CrewAI
lets through, so tests see it). What hbeval stops on purpose (an enforced Safe Halt, a budget,
a trial timeout) blocks every later tool call at its pre hook and raises at the next model call.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

from hbeval_core.capture import (
    BaseRecorder,
    CallLinks,
    IssuedCall,
    ModelCallRecord,
    SpanRecord,
    ToolCallRecord,
    never_raises,
    precedents_text,
)
from hbeval_core.events import (
    EventBase,
    RunEnd,
    RunStart,
    ToolCall,
    Usage,
)
from hbeval_core.faults.boundary import enter_faulted_call, exit_faulted_call
from hbeval_core.live.monitor import Directive as MonitorDirective
from hbeval_core.live.monitor import Monitor, SafeHaltError
from hbeval_core.vocab import (
    CRASH,
    SCOPE_AGENT,
    SCOPE_CREW,
    SCOPE_TASK,
)

from . import _convert
from ._convert import crewai_error_kind as crewai_error_kind
from ._convert import role_of as _role
from ._convert import sanitize as _sanitize
from ._faults import BLOCKING_MODES, Applied, apply_after_failure, apply_result, apply_without_call
from ._keys import (
    ATTR_AGENT,
    ATTR_BLOCKED_BY,
    ATTR_LATENCY_MS,
    ATTR_LINKED,
    ATTR_MEMORIES,
    ATTR_PATH,
    ATTR_SYNTHETIC,
    ATTR_SYNTHETIC_ID,
    ATTR_TEXT_UNOBSERVED,
    FRAMEWORK,
    PATH_NATIVE,
    PATH_REACT,
)

__all__ = ["CrewAIRecorder", "MemoryLike", "crewai_error_kind"]


MemoryLike = Any
"""An object with ``recall(context, agent_id) -> list[str]`` and ``admit(episode) -> bool``."""


@dataclass
class _ModelCall(ModelCallRecord):
    path: str = PATH_REACT
    key: int = 0
    agent: str | None = None


@dataclass
class _ToolCall(ToolCallRecord):
    args: dict[str, Any] = field(default_factory=dict)
    decision: Any = None
    halted: bool = False
    keep: Any = None
    """The ``tool_input`` dict itself, held so its id is not reused while the call is open."""
    guard: Any = None
    """The token of the "already injecting" flag set while the real tool runs."""


_RUN: ContextVar[str | None] = ContextVar("hbeval_crewai_run", default=None)
"""The run id of the outermost kickoff in progress (``instrument()`` mode, no fixed run id)."""


class CrewAIRecorder(BaseRecorder):
    """Records CrewAI runs as hb-events/1 events and feeds them to a live ``Monitor``.

    Args:
        run_id: Run id every event carries. Default: one id per outermost kickoff
            (``crewai-1``, ``crewai-2``, ...), so one recorder can watch many runs.
        monitor: Where events are folded into live metrics; a fresh ``Monitor()`` by default.
        strict: Keep the first capture error and raise it at the next model call (tests).
        injector: The trial's ``FaultInjector`` (None: no faults).
        memory: A memory with ``recall(context, agent_id)``; precedents go before the first
            model call of each task.
        agent_id: The id memory recall is scoped by (the battery's ``--agent-id``).
        trial: The runner's ``TrialContext`` (budgets, timeouts), if any.
        run_events: Emit ``run_start`` / ``run_end`` around each outermost kickoff (capture
            outside the runner). The adapter emits its own around a trial.
        on_event: Called with every event as it is recorded (a streaming sink).
        on_directive: Called with each monitor ``Directive``.
        on_halt: Called with the halt record when the monitor decides a Safe Halt.
    """

    log = logging.getLogger("hbeval.crewai")

    def __init__(
        self,
        *,
        run_id: str | None = None,
        monitor: Monitor | None = None,
        strict: bool = False,
        injector: Any = None,
        memory: MemoryLike = None,
        agent_id: str | None = None,
        trial: Any = None,
        run_events: bool = True,
        on_event: Callable[[EventBase], Any] | None = None,
        on_directive: Callable[[MonitorDirective], Any] | None = None,
        on_halt: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        super().__init__(
            run_id=run_id,
            monitor=monitor,
            strict=strict,
            on_event=on_event,
            on_directive=on_directive,
            on_halt=on_halt,
            trial=trial,
        )
        self.injector = injector
        self.memory = memory
        self.agent_id = agent_id
        self.run_events = run_events
        self.stop: BaseException | None = None
        """Why no tool may run any more (SafeHaltError, BudgetExceeded, TrialCancelled)."""
        self.memories_injected = 0
        self._spans: dict[tuple[str, int], SpanRecord] = {}
        self._span_order: list[SpanRecord] = []
        self._links = CallLinks()
        self._inflight: dict[int, _ToolCall] = {}
        self._react_ids: dict[str, str] = {}
        self._seen: dict[int, dict[int, Any]] = {}
        self._memory_done: set[tuple[int, int]] = set()
        self._memory_counts: dict[int, int] = {}
        self._wrapped: dict[int, tuple[Any, Any]] = {}
        self._crew_runs: dict[int, tuple[str, Token[str | None] | None]] = {}

    @property
    def strict_error(self) -> BaseException | None:
        """In strict mode: the first capture error, raised at the next model call."""
        return self.first_error if self.strict else None

    # ------------------------------------------------------------------ public helpers
    def current_run_id(self) -> str:
        """The run id events recorded now carry."""
        if self.run_id is not None:
            return self.run_id
        return _RUN.get() or FRAMEWORK

    # ------------------------------------------------------------------ runs and spans
    def run_start(self, **fields: Any) -> None:
        """Emit the run's ``run_start`` (framework crewai)."""
        self.emit(RunStart, framework=FRAMEWORK, **fields)

    def run_end(self, **fields: Any) -> None:
        """Emit the run's ``run_end``."""
        self.emit(RunEnd, **fields)

    def _open_span(
        self, key: tuple[str, int], scope: str, name: str, parent: str | None
    ) -> SpanRecord:
        n = self.next_number(scope)
        span = SpanRecord(f"{scope}-{n}", scope, name, self.current_run_id(), parent)
        with self._lock:
            self._spans[key] = span
            self._span_order.append(span)
        self.emit_span_start(span)
        return span

    def _close_span(
        self, key: tuple[str, int], status: str = "ok", error: str | None = None
    ) -> None:
        with self._lock:
            span = self._spans.pop(key, None)
            if span is None:
                return
            if span in self._span_order:
                self._span_order.remove(span)
        latency = (time.perf_counter() - span.t0) * 1000.0
        self.emit_span_end(span, status=status, error=error, attrs={ATTR_LATENCY_MS: latency})

    def parent_of(self, agent: Any = None, task: Any = None, crew: Any = None) -> str | None:
        """The span an event of ``agent`` (in ``task`` of ``crew``) belongs to."""
        with self._lock:
            for key in (("agent", id(agent)), ("task", id(task)), ("crew", id(crew))):
                if key[1] != id(None):
                    span = self._spans.get(key)
                    if span is not None:
                        return span.span_id
            return self._span_order[-1].span_id if self._span_order else None

    def crew_start(self, crew: Any) -> None:
        """A kickoff began: wrap its agents' LLMs, open the crew span (and the run, if ours)."""
        if crew is None:
            return
        if self.run_id is None and _RUN.get() is None:
            run_id = f"{FRAMEWORK}-{self.next_number('run')}"
            token = _RUN.set(run_id)
            with self._lock:
                self._crew_runs[id(crew)] = (run_id, token)
            if self.run_events:
                self.run_start(input=None, attrs={"crew": str(getattr(crew, "name", "") or "")})
        elif (
            self.run_events and self.run_id is not None and not self._crew_runs and not self._spans
        ):
            with self._lock:
                self._crew_runs[id(crew)] = (self.run_id, None)
            self.run_start(input=None, attrs={"crew": str(getattr(crew, "name", "") or "")})
        self.attach(crew)
        self._open_span(
            ("crew", id(crew)),
            SCOPE_CREW,
            str(getattr(crew, "name", "") or "crew"),
            self.parent_of(),
        )

    def crew_end(
        self, crew: Any, status: str = "completed", error: Any = None, output: Any = None
    ) -> None:
        """A kickoff ended: close what is still open under it, the crew span, and the run if ours."""
        if crew is None:
            return
        failed = status != "completed"
        text = f"{type(error).__name__}: {error}" if error is not None else None
        crew_span = self._spans.get(("crew", id(crew)))
        if crew_span is not None:
            with self._lock:
                inner = [
                    (k, s)
                    for k, s in self._spans.items()
                    if s.scope in (SCOPE_TASK, SCOPE_AGENT)
                    and self._span_order.index(s) > self._span_order.index(crew_span)
                ]
            for key, _ in sorted(inner, key=lambda ks: -self._span_order.index(ks[1])):
                self._close_span(key, "error" if failed else "ok", text)
        self._close_span(("crew", id(crew)), "error" if failed else "ok", text)
        with self._lock:
            owned = self._crew_runs.pop(id(crew), None)
        if owned is not None:
            if self.run_events:
                raw = getattr(output, "raw", None)
                self.run_end(
                    status="error" if failed else "ok",
                    output=raw if isinstance(raw, str) else None,
                    error=text,
                )
            if owned[1] is not None:
                try:
                    _RUN.reset(owned[1])
                except ValueError:
                    _RUN.set(None)
            self.detach()

    def task_start(self, task: Any, agent: Any) -> None:
        """A task began: open its span and, inside it, the span of the agent doing it."""
        if agent is not None:
            self.attach_agents([agent])
        name = str(getattr(task, "name", None) or getattr(task, "description", "") or "task")
        parent = self.parent_of(crew=getattr(agent, "crew", None))
        span = self._open_span(("task", id(task)), SCOPE_TASK, name[:200], parent)
        self._open_span(("agent", id(agent)), SCOPE_AGENT, _role(agent) or "agent", span.span_id)

    def task_end(self, task: Any, agent: Any) -> None:
        """A task ended: close the agent span, then the task span."""
        self._close_span(("agent", id(agent)))
        self._close_span(("task", id(task)))

    # ------------------------------------------------------------------ LLM wrapping
    def attach(self, crew: Any) -> None:
        """Route the model calls of ``crew``'s agents (and its manager) through a recording proxy."""
        agents = list(getattr(crew, "agents", None) or [])
        manager = getattr(crew, "manager_agent", None)
        if manager is not None:
            agents.append(manager)
        self.attach_agents(agents)

    def attach_agents(self, agents: list[Any]) -> None:
        """Wrap each agent's LLM once. A hierarchical crew builds its manager from ``manager_llm``
        only inside the kickoff, so the agent doing a task is wrapped again when the task starts."""
        from ._llm import wrap_agent

        for agent in agents:
            with self._lock:
                if id(agent) in self._wrapped:
                    continue
            original = wrap_agent(agent, self)
            if original is not None:
                with self._lock:
                    self._wrapped[id(agent)] = (agent, original)

    def detach(self) -> None:
        """Put every LLM this recorder wrapped back on its agent. Idempotent."""
        from ._llm import unwrap_agent

        with self._lock:
            wrapped = list(self._wrapped.values())
            self._wrapped.clear()
        for agent, original in reversed(wrapped):
            try:
                unwrap_agent(agent, original)
            except Exception as exc:  # restoring must go on for the others
                self.errors.append(f"detach: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        """End of a capture: unwrap LLMs and close spans left open (a kickoff that raised)."""
        self.detach()
        with self._lock:
            open_keys = [
                k
                for k, _ in sorted(
                    self._spans.items(), key=lambda ks: -self._span_order.index(ks[1])
                )
            ]
        for key in open_keys:
            try:
                self._close_span(key, "error", "the kickoff ended before this span closed")
            except Exception as exc:
                self.errors.append(f"close: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ model calls (proxy)
    def model_start(
        self, llm: Any, messages: Any, tools: Any, task: Any, agent: Any
    ) -> _ModelCall | None:
        """A model call is about to go to the inner LLM; raises what hbeval stopped the run for."""
        if self.stop is not None:
            raise self.stop
        if self.strict_error is not None:
            raise self.strict_error
        try:
            n = self.next_number("model")
            key = id(agent) if agent is not None else 0
            path = PATH_NATIVE if tools else PATH_REACT
            msgs = [messages] if isinstance(messages, str) else list(messages or [])
            with self._lock:
                # Calls the previous reply issued and no tool claimed never ran (unknown tools).
                self._links.drop(key)
                fresh = self._new_messages(key, msgs)
                memories = self._memory_counts.pop(key, 0)
            converted = _convert.chat_messages(fresh, self._react_ids)
            attrs: dict[str, Any] = {ATTR_PATH: path}
            role = _role(agent)
            if role:
                attrs[ATTR_AGENT] = role
            if memories:
                attrs[ATTR_MEMORIES] = memories
            run_id, parent = self.current_run_id(), self.parent_of(agent, task)
            call = _ModelCall(f"model-{n}", run_id, parent, attrs, path=path, key=key, agent=role)
            self.count_turn()
            model = str(getattr(getattr(llm, "inner", llm), "model", "") or "") or None
            self.emit_model_start(call, model=model, messages=converted)
            return call
        except Exception as exc:
            self.fail("model_start", exc)
            return None

    def _new_messages(self, key: int, messages: Sequence[Any]) -> list[Any]:
        """Messages not sent with this agent's previous call (new, or changed in place)."""
        seen = self._seen.get(key, {})
        fresh: list[Any] = []
        now: dict[int, Any] = {}
        for m in messages:
            content = m.get("content") if isinstance(m, Mapping) else m
            now[id(m)] = (m, content)
            old = seen.get(id(m))
            if old is None or old[0] is not m or old[1] is not content:
                fresh.append(m)
        self._seen[key] = now
        return fresh

    @never_raises("model_end")
    def model_end(self, call: _ModelCall | None, answer: Any, usage: Usage | None = None) -> None:
        """The inner LLM answered: record the reply, the tool calls it issued and its usage
        (when the inner LLM counted it)."""
        if call is None:
            return
        if call.path == PATH_REACT and isinstance(answer, str):
            reply = _convert.react_reply(answer)
        else:
            reply = _convert.native_reply(answer)
        tool_calls: list[ToolCall] = []
        issued_calls: list[IssuedCall] = []
        for issued in reply.calls:
            call_id = issued.id or f"call-{self.next_number('call')}"
            tool_calls.append(ToolCall(id=call_id, name=issued.name, args=issued.args))
            issued_calls.append(IssuedCall(call_id, _sanitize(issued.name), issued.args))
        with self._lock:
            if issued_calls:
                self._links.issue(call.key, issued_calls)
            if call.path == PATH_REACT and tool_calls and isinstance(answer, str):
                self._react_ids[answer.strip()] = tool_calls[0].id
        attrs: dict[str, Any] = {ATTR_PATH: call.path}
        if call.agent:
            attrs[ATTR_AGENT] = call.agent
        if call.path == PATH_REACT and tool_calls:
            attrs[ATTR_SYNTHETIC_ID] = True
        if tool_calls and isinstance(answer, list) and not (reply.text or reply.reasoning):
            # A native provider returned the tool calls alone: the message's text, if the
            # model wrote one, was dropped before it reached us.
            attrs[ATTR_TEXT_UNOBSERVED] = True
        self.emit_model_end(
            call,
            text=reply.text,
            reasoning=reply.reasoning,
            tool_calls=tool_calls,
            usage=usage,
            attrs=attrs,
        )

    @never_raises("model_error")
    def model_error(self, call: _ModelCall | None, exc: BaseException) -> None:
        """The model call raised (or hbeval stopped it): close it with the error."""
        if call is None:
            return
        self.emit_model_end(call, error=exc, attrs={ATTR_PATH: call.path})

    # ------------------------------------------------------------------ tool calls (hooks)
    def _claim(self, agent: Any, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        """The id the model gave (or hbeval made up for) this call; False when none matched."""
        key = id(agent) if agent is not None else 0
        with self._lock:
            # The same tool with the same arguments, else the only open call of that tool.
            call_id = self._links.claim(name, args, key, 0)
        if call_id is not None:
            return call_id, True
        return f"call-{self.next_number('call')}", False

    def _boundary(self) -> None:
        """Decide whether a tool may run: an enforced halt, a budget or a timeout stops it."""
        if self.stop is not None:
            return
        try:
            self.monitor.check_tool_boundary()
        except SafeHaltError as exc:
            self.stop = exc
            return
        trial = self.trial
        if trial is None:
            return
        from hbeval_core.contract import BudgetExceeded, TrialStop

        try:
            trial.check_tool_boundary()
        except TrialStop as exc:
            self.stop = exc
            if isinstance(exc, BudgetExceeded):
                self.emit_budget_halt(exc, parent_id=self.parent_of())

    def _open_tool(self, ctx: Any, *, with_agent: bool = True) -> _ToolCall:
        """Link a tool call to the model reply that issued it, and record its start."""
        name, agent = str(ctx.tool_name), getattr(ctx, "agent", None)
        args = _convert.tool_args(ctx.tool_input)
        call_id, linked = self._claim(agent, name, args)
        attrs: dict[str, Any] = {}
        role = _role(agent)
        if role and with_agent:
            attrs[ATTR_AGENT] = role
        if not linked:
            attrs[ATTR_LINKED] = False
        parent = self.parent_of(agent, getattr(ctx, "task", None), getattr(ctx, "crew", None))
        call = _ToolCall(call_id, name, self.current_run_id(), parent, attrs, args=args)
        self.emit_tool_start(call, args)
        return call

    @never_raises("pre_tool")
    def pre_tool(self, ctx: Any) -> bool | None:
        """``PRE_TOOL_CALL``: check the boundary, open the call, decide its fault (False blocks)."""
        key = id(ctx.tool_input)
        self._boundary()
        if self.stop is not None:
            halted = _ToolCall("", str(ctx.tool_name), self.current_run_id(), halted=True)
            halted.keep = ctx.tool_input
            with self._lock:
                self._inflight[key] = halted
            return False
        call = self._open_tool(ctx)
        call.keep = ctx.tool_input
        injector = self.injector
        if injector is not None and injector.enabled and injector.plan is not None:
            call.decision = injector.decide(call.tool, call.args, call.call_id)
            if call.decision is not None and call.decision.spec.after_ms > 0:
                injector.clock.sleep(call.decision.spec.after_ms / 1000.0)
        if call.decision is not None and call.decision.mode in BLOCKING_MODES:
            with self._lock:
                self._inflight[key] = call
            return False
        if injector is not None:
            # The call runs under this injector: a ``faultable`` function inside the tool
            # passes through instead of being faulted a second time (post_tool clears it).
            call.guard = enter_faulted_call()
        with self._lock:
            self._inflight[key] = call
        return None

    @never_raises("post_tool")
    def post_tool(self, ctx: Any) -> str | None:
        """``POST_TOOL_CALL``: close the call; apply its fault (a returned str is what the agent reads)."""
        with self._lock:
            call = self._inflight.pop(id(ctx.tool_input), None)
        if call is not None and call.guard is not None:
            exit_faulted_call(call.guard)
        if call is None:
            # A hook registered before ours blocked the call, so our pre hook never ran.
            self._boundary()
            call = self._open_tool(ctx, with_agent=False)
        if call.halted:
            return f"Tool '{call.tool}' was not run: hbeval stopped this run ({self.stop})."
        return self._finish_tool(call, ctx.tool_result, ctx.raw_tool_result)

    def _finish_tool(self, call: _ToolCall, text: Any, raw: Any) -> str | None:
        latency = (time.perf_counter() - call.t0) * 1000.0
        attrs = dict(call.attrs)
        kind = crewai_error_kind(text) or crewai_error_kind(raw)
        d = call.decision
        if d is None:
            if kind == "blocked":
                attrs[ATTR_BLOCKED_BY] = "user_hook"
                attrs[ATTR_SYNTHETIC] = True
            result = raw if raw is not None and kind is None else text
            status = "error" if kind else "ok"
            self.emit_tool_end(
                call,
                result=_convert.jsonable(result),
                status=status,
                latency_ms=latency,
                attrs=attrs,
            )
            return None
        injector = self.injector
        applied: Applied
        if d.mode in BLOCKING_MODES:
            applied = apply_without_call(injector, d)
            attrs[ATTR_SYNTHETIC] = True
        elif kind is not None:
            applied = apply_after_failure(injector, d, "ToolError")
        else:
            applied = apply_result(injector, d, raw if raw is not None else text)
        end: dict[str, Any] = {"fault": applied.fault, "latency_ms": latency, "attrs": attrs}
        if d.mode == CRASH:
            self.emit_tool_end(
                call, error=applied.error or "", error_type=applied.error_type, **end
            )
        elif applied.error is not None or kind is not None:
            result = applied.error if applied.error is not None else _convert.jsonable(text)
            self.emit_tool_end(call, result=result, status="error", **end)
        else:
            self.emit_tool_end(call, result=_convert.jsonable(applied.result), **end)
        return applied.text

    # ------------------------------------------------------------------ memory and model hook
    def pre_model(self, ctx: Any) -> None:
        """``PRE_MODEL_CALL``: put memory precedents before a task's first model call.

        Also a fallback stop: when hbeval stopped the run and the agent's LLM is not our proxy
        (so nothing else would raise), the model call is aborted here.
        """
        if self.stop is not None:
            from ._llm import RecordingLLM

            if not isinstance(getattr(ctx, "llm", None), RecordingLLM):
                from crewai.hooks import HookAborted

                raise HookAborted(str(self.stop), source="hbeval")
        memory = self.memory
        if memory is None or getattr(ctx, "iterations", 0) != 0:
            return
        try:
            executor, task, agent = getattr(ctx, "executor", None), ctx.task, ctx.agent
            marker = (id(executor), id(task))
            with self._lock:
                if marker in self._memory_done:
                    return
                self._memory_done.add(marker)
            context = precedent_context(task, agent)
            agent_id = self.agent_id or _role(agent) or "default"
            precedents = [
                str(p) for p in (memory.recall(context, agent_id) or []) if str(p).strip()
            ]
            if not precedents:
                return
            text = precedents_text(precedents)
            if text is None:
                return
            messages = ctx.messages
            pos = 0
            while (
                pos < len(messages)
                and isinstance(messages[pos], Mapping)
                and messages[pos].get("role") == "system"
            ):
                pos += 1
            messages.insert(pos, {"role": "user", "content": text})
            with self._lock:
                self.memories_injected += len(precedents)
                key = id(agent) if agent is not None else 0
                self._memory_counts[key] = self._memory_counts.get(key, 0) + len(precedents)
        except Exception as exc:
            self.fail("pre_model", exc)

    # ------------------------------------------------------------------ step and execution hooks
    @never_raises("exec_start")
    def exec_start(self, ctx: Any) -> None:
        """``EXECUTION_START``: a crew kickoff began."""
        self.crew_start(getattr(ctx, "crew", None))

    @never_raises("exec_end")
    def exec_end(self, ctx: Any) -> None:
        """``EXECUTION_END``: a crew kickoff ended (completed or failed)."""
        self.crew_end(
            getattr(ctx, "crew", None),
            str(getattr(ctx, "status", "completed")),
            getattr(ctx, "error", None),
            getattr(ctx, "output", None),
        )

    @never_raises("pre_step")
    def pre_step(self, ctx: Any) -> None:
        """``PRE_STEP``: a task began."""
        if getattr(ctx, "kind", None) != "task":
            return
        self.task_start(ctx.task, ctx.agent)

    @never_raises("post_step")
    def post_step(self, ctx: Any) -> None:
        """``POST_STEP``: a task ended."""
        if getattr(ctx, "kind", None) != "task":
            return
        self.task_end(ctx.task, ctx.agent)


def precedent_context(task: Any, agent: Any) -> str:
    """What memory recall is asked about: the task's description and the agent's role."""
    parts = [str(getattr(task, "description", "") or "")]
    role = _role(agent)
    if role:
        parts.append(f"agent: {role}")
    return "\n".join(p for p in parts if p)
