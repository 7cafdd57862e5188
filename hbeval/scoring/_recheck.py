"""A report checked against its own trials: its figures must follow from them.

A report carries every trial's verdict. Its headline figures (metrics, rates, pass^k, the gap,
severity, the security gate, scores, the verdict and its reasons) are a pure function of those
trials, the run's description and the thresholds, so :func:`report_discrepancies` builds the
report again from them and names each figure that differs. A report edited after hbeval wrote
it (a PEI raised by hand before ``gate`` or ``passport sign``) is then refused, not trusted.

What a report does not hold cannot be checked, and is taken as the report states it: CSI,
which comes from earlier runs' reports (the history is not in the file), and the price table
(costs are not among the checked figures). A report written under other metric versions is
not rebuilt at all (``None``), nor is one whose trials were derived or scored under other
versions (``versions.derive``, ``versions.scoring``): the code that would rebuild it is not
the code that built it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hbeval_core.vocab import (
    CSI,
    DERIVE_VERSION,
    METRIC_VERSIONS,
    NO_SUCCESS_LABEL,
    OUTCOME_FAIL,
    SCORING_VERSION,
)

if TYPE_CHECKING:
    from ._report_model import Report

__all__ = ["CHECKED_FIELDS", "ReportEdited", "checked_report", "describe", "report_discrepancies"]

CHECKED_FIELDS = (
    "metrics",
    "aggregate_metrics",
    "undefined",
    "defined_counts",
    "pass_rate",
    "outcomes",
    "reliability_gap",
    "pass_at_k",
    "pass_hat_k",
    "breakdowns",
    "severity",
    "agentdojo",
    "fault_delivery",
    "evidence",
    "scores",
    "verdict",
    "verdict_reasons",
    "unmeasured_metrics",
    "versions",
)
"""The report fields rebuilt and compared: every figure a gate, a comparison or a passport
reads, and the verdict."""

_MAX_LISTED = 5


def report_discrepancies(model: Report) -> list[str] | None:
    """Each checked figure of ``report`` that its own trials do not give, as
    ``"metrics.pei: 0.2 in the report, 0.9028 from its trials"``; ``[]`` when all agree.
    Then, when every figure agrees, each way the report is not bound to the run it names
    (``_binding.binding_problems``: trials of another run, an identity its digest does not give).

    None when the report cannot be rebuilt here (written under other metric, derivation or
    scoring versions, or missing its run or trials) and is bound to its run. ``report`` must
    already have passed ``validate_report``.
    """
    from ._binding import binding_problems

    # The rebuilt report is compared with this one as the JSON both are written as.
    report = model.to_dict()
    found = _figure_discrepancies(report)
    if found:
        return found
    unbound = binding_problems(report)
    return unbound if unbound else found


def _figure_discrepancies(report: dict[str, Any]) -> list[str] | None:
    from ._battery import DEFAULT_CONFIDENCE, DEFAULT_TAIL_SIZE, _build
    from ._report_model import CsiInfo, ReportFormatError

    versions = report.get("versions")
    claimed = _claimed_against_trials(versions, report.get("trials"))
    if claimed:
        return claimed  # a version claim its own trials contradict: edited, not older
    if (
        report.get("metric_versions") != dict(METRIC_VERSIONS)
        or not isinstance(versions, Mapping)
        or versions.get("scoring") != SCORING_VERSION
        or versions.get("derive") != DERIVE_VERSION
    ):
        return None  # built by other rules: rebuilding it here would not be a check
    run, trials = report.get("run"), report.get("trials")
    if not isinstance(run, Mapping) or not isinstance(trials, list):
        return None
    source = report.get("source")
    unlabelled = isinstance(source, Mapping) and source.get("labelled") is False
    if unlabelled:  # built over a placeholder outcome, then withheld (importers._ingest)
        trials = [{**t, "outcome": OUTCOME_FAIL} if isinstance(t, Mapping) else t for t in trials]
    run_info = {
        **run,
        "fingerprints": report.get("fingerprints"),
        "manifest_hash": report.get("manifest_hash"),
    }
    metrics, undefined = report.get("metrics"), report.get("undefined")
    metrics = metrics if isinstance(metrics, Mapping) else {}
    undefined = undefined if isinstance(undefined, Mapping) else {}
    try:
        csi_given = (
            metrics.get(CSI),
            undefined.get(CSI),
            CsiInfo.model_validate(report.get("csi_info")),
        )
        rebuilt_model = _build(
            run_info,
            trials,
            (),
            report.get("thresholds"),
            DEFAULT_CONFIDENCE,
            DEFAULT_TAIL_SIZE,
            csi_given=csi_given,
        )
    except (ReportFormatError, ValueError, TypeError) as exc:
        return [f"trials: the report cannot be built again from them ({exc})"]
    if unlabelled:
        from ._withhold import withhold_pass_figures

        rebuilt_model = withhold_pass_figures(rebuilt_model, NO_SUCCESS_LABEL)
    if report.get("recorded_errors") is not None:
        from ._recorded import separate_recorded_errors

        rebuilt_model = separate_recorded_errors(rebuilt_model)
    rebuilt = rebuilt_model.to_dict()
    found: list[str] = []
    for name in CHECKED_FIELDS:
        _differences(name, report.get(name), rebuilt.get(name), found)
    return found


def _claimed_against_trials(versions: Any, trials: Any) -> list[str]:
    """Where the report's derivation or scoring version differs from the one every trial's
    verdict names (a report made to look older, so that it is not rebuilt)."""
    if not isinstance(versions, Mapping) or not isinstance(trials, list):
        return []
    found = []
    for name, field in (("derive", "derive_version"), ("scoring", "scoring_version")):
        named = {
            v
            for t in trials
            if isinstance(t, Mapping)
            and isinstance(verdict := t.get("verdict"), Mapping)
            and isinstance(v := verdict.get(field), str)
            and v
        }
        if len(named) == 1 and versions.get(name) not in named:
            found.append(
                f"versions.{name}: {_shown(versions.get(name))} in the report, "
                f"{_shown(named.pop())} in every trial's verdict"
            )
    return found


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return (bool(a == b) and type(a) is type(b)) or _same_number(a, b)


def _same_number(a: Any, b: Any) -> bool:
    """1 and 1.0 are the same figure (JSON does not keep the difference); True is no number."""
    numbers = (int, float)
    return (
        isinstance(a, numbers)
        and isinstance(b, numbers)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
        and a == b
    )


def _differences(path: str, stated: Any, rebuilt: Any, found: list[str]) -> None:
    """Append ``path: stated, rebuilt`` for each leaf where the two differ (depth first)."""
    if isinstance(stated, Mapping) and isinstance(rebuilt, Mapping):
        for key in list(dict.fromkeys([*stated, *rebuilt])):
            _differences(f"{path}.{key}", stated.get(key), rebuilt.get(key), found)
        return
    if _is_list(stated) and _is_list(rebuilt) and len(stated) == len(rebuilt):
        for i, (a, b) in enumerate(zip(stated, rebuilt, strict=True)):
            _differences(f"{path}[{i}]", a, b, found)
        return
    if not _same(stated, rebuilt):
        found.append(f"{path}: {_shown(stated)} in the report, {_shown(rebuilt)} from its trials")


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def describe(found: list[str]) -> str:
    """The first few differences as one line."""
    more = len(found) - _MAX_LISTED
    listed = "; ".join(found[:_MAX_LISTED])
    return listed + (f"; and {more} more" if more > 0 else "")


class ReportEdited(ValueError):
    """A report whose figures its own trials do not give: changed after hbeval built it."""


def checked_report(report: Report | Mapping[str, Any], where: str) -> Report:
    """``report`` (a ``Report``, or a report file's dict) as a ``Report`` its trials confirm.

    Raises ``ReportFormatError`` for a report that is no ``hbeval-report/1`` report and
    ``ReportEdited`` for one whose figures differ from what its trials give, naming each.
    A report built under other rules is returned as it states its figures (nothing here can
    rebuild it).
    """
    from ._report_model import Report, validate_report

    model = report if isinstance(report, Report) else validate_report(report)
    found = report_discrepancies(model)
    if found:
        raise ReportEdited(
            f"{where}: the report's figures do not follow from its own trials "
            f"({describe(found)}); it was changed after hbeval built it"
        )
    return model
