"""0.1's ``run_battery`` and ``arun_battery``, which returned the report as a dict.

Reached only through the old import paths (``hbeval_core.runner.run_battery``), which warn;
they go in 0.2 with them. ``hbeval.runner.run_battery`` returns the typed ``Report``.
"""

from __future__ import annotations

from typing import Any

from ..scoring import Report
from ._async import arun_battery as _arun
from .run import run_battery as _run

__all__ = ["arun_battery", "run_battery"]


def run_battery(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """``hbeval.runner.run_battery(adapter, target, tasks, battery, ...)``, as a dict."""
    return _as_dict(_run(*args, **kwargs))


async def arun_battery(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """``hbeval.runner.arun_battery(...)``, as a dict."""
    return _as_dict(await _arun(*args, **kwargs))


def _as_dict(report: Report) -> dict[str, Any]:
    return report.to_dict()
