"""Scripted chat model clients for testing AutoGen agents under hbeval, offline.

``ScriptedChatCompletionClient`` answers through a policy that reads the messages it receives
(``policy(messages, tool_names) -> str | Reply``), so an ``AssistantAgent`` or a team runs for
real while only the model is scripted; ``Reply`` carries tool calls and the thought that explains
them; ``FUNCTION_CALLING_MODEL_INFO`` is the model info such a client declares. AutoGen's own
``ReplayChatCompletionClient`` serves a fixed list of replies.
"""

from __future__ import annotations

from ._scripted import FUNCTION_CALLING_MODEL_INFO, Reply, ScriptedChatCompletionClient

__all__ = ["FUNCTION_CALLING_MODEL_INFO", "Reply", "ScriptedChatCompletionClient"]
