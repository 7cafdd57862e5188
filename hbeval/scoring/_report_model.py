"""The ``hbeval-report/1`` model: a battery report as pydantic models, one type end to end.

``build_report`` returns a :class:`Report`; ``Report.to_dict()`` is the JSON written to disk.
``report_json_schema()`` is what ``hbeval schema report`` prints; ``validate_report`` checks a
dict and ``read_report`` reads one from a file, a JSON string or a dict, refusing a report
written by a newer hbeval with a message that says so.

Conventions every block follows: a number that could not be computed is ``null`` and the
block's ``undefined`` map names it with a vocab reason code; intervals are ``[low, high]``; the
only time-dependent fields are ``started_at``, ``ended_at`` and keys starting with ``latency_``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from hbeval_core.vocab import REPORT_FORMAT

from ._consistency import ConsistencyBlock
from ._csi_runs import CsiRuns
from ._ledger_model import (
    RunModelFaults,
    RunSideEffects,
    SequentialInfo,
)
from ._perturbation_model import Perturbations
from ._recorded_model import RecordedErrors
from ._trial_model import (
    Change,
    EvidenceLevel,
    Interval,
    Outcome,
    Severity,
    TiScale,
    TrialEntry,
    Undefined,
    Unit,
    _Block,
)

__all__ = [
    "REPORT_FORMAT",
    "CapabilityBlock",
    "EfficiencyScores",
    "Report",
    "ReportFormatError",
    "Scores",
    "SecurityGateBlock",
    "read_report",
    "report_json_schema",
    "validate_report",
]

_FORMAT_RE = re.compile(r"^hbeval-report/(\d+)$")
_CURRENT_MAJOR = int(REPORT_FORMAT.rsplit("/", 1)[1])


class ReportFormatError(ValueError):
    """A report could not be read: wrong or newer format, or a field that does not fit."""


# --------------------------------------------------------------------------- battery
class RateLimitInfo(_Block):
    """The run's shared rate limit: present only when an rpm was set or a 429 was seen."""

    rpm: float | None = Field(
        gt=0, description="Model calls per minute the run was limited to; null: no limit set."
    )
    hits: int = Field(ge=0, description="HTTP 429 responses the trials' model calls received.")
    paused_seconds: float = Field(
        ge=0,
        description="Seconds the whole run paused for 429s (overlapping pauses counted once); "
        "time-dependent, like latency.",
    )


class BudgetInfo(_Block):
    """The run's cost budget (``--max-cost``): present only when one was given."""

    max_cost: float = Field(gt=0, description="USD the run may spend.")
    spent: float = Field(
        ge=0, description="USD the run's recorded trials cost at the manifest's prices."
    )
    stopped: Literal["budget_exhausted", "cost_unmeasured"] | None = Field(
        description="Why trials were left unstarted (the run is then interrupted; resume it "
        "with a larger budget); null: every trial ran."
    )


class RunInfo(_Block):
    """Which run this is."""

    run_id: str | None
    agent_id: str | None
    battery: str | None
    seed: int | None
    trials: int | None
    methodology: Literal["A", "B", "C"] | None
    judge: str | dict[str, Any] | None
    scenario_count: int = Field(ge=0)
    trial_count: int = Field(ge=0)
    scored_trial_count: int = Field(ge=0)
    started_at: str | float | None
    ended_at: str | float | None
    executor: Literal["local", "async", "ray"] | None = Field(
        default=None,
        description="What ran the trials; absent for the local executor (this process).",
    )
    nodes: list[str] | None = Field(
        default=None,
        description="The cluster nodes that ran trials (host/node id); absent when local.",
    )
    rate_limit: RateLimitInfo | None = Field(
        default=None,
        description="The shared rate limit; absent when no rpm was set and no 429 was seen.",
    )
    budget: BudgetInfo | None = Field(
        default=None, description="The cost budget; absent when the run had none."
    )
    until_decided: SequentialInfo | None = Field(
        default=None,
        description="Present when the run ran in waves until its verdict was decided.",
    )


class Metrics(_Block):
    """Battery PEI, FRR, IRS, TI (0–5) and CSI; null where undefined."""

    pei: Unit | None
    frr: Unit | None
    irs: Unit | None
    ti: TiScale | None
    csi: Unit | None


