"""The report's consistency block: how alike the repeated trials of one scenario are.

C_out and the flip rate read the outcomes of each scenario's scored trials; C_traj_d and
C_traj_s read the tool-name sequences of its successful trials (``hbeval_core.metrics``
describes each figure). A scenario is the unit that is repeated: on a battery run one task
under one fault condition, on an imported recording one task. The tool names come from the
trials' events, which a report does not hold, so the block is added to a built report by the
code that has them (the runner from its store, an import from its recording); a report
without it (written before it existed, or rebuilt from its own trials) simply has none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import Field

from hbeval_core.metrics import MetricValue, pass_hat_k_detail, run_consistency
from hbeval_core.vocab import (
    NO_SUCCESS_LABEL,
    OUTCOME_FAIL,
    OUTCOME_PASS,
    OUTCOME_TIMEOUT,
    TOOL_START,
)

from ._trial_model import Undefined, Unit, _Block

if TYPE_CHECKING:
    from ._report_model import Report

__all__ = [
    "ConsistencyBlock",
    "add_consistency",
    "consistency_block",
    "stored_tool_names",
    "tool_names",
    "with_consistency",
]

FIGURES = ("c_out", "flip_rate", "c_traj_d", "c_traj_s")
SCORED_OUTCOMES = (OUTCOME_PASS, OUTCOME_FAIL, OUTCOME_TIMEOUT)
"""The outcomes a trial is scored on (as ``_fold``)."""


class ConsistencyBlock(_Block):
    """Consistency over the repeated trials of each scenario within this run."""

    c_out: Unit | None = Field(
        description="Outcome consistency: mean over scenarios of (2p − 1)², p the pass share."
    )
    flip_rate: Unit | None = Field(
        description="Share of scenarios whose trials did not all end the same way."
    )
    c_traj_d: Unit | None = Field(
        description="1 − mean pairwise base-2 Jensen–Shannon divergence of tool-name "
        "frequencies, over successful trials (those that called a tool)."
    )
    c_traj_s: Unit | None = Field(
        description="Mean pairwise 1 − Levenshtein/max-length of tool-name sequences, over "
        "successful trials."
    )
    pass_hat_k: Unit | None = Field(
        description="pass^k over the same scenarios, k = the most trials of a scenario, shown "
        "beside the flip rate."
    )
    k: int | None = Field(ge=1, description="The k of pass_hat_k.")
    scenarios: int = Field(ge=0, description="Scenarios with at least one scored trial.")
    scenarios_repeated: int = Field(
        ge=0, description="Scenarios with two or more scored trials (C_out, flip rate)."
    )
    scenarios_traj_d: int = Field(ge=0, description="Scenarios C_traj_d was averaged over.")
    scenarios_traj_s: int = Field(ge=0, description="Scenarios C_traj_s was averaged over.")
    undefined: Undefined


def tool_names(events: Iterable[Any]) -> list[str]:
    """The tool names a trial's events started, in order (faulted calls included)."""
    names: list[str] = []
    for event in events:
        if getattr(event, "kind", None) == TOOL_START:
            names.append(str(getattr(event, "tool", "")))
    return names


def stored_tool_names(store: Any, run_id: str, report: Report) -> dict[str, list[str]]:
    """Each scored trial's tool names, read from the final attempt's stored events."""
    names: dict[str, list[str]] = {}
    for entry in report.trials:
        if entry.trial_key is None or entry.outcome not in SCORED_OUTCOMES:
            continue
        last = max(int(entry.attempts or 1) - 1, 0)
        names[entry.trial_key] = tool_names(
            store.iter_events(run_id, entry.trial_key, attempt=last)
        )
    return names


def _scenario(entry: Any) -> str:
    if entry.scenario_index is not None:
        return f"scenario {entry.scenario_index}"
    return f"task {entry.task_id}"


def consistency_block(report: Report, names: Mapping[str, Sequence[str]]) -> ConsistencyBlock:
    """The block for ``report``, from each scored trial's tool names keyed by trial key."""
    source = report.source
    unlabelled = isinstance(source, Mapping) and source.get("labelled") is False
    by_scenario: dict[str, list[tuple[bool, Sequence[str]]]] = {}
    if not unlabelled:
        for entry in report.trials:
            if entry.outcome not in SCORED_OUTCOMES or entry.perturbation is not None:
                continue
            calls = names.get(entry.trial_key or "", ())
            by_scenario.setdefault(_scenario(entry), []).append(
                (entry.outcome == OUTCOME_PASS, calls)
            )
    figures = run_consistency(by_scenario)
    values: dict[str, MetricValue] = {
        "c_out": figures.c_out,
        "flip_rate": figures.flip_rate,
        "c_traj_d": figures.c_traj_d,
        "c_traj_s": figures.c_traj_s,
    }
    undefined = {
        name: (NO_SUCCESS_LABEL if unlabelled else str(v.reason))
        for name, v in values.items()
        if v.value is None
    }
    # pass^k over the same scenarios, k = their most trials (tasks recur across scenarios on a
    # battery, so the report's per-task pass^k is another figure).
    k = max((len(v) for v in by_scenario.values()), default=0)
    hat = pass_hat_k_detail({s: [p for p, _ in v] for s, v in by_scenario.items()}, max(k, 1))
    if hat.value is None:
        undefined["pass_hat_k"] = NO_SUCCESS_LABEL if unlabelled else str(hat.reason)
    return ConsistencyBlock(
        c_out=figures.c_out.value,
        flip_rate=figures.flip_rate.value,
        c_traj_d=figures.c_traj_d.value,
        c_traj_s=figures.c_traj_s.value,
        pass_hat_k=hat.value,
        k=k or None,
        scenarios=figures.tasks,
        scenarios_repeated=figures.tasks_repeated,
        scenarios_traj_d=figures.c_traj_d.defined,
        scenarios_traj_s=figures.c_traj_s.defined,
        undefined=undefined,
    )


def with_consistency(report: Report, names: Mapping[str, Sequence[str]]) -> Report:
    """``report`` with its consistency block computed from ``names`` (trial key -> tool names)."""
    return report.model_copy(update={"consistency": consistency_block(report, names)})


def add_consistency(report: Report, store: Any) -> Report:
    """``report`` with its consistency block, the tool names read from ``store``'s events."""
    run_id = str(report.run_id)
    return with_consistency(report, stored_tool_names(store, run_id, report))
