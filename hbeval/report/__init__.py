"""Battery reports: the hbeval-report/1 model, scores, HTML, compare, gate and signed passports.

``build_report`` and ``strip_volatile`` live in ``hbeval.scoring`` (scoring turns verdicts
into a report) and are re-exported here for convenience, with the report model, its
validator and the reader that refuses newer format versions. ``scores`` (capability, security
gate, efficiency), ``html`` (the self-contained page), ``compare``, ``gate``, ``passport`` and
``terminal`` render, judge and sign a report; their commands live in ``hbeval.cli``
(importing this package does not import typer).
"""

from __future__ import annotations

from ..scoring import build_report, strip_volatile
from ..scoring._report_model import (
    REPORT_FORMAT,
    Report,
    ReportFormatError,
    read_report,
    report_json_schema,
    validate_report,
)
from ..scoring._trial_model import TrialEntry, TrialVerdictModel
from .compare import COMPARE_FORMAT, CompareRefused, compare_reports
from .gate import GATE_FORMAT, GateCheck, GateRefused, GateResult, parse_floors, run_gate
from .html import render_html, store_traces, trial_timeline, write_html
from .passport import (
    PASSPORT_FORMAT,
    PassportError,
    VerifyResult,
    build_passport,
    canonical_bytes,
    load_private_key,
    load_public_key,
    render_passport,
    sign_passport,
    verify_passport,
    write_private_key,
)
from .scores import (
    CAPABILITY_VERSION,
    DEFAULT_CAPABILITY_WEIGHTS,
    CapabilityScore,
    SecurityGate,
    capability_score,
    efficiency,
    report_scores,
    security_gate,
)
from .terminal import ProgressPrinter, print_summary, summary_table

__all__ = [
    "CAPABILITY_VERSION",
    "COMPARE_FORMAT",
    "DEFAULT_CAPABILITY_WEIGHTS",
    "GATE_FORMAT",
    "PASSPORT_FORMAT",
    "REPORT_FORMAT",
    "CapabilityScore",
    "CompareRefused",
    "GateCheck",
    "GateRefused",
    "GateResult",
    "PassportError",
    "ProgressPrinter",
    "Report",
    "ReportFormatError",
    "SecurityGate",
    "TrialEntry",
    "TrialVerdictModel",
    "VerifyResult",
    "build_passport",
    "build_report",
    "canonical_bytes",
    "capability_score",
    "compare_reports",
    "efficiency",
    "load_private_key",
    "load_public_key",
    "parse_floors",
    "print_summary",
    "read_report",
    "render_html",
    "render_passport",
    "report_json_schema",
    "report_scores",
    "run_gate",
    "security_gate",
    "sign_passport",
    "store_traces",
    "strip_volatile",
    "summary_table",
    "trial_timeline",
    "validate_report",
    "verify_passport",
    "write_html",
    "write_private_key",
]
