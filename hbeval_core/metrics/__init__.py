"""Trial- and battery-level metrics and statistics: small pure functions over plain data.

Every function returns None (or a result carrying a vocab reason code) where a value is undefined
— never 0 — and never rounds; every metric is registered by name and version in ``METRICS`` so a
report can record which metric ran with which parameters (``METRICS[name].record(**params)``).
Only the standard library is used, so importing this package is cheap.
"""

from __future__ import annotations

from ._compare import PairedComparison, TaskChange, paired_comparison
from ._consistency import (
    Consistency,
    flip_rate,
    outcome_consistency,
    run_consistency,
    trajectory_consistency_distribution,
    trajectory_consistency_sequence,
)
from ._csi import (
    CSI_ACCEPTABLE,
    CSI_BANDS,
    CSI_MARGINAL,
    CSI_STABLE,
    CSI_UNSTABLE,
    SLOPE_CLIP,
    SLOPE_FORMS,
    SLOPE_SIGN,
    CSIResult,
    csi,
    csi_status,
)
from ._paper import QF_PENALTY, UAS_WEIGHTS, frr_paper, irs_paper_v1, pei_paper, uas
from ._passk import pass_at_k, pass_at_k_detail, pass_hat_k, pass_hat_k_detail
from ._rates import (
    PRICE_KEYS,
    cost_per_success,
    latency_percentiles,
    macro_average,
    per_success,
    recovery_success,
    severity_histogram,
    severity_weighted_failure_rate,
    state_match_rate,
)
from ._registry import METRICS, MetricSpec, get_metric, metric
from ._result import MetricValue
from ._stats import (
    REFERENCE_Z,
    ReliabilityGap,
    beta_tail_probability,
    cohens_h,
    reliability_gap,
    two_proportion_z,
    wilson_interval,
    z_critical,
)
from ._trajectory import (
    ARGS_MODES,
    RULE_ARGUMENT_SCHEMA,
    RULE_CALL_BUDGET,
    RULE_FORBIDDEN_TOOL,
    RULE_ORDER,
    RULE_REQUIRED_TOOL,
    RULES,
    ArgSchema,
    Call,
    RuleViolations,
    ToolCallLike,
    TrajectoryMatch,
    Violation,
    rule_violations,
    trajectory_match,
)

__all__ = [
    "ARGS_MODES",
    "CSI_ACCEPTABLE",
    "CSI_BANDS",
    "CSI_MARGINAL",
    "CSI_STABLE",
    "CSI_UNSTABLE",
    "METRICS",
    "PRICE_KEYS",
    "QF_PENALTY",
    "REFERENCE_Z",
    "RULES",
    "RULE_ARGUMENT_SCHEMA",
    "RULE_CALL_BUDGET",
    "RULE_FORBIDDEN_TOOL",
    "RULE_ORDER",
    "RULE_REQUIRED_TOOL",
    "SLOPE_CLIP",
    "SLOPE_FORMS",
    "SLOPE_SIGN",
    "UAS_WEIGHTS",
    "ArgSchema",
    "CSIResult",
    "Call",
    "Consistency",
    "MetricSpec",
    "MetricValue",
    "PairedComparison",
    "ReliabilityGap",
    "RuleViolations",
    "TaskChange",
    "ToolCallLike",
    "TrajectoryMatch",
    "Violation",
    "beta_tail_probability",
    "cohens_h",
    "cost_per_success",
    "csi",
    "csi_status",
    "flip_rate",
    "frr_paper",
    "get_metric",
    "irs_paper_v1",
    "latency_percentiles",
    "macro_average",
    "metric",
    "outcome_consistency",
    "paired_comparison",
    "pass_at_k",
    "pass_at_k_detail",
    "pass_hat_k",
    "pass_hat_k_detail",
    "pei_paper",
    "per_success",
    "recovery_success",
    "reliability_gap",
    "rule_violations",
    "run_consistency",
    "severity_histogram",
    "severity_weighted_failure_rate",
    "state_match_rate",
    "trajectory_consistency_distribution",
    "trajectory_consistency_sequence",
    "trajectory_match",
    "two_proportion_z",
    "uas",
    "wilson_interval",
    "z_critical",
]
