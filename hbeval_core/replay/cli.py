"""Moved to ``hbeval_core.cli``: ``hbeval replay`` keeps importing from here."""

from __future__ import annotations

from ..cli._replay import replay_cmd

__all__ = ["replay_cmd"]
