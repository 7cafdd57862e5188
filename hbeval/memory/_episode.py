"""What EDM stores (an :class:`Episode`) and the rules that decide whether one is admitted.

An episode is one scored trial of one agent: what the task was (``context``), what the agent
did (``summary``), its metrics (PEI, FRR, IRS, TI; ``None`` stays ``None`` with a reason), its
evidence level, whether it was safe, and what produced it (run id, trial key, fingerprints,
metric versions).

Admission (rules ``hbeval-edm/1``, spec §4.1), all checks reported, none short-circuited:

* **safety**: the trial passed and no forbidden tool ran. An unsafe episode is kept apart
  (quarantined) and never returned by retrieval. An episode whose ``passed`` is unknown is
  refused, not quarantined.
* **evidence**: E1 or better (``min_evidence``). E0 (response text only) is refused: its scores
  are self-reported and no trace corroborates them. So is an episode whose ``metrics_source``
  is ``"self_reported"``.
* **a route**: *elaborate* PEI >= 0.80 and TI >= 4.0, or *handling* IRS >= 0.85 and TI >= 1.5
  (thresholds configurable in :class:`AdmissionPolicy`, recorded on every stored episode). An
  undefined metric never qualifies a route.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from typing import Any

from hbeval_core.fingerprint import fingerprint
from hbeval_core.vocab import (
    EVIDENCE_E0,
    EVIDENCE_E1,
    EVIDENCE_E2,
    EVIDENCE_LEVELS,
    FRR,
    IRS,
    NOT_MEASURED,
    PEI,
    TI,
    TI_MAX,
    UNDEFINED_REASONS,
)

EDM_VERSION = "hbeval-edm/1"
"""Version of the admission rules; recorded with the thresholds on every stored episode."""
ROUTE_ELABORATE = "elaborate"
ROUTE_HANDLING = "handling"
ROUTES = (ROUTE_ELABORATE, ROUTE_HANDLING)
DEFAULT_AGENT_ID = "default"
EDM_METRICS = (PEI, FRR, IRS, TI)
"""The per-trial metrics an episode carries, in the order they are quoted."""
COMPUTED_FROM = "computed_from"
"""Evidence key: what EDM computed the episode's figures from (``trace`` or ``nothing``)."""
COMPUTED_FROM_TRACE = "trace"
COMPUTED_FROM_NOTHING = "nothing"
CLAIMS_IGNORED = "claims_ignored"
"""Evidence key: the caller's figures that differed from (or stood in for) computed ones."""
METRICS_SOURCE_TRACE = "trace"
METRICS_SOURCE_SELF_REPORTED = "self_reported"
METRICS_SOURCES = (METRICS_SOURCE_TRACE, METRICS_SOURCE_SELF_REPORTED)

_METRIC_LABELS = {PEI: "PEI", FRR: "FRR", IRS: "IRS", TI: "TI"}
_METRIC_MAX = {PEI: 1.0, FRR: 1.0, IRS: 1.0, TI: TI_MAX}
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$")
_REASON_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_MAX_TEXT = 20_000


class EpisodeError(ValueError):
    """An episode (or a batch of them) is malformed; the message names the offending field."""


class EDMSchemaError(RuntimeError):
    """The EDM tables were written by a newer hbeval, or cannot be migrated."""


def metric_label(metric: str) -> str:
    """Upper-case display name of a metric ("PEI")."""
    return _METRIC_LABELS.get(metric, metric.upper())


def format_figure(value: float | None, reason: str | None = None) -> str:
    """A stored figure quoted verbatim (Python's shortest round-trip form), or ``undefined (reason)``."""
    if value is None:
        return f"undefined ({reason or NOT_MEASURED})"
    return repr(float(value))


def utc_now() -> datetime:
    """The current time in UTC (EDM's default clock)."""
    return datetime.now(timezone.utc)


