"""Each adapter ships ``hbeval_X.testing``: the scripted model its own tests (and a user's) drive
real agents with. The conformance suites build their agents on these, so they are exercised there;
this pins what each module exports."""

from __future__ import annotations

import importlib

import pytest

EXPECTED = {
    "hbeval_langgraph.testing": ["ScriptedChatModel", "tool_call"],
    "hbeval_crewai.testing": ["ScriptedLLM", "tool_results_read"],
    "hbeval_autogen.testing": [
        "FUNCTION_CALLING_MODEL_INFO",
        "Reply",
        "ScriptedChatCompletionClient",
    ],
}
FRAMEWORK = {
    "hbeval_langgraph.testing": "langgraph",
    "hbeval_crewai.testing": "crewai",
    "hbeval_autogen.testing": "autogen_agentchat",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_adapter_testing_module_exports_its_scripted_model(name: str) -> None:
    pytest.importorskip(FRAMEWORK[name])
    if name == "hbeval_crewai.testing":
        import tests.adapters.crewai.test_crewai_fixtures  # noqa: F401  (CrewAI offline first)
    module = importlib.import_module(name)
    assert sorted(module.__all__) == EXPECTED[name]
    assert all(hasattr(module, n) for n in module.__all__)
