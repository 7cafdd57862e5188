"""Scoring (hbeval-scoring/2): a trial's trace becomes a verdict, a battery's verdicts a report.

- ``score_trial(task, scenario, result, methodology=..., judge=...)`` -> ``TrialVerdict``: pass
  or fail, delivered faults, IRS signals S1–S6, evidence level, claims, severity, the
  methodology's composite.
- ``build_report(run=..., trials=..., history=...)`` -> an ``hbeval-report/1`` dict;
  ``strip_volatile(report)`` sets timestamps and latencies aside for comparisons.
- Methodology A's text heuristics (``compute_frr`` ... ``score_text``) and the B/C composite
  with its JSON extractor (``extract_json``, ``constraint_score``, ``composite_score``).
"""

from __future__ import annotations

from ..vocab import SCORING_VERSION
from ._battery import (
    REQUIRED_METRICS,
    SCORED_OUTCOMES,
    build_report,
    strip_volatile,
)
from ._claims import BEHAVIOURAL_KEYS, E0_CLAIM_CAP, ClaimCheck
from ._composite import (
    composite_score,
    composite_success,
    constraint_score,
    extract_json,
    judge_score,
)
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
from ._signals import FAILURE_PATTERN, REFUSAL_PATTERN, Signals, compute_signals
from ._trace import Evidence, FaultRecord, TraceFacts, analyse_trace, assess_evidence
from ._verdict import METHODOLOGIES, TraceFigures, TrialVerdict, score_trial, trace_figures

__all__ = [
    "BEHAVIOURAL_KEYS",
    "E0_CLAIM_CAP",
    "FAILURE_PATTERN",
    "METHODOLOGIES",
    "REFUSAL_PATTERN",
    "REQUIRED_METRICS",
    "SCORED_OUTCOMES",
    "SCORING_VERSION",
    "ClaimCheck",
    "Evidence",
    "FaultRecord",
    "Judge",
    "JudgeResult",
    "Signals",
    "TextScore",
    "TraceFacts",
    "TraceFigures",
    "TrialVerdict",
    "analyse_trace",
    "assess_evidence",
    "build_report",
    "composite_a",
    "composite_score",
    "composite_success",
    "compute_frr",
    "compute_irs",
    "compute_pei",
    "compute_signals",
    "compute_ti",
    "constraint_score",
    "extract_json",
    "judge_identity",
    "judge_prompt",
    "judge_score",
    "keyword_coverage",
    "score_text",
    "score_trial",
    "strip_volatile",
    "success_a",
    "trace_figures",
]
