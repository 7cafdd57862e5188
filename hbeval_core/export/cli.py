"""Moved to ``hbeval_core.cli``: ``hbeval export`` keeps importing from here."""

from __future__ import annotations

from ..cli._export import export_app, otlp_cmd

__all__ = ["export_app", "otlp_cmd"]
