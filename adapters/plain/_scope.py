"""Capture of plain Python agents (``agent(question) -> str | dict``): a real trace, real faults.

A plain agent has no framework to hook, so it opts in with three small helpers:

* ``@tool`` wraps each tool. Inside a trial it emits ``tool_start`` / ``tool_end`` /
  ``tool_error`` with call ids, passes the call through the trial's ``FaultInjector``, and either
  returns the result or raises ``ToolCallError`` carrying the error text (injected or real) so
  the agent can react. Outside a trial it just calls the function: no cost, no behaviour change.
* ``think(text, tool_calls=[(name, args)], reasoning=None)`` records a model turn: what the agent
  decided and why. Tool calls it declares are linked by id to the calls that follow, which is
  what makes a step traceable.
* ``precedents()`` gives the agent the precedents memory recalled for this trial (with
  ``run_battery(..., memory=edm)``: this agent's qualified episodes of earlier runs, each a
  line quoting its recorded figures); put them in your prompt if you want them used.
* ``model_input(messages)`` records what the agent read before a turn. When an agent calls
  ``think`` without it, the turn's input is the tool results and errors the agent received since
  its previous turn, because in plain Python that is exactly what it read. Fault delivery
  receipts look for the fault's payload in this input.

The agent's return value is the trial's final state. A dict's reference behavioural fields
(``steps``, ``retries``, ``replanned``, ``had_fault``, ``recovered_intentionally``,
``traceable``, ``success``, ``tool_calls``) become ``claim`` events: the trace decides, the
claims are only checked against it.

Targets: an *agent* is called once per trial with the question (or with ``(system, question)``
when it takes two required positional arguments, as the reference SDK's runner). A *factory*
(a callable with no required arguments that returns an agent) gives each trial a fresh agent;
the runner decides which it has (``detect_target_kind``) and calls the factory itself.

The trial is found through context variables, so concurrent trials never mix. A thread the
agent starts itself sees no trial (its tools run untraced) unless it is started inside
``contextvars.copy_context().run``.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Final, NoReturn, TypeVar, cast, overload

from hbeval_core.capture import UNWATCHED, BaseRecorder
from hbeval_core.contract import (
    BudgetExceeded,
    TrialCancelled,
    TrialContext,
)
from hbeval_core.events import (
    ChatMessage,
    Claim,
    EventBase,
    FaultInjected,
    ModelEnd,
    ModelStart,
    Replan,
    ToolCall,
    ToolEnd,
    ToolError,
    ToolStart,
    Usage,
)
from hbeval_core.faults.boundary import BOUNDARY_SCOPE, ToolCallError, faulted_call

__all__ = [
    "BEHAVIOURAL_FIELDS",
    "ToolCallError",
    "TrialScope",
    "claim",
    "current_scope",
    "model_input",
    "precedents",
    "replan",
    "response_text_of",
    "think",
    "tool",
]

F = TypeVar("F", bound=Callable[..., Any])

log = logging.getLogger("hbeval.plain")

BEHAVIOURAL_FIELDS: Final = (
    "steps",
    "retries",
    "replanned",
    "had_fault",
    "recovered_intentionally",
    "traceable",
    "success",
    "tool_calls",
)
"""The reference runner's eight behavioural keys; kept as claims, never as facts."""

_RESPONSE_KEYS: Final = ("response", "answer", "output", "final_answer", "text")
DEFAULT_AGENT_ID: Final = "default"
"""The agent id precedents are recalled for outside a battery run."""


_PLAIN: Final = frozenset({str, int, bool, type(None)})


_MAX_CAPTURE_DEPTH: Final = 32


def _placeholder(value: Any) -> str:
    return f"<unrepresentable {type(value).__qualname__}>"


def _safe_repr(value: Any) -> str:
    """``repr(value)``, or a placeholder when it raises (a broken ``__repr__``, deep nesting)."""
    try:
        text = repr(value)
    except Exception:
        return _placeholder(value)
    return text if isinstance(text, str) else _placeholder(value)


