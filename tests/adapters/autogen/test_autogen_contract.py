"""Contracts with AutoGen: the supported range, and every private attribute or behaviour we use.

Each test names the one thing it pins, so an AutoGen upgrade that moves it fails here, by name,
instead of in a user's run.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import CancellationToken
from autogen_core.memory import ListMemory, MemoryContent
from autogen_core.tools import StaticStreamWorkbench, ToolResult, ToolSchema, Workbench

from hbeval_autogen import (
    SUPPORTED,
    UnsupportedVersionError,
    _version,
    check_supported,
    instrument,
    is_instrumented,
    uninstrument,
)
from tests.adapters.autogen.test_autogen_fixtures import (
    hang_guard,
    replay_agent,
    run_async,
    scripted_agent,
)

__all__ = ["hang_guard"]

pytestmark = pytest.mark.usefixtures("hang_guard")

ROOT = Path(__file__).resolve().parents[3]


# ----------------------------------------------------------------------------------------------
# The supported range
# ----------------------------------------------------------------------------------------------
def test_supported_range_matches_the_pyproject_extra() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    extra = re.search(r"^autogen = \[(.*)\]$", text, re.MULTILINE)
    assert extra is not None
    for dist in _version.CHECKED_DISTRIBUTIONS:
        assert f'"{dist}{SUPPORTED}"' in extra.group(1), dist


def test_installed_autogen_is_in_the_supported_range() -> None:
    found = check_supported()
    assert set(found) == set(_version.CHECKED_DISTRIBUTIONS)


@pytest.mark.parametrize(
    ("version", "ok"),
    [("0.7.5", True), ("0.7.9", True), ("0.7.5rc1", False), ("0.7.4", False), ("0.8.0", False)],
)
def test_version_in_range(version: str, ok: bool) -> None:
    assert _version.version_in_range(version) is ok


def test_out_of_range_versions_are_refused_with_a_clear_message() -> None:
    with pytest.raises(UnsupportedVersionError, match=r"found autogen-core 0\.8\.1.*pip install"):
        check_supported({"autogen-agentchat": "0.7.5", "autogen-core": "0.8.1"})
    with pytest.raises(UnsupportedVersionError, match="not installed"):
        check_supported({"autogen-agentchat": None, "autogen-core": "0.7.5"})


def test_instrument_checks_the_version_before_patching(monkeypatch: pytest.MonkeyPatch) -> None:
    original = AssistantAgent.__dict__["on_messages_stream"]
    monkeypatch.setattr(
        _version,
        "installed_versions",
        lambda: {"autogen-agentchat": "0.9.0", "autogen-core": "0.9.0"},
    )
    with pytest.raises(UnsupportedVersionError, match=r"0\.9\.0"):
        instrument()
    assert not is_instrumented()
    assert AssistantAgent.__dict__["on_messages_stream"] is original
    instrument(check_version=False)
    uninstrument()
    assert AssistantAgent.__dict__["on_messages_stream"] is original


def test_the_package_imports_without_autogen() -> None:
    code = textwrap.dedent(
        """
        import sys
        for name in ("autogen_agentchat", "autogen_core", "autogen_ext"):
            sys.modules[name] = None  # hide the framework
        import hbeval_autogen
        from hbeval_autogen import SUPPORTED, AutoGenAdapter
        assert SUPPORTED == ">=0.7.5,<0.8"
        assert not any(m.startswith("autogen") for m in sys.modules if sys.modules[m] is not None)
        try:
            AutoGenAdapter().instrument()
        except hbeval_autogen.UnsupportedVersionError as exc:
            assert "pip install" in str(exc)
        else:
            raise SystemExit("instrument() should refuse without AutoGen")
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# ----------------------------------------------------------------------------------------------
# Private attributes, one test each
# ----------------------------------------------------------------------------------------------
class _Counting(Workbench):
    """A pass-through workbench that counts calls (not a StaticStreamWorkbench)."""

    def __init__(self, inner: Workbench) -> None:
        self.inner = inner
        self.calls: list[str] = []

    async def list_tools(self) -> list[ToolSchema]:
        return await self.inner.list_tools()

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> ToolResult:
        self.calls.append(name)
        return await self.inner.call_tool(name, arguments, cancellation_token, call_id)

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def reset(self) -> None: ...
    async def save_state(self) -> Mapping[str, Any]:
        return {}

    async def load_state(self, state: Mapping[str, Any]) -> None: ...


