"""Gate a battery report inside a project's own pytest suite.

Installed as a pytest plugin (entry point ``pytest11``: ``hbeval = "hbeval_core.pytest_plugin"``),
it provides the ``hbeval_gate`` fixture::

    def test_release_gate(hbeval_gate):
        hbeval_gate("reports/latest.json", floors={"pei": 0.75}, baseline="reports/main.json")

The call runs ``hbeval gate``'s rules (``report.gate.run_gate``) and returns the
:class:`~hbeval_core.report.gate.GateResult` on pass; on fail it fails the test with every
reason; on insufficient data it fails too (``on_insufficient="skip"`` skips instead). Without
the entry point, ``pytest -p hbeval_core.pytest_plugin`` or ``assert_gate(...)`` work the same.
Importing this module costs almost nothing: hbeval loads only when the fixture is used.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .report.gate import GateResult

__all__ = ["assert_gate", "hbeval_gate"]

ReportArg = str | Path | Mapping[str, Any]


def _load(report: ReportArg, what: str) -> Mapping[str, Any]:
    if isinstance(report, Mapping):
        return report
    path = Path(report)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        pytest.fail(f"hbeval gate: cannot read the {what} {path}: {exc}", pytrace=False)
    if not isinstance(data, Mapping):
        pytest.fail(f"hbeval gate: {path} holds no report object", pytrace=False)
    return data


def assert_gate(
    report: ReportArg,
    *,
    floors: Mapping[str, float | None] | None = None,
    lower_bound: bool = False,
    baseline: ReportArg | None = None,
    max_drop: float = 0.05,
    require_security: bool = True,
    on_insufficient: str = "fail",
) -> GateResult:
    """Gate a report (path or dict) and fail the current test with the reasons unless it passes.

    Arguments are those of ``run_gate``; ``on_insufficient`` is ``"fail"`` (default) or
    ``"skip"``. A baseline of another measurement fingerprint fails the test as a refusal.
    """
    from .report.gate import GATE_FAIL, GATE_INSUFFICIENT, GateRefused, run_gate

    if on_insufficient not in ("fail", "skip"):
        raise ValueError(f"on_insufficient must be 'fail' or 'skip', got {on_insufficient!r}")
    data = _load(report, "report")
    base = _load(baseline, "baseline") if baseline is not None else None
    try:
        result = run_gate(
            data,
            floors=floors,
            lower_bound=lower_bound,
            baseline=base,
            max_drop=max_drop,
            require_security=require_security,
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


@pytest.fixture
def hbeval_gate() -> Callable[..., GateResult]:
    """``hbeval_gate(report_path, floors=..., baseline=..., ...)``: fail the test unless the gate passes."""
    return assert_gate