def _key(key: Any) -> str:
    try:
        return str(key)
    except Exception:
        return _placeholder(key)


def _jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy of ``value`` for an event (the agent keeps the original object).

    Never raises: capture must not change what the agent receives, so a value that cannot be
    copied (a ``__repr__`` that raises, a list nested thousands of levels deep) is recorded as a
    placeholder instead.
    """
    try:
        return _copy(value, depth)
    except Exception:  # RecursionError included: a mapping or sequence that fights back
        return _placeholder(value)


def _copy(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is float:
        return value if math.isfinite(value) else repr(value)
    if depth > _MAX_CAPTURE_DEPTH:
        if isinstance(value, (Mapping, list, tuple)):
            return f"<{kind.__qualname__} nested deeper than {_MAX_CAPTURE_DEPTH} levels>"
        return _safe_repr(value)
    if isinstance(value, Mapping):
        # Scalars inline: tool arguments and results are mostly flat, and this runs per call.
        return {
            (k if type(k) is str else _key(k)): (v if type(v) in _PLAIN else _copy(v, depth + 1))
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [v if type(v) in _PLAIN else _copy(v, depth + 1) for v in value]
    if isinstance(value, (str, int, float)):  # subclasses (enums, numpy scalars with __index__)
        return repr(value) if isinstance(value, float) and not math.isfinite(value) else value
    return _safe_repr(value)


# One encoder for every result: json.dumps with non-default options builds a new one per call.
_ENCODE: Final = json.JSONEncoder(ensure_ascii=False, default=str, allow_nan=False).encode


def _render(value: Any) -> str:
    """A result as the text an agent reads: strings as they are, the rest as JSON.

    The same rendering as the fault injector's payloads, so a delivery receipt finds a
    corrupted result in the next model input. Never raises (see ``_jsonable``).
    """
    if isinstance(value, str):
        return value
    try:
        return _ENCODE(value)
    except Exception:  # not JSON, a __str__ that raises, nesting too deep for the encoder
        try:
            text = str(value)
        except Exception:
            return _safe_repr(value)
        return text if isinstance(text, str) else _placeholder(value)


def response_text_of(value: Any) -> str | None:
    """The agent's answer as text: a string itself, or a dict's response/answer/output field."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in _RESPONSE_KEYS:
            text = value.get(key)
            if isinstance(text, str):
                return text
    return None


