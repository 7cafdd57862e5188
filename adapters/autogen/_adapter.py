"""``AutoGenAdapter``: the core ``Adapter`` protocol for AutoGen agentchat 0.7.

A battery TARGET may be an ``AssistantAgent`` (any agentchat chat agent), a team
(``RoundRobinGroupChat``, ``SelectorGroupChat``, ...), or a factory returning either. Each trial:

1. builds the agent (calling the factory, if given one) and a ``RunRecorder`` holding the
   trial's fault injector, memory and monitor;
2. drives ``target.run_stream(task=...)`` on an event loop of its own (see ``_loops``) with the
   recorder active, so the agent hook records model calls, tool calls and agent spans;
3. watches for an abort (a crash fault, an enforced halt, a spent budget, the trial timeout) and
   cancels the run when one happens: the workbench never raises, the adapter cancels;
4. returns a ``TrialResult`` whose status is ``ok``, ``error``, ``cancelled`` (crash),
   ``halted`` or ``timeout``, with the trace and an episode draft for evaluation-driven memory.

Nothing here imports AutoGen at module level: ``import hbeval_autogen`` works without it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final

from hbeval_core.capture import (
    Trial,
    TrialTemplate,
    capture_metadata,
    injector_for,
    result_of,
)
from hbeval_core.contract import (
    Ended,
    Task,
    TrialContext,
    TrialResult,
    current_trial,
    describe_error,
    is_infra_error,
    note_rate_limit,
)
from hbeval_core.events import EventBase
from hbeval_core.faults.boundary import reporting_to
from hbeval_core.live.monitor import Monitor
from hbeval_core.vocab import FAULT_INJECTED, SCOPE_TEAM, TOOL_END, TOOL_ERROR, TOOL_START

from . import _convert, _hook
from ._answer import response_text, termination_keywords
from ._keys import (
    ATTR_STOP_REASON,
    FRAMEWORK,
    META_AGENT_ID,
    META_EPISODE,
    META_EVENT_LOOP,
    META_USAGE,
)
from ._loops import HomeLoops, release_connections, run_on_fresh_loop
from ._recorder import ABORT_TIMEOUT, RunRecorder
from ._toolhook import recorder_reporter

__all__ = ["AutoGenAdapter", "build_episode", "capture", "is_autogen_target", "response_text"]

_INJECTOR: ContextVar[Any] = ContextVar("hbeval_autogen_injector", default=None)
_MEMORY: ContextVar[Any] = ContextVar("hbeval_autogen_memory", default=None)
_POLL_SECONDS: Final = 0.02
_SUMMARY_ANSWER: Final = 200


def is_autogen_target(obj: Any) -> bool:
    """Whether ``obj`` is something this adapter runs: an agentchat agent or team."""
    try:
        from autogen_agentchat.base import ChatAgent, Team
    except ImportError:
        return False
    return isinstance(obj, (ChatAgent, Team))


def _is_team(obj: Any) -> bool:
    from autogen_agentchat.base import Team

    return isinstance(obj, Team)


def _chat_messages(messages: Sequence[Any]) -> tuple[Any, ...]:
    """A run's chat messages (not its inner events) as ``Message`` records."""
    from autogen_agentchat.messages import BaseChatMessage

    from hbeval_core.contract import Message

    out = []
    for m in messages:
        if not isinstance(m, BaseChatMessage):
            continue
        source = str(m.source)
        role = source if source in ("user", "system") else "assistant"
        out.append(Message(role=role, content=m.to_text(), name=source))
    return tuple(out)


def _message_record(message: Any) -> dict[str, Any]:
    content = getattr(message, "content", None)
    return {
        "type": type(message).__name__,
        "source": getattr(message, "source", None),
        "content": content if isinstance(content, str) else _convert.text_of(content),
    }


