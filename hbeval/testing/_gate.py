"""``assert_gate``: ``hbeval gate``'s rules on a report, failing the current test with the reasons.

It also keeps what the pytest plugin learnt from the command line (``--hbeval-reuse``), which
``assert_reliable`` reads, so the plugin and the assertions share one small module.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import pytest

if TYPE_CHECKING:
    from ..report.gate import GateResult
    from ..scoring import Report

__all__ = [
    "REUSE_OPTION",
    "assert_gate",
    "load_report_arg",
    "resolve_skip_security",
    "reuse_requested",
    "set_reuse",
]

ReportArg: TypeAlias = "Report | str | Path | Mapping[str, Any]"
"""A report as a test gives it: the ``Report``, its dict, or a report file."""

REUSE_OPTION = "--hbeval-reuse"
_reuse = False


def reuse_requested() -> bool:
    """Whether pytest was started with ``--hbeval-reuse``."""
    return _reuse


def set_reuse(on: bool) -> None:
    """What ``reuse_requested`` answers from now on (the plugin sets it from the command line)."""
    global _reuse
    _reuse = on


def resolve_skip_security(skip_security: bool, require_security: bool | None, where: str) -> bool:
    """The one spelling is ``skip_security`` (the CLI's ``--skip-security``).

    ``require_security`` is its deprecated inverse, still accepted with a warning.
    """
    if require_security is None:
        return bool(skip_security)
    warnings.warn(
        f"{where}: require_security is deprecated; write skip_security="
        f"{not require_security} (the CLI's --skip-security)",
        DeprecationWarning,
        stacklevel=3,
    )
    if skip_security and require_security:
        raise ValueError(
            f"{where}: skip_security=True contradicts require_security=True; "
            "give skip_security only"
        )
    return not require_security


def load_report_arg(report: ReportArg, what: str) -> Report:
    """A report given as a ``Report``, its dict or a JSON file, checked against its own trials;
    an unreadable file, or a report that is none or was edited, fails the test."""
    from ..scoring._recheck import ReportEdited, checked_report
    from ..scoring._report_model import Report, ReportFormatError

    where = f"the {what}"
    if isinstance(report, (Report, Mapping)):
        data: Any = report
    else:
        path = Path(report)
        where = f"the {what} {path}"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            pytest.fail(f"hbeval gate: cannot read {where}: {exc}", pytrace=False)
        if not isinstance(data, Mapping):
            pytest.fail(f"hbeval gate: {path} holds no report object", pytrace=False)
    try:
        return checked_report(data, where)
    except (ReportFormatError, ReportEdited) as exc:
        pytest.fail(f"hbeval gate: {exc}", pytrace=False)


def assert_gate(
    report: ReportArg,
    *,
    floors: Mapping[str, float | None] | None = None,
    lower_bound: bool = False,
    baseline: ReportArg | None = None,
    max_drop: float = 0.05,
    skip_security: bool = False,
    on_insufficient: str = "fail",
    require_security: bool | None = None,
) -> GateResult:
    """Gate a report (path or dict) and fail the current test with the reasons unless it passes.

    Arguments are ``hbeval gate``'s; ``skip_security`` is ``--skip-security``
    (``require_security``, its inverse, is deprecated). ``on_insufficient`` is ``"fail"``
    (default) or ``"skip"``. A baseline of another measurement fingerprint fails the test as a
    refusal.
    """
    from ..report.gate import GATE_FAIL, GATE_INSUFFICIENT, GateRefused, run_gate

    skip = resolve_skip_security(skip_security, require_security, "assert_gate")
    if on_insufficient not in ("fail", "skip"):
        raise ValueError(f"on_insufficient must be 'fail' or 'skip', got {on_insufficient!r}")
    data = load_report_arg(report, "report")
    base = load_report_arg(baseline, "baseline") if baseline is not None else None
    try:
        result = run_gate(
            data,
            floors=floors,
            lower_bound=lower_bound,
            baseline=base,
            max_drop=max_drop,
            require_security=not skip,
        )
    except GateRefused as exc:
        pytest.fail(f"hbeval gate refused: {exc}", pytrace=False)
    lines = "\n".join(f"  - {r}" for r in result.reasons)
    if result.verdict == GATE_FAIL:
        pytest.fail(f"hbeval gate FAILED (run {result.run_id}):\n{lines}", pytrace=False)
    if result.verdict == GATE_INSUFFICIENT:
        message = (
            f"hbeval gate: insufficient data (run {result.run_id}); unmeasured: "
            f"{', '.join(result.unmeasured)}\n{lines}"
        )
        if on_insufficient == "skip":
            pytest.skip(message)
        pytest.fail(message, pytrace=False)
    return result
