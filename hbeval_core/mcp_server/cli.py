"""Moved to ``hbeval_core.cli``: ``hbeval mcp`` keeps importing from here."""

from __future__ import annotations

from ..cli._mcp import mcp_cmd

__all__ = ["mcp_cmd"]
