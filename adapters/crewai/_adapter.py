"""``CrewAIAdapter``: an existing Crew (or a factory of one) as a battery target.

One trial: the task's question goes in as ``crew.kickoff(inputs={"question": question})`` (a
task description with ``{question}`` in it receives it); scoped hooks record the run and inject
the trial's faults; the agents' LLMs are wrapped for the kickoff and put back after it; the
output, the trace and how the run ended come back as a ``TrialResult``. Nothing of the user's
crew is changed after the trial.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from hbeval_core.capture import Trial, TrialTemplate, capture_metadata, result_of, run_to_end
from hbeval_core.contract import (
    Ended,
    Task,
    TrialResult,
    describe_error,
    run_status_of,
    token_usage,
)
from hbeval_core.events import EventBase
from hbeval_core.live.monitor import Directive as MonitorDirective
from hbeval_core.live.monitor import Monitor

from ._keys import FRAMEWORK, INPUT_KEY
from ._recorder import CrewAIRecorder, MemoryLike

__all__ = ["CrewAIAdapter", "episode_of", "is_crewai_target", "resolve_crew"]

_INJECTOR: ContextVar[Any] = ContextVar("hbeval_crewai_adapter_injector", default=None)
_MEMORY: ContextVar[Any] = ContextVar("hbeval_crewai_memory", default=None)


def _derives_from(cls: Any, name: str, module: str) -> bool:
    """Whether class ``cls`` has a base called ``name`` from ``module`` (CrewAI is not imported)."""
    return any(
        c.__name__ == name and c.__module__.startswith(module) for c in getattr(cls, "__mro__", ())
    )


def _is_crew(obj: Any) -> bool:
    return _derives_from(type(obj), "Crew", "crewai")


def _is_flow(obj: Any) -> bool:
    """A ``crewai.flow.Flow`` instance."""
    return _derives_from(type(obj), "Flow", "crewai.flow")


def _is_runnable(obj: Any) -> bool:
    return _is_crew(obj) or _is_flow(obj)


def is_crewai_target(target: Any) -> bool:
    """Whether ``target`` is a CrewAI ``Crew`` or ``Flow``, or a factory marked as returning one.

    Looks only at type and module names, so it never imports CrewAI to answer "no".
    """
    if _is_runnable(target):
        return True
    if callable(target):
        if getattr(target, "__hbeval_target_kind__", None) == FRAMEWORK:
            return True
        try:
            annotation = inspect.signature(target).return_annotation
        except (TypeError, ValueError):
            return False
        if isinstance(annotation, str):  # postponed annotations: resolve when the name is known
            try:
                annotation = inspect.signature(target, eval_str=True).return_annotation
            except Exception:
                pass
        if isinstance(annotation, type) and (
            _derives_from(annotation, "Crew", "crewai")
            or _derives_from(annotation, "Flow", "crewai.flow")
        ):
            return True
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__module__", "")
        name = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        return isinstance(text, str) and (text.startswith("crewai") or name in ("Crew", "Flow"))
    return False


def resolve_crew(target: Any) -> Any:
    """The crew or flow to run: ``target`` itself, or what a no-argument factory returns.

    A ``Flow`` is run whole: every crew it kicks off inside the trial is recorded under it. A flow
    object keeps state between kickoffs, so a battery needs a factory that builds a fresh one.
    """
    if _is_runnable(target):
        return target
    if callable(target):
        crew = target()
        if not _is_runnable(crew):
            raise TypeError(
                f"target factory {getattr(target, '__name__', target)!r} returned "
                f"{type(crew).__name__}; it must return a crewai.Crew or a crewai.flow.Flow"
            )
        return crew
    raise TypeError(
        "a CrewAI target must be a crewai.Crew, a crewai.flow.Flow or a factory returning one "
        f"(got {type(target).__name__})"
    )


class CrewAIAdapter(TrialTemplate):
    """The core ``Adapter`` for CrewAI: instrument, scope, run trials, inject faults, memory.

    Args:
        monitor_factory: Builds each trial's ``Monitor`` (e.g. ``enforce=True`` with a halt
            policy); a plain ``Monitor()`` by default.
        on_directive: Called with every monitor directive of every trial.
        inputs_builder: ``(task, question) -> kickoff inputs``; the default is
            ``{"question": question, **task.metadata.get("inputs", {})}``.
        strict: Re-raise capture errors (tests).
        check_version: Refuse a crewai outside ``SUPPORTED`` (default True).
    """

    name = FRAMEWORK
    scripted_model_faults = True
    """A battery's model faults reach this framework's scripted models (``hbeval_crewai.testing``) as
    the provider's own exceptions; a real provider client gets them through the proxy."""
    _injector_var = _INJECTOR
    _memory_var = _MEMORY

    def __init__(
        self,
        *,
        monitor_factory: Callable[[], Monitor] | None = None,
        on_directive: Callable[[MonitorDirective], Any] | None = None,
        inputs_builder: Callable[[Task, str], Mapping[str, Any]] | None = None,
        strict: bool = False,
        check_version: bool = True,
    ) -> None:
        self.monitor_factory = monitor_factory
        self.on_directive = on_directive
        self.inputs_builder = inputs_builder
        self.strict = strict
        self.check_version = check_version
        self._memory: MemoryLike = None

    # ------------------------------------------------------------------ protocol: capture
    def instrument(self) -> None:
        """Record every CrewAI kickoff in this process with no code change. Idempotent."""
        from ._hooks import instrument

        instrument(check_version=self.check_version, strict=self.strict)

    def uninstrument(self) -> None:
        """Undo ``instrument()``, restoring every hook list and LLM. Idempotent."""
        from ._hooks import uninstrument

        uninstrument()

    @contextmanager
    def scope(self, run_id: str) -> Iterator[CrewAIRecorder]:
        """Record every kickoff started in the block under ``run_id``; yields the recorder."""
        from ._hooks import capture

        with capture(
            run_id=run_id,
            strict=self.strict,
            injector=_INJECTOR.get(),
            memory=self.current_memory(),
            check_version=self.check_version,
        ) as recorder:
            yield recorder

    def memory_hook(self, memory: MemoryLike) -> None:
        """Attach ``memory`` to this context's trials (None detaches).

        Before each task's first model call its ``recall(context, agent_id)`` precedents are put
        in front of the model; ``admit(episode)`` is offered each scored trial by ``FaultRun``
        (or by whoever calls ``admit``).
        """
        super().memory_hook(memory)

    def admit(self, episode: Mapping[str, Any]) -> bool:
        """Offer one scored episode to the attached memory; False when none is attached."""
        memory = self.current_memory()
        if memory is None:
            return False
        return bool(memory.admit(dict(episode)))

    # ------------------------------------------------------------------ protocol: trials
    def _inputs(self, task: Task, question: str) -> dict[str, Any]:
        if self.inputs_builder is not None:
            return dict(self.inputs_builder(task, question))
        extra = task.metadata.get("inputs") if isinstance(task.metadata, Mapping) else None
        return {INPUT_KEY: question, **(dict(extra) if isinstance(extra, Mapping) else {})}

    def prepare_trial(self, target: Any, trial: Trial) -> tuple[Any, dict[str, Any]]:
        """Check the version, build the crew and its inputs, and open the trial's recorder."""
        from ._hooks import ensure_supported

        ensure_supported(self.check_version)
        crew = resolve_crew(target)
        inputs = self._inputs(trial.task, trial.question)
        ctx = trial.ctx
        recorder = trial.recorder = CrewAIRecorder(
            run_id=trial.run_id,
            monitor=self.monitor_factory() if self.monitor_factory is not None else Monitor(),
            strict=self.strict,
            injector=trial.injector,
            memory=self.current_memory(),
            agent_id=ctx.agent_id if ctx is not None else None,
            trial=ctx,
            run_events=False,
            on_directive=self.on_directive,
        )
        recorder.run_start(**trial.run_info())
        return crew, inputs

    def execute_trial(self, prepared: tuple[Any, dict[str, Any]], trial: Trial) -> None:
        """Kick the crew off with the recorder's hooks in place.

        When the run awaits its agents (``arun_battery``: ``ctx.native_async``) the crew is
        driven through CrewAI's native coroutine, ``akickoff``, awaited on the trial's own loop
        (its tasks, model calls and tools run as coroutines). ``kickoff_async`` is not used: in
        crewai 1.x it only runs the synchronous ``kickoff`` on a thread.
        """
        from ._hooks import capture

        crew, inputs = prepared
        recorder: CrewAIRecorder = trial.recorder
        native = getattr(crew, "akickoff", None) if _awaits_agents(trial) else None
        with capture(recorder, check_version=False):
            if _is_crew(crew):  # a flow's crews are attached as each one starts
                recorder.attach(crew)
            if native is not None:
                trial.final = run_to_end(native(inputs=inputs))
            else:
                trial.final = crew.kickoff(inputs=inputs)

    def settle(self, prepared: Any, trial: Trial, ended: Ended) -> Ended:
        """A stop hbeval decided at a tool boundary wins (CrewAI may have wrapped it)."""
        recorder: CrewAIRecorder = trial.recorder
        if recorder.stop is not None:
            stop = recorder.stop
            status = run_status_of(stop)
            ended = Ended(status if status != "error" else "halted", str(stop), type(stop).__name__)
        else:
            ended = super().settle(prepared, trial, ended)
        first = recorder.strict_error
        if first is not None:
            ended = Ended("error", describe_error(first), type(first).__name__, ended.infra)
        return ended

    def trial_result(self, prepared: Any, trial: Trial, ended: Ended) -> TrialResult:
        """Close the run; the crew's output, its tasks' outputs as messages."""
        recorder: CrewAIRecorder = trial.recorder
        text = _response_text(trial.final, getattr(trial.task, "answer_from", None))
        recorder.run_end(status=ended.status, output=text, error=ended.error)
        events: list[EventBase] = list(recorder.events)
        return result_of(
            trial,
            ended,
            events,
            response_text=text,
            metadata=capture_metadata(
                recorder.errors,
                usage=token_usage(events),
                memories_injected=recorder.memories_injected,
            ),
            messages=_messages_of(trial.question, trial.final),
        )