class TrialScope(BaseRecorder):
    """Captures one plain-agent run as hb-events/1 events.

    Opened by ``PlainAdapter`` (or ``PlainAdapter.scope`` for ad-hoc capture); the module-level
    helpers find it through a context variable, so concurrent trials never mix. Events stop
    being recorded once the trial's timeout cut it: a thread cannot be killed, so the agent may
    run on in the background, but nothing it does after the cut enters the trace.

    Numbering, order, the budget halt and the link from a declared call to the tool call that
    runs it are the capture base's (``BaseRecorder``); a plain run keeps no live monitor.
    """

    log = log

    def __init__(
        self,
        run_id: str,
        *,
        injector: Any = None,
        context: TrialContext | None = None,
        clock: Any = None,
    ) -> None:
        super().__init__(run_id=run_id, monitor=UNWATCHED, trial=context, clock=clock)
        self.run_id: str = run_id
        self.injector = injector
        self._unread: list[ChatMessage] = []
        """Tool results and errors the agent received since its last model input."""
        self._open_model: str | None = None
        self.precedents: list[str] = []
        """Precedents memory recalled for this trial (see ``precedents()``)."""

    @property
    def context(self) -> TrialContext | None:
        """The battery trial this scope records (None outside a battery run)."""
        return self.trial  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ recording
    def _init_events(self) -> None:
        # In a battery run the trace is the trial context's own list, so the runner keeps what
        # happened before a timeout cut; otherwise the scope keeps its own.
        trial = self.trial
        self.events = trial.events if trial is not None else []

    def _store_locked(self, event: EventBase) -> bool:
        # No live monitor to feed: the event goes to the trial (which refuses it after a cut)
        # or to the scope's own list.
        trial = self.trial
        if trial is not None:
            return bool(trial.record(event))
        self.events.append(event)
        return True

    def build(self, cls: type[EventBase], fields: dict[str, Any]) -> EventBase:
        """Validated construction: a plain agent's events carry what its own code passed in."""
        return cls(**fields)

    # The base's ``emit`` returns the event; here an event that cannot be built is dropped
    # (None) instead, because the fields come from the agent's code and capture must not
    # break the agent.
    def emit(self, cls: type[EventBase], **fields: Any) -> EventBase | None:  # type: ignore[override]
        """Record one event with this run's id, the next sequence number and a timestamp."""
        ctx = self.trial
        if ctx is not None and ctx.cut_off:
            return None
        try:
            return super().emit(cls, **fields)
        except Exception as exc:
            # The event is dropped (evidence completeness shows the gap); the agent carries on.
            log.warning("hbeval dropped a %s event: %s", cls.__name__, exc)
            return None

    # ------------------------------------------------------------------ tool boundary
    def call_tool(
        self,
        name: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        arguments: dict[str, Any],
    ) -> Any:
        """Run one tool call under the trial: events, budgets, faults, errors the agent can read."""
        call_id, t0 = self._begin_call(name, arguments)
        injector = self.injector
        try:
            with faulted_call():
                if injector is not None:
                    outcome = injector.run_call(
                        name, arguments, call_id, lambda: fn(*args, **kwargs)
                    )
                else:
                    outcome = None
                    result = fn(*args, **kwargs)
        except TrialCancelled:
            raise
        except Exception as exc:
            self._call_raised(name, call_id, t0, exc)
        if outcome is not None:
            result = self._call_outcome(name, call_id, t0, outcome)
        return self._call_returned(name, call_id, t0, result)

    async def acall_tool(
        self,
        name: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        arguments: dict[str, Any],
    ) -> Any:
        """Async twin of ``call_tool`` (``fn`` is a coroutine function)."""
        call_id, t0 = self._begin_call(name, arguments)
        injector = self.injector

        async def real() -> Any:
            return await fn(*args, **kwargs)

        try:
            with faulted_call():
                if injector is not None:
                    outcome = await injector.arun_call(name, arguments, call_id, real)
                else:
                    outcome = None
                    result = await real()
        except TrialCancelled:
            raise
        except Exception as exc:
            self._call_raised(name, call_id, t0, exc)
        if outcome is not None:
            result = self._call_outcome(name, call_id, t0, outcome)
        return self._call_returned(name, call_id, t0, result)

    def _begin_call(self, name: str, arguments: dict[str, Any]) -> tuple[str, float]:
        ctx = self.context
        if ctx is not None:
            try:
                ctx.check_tool_boundary()
            except BudgetExceeded as exc:
                self.budget_halt_once(exc)
                raise
        call_id, _ = self.claim_call(name)
        self.emit(ToolStart, call_id=call_id, tool=name, args=_jsonable(arguments))
        return call_id, time.perf_counter()

    def _call_raised(self, name: str, call_id: str, t0: float, exc: Exception) -> NoReturn:
        latency = (time.perf_counter() - t0) * 1000.0
        fault = getattr(exc, "fault", None)
        if isinstance(fault, FaultInjected):
            # A crash fault: the receipt, then the error; the exception leaves the agent.
            self.emit_fault(fault)
        else:
            self.emit_fault(self._fault_for(call_id))
        text = f"{type(exc).__name__}: {exc}"
        self.emit(
            ToolError,
            call_id=call_id,
            tool=name,
            error=text,
            error_type=type(exc).__name__,
            latency_ms=latency,
        )
        self._read(_tool_message(text, call_id))
        if isinstance(fault, FaultInjected):
            raise exc
        raise ToolCallError(
            text, tool=name, call_id=call_id, error_type=type(exc).__name__
        ) from exc

    def _call_outcome(self, name: str, call_id: str, t0: float, outcome: Any) -> Any:
        """The injector's outcome: its receipt, then its error raised or its result returned."""
        self.emit_fault(outcome.fault)
        if outcome.error is None:
            return outcome.result
        self.emit(
            ToolError,
            call_id=call_id,
            tool=name,
            error=outcome.error,
            error_type=outcome.error_type,
            latency_ms=(time.perf_counter() - t0) * 1000.0,
        )
        self._read(_tool_message(outcome.error, call_id))
        raise ToolCallError(
            outcome.error,
            tool=name,
            call_id=call_id,
            error_type=outcome.error_type,
            injected=outcome.fault is not None,
            http_status=outcome.http_status,
        )

    def _call_returned(self, name: str, call_id: str, t0: float, result: Any) -> Any:
        latency = (time.perf_counter() - t0) * 1000.0
        try:
            self.emit(
                ToolEnd, call_id=call_id, tool=name, result=_jsonable(result), latency_ms=latency
            )
            self._read(_tool_message(_render(result), call_id))
        except Exception as exc:  # capture never changes what the agent receives
            log.warning("hbeval could not record the result of %s: %r", name, exc)
        return result

    def _fault_for(self, call_id: str) -> FaultInjected | None:
        """The receipt the injector recorded for ``call_id`` before re-raising a tool's error."""
        injector = self.injector
        if injector is None:
            return None
        for event in reversed(getattr(injector, "events", ())):
            if getattr(event, "call_id", None) == call_id:
                return event  # type: ignore[no-any-return]
        return None

    def _read(self, message: ChatMessage) -> None:
        with self._lock:
            self._unread.append(message)

    # ------------------------------------------------------------------ model turns
    def model_input(self, messages: Iterable[Any]) -> str:
        """Open a model turn whose input is ``messages``; returns the turn's call id.

        In a battery run the turn first waits for the run's rate limit (a 429 pause, a slot of
        ``--rate-limit``): an agent that calls ``model_input`` before its model call is held
        there; one that only calls ``think`` is held at ``think``, after its call.
        """
        if self.trial is not None:
            self.trial.wait_for_model()
        converted = [_message(m) for m in messages or ()]
        with self._lock:
            call_id = f"model-{self.next_number('model')}"
            self._open_model = call_id
            self._unread.clear()
        self.emit(ModelStart, call_id=call_id, messages=converted)
        return call_id

    def think(
        self,
        text: str | None,
        tool_calls: Sequence[tuple[str, Mapping[str, Any]] | str] | None = None,
        reasoning: str | None = None,
        *,
        model: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
    ) -> list[str]:
        """Close a model turn (opening one on what the agent read, if needed); returns call ids."""
        with self._lock:
            call_id = self._open_model
            unread = list(self._unread) if call_id is None else None
        if call_id is None:
            call_id = self.model_input(unread or ())
        with self._lock:
            self._open_model = None
        self.count_turn()
        calls: list[ToolCall] = []
        ids: list[str] = []
        for item in tool_calls or ():
            try:
                name, args = (item, {}) if isinstance(item, str) else (str(item[0]), dict(item[1]))
            except (TypeError, ValueError, IndexError, KeyError):
                log.warning("hbeval ignored a declared tool call it cannot read: %r", item)
                continue
            cid = self.declare_call(name)
            calls.append(ToolCall(id=cid, name=name, args=_jsonable(args)))
            ids.append(cid)
        usage = None
        if input_tokens is not None or output_tokens is not None:
            usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
        self.emit(
            ModelEnd,
            call_id=call_id,
            text=text,
            reasoning=reasoning,
            tool_calls=calls,
            usage=usage,
            attrs={"model": model} if model else {},
        )
        return ids


