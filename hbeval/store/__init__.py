"""Where runs, trials, attempts, events, metrics and reports are kept: SQLite, PostgreSQL, memory.

``open_store()`` opens the embedded default (SQLite at ``./.hbeval/hbeval.db``), a SQLite path, or
a shared PostgreSQL database (``postgresql://user@host:port/db``, extra ``[postgres]``);
``InMemoryStore()`` keeps everything in this process's memory. All implement :class:`StoreWriter` (formerly
``Recorder``), refuse the same bad input, and never drop or overwrite what they have stored.
``copy_store`` moves runs between any two of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hbeval_core._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "DEFAULT_MAX_RESULT_BYTES": "._redact",
    "DEFAULT_PATH": ".sqlite",
    "MIGRATIONS": ".sqlite",
    "REDACTED": "._redact",
    "RUN_COMPLETED": ".records",
    "RUN_FAILED": ".records",
    "RUN_FINAL_STATUSES": ".records",
    "RUN_INTERRUPTED": ".records",
    "RUN_RUNNING": ".records",
    "RUN_STATUSES": ".records",
    "AttemptRecord": ".records",
    "CopySummary": ".copy",
    "DuplicateRecordError": ".errors",
    "InMemoryStore": ".inmemory",
    "MetricSet": ".records",
    "NoStoreError": ".errors",
    "PostgresStore": ".postgres",
    "Recorder": ".protocol",
    "Redactor": "._redact",
    "ReportRecord": ".records",
    "RunRecord": ".records",
    "SQLiteStore": ".sqlite",
    "StoreDamagedError": ".errors",
    "StoreError": ".errors",
    "StoreVersionError": ".errors",
    "StoreWriter": ".protocol",
    "TrialRecord": ".records",
    "UnknownRunError": ".errors",
    "copy_between": ".copy",
    "copy_store": ".copy",
    "make_trial_key": ".records",
    "open_store": "._open",
    "parse_redact_rules": "._redact",
    "resolve_path": ".sqlite",
    "sanitise_value": "._sanitise",
    "storable_events": "._sanitise",
    "storable_text": "._sanitise",
    "store_exists": "._open",
}

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
    "InMemoryStore",
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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)


if TYPE_CHECKING:
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
    from .inmemory import InMemoryStore
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
