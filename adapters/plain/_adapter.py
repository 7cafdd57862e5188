"""The plain-callable adapter: ``agent(question) -> str | dict`` run once per trial.

``PlainAdapter.run_trial`` (the capture base's template) opens a ``TrialScope``, calls the agent
with it active (``agent(question)``, or ``agent(system, question)`` when it takes two required
positional arguments) and builds the trial's result from the scope's events.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from hbeval_core.capture import Trial, TrialTemplate, result_of, run_to_end
from hbeval_core.contract import Ended, TrialResult, current_trial, ended_by
from hbeval_core.events import Claim, RunEnd, RunStart

from ._scope import (
    _INJECTOR,
    _MEMORY,
    _SCOPE,
    BEHAVIOURAL_FIELDS,
    DEFAULT_AGENT_ID,
    TrialScope,
    _jsonable,
    response_text_of,
)

__all__ = ["PlainAdapter", "is_plain_target", "required_positional"]


# ---------------------------------------------------------------------- invoking agents
_ARITY: dict[Any, int] = {}


def _arity_key(target: Any) -> Any:
    """A cache key shared by every agent built the same way.

    Factories build a new closure (or bound method) per trial, so the key is the code object
    behind it; keying on the function itself would miss every time and grow without bound.
    """
    func = getattr(target, "__func__", target)
    code = getattr(func, "__code__", None)
    if code is not None:
        return code
    if inspect.isbuiltin(target):
        return target
    return type(target)


def required_positional(target: Any) -> int | None:
    """How many positional arguments ``target`` requires; None when it cannot be inspected."""
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(
        1
        for p in sig.parameters.values()
        if p.kind in kinds and p.default is inspect.Parameter.empty
    )


def _invoke(agent: Any, system: str, question: str) -> Any:
    """Call ``agent(question)``, or ``agent(system, question)`` when it needs two arguments."""
    key = _arity_key(agent)
    try:
        n = _ARITY.get(key)
    except TypeError:  # an unhashable callable type: inspect every time
        key, n = None, None
    if n is None:
        n = required_positional(agent) or 1
        if key is not None:
            _ARITY[key] = n
    if n >= 2:
        return agent(system, question)
    return agent(question)


def is_plain_target(obj: Any) -> bool:
    """Whether the plain adapter can run ``obj``: any callable (it is every other kind's fallback)."""
    return callable(obj)


class PlainAdapter(TrialTemplate):
    """The Adapter for plain callables: no framework, tools opt in with ``@tool``.

    ``run_trial`` (the capture base's template) calls the agent once inside a ``TrialScope``
    and never raises for the agent's own errors: they become the result's status. Within a
    battery run the scope takes the run id, fault injector and budgets from the runner's
    ``TrialContext``. Outside one a ``plan`` is injected only when
    ``HBEVAL_ALLOW_FAULT_INJECTION`` allows it: plain capture never injects on its own.
    """

    name = "plain"
    _injector_var = _INJECTOR
    _memory_var = _MEMORY

    def instrument(self) -> None:
        """Nothing to patch: plain agents opt in with ``@tool``. Idempotent."""

    def uninstrument(self) -> None:
        """Nothing to restore. Idempotent."""

    @contextmanager
    def scope(self, run_id: str) -> Iterator[TrialScope]:
        """Capture a plain agent outside the runner: ``with PlainAdapter().scope("r1") as s: ...``."""
        ctx = current_trial()
        capture = TrialScope(
            run_id,
            injector=_INJECTOR.get(),
            context=ctx,
            clock=ctx.clock if ctx is not None else None,
        )
        token = _SCOPE.set(capture)
        try:
            yield capture
        finally:
            _SCOPE.reset(token)

    def prepare_trial(self, target: Any, trial: Trial) -> TrialScope:
        """Open the trial's scope, recall memory precedents and record the run's start."""
        ctx = trial.ctx
        scope = trial.recorder = TrialScope(
            trial.run_id,
            injector=trial.injector,
            context=ctx,
            clock=ctx.clock if ctx is not None else None,
        )
        attrs: dict[str, Any] = {}
        memory = self.current_memory()
        if memory is not None:
            from hbeval_core.contract import ATTR_MEMORY_RECALL, recall_precedents

            recall = recall_precedents(memory, trial.question, trial.agent_id or DEFAULT_AGENT_ID)
            scope.precedents = list(recall.precedents)
            attrs[ATTR_MEMORY_RECALL] = recall.record("precedents()")
        scope.emit(RunStart, framework="plain", attrs=attrs, **trial.run_info())
        return scope

    def execute_trial(self, prepared: TrialScope, trial: Trial) -> None:
        """Call the agent once with the scope active."""
        token = _SCOPE.set(prepared)
        try:
            final = _invoke(trial.target, trial.task.system, trial.question)
            if inspect.isawaitable(final):  # an ``async def`` agent: await it in this trial
                final = run_to_end(final)
            trial.final = final
        finally:
            _SCOPE.reset(token)

    def ended_by(self, exc: BaseException) -> Ended:
        """The status by class; hbeval's own stops keep their bare message as the error text."""
        ended = ended_by(exc)
        if ended.status in ("halted", "timeout") or ended.infra:
            return Ended(ended.status, str(exc), ended.error_type, ended.infra)
        return ended

    def trial_result(self, prepared: TrialScope, trial: Trial, ended: Ended) -> TrialResult:
        """Claims from a dict's behavioural fields, the run's end, and the result."""
        scope, value = prepared, trial.final
        if isinstance(value, Mapping):
            for key in BEHAVIOURAL_FIELDS:
                if key in value:
                    # Tagged so scoring can tell these from the same keys it reads off
                    # the final state (the store keeps events, not the final state).
                    scope.emit(
                        Claim,
                        name=key,
                        value=_jsonable(value[key]),
                        attrs={"source": "final_state"},
                    )
        text = response_text_of(value)
        scope.emit(
            RunEnd,
            status=ended.status,
            output=text if text is not None else _jsonable(value),
            error=ended.error,
        )
        judge = getattr(trial.target, "judge", None)
        return result_of(
            trial,
            ended,
            list(scope.events),
            response_text=text,
            # Methodology B asks the agent's own judge: a plain agent offers one as ``.judge``.
            metadata={"judge": judge} if callable(judge) else {},
            messages=_messages_of(trial.question, text),
        )


def _messages_of(question: str, answer: str | None) -> tuple[Any, ...]:
    from hbeval_core.contract import Message

    asked = Message(role="user", content=question)
    return (asked,) if answer is None else (asked, Message(role="assistant", content=answer))
