"""The ``run_trial`` skeleton every adapter shares, and the choice of a trial's fault injector.

An adapter names what differs (how its target is built, how it is run, how its result reads)
in three hooks; the template does the rest once: the trial's run id, question and injector,
a target that cannot be built as a harness (infra) error, the agent's exception mapped to the
run's status by class, a budget stop the agent swallowed still counted as a halt, and the same
``TrialResult`` metadata keys everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final

from ..contract import Ended, describe_error, ended_by
from ..contract._ratelimit import note_rate_limit

if TYPE_CHECKING:
    from ..contract import TrialResult

__all__ = [
    "META_CAPTURE_ERRORS",
    "Trial",
    "TrialTemplate",
    "capture_metadata",
    "injector_for",
    "open_trial",
    "result_of",
]

META_CAPTURE_ERRORS: Final = "capture_errors"
"""``TrialResult.metadata`` key: the capture errors the adapter swallowed during the trial."""


def injector_for(selected: Any, ctx: Any, task: Any, run_id: str, plan: Any) -> Any:
    """The fault injector a trial uses.

    The one ``fault_hook`` selected for this context, else the battery trial's; outside a
    battery run (no ``TrialContext``) a ``plan`` gets an injector of its own, which injects only
    if ``HBEVAL_ALLOW_FAULT_INJECTION`` allows it: plain capture never injects on its own.
    """
    injector = selected
    if injector is None and ctx is not None:
        injector = ctx.injector
    if injector is None and plan is not None and ctx is None:
        from ..faults.runtime import FaultInjector

        forbidden = task.forbidden_tools[0] if task.forbidden_tools else None
        injector = FaultInjector(plan, run_id=run_id, forbidden_tool=forbidden)
    return injector


@dataclass
class Trial:
    """One trial as the adapter runs it: what it asks, under which ids, with which injector."""

    task: Any
    scenario: Any
    plan: Any
    ctx: Any
    """The runner's ``TrialContext`` (None outside a battery run)."""
    run_id: str
    question: str
    injector: Any = None
    final: Any = None
    """What the agent returned (or the last state it reached before it raised)."""
    recorder: Any = None
    """The adapter's capture object for this trial, once it exists."""
    target: Any = None
    """What the trial runs (the battery's target)."""

    @property
    def agent_id(self) -> str | None:
        """The battery's agent id (None outside a battery run)."""
        return self.ctx.agent_id if self.ctx is not None else None

    def run_info(self) -> dict[str, Any]:
        """The ``run_start`` fields that say which trial this run is."""
        ctx = self.ctx
        return {
            "agent_id": ctx.agent_id if ctx is not None else None,
            "task_id": self.task.id,
            "scenario": getattr(self.scenario, "index", None),
            "trial": ctx.trial_index if ctx is not None else None,
            "input": self.question,
        }


def open_trial(task: Any, scenario: Any, plan: Any, selected_injector: Any = None) -> Trial:
    """The trial the current ``TrialContext`` (if any) runs ``task`` as."""
    from ..contract import current_trial

    ctx = current_trial()
    run_id = ctx.trial_run_id if ctx is not None else task.id
    question = scenario.question(task.question) if scenario is not None else task.question
    injector = injector_for(selected_injector, ctx, task, run_id, plan)
    return Trial(task, scenario, plan, ctx, run_id, question, injector)


