"""Battery reports: the hbeval-report/1 model (and, in later releases, HTML, passports, gate).

``build_report`` and ``strip_volatile`` live in ``hbeval_core.scoring`` (scoring turns verdicts
into a report) and are re-exported here for convenience; ``model`` holds the schema, the
validator and the reader that refuses newer format versions.
"""

from __future__ import annotations

from ..scoring import build_report, strip_volatile
from .model import (
    REPORT_FORMAT,
    Report,
    ReportFormatError,
    TrialEntry,
    TrialVerdictModel,
    read_report,
    report_json_schema,
    validate_report,
)

__all__ = [
    "REPORT_FORMAT",
    "Report",
    "ReportFormatError",
    "TrialEntry",
    "TrialVerdictModel",
    "build_report",
    "read_report",
    "report_json_schema",
    "strip_volatile",
    "validate_report",
]
