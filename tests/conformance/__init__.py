"""The adapter conformance suite, from ``hbeval.testing.conformance`` where it ships.

Subclass ``AdapterConformance`` in ``tests/adapters/<framework>/test_<framework>_conformance.py``,
implement its hooks (a scripted two-tool agent, how to break capture, what the adapter patches)
and pytest runs the whole suite against that adapter.
"""

from hbeval.testing.conformance import AdapterConformance, CaptureBoom, two_tool_task

__all__ = ["AdapterConformance", "CaptureBoom", "two_tool_task"]
