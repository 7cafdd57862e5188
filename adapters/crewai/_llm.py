"""A delegating ``BaseLLM`` that records every model call an agent makes, on both tool paths.

A custom ``BaseLLM`` emits no CrewAI model events, and CrewAI skips ``after_llm_call`` hooks for
native tool-call replies, so hooks alone cannot see every model turn. ``RecordingLLM`` wraps the
agent's own LLM: it forwards ``call`` / ``acall`` (and the capability questions CrewAI asks) to
it unchanged and tells the recorder what went in and what came out. ``wrap_agent`` swaps it in
for the block of one capture and ``unwrap_agent`` puts the user's object back.

Internals touched (contract-tested in tests/adapters/crewai/test_crewai_contract.py): ``BaseLLM``'s call
signature; ``_crewai_rate_limit_wrapped`` (so CrewAI does not wrap our forwarding ``call`` in a
second retry loop around the inner LLM's own); ``call_stop_override`` and ``stop_sequences``
(the per-call stop words CrewAI sets on the LLM it calls, which we pass on to the inner LLM).
"""

from __future__ import annotations

import threading
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from pydantic import PrivateAttr

from crewai.llms.base_llm import BaseLLM, call_stop_override
from hbeval_core.events import Usage

if TYPE_CHECKING:
    from ._recorder import CrewAIRecorder

__all__ = ["RecordingLLM", "unwrap_agent", "wrap_agent"]


def usage_totals(llm: Any) -> tuple[int, int, int] | None:
    """``(requests, prompt tokens, completion tokens)`` the LLM has counted in its lifetime
    (``get_token_usage_summary``: CrewAI's native providers add each response's usage)."""
    try:
        summary = llm.get_token_usage_summary()
        totals = (
            summary.successful_requests,
            summary.prompt_tokens,
            summary.completion_tokens,
        )
    except Exception:
        return None
    return totals if all(type(n) is int for n in totals) else None


def call_usage(
    before: tuple[int, int, int] | None, after: tuple[int, int, int] | None
) -> Usage | None:
    """The usage of the one call between two ``usage_totals`` snapshots, as CrewAI itself
    scopes it; None unless exactly one response was counted in between (an LLM that counts
    nothing, a call that overlapped another on the same LLM)."""
    if before is None or after is None or after[0] - before[0] != 1:
        return None
    prompt, completion = after[1] - before[1], after[2] - before[2]
    if prompt < 0 or completion < 0:
        return None
    return Usage(input_tokens=prompt, output_tokens=completion)


# BaseLLM fields copied from the inner LLM so CrewAI reads the same settings off the proxy.
_COPIED = ("temperature", "stop", "provider", "is_litellm", "stream", "max_tokens", "api_key")


def _forward_call(
    self: RecordingLLM,
    messages: Any,
    tools: Any = None,
    callbacks: Any = None,
    available_functions: Any = None,
    from_task: Any = None,
    from_agent: Any = None,
    response_model: Any = None,
) -> Any:
    inner = self._inner
    token = self._recorder.model_start(self, messages, tools, from_task, from_agent)
    before = usage_totals(inner)
    try:
        with self._stops_for(inner):
            answer = inner.call(
                messages,
                tools=tools,
                callbacks=callbacks,
                available_functions=available_functions,
                from_task=from_task,
                from_agent=from_agent,
                response_model=response_model,
            )
    except BaseException as exc:
        self._recorder.model_error(token, exc)
        raise
    self._recorder.model_end(token, answer, call_usage(before, usage_totals(inner)))
    return answer


async def _forward_acall(
    self: RecordingLLM,
    messages: Any,
    tools: Any = None,
    callbacks: Any = None,
    available_functions: Any = None,
    from_task: Any = None,
    from_agent: Any = None,
    response_model: Any = None,
) -> Any:
    inner = self._inner
    token = self._recorder.model_start(self, messages, tools, from_task, from_agent)
    before = usage_totals(inner)
    try:
        with self._stops_for(inner):
            answer = await inner.acall(
                messages,
                tools=tools,
                callbacks=callbacks,
                available_functions=available_functions,
                from_task=from_task,
                from_agent=from_agent,
                response_model=response_model,
            )
    except BaseException as exc:
        self._recorder.model_error(token, exc)
        raise
    self._recorder.model_end(token, answer, call_usage(before, usage_totals(inner)))
    return answer


