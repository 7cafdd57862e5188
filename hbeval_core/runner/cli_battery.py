"""Moved to ``hbeval_core.cli``: ``hbeval battery`` keeps importing from here."""

from __future__ import annotations

from ..cli._battery import battery_app

__all__ = ["battery_app"]