def build_episode(
    events: Sequence[EventBase],
    *,
    task: Task | None = None,
    question: str | None = None,
    response: str | None = None,
    status: str = "ok",
    trial_key: str | None = None,
) -> dict[str, Any]:
    """An episode draft for memory admission: what was asked, done and answered, from the trace.

    Its keys follow EDM's episode schema (``context``, ``summary``, ``run_id``, ``trial_key``,
    ``forbidden_tools_run``); the scored verdict (``metrics``, ``evidence``, ``passed``) is
    merged in by ``AutoGenAdapter.admit`` once the trial is scored.
    """
    calls: dict[str, dict[str, Any]] = {}
    faults: list[str] = []
    for e in events:
        kind = getattr(e, "kind", "")
        if kind == TOOL_START:
            calls[e.call_id] = {"tool": e.tool, "args": dict(e.args), "status": None}  # type: ignore[attr-defined]
        elif kind in (TOOL_END, TOOL_ERROR):
            entry = calls.get(e.call_id)  # type: ignore[attr-defined]
            if entry is not None:
                entry["status"] = getattr(e, "status", "error")
        elif kind == FAULT_INJECTED:
            faults.append(e.mode)  # type: ignore[attr-defined]
    forbidden = set(task.forbidden_tools) if task is not None else set()
    steps = [f"{c['tool']} {c['status'] or 'no result'}" for c in calls.values()]
    answer = (response or "").strip().replace("\n", " ")
    summary = "; ".join(steps) if steps else "no tool calls"
    summary += f"; answered: {answer[:_SUMMARY_ANSWER]}" if answer else f"; ended {status}"
    return {
        "framework": FRAMEWORK,
        "run_id": events[0].run_id if events else None,
        "trial_key": trial_key,
        "task_id": task.id if task is not None else None,
        "context": question,
        "summary": summary,
        "response": response,
        "status": status,
        "tool_calls": list(calls.values()),
        "fault_modes": faults,
        "forbidden_tools_run": sorted({c["tool"] for c in calls.values()} & forbidden),
    }


@dataclass
class _Outcome:
    result: Any = None
    """AutoGen's ``TaskResult``, when the run finished."""
    error: BaseException | None = None
    cancelled: bool = False