def _tool_message(content: str, call_id: str) -> ChatMessage:
    """What the agent read from one tool call."""
    return ChatMessage(role="tool", content=content, tool_call_id=call_id)


def _message(item: Any) -> ChatMessage:
    """Accept a ChatMessage, a ``{"role", "content"}`` dict, a ``(role, content)`` pair or text."""
    if isinstance(item, ChatMessage):
        return item
    if isinstance(item, Mapping):
        call_id = item.get("tool_call_id")
        return ChatMessage(
            role=str(item.get("role", "user")),
            content=_render(item.get("content", "")),
            tool_call_id=None if call_id is None else str(call_id),
        )
    if isinstance(item, tuple) and len(item) == 2:
        return ChatMessage(role=str(item[0]), content=_render(item[1]))
    return ChatMessage(role="user", content=_render(item))


_SCOPE: ContextVar[Any] = BOUNDARY_SCOPE
"""The scope ``faultable`` and ``@tool`` record through (the tool boundary's own variable)."""
_INJECTOR: ContextVar[Any] = ContextVar("hbeval_plain_injector", default=None)
_MEMORY: ContextVar[Any] = ContextVar("hbeval_plain_memory", default=None)


def current_scope() -> TrialScope | None:
    """The plain-agent capture open in this context, or None."""
    return cast("TrialScope | None", _SCOPE.get())


