"""Which stored runs CSI combines with this one, and when its band word is withheld.

CSI (the reference formula, ``hbeval_core.metrics.csi``) measures how steady an agent stays
from run to run, so it may only combine runs of the same measurement on the same agent:

- the same agent id and measurement fingerprint (the store's query);
- the same agent sources digest: the user's source files behind the target and the task
  verifiers (the manifest's ``sources``). Installed packages are not among them, so a package
  upgrade alone does not separate two runs;
- the same task digest: every field of every task, the verifier's source text included;
- the same judge;
- not the same events: an imported run whose trials' events equal a stored run's (ignoring the
  run ids the store names them by) is that run again, a second import of one recording, not
  another run of the agent. (A battery run's events carry the times they happened, so two
  executions never have the same events; they are not digested.)

A stored report that does not record these (written before they were) cannot be shown to be
the same measurement and is left out. The report's ``csi_runs`` block states this run's
identity, the runs combined and how many were left out for each reason.

The band word (STABLE, ACCEPTABLE, MARGINAL) claims a level of consistency. Within-run
consistency that falls below the same level contradicts it: C_out below the band's floor, or a
flip rate above one minus that floor. Then the band is withheld (``csi_info.band`` null) and
``csi_runs.band_withheld`` says which figure contradicted it; the CSI value itself stays.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Iterable, Mapping
from dataclasses import fields, is_dataclass
from typing import TYPE_CHECKING, Any

from pydantic import Field

from hbeval_core.fingerprint import fingerprint
from hbeval_core.metrics import CSI_BANDS

from ._trial_model import _Block

if TYPE_CHECKING:
    from ._report_model import Report

__all__ = [
    "CsiIdentity",
    "CsiRuns",
    "combined_events_digest",
    "csi_history",
    "events_digest",
    "identity_of",
    "select_csi_history",
    "task_digest",
    "trial_events_digest",
    "with_csi_runs",
]

OTHER_AGENT_SOURCES = "other_agent_sources"
OTHER_TASKS = "other_tasks"
OTHER_JUDGE = "other_judge"
SAME_EVENTS = "same_events"
IDENTITY_UNKNOWN = "identity_unknown"
EXCLUSION_REASONS = (SAME_EVENTS, OTHER_AGENT_SOURCES, OTHER_TASKS, OTHER_JUDGE, IDENTITY_UNKNOWN)
"""Why a stored run of the same agent id and measurement fingerprint is not combined."""


class CsiIdentity(_Block):
    """What a run must share with another for CSI to combine them."""

    agent_sources: str | None = Field(
        description="Digest of the agent's and verifiers' source files (the manifest's "
        "sources); null when not known (an imported recording)."
    )
    tasks: str | None = Field(
        description="Digest of every field of every task, verifier source included; null when "
        "not known (an imported recording: its files are in the measurement fingerprint)."
    )
    judge: str | None = Field(description="The judge's identity; null without a judge.")
    events: str | None = Field(
        description="Digest of the trials' events, run ids left out (imports); null for a "
        "battery run, whose events carry the times they happened and never equal another's."
    )


class CsiRuns(_Block):
    """The stored runs CSI combined with this one, and the ones it left out."""

    identity: CsiIdentity
    combined: list[str] = Field(description="Run ids of the stored runs combined, oldest first.")
    excluded: dict[str, int] = Field(
        description="Stored runs of the same agent id and measurement fingerprint left out, by "
        "reason: same_events, other_agent_sources, other_tasks, other_judge, identity_unknown."
    )
    band_withheld: str | None = Field(
        default=None,
        description="Why the CSI band word is not given: the within-run figure that "
        "contradicts it; absent when it is given (or there is none).",
    )


# --------------------------------------------------------------------------- digests
_OPTIONAL_FIELDS = frozenset({"tools"})


def _plain(value: Any) -> Any:
    """A task field as canonical JSON can hold it; a callable by its source text."""
    if callable(value) and not isinstance(value, type):
        try:
            text = inspect.getsource(value)
        except (OSError, TypeError):
            text = f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', '?')}"
        return {"source_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
    if is_dataclass(value) and not isinstance(value, type):
        # A task's undeclared ``tools`` is left out, so tasks digest as before it existed.
        return {
            f.name: _plain(getattr(value, f.name))
            for f in fields(value)
            if not (f.name in _OPTIONAL_FIELDS and getattr(value, f.name) is None)
        }
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def task_digest(tasks: Iterable[Any]) -> str:
    """Digest of every field of every task (a verifier by its source text), in task order."""
    return fingerprint([_plain(t) for t in tasks])


def trial_events_digest(events: Iterable[Any]) -> str:
    """Digest of one trial's events (run ids left out)."""
    digest = hashlib.sha256()
    for event in events:
        body = event.model_dump(mode="json", exclude={"run_id"})
        digest.update(json.dumps(body, sort_keys=True, default=str).encode("utf-8") + b"\n")
    return digest.hexdigest()


