"""Moved to ``hbeval_core.cli``: ``hbeval import`` keeps importing from here."""

from __future__ import annotations

from ..cli._importers import import_cmd

__all__ = ["import_cmd"]