class CsiInfo(_Block):
    """CSI across stored runs of the same agent id and measurement fingerprint."""

    value: Unit | None
    status: Literal["provisional", "final"] = Field(
        description="provisional until 100 runs (the reference's csi_info.status)."
    )
    band: Literal["STABLE", "ACCEPTABLE", "MARGINAL", "UNSTABLE"] | None
    provisional: bool
    runs_used: int
    runs_total: int
    runs_skipped_other_fingerprint: int
    runs_required_for_final: int
    sigma_pei: float | None
    sigma_irs: float | None
    rho: float | None
    slope: str
    note: str
    undefined: Undefined


class Rate(_Block):
    """A pass rate with its interval clustered by scenario (and Wilson's over trials beside it)."""

    n: int = Field(ge=0)
    passed: int = Field(ge=0)
    rate: Unit | None
    interval: Interval | None = Field(
        description="The interval to read: cluster-robust Wilson, clustered by scenario (by "
        "task for recordings); never narrower than Wilson with n = the number of clusters."
    )
    undefined: Undefined
    interval_independent: Interval | None = Field(
        default=None,
        description="Secondary: Wilson over the trials as if they were independent.",
    )
    clusters: int | None = Field(default=None, description="Scenarios (tasks) behind the rate.")
    design_effect: float | None = Field(
        default=None, description="Trials / effective n: how much clustering widens the interval."
    )
    effective_n: float | None = Field(
        default=None, description="Independent observations the clustered trials are worth."
    )


class RateUncertainty(_Block):
    """One rate's clustered interval, its independent-trials interval and what it rests on."""

    value: float | None
    interval: Interval | None = Field(description="Clustered (the one every surface uses).")
    interval_independent: Interval | None = Field(
        description="Secondary: Wilson as if every trial were independent."
    )
    n: int = Field(ge=0, description="Trials (judged trials for IRS).")
    clusters: int = Field(ge=0)
    design_effect: float | None
    effective_n: float | None
    undefined: Undefined = Field(default_factory=dict)


class Uncertainty(_Block):
    """Intervals for every trial-level rate, clustered by scenario (by task for recordings)."""

    method: str = Field(description="cluster_wilson: cluster-robust (Korn-Graubard) Wilson.")
    cluster_by: Literal["scenario"] = "scenario"
    confidence: float
    rates: dict[str, RateUncertainty] = Field(
        description="pass_rate, frr, irs, c_nom, r_op, attack_success, utility_under_attack."
    )
    note: str


class KValue(_Block):
    """pass@k or pass^k at one k (per task, averaged over tasks with at least k trials)."""

    k: int = Field(ge=1)
    value: Unit | None
    defined: int = Field(ge=0)
    total: int = Field(ge=0)
    undefined: Undefined


class Breakdown(Rate):
    """A pass rate for one fault type or domain, with pass^k at the run's trial count."""

    pass_hat_k: KValue
    measured: bool | None = Field(
        default=None,
        description="Fault types only: false when no fault of this type reached the agent "
        "(rate and pass^k are then null with no_fault_delivered).",
    )


class Breakdowns(_Block):
    """Pass rates per fault type and per domain."""

    fault_type: dict[str, Breakdown]
    domain: dict[str, Breakdown]


class ReliabilityGap(_Block):
    """C_nom (nominal pass rate) vs R_op (faulted pass rate), their gap and its significance."""

    c_nom: Unit | None
    r_op: Unit | None
    gap: Change | None
    interval: Interval | None
    z: float | None
    p: Unit | None
    significant: bool | None
    confidence: float
    nominal_n: int
    faulted_n: int
    c_nom_interval: Interval | None
    r_op_interval: Interval | None
    undefined: Undefined
    interval_independent: Interval | None = Field(
        default=None,
        description="Secondary: gap ± z·se as if every trial were independent.",
    )
    interval_method: str | None = Field(
        default=None,
        description="newcombe_cluster_wilson: Newcombe's interval over the clustered intervals.",
    )


class SeverityBlock(_Block):
    """Failed trials by severity class and the severity-weighted failure rate."""

    histogram: dict[str, int]
    weighted_failure_rate: float | None
    undefined: Undefined


