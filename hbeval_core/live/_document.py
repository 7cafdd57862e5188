"""The live metrics of a recorded trace as one JSON document (``hbeval score --json``).

Light to import: the reader and the monitor load when a trace is scored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..vocab import PEI_V2
from ._policy import parse_halt

if TYPE_CHECKING:
    from .derive import StepRecord

__all__ = ["TABLE_LIMIT", "score_trace"]


TABLE_LIMIT = 100
"""``score_trace`` keeps per-step rows of traces this long at most, unless told."""


def score_trace(
    source: Any,
    *,
    label: str,
    pei_version: str = PEI_V2,
    halt_policy: str | None = None,
    steps: bool | None = None,
) -> dict[str, Any]:
    """The ``hbeval score --json`` document of an hb-events/1 stream (path or open text file).

    ``label`` is shown as ``source``; ``steps`` None keeps the per-step rows only for traces of
    at most 100 steps. Raises ValueError naming the option (``--halt-policy``, PEI version) or,
    as ``EventFormatError``, the event line at fault.
    """
    from ._trace import fold_trace
    from .monitor import Monitor

    policy = parse_halt(halt_policy) if halt_policy else None
    monitor = Monitor(pei_version=pei_version, halt_policy=policy)
    rows: list[dict[str, Any]] = []
    keep_rows = steps is not False

    def row(step: StepRecord) -> bool:
        nonlocal keep_rows, rows
        rows.append(
            {
                "step": step.index + 1,
                "action": step.action,
                "metrics": monitor.metrics,
                "undefined": monitor.undefined,
            }
        )
        if steps is None and len(rows) > TABLE_LIMIT:
            keep_rows = False
            rows = []
        return keep_rows

    # Per-step rows need the metrics after each step; without them steps are folded in batches.
    fold_trace(source, monitor, row if keep_rows else None)
    doc: dict[str, Any] = {"source": label, **monitor.summary()}
    if keep_rows:
        doc["steps"] = rows
    return doc