class TrialTemplate:
    """``run_trial`` once, plus the fault and memory hooks every adapter exposes.

    A subclass sets ``_injector_var`` / ``_memory_var`` (its own context variables) and
    implements ``prepare_trial`` (build the target: an exception there is an infra error),
    ``execute_trial`` (run it, setting ``trial.final``; an exception there is the agent's) and
    ``trial_result``.
    """

    _injector_var: ClassVar[ContextVar[Any]]
    _memory_var: ClassVar[ContextVar[Any]]
    _memory: Any = None
    strict: bool = False

    # ------------------------------------------------------------------ hooks
    def fault_hook(self, injector: Any) -> None:
        """Use ``injector`` for this context's trials (None removes it)."""
        self._injector_var.set(injector)

    def memory_hook(self, memory: Any) -> None:
        """Attach ``memory`` to this context's trials (None detaches).

        Kept on the adapter as well as in this context: the runner's worker threads do not
        inherit context variables.
        """
        self._memory_var.set(memory)
        self._memory = memory

    def current_memory(self) -> Any:
        """The memory attached with ``memory_hook`` (this context's, else this adapter's), if any."""
        memory = self._memory_var.get()
        return memory if memory is not None else self._memory

    # ------------------------------------------------------------------ the template
    def run_trial(self, target: Any, task: Any, scenario: Any, plan: Any) -> TrialResult:
        """Run ``task`` once on ``target`` under ``scenario``'s faults; never raises for the agent.

        The agent's own failures become the result's ``status`` ("error", "halted" for an
        enforced Safe Halt or an exhausted budget, "timeout", "cancelled" for a crash fault).
        Outside a battery run a ``plan`` is injected only when ``HBEVAL_ALLOW_FAULT_INJECTION``
        allows it.
        """
        return self.run_trial_as(self.open_trial(task, scenario, plan), target)

    def open_trial(self, task: Any, scenario: Any, plan: Any) -> Trial:
        """The trial ``run_trial`` runs (ids, question, injector from this context)."""
        return open_trial(task, scenario, plan, self._injector_var.get())

    def run_trial_as(self, trial: Trial, target: Any) -> TrialResult:
        """The template: prepare (infra on failure), execute, settle, build the result."""
        trial.target = target
        try:
            prepared = self.prepare_trial(target, trial)
        except Exception as exc:
            # The target could not even be built: the harness's problem, not the agent's.
            return self.infra_result(trial, exc)
        ended = Ended()
        try:
            self.execute_trial(prepared, trial)
        except Exception as exc:
            note_rate_limit(trial.ctx, exc)  # a 429: the runner pauses the run and retries
            ended = self.ended_by(exc)
        return self.trial_result(prepared, trial, self.settle(prepared, trial, ended))

    def prepare_trial(self, target: Any, trial: Trial) -> Any:
        """Build what ``execute_trial`` runs (raising here makes the trial an infra error)."""
        raise NotImplementedError

    def execute_trial(self, prepared: Any, trial: Trial) -> None:
        """Run the agent once, setting ``trial.final``; its exception becomes the status."""
        raise NotImplementedError

    def trial_result(self, prepared: Any, trial: Trial, ended: Ended) -> TrialResult:
        """The ``TrialResult`` of a trial that ran."""
        raise NotImplementedError

    def ended_by(self, exc: BaseException) -> Ended:
        """How a run the agent's exception ``exc`` stopped ended (by the exception's class)."""
        return ended_by(exc)

    def settle(self, prepared: Any, trial: Trial, ended: Ended) -> Ended:
        """The final word on how the run ended: a budget stop the agent swallowed still halts."""
        ctx = trial.ctx
        stop = getattr(ctx, "stop", None) if ctx is not None else None
        if ended.status == "ok" and stop is not None:
            return Ended("halted", str(stop), type(stop).__name__)
        return ended

    def infra_result(self, trial: Trial, exc: BaseException) -> TrialResult:
        """The result of a trial whose target could not be built or hooked."""
        from ..contract import TrialResult

        return TrialResult(
            final_state=None,
            status="error",
            error=describe_error(exc),
            error_type=type(exc).__name__,
            infra=True,
        )


def capture_metadata(errors: list[str], **extra: Any) -> dict[str, Any]:
    """``TrialResult.metadata`` with the trial's swallowed capture errors under their one key."""
    return {**extra, META_CAPTURE_ERRORS: list(errors)}


def result_of(
    trial: Trial,
    ended: Ended,
    events: list[Any],
    *,
    metadata: Mapping[str, Any],
    **fields: Any,
) -> TrialResult:
    """A ``TrialResult`` of ``ended`` with the trial's final state and ``events``."""
    from ..contract import TrialResult

    fields.setdefault("final_state", trial.final)
    return TrialResult(
        events=events,
        status=ended.status,
        error=ended.error,
        error_type=ended.error_type,
        infra=ended.infra,
        metadata=dict(metadata),
        **fields,
    )