class AgentDojo(_Block):
    """AgentDojo's figures from prompt-injection trials, by deterministic checks only."""

    utility: Unit | None
    utility_under_attack: Unit | None
    targeted_attack_success_rate: Unit | None
    clean_n: int
    injection_n: int
    undefined: Undefined


class Efficiency(_Block):
    """What one success costs, and how long trials took."""

    successes: int
    tokens_per_success: float | None
    tool_calls_per_success: float | None
    interventions_per_success: float | None
    cost_per_success_usd: float | None
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    notes: list[str]
    undefined: Undefined


class Traceability(_Block):
    """Why TI is what it is: how tool calls link to the replies that issued them (hb-derive/2)."""

    calls: int = Field(description="Tool calls that ran in scored trials.")
    linked_by_id: int = Field(description="Linked by the model's own tool-call id.")
    linked_by_match: int = Field(
        description="Linked by name and arguments: the framework dropped the model's id."
    )
    unlinked: int = Field(description="No recorded model reply issued them: not traceable.")
    explained: int = Field(description="Their issuing reply stated a reason (text, reasoning).")
    explained_share: float | None = Field(description="explained / calls.")
    note: str | None = Field(description="In words, why TI or the explained share is low.")
    undefined: Undefined


class FaultTypeDelivery(_Block):
    """Faults planned, injected and delivered for one fault type, and whether it measured."""

    scenarios: int
    trials: int = Field(description="Scored trials of this fault type.")
    planned: int | None = Field(description="Faults the plans held (null: not recorded).")
    injected: int
    delivered: int
    planned_delivered: int | None = Field(
        description="Planned faults that reached the agent (a spec firing twice counts once)."
    )
    faulted_trials: int
    measured: bool = Field(description="False: no fault reached the agent; figures undefined.")
    reason: str | None = Field(description="Why it was not measured (no_fault_delivered, ...).")


class FaultDelivery(_Block):
    """How many injected faults were proven to reach the agent, overall and per fault type."""

    injected: int
    delivered: int
    not_delivered: int
    unknown: int
    faulted_trials: int
    judged_trials: int
    planned: int | None = Field(
        default=None, description="Faults the trials' plans held (null: not recorded)."
    )
    planned_delivered: int | None = Field(
        default=None, description="Planned faults that reached the agent."
    )
    by_fault_type: dict[str, FaultTypeDelivery] = Field(default_factory=dict)
    unmeasured_fault_types: list[str] = Field(
        default_factory=list, description="Fault types no fault of which reached the agent."
    )
    not_judged: dict[str, int] = Field(
        default_factory=dict,
        description="Faulted trials not judged for IRS, by reason (reply_text_unobserved: the "
        "verdict would rest on reply text the provider discarded unseen).",
    )
    unreceipted_trials: int = Field(
        default=0,
        ge=0,
        description="Trials under latency or crash faults only, none receipted: left out of "
        "every figure (delivery_unreceipted).",
    )


class Methodology(_Block):
    """The scoring path and its composite figures."""

    name: Literal["A", "B", "C"] | None
    judge: str | dict[str, Any] | None
    composite_mean: float | None
    composite_defined: int
    success_rate: float | None
    success_defined: int
    text_heuristics_mean: dict[str, float | None] = Field(
        description="Means of methodology A's text figures over scored trials (TI on 0–1)."
    )
    undefined: Undefined


class ProxyOnlyEvidence(_Block):
    """Trials whose trace was seen only through a proxy, and what their figures rest on."""

    level: Literal["proxy-only"]
    trials: int = Field(ge=0, description="Scored trials seen only through a proxy.")
    scored_trials: int = Field(ge=0, description="All scored trials.")
    proxies: list[str] = Field(description="The proxies' notes.")
    seen: list[str] = Field(description="What those traces hold.")
    cannot_support: list[str] = Field(description="What they cannot show.")
    figures: dict[str, str] = Field(description="Which figures rest on them, and on what.")


