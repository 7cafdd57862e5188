"""Checks every store runs before writing, so SQLite and memory refuse exactly the same input.

Each check raises ``ValueError`` naming the offending field (and metric or event), before anything
is written. Undefined is never zero: a metric is either a finite number, or ``None`` with a
reason code; NaN and infinities are refused everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from hbeval_core.vocab import TRIAL_OUTCOMES, UNDEFINED_REASONS

from ..scoring._report_model import Report, ReportFormatError, read_report
from ._json import dumps
from .errors import StoreDamagedError, StoreError
from .records import RUN_FINAL_STATUSES, RUN_STATUSES, AttemptRecord, RunRecord, TrialRecord

_OUTCOMES = frozenset(TRIAL_OUTCOMES)
_REASONS = frozenset(UNDEFINED_REASONS)


def check_text(name: str, value: object, *, optional: bool = False) -> None:
    """Refuse anything but a non-empty, storable string (or ``None`` when ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    check_unicode(name, value)


def check_unicode(name: str, value: str) -> None:
    """Refuse text SQLite (and any UTF-8 file) cannot hold: lone surrogates."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            f"{name} is not valid Unicode text (a lone surrogate); it cannot be stored"
        ) from None


MAX_INDEX = 2**63 - 1
"""The largest index a store keeps (a signed 64-bit integer in SQLite and PostgreSQL)."""


def check_index(name: str, value: object) -> None:
    """Refuse anything but an int from 0 to ``MAX_INDEX`` (bools are refused: True is not an
    index)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    if value > MAX_INDEX:
        raise ValueError(f"{name} must be at most 2**63 - 1 (a 64-bit integer), got {value}")


def check_number(name: str, value: object, *, optional: bool = True) -> float | None:
    """A finite float from an int or float; ``None`` passes when ``optional``. NaN/inf refused."""
    if value is None:
        if optional:
            return None
        raise ValueError(f"{name} is required, got None")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name} is {value!r}; NaN and infinities are never stored")
    return number


def find_unstorable(value: Any, path: str) -> str | None:
    """Where ``value`` holds a NaN, an infinity or a lone surrogate, and which; None if nowhere.

    Walks dicts, lists, tuples, sets and pydantic models; the answer reads like
    ``"'args.limit' is NaN or infinite"``.
    """
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path!r} is NaN or infinite"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{path!r} is not valid Unicode text (a lone surrogate)"
        return None
    children: Iterable[tuple[str, Any]] = ()
    if isinstance(value, Mapping):
        children = ((f"{path}.{key}", item) for key, item in value.items())
    elif isinstance(value, (list, tuple, set, frozenset)):
        children = ((f"{path}[{i}]", item) for i, item in enumerate(value))
    elif hasattr(value, "__pydantic_fields__"):
        children = (
            (f"{path}.{key}", getattr(value, key, None)) for key in value.__pydantic_fields__
        )
    for where, item in children:
        found = find_unstorable(item, where)
        if found:
            return found
    return None


