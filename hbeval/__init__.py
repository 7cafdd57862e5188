"""hbeval: how a tool-using agent behaves when things break, measured with honest uncertainty.

The verbs a user reaches for::

    import hbeval

    report = hbeval.run_battery("agents/support.py:make_agent", trials=3)
    report.verdict, report.metrics.frr, report.pass_rate.interval
    hbeval.assert_reliable(make_agent, floors={"frr": 0.8})     # in a pytest test

``run_battery`` / ``arun_battery`` run the fault battery on a target (a compiled LangGraph graph,
a CrewAI crew, an AutoGen agent or team, a plain callable, or a factory returning one) and return
the typed ``Report``; ``load_report`` reads one back (a file or a stored run), checked against its
own trials; ``build_report`` folds scored trials into one. ``Task`` and ``Outcome`` are what a
task file and a verifier speak; ``faultable`` makes any function a tool boundary the battery can
fault; ``open_store`` and ``open_edm`` open the store and evaluation-driven memory.

The small core every adapter builds on is ``hbeval_core``; machinery lives in the subpackages
(``hbeval.runner``, ``hbeval.scoring``, ``hbeval.report``, ...). Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hbeval_core import __version__
from hbeval_core._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "run_battery": "hbeval._verbs",
    "arun_battery": "hbeval._verbs",
    "load_report": "hbeval._verbs",
    "assert_reliable": "hbeval.testing._reliable",
    "build_report": "hbeval.scoring._battery",
    "Report": "hbeval.scoring._report_model",
    "Battery": "hbeval_core.faults.battery",
    "Task": "hbeval_core.contract._task",
    "Outcome": "hbeval_core.contract._outcome",
    "faultable": "hbeval_core.faults.boundary",
    "open_store": "hbeval.store._open",
    "open_edm": "hbeval.memory._edm",
}

__all__ = [
    "Battery",
    "Outcome",
    "Report",
    "Task",
    "__version__",
    "arun_battery",
    "assert_reliable",
    "build_report",
    "faultable",
    "load_report",
    "open_edm",
    "open_store",
    "run_battery",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)


if TYPE_CHECKING:
    from hbeval_core.contract._outcome import Outcome
    from hbeval_core.contract._task import Task
    from hbeval_core.faults.battery import Battery
    from hbeval_core.faults.boundary import faultable

    from ._verbs import arun_battery, load_report, run_battery
    from .memory._edm import open_edm
    from .scoring._battery import build_report
    from .scoring._report_model import Report
    from .store._open import open_store
    from .testing._reliable import assert_reliable
