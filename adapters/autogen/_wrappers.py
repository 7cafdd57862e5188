"""Delegating wrappers the agent hook swaps into an ``AssistantAgent`` for one turn.

* ``HBEvalModelClient`` wraps ``agent._model_client``: every ``create`` / ``create_stream``
  becomes ``model_start`` (every input message, tool results included, so delivery receipts can
  be proven) and ``model_end`` (text, ``thought`` as reasoning, tool calls, usage).
* ``HBEvalWorkbench`` wraps each entry of ``agent._workbench``: every ``call_tool`` becomes
  ``tool_start`` / (``fault_injected``) / ``tool_end``, passing through the run's
  ``FaultInjector``. ``HBEvalStreamWorkbench`` is the same wrapper for the
  ``StaticStreamWorkbench`` AssistantAgent builds from ``tools=[...]``, so AutoGen keeps taking
  its streaming path.

**A workbench never raises.** An exception out of ``call_tool`` hangs AutoGen 0.7's tool loop
(``asyncio.gather`` fails before the end-of-stream sentinel is queued; upstream #7956). Injected
errors, a crash fault, an enforced halt, a spent budget, the inner workbench raising, and bugs of
our own all come back as ``ToolResult(is_error=True)``. A crash, a halt, a budget or a timeout
also aborts the run: the recorder tells the driver to cancel it, and the model-client wrapper
raises ``RunAborted`` if the agent reaches its next model call first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

from autogen_core import CancellationToken
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import (
    StaticStreamWorkbench,
    TextResultContent,
    Tool,
    ToolResult,
    ToolSchema,
    Workbench,
)
from pydantic import BaseModel

from hbeval_core.capture import ModelCallRecord
from hbeval_core.events import ToolEnd, ToolError, ToolStart
from hbeval_core.faults.boundary import faulted_call
from hbeval_core.faults.runtime import InjectedCrash, render_text

from . import _convert
from ._keys import ATTR_AGENT, ATTR_FINISH_REASON, ATTR_SYNTHETIC
from ._recorder import RunAborted, RunRecorder

__all__ = ["HBEvalModelClient", "HBEvalStreamWorkbench", "HBEvalWorkbench", "error_result"]


def error_result(name: str, text: str) -> ToolResult:
    """The ``ToolResult`` an agent receives for a failed call: ``is_error=True`` with ``text``."""
    return ToolResult(name=name, result=[TextResultContent(content=text)], is_error=True)


def _model_name(client: Any) -> str | None:
    """A label for the model behind ``client``: its model family, else its class name."""
    try:
        family = client.model_info.get("family")
    except Exception:
        family = None
    if isinstance(family, str) and family and family != "unknown":
        return family
    return type(client).__name__


# ----------------------------------------------------------------------------------------------
# Model client
# ----------------------------------------------------------------------------------------------
class HBEvalModelClient(ChatCompletionClient):
    """A ``ChatCompletionClient`` that records each call of the client it wraps.

    Everything else (usage, token counts, ``model_info``, any extra attribute) is delegated, so
    AutoGen sees the same model. After the run was aborted it raises ``RunAborted`` instead of
    calling the model: the model never reads a result the run should not have produced.
    """

    def __init__(
        self, inner: ChatCompletionClient, recorder: RunRecorder, agent: str, span_id: str | None
    ) -> None:
        self.inner = inner
        self.recorder = recorder
        self.agent = agent
        self.span_id = span_id
        self._model = _model_name(inner)

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes this class lacks: the wrapped client's extras.
        inner = self.__dict__.get("inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)

    def _begin(self, messages: Sequence[LLMMessage]) -> ModelCallRecord:
        rec = self.recorder
        if rec.aborted:
            raise RunAborted(rec.abort_reason or "run aborted")
        attrs = {ATTR_AGENT: self.agent}
        call = ModelCallRecord(rec.next_model_call_id(), rec.run_id, self.span_id, attrs)
        try:
            rec.count_turn()
            messages_read = rec.convert_messages(messages)
            rec.emit_model_start(call, model=self._model, messages=messages_read)
        except Exception as exc:
            rec.fail("model_start", exc)
        return call

    def _end(self, call: ModelCallRecord, result: Any, error: BaseException | None) -> None:
        rec = self.recorder
        try:
            if error is not None:
                rec.emit_model_end(call, error=error)
                return
            fields = _convert.model_end_fields(result)
            usage = fields["usage"]
            if usage is not None:
                rec.add_usage(usage.input_tokens, usage.output_tokens)
            finish = getattr(result, "finish_reason", None)
            rec.emit_model_end(call, attrs={**call.attrs, ATTR_FINISH_REASON: finish}, **fields)
        except Exception as exc:
            rec.fail("model_end", exc)

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Any = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        """Record the call, then delegate to the wrapped client's ``create``."""
        call = self._begin(messages)
        try:
            result = await self.inner.create(
                messages,
                tools=tools,
                tool_choice=tool_choice,
                json_output=json_output,
                extra_create_args=extra_create_args,
                cancellation_token=cancellation_token,
            )
        except BaseException as exc:
            self._end(call, None, exc)
            raise
        self._end(call, result, None)
        return result

    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Any = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        """Record the call, then relay the wrapped client's stream chunk by chunk."""
        call = self._begin(messages)
        final: CreateResult | None = None
        try:
            async for chunk in self.inner.create_stream(
                messages,
                tools=tools,
                tool_choice=tool_choice,
                json_output=json_output,
                extra_create_args=extra_create_args,
                cancellation_token=cancellation_token,
            ):
                if isinstance(chunk, CreateResult):
                    final = chunk
                yield chunk
        except BaseException as exc:
            self._end(call, None, exc)
            raise
        self._end(call, final, None)

    async def close(self) -> None:
        """Close the wrapped client."""
        await self.inner.close()

    def actual_usage(self) -> RequestUsage:
        """The wrapped client's usage of its last call."""
        return self.inner.actual_usage()

    def total_usage(self) -> RequestUsage:
        """The wrapped client's total usage."""
        return self.inner.total_usage()

    def count_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []
    ) -> int:
        """The wrapped client's token count."""
        return self.inner.count_tokens(messages, tools=tools)

    def remaining_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []
    ) -> int:
        """The wrapped client's remaining tokens."""
        return self.inner.remaining_tokens(messages, tools=tools)

    @property
    def capabilities(self) -> ModelCapabilities:
        """The wrapped client's (deprecated) capabilities."""
        return self.inner.capabilities

    @property
    def model_info(self) -> ModelInfo:
        """The wrapped client's model info (AutoGen reads ``function_calling`` and ``vision``)."""
        return self.inner.model_info

    def dump_component(self) -> Any:
        """Serialise the wrapped client: hbeval's wrapper is never persisted."""
        return self.inner.dump_component()


