"""The callbacks LangChain calls on ``HBEvalCallbackHandler``: record now, or log to record later.

A handler nothing watches live (it made its own monitor; no sink, no directive or halt callback,
not strict; see ``HBEvalCallbackHandler``) logs each callback: an append of its
arguments and both clocks, which is all the agent's hot path pays. The log is recorded, in order
and as of when each callback came (``BaseRecorder.flush_log``), the moment anything reads what
it would have changed: ``events``, ``errors``, ``first_error``; reading ``monitor``, or anything
recording from outside the callbacks (a fault wrapper, a tool hook, ``emit``), records the log
and stops logging for good, since whoever holds the monitor may read it at any time; so does
setting a sink, a directive or halt callback, a trial or strict mode on the handler later.

What a callback hands over that may change before the log is recorded is copied when it is
logged: a graph's input and final answer text (the caller owns those dicts), the content object
of every message a model reads, a tool's argument dict. Messages whose content is not plain text,
completion-style models and every error callback stop logging: they are recorded at once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from uuid import UUID

from . import _convert
from ._runs import Said, plain_messages

if TYPE_CHECKING:
    from hbeval_core.capture._recorder import Logged

__all__ = ["LOG_LIMIT", "LoggedCallbacks"]

LOG_LIMIT = 1024
"""Logged callbacks a handler keeps at most before it records them. It bounds the memory of a
handler nobody reads for a long time (``instrument()`` in a server) and the pause of the callback
that records them: about 20 five-tool runs' worth, 7.5-10 ms measured on the 2-core machine."""


