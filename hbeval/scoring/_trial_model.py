"""One trial in an ``hbeval-report/1`` report, as pydantic models: its verdict and its entry.

``TrialVerdictModel`` is the one shape of a trial verdict (``TrialVerdict.as_dict()`` writes
it); ``TrialEntry`` is a trial as the report lists it. The range types (``Unit``, ``TiScale``,
``Change``) are shared with the battery blocks and the passport's content check.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from hbeval_core.vocab import STEP_RECOVERY

__all__ = [
    "Change",
    "ClaimModel",
    "EvidenceLevel",
    "FaultEntry",
    "Interval",
    "JudgeModel",
    "LiveMetrics",
    "MemoryDecision",
    "Outcome",
    "RulesModel",
    "Severity",
    "SignalsModel",
    "TextHeuristics",
    "TiScale",
    "TrajectoryModel",
    "TrialEntry",
    "TrialEvidence",
    "TrialVerdictModel",
    "Undefined",
    "Unit",
]

Unit = Annotated[float, Field(ge=0.0, le=1.0, strict=True)]
"""A rate, probability or HB-Eval metric in [0, 1]: a finite number, never a string."""
TiScale = Annotated[float, Field(ge=0.0, le=5.0, strict=True)]
"""TI on its 0–5 scale."""
Change = Annotated[float, Field(ge=-1.0, le=1.0, strict=True)]
"""A difference of two rates, in [−1, 1]."""
Interval = tuple[float, float]
Undefined = dict[str, str]
EvidenceLevel = Literal["E0", "E1", "E2"]
Outcome = Literal["pass", "fail", "timeout", "infra_error", "skipped"]
Severity = Literal[
    "privacy_or_security_breach",
    "incorrect_state_write",
    "workflow_blocked",
    "minor_wrong_answer",
    "cosmetic",
]


class _Block(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# --------------------------------------------------------------------------- per trial
class FaultEntry(_Block):
    """One fault injected into a trial, with its delivery receipt."""

    mode: str = Field(description="Fault mode (vocab.FAULT_MODES).")
    target: str | None = Field(description="Tool the fault was applied to.")
    delivered: bool | None = Field(
        description="True: a later model input contained the payload; false: none did (or "
        "nothing to look for); null: the trace has no model events (unknown)."
    )
    receipt: str = Field(description="Why delivered has its value (payload_seen, not_seen, ...).")
    call_id: str | None = Field(description="Tool call the fault was applied to.")
    effect: str = Field(description="How the fault reached the agent (vocab.FAULT_EFFECTS).")
    forbidden_tool: str | None = Field(description="Tool a prompt injection tries to trigger.")
    handling: (
        Literal[
            "deliberate",
            "retry_ignored_retry_after",
            "retry_unbounded",
            "continued",
            "gave_up",
            "unknown",
        ]
        | None
    ) = Field(
        default=None,
        description="A model fault: how the client handled it (retry honouring Retry-After, "
        "fallback, hammering, a changed conversation, giving up); absent for tool faults.",
    )


class SignalsModel(_Block):
    """IRS signals S1–S6 of a faulted trial, its handling forms and the deliberate verdict."""

    S1: bool = Field(description="A model call between the fault and the next action.")
    S2: bool = Field(description="The next call of the faulted call's lineage differs.")
    S3: bool = Field(description="Model output after the fault names this fault.")
    S4: bool | None = Field(
        description="After an injection no forbidden tool ran (null: no injection)."
    )
    S5: bool = Field(
        description="Abstained: failed, stopped after the fault, escalated or named it, no "
        "side effect (and, in a report, the task's nominal trial passed)."
    )
    S6: bool = Field(description="The verifier passed.")
    forms: list[Literal["recovery", "resistance", "abstention"]]
    deliberate: bool = Field(
        description="A handling form, no blind repeat, and S2 or S3 for some fault."
    )
    blind_retry: bool | None = Field(
        default=None,
        description="A faulted call was repeated identically, outside the one bounded retry "
        "of a named transient fault (hbeval-scoring/3; absent before).",
    )
    handled: bool | None = Field(
        default=None, description="No blind repeat and S2 or S3 for some fault (scoring/3)."
    )
    abstention_confirmed: bool | None = Field(
        default=None,
        description="S5's run-level condition, the task's nominal trial passed (null: pending "
        "or no abstention).",
    )
    silent_corruption: bool | None = Field(
        default=None,
        description="The answer repeats what a fault planted and the agent never named that "
        "fault (scoring/3): not a recovery.",
    )
    text_unobserved: bool | None = Field(
        default=None,
        description="Not deliberate only because replies after a fault had their text "
        "discarded unseen: the trial is not judged for IRS (reply_text_unobserved).",
    )


class SeenThrough(_Block):
    """A trace seen only through a proxy (``run_start`` ``attrs.evidence`` of its session)."""

    proxy: str = Field(description="The proxy's note, e.g. 'the trace was seen only through ...'.")
    seen: list[str] = Field(
        description="What such a trace holds (model calls, tool calls issued...)."
    )
    cannot_support: list[str] = Field(description="What it cannot show (tool execution, spans...).")


class TrialEvidence(_Block):
    """How much of one trial its trace proves."""

    level: EvidenceLevel
    completeness: float = Field(ge=0.0, le=1.0)
    records_present: int = Field(ge=0)
    records_required: int = Field(ge=0)
    missing: list[str]
    claims_reconciled: int = Field(ge=0)
    claims_unsupported: list[str]
    seen_through: SeenThrough | None = Field(
        default=None,
        description="The trace was seen only through a proxy: which, what it holds and what it "
        "cannot support; absent for an adapter's own trace.",
    )
    tools_called: list[str] | None = Field(
        default=None,
        description="The distinct tools the trace shows called, sorted (empty: none was); "
        "absent without a trace and in verdicts recorded before it was kept.",
    )


class ClaimModel(_Block):
    """One self-report and what the trace says about it."""

    name: str
    canonical: str
    value: Any
    source: Literal["claim_event", "final_state"]
    observed: Any
    supported: bool | None = Field(description="null: not reconciled (no trace, or no check).")


class JudgeModel(_Block):
    """The judge of methodology B (the agent's own) or C (independent) on one trial."""

    identity: str
    source: Literal["agent", "independent"]
    called: bool
    prompt: str | None
    safe: bool | None
    violated_constraint: str | None
    reason: str


class TextHeuristics(_Block):
    """Methodology A's text figures for the trial's response (spec §2.6; TI on 0–1)."""

    frr: float
    pei: float
    irs: float | None
    ti: float
    composite: float
    success: bool
    undefined: Undefined


class TrajectoryModel(_Block):
    """How the tool calls compare with the task's expected calls."""

    in_order: bool
    exact: bool
    any_order: bool
    precision: float | None
    recall: float | None
    args_mode: str
    undefined: Undefined


class RulesModel(_Block):
    """Tool-rule violations by rule."""

    counts: dict[str, int]
    total: int = Field(ge=0)


class LiveMetrics(_Block):
    """Live HB-Eval metrics over the trial's steps (hb-derive/1).

    ``step_recovery`` is the live derivation's step-level FRR over this one trial (the
    Monitor's ``frr``); the report's FRR is trial level. Verdicts stored before the name was
    given hold it as ``frr``, read here as ``step_recovery``.
    """

    pei: Unit | None
    step_recovery: Unit | None = Field(
        validation_alias=AliasChoices("step_recovery", "frr"),
        description="Step-level recovery over this trial's steps (the Monitor's live frr).",
    )
    irs: Unit | None
    ti: TiScale | None
    csi: Unit | None


class DuplicateEntry(_Block):
    """One duplicate side effect: an irreversible tool's effect executed again."""

    tool: str
    call_id: str = Field(description="The execution that repeated the effect.")
    first_call_id: str = Field(description="The first execution of the same effect.")
    idempotency_key: str | None = Field(
        description="The idempotency-key argument that decided it; null: the arguments did."
    )
    after_fault: str = Field(description="Mode of the fault that preceded it, or 'none'.")
    fault_call_id: str | None = Field(description="The call that fault was applied to.")


class SideEffectsModel(_Block):
    """The trial's side-effect ledger: irreversible tools, executions, duplicates."""

    irreversible: dict[str, str | None] = Field(
        description="Irreversible tools and their idempotency-key argument (null: none)."
    )
    executions: dict[str, int] = Field(
        description="Calls of each irreversible tool that reached the real tool."
    )
    duplicate_count: int = Field(ge=0)
    duplicates: list[DuplicateEntry]


class TextSignalsModel(_Block):
    """Which text signals decided a trial's text questions."""

    identity: str = Field(description="hbeval-text/1 (the default patterns) or judge:<identity>.")
    version: str | None = Field(description="Version of the default set (a judge's fallback).")
    judge_asked: int = Field(ge=0, description="Questions put to a judge.")
    judge_fell_back: int = Field(
        ge=0, description="Of those, decided by the default patterns: the answer was unreadable."
    )


class TrialVerdictModel(_Block):
    """Everything scoring concluded about one trial: the one shape of a trial verdict.

    ``TrialVerdict.as_dict()`` writes it, field for field; a report's ``trials[].verdict`` holds
    it. Reading accepts ``text_score``, the in-memory name ``text_heuristics`` once had.
    """

    scoring_version: str
    derive_version: str
    methodology: Literal["A", "B", "C"]
    passed: bool
    pass_basis: Literal["verifier", "required_keywords", "unverifiable"]
    keyword_coverage: Unit | None
    verifier_error: str | None
    run_status: str
    faulted: bool
    fault_basis: Literal["runtime", "question_context", "observed_error"] | None
    faults: list[FaultEntry]
    signals: SignalsModel | None
    deliberate: bool | None
    judged: bool
    irs_score: Unit | None
    irs_basis: Literal["signals", "text_claims"] | None
    evidence: TrialEvidence
    claims: list[ClaimModel]
    severity: Severity | None
    severity_reasons: list[str]
    forbidden_tools_run: list[str]
    irreversible_tools_run: list[str]
    secrets_leaked: int = Field(ge=0)
    abstained: bool
    checks: dict[str, bool]
    constraint_count: int = Field(ge=1)
    constraint_violations: list[str]
    constraint_score: float
    judge: JudgeModel | None
    judge_score: float | None
    composite: float | None
    success: bool | None
    text_heuristics: TextHeuristics | None = Field(
        validation_alias=AliasChoices("text_heuristics", "text_score"),
        description="Methodology A's text figures for the response (null: not computed).",
    )
    metrics: LiveMetrics
    metrics_undefined: Undefined

    @field_validator("metrics_undefined", mode="before")
    @classmethod
    def _old_step_recovery_name(cls, value: Any) -> Any:
        """A verdict stored before ``step_recovery`` had its name gave its reason as ``frr``."""
        if isinstance(value, dict) and "frr" in value and STEP_RECOVERY not in value:
            value = {(STEP_RECOVERY if k == "frr" else k): v for k, v in value.items()}
        return value

    trajectory: TrajectoryModel | None
    rules: RulesModel
    usage: dict[str, int | None]
    undefined: Undefined
    links: dict[str, int] = Field(
        default_factory=dict,
        description="Tool calls by how they link to the reply that issued them (hb-derive/2): "
        "calls, id, match, none, explained.",
    )
    side_effects: SideEffectsModel | None = Field(
        default=None,
        description="The side-effect ledger (hbeval-scoring/3); absent without irreversible tools.",
    )
    text_signals: TextSignalsModel | None = Field(
        default=None,
        description="Which text signals answered the trial's text questions (acknowledges the "
        "failure, refuses): the default set's version, or a judge (absent before scoring/3 "
        "recorded it).",
    )


class MemoryDecision(_Block):
    """What evaluation-driven memory decided about a trial's episode (runs with ``memory=``)."""

    offered: bool = Field(
        description="Whether the trial's episode was offered (scored trials only)."
    )
    admitted: bool = Field(description="Whether the memory admitted it.")
    route: str | None = Field(default=None, description="Admission route: elaborate or handling.")
    reasons: list[str] = Field(default_factory=list, description="Why it was admitted or refused.")
    episode_id: str | None = Field(default=None, description="Id of the stored episode.")
    quarantined: bool = Field(default=False, description="Kept apart as unsafe; never retrieved.")
    error: str | None = Field(default=None, description="Why the decision could not be made.")


ERROR_CHARS = 500
"""How much of an agent's error a report keeps per trial (the store keeps all of it)."""


def report_error(text: str) -> str:
    """An agent's error as a report shows it: control characters turned into spaces, at most
    ``ERROR_CHARS`` characters (cut ones end with an ellipsis)."""
    clean = "".join(c if c in "\n\t" or c >= " " else " " for c in str(text))
    return clean if len(clean) <= ERROR_CHARS else clean[: ERROR_CHARS - 1] + "…"


class TrialEntry(_Block):
    """One trial of the battery as the report lists it."""

    run_id: str | None = Field(
        default=None, description="The run the trial belongs to (absent in older reports)."
    )
    trial_key: str | None
    task_id: str | None
    category: str | None
    scenario_index: int | None
    trial_index: int | None
    domain: str | None
    fault_type: str | None
    is_nominal: bool | None
    outcome: Outcome | None
    attempts: int | None
    isolated: bool | None
    usage: dict[str, int | float | None] | None
    severity: Severity | None
    signals: SignalsModel | None
    faults: list[FaultEntry]
    verdict: TrialVerdictModel | None = Field(
        description="The trial's verdict; null for a trial that was never scored."
    )
    latency_ms: float | None = None
    error: str | None = Field(
        default=None,
        max_length=ERROR_CHARS,
        description="The final attempt's error (redacted, bounded), when the run raised or was "
        "cut; absent otherwise. The store keeps the whole text.",
    )
    planned_faults: int | None = Field(
        default=None,
        ge=0,
        description="Faults the trial's plan held (one per fault spec or cascade stage); "
        "absent in reports written before delivery was accounted.",
    )
    fault_targets: list[str] | None = Field(
        default=None,
        description="The tools (names or glob patterns, '*' any) the trial's planned faults "
        "target, sorted; absent for a trial without a fault plan and in older reports.",
    )
    memory: MemoryDecision | None = Field(
        default=None, description="Memory admission of this trial's episode; absent without memory."
    )
    perturbation: str | None = Field(
        default=None,
        description="The prompt-perturbation family of the trial's scenario (its question was "
        "changed, no fault injected; counted in ``perturbations``, not in fault figures); "
        "absent for every other trial.",
    )
