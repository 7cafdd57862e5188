"""Memory in a battery run: the hook before the first trial, admission after the last.

Admission waits for the end of the run on purpose (see ``runner.run``): trials of one run stay
independent, so a run's verdicts depend only on the memory as it stood when the run began.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._attempts import _Job

log = logging.getLogger("hbeval.runner")


# ---------------------------------------------------------------------- memory
def _check_memory(memory: Any) -> None:
    if memory is None:
        return
    if not callable(getattr(memory, "admit", None)):
        raise ValueError(
            f"memory must provide admit(episode) (and recall(context, agent_id) for precedents), "
            f"such as hbeval.memory.EDM; got {type(memory).__name__}"
        )


def _memory_config(memory: Any) -> dict[str, Any]:
    """What the run's stored config says about the attached memory (JSON-ready)."""
    embedder = getattr(memory, "embedder", None)
    name = getattr(embedder, "name", None)
    threshold = getattr(memory, "threshold", None)
    policy = getattr(memory, "policy", None)
    as_dict = getattr(policy, "as_dict", None)
    return {
        "kind": type(memory).__name__,
        "embedder": name if isinstance(name, str) else None,
        "threshold": (
            float(threshold)
            if isinstance(threshold, (int, float)) and not isinstance(threshold, bool)
            else None
        ),
        "policy": as_dict() if callable(as_dict) else None,
    }


def _recall_view(memory: Any, agent_id: str) -> Any:
    """What the run's trials recall from: the memory as it stands before the first trial.

    A memory with ``snapshot(agent_ids)`` (EDM) gives a read-only copy of the run agent's
    episodes (``EDMSnapshot``): every executor's trials recall from it, in this process or on Ray
    workers, so none sees an episode admitted after the run began, by this run or anyone else.
    Any other memory is its own view. A snapshot that cannot be taken is logged, and the trials
    then record its error as their recall's (memory never breaks the run).
    """
    take = getattr(memory, "snapshot", None)
    if not callable(take):
        return memory
    try:
        return take([agent_id])
    except Exception as exc:  # memory never breaks the run: the trials record why
        log.warning("could not take a snapshot of the memory: %r", exc)
        return _Unavailable(f"the memory's snapshot failed: {type(exc).__name__}: {exc}")


class _Unavailable:
    """The recall view of a memory whose snapshot failed: every call raises the failure."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def recall(self, context: str, agent_id: str) -> list[str]:
        """Raises: the trial records the reason as its recall's error."""
        raise RuntimeError(self.reason)

    def admit(self, episode: Any) -> Any:
        """Raises: nothing can be admitted through a view."""
        raise RuntimeError(self.reason)


def _set_memory_hook(adapter: Any, memory: Any) -> None:
    """``adapter.memory_hook(memory)``; an adapter without one (or one that fails) only loses recall."""
    hook = getattr(adapter, "memory_hook", None)
    if not callable(hook):
        if memory is not None:
            log.warning(
                "adapter %s has no memory_hook: episodes are admitted but no precedents are "
                "recalled during trials",
                getattr(adapter, "name", type(adapter).__name__),
            )
        return
    try:
        hook(memory)
    except Exception as exc:  # memory never breaks the run
        log.warning("memory_hook of adapter %s failed: %r", getattr(adapter, "name", "?"), exc)


def _decision_record(decision: Any) -> dict[str, Any]:
    """An ``AdmissionDecision`` (or any truthy/falsy answer of ``admit``) as a JSON-ready dict."""
    as_dict = getattr(decision, "as_dict", None)
    data = as_dict() if callable(as_dict) else None
    if not isinstance(data, Mapping):
        return {
            "admitted": bool(decision),
            "route": None,
            "reasons": [],
            "episode_id": None,
            "quarantined": False,
        }
    reasons = data.get("reasons") or ()
    return {
        "admitted": bool(data.get("admitted", bool(decision))),
        "route": data.get("route"),
        "reasons": [str(r) for r in reasons],
        "episode_id": data.get("episode_id"),
        "quarantined": bool(data.get("quarantined", False)),
    }


def _admit_run(
    memory: Any,
    jobs: Sequence[_Job],
    trial_dicts: Mapping[str, dict[str, Any]],
    episodes: Mapping[str, dict[str, Any] | str | None],
    on_admission: Callable[[Mapping[str, Any]], Any] | None,
) -> dict[str, int]:
    """Offer every scored trial's episode to ``memory``, in trial order; returns the tallies.

    Each trial dict gets ``memory``: ``{offered, admitted, route, reasons, episode_id,
    quarantined, error}``. An exception from ``memory.admit`` is logged and recorded as
    ``error``; it never stops the run.
    """
    tally = {"admitted": 0, "refused": 0, "quarantined": 0, "not_offered": 0, "errors": 0}
    for job in jobs:
        trial = trial_dicts[job.key]
        episode = episodes.get(job.key)
        record: dict[str, Any] = {
            "offered": isinstance(episode, dict),
            "admitted": False,
            "route": None,
            "reasons": [],
            "episode_id": None,
            "quarantined": False,
            "error": None,
        }
        if episode is None:
            record["reasons"] = [
                f"not offered: outcome {trial.get('outcome')}"
                + (" (no verdict)" if trial.get("verdict") is None else "")
            ]
            tally["not_offered"] += 1
        elif isinstance(episode, str):
            record["error"] = episode
            tally["errors"] += 1
        else:
            try:
                record.update(_decision_record(memory.admit(episode)))
            except Exception as exc:  # memory never breaks the run: log and record it
                log.warning("memory.admit failed for %s: %r", job.key, exc)
                record["error"] = f"{type(exc).__name__}: {exc}"
                tally["errors"] += 1
            else:
                key = (
                    "admitted"
                    if record["admitted"]
                    else ("quarantined" if record["quarantined"] else "refused")
                )
                tally[key] += 1
        trial["memory"] = record
        if on_admission is not None:
            on_admission(
                {
                    "trial_key": job.key,
                    "task_id": job.task.id,
                    "scenario_index": job.scenario.index,
                    "trial_index": job.trial_index,
                    "outcome": trial.get("outcome"),
                    **record,
                }
            )
    log.info(
        "memory: %(admitted)d admitted, %(refused)d refused, %(quarantined)d quarantined, "
        "%(not_offered)d not offered, %(errors)d errors",
        tally,
    )
    return tally
