"""Reliability checks inside a project's own pytest suite.

Installed as a pytest plugin (entry point ``pytest11``: ``hbeval = "hbeval.testing.pytest_plugin"``),
it provides two fixtures::

    def test_release_gate(hbeval_gate):
        hbeval_gate("reports/latest.json", floors={"pei": 0.75}, baseline="reports/main.json")

    def test_support_agent(hbeval_battery):
        hbeval_battery("agents/support.py:make_agent", floors={"frr": 0.8}, trials=3)

``hbeval_gate`` runs ``hbeval gate``'s rules (``report.gate.run_gate``) on a report that
exists; ``hbeval_battery`` is :func:`hbeval.testing.assert_reliable`: it runs the battery
first. Both fail the test with every reason; on insufficient data they fail too
(``on_insufficient="skip"`` skips instead). The security gate is skipped with
``skip_security=True``, the CLI's ``--skip-security`` (``require_security`` is a deprecated
alias). ``pytest --hbeval-reuse`` lets ``hbeval_battery`` reuse a stored run of the same
measurement fingerprint, agent id and manifest hash (which covers the agent's source files,
package versions, task content and declared inputs) whose recorded loaded source files are all
unchanged and whose report passes ``hbeval gate``'s recheck, so CI does not re-run an unchanged
agent and never reuses a changed one.
Without the entry point, ``pytest -p hbeval.testing.pytest_plugin``, ``assert_gate(...)`` and
``assert_reliable(...)`` work the same. Importing this module costs almost nothing: hbeval
loads only when a fixture is used.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._gate import REUSE_OPTION, assert_gate, set_reuse

if TYPE_CHECKING:
    from ..report.gate import GateResult
    from ._reliable import Reliability

__all__ = ["assert_gate", "hbeval_battery", "hbeval_gate"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hbeval", "hbeval reliability tests")
    group.addoption(
        REUSE_OPTION,
        action="store_true",
        default=False,
        help="hbeval_battery / assert_reliable: reuse a stored run of the same measurement "
        "fingerprint, agent id and manifest hash (source files and package versions) "
        "instead of running the battery again.",
    )


def pytest_configure(config: pytest.Config) -> None:
    set_reuse(bool(config.getoption(REUSE_OPTION, default=False)))


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
    from ._reliable import assert_reliable

    def run(target: Any, **options: Any) -> Reliability:
        def attach(path: Path) -> None:
            request.node.user_properties.append(("hbeval_report", str(path)))

        options.setdefault("on_report", attach)
        return assert_reliable(target, **options)

    return run