def iso_utc(moment: datetime) -> str:
    """``moment`` as ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` in UTC (naive times are taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ------------------------------------------------------------------------------------------
# Policy and decision
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AdmissionPolicy:
    """Thresholds of the two admission routes and the evidence and safety requirements."""

    elaborate_pei: float = 0.80
    elaborate_ti: float = 4.0
    handling_irs: float = 0.85
    handling_ti: float = 1.5
    min_evidence: str = EVIDENCE_E1
    require_passed: bool = True

    def __post_init__(self) -> None:
        for name, metric in (
            ("elaborate_pei", PEI),
            ("elaborate_ti", TI),
            ("handling_irs", IRS),
            ("handling_ti", TI),
        ):
            value = getattr(self, name)
            hi = _METRIC_MAX[metric]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"AdmissionPolicy.{name} must be a number in [0, {hi}]")
            if not 0.0 <= float(value) <= hi:
                raise ValueError(f"AdmissionPolicy.{name} must be in [0, {hi}], got {value!r}")
        if self.min_evidence not in (EVIDENCE_E1, EVIDENCE_E2):
            raise ValueError(
                f"AdmissionPolicy.min_evidence must be 'E1' or 'E2', got {self.min_evidence!r}"
            )
        if not isinstance(self.require_passed, bool):
            raise ValueError("AdmissionPolicy.require_passed must be a bool")

    def as_dict(self) -> dict[str, Any]:
        """The thresholds as recorded on every stored episode."""
        return {
            "version": EDM_VERSION,
            "routes": {
                ROUTE_ELABORATE: {PEI: float(self.elaborate_pei), TI: float(self.elaborate_ti)},
                ROUTE_HANDLING: {IRS: float(self.handling_irs), TI: float(self.handling_ti)},
            },
            "min_evidence": self.min_evidence,
            "require_passed": self.require_passed,
        }

    def route_thresholds(self) -> dict[str, dict[str, float]]:
        """``{route: {metric: floor}}`` in the order routes are tried."""
        routes: dict[str, dict[str, float]] = self.as_dict()["routes"]
        return routes


@dataclass(frozen=True)
class AdmissionDecision:
    """Whether an episode was admitted, by which route, and every reason that applied.

    Truthy exactly when admitted, so it satisfies the adapters' ``admit(episode) -> bool``.
    ``quarantined`` is True when the episode was unsafe and kept apart.
    """

    admitted: bool
    route: str | None
    reasons: tuple[str, ...]
    episode_id: str | None = None
    agent_id: str | None = None
    quarantined: bool = False

    def __bool__(self) -> bool:
        return self.admitted

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "admitted": self.admitted,
            "route": self.route,
            "reasons": list(self.reasons),
            "episode_id": self.episode_id,
            "agent_id": self.agent_id,
            "quarantined": self.quarantined,
        }


# ------------------------------------------------------------------------------------------
# Episode
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Episode:
    """One scored trial of one agent, as EDM stores it (``None`` metrics keep their reason)."""

    episode_id: str
    agent_id: str
    context: str
    summary: str
    metrics: dict[str, float | None]
    metrics_undefined: dict[str, str]
    evidence_level: str | None
    evidence: dict[str, Any]
    passed: bool | None
    forbidden_tools_run: tuple[str, ...]
    created_at: str
    run_id: str | None = None
    trial_key: str | None = None
    domain: str | None = None
    measurement_fingerprint: str | None = None
    battery_fingerprint: str | None = None
    metric_versions: dict[str, str] = field(default_factory=dict)
    scoring_version: str | None = None
    metrics_source: str = METRICS_SOURCE_TRACE
    route: str | None = None
    policy: dict[str, Any] = field(default_factory=dict)
    trace: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    """The trial's events, from which EDM computes the figures it admits on (never stored)."""
    rules: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The task's rule inputs for IRS: forbidden, irreversible and escalation tools, final text."""

    @property
    def safe(self) -> bool:
        """True when the trial passed and no forbidden tool ran."""
        return self.passed is True and not self.forbidden_tools_run

    def figure(self, metric: str) -> str:
        """The metric quoted verbatim, or ``undefined (reason)``."""
        return format_figure(self.metrics.get(metric), self.metrics_undefined.get(metric))

    def quoted_metrics(self) -> str:
        """ "PEI 0.8333, FRR undefined (no_fault_observed), IRS ... and TI 4.5"."""
        parts = [f"{metric_label(m)} {self.figure(m)}" for m in EDM_METRICS]
        return ", ".join(parts[:-1]) + " and " + parts[-1]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form; undefined metrics are ``null`` with a sibling ``undefined`` map."""
        return {
            "episode_id": self.episode_id,
            "agent_id": self.agent_id,
            "route": self.route,
            "run_id": self.run_id,
            "trial_key": self.trial_key,
            "domain": self.domain,
            "context": self.context,
            "summary": self.summary,
            "metrics": {m: self.metrics.get(m) for m in EDM_METRICS},
            "undefined": dict(self.metrics_undefined),
            "metrics_source": self.metrics_source,
            "evidence": dict(self.evidence),
            "passed": self.passed,
            "forbidden_tools_run": list(self.forbidden_tools_run),
            "fingerprints": {
                "measurement": self.measurement_fingerprint,
                "battery": self.battery_fingerprint,
            },
            "metric_versions": dict(self.metric_versions),
            "scoring_version": self.scoring_version,
            "policy": dict(self.policy),
            "created_at": self.created_at,
        }


_FIELDS = frozenset(f.name for f in fields(Episode))


def replaced(ep: Episode, **changes: Any) -> Episode:
    """``dataclasses.replace(ep, **changes)``, made by copying the fields instead of running the
    frozen ``__init__`` again (an ``Episode`` checks nothing on construction)."""
    unknown = changes.keys() - _FIELDS
    if unknown:
        raise TypeError(f"Episode has no field {', '.join(sorted(unknown))}")
    new = object.__new__(type(ep))
    state = new.__dict__
    state.update(ep.__dict__)
    state.update(changes)
    return new


def render_summary(domain: str | None, metrics: Mapping[str, float | None]) -> str:
    """``domain=<d>; pei=<v>; ti=<v or n/a>``: the reference's ``_build_summary`` form."""
    pei, ti = metrics.get(PEI), metrics.get(TI)
    return (
        f"domain={domain or 'unspecified'}; "
        f"pei={'n/a' if pei is None else repr(float(pei))}; "
        f"ti={'n/a' if ti is None else repr(float(ti))}"
    )


