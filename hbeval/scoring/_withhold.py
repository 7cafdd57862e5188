"""Figures that need a success label, made undefined: a report over trials that have none.

An imported recording without success labels (Pi, DSH, telemetry) is scored with a placeholder
outcome, then every figure resting on success is withheld with a reason
(``hbeval.importers._ingest``); ``_recheck`` does the same when it rebuilds such a report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hbeval_core.vocab import FRR, NO_SUCCESS_LABEL, NOT_MEASURED

from ._decision import decide_verdict
from ._scores import compute_scores

if TYPE_CHECKING:
    from ._report_model import Report

__all__ = ["withhold_pass_figures"]


def withhold_pass_figures(model: Report, reason: str) -> Report:
    """``model`` with every figure that needs a success label undefined with ``reason``."""
    from ._report_model import Report

    # The figures are rewritten on the report's JSON document, which is then read back.
    report = model.to_dict()

    def rate_block(block: dict[str, Any]) -> None:
        block.update(passed=0, rate=None, interval=None)
        block["undefined"] = {"rate": reason, "interval": reason}

    def k_block(block: dict[str, Any]) -> None:
        block.update(value=None, defined=0)
        block["undefined"] = {"value": reason}

    rate_block(report["pass_rate"])
    for block in (*report["pass_at_k"], *report["pass_hat_k"]):
        k_block(block)
    for name in ("metrics", "aggregate_metrics"):
        report[name][FRR] = None
    report["undefined"][FRR] = reason
    report["defined_counts"][FRR] = 0
    gap = report["reliability_gap"]
    for k in ("c_nom", "r_op", "gap", "interval", "z", "p", "significant"):
        gap[k] = None
    gap["c_nom_interval"] = gap["r_op_interval"] = None
    gap["undefined"] = {
        k: reason for k in ("c_nom", "r_op", "gap", "interval", "z", "p", "significant")
    }
    for groups in report["breakdowns"].values():
        for entry in groups.values():
            rate_block(entry)
            k_block(entry["pass_hat_k"])
    report["severity"] = {
        "histogram": {},
        "weighted_failure_rate": None,
        "undefined": {"weighted_failure_rate": reason},
    }
    report["agentdojo"]["utility"] = None
    report["agentdojo"]["undefined"]["utility"] = reason
    eff = report["efficiency"]
    eff["successes"] = 0
    for k in (
        "tokens_per_success",
        "tool_calls_per_success",
        "interventions_per_success",
        "cost_per_success_usd",
    ):
        eff[k] = None
        eff["undefined"][k] = reason
    n = sum(report["outcomes"].values())
    report["outcomes"] = {k: 0 for k in report["outcomes"]}
    report["outcomes"][NO_SUCCESS_LABEL] = n
    report["tail"] = []
    for sc in report["scenarios"]:
        sc["passed"] = 0
        sc["metrics"][FRR] = None
        sc["undefined"][FRR] = reason
    for t in report["trials"]:
        t["outcome"] = None
        t["severity"] = None
    left = Report.model_validate(report)
    scores = compute_scores(left)  # of what is left
    report["scores"] = scores.model_dump(mode="json")
    decision = decide_verdict(left.model_copy(update={"scores": scores}))
    verdict, reasons = decision.verdict, list(decision.reasons)
    report["verdict"], report["verdict_reasons"] = verdict, reasons
    report["unmeasured_metrics"] = list(decision.unmeasured)
    if "verdict_fix" in report:
        report["verdict_fix"] = decision.fix
    figures = _figures(report["metrics"], report["undefined"])
    report["summary"] = (
        f"{verdict}: {n} imported trials without a success label ({reason}); {figures}."
        + (f" Why: {'; '.join(reasons)}." if reasons else "")
    )
    return Report.model_validate(report)


def _figures(metrics: dict[str, Any], undefined: dict[str, str]) -> str:
    """The summary's metric list: each value, or undefined with its reason."""
    return ", ".join(
        f"{m.upper()} undefined ({undefined.get(m, NOT_MEASURED)})"
        if metrics.get(m) is None
        else f"{m.upper()} {metrics[m]:.2f}"
        for m in metrics
    )