# The inner LLM's own call already runs under CrewAI's rate-limit retry; marking ours as wrapped
# keeps BaseLLM.__init_subclass__ from nesting a second retry loop around it.
_forward_call._crewai_rate_limit_wrapped = True  # type: ignore[attr-defined]
_forward_acall._crewai_rate_limit_wrapped = True  # type: ignore[attr-defined]


class RecordingLLM(BaseLLM):
    """Forwards every call to the agent's own LLM and records it (hbeval's model-call capture)."""

    llm_type: str = "hbeval-recording"
    _inner: Any = PrivateAttr(default=None)
    _recorder: Any = PrivateAttr(default=None)

    call = _forward_call
    acall = _forward_acall

    @classmethod
    def around(cls, inner: BaseLLM, recorder: CrewAIRecorder) -> RecordingLLM:
        """A proxy of ``inner`` reporting to ``recorder``."""
        fields: dict[str, Any] = {"model": getattr(inner, "model", None) or "unknown"}
        for name in _COPIED:
            if hasattr(inner, name):
                fields[name] = getattr(inner, name)
        proxy = cls(**fields)
        proxy._inner = inner
        proxy._recorder = recorder
        return proxy

    @property
    def inner(self) -> BaseLLM:
        """The LLM this proxy forwards to."""
        return self._inner  # type: ignore[no-any-return]

    def _stops_for(self, inner: Any) -> Any:
        """Pass the stop words CrewAI set for this call on the proxy to the inner LLM."""
        stops = self.stop_sequences
        if isinstance(inner, BaseLLM) and stops != list(inner.stop):
            return call_stop_override(inner, stops)
        return nullcontext()

    def supports_function_calling(self) -> bool:
        """Whatever the inner LLM says (this decides CrewAI's tool path)."""
        fn = getattr(self._inner, "supports_function_calling", None)
        return bool(fn()) if callable(fn) else False

    def supports_stop_words(self) -> bool:
        """Whatever the inner LLM says."""
        return bool(self._inner.supports_stop_words())

    def get_context_window_size(self) -> int:
        """Whatever the inner LLM says."""
        return int(self._inner.get_context_window_size())

    def supports_multimodal(self) -> bool:
        """Whatever the inner LLM says."""
        return bool(self._inner.supports_multimodal())

    def get_input_tokens_count(
        self, messages: Any, tools: Any = None, response_model: Any = None
    ) -> int:
        """The inner LLM's estimate (a provider may count natively)."""
        return int(self._inner.get_input_tokens_count(messages, tools, response_model))

    def get_token_usage_summary(self) -> Any:
        """The inner LLM's usage (crew usage metrics read it off the agent's LLM)."""
        return self._inner.get_token_usage_summary()

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)  # type: ignore[misc]
        except AttributeError:
            private = self.__pydantic_private__ or {}
            inner = private.get("_inner")
            if inner is None or name.startswith("__"):
                raise
            return getattr(inner, name)


_wrap_lock = threading.Lock()


def wrap_agent(agent: Any, recorder: CrewAIRecorder) -> Any | None:
    """Swap ``agent.llm`` for a recording proxy; returns the original LLM, or None if not wrapped.

    Agents without a ``BaseLLM`` (none set yet) are left alone. An LLM that is already a proxy
    is re-bound to a new proxy of its inner LLM, so nested captures each see their own calls.
    """
    with _wrap_lock:
        llm = getattr(agent, "llm", None)
        if not isinstance(llm, BaseLLM):
            return None
        inner = llm.inner if isinstance(llm, RecordingLLM) else llm
        agent.llm = RecordingLLM.around(inner, recorder)
        return llm


def unwrap_agent(agent: Any, original: Any) -> None:
    """Put ``original`` back on ``agent.llm``."""
    with _wrap_lock:
        agent.llm = original