class AutoGenAdapter(TrialTemplate):
    """Runs AutoGen agents and teams as battery trials, with capture, faults and memory.

    Args:
        monitor_factory: Builds each run's ``Monitor`` (thresholds, an enforced halt policy);
            ``Monitor()`` by default.
        strict: Re-raise capture errors instead of logging them (for tests). The workbench
            still never raises: its errors end up in ``TrialResult.metadata["capture_errors"]``.
        check_version: Refuse AutoGen versions outside ``SUPPORTED`` (at instrument time).
        cancel_grace: Seconds a cancelled run may take to unwind before it is abandoned.
        reset_shared: Reset a shared agent or team (``on_reset`` / ``reset``) before each
            trial, so no trial reads the previous one's conversation. Agents built by a factory
            are fresh and never reset.
    """

    name = FRAMEWORK
    scripted_model_faults = True
    """A battery's model faults reach this framework's scripted models (``hbeval_autogen.testing``) as
    the provider's own exceptions; a real provider client gets them through the proxy."""
    _injector_var = _INJECTOR
    _memory_var = _MEMORY

    def __init__(
        self,
        *,
        monitor_factory: Callable[[], Monitor] | None = None,
        strict: bool = False,
        check_version: bool = True,
        cancel_grace: float = 5.0,
        reset_shared: bool = True,
    ) -> None:
        self.monitor_factory = monitor_factory
        self.reset_shared = reset_shared
        self.strict = strict
        self.check_version = check_version
        self.cancel_grace = cancel_grace
        self.memory: Any = None
        """What ``memory_hook`` attached: an ``EDMMemory``, an EDM backing, or an AutoGen Memory."""
        self._views: dict[str, Any] = {}
        self._views_lock = threading.Lock()
        self._homes = HomeLoops()

    # ------------------------------------------------------------------ the Adapter protocol
    def instrument(self) -> None:
        """Hook ``AssistantAgent`` so runs in a scope are recorded. Idempotent."""
        _hook.instrument(check_version=self.check_version)

    def uninstrument(self) -> None:
        """Restore ``AssistantAgent`` exactly as it was. Idempotent."""
        _hook.uninstrument()

    def memory_hook(self, memory: Any) -> None:
        """Attach ``memory`` to every AssistantAgent of later runs (None detaches).

        An ``EDMMemory`` is used as is; an EDM backing (``recall`` + ``admit``) is wrapped in an
        ``EDMMemory`` per agent id (the trial's ``agent_id``); any other AutoGen ``Memory`` is
        appended as given.
        """
        self.memory = memory
        with self._views_lock:
            self._views.clear()

    @contextmanager
    def scope(self, run_id: str) -> Iterator[RunRecorder]:
        """Record every AutoGen run inside the block as run ``run_id``; yields the recorder.

        Example::

            with AutoGenAdapter().scope("r1") as rec:
                await agent.run(task="...")
            rec.events
        """
        ctx = current_trial()
        rec = self._recorder(run_id, ctx)
        with _recording(
            rec,
            check_version=self.check_version,
            agent_id=ctx.agent_id if ctx is not None else None,
            task_id=ctx.task_id if ctx is not None else None,
        ):
            yield rec

    # ------------------------------------------------------------------ run_trial (template)
    def prepare_trial(self, target: Any, trial: Trial) -> tuple[Any, bool]:
        """Open the trial's recorder and run, and build the agent (calling a factory)."""
        rec = trial.recorder = self._recorder(trial.run_id, trial.ctx, injector=trial.injector)
        rec.start_run(**trial.run_info())
        agent, fresh = target, False
        if not is_autogen_target(target) and callable(target):
            agent, fresh = target(), True
        if not is_autogen_target(agent):
            raise TypeError(
                f"an AutoGen target must be an agentchat agent or team, or a factory "
                f"returning one (got {type(agent).__name__})"
            )
        return agent, fresh

    def execute_trial(self, prepared: tuple[Any, bool], trial: Trial) -> None:
        """Drive the agent on its event loop; its own errors come back in the ``_Outcome``."""
        agent, fresh = prepared
        with _hook.hold(check_version=self.check_version):
            trial.final = self._execute(agent, trial.task, trial.question, trial.recorder, fresh)

    def infra_result(self, trial: Trial, exc: BaseException) -> TrialResult:
        """Building or hooking the agent failed, or (strict mode) capture did: the harness's
        failure, not the agent's. The run is closed with the error."""
        rec: RunRecorder | None = trial.recorder
        if rec is None:
            return super().infra_result(trial, exc)
        text = describe_error(exc)
        try:
            rec.end_run("error", error=text)
        except Exception as end_exc:
            rec.note("run_end", end_exc)
        return TrialResult(
            final_state=None,
            events=rec.events,
            status="error",
            error=text,
            error_type=type(exc).__name__,
            infra=True,
            metadata=capture_metadata(rec.errors),
        )

    def ended_by(self, exc: BaseException) -> Ended:
        """Driving the agent raised: hbeval's own failure (agent errors come in the outcome)."""
        raise exc

    def settle(self, prepared: Any, trial: Trial, ended: Ended) -> Ended:
        """An abort decides over what the run returned; strict mode fails on a capture error."""
        rec: RunRecorder = trial.recorder
        outcome: _Outcome = trial.final
        exc = outcome.error
        if rec.abort_status is not None:
            ended = Ended(rec.abort_status, rec.abort_reason, rec.abort_type or "RunAborted")
        elif exc is not None:
            note_rate_limit(trial.ctx, exc)  # a 429: the runner pauses the run and retries
            ended = Ended("error", describe_error(exc), type(exc).__name__, is_infra_error(exc))
        elif outcome.cancelled:
            ended = Ended("cancelled", "the run was cancelled", "CancelledError")
        if self.strict and rec.first_error is not None:
            # Strict mode: a capture error the workbench could not raise (raising hangs
            # AutoGen) fails the trial now that the run is over.
            first = rec.first_error
            ended = Ended("error", describe_error(first), type(first).__name__, True)
        return super().settle(prepared, trial, ended)

    def run_trial(self, target: Any, task: Task, scenario: Any, plan: Any) -> TrialResult:
        """Run ``task`` once on ``target`` under ``scenario``; never raises for agent errors.

        Outside a battery run (no ``TrialContext``) a ``plan`` is injected only when
        ``HBEVAL_ALLOW_FAULT_INJECTION`` allows it: plain capture never injects on its own.
        """
        trial = self.open_trial(task, scenario, plan)
        try:
            return self.run_trial_as(trial, target)
        except Exception as exc:
            return self.infra_result(trial, exc)

    # ------------------------------------------------------------------ memory admission
    def memory_for(self, agent_id: str) -> Any:
        """The memory runs of ``agent_id`` get (None when no memory is attached)."""
        memory = self.memory
        if memory is None:
            return None
        from autogen_core.memory import Memory

        from ._memory import EDMMemory

        if isinstance(memory, Memory):
            return memory
        if callable(getattr(memory, "recall", None)) and callable(getattr(memory, "admit", None)):
            with self._views_lock:
                view = self._views.get(agent_id)
                if view is None:
                    view = self._views[agent_id] = EDMMemory(memory, agent_id=agent_id)
                return view
        raise TypeError(
            "memory_hook needs an EDMMemory, an EDM backing (recall + admit) or an AutoGen "
            f"Memory (got {type(memory).__name__})"
        )

    def admit(
        self,
        result: TrialResult,
        verdict: Mapping[str, Any] | None = None,
        *,
        score: Any = None,
        passed: bool | None = None,
    ) -> bool | None:
        """Offer a scored trial's episode to the attached memory; None when there is none.

        Call once the trial is scored: only then can evaluation-driven memory decide whether
        the episode qualifies. ``verdict`` is the scored verdict (``score_trial(...).as_dict()``:
        its ``metrics``, ``evidence``, ``passed`` and ``forbidden_tools_run`` are what EDM
        admits on); ``score`` / ``passed`` are a simpler alternative for custom backings.
        """
        draft = result.metadata.get(META_EPISODE)
        if not isinstance(draft, Mapping):
            return None
        memory = self.memory_for(str(result.metadata.get(META_AGENT_ID) or "default"))
        admit = getattr(memory, "admit_episode", None)
        if not callable(admit):
            return None
        episode = {**dict(verdict or {}), **draft}
        if verdict is not None:
            # The verdict's own judgement of safety wins over the draft's trace reading.
            for key in ("passed", "forbidden_tools_run", "evidence", "metrics"):
                if key in verdict:
                    episode[key] = verdict[key]
        # EDM computes the figures it admits on from the trace, never from the verdict's copy.
        episode.setdefault("events", list(result.events))
        episode.setdefault("rule_inputs", {"final_text": result.response_text})
        return bool(admit(episode, score=score, passed=passed))

    def close(self) -> None:
        """Stop the home event loops of shared agents."""
        self._homes.close()

    # ------------------------------------------------------------------ internals
    def _recorder(
        self, run_id: str, ctx: TrialContext | None, *, injector: Any = None
    ) -> RunRecorder:
        if injector is None:
            injector = injector_for(self._injector_var.get(), ctx, None, run_id, None)
        agent_id = ctx.agent_id if ctx is not None else "default"
        return RunRecorder(
            run_id,
            injector=injector,
            memory=self.memory_for(agent_id),
            monitor=self.monitor_factory() if self.monitor_factory is not None else None,
            context=ctx,
            clock=ctx.clock if ctx is not None else None,
            strict=self.strict,
        )

    def _execute(
        self, agent: Any, task: Task, question: str, rec: RunRecorder, fresh: bool
    ) -> _Outcome:
        reset = False if fresh else self.reset_shared

        async def drive() -> _Outcome:
            try:
                return await self._drive(agent, task, question, rec, reset)
            finally:
                # A fresh loop closes with the trial, a home loop when its agent is collected:
                # either way the pooled connections must close on it first, while it runs.
                await release_connections(agent)

        if fresh:
            return run_on_fresh_loop(drive)
        return self._homes.run(agent, drive)

    async def _drive(
        self, agent: Any, task: Task, question: str, rec: RunRecorder, reset: bool
    ) -> _Outcome:
        """Consume ``agent.run_stream`` with the recorder active; cancel it on an abort."""
        from autogen_agentchat.base import TaskResult

        if reset:
            await _reset(agent)
        task_input = _task_input(task, question)
        token = _hook.ACTIVE_RECORDER.set(rec)
        # Calls of ``faultable`` functions the agent runs are recorded in this run's trace.
        reporting = reporting_to(recorder_reporter(rec))
        reporting.__enter__()
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()

        def wake() -> None:
            loop.call_soon_threadsafe(stop.set)

        rec.on_abort(wake)
        team = _is_team(agent)
        span = rec.span_start(SCOPE_TEAM, str(getattr(agent, "name", "team"))) if team else None
        outcome = _Outcome()

        async def consume() -> Any:
            final = None
            with _hook.team_span(span):
                async for item in agent.run_stream(task=task_input):
                    if isinstance(item, TaskResult):
                        final = item
            return final

        run = asyncio.ensure_future(consume())
        watchers: list[asyncio.Future[Any]] = [asyncio.ensure_future(stop.wait())]
        if rec.context is not None:
            watchers.append(asyncio.ensure_future(self._watch_timeout(rec)))
        try:
            await asyncio.wait([run, *watchers], return_when=asyncio.FIRST_COMPLETED)
            if not run.done() and team:
                # A team unwinds cleanly on its own: the next model call raises RunAborted and
                # the group chat ends with that error. Cancelling it mid-flight instead races
                # its runtime shutdown. Cancel only if it does not end within the grace period.
                await asyncio.wait([run], timeout=self.cancel_grace)
            if not run.done():
                run.cancel()
                await asyncio.wait([run], timeout=self.cancel_grace)
            if not run.done():
                outcome.cancelled = True
                rec.fail("cancel", TimeoutError("the run did not stop within cancel_grace"))
            elif run.cancelled():
                outcome.cancelled = True
            elif run.exception() is not None:
                outcome.error = run.exception()
            else:
                outcome.result = run.result()
        finally:
            for w in watchers:
                w.cancel()
            _hook.ACTIVE_RECORDER.reset(token)
            reporting.__exit__(None, None, None)
        if span is not None:
            error = (
                None
                if outcome.error is None
                else f"{type(outcome.error).__name__}: {outcome.error}"
            )
            rec.span_end(span, SCOPE_TEAM, str(getattr(agent, "name", "team")), error=error)
        return outcome

    @staticmethod
    async def _watch_timeout(rec: RunRecorder) -> None:
        """Abort the run once the runner cuts the trial (its timeout sets ``ctx.cancelled``)."""
        ctx = rec.context
        assert ctx is not None
        while not ctx.cancelled.is_set():
            await asyncio.sleep(_POLL_SECONDS)
        text = f"TrialCancelled: trial {ctx.trial_key} was cut by its timeout"
        rec.abort(ABORT_TIMEOUT, text, "TrialCancelled")

    def trial_result(self, prepared: tuple[Any, bool], trial: Trial, ended: Ended) -> TrialResult:
        """Close the run and read the result: the answer, the messages, an episode draft."""
        rec: RunRecorder = trial.recorder
        outcome: _Outcome = trial.final
        ctx = trial.ctx
        messages = list(getattr(outcome.result, "messages", None) or ())
        stop_reason = getattr(outcome.result, "stop_reason", None)
        answer_from = getattr(trial.task, "answer_from", None)
        text = None
        if messages:
            text = response_text(
                messages,
                answer_from=answer_from,
                keywords=termination_keywords(prepared[0]),
                stop_reason=stop_reason if isinstance(stop_reason, str) else None,
            )
        if text is None and ended.status == "ok" and answer_from is None:
            text = rec.final_text
        final_state = None
        if outcome.result is not None:
            final_state = {
                "response": text,
                "stop_reason": stop_reason,
                "messages": [_message_record(m) for m in messages],
            }
        rec.end_run(
            ended.status,
            output=text,
            error=ended.error,
            attrs={ATTR_STOP_REASON: stop_reason} if stop_reason else None,
            exact=True,
        )
        return result_of(
            trial,
            ended,
            rec.events,
            final_state=final_state,
            response_text=text,
            raw=outcome.result,
            messages=_chat_messages(messages),
            metadata=capture_metadata(
                rec.errors,
                **{
                    META_USAGE: {"input_tokens": rec.usage_in, "output_tokens": rec.usage_out},
                    META_AGENT_ID: ctx.agent_id if ctx is not None else "default",
                    META_EVENT_LOOP: "fresh" if prepared[1] else "home",
                    META_EPISODE: build_episode(
                        rec.events,
                        task=trial.task,
                        question=trial.question,
                        response=text,
                        status=ended.status,
                        trial_key=ctx.trial_key if ctx is not None else None,
                    ),
                },
            ),
        )