class Evidence(_Block):
    """The battery's evidence: weakest level, minimum completeness, claims."""

    level: EvidenceLevel | None
    completeness: Unit | None
    completeness_rule: Literal["min"]
    completeness_mean: Unit | None
    levels: dict[str, int]
    claims_reconciled: int
    claims_unsupported: list[str]
    undefined: Undefined
    proxy_only: ProxyOnlyEvidence | None = Field(
        default=None,
        description="Trials whose trace was seen only through a proxy (absent when none was).",
    )


class ScenarioMetrics(_Block):
    """Per-scenario FRR, PEI, IRS, TI (IRS null on nominal scenarios)."""

    frr: Unit | None
    pei: Unit | None
    irs: Unit | None
    ti: TiScale | None


class ScenarioEntry(_Block):
    """One scenario in the reference's ``scenarios[]`` shape, with its trial counts."""

    scenario_index: int | None
    domain: str | None
    fault_type: str | None
    is_nominal: bool | None
    trials: int
    scored: int
    passed: int
    metrics: ScenarioMetrics
    undefined: Undefined
    measured: bool = Field(
        default=True,
        description="False: the scenario planned faults and none reached the agent "
        "(shown as 'not measured'; FRR and IRS are null with no_fault_delivered).",
    )
    delivery: dict[str, int | None] | None = Field(
        default=None, description="planned, injected, delivered faults and faulted_trials."
    )


class TailTrial(_Block):
    """One of the worst trials (by severity, then outcome)."""

    trial_key: str | None
    task_id: str | None
    scenario_index: int | None
    trial_index: int | None
    domain: str | None
    fault_type: str | None
    outcome: Outcome | None
    severity: Severity
    severity_reasons: list[str]


class TextSignalsBlock(_Block):
    """Which text signals answered "does this output acknowledge the failure / refuse"."""

    decided_by: list[str] = Field(
        description="Identities over the scored trials: hbeval-text/1 (the default patterns) "
        "or judge:<identity>."
    )
    default_version: str = Field(description="Version of the default text-signal set.")
    judge_asked: int = Field(ge=0, description="Questions put to a judge.")
    judge_fell_back: int = Field(
        ge=0, description="Of those, decided by the default set: the answer was unreadable."
    )


class SilentCorruption(_Block):
    """Faulted trials whose answer repeats what a fault planted, unflagged (hbeval-scoring/3).

    "Planted" is a marker or altered value absent from the true result; "flagged" means the
    agent's reasoning named the fault. Such a trial is never a recovery (FRR, IRS), whatever a
    text verifier said.
    """

    count: int = Field(ge=0, description="Scored faulted trials that silently carried a fault.")
    faulted: int = Field(ge=0, description="Scored faulted trials.")
    passed_verifier: int = Field(
        ge=0, description="Of those counted, how many the verifier still passed."
    )
    trials: list[str] = Field(description="Their trial keys (task/scenario/trial).")


class Fingerprints(_Block):
    """The fingerprints that make two reports comparable."""

    battery_spec: str | None
    plan: str | None
    measurement: str | None


class Versions(_Block):
    """Which algorithms produced this report."""

    report: str
    scoring: str
    derive: str
    metric_versions: dict[str, str]
    statistics: dict[str, str]


class Isolation(_Block):
    """Whether every trial ran on a fresh agent."""

    isolated: bool
    trials_not_isolated: int
    note: str


# --------------------------------------------------------------------------- scores
class CapabilityBlock(_Block):
    """The capability score (hbeval-capability/1): 0–100, its components (0–1) and weights."""

    value: float | None = Field(ge=0.0, le=100.0, description="null: a component is undefined.")
    scale: Literal["0-100"]
    components: dict[str, Unit | None]
    weights: dict[str, float]
    weights_source: Literal["default", "given"]
    renormalised: bool
    dropped: list[str]
    undefined: Undefined
    version: str


class SecurityGateBlock(_Block):
    """Whether forbidden tools (and secrets) stayed in under attack: never averaged in."""

    status: Literal["passed", "failed", "not_measured"]
    injection_trials: int = Field(ge=0)
    required_injection_trials: int = Field(ge=1)
    breach_trials: int = Field(ge=0)
    forbidden_tools_run: list[str]
    secrets_leaked: int = Field(ge=0)
    reason: str


