"""Scoring (hbeval-scoring/3): a trial's trace becomes a verdict, a battery's verdicts a report.

- ``score_trial(task, scenario, result, methodology=..., judge=...)`` -> ``TrialVerdict``: pass
  or fail, delivered faults, IRS signals S1–S6, evidence level, claims, severity, the
  methodology's composite.
- ``decide_verdict(report)`` -> ``RunVerdict``: SAFE, UNSAFE or INSUFFICIENT_DATA, the one
  verdict every surface (report, terminal, HTML, gate, passport) shows; ``security_gate`` and
  the fault-delivery accounting it reads.
- ``build_report(run=..., trials=..., history=...)`` -> ``Report``, the ``hbeval-report/1``
  pydantic model (``Report.to_dict()`` is the JSON on disk; ``TrialVerdictModel`` its trials'
  verdicts); ``strip_volatile(report)`` sets timestamps and latencies aside for comparisons.
- ``compute_scores(report)`` -> ``Scores``: capability score, security gate and efficiency,
  computed once and stored in the report's ``scores`` section; ``scores_of(report)`` reads that
  section (computing it for a report written before it existed).
- Methodology A's text heuristics (``compute_frr`` ... ``score_text``) and the B/C composite
  with its JSON extractor (``extract_json``, ``constraint_score``, ``composite_score``).
"""

from __future__ import annotations

from hbeval_core.vocab import SCORING_VERSION

from ._battery import (
    REQUIRED_METRICS,
    build_report,
)
from ._binding import strip_volatile
from ._claims import BEHAVIOURAL_KEYS, E0_CLAIM_CAP, ClaimCheck
from ._composite import (
    composite_score,
    composite_success,
    constraint_score,
    extract_json,
    judge_score,
)
from ._consistency import add_consistency
from ._decision import (
    FAULTABLE_FIX,
    VERDICT_EXIT_CODES,
    VERDICT_VERSION,
    RunVerdict,
    VerdictCheck,
    decide_verdict,
)
from ._delivery import delivery_counts, delivery_warning, fault_type_delivery, planned_faults
from ._fold import SCORED_OUTCOMES
from ._judge import Judge, JudgeResult, judge_identity, judge_prompt
from ._methodology_a import (
    TextScore,
    composite_a,
    compute_frr,
    compute_irs,
    compute_pei,
    compute_ti,
    keyword_coverage,
    score_text,
    success_a,
)
from ._report_model import Report, ReportFormatError, Scores
from ._scores import compute_scores, scores_of
from ._security import (
    SECURITY_FAILED,
    SECURITY_MIN_INJECTION_TRIALS,
    SECURITY_NOT_MEASURED,
    SECURITY_PASSED,
    SecurityGate,
    proportion_counts,
    scored_trials,
    security_gate,
)
from ._signals import (
    FAILURE_PATTERN,
    REFUSAL_PATTERN,
    TEXT_SIGNALS_VERSION,
    Signals,
    compute_signals,
)
from ._text_signals import JudgeSignals, PatternSignals, TextSignals, text_signals_for
from ._trace import Evidence, FaultRecord, TraceFacts, analyse_trace, assess_evidence
from ._trial_model import TrialVerdictModel, report_error
from ._trial_steps import METHODOLOGIES
from ._verdict import TraceFigures, TrialVerdict, score_trial, trace_figures

__all__ = [
    "BEHAVIOURAL_KEYS",
    "E0_CLAIM_CAP",
    "FAILURE_PATTERN",
    "FAULTABLE_FIX",
    "METHODOLOGIES",
    "REFUSAL_PATTERN",
    "REQUIRED_METRICS",
    "SCORED_OUTCOMES",
    "SCORING_VERSION",
    "SECURITY_FAILED",
    "SECURITY_MIN_INJECTION_TRIALS",
    "SECURITY_NOT_MEASURED",
    "SECURITY_PASSED",
    "TEXT_SIGNALS_VERSION",
    "VERDICT_EXIT_CODES",
    "VERDICT_VERSION",
    "ClaimCheck",
    "Evidence",
    "FaultRecord",
    "Judge",
    "JudgeResult",
    "JudgeSignals",
    "PatternSignals",
    "Report",
    "ReportFormatError",
    "RunVerdict",
    "Scores",
    "SecurityGate",
    "Signals",
    "TextScore",
    "TextSignals",
    "TraceFacts",
    "TraceFigures",
    "TrialVerdict",
    "TrialVerdictModel",
    "VerdictCheck",
    "add_consistency",
    "analyse_trace",
    "assess_evidence",
    "build_report",
    "composite_a",
    "composite_score",
    "composite_success",
    "compute_frr",
    "compute_irs",
    "compute_pei",
    "compute_scores",
    "compute_signals",
    "compute_ti",
    "constraint_score",
    "decide_verdict",
    "delivery_counts",
    "delivery_warning",
    "extract_json",
    "fault_type_delivery",
    "judge_identity",
    "judge_prompt",
    "judge_score",
    "keyword_coverage",
    "planned_faults",
    "proportion_counts",
    "report_error",
    "score_text",
    "score_trial",
    "scored_trials",
    "scores_of",
    "security_gate",
    "strip_volatile",
    "success_a",
    "text_signals_for",
    "trace_figures",
]
