"""Moved to ``hbeval_core.testing.conformance``; this name stays so existing imports keep working."""

from hbeval_core.testing.conformance import AdapterConformance, CaptureBoom, two_tool_task

__all__ = ["AdapterConformance", "CaptureBoom", "two_tool_task"]