def combined_events_digest(digests: Iterable[tuple[str, str]]) -> str:
    """A run's events digest from each trial's key and ``trial_events_digest``, in trial-key
    order: trials can be digested one at a time, as they are stored."""
    digest = hashlib.sha256()
    for key, one in sorted(digests):
        digest.update(key.encode("utf-8") + b"\0" + one.encode("ascii") + b"\n")
    return digest.hexdigest()[:32]


def events_digest(trials: Iterable[tuple[str, Iterable[Any]]]) -> str:
    """Digest of each trial's events (run ids left out), trials in trial-key order."""
    return combined_events_digest((key, trial_events_digest(events)) for key, events in trials)


def identity_of(run: Mapping[str, Any], events: str | None) -> CsiIdentity:
    """This run's identity from its run description (``run_info``) and events digest."""
    manifest = run.get("manifest")
    sources = manifest.get("sources") if isinstance(manifest, Mapping) else None
    judge = run.get("judge")
    return CsiIdentity(
        agent_sources=fingerprint(dict(sources)) if isinstance(sources, Mapping) else None,
        tasks=run.get("task_digest") if isinstance(run.get("task_digest"), str) else None,
        judge=None if judge is None else str(judge),
        events=events,
    )


# --------------------------------------------------------------------------- selection
def _exclusion(identity: CsiIdentity, other: Report) -> str | None:
    block = getattr(other, "csi_runs", None)
    if block is None:
        return IDENTITY_UNKNOWN
    theirs = block.identity
    if identity.events is not None and theirs.events == identity.events:
        return SAME_EVENTS
    if theirs.agent_sources != identity.agent_sources:
        return OTHER_AGENT_SOURCES
    if theirs.tasks != identity.tasks:
        return OTHER_TASKS
    if theirs.judge != identity.judge:
        return OTHER_JUDGE
    return None


def select_csi_history(store: Any, run: Mapping[str, Any]) -> tuple[list[Report], CsiRuns]:
    """``csi_history`` for a battery run (its events are not digested: see ``CsiIdentity``)."""
    return csi_history(store, run, identity_of(run, None))


def csi_history(
    store: Any, run: Mapping[str, Any], identity: CsiIdentity
) -> tuple[list[Report], CsiRuns]:
    """The stored reports CSI may combine with this run (oldest first), and the block saying so."""
    run_id = run.get("run_id")
    fps = run.get("fingerprints")
    measurement = fps.get("measurement") if isinstance(fps, Mapping) else None
    combined: list[Report] = []
    ids: list[str] = []
    excluded: dict[str, int] = {}
    for record in store.list_reports(
        agent_id=run.get("agent_id"), measurement_fingerprint=measurement
    ):
        if record.run_id == run_id:
            continue
        reason = _exclusion(identity, record.report)
        if reason is None:
            combined.append(record.report)
            ids.append(record.run_id)
        else:
            excluded[reason] = excluded.get(reason, 0) + 1
    return combined, CsiRuns(identity=identity, combined=ids, excluded=excluded)


# --------------------------------------------------------------------------- the band
def _contradiction(band: str, c_out: float | None, flips: float | None) -> str | None:
    floor = next((f for f, name in CSI_BANDS if name == band), None)
    if floor is None:
        return None  # UNSTABLE claims nothing that noise could contradict
    if c_out is not None and c_out < floor:
        return f"C_out {c_out:.2f} is below {band}'s floor {floor:.2f}"
    if flips is not None and flips > 1 - floor:
        return f"flip rate {flips:.2f} is above {band}'s ceiling {1 - floor:.2f}"
    return None


def with_csi_runs(report: Report, block: CsiRuns) -> Report:
    """``report`` with ``csi_runs`` set, and its CSI band withheld when its own repeated trials
    contradict it (call after the consistency block is added)."""
    info = report.csi_info
    consistency = getattr(report, "consistency", None)
    why = None
    if info.band is not None and consistency is not None:
        why = _contradiction(info.band, consistency.c_out, consistency.flip_rate)
    update: dict[str, Any] = {"csi_runs": block}
    changes: dict[str, Any] = {}
    if why is not None:
        update["csi_runs"] = block.model_copy(update={"band_withheld": why})
        changes["band"] = None
    if block.excluded:
        left_out = ", ".join(f"{n} {reason}" for reason, n in sorted(block.excluded.items()))
        changes["note"] = f"{info.note}; stored runs left out: {left_out}"
    if changes:
        update["csi_info"] = info.model_copy(update=changes)
    return report.model_copy(update=update)