def test_contract_assistant_agent__workbench() -> None:
    """``agent._workbench`` is a list of Workbench, read at each turn, used for every tool call."""
    agent = replay_agent()
    assert isinstance(agent._workbench, list) and len(agent._workbench) == 1
    assert isinstance(agent._workbench[0], StaticStreamWorkbench)
    counting = _Counting(agent._workbench[0])
    agent._workbench = [counting]
    run_async(agent.run(task="go"))
    assert counting.calls == ["lookup", "add"]


def test_contract_assistant_agent__model_client() -> None:
    """``agent._model_client`` is the client given, read at each turn for every model call."""
    agent = replay_agent()
    inner = agent._model_client
    seen: list[int] = []

    class Spy:
        def __init__(self) -> None:
            self.model_info = inner.model_info

        async def create(self, messages: Any, **kwargs: Any) -> Any:
            seen.append(len(messages))
            return await inner.create(messages, **kwargs)

    agent._model_client = Spy()  # type: ignore[assignment]
    run_async(agent.run(task="go"))
    assert len(seen) == 3


def test_contract_assistant_agent__memory() -> None:
    """``agent._memory`` is None by default, a list when given, and queried at each turn."""
    assert replay_agent()._memory is None
    memory = ListMemory(
        memory_contents=[MemoryContent(content="remember me", mime_type="text/plain")]
    )
    agent = scripted_agent()
    agent._memory = [memory]
    run_async(agent.run(task="go"))
    first = agent._model_client.create_calls[0]["messages"]
    assert any("remember me" in str(m.content) for m in first)


def test_contract_assistant_agent_reads_its_attributes_once_per_turn() -> None:
    """Swapping attributes back mid-turn must not affect the turn (the hook restores early)."""
    source = inspect.getsource(AssistantAgent.on_messages_stream)
    for attr in ("self._workbench", "self._model_client", "self._memory"):
        assert f"= {attr}" in source, attr


def test_contract_on_messages_stream_is_where_every_run_enters() -> None:
    """``on_messages_stream(messages, cancellation_token)`` is defined on AssistantAgent itself,
    and ``run``, ``run_stream`` and teams all reach it."""
    assert "on_messages_stream" in AssistantAgent.__dict__
    params = list(inspect.signature(AssistantAgent.on_messages_stream).parameters)
    assert params == ["self", "messages", "cancellation_token"]
    from hbeval_autogen import capture

    team = RoundRobinGroupChat(
        [scripted_agent(name="x")], termination_condition=MaxMessageTermination(2)
    )
    with capture("r") as rec:
        run_async(team.run(task="go"))
    assert any(e.kind == "span_start" and e.scope == "agent" for e in rec.events)


def test_contract_static_stream_workbench_gets_the_streaming_call() -> None:
    """AssistantAgent streams tool calls only through ``StaticStreamWorkbench`` instances."""
    source = inspect.getsource(AssistantAgent._execute_tool_call)
    assert "isinstance(wb, StaticStreamWorkbench)" in source
    assert "call_tool_stream" in source


def test_contract_runtime_logs_handler_errors_to_autogen_core() -> None:
    """The runtime logs an agent's exception on the "autogen_core" logger (we mute RunAborted)."""
    from autogen_core import _single_threaded_agent_runtime as runtime

    assert runtime.logger.name == "autogen_core"


# ----------------------------------------------------------------------------------------------
# Upstream behaviours the design works around (if one is fixed, the workaround can go)
# ----------------------------------------------------------------------------------------------
class _Raising(_Counting):
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> ToolResult:
        raise RuntimeError("boom")


def test_upstream_a_raising_workbench_still_hangs_the_run() -> None:
    """Why our workbench never raises (microsoft/autogen #7956)."""
    agent = replay_agent()
    agent._workbench = [_Raising(agent._workbench[0])]

    async def bounded() -> bool:
        try:
            await asyncio.wait_for(agent.run(task="go"), 0.5)
        except asyncio.TimeoutError:
            return True
        except Exception:
            return False
        return False

    assert asyncio.run(bounded()), "fixed upstream: the never-raise rule may be relaxed"


def test_upstream_a_team_is_bound_to_the_loop_of_its_first_run() -> None:
    """Why a shared team runs on a home loop, not a fresh loop per trial.

    Each ``run_async`` is a new loop; a team reset between trials (as the adapter does) and run
    again on another loop fails once its output queue has waited on the first one.
    """
    team = RoundRobinGroupChat([scripted_agent()], termination_condition=MaxMessageTermination(2))
    run_async(team.run(task="go"))
    run_async(team.reset())
    with pytest.raises(RuntimeError, match="different event loop"):
        run_async(team.run(task="go"))
