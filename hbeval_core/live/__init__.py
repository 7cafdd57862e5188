"""Live metrics: derivation (events -> steps), the ``Monitor`` and its policies.

``derive`` folds events into steps (``Deriver``, ``derive_steps``); ``monitor`` folds steps into
the HB-Eval live metrics after every step and raises breaches, Safe Halt and Adapt-Plan
directives; ``_policy`` holds the policy engine. The Prometheus export of live metrics
(``serve_metrics``) is the product's: ``hbeval.export``.
"""

from __future__ import annotations

from typing import Any

__all__: list[str] = []


def __getattr__(name: str) -> Any:
    # 0.1 served Prometheus from here; the old names forward until 0.2 (hbeval_core._moved).
    from .._moved import moved_name

    return moved_name(__name__, name)