# ----------------------------------------------------------------------------------------------
# Workbench
# ----------------------------------------------------------------------------------------------
class _ToolFailed(Exception):
    """The real tool returned an error result (carried here so the injector sees a failure)."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.to_text())
        self.result = result


class HBEvalWorkbench(Workbench):
    """A ``Workbench`` that records and fault-injects every call of the workbench it wraps.

    ``list_tools``, ``start``, ``stop``, ``reset``, ``save_state`` and ``load_state`` are
    delegated unchanged. ``call_tool`` never raises (except for cancellation): see the module
    docstring.
    """

    def __init__(
        self, inner: Workbench, recorder: RunRecorder, agent: str, span_id: str | None
    ) -> None:
        self.inner = inner
        self.recorder = recorder
        self.agent = agent
        self.span_id = span_id

    def __getattr__(self, name: str) -> Any:
        inner = self.__dict__.get("inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)

    async def list_tools(self) -> list[ToolSchema]:
        """The wrapped workbench's tools."""
        return await self.inner.list_tools()

    async def start(self) -> None:
        """Start the wrapped workbench."""
        await self.inner.start()

    async def stop(self) -> None:
        """Stop the wrapped workbench."""
        await self.inner.stop()

    async def reset(self) -> None:
        """Reset the wrapped workbench."""
        await self.inner.reset()

    async def save_state(self) -> Mapping[str, Any]:
        """The wrapped workbench's state."""
        return await self.inner.save_state()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Load state into the wrapped workbench."""
        await self.inner.load_state(state)

    def dump_component(self) -> Any:
        """Serialise the wrapped workbench: hbeval's wrapper is never persisted."""
        return self.inner.dump_component()

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> ToolResult:
        """Run one tool call under the run's recorder and injector; never raises."""
        return await self._guarded(name, arguments, cancellation_token, call_id, None)

    async def call_tool_stream(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> AsyncGenerator[Any | ToolResult, None]:
        """Streaming twin of ``call_tool``: the inner stream's events, then the (faulted) result.

        Intermediate events are relayed once the call has finished (the injector needs the
        whole call before it can decide what the agent receives).
        """
        relayed: list[Any] = []
        result = await self._guarded(name, arguments, cancellation_token, call_id, relayed)
        for item in relayed:
            yield item
        yield result

    # -- internals -----------------------------------------------------------------------------
    async def _guarded(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        token: CancellationToken | None,
        call_id: str | None,
        relayed: list[Any] | None,
    ) -> ToolResult:
        try:
            return await self._call(name, arguments, token, call_id, relayed)
        except Exception as exc:
            # Our own bug (or something exotic): an error result, because raising hangs the run.
            self.recorder.note("workbench", exc)
            return error_result(name, f"{type(exc).__name__}: {exc}")

    async def _real(
        self,
        name: str,
        arguments: Mapping[str, Any],
        token: CancellationToken | None,
        call_id: str,
        relayed: list[Any] | None,
    ) -> ToolResult:
        """Call the wrapped workbench; its exceptions become error results."""
        inner = self.inner
        try:
            stream = getattr(inner, "call_tool_stream", None)
            if relayed is not None and callable(stream):
                final: ToolResult | None = None
                async for item in stream(
                    name=name, arguments=arguments, cancellation_token=token, call_id=call_id
                ):
                    if isinstance(item, ToolResult):
                        final = item
                    else:
                        relayed.append(item)
                if final is None:
                    return error_result(name, f"Error: tool '{name}' streamed no result")
                return final
            return await inner.call_tool(
                name=name, arguments=arguments, cancellation_token=token, call_id=call_id
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return error_result(name, f"{type(exc).__name__}: {exc}")

    def _start(self, call_id: str, name: str, args: Mapping[str, Any]) -> float:
        self.recorder.reported_calls.add(call_id)
        self.recorder.emit(
            ToolStart,
            call_id=call_id,
            tool=name,
            args=_convert.jsonable(dict(args)),
            parent_id=self.span_id,
            attrs={ATTR_AGENT: self.agent},
        )
        return time.perf_counter()

    def _end(
        self, call_id: str, name: str, t0: float, text: str, *, error: bool, synthetic: bool
    ) -> None:
        attrs: dict[str, Any] = {ATTR_AGENT: self.agent}
        if synthetic:
            attrs[ATTR_SYNTHETIC] = True
        self.recorder.emit(
            ToolEnd,
            call_id=call_id,
            tool=name,
            result=text,
            status="error" if error else "ok",
            latency_ms=(time.perf_counter() - t0) * 1000.0,
            parent_id=self.span_id,
            attrs=attrs,
        )

    async def _call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        token: CancellationToken | None,
        call_id: str | None,
        relayed: list[Any] | None,
    ) -> ToolResult:
        rec = self.recorder
        args: Mapping[str, Any] = arguments or {}
        cid = call_id or rec.fallback_call_id()
        blocked = rec.tool_boundary(name)
        if blocked is not None:
            # No tool runs after an abort; the stream fallback must not report it either.
            rec.reported_calls.add(cid)
            return error_result(name, blocked)
        t0 = self._start(cid, name, args)
        injector = rec.injector
        if injector is None or not injector.enabled or injector.plan is None:
            result = await self._real(name, args, token, cid, relayed)
            self._end(cid, name, t0, result.to_text(), error=result.is_error, synthetic=False)
            return result
        before = sum(1 for e in list(injector.events) if e.call_id == cid)
        holder: dict[str, Any] = {}

        async def real_call() -> str:
            result = await self._real(name, args, token, cid, relayed)
            holder["result"] = result
            if result.is_error:
                raise _ToolFailed(result)
            text = result.to_text()
            holder["text"] = text
            return text

        try:
            with faulted_call():  # the tool's own run_json hook lets this call through
                outcome = await injector.arun_call(name, dict(args), cid, real_call)
        except InjectedCrash as crash:
            rec.emit_fault(crash.fault)
            text = str(crash) or f"InjectedCrash: tool {name!r} crashed"
            rec.emit(
                ToolError,
                call_id=cid,
                tool=name,
                error=text,
                error_type=type(crash).__name__,
                latency_ms=(time.perf_counter() - t0) * 1000.0,
                parent_id=self.span_id,
                attrs={ATTR_AGENT: self.agent, ATTR_SYNTHETIC: True},
            )
            # The tool "raised out": the run is over. Cancel it instead of raising here.
            rec.abort_by(crash, text)
            return error_result(name, text)
        except _ToolFailed as failed:
            mine = [e for e in list(injector.events) if e.call_id == cid]
            if len(mine) > before:
                rec.emit_fault(mine[-1])
            self._end(cid, name, t0, failed.result.to_text(), error=True, synthetic=False)
            return failed.result
        rec.emit_fault(outcome.fault)
        if outcome.error is not None:
            self._end(cid, name, t0, outcome.error, error=True, synthetic=not outcome.called_real)
            return error_result(name, outcome.error)
        if "text" in holder and outcome.result is holder["text"]:
            self._end(cid, name, t0, holder["text"], error=False, synthetic=False)
            return holder["result"]  # type: ignore[no-any-return]
        text = render_text(outcome.result)
        self._end(cid, name, t0, text, error=False, synthetic=not outcome.called_real)
        return ToolResult(name=name, result=[TextResultContent(content=text)], is_error=False)


class HBEvalStreamWorkbench(HBEvalWorkbench, StaticStreamWorkbench):
    """``HBEvalWorkbench`` for a ``StaticStreamWorkbench``, so AutoGen keeps its streaming path.

    AssistantAgent streams tool calls only through workbenches that are
    ``StaticStreamWorkbench`` instances; this wrapper is one, but every method resolves to
    ``HBEvalWorkbench`` first and the static tool list is never used.
    """

    def __init__(
        self, inner: Workbench, recorder: RunRecorder, agent: str, span_id: str | None
    ) -> None:
        HBEvalWorkbench.__init__(self, inner, recorder, agent, span_id)


def wrap_workbench(
    inner: Workbench, recorder: RunRecorder, agent: str, span_id: str | None
) -> HBEvalWorkbench:
    """The right wrapper for ``inner`` (a stream wrapper for a ``StaticStreamWorkbench``)."""
    if isinstance(inner, StaticStreamWorkbench):
        return HBEvalStreamWorkbench(inner, recorder, agent, span_id)
    return HBEvalWorkbench(inner, recorder, agent, span_id)
