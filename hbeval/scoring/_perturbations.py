"""Prompt perturbations, reported apart from fault handling.

A trial whose record carries ``perturbation`` (a scenario of a perturbation family, e.g. the
reference's context sentences: ``hbeval_core.faults.perturb``) had its question changed and no
fault injected. It measures whether the agent still completes the task when the prompt says
something else, not how it handles a fault, so ``split_perturbed`` takes such trials out before
any fault figure (FRR, IRS, PEI, the verdict, breakdowns) is computed, and the report's
``perturbations`` section counts them on their own:

* per family: scored trials, passed, the pass rate with its interval clustered by scenario, the
  pass rate of the same run's nominal trials on the same tasks, and the change between the two
  over the tasks that have nominal trials (perturbed minus nominal on those tasks, with
  Newcombe's interval over the clustered rates); tasks without a nominal trial are named;
* per context (the sentence appended): scored trials, passed, pass rate.

A rate without trials is null with its reason in ``undefined``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hbeval_core.metrics import clustered_difference
from hbeval_core.vocab import NO_NOMINAL_TRIAL, NO_TRIALS

from ._fold import SCORED_OUTCOMES, _clustered_pass, _passed
from ._perturbation_model import PerturbationContext, PerturbationFamily, Perturbations

__all__ = ["perturbations_field", "split_perturbed"]

_NOTE = (
    "Trials whose question was changed and no fault injected; they are not part of FRR, IRS, "
    "PEI or the verdict."
)


def split_perturbed(
    trials: Sequence[Mapping[str, Any]],
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """``(fault_handling, perturbed)``: the trials without and with a ``perturbation``."""
    plain: list[Mapping[str, Any]] = []
    perturbed: list[Mapping[str, Any]] = []
    for t in trials:
        (perturbed if t.get("perturbation") else plain).append(t)
    return plain, perturbed


def _context_of(trial: Mapping[str, Any]) -> str:
    label = str(trial.get("fault_type") or "")
    return label.split(":", 1)[1] if ":" in label else label


def _family(
    trials: Sequence[Mapping[str, Any]], nominal: Sequence[Mapping[str, Any]], confidence: float
) -> PerturbationFamily:
    scored = [t for t in trials if t.get("outcome") in SCORED_OUTCOMES]
    tasks = {t.get("task_id") for t in scored}
    same = [t for t in nominal if t.get("task_id") in tasks]
    # The change compares like with like: perturbed trials of tasks that have nominal trials.
    with_nominal = {t.get("task_id") for t in same}
    paired = [t for t in scored if t.get("task_id") in with_nominal]
    mine = _clustered_pass(scored, confidence)
    base = _clustered_pass(same, confidence)
    both = _clustered_pass(paired, confidence)
    undefined: dict[str, str] = {}
    if mine.estimate is None:
        undefined.update(pass_rate=NO_TRIALS, change=NO_TRIALS)
    if base.estimate is None:
        undefined.update(nominal_pass_rate=NO_NOMINAL_TRIAL, paired_pass_rate=NO_NOMINAL_TRIAL)
        undefined.setdefault("change", NO_NOMINAL_TRIAL)
    diff = clustered_difference(both, base) if not undefined else None
    contexts: dict[str, list[Mapping[str, Any]]] = {}
    for t in scored:
        contexts.setdefault(_context_of(t), []).append(t)
    return PerturbationFamily(
        scenarios=len({t.get("scenario_index") for t in trials}),
        trials=len(scored),
        passed=sum(1 for t in scored if _passed(t)),
        pass_rate=mine.estimate,
        pass_rate_interval=mine.interval,
        nominal_trials=len(same),
        nominal_pass_rate=base.estimate,
        paired_trials=len(paired),
        paired_pass_rate=both.estimate,
        tasks_without_nominal=sorted(str(t) for t in tasks - with_nominal),
        change=None if diff is None else diff.difference,
        change_interval=None if diff is None else diff.interval,
        by_context={
            name: PerturbationContext(
                trials=len(group),
                passed=sum(1 for t in group if _passed(t)),
                pass_rate=sum(1 for t in group if _passed(t)) / len(group),
            )
            for name, group in sorted(contexts.items())
        },
        undefined=undefined,
    )


def perturbations_field(
    perturbed: Sequence[Mapping[str, Any]],
    nominal: Sequence[Mapping[str, Any]],
    confidence: float,
) -> dict[str, Any]:
    """``{"perturbations": section}`` when the run had perturbed trials, else nothing.

    ``nominal`` holds the run's scored nominal trials (the fault-handling part's).
    """
    if not perturbed:
        return {}
    families: dict[str, list[Mapping[str, Any]]] = {}
    for t in perturbed:
        families.setdefault(str(t.get("perturbation")), []).append(t)
    return {
        "perturbations": Perturbations(
            note=_NOTE,
            families={
                name: _family(group, nominal, confidence)
                for name, group in sorted(families.items())
            },
        )
    }