@contextmanager
def capture(
    run_id: str = "autogen-run",
    *,
    injector: Any = None,
    memory: Any = None,
    monitor: Monitor | None = None,
    strict: bool = False,
    check_version: bool = True,
) -> Iterator[RunRecorder]:
    """Record every AutoGen run inside the block; yields the recorder (``rec.events``).

    Example::

        with capture("r1") as rec:
            await agent.run(task="Where is order A1005?")
        [e.kind for e in rec.events]

    ``injector`` injects faults (only if it is enabled: injection is opt-in); ``memory`` is
    added to every AssistantAgent's memories for the block.
    """
    rec = RunRecorder(run_id, injector=injector, memory=memory, monitor=monitor, strict=strict)
    with _recording(rec, check_version=check_version):
        yield rec


@contextmanager
def _recording(rec: RunRecorder, *, check_version: bool, **start: Any) -> Iterator[None]:
    """Make ``rec`` the active recorder for the block, between its run start and run end."""
    with _hook.hold(check_version=check_version):
        token = _hook.ACTIVE_RECORDER.set(rec)
        rec.start_run(**start)
        status, error = "ok", None
        try:
            yield
        except BaseException as exc:
            status = "cancelled" if isinstance(exc, asyncio.CancelledError) else "error"
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            _hook.ACTIVE_RECORDER.reset(token)
            rec.end_run(status, output=rec.final_text, error=error)


async def _reset(agent: Any) -> None:
    """Clear a shared agent's or team's conversation: it must not carry the previous trial's."""
    if _is_team(agent):
        await agent.reset()
    else:
        from autogen_core import CancellationToken

        await agent.on_reset(CancellationToken())


def _task_input(task: Task, question: str) -> Any:
    """What ``run_stream`` is given: the question, after the task's system message if any."""
    if not task.system:
        return question
    from autogen_agentchat.messages import TextMessage

    return [
        TextMessage(content=task.system, source="system"),
        TextMessage(content=question, source="user"),
    ]