def _awaits_agents(trial: Trial) -> bool:
    """Whether the trial's run awaits its agents (``arun_battery``)."""
    return bool(getattr(trial.ctx, "native_async", False))


def _messages_of(question: str, output: Any) -> tuple[Any, ...]:
    """The question, then each task's output under its agent's role, as ``Message`` records."""
    from hbeval_core.contract import Message

    out = [Message(role="user", content=question)]
    for task_output in getattr(output, "tasks_output", None) or ():
        text = getattr(task_output, "raw", None)
        agent = getattr(task_output, "agent", None)
        out.append(
            Message(
                role="assistant",
                content=text if isinstance(text, str) else str(task_output),
                name=agent if isinstance(agent, str) else None,
            )
        )
    return tuple(out)


def _response_text(output: Any, answer_from: str | None = None) -> str | None:
    """The crew's final output (its last task's); with ``answer_from``, the output of the last
    task done by the agent of that role."""
    if output is None:
        return None
    if answer_from is not None:
        mine = [
            t
            for t in getattr(output, "tasks_output", None) or ()
            if str(getattr(t, "agent", "")).strip() == answer_from.strip()
        ]
        raw = getattr(mine[-1], "raw", None) if mine else None
        return raw if isinstance(raw, str) else None
    raw = getattr(output, "raw", None)
    if isinstance(raw, str):
        return raw
    return output if isinstance(output, str) else str(output)


def episode_of(
    task: Task, result: TrialResult, verdict: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The episode offered to memory after a scored trial: what was asked, done and judged."""
    tools = [
        getattr(e, "tool", None) for e in result.events if getattr(e, "kind", None) == "tool_start"
    ]
    faults = [
        {"mode": getattr(e, "mode", None), "tool": getattr(e, "tool", None)}
        for e in result.events
        if getattr(e, "kind", None) == "fault_injected"
    ]
    run_start = next((e for e in result.events if getattr(e, "kind", None) == "run_start"), None)
    return {
        "framework": FRAMEWORK,
        "task_id": task.id,
        "question": getattr(run_start, "input", None) or task.question,
        "agent_id": getattr(run_start, "agent_id", None),
        "status": result.status,
        "response": result.response_text,
        "tools": [t for t in tools if t],
        "faults": faults,
        "verdict": dict(verdict) if verdict is not None else None,
    }