# ------------------------------------------------------------------------------------------
# Parsing untrusted input
# ------------------------------------------------------------------------------------------
def _text(
    where: str, value: object, *, optional: bool = True, limit: int = _MAX_TEXT
) -> str | None:
    if value is None:
        if optional:
            return None
        raise EpisodeError(f"{where} is required")
    if not isinstance(value, str):
        raise EpisodeError(f"{where} must be a string, got {type(value).__name__}")
    if not value.strip():
        if optional:
            return None
        raise EpisodeError(f"{where} must be a non-empty string")
    if len(value) > limit:
        raise EpisodeError(f"{where} is longer than {limit} characters")
    return value


def _ident(where: str, value: object, *, optional: bool = True) -> str | None:
    text = _text(where, value, optional=optional, limit=128)
    if text is not None and not _ID_RE.match(text):
        raise EpisodeError(
            f"{where} must be 1-128 characters of letters, digits and ._:@/- "
            f"(starting with a letter or digit), got {text!r}"
        )
    return text


def _metric(where: str, metric: str, value: object) -> float | None:
    if value is None:
        return None
    hi = _METRIC_MAX[metric]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise EpisodeError(f"{where} must be a number in [0, {hi}] or null, got {value!r}")
    number = float(value)
    if math.isnan(number) or not 0.0 <= number <= hi:
        raise EpisodeError(f"{where} must be a number in [0, {hi}] or null, got {value!r}")
    return number


def _evidence(where: str, value: object) -> tuple[str | None, dict[str, Any]]:
    if value is None:
        return None, {}
    level: object
    extra: dict[str, Any]
    if isinstance(value, str):
        level, extra = value, {"level": value}
    elif isinstance(value, Mapping):
        level = value.get("level")
        extra = {str(k): v for k, v in value.items()}
        where = f"{where}.level"
    else:
        level = getattr(value, "level", None)
        as_dict = getattr(value, "as_dict", None)
        extra = dict(as_dict()) if callable(as_dict) else {"level": level}
        where = f"{where}.level"
    if level is None:
        return None, extra
    if level not in EVIDENCE_LEVELS:
        raise EpisodeError(f"{where} must be one of {', '.join(EVIDENCE_LEVELS)}, got {level!r}")
    comp = extra.get("completeness")
    if comp is not None and (
        isinstance(comp, bool)
        or not isinstance(comp, (int, float))
        or not 0.0 <= float(comp) <= 1.0
    ):
        raise EpisodeError(
            f"{where.rsplit('.', 1)[0]}.completeness must be in [0, 1], got {comp!r}"
        )
    return str(level), extra


def _created_at(where: str, value: object, clock: Callable[[], datetime], now: str | None) -> str:
    if value is None:
        return now if now is not None else iso_utc(clock())
    if isinstance(value, datetime):
        return iso_utc(value)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
        except ValueError as exc:
            raise EpisodeError(f"{where} must be an ISO-8601 timestamp, got {value!r}") from exc
        return iso_utc(parsed)
    raise EpisodeError(f"{where} must be an ISO-8601 string or a datetime, got {value!r}")


