"""The ``hbeval-report/1`` model, where renderers and tools have always imported it from.

The models live in ``hbeval_core.scoring`` (scoring builds the report as a :class:`Report`);
this module re-exports them under their old names: ``Report``, ``TrialEntry``,
``TrialVerdictModel``, ``validate_report``, ``read_report``, ``report_json_schema``, the range
types and, on attribute access, every block model (``report.model.Metrics`` ...).
"""

from __future__ import annotations

from typing import Any

from ..scoring import _report_model, _trial_model
from ..scoring._report_model import (
    REPORT_FORMAT,
    Report,
    ReportFormatError,
    read_report,
    report_json_schema,
    validate_report,
)
from ..scoring._trial_model import Change as Change
from ..scoring._trial_model import TiScale as TiScale
from ..scoring._trial_model import TrialEntry, TrialVerdictModel
from ..scoring._trial_model import Unit as Unit

__all__ = [
    "REPORT_FORMAT",
    "Report",
    "ReportFormatError",
    "TrialEntry",
    "TrialVerdictModel",
    "read_report",
    "report_json_schema",
    "validate_report",
]


def __getattr__(name: str) -> Any:
    """The block models (``Metrics``, ``FaultEntry`` ...) by name, as this module once held them."""
    for module in (_report_model, _trial_model):
        if not name.startswith("_") and hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
