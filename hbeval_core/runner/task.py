"""Moved to ``hbeval_core.contract``; this name stays so existing imports keep working."""

from __future__ import annotations

from ..contract._task import ExpectedCall, Task, Verifier

__all__ = ["ExpectedCall", "Task", "Verifier"]
