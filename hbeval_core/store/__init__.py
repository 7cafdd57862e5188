"""Where runs, trials, attempts, events, metrics and reports are kept: SQLite or memory.

``open_store()`` opens the embedded default (SQLite at ``./.hbeval/hbeval.db``); ``MemoryStore()``
keeps everything in memory. Both implement :class:`Recorder`, refuse the same bad input, and never
drop or overwrite what they have stored.
"""

from __future__ import annotations

from ._redact import DEFAULT_MAX_RESULT_BYTES, REDACTED, Redactor, parse_redact_rules
from ._sanitise import sanitise_value, storable_events, storable_text
from .errors import (
    DuplicateRecordError,
    StoreDamagedError,
    StoreError,
    StoreVersionError,
    UnknownRunError,
)
from .memory import MemoryStore
from .protocol import Recorder
from .records import (
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_FINAL_STATUSES,
    RUN_INTERRUPTED,
    RUN_RUNNING,
    RUN_STATUSES,
    AttemptRecord,
    MetricSet,
    ReportRecord,
    RunRecord,
    TrialRecord,
    make_trial_key,
)
from .sqlite import DEFAULT_PATH, MIGRATIONS, SQLiteStore, open_store, resolve_path

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_PATH",
    "MIGRATIONS",
    "REDACTED",
    "RUN_COMPLETED",
    "RUN_FAILED",
    "RUN_FINAL_STATUSES",
    "RUN_INTERRUPTED",
    "RUN_RUNNING",
    "RUN_STATUSES",
    "AttemptRecord",
    "DuplicateRecordError",
    "MemoryStore",
    "MetricSet",
    "Recorder",
    "Redactor",
    "ReportRecord",
    "RunRecord",
    "SQLiteStore",
    "StoreDamagedError",
    "StoreError",
    "StoreVersionError",
    "TrialRecord",
    "UnknownRunError",
    "make_trial_key",
    "open_store",
    "parse_redact_rules",
    "resolve_path",
    "sanitise_value",
    "storable_events",
    "storable_text",
]
