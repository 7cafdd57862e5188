"""Moved to ``hbeval.testing.conformance``; this name stays so existing imports keep working."""

from hbeval.testing.conformance import AdapterConformance, CaptureBoom, two_tool_task

__all__ = ["AdapterConformance", "CaptureBoom", "two_tool_task"]
