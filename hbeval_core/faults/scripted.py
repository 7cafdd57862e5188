"""Model faults for in-process scripted models: the provider's own exception, in place of HTTP.

A real provider client meets a model fault at the HTTP layer (``hbeval proxy openai``). A
scripted model inside a framework (``hbeval_langgraph.testing.ScriptedChatModel``,
``hbeval_crewai.testing.ScriptedLLM``, ``hbeval_autogen.testing.ScriptedChatCompletionClient``)
has no HTTP layer, so in a battery run it asks the trial for the fault planted on its call
(``planted_model_fault``) and answers the way the provider client would have after meeting it:

=====================  ========================================================================
mode                   what the scripted model does
=====================  ========================================================================
rate_limit             raises the ``openai`` SDK's ``RateLimitError``, its response carrying
                       ``Retry-After`` and ``retry-after-ms``
model_error            raises ``InternalServerError`` (the plan's 5xx status)
model_timeout          waits ``after_ms`` on the trial's clock, then raises
                       ``InternalServerError`` 504
stream_cut             raises ``APIConnectionError`` (the connection closed mid-answer)
context_overflow       raises ``BadRequestError`` 400 ``context_length_exceeded``
empty_completion       returns a reply with no text and no tool call
malformed_tool_call    returns its reply with each tool call's arguments spoiled, as the
                       framework's provider client hands over arguments that are not JSON
=====================  ========================================================================

The error exceptions are built by the ``openai`` SDK itself from the response the proxy would
have sent (``openai_error``), so their type, status, headers and body are the SDK's own. A
framework whose provider wraps them (CrewAI's context-length error) wraps them the same way in
its scripted model. The trial's desk (``TrialContext.model_faults``, set by the runner) decides
each call, writes the fault's receipt and, once the next model call or the trial's end shows
it, what followed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

from ..contract._trial import current_trial
from ..vocab import EMPTY_COMPLETION, MALFORMED_TOOL_CALL, STREAM_CUT

__all__ = [
    "PlantedModelFault",
    "conversation_key",
    "openai_error",
    "planted_model_fault",
]

_URL: Final = "http://127.0.0.1/v1/chat/completions"
"""The request a scripted model's exception names (no request is ever sent)."""


@dataclass(frozen=True)
class PlantedModelFault:
    """The fault planted on one scripted model call, and what the provider would have sent."""

    mode: str
    call: int
    """The model call's number in the trial (0 for the first)."""
    status: int | None = None
    """The HTTP status of an error answer; None for a reply (empty, malformed) or a cut."""
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, Any] | None = None
    spoil: Callable[[str], str] | None = None
    """For ``malformed_tool_call``: tool-call arguments (JSON text) to what the client gets."""

    @property
    def raises(self) -> bool:
        """Whether the call fails (every mode but an empty completion or a malformed call)."""
        return self.mode not in (EMPTY_COMPLETION, MALFORMED_TOOL_CALL)

    def error(self) -> Exception:
        """The ``openai`` SDK's exception for this fault (``openai_error``)."""
        return openai_error(self)


def planted_model_fault(model: str, messages: Any, *, tool_call: bool) -> PlantedModelFault | None:
    """The fault planted on this model call of the running trial, if any.

    ``messages`` is the call's input (any JSON-able form: it tells a retry of the same request
    from a changed conversation), ``tool_call`` whether the scripted reply calls a tool (a
    malformed tool call needs one). Outside a battery trial with model faults: None.
    """
    ctx = current_trial()
    desk = getattr(ctx, "model_faults", None)
    if desk is None:
        return None
    planted: PlantedModelFault | None = desk.plant(
        model, conversation_key(messages), tool_call=tool_call
    )
    return planted


def conversation_key(messages: Any) -> str:
    """A short digest of a model call's input (the same request asked again has the same)."""
    text = json.dumps(messages, default=str, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@lru_cache(maxsize=1)
def _sdk_client() -> Any:
    import openai

    return openai.OpenAI(api_key="scripted", base_url=_URL.rsplit("/chat/", 1)[0], max_retries=0)


def openai_error(planted: PlantedModelFault) -> Exception:
    """The exception the ``openai`` SDK raises for ``planted``'s answer, built by the SDK's own
    status mapping (``RateLimitError`` for a 429, ``InternalServerError`` for a 5xx, ...)."""
    import httpx
    import openai

    request = httpx.Request("POST", _URL)
    if planted.mode == STREAM_CUT or planted.status is None:
        return openai.APIConnectionError(request=request)
    response = httpx.Response(
        planted.status, headers=dict(planted.headers), json=planted.body, request=request
    )
    error: Exception = _sdk_client()._make_status_error_from_response(response)
    return error
