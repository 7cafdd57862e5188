"""Live traces into the store: each ended trace becomes a trial of one live run."""

from __future__ import annotations

import threading
import time
from typing import Any

from hbeval_core.fingerprint import fingerprint
from hbeval_core.vocab import DERIVE_VERSION, OUTCOME_SKIPPED

from ._processor import TraceCapture

__all__ = ["LIVE_BATTERY", "StoreSink"]

LIVE_BATTERY = "otel:live"
"""The ``battery`` of a run captured live from spans (no battery was run)."""


class StoreSink:
    """Writes every ended trace to ``store`` as one trial of run ``run_id`` (created on first use).

    A trace carries no success label, so its trial's outcome is ``skipped`` (it enters no pass
    rate); its events are stored as a battery trial's are (``storable_events`` with
    ``redactor``, the built-in rules when None: secrets redacted, tool results capped, values no
    store holds replaced, each changed event saying what changed), and the live monitor's
    metrics as they are. The run's measurement fingerprint names live capture and the
    derivation version, so such runs are compared only with each other.
    """

    def __init__(
        self,
        store: Any,
        *,
        run_id: str | None = None,
        agent_id: str = "otel",
        redactor: Any = None,
    ) -> None:
        from ..store import Redactor

        self.store = store
        self.redactor = redactor if redactor is not None else Redactor()
        self.agent_id = agent_id
        self.run_id = run_id or f"otel-live-{int(time.time())}"
        self.measurement_fingerprint = fingerprint({"kind": "otel-live", "derive": DERIVE_VERSION})
        self._started = False
        self._count = 0
        self._lock = threading.Lock()

    def __call__(self, capture: TraceCapture) -> None:
        from ..store import (
            AttemptRecord,
            RunRecord,
            TrialRecord,
            make_trial_key,
            storable_events,
        )

        with self._lock:
            if not self._started:
                self.store.start_run(
                    RunRecord(
                        run_id=self.run_id,
                        agent_id=self.agent_id,
                        battery=LIVE_BATTERY,
                        measurement_fingerprint=self.measurement_fingerprint,
                        config={"source": "opentelemetry spans"},
                    )
                )
                self._started = True
            key = make_trial_key(self._count, 0)
            self._count += 1
        metrics = dict(capture.monitor.metrics)
        undefined = {k: v for k, v in capture.monitor.undefined.items() if metrics.get(k) is None}
        self.store.record_trial_bundle(
            TrialRecord(
                run_id=self.run_id,
                trial_key=key,
                task_id=capture.trace_id,
                scenario_index=self._count - 1,
                trial_index=0,
                outcome=OUTCOME_SKIPPED,
            ),
            [AttemptRecord(run_id=self.run_id, trial_key=key, attempt=0, outcome=OUTCOME_SKIPPED)],
            {0: storable_events(capture.events, redactor=self.redactor)[0]},
            metrics=metrics,
            undefined=undefined,
        )