class EfficiencyScores(_Block):
    """The per-success efficiency figures in display order, each with its undefined reason."""

    successes: int | None
    figures: dict[str, float | None]
    undefined: Undefined
    notes: list[str]


class Scores(_Block):
    """Capability score, security gate and efficiency, computed once by scoring."""

    headline: str = Field(description="One line, e.g. 'capability 98, security gate passed'.")
    capability: CapabilityBlock
    security_gate: SecurityGateBlock
    efficiency: EfficiencyScores


class ReportBinding(_Block):
    """What ties a report to its run: a digest over its identity and trials (``_binding``)."""

    algorithm: str = Field(description="How the digest is computed (sha256/hbeval-binding-1).")
    digest: str = Field(
        pattern=r"^[0-9a-f]{64}$",
        description="SHA-256 over run id, agent id, manifest hash, measurement fingerprint "
        "and the trial entries.",
    )


class Report(_Block):
    """An hbeval battery report (hbeval-report/1), a superset of HB-Eval's battery output."""

    format: Literal["hbeval-report/1"] = Field(description="Format version; always first.")
    run: RunInfo
    run_id: str | None
    verdict: Literal["SAFE", "UNSAFE", "INSUFFICIENT_DATA"] = Field(
        description="scoring.decide_verdict (hbeval-verdict/1), weakest link: UNSAFE on a "
        "breach or a metric below its floor; else INSUFFICIENT_DATA when a required metric is "
        "undefined, the security gate is not measured or a fault type delivered no fault; "
        "else SAFE."
    )
    verdict_reasons: list[str]
    unmeasured_metrics: list[str]
    summary: str
    verdict_fix: str | None = Field(
        default=None, description="How to measure what was not measured (INSUFFICIENT_DATA)."
    )
    warnings: list[str] | None = Field(
        default=None,
        description="Results that point at the measurement rather than the agent (no nominal "
        "trial passed: check the verifier or the task); absent when there is none. They "
        "change no figure and not the verdict.",
    )
    tier: int | None = Field(description="Certification tier: not computed by hbeval (null).")
    verification: Literal["verified", "unverified"] = Field(
        description="unverified: the run was executed and reported locally (reference path B)."
    )
    thresholds: dict[str, float]
    scores: Scores | None = Field(
        default=None,
        description="Capability score, security gate and efficiency as scoring computed them "
        "(absent in reports written before they were stored: readers compute them).",
    )
    metrics: Metrics
    aggregate_metrics: Metrics = Field(description="Same as metrics (the reference's name).")
    undefined: Undefined = Field(description="Reason code of every null metric.")
    defined_counts: dict[str, int]
    csi_info: CsiInfo
    csi_runs: CsiRuns | None = Field(
        default=None,
        description="Which stored runs CSI combined with this one and why others were left "
        "out (absent in reports written before it was recorded).",
    )
    pass_rate: Rate
    outcomes: dict[str, int]
    reliability_gap: ReliabilityGap
    pass_at_k: list[KValue]
    pass_hat_k: list[KValue]
    consistency: ConsistencyBlock | None = Field(
        default=None,
        description="C_out, flip rate, C_traj_d and C_traj_s over each scenario's repeated "
        "trials (absent in reports written before they were computed).",
    )
    recorded_errors: RecordedErrors | None = Field(
        default=None,
        description="Imported runs without an injected fault: recovery from the recording's "
        "own tool errors, apart from FRR/IRS (absent otherwise).",
    )
    breakdowns: Breakdowns
    severity: SeverityBlock
    agentdojo: AgentDojo
    efficiency: Efficiency
    fault_delivery: FaultDelivery
    silent_corruption: SilentCorruption | None = Field(
        default=None,
        description="Answers that repeat a planted value without flagging it (absent before "
        "hbeval-scoring/3).",
    )
    text_signals: TextSignalsBlock | None = Field(
        default=None,
        description="Which text signals decided the text questions (absent in reports "
        "written before it was recorded).",
    )
    traceability: Traceability | None = Field(
        default=None,
        description="How tool calls link to model replies (absent before hb-derive/2).",
    )
    methodology: Methodology
    evidence: Evidence
    tail: list[TailTrial]
    scenario_count: int
    scenarios: list[ScenarioEntry]
    fingerprints: Fingerprints
    manifest_hash: str | None
    metric_versions: dict[str, str]
    versions: Versions
    isolation: Isolation
    side_effects: RunSideEffects | None = Field(
        default=None,
        description="Duplicate side effects of irreversible tools (absent when no trial had "
        "one declared).",
    )
    model_faults: RunModelFaults | None = Field(
        default=None,
        description="Model faults (the model API failed) by mode, with how the agent's "
        "client handled each; absent when no trial received one.",
    )
    trials: list[TrialEntry]
    perturbations: Perturbations | None = Field(
        default=None,
        description="Prompt perturbations (the question changed, no fault injected), apart "
        "from fault handling; absent unless the battery asked for a perturbation family.",
    )
    uncertainty: Uncertainty | None = Field(
        default=None,
        description="Clustered intervals of every trial-level rate, with design effect and "
        "effective n (absent in reports written before they were computed).",
    )
    source: dict[str, Any] | None = Field(
        default=None,
        description="Imported runs only: the recording's format, importer version, files with "
        "their sha256, whether success was labelled, and what the import skipped.",
    )
    loaded_sources: dict[str, str] | None = Field(
        default=None,
        description="The user source files loaded when the trials ended, with their sha256 "
        "(first 16 hex): a stored run is reused only while each is unchanged.",
    )
    binding: ReportBinding | None = Field(
        default=None,
        description="The digest binding the report's identity to its trials (absent in "
        "reports written before it, or built by hand).",
    )

    def to_dict(self) -> dict[str, Any]:
        """The report as the JSON-ready dict written to disk: exactly the fields it holds."""
        return self.model_dump(mode="json", exclude_unset=True)


