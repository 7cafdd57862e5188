"""A report bound to the run it came from: its trials name the run, and a digest ties them together.

The recheck (``_recheck``) proves that a report's figures follow from its trials; it cannot
tell whose trials they are. So each trial entry names its run (``run_id``), and the report
carries ``binding.digest``: SHA-256 over the canonical JSON of its identity (run id, agent id,
manifest hash, measurement fingerprint) and its trial entries (their timestamps and latencies
set aside). The store keeps the report
with its digest.

A report whose trials name another run, or whose identity or trials no longer give its
digest, is refused by every reader (``binding_problems``, run by ``report_discrepancies``).
Relabelling a genuine report (another agent id, run id or manifest hash) is caught that way.
A fabrication consistent throughout (every trial renamed and the digest computed again) is
not: only the store (``passport sign --db``) or an earlier passport can show it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from hbeval_core.fingerprint import sha256_hex

if TYPE_CHECKING:
    from ._report_model import Report

__all__ = [
    "BINDING_ALGORITHM",
    "bind_report",
    "binding_problems",
    "bound_trials",
    "identity_of",
    "report_digest",
    "strip_volatile",
]

RUN_BOUND_KEYS: Final = ("loaded_sources",)
"""Report fields that differ between two runs of the same measurement: the loaded files are
whatever the process had imported by the end of the run."""

BINDING_ALGORITHM: Final = "sha256/hbeval-binding-1"
"""How ``binding.digest`` is computed (this module's ``report_digest``)."""


def bound_trials(run_id: str | None, trials: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each trial dict (a shallow copy) naming ``run_id`` as the run it belongs to."""
    return [{**t, "run_id": run_id} for t in trials]


def identity_of(report: Mapping[str, Any]) -> dict[str, Any]:
    """The identity a report claims: run id, agent id, manifest hash, measurement fingerprint."""
    run = report.get("run")
    fingerprints = report.get("fingerprints")
    return {
        "run_id": report.get("run_id"),
        "agent_id": run.get("agent_id") if isinstance(run, Mapping) else None,
        "manifest_hash": report.get("manifest_hash"),
        "measurement_fingerprint": (
            fingerprints.get("measurement") if isinstance(fingerprints, Mapping) else None
        ),
    }


def report_digest(report: Mapping[str, Any]) -> str:
    """SHA-256 hex over the report's identity and its trial entries (its JSON dict), the
    trials' timestamps and latencies set aside (``strip_volatile``): nothing a figure reads."""
    import json

    from ._battery import strip_volatile as strip_times

    trials = strip_times({"trials": report.get("trials")})["trials"]  # type: ignore[arg-type]
    body = {"identity": identity_of(report), "trials": trials}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return sha256_hex(text)


def strip_volatile(report: Report | Mapping[str, Any]) -> dict[str, Any]:
    """``scoring._battery.strip_volatile`` (timestamps and latencies set aside), and the
    ``RUN_BOUND_KEYS`` too: a copy of ``report`` for comparing two runs."""
    from ._battery import strip_volatile as strip_times

    out = strip_times(report)  # type: ignore[arg-type]  # it takes a report's dict as well
    for key in RUN_BOUND_KEYS:
        out.pop(key, None)
    return out


def bind_report(report: Report) -> Report:
    """``report`` with its ``binding`` (the digest over its identity and trials) set."""
    from ._report_model import ReportBinding

    binding = ReportBinding(algorithm=BINDING_ALGORITHM, digest=report_digest(report.to_dict()))
    return report.model_copy(update={"binding": binding})


def binding_problems(report: Mapping[str, Any]) -> list[str]:
    """Why ``report`` (its JSON dict) is not bound to the run it names; ``[]`` when it is.

    A trial that names a run other than the report's, and a digest its identity and trials do
    not give, are each a problem. A report without a binding (written before reports carried
    one, or built by hand with ``build_report``) is checked for the trials' run names only.
    """
    found: list[str] = []
    run_id = report.get("run_id")
    run = report.get("run")
    if isinstance(run, Mapping) and run.get("run_id") != run_id:
        found.append(f"run.run_id: {run.get('run_id')!r}, but the report is run {run_id!r}")
    trials = report.get("trials")
    for i, trial in enumerate(trials if isinstance(trials, list) else []):
        if not isinstance(trial, Mapping) or "run_id" not in trial:
            continue
        if trial["run_id"] != run_id:
            found.append(
                f"trials[{i}].run_id: the trial belongs to run {trial['run_id']!r}, "
                f"but the report is run {run_id!r}"
            )
            break
    binding = report.get("binding")
    if isinstance(binding, Mapping):
        if binding.get("algorithm") != BINDING_ALGORITHM:
            found.append(
                f"binding.algorithm: {binding.get('algorithm')!r}; this hbeval checks "
                f"{BINDING_ALGORITHM!r}"
            )
        elif binding.get("digest") != report_digest(report):
            found.append(
                "binding.digest: the report's identity (run id, agent id, manifest hash, "
                "measurement fingerprint) and trials do not give the digest it carries"
            )
    return found