# ---------------------------------------------------------------------- helpers for agents
@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(fn: None = None, /, *, name: str | None = None) -> Callable[[F], F]: ...
def tool(fn: F | None = None, /, *, name: str | None = None) -> F | Callable[[F], F]:
    """Make a function a hbeval tool: traced and fault-injectable inside a trial, untouched outside.

    Use as ``@tool`` or ``@tool(name="lookup")``. Works on methods too (``self`` is not recorded
    as an argument). Inside a trial a failed call raises ``ToolCallError``; a ``crash`` fault
    raises ``InjectedCrash`` out of the agent, as a real crash would. The same decorator as
    ``hbeval_core.faults.faultable``, which also faults the function inside other adapters' trials.
    """

    from hbeval_core.faults.boundary import faultable

    if fn is not None:
        return faultable(name=name)(fn)
    return faultable(name=name)


def think(
    text: str | None,
    tool_calls: Sequence[tuple[str, Mapping[str, Any]] | str] | None = None,
    reasoning: str | None = None,
    *,
    model: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
) -> list[str]:
    """Record a model turn: the agent's words, its reasoning, and the tool calls it decides on.

    Declared calls (``[("lookup_order", {"order_id": "A1"})]``) are linked by id to the next
    calls of those tools, so they count as traceable when ``text`` or ``reasoning`` gives a
    reason. Returns the declared call ids. Outside a trial it does nothing and returns [].
    """
    scope = current_scope()
    if scope is None:
        return []
    return scope.think(
        text,
        tool_calls,
        reasoning,
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )


def model_input(messages: Iterable[Any]) -> str | None:
    """Record what the agent read before its next turn (messages, dicts, pairs or text)."""
    scope = current_scope()
    if scope is None:
        return None
    return scope.model_input(messages)


def precedents() -> list[str]:
    """The precedents memory recalled for the current trial ([] outside one, or with no memory).

    Each is one line: a stored episode of this agent's id, what it did and its recorded
    figures. The runner recalls them with the trial's question before the agent is called.
    """
    scope = _SCOPE.get()
    return list(scope.precedents) if scope is not None else []


def replan(reason: str | None = None) -> None:
    """Declare a re-plan (why the plan changed); a no-op outside a trial."""
    scope = _SCOPE.get()
    if scope is not None:
        scope.emit(Replan, reason=reason)


def claim(name: str, value: Any = True, text: str | None = None) -> None:
    """Record a self-report (checked against the trace, never taken as fact)."""
    scope = _SCOPE.get()
    if scope is not None:
        scope.emit(Claim, name=name, value=_jsonable(value), text=text)
