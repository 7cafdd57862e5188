"""Reliability checks inside a project's own pytest suite.

Installed as a pytest plugin (entry point ``pytest11``: ``hbeval = "hbeval_core.pytest_plugin"``),
it provides two fixtures::

    def test_release_gate(hbeval_gate):
        hbeval_gate("reports/latest.json", floors={"pei": 0.75}, baseline="reports/main.json")

    def test_support_agent(hbeval_battery):
        hbeval_battery("agents/support.py:make_agent", floors={"frr": 0.8}, trials=3)

``hbeval_gate`` runs ``hbeval gate``'s rules (``report.gate.run_gate``) on a report that
exists; ``hbeval_battery`` is :func:`hbeval_core.testing.assert_reliable`: it runs the battery
first. Both fail the test with every reason; on insufficient data they fail too
(``on_insufficient="skip"`` skips instead). The security gate is skipped with
``skip_security=True``, the CLI's ``--skip-security`` (``require_security`` is a deprecated
alias). ``pytest --hbeval-reuse`` lets ``hbeval_battery`` reuse a stored run of the same
measurement fingerprint, agent id and manifest hash (which covers the agent's source files and
package versions), so CI does not re-run an unchanged agent and never reuses a changed one.
Without the entry point, ``pytest -p hbeval_core.pytest_plugin``, ``assert_gate(...)`` and
``assert_reliable(...)`` work the same. Importing this module costs almost nothing: hbeval
loads only when a fixture is used.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .report.gate import GateResult
    from .testing import Reliability

__all__ = ["assert_gate", "hbeval_battery", "hbeval_gate", "load_report_arg", "reuse_requested"]

ReportArg = str | Path | Mapping[str, Any]

_REUSE_OPTION = "--hbeval-reuse"
_reuse = False


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hbeval", "hbeval reliability tests")
    group.addoption(
        _REUSE_OPTION,
        action="store_true",
        default=False,
        help="hbeval_battery / assert_reliable: reuse a stored run of the same measurement "
        "fingerprint, agent id and manifest hash (source files and package versions) "
        "instead of running the battery again.",
    )


def pytest_configure(config: pytest.Config) -> None:
    global _reuse
    _reuse = bool(config.getoption(_REUSE_OPTION, default=False))


def reuse_requested() -> bool:
    """Whether pytest was started with ``--hbeval-reuse``."""
    return _reuse


def load_report_arg(report: ReportArg, what: str) -> Mapping[str, Any]:
    """A report given as a mapping or a JSON file; an unreadable file fails the test."""
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
    from .report.gate import GATE_FAIL, GATE_INSUFFICIENT, GateRefused, run_gate
    from .testing._reliable import resolve_skip_security

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


@pytest.fixture
def hbeval_gate() -> Callable[..., GateResult]:
    """``hbeval_gate(report_path, floors=..., baseline=..., ...)``: fail the test unless the gate passes."""
    return assert_gate


@pytest.fixture
def hbeval_battery(request: pytest.FixtureRequest) -> Callable[..., Reliability]:
    """``hbeval_battery(target, tasks=..., floors=..., trials=..., db=...)``: ``assert_reliable``.

    The report's path is attached to the test's ``user_properties`` as ``hbeval_report``
    (JUnit XML shows it), whether the test passes or fails.
    """
    from .testing import assert_reliable

    def run(target: Any, **options: Any) -> Reliability:
        def attach(path: Path) -> None:
            request.node.user_properties.append(("hbeval_report", str(path)))

        options.setdefault("on_report", attach)
        return assert_reliable(target, **options)

    return run