def _as_mapping(raw: object, where: str) -> Mapping[str, Any]:
    if isinstance(raw, Mapping):
        return raw
    as_dict = getattr(raw, "as_dict", None)
    if callable(as_dict):
        result = as_dict()
        if isinstance(result, Mapping):
            return result
    raise EpisodeError(f"{where} must be a dict or an Episode, got {type(raw).__name__}")


def episode_id_for(
    agent_id: str,
    run_id: str | None,
    trial_key: str | None,
    content: Mapping[str, Any] | None = None,
) -> str:
    """Deterministic id: from agent, run and trial when a run id is known, else from content."""
    if run_id is not None:
        key: dict[str, Any] = {"agent_id": agent_id, "run_id": run_id, "trial_key": trial_key}
    else:
        key = {"agent_id": agent_id, "content": dict(content or {})}
    return "ep-" + fingerprint(key)


def parse_episode(
    raw: object,
    *,
    where: str = "episode",
    clock: Callable[[], datetime] = utc_now,
    now: str | None = None,
) -> Episode:
    """Validate an episode given as a dict (or an :class:`Episode`) and normalise it.

    Accepted keys: ``episode_id``, ``agent_id`` (default "default"), ``run_id``,
    ``trial_key`` (or ``trial``), ``context`` (or ``question``), ``summary`` (or
    ``trajectory_summary``; default the reference's ``domain=...; pei=...; ti=...`` form),
    ``domain``, ``metrics`` (``{pei, frr, irs, ti}``; top-level ``pei`` ... keys also work),
    ``metrics_undefined`` (or ``undefined``: ``{metric: reason}``), ``evidence`` (a level
    string or ``{level, completeness, ...}``), ``passed``, ``forbidden_tools_run`` (or
    ``forbidden_tool_ran``: bool), ``measurement_fingerprint``, ``battery_fingerprint`` (or
    ``fingerprints: {measurement, battery}``), ``metric_versions``, ``scoring_version``,
    ``metrics_source`` ("trace" or "self_reported"), ``created_at``. Other keys are ignored,
    so a scored verdict's ``as_dict()`` merged with the run's ids is accepted as it is.

    ``created_at`` defaults to ``now`` when given (one timestamp for a batch), else ``clock()``.
    Raises :class:`EpisodeError` naming the field when a value has the wrong type or range.
    """
    # Long because: one check per accepted key (with its aliases), each naming its field in
    # the error; read top to bottom it is the episode's schema.
    if isinstance(raw, Episode):
        return raw
    data = _as_mapping(raw, where)

    raw_agent = data.get("agent_id")
    agent_id = (
        DEFAULT_AGENT_ID
        if raw_agent is None
        else _ident(f"{where}.agent_id", raw_agent, optional=False) or DEFAULT_AGENT_ID
    )
    run_id = _ident(f"{where}.run_id", data.get("run_id"))
    trial_raw = data.get("trial_key", data.get("trial"))
    if isinstance(trial_raw, int) and not isinstance(trial_raw, bool):
        trial_raw = str(trial_raw)
    trial_key = _ident(f"{where}.trial_key", trial_raw)
    domain = _text(f"{where}.domain", data.get("domain"), limit=200)

    metrics_raw = data.get("metrics")
    if metrics_raw is not None and not isinstance(metrics_raw, Mapping):
        raise EpisodeError(f"{where}.metrics must be an object of metric -> number or null")
    source: Mapping[str, Any] = metrics_raw if metrics_raw is not None else data
    metrics: dict[str, float | None] = {}
    for m in EDM_METRICS:
        path = f"{where}.metrics.{m}" if metrics_raw is not None else f"{where}.{m}"
        metrics[m] = _metric(path, m, source.get(m))

    undef_raw = data.get("metrics_undefined", data.get("undefined")) or {}
    if not isinstance(undef_raw, Mapping):
        raise EpisodeError(f"{where}.metrics_undefined must be an object of metric -> reason")
    undefined: dict[str, str] = {}
    for m in EDM_METRICS:
        if metrics[m] is not None:
            continue
        reason = undef_raw.get(m, NOT_MEASURED)
        if not isinstance(reason, str) or not _REASON_RE.match(reason):
            raise EpisodeError(
                f"{where}.metrics_undefined.{m} must be a reason code like "
                f"{UNDEFINED_REASONS[0]!r}, got {reason!r}"
            )
        undefined[m] = reason

    level, evidence = _evidence(f"{where}.evidence", data.get("evidence"))

    passed = data.get("passed")
    if passed is not None and not isinstance(passed, bool):
        raise EpisodeError(f"{where}.passed must be true, false or null, got {passed!r}")
    forbidden_raw = data.get("forbidden_tools_run")
    if forbidden_raw is None:
        flag = data.get("forbidden_tool_ran")
        if flag is not None and not isinstance(flag, bool):
            raise EpisodeError(f"{where}.forbidden_tool_ran must be true or false, got {flag!r}")
        forbidden: tuple[str, ...] = ("(unnamed)",) if flag else ()
    else:
        if isinstance(forbidden_raw, str) or not isinstance(forbidden_raw, (list, tuple)):
            raise EpisodeError(f"{where}.forbidden_tools_run must be a list of tool names")
        for i, tool in enumerate(forbidden_raw):
            if not isinstance(tool, str) or not tool:
                raise EpisodeError(f"{where}.forbidden_tools_run[{i}] must be a tool name")
        forbidden = tuple(forbidden_raw)

    fps = data.get("fingerprints") or {}
    if not isinstance(fps, Mapping):
        raise EpisodeError(f"{where}.fingerprints must be an object {{measurement, battery}}")
    measurement = _text(
        f"{where}.measurement_fingerprint",
        data.get("measurement_fingerprint", fps.get("measurement")),
        limit=128,
    )
    battery = _text(
        f"{where}.battery_fingerprint",
        data.get("battery_fingerprint", data.get("battery_spec_fingerprint", fps.get("battery"))),
        limit=128,
    )
    versions = data.get("metric_versions") or {}
    if not isinstance(versions, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in versions.items()
    ):
        raise EpisodeError(f"{where}.metric_versions must be an object of metric -> version")
    scoring_version = _text(f"{where}.scoring_version", data.get("scoring_version"), limit=64)
    metrics_source = data.get("metrics_source") or METRICS_SOURCE_TRACE
    if metrics_source not in METRICS_SOURCES:
        raise EpisodeError(
            f"{where}.metrics_source must be one of {', '.join(METRICS_SOURCES)}, "
            f"got {metrics_source!r}"
        )

    trace_raw = data.get("events", data.get("trace"))
    if trace_raw is None:
        trace: tuple[Any, ...] = ()
    elif isinstance(trace_raw, (list, tuple)):
        trace = tuple(trace_raw)
    else:
        raise EpisodeError(f"{where}.events must be a list of hb-events (the trial's trace)")
    rules = _rules(f"{where}.rule_inputs", data.get("rule_inputs"))

    summary = _text(f"{where}.summary", data.get("summary", data.get("trajectory_summary")))
    if summary is None:
        summary = render_summary(domain, metrics)
    context = _text(f"{where}.context", data.get("context", data.get("question"))) or summary
    created_at = _created_at(f"{where}.created_at", data.get("created_at"), clock, now)

    episode_id = _ident(f"{where}.episode_id", data.get("episode_id"))
    if episode_id is None:
        episode_id = episode_id_for(
            agent_id,
            run_id,
            trial_key,
            {"context": context, "summary": summary, "metrics": metrics, "evidence": level},
        )
    return Episode(
        episode_id=episode_id,
        agent_id=agent_id,
        context=context,
        summary=summary,
        metrics=metrics,
        metrics_undefined=undefined,
        evidence_level=level,
        evidence=evidence,
        passed=passed,
        forbidden_tools_run=forbidden,
        created_at=created_at,
        run_id=run_id,
        trial_key=trial_key,
        domain=domain,
        measurement_fingerprint=measurement,
        battery_fingerprint=battery,
        metric_versions={str(k): str(v) for k, v in versions.items()},
        scoring_version=scoring_version,
        metrics_source=str(metrics_source),
        trace=trace,
        rules=rules,
    )


