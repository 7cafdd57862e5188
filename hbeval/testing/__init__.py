"""Reliability tests inside pytest: run a battery on an agent and assert on it in one call.

::

    from hbeval.testing import assert_reliable

    def test_support_agent_is_reliable(tmp_path):
        assert_reliable("agents/support.py:make_agent", floors={"frr": 0.8}, db=tmp_path / "h.db")

``assert_reliable`` runs the fault battery (``run_battery``), gates the report with the rules
of ``hbeval gate`` (``report.gate.run_gate``: default floors PEI 0.70, FRR 0.65, IRS 0.60,
TI 3.00, ``floors`` overriding them metric by metric, and the security gate), writes the report
JSON, and fails the test with every floor missed, its value and its 95% interval, and the
report's path. The ``hbeval_battery`` fixture of the pytest plugin is the same call;
``assert_gate`` gates a report that exists. The adapter conformance suite is
``hbeval.testing.conformance`` and the demo's help-desk world ``hbeval.testing.helpdesk``.

``ScriptedOpenAIServer`` is an OpenAI-compatible chat completions server on 127.0.0.1 that
answers from a script (``Reply``, ``ToolCall``, ``ErrorReply``, ``Usage``), so an agent on its
real provider client (``ChatOpenAI``, ``crewai.LLM``, ``OpenAIChatCompletionClient``, ``openai``)
is tested offline; it records every request (``ReceivedRequest``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hbeval_core._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "ErrorReply": "hbeval.testing._openai_server",
    "ReceivedRequest": "hbeval.testing._openai_server",
    "Reply": "hbeval.testing._openai_server",
    "ScriptedOpenAIServer": "hbeval.testing._openai_server",
    "ToolCall": "hbeval.testing._openai_server",
    "Usage": "hbeval.testing._openai_server",
    "Reliability": "hbeval.testing._reliable",
    "assert_reliable": "hbeval.testing._reliable",
    "assert_gate": "hbeval.testing._gate",
}

__all__ = [
    "ErrorReply",
    "ReceivedRequest",
    "Reliability",
    "Reply",
    "ScriptedOpenAIServer",
    "ToolCall",
    "Usage",
    "assert_gate",
    "assert_reliable",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)


if TYPE_CHECKING:
    from ._gate import assert_gate
    from ._openai_server import (
        ErrorReply,
        ReceivedRequest,
        Reply,
        ScriptedOpenAIServer,
        ToolCall,
        Usage,
    )
    from ._reliable import Reliability, assert_reliable
