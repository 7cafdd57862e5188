"""hbeval for AutoGen agentchat 0.7: capture, fault injection and evaluation-driven memory.

Quick start::

    from hbeval_autogen import AutoGenAdapter, capture

    with capture("run-1") as rec:              # record any AutoGen run, no code change
        await agent.run(task="Where is order A1005?")
    rec.events                                  # hb-events/1: model, tool, span, run events

    AssistantAgent(..., memory=[EDMMemory(backing, agent_id="support")])   # qualified precedents

    hbeval battery run examples/autogen_assistant.py:assistant            # the fault battery

Importing this package does not import AutoGen; the names below load it on first use.
Supported versions: ``SUPPORTED`` (checked when instrumenting).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hbeval_core._lazy import lazy_exports

from ._version import SUPPORTED, UnsupportedVersionError, check_supported

_EXPORTS: dict[str, str] = {
    "AutoGenAdapter": "._adapter",
    "build_episode": "._adapter",
    "capture": "._adapter",
    "is_autogen_target": "._adapter",
    "response_text": "._adapter",
    "instrument": "._hook",
    "uninstrument": "._hook",
    "is_instrumented": "._hook",
    "current_recorder": "._hook",
    "RunRecorder": "._recorder",
    "AutoGenRecorder": "._recorder",
    "RunAborted": "._recorder",
    "EDMMemory": "._memory",
    "EpisodeBacking": "._memory",
    "looks_like_instruction": "._memory",
    "HBEvalModelClient": "._wrappers",
    "HBEvalWorkbench": "._wrappers",
    "HBEvalStreamWorkbench": "._wrappers",
    "ScriptedChatCompletionClient": "._scripted",
    "Reply": "._scripted",
    "FUNCTION_CALLING_MODEL_INFO": "._scripted",
}

__all__ = [
    "FUNCTION_CALLING_MODEL_INFO",
    "SUPPORTED",
    "AutoGenAdapter",
    "AutoGenRecorder",
    "EDMMemory",
    "EpisodeBacking",
    "HBEvalModelClient",
    "HBEvalStreamWorkbench",
    "HBEvalWorkbench",
    "Reply",
    "RunAborted",
    "RunRecorder",
    "ScriptedChatCompletionClient",
    "UnsupportedVersionError",
    "build_episode",
    "capture",
    "check_supported",
    "current_recorder",
    "instrument",
    "is_autogen_target",
    "is_instrumented",
    "looks_like_instruction",
    "response_text",
    "uninstrument",
]


_ALIASES = {"AutoGenRecorder": "RunRecorder"}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__, _ALIASES)


if TYPE_CHECKING:
    from ._adapter import AutoGenAdapter, build_episode, capture, is_autogen_target, response_text
    from ._hook import current_recorder, instrument, is_instrumented, uninstrument
    from ._memory import EDMMemory, EpisodeBacking, looks_like_instruction
    from ._recorder import RunAborted, RunRecorder
    from ._recorder import RunRecorder as AutoGenRecorder
    from ._scripted import FUNCTION_CALLING_MODEL_INFO, Reply, ScriptedChatCompletionClient
    from ._wrappers import HBEvalModelClient, HBEvalStreamWorkbench, HBEvalWorkbench