class _Watching:
    """A setting that, once set to a value, means someone watches each event as it comes: a
    handler that logs its callbacks records them and stops logging (a sink, a directive or halt
    callback, a battery trial or strict mode set after the handler was made)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    # No __get__: reading the setting is a plain read of the instance's own attribute.
    def __set__(self, obj: Any, value: Any) -> None:
        if value is not None and value is not False and obj.__dict__.get("_log") is not None:
            obj.stop_logging()
        obj.__dict__[self.name] = value


class LoggedCallbacks:
    """The framework-facing half of the handler: each callback logs, or records at once."""

    if not TYPE_CHECKING:
        on_event = _Watching()
        on_directive = _Watching()
        on_halt = _Watching()
        trial = _Watching()
        strict = _Watching()

    if TYPE_CHECKING:
        _log: deque[Logged] | None
        run_info: dict[str, Any]

        def stop_logging(self) -> None: ...
        def flush_log(self) -> None: ...
        def logged_late(self, log: deque[Logged]) -> None: ...
        def _clock(self) -> float: ...
        def _now(self) -> float: ...
        def _record_chain_start(self, *args: Any) -> None: ...
        def _record_chain_end(self, outputs: Any, run_id: UUID) -> None: ...
        def _record_chain_error(self, error: BaseException, run_id: UUID) -> None: ...
        def _record_chat_model_start(self, *args: Any) -> None: ...
        def _record_llm_start(self, *args: Any) -> None: ...
        def _record_llm_end(self, response: Any, run_id: UUID) -> None: ...
        def _record_llm_error(self, error: BaseException, run_id: UUID) -> None: ...
        def _record_tool_start(self, *args: Any) -> None: ...
        def _record_tool_end(self, output: Any, run_id: UUID) -> None: ...
        def _record_tool_error(self, error: BaseException, run_id: UUID) -> None: ...

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """A chain began: the graph root, a node, or a runnable inside a node."""
        log = self._log
        if log is None:
            self._record_chain_start(
                serialized, inputs, run_id, parent_run_id, tags, metadata, kwargs
            )
            return
        said: Any = inputs
        if parent_run_id is None and "input" not in self.run_info:
            try:
                said = Said(_convert.input_text(inputs))  # the caller may reuse its input dict
            except Exception:
                return self._unlogged(
                    self._record_chain_start,
                    serialized, inputs, run_id, parent_run_id, tags, metadata, kwargs,
                )  # fmt: skip
        log.append(
            (
                type(self)._record_chain_start,
                (serialized, said, run_id, parent_run_id, tags, metadata, kwargs),
                self._clock(),
                self._now(),
            )
        )
        if self._log is not log:
            self.logged_late(log)
        return None

    def _unlogged(self, record: Callable[..., None], *args: Any) -> None:
        """Stop logging and record this callback at once (what it hands over can't be copied:
        recording it now meets the same error in the same place as recording always did)."""
        self.stop_logging()
        record(*args)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A chain returned; spans and the run close here."""
        log = self._log
        if log is None:
            self._record_chain_end(outputs, run_id)
            return
        said: Any = outputs
        if kwargs.get("parent_run_id") is None:
            try:
                said = Said(_convert.last_ai_text(outputs))  # the graph's answer, as it is now
            except Exception:
                return self._unlogged(self._record_chain_end, outputs, run_id)
        log.append((type(self)._record_chain_end, (said, run_id), self._clock(), self._now()))
        if self._log is not log:
            self.logged_late(log)
        elif len(log) > LOG_LIMIT:
            self.flush_log()
        return None

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A chain raised; the span (and, at the top, the run) ends with status error."""
        if self._log is not None:
            self.stop_logging()
        self._record_chain_error(error, run_id)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[Any]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """A chat model call began: record every message the model is about to read."""
        inputs = messages[0] if messages else []
        log = self._log
        if log is not None:
            try:
                contents = _convert.message_contents(inputs)
                plain = plain_messages(inputs, contents)
            except Exception:
                plain = False
            if plain:
                log.append(
                    (
                        type(self)._record_chat_model_start,
                        (serialized, list(inputs), run_id, parent_run_id, metadata, kwargs,
                         contents),
                        self._clock(),
                        self._now(),
                    )
                )  # fmt: skip
                if self._log is not log:
                    self.logged_late(log)
                return
            self.stop_logging()
        self._record_chat_model_start(
            serialized, inputs, run_id, parent_run_id, metadata, kwargs, None
        )

    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """A completion-style model call began; each prompt counts as a user message."""
        if self._log is not None:
            self.stop_logging()
        self._record_llm_start(serialized, prompts, run_id, parent_run_id, metadata, kwargs)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A model call returned: its text, reasoning, tool calls and token usage."""
        log = self._log
        if log is None:
            self._record_llm_end(response, run_id)
            return
        log.append((type(self)._record_llm_end, (response, run_id), self._clock(), self._now()))
        if self._log is not log:
            self.logged_late(log)
        elif len(log) > LOG_LIMIT:
            self.flush_log()  # bare model calls (no chain around them) end nowhere else

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A model call raised."""
        if self._log is not None:
            self.stop_logging()
        self._record_llm_error(error, run_id)

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """A tool began. An enforced halt stops it here, before its body runs."""
        log = self._log
        if log is None:
            self._record_tool_start(
                serialized, input_str, run_id, parent_run_id, metadata, inputs, kwargs
            )
            return
        args: Any = inputs
        if type(inputs) is dict:
            args = dict(inputs)  # the tool may change the dict it was called with
        elif inputs is not None:
            try:
                args = _convert.tool_args(inputs, input_str)
            except Exception:
                return self._unlogged(
                    self._record_tool_start,
                    serialized, input_str, run_id, parent_run_id, metadata, inputs, kwargs,
                )  # fmt: skip
        log.append(
            (
                type(self)._record_tool_start,
                (serialized, input_str, run_id, parent_run_id, metadata, args, kwargs),
                self._clock(),
                self._now(),
            )
        )
        if self._log is not log:
            self.logged_late(log)
        return None

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A tool returned (a ToolMessage with status error still counts as an errored call)."""
        log = self._log
        if log is None:
            self._record_tool_end(output, run_id)
            return
        log.append((type(self)._record_tool_end, (output, run_id), self._clock(), self._now()))
        if self._log is not log:
            self.logged_late(log)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A tool raised."""
        if self._log is not None:
            self.stop_logging()
        self._record_tool_error(error, run_id)
