"""Where runs, trials, attempts, events, metrics and reports are kept: SQLite, PostgreSQL, memory.

``open_store()`` opens the embedded default (SQLite at ``./.hbeval/hbeval.db``), a SQLite path, or
a shared PostgreSQL database (``postgresql://user@host:port/db``, extra ``[postgres]``);
``MemoryStore()`` keeps everything in memory. All implement :class:`StoreWriter` (formerly
``Recorder``), refuse the same bad input, and never drop or overwrite what they have stored.
``copy_store`` moves runs between any two of them.
"""

from __future__ import annotations

from ._open import open_store, store_exists
from ._redact import DEFAULT_MAX_RESULT_BYTES, REDACTED, Redactor, parse_redact_rules
from ._sanitise import sanitise_value, storable_events, storable_text
from .copy import CopySummary, copy_between, copy_store
from .errors import (
    DuplicateRecordError,
    NoStoreError,
    StoreDamagedError,
    StoreError,
    StoreVersionError,
    UnknownRunError,
)
from .memory import MemoryStore
from .postgres import PostgresStore
from .protocol import Recorder, StoreWriter
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
from .sqlite import DEFAULT_PATH, MIGRATIONS, SQLiteStore, resolve_path

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
    "CopySummary",
    "DuplicateRecordError",
    "MemoryStore",
    "MetricSet",
    "NoStoreError",
    "PostgresStore",
    "Recorder",
    "Redactor",
    "ReportRecord",
    "RunRecord",
    "SQLiteStore",
    "StoreDamagedError",
    "StoreError",
    "StoreVersionError",
    "StoreWriter",
    "TrialRecord",
    "UnknownRunError",
    "copy_between",
    "copy_store",
    "make_trial_key",
    "open_store",
    "parse_redact_rules",
    "resolve_path",
    "sanitise_value",
    "storable_events",
    "storable_text",
    "store_exists",
]