def encode_json(name: str, value: Any) -> str:
    """Compact JSON text of a dict field; NaN/inf and unserialisable values are refused by name."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a JSON object (a dict), got {type(value).__name__}")
    try:
        text = dumps(value, utf8=True)  # json.dumps's text and errors, faster on plain data
    except ValueError:  # NaN, infinity, a lone surrogate (UnicodeEncodeError), a cycle
        problem = find_unstorable(value, name) or f"{name!r} cannot be stored as JSON"
        raise ValueError(
            f"{problem}; NaN, infinities and lone surrogates are never stored"
        ) from None
    except TypeError as exc:
        raise ValueError(f"{name} is not JSON-serialisable: {exc}") from None
    return text


def check_outcome(name: str, value: object) -> None:
    """Refuse an outcome that is not one of ``vocab.TRIAL_OUTCOMES``."""
    if value not in _OUTCOMES:
        raise ValueError(f"{name} must be one of {', '.join(TRIAL_OUTCOMES)}; got {value!r}")


def check_run(run: RunRecord) -> str:
    """Validate a run record; returns its config as JSON text."""
    if not isinstance(run, RunRecord):
        raise ValueError(f"expected a RunRecord, got {type(run).__name__}")
    check_text("run_id", run.run_id)
    check_text("agent_id", run.agent_id)
    check_text("battery", run.battery)
    check_text("measurement_fingerprint", run.measurement_fingerprint)
    check_text("manifest_hash", run.manifest_hash, optional=True)
    check_number("created_at", run.created_at, optional=False)
    check_number("finished_at", run.finished_at)
    if run.status not in RUN_STATUSES:
        raise ValueError(f"status must be one of {', '.join(RUN_STATUSES)}; got {run.status!r}")
    return encode_json("config", run.config)


def check_trial(trial: TrialRecord) -> str | None:
    """Validate a trial record; returns its verdict as JSON text (None when there is none)."""
    if not isinstance(trial, TrialRecord):
        raise ValueError(f"expected a TrialRecord, got {type(trial).__name__}")
    check_text("run_id", trial.run_id)
    check_text("trial_key", trial.trial_key)
    check_text("task_id", trial.task_id)
    check_index("scenario_index", trial.scenario_index)
    check_index("trial_index", trial.trial_index)
    check_outcome("outcome", trial.outcome)
    check_text("fault_type", trial.fault_type, optional=True)
    check_text("domain", trial.domain, optional=True)
    check_number("started_at", trial.started_at)
    check_number("ended_at", trial.ended_at)
    latency = check_number("latency_ms", trial.latency_ms)
    if latency is not None and latency < 0:
        raise ValueError(f"latency_ms must be >= 0, got {latency!r}")
    check_index("attempts", trial.attempts)
    if trial.attempts < 1:
        raise ValueError(
            f"attempts must be >= 1 (a recorded trial ran at least once), got {trial.attempts}"
        )
    return None if trial.verdict is None else encode_json("verdict", trial.verdict)


def check_attempt(attempt: AttemptRecord) -> None:
    """Validate an attempt record."""
    if not isinstance(attempt, AttemptRecord):
        raise ValueError(f"expected an AttemptRecord, got {type(attempt).__name__}")
    check_text("run_id", attempt.run_id)
    check_text("trial_key", attempt.trial_key)
    check_index("attempt", attempt.attempt)
    check_outcome("outcome", attempt.outcome)
    if attempt.error is not None:
        if not isinstance(attempt.error, str):
            raise ValueError(f"error must be a string or None, got {attempt.error!r}")
        check_unicode("error", attempt.error)
    check_text("error_type", attempt.error_type, optional=True)
    if not isinstance(attempt.infra, bool):
        raise ValueError(f"infra must be a bool, got {attempt.infra!r}")
    check_number("started_at", attempt.started_at)
    check_number("ended_at", attempt.ended_at)


def metric_rows(
    metrics: Mapping[str, float | None], undefined: Mapping[str, str]
) -> list[tuple[str, float | None, str | None]]:
    """Pair each metric with its reason: ``(name, value, None)`` or ``(name, None, reason)``.

    A ``None`` value must have a reason code from ``vocab.UNDEFINED_REASONS``; a number must not
    have one; a reason for a metric that is not ``None`` in ``metrics`` is refused too.
    """
    if not isinstance(metrics, Mapping) or not isinstance(undefined, Mapping):
        raise ValueError("metrics and undefined must be mappings")
    rows: list[tuple[str, float | None, str | None]] = []
    for name, value in metrics.items():
        check_text("metric name", name)
        reason = undefined.get(name)
        if value is None:
            if reason is None:
                raise ValueError(
                    f"metric {name!r} is None without a reason; undefined is never zero: "
                    f"give undefined[{name!r}] one of {', '.join(UNDEFINED_REASONS)}"
                )
            if reason not in _REASONS:
                raise ValueError(
                    f"metric {name!r}: unknown undefined reason {reason!r}; "
                    f"known reasons: {', '.join(UNDEFINED_REASONS)}"
                )
            rows.append((name, None, reason))
        else:
            if reason is not None:
                raise ValueError(
                    f"metric {name!r} has the value {value!r} and also the undefined reason "
                    f"{reason!r}; a metric is either defined or undefined"
                )
            rows.append((name, check_number(f"metric {name!r}", value, optional=False), None))
    for name in undefined:
        if name not in metrics:
            raise ValueError(
                f"metric {name!r} has an undefined reason but no entry in metrics; "
                f"record it as metrics[{name!r}] = None"
            )
    return rows


_IDENTITY_FIELDS = ("agent_id", "battery", "measurement_fingerprint", "manifest_hash")


def check_resume(stored: RunRecord, new: RunRecord) -> None:
    """Refuse to resume ``stored`` with a run that measures something else."""
    for name in _IDENTITY_FIELDS:
        before, after = getattr(stored, name), getattr(new, name)
        if before != after:
            raise StoreError(
                f"run {stored.run_id!r} is stored with {name}={before!r}; resuming it with "
                f"{name}={after!r} would mix two measurements in one run. Use a new run id."
            )


def check_final_status(status: object) -> None:
    """Refuse a status ``finish_run`` does not accept."""
    if status not in RUN_FINAL_STATUSES:
        raise ValueError(f"status must be one of {', '.join(RUN_FINAL_STATUSES)}; got {status!r}")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in a report (NaN and infinities are never stored)")


def report_body(report: Report) -> tuple[dict[str, Any], str]:
    """A report as the JSON document the store keeps and its encoded body (NaN refused)."""
    if not isinstance(report, Report):
        raise ValueError(
            f"report must be an hbeval Report, got {type(report).__name__}; read a report "
            "file or dict with hbeval.load_report first"
        )
    document = report.to_dict()
    return document, encode_json("report", document)


def stored_report(document: object, where: str) -> Report:
    """A stored report document read back as a ``Report`` (old report formats still load)."""
    if not isinstance(document, Mapping):
        raise StoreDamagedError(
            f"{where} is a {type(document).__name__}, not a JSON object; "
            "the store was changed by hand"
        )
    try:
        return read_report(document)
    except ReportFormatError as exc:
        raise StoreDamagedError(
            f"{where} does not read as a report ({exc}); the store was changed by hand"
        ) from None


def check_report_labels(report: Report, run: RunRecord) -> None:
    """Refuse a report whose own agent id or measurement fingerprint contradicts its run's."""
    claims = {
        "agent_id": report.run.agent_id,
        "measurement_fingerprint": report.fingerprints.measurement,
    }
    for name, claimed in claims.items():
        if isinstance(claimed, str) and claimed != getattr(run, name):
            raise StoreError(
                f"report says {name}={claimed!r} but run {run.run_id!r} has "
                f"{name}={getattr(run, name)!r}; it would be listed under the wrong measurement"
            )