def report_json_schema() -> dict[str, Any]:
    """JSON Schema of an hbeval-report/1 report (``$id`` "hbeval-report/1")."""
    schema = Report.model_json_schema()
    schema["$id"] = REPORT_FORMAT
    schema["title"] = f"hbeval battery report ({REPORT_FORMAT})"
    return schema


def _check_format(data: Mapping[str, Any]) -> None:
    fmt = data.get("format")
    if fmt is None:
        raise ReportFormatError(
            f"not an hbeval report: no 'format' field (expected {REPORT_FORMAT!r})"
        )
    match = _FORMAT_RE.match(fmt) if isinstance(fmt, str) else None
    if match is None:
        raise ReportFormatError(f"report has format {fmt!r}; expected {REPORT_FORMAT!r}")
    if int(match.group(1)) > _CURRENT_MAJOR:
        raise ReportFormatError(
            f"report is {fmt}, written by a newer hbeval; this hbeval reads {REPORT_FORMAT}. "
            "Upgrade hbeval to read it."
        )


def validate_report(data: Mapping[str, Any]) -> Report:
    """Check a report dict against hbeval-report/1; ReportFormatError names the first bad field."""
    if not isinstance(data, Mapping):
        raise ReportFormatError(f"a report is a JSON object, got {type(data).__name__}")
    _check_format(data)
    try:
        return Report.model_validate(dict(data))
    except ValidationError as exc:
        raise format_error(exc) from None


def format_error(exc: ValidationError, *, under: str | None = None) -> ReportFormatError:
    """A validation error as one ReportFormatError naming the first bad field (``a.b.c``)."""
    first = exc.errors()[0]
    loc = ((under,) if under else ()) + tuple(first.get("loc", ()))
    where = ".".join(str(p) for p in loc) or "(report)"
    return ReportFormatError(
        f"report field {where!r}: {first.get('msg', 'invalid')} "
        f"({exc.error_count()} problem(s) in all)"
    )


def read_report(source: str | Path | Mapping[str, Any]) -> Report:
    """Read a report from a path, a JSON string or a dict, refusing newer format versions."""
    if isinstance(source, Mapping):
        return validate_report(source)
    text: str
    if isinstance(source, Path) or (
        isinstance(source, str) and not source.lstrip().startswith("{")
    ):
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise ReportFormatError(f"cannot read report {str(source)!r}: {exc}") from None
    else:
        text = source
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ReportFormatError(f"report is not valid JSON: {exc}") from None
    return validate_report(data)
