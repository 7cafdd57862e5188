"""``FaultRun``: hand hbeval the Crew you already have and get a battery report back.

A thin front over the core runner (``hbeval.runner.run.run_battery``) with the CrewAI
adapter chosen for you, plus the memory loop: precedents recalled before each task's first
model call during the run, and each scored trial offered to the memory's ``admit`` afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hbeval_core.contract import Task, TrialResult
from hbeval_core.live.monitor import Monitor
from hbeval_core.vocab import DEFAULT_SEED

from ._adapter import CrewAIAdapter, episode_of
from ._keys import ATTR_ADMITTED

if TYPE_CHECKING:
    from hbeval.scoring import Report

__all__ = ["FaultRun"]

_VERDICT_KEYS = (
    "passed",
    "metrics",
    "metrics_undefined",
    "evidence",
    "forbidden_tools_run",
    "scoring_version",
)
"""Verdict fields copied to the top level of an episode."""


class _RecordingAdapter(CrewAIAdapter):
    """The CrewAI adapter, keeping each trial's result so memory can be offered the episode."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.results: dict[str, tuple[Task, TrialResult]] = {}

    def run_trial(self, target: Any, task: Task, scenario: Any, plan: Any) -> TrialResult:
        from hbeval_core.contract import current_trial

        result = super().run_trial(target, task, scenario, plan)
        ctx = current_trial()
        if ctx is not None:
            self.results[ctx.trial_key] = (task, result)
        return result


class FaultRun:
    """Run an existing crew (or a factory of one) under a fault battery; ``run()`` gives the report.

    Args:
        crew: A ``crewai.Crew``, or a no-argument callable returning a fresh one (preferred:
            each trial then gets its own crew, and trials may run concurrently).
        tasks: The battery tasks (``hbeval_core.contract.Task``); each question reaches the
            crew as ``kickoff(inputs={"question": ...})``.
        battery: "hbeval" (default), "compat", or a built ``Battery``.
        trials: Trials per scenario.
        seed: The run's seed (scenarios, fault draws and fingerprints derive from it).
        memory: Optional memory (``recall`` / ``admit``); see ``hbeval_crewai.Memory``.
        monitor_factory: Builds each trial's ``Monitor`` (e.g. an enforced halt policy).
        strict: Re-raise capture errors (tests).
        run_options: Passed on to ``run_battery`` (``store``, ``agent_id``, ``run_id``,
            ``concurrency``, ``timeout``, ``manifest``, ``judge``, ``methodology``, ...).
    """

    def __init__(
        self,
        crew: Any,
        *,
        tasks: Sequence[Task],
        battery: Any = "hbeval",
        trials: int = 3,
        seed: int = DEFAULT_SEED,
        memory: Any = None,
        monitor_factory: Callable[[], Monitor] | None = None,
        strict: bool = False,
        **run_options: Any,
    ) -> None:
        self.crew = crew
        self.tasks = list(tasks)
        self.battery = battery
        self.trials = trials
        self.seed = seed
        self.memory = memory
        self.monitor_factory = monitor_factory
        self.strict = strict
        self.run_options = run_options
        self.report: Report | None = None
        """The ``hbeval-report/1`` dict of the last ``run()``."""
        self.episodes: list[dict[str, Any]] = []
        """Episodes offered to memory after the last run, each with ``admitted`` set."""

    def run(self) -> Report:
        """Run every scenario x trial, score them, offer episodes to memory; return the report."""
        from hbeval.runner.run import run_battery

        adapter = self._adapter()
        adapter.memory_hook(self.memory)
        try:
            report = run_battery(
                adapter,
                self.crew,
                self.tasks,
                self.battery,
                trials=self.trials,
                seed=self.seed,
                **self.run_options,
            )
        finally:
            adapter.memory_hook(None)
        return self._finish(report, adapter)

    async def arun(self) -> Report:
        """``run()`` as a coroutine (``hbeval.runner.arun_battery``): the caller's event loop
        keeps running, and each crew is driven through CrewAI's native ``akickoff``.

        ``run_options`` may set ``concurrency`` (trials at once, 8 by default). The report equals
        ``run()``'s for the same seed but for timings and ``run.executor`` (``async``).
        """
        from hbeval.runner import arun_battery

        adapter = self._adapter()
        adapter.memory_hook(self.memory)
        try:
            report = await arun_battery(
                adapter,
                self.crew,
                self.tasks,
                self.battery,
                trials=self.trials,
                seed=self.seed,
                **self.run_options,
            )
        finally:
            adapter.memory_hook(None)
        return self._finish(report, adapter)

    def _adapter(self) -> _RecordingAdapter:
        return _RecordingAdapter(monitor_factory=self.monitor_factory, strict=self.strict)

    def _finish(self, report: Report, adapter: _RecordingAdapter) -> Report:
        self.report = report
        self.episodes = self._admit(report, adapter.results) if self.memory is not None else []
        return report

    def _admit(
        self, report: Report, results: Mapping[str, tuple[Task, TrialResult]]
    ) -> list[dict[str, Any]]:
        """Offer each scored trial to memory, in report order; the memory decides what to keep."""
        episodes: list[dict[str, Any]] = []
        written = report.to_dict()  # an episode holds the trial's verdict as the report writes it
        for trial in written["trials"]:
            found = results.get(str(trial.get("trial_key")))
            if found is None:
                continue  # resumed from the store: its episode was offered when it ran
            task, result = found
            verdict = dict(trial.get("verdict") or {})
            verdict.setdefault("passed", trial.get("outcome") == "pass")
            episode = episode_of(task, result, verdict)
            # The scored verdict's fields at the top level, with the run's ids: the shape EDM's
            # admit() reads (hbeval.memory.parse_episode); other memories may ignore them.
            episode.update({k: verdict[k] for k in _VERDICT_KEYS if k in verdict})
            fingerprints = report.fingerprints
            episode.update(
                run_id=report.run_id,
                trial_key=trial.get("trial_key"),
                context=episode["question"],
                domain=trial.get("domain"),
                outcome=trial.get("outcome"),
                fault_type=trial.get("fault_type"),
                signals=trial.get("signals"),
                measurement_fingerprint=fingerprints.measurement,
                battery_fingerprint=fingerprints.battery_spec,
                metric_versions=dict(report.metric_versions),
                # EDM computes the figures it admits on from the trace and the task's rules.
                events=list(result.events),
                rule_inputs={
                    "forbidden_tools": list(task.forbidden_tools),
                    "irreversible_tools": list(task.irreversible_tools),
                    "final_text": result.response_text,
                },
            )
            try:
                admitted = bool(self.memory.admit(episode))
            except Exception as exc:  # a memory's bug must not lose the report
                episode["admit_error"] = f"{type(exc).__name__}: {exc}"
                admitted = False
            episode[ATTR_ADMITTED] = admitted
            episodes.append(episode)
        return episodes