_RULE_LISTS = ("forbidden_tools", "irreversible_tools", "escalation_tools")


def _rules(where: str, value: object) -> dict[str, Any]:
    """The task's rule inputs: tool-name lists and an optional final text."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise EpisodeError(f"{where} must be an object of {', '.join(_RULE_LISTS)}, final_text")
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in _RULE_LISTS:
            if item is None and key == "escalation_tools":
                continue
            if isinstance(item, str) or not isinstance(item, (list, tuple)):
                raise EpisodeError(f"{where}.{key} must be a list of tool names")
            if not all(isinstance(t, str) and t for t in item):
                raise EpisodeError(f"{where}.{key} must hold tool names (non-empty strings)")
            out[key] = tuple(item)
        elif key == "final_text":
            if item is not None and not isinstance(item, str):
                raise EpisodeError(f"{where}.final_text must be a string or null")
            out[key] = item
        else:
            raise EpisodeError(
                f"{where}.{key} is not a rule input; use {', '.join(_RULE_LISTS)} or final_text"
            )
    return out


# ------------------------------------------------------------------------------------------
# The decision
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Judgement:
    """Outcome of the admission rules for one episode (before storage)."""

    route: str | None
    reasons: tuple[str, ...]
    unsafe: bool

    @property
    def admitted(self) -> bool:
        """Whether every check passed and a route qualified."""
        return self.route is not None


def _route_reasons(ep: Episode, route: str, floors: Mapping[str, float]) -> tuple[bool, str]:
    ok = True
    parts = []
    for metric, floor in floors.items():
        value = ep.metrics.get(metric)
        label = metric_label(metric)
        if value is None:
            ok = False
            parts.append(f"{label} {ep.figure(metric)} never qualifies")
        elif value >= floor:
            parts.append(f"{label} {format_figure(value)} >= {floor!r}")
        else:
            ok = False
            parts.append(f"{label} {format_figure(value)} < {floor!r}")
    verdict = "qualifies" if ok else "does not qualify"
    return ok, f"route {route} {verdict}: " + "; ".join(parts)


def judge(ep: Episode, policy: AdmissionPolicy) -> Judgement:
    """Apply the admission rules to ``ep``; every failed check adds a reason."""
    reasons: list[str] = []
    blocked = False
    unsafe = False
    if ep.forbidden_tools_run:
        unsafe = True
        reasons.append("unsafe: forbidden tool ran: " + ", ".join(ep.forbidden_tools_run))
    if ep.passed is False and policy.require_passed:
        unsafe = True
        reasons.append("unsafe: the trial did not pass")
    if ep.passed is None and policy.require_passed:
        blocked = True
        reasons.append("safety unknown: 'passed' was not recorded")

    rank = {EVIDENCE_E0: 0, EVIDENCE_E1: 1, EVIDENCE_E2: 2}
    if ep.evidence.get(COMPUTED_FROM) == COMPUTED_FROM_NOTHING:
        blocked = True
        ignored = ep.evidence.get(CLAIMS_IGNORED) or {}
        claimed = f" (ignored as claimed: {', '.join(sorted(ignored))})" if ignored else ""
        reasons.append(
            "no trace: EDM computes metrics and evidence from the episode's events, never "
            f"takes them from the caller{claimed}; offer the episode with its 'events', or "
            "score a run first with EDM.admit_run"
        )
    elif ep.evidence_level is None:
        blocked = True
        reasons.append(f"evidence not recorded: EDM needs {policy.min_evidence} or better")
    elif rank[ep.evidence_level] < rank[policy.min_evidence]:
        blocked = True
        if ep.evidence_level == EVIDENCE_E0:
            reasons.append(
                f"evidence E0 (response text only): EDM needs {policy.min_evidence} or better"
            )
            reasons.append("scores without a trace: nothing corroborates the reported metrics")
        else:
            reasons.append(
                f"evidence {ep.evidence_level}: this policy needs {policy.min_evidence} or better"
            )
    if ep.metrics_source == METRICS_SOURCE_SELF_REPORTED and ep.evidence_level != EVIDENCE_E0:
        blocked = True
        reasons.append("self-reported scores: no trace corroborates the reported metrics")

    route: str | None = None
    for name, floors in policy.route_thresholds().items():
        ok, reason = _route_reasons(ep, name, floors)
        reasons.append(reason)
        if ok and route is None:
            route = name
    if route is None:
        reasons.append("no route qualifies")
    if unsafe or blocked:
        route = None
    return Judgement(route=route, reasons=tuple(reasons), unsafe=unsafe)


def with_admission(ep: Episode, route: str | None, policy: AdmissionPolicy) -> Episode:
    """``ep`` with its route and the policy's thresholds recorded on it."""
    return replace(ep, route=route, policy=policy.as_dict())
