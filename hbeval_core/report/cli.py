"""Moved to ``hbeval_core.cli``: the ``report``, ``compare``, ``gate`` and ``passport`` commands
and the demo's closing step keep importing from here."""

from __future__ import annotations

from ..cli._demo import finish_demo
from ..cli._passport import passport_app
from ..cli._report import compare_cmd, gate_cmd, load_reports, report_cmd

__all__ = [
    "compare_cmd",
    "finish_demo",
    "gate_cmd",
    "load_reports",
    "passport_app",
    "report_cmd",
]
