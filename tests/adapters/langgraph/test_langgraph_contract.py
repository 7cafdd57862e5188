"""Contract tests: the LangGraph / LangChain internals the adapter relies on, one test each.

When an upstream release changes one of these, exactly the named test fails, pointing at the
adapter code to revisit. Private attributes used: ``ToolNode._wrap_tool_call``,
``ToolNode._awrap_tool_call``, ``ToolNode.tools_by_name`` (read), ``graph.nodes[n].bound``
(read, and its instance ``invoke``/``ainvoke`` overridden by node faults),
``langchain_core.tracers.context._configure_hooks`` (read by tests only), and the
``BaseTool.run`` / ``BaseTool.arun`` path with ``BaseTool._filter_injected_args`` (the tool hook).
"""

from __future__ import annotations

import asyncio
import inspect
from contextvars import ContextVar
from typing import Annotated, Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId
from langgraph.prebuilt import ToolNode

from tests.adapters.langgraph.test_langgraph_fixtures import inputs, scripted_agent

_Stamp = Annotated[str, InjectedToolCallId]


def tool_node(graph: Any) -> Any:
    return graph.nodes["tools"].bound


def test_contract_graph_nodes_bound_is_the_tool_node() -> None:
    graph = scripted_agent()
    assert "tools" in graph.nodes
    assert isinstance(graph.nodes["tools"].bound, ToolNode)


def test_contract_graph_nodes_bound_instance_invoke_is_honoured() -> None:
    """node_faults shadows ``bound.invoke`` on the instance; the compiled graph must call it."""
    graph = scripted_agent()
    bound = graph.nodes["model"].bound
    original = bound.invoke
    seen: list[str] = []

    def spy(input: Any, config: Any = None, **kwargs: Any) -> Any:
        seen.append("model")
        return original(input, config, **kwargs)

    object.__setattr__(bound, "invoke", spy)
    try:
        graph.invoke(inputs())
    finally:
        del bound.__dict__["invoke"]
    assert seen == ["model", "model", "model"]


def test_contract_graph_nodes_bound_instance_ainvoke_is_honoured() -> None:
    graph = scripted_agent()
    bound = graph.nodes["model"].bound
    original = bound.ainvoke
    seen: list[str] = []

    async def spy(input: Any, config: Any = None, **kwargs: Any) -> Any:
        seen.append("model")
        return await original(input, config, **kwargs)

    object.__setattr__(bound, "ainvoke", spy)
    try:
        asyncio.run(graph.ainvoke(inputs()))
    finally:
        del bound.__dict__["ainvoke"]
    assert len(seen) == 3


def test_contract_toolnode_wrap_tool_call() -> None:
    """``_wrap_tool_call(request, execute)`` is read at call time and may short-circuit."""
    graph = scripted_agent()
    node = tool_node(graph)
    assert hasattr(node, "_wrap_tool_call") and node._wrap_tool_call is None
    seen: list[Any] = []

    def wrapper(request: Any, execute: Any) -> Any:
        seen.append(request)
        if request.tool_call["name"] == "lookup":
            return ToolMessage(
                content="short-circuited", tool_call_id=request.tool_call["id"], status="error"
            )
        return execute(request)

    node._wrap_tool_call = wrapper
    out = graph.invoke(inputs())
    assert graph.hbeval_calls == ["add"]
    assert [r.tool_call["name"] for r in seen] == ["lookup", "add"]
    request = seen[0]
    assert set(request.tool_call) >= {"name", "args", "id"}
    # The wrapper reads our handlers and the owning run from the request's config.
    assert "callbacks" in request.runtime.config
    contents = [m.content for m in out["messages"] if isinstance(m, ToolMessage)]
    assert contents[0] == "short-circuited"


def test_contract_toolnode_wrap_tool_call_sees_callback_manager() -> None:
    from hbeval_langgraph import HBEvalCallbackHandler

    graph = scripted_agent()
    node = tool_node(graph)
    found: list[Any] = []

    def wrapper(request: Any, execute: Any) -> Any:
        manager = request.runtime.config["callbacks"]
        found.append((manager.parent_run_id, list(manager.handlers)))
        return execute(request)

    node._wrap_tool_call = wrapper
    handler = HBEvalCallbackHandler(strict=True)
    graph.invoke(inputs(), config={"callbacks": [handler]})
    parent, handlers = found[0]
    assert parent is not None and handler in handlers
    tools_spans = {
        e.span_id for e in handler.events if e.kind == "span_start" and e.name == "tools"
    }
    assert str(parent) in tools_spans


def test_contract_toolnode_awrap_tool_call() -> None:
    graph = scripted_agent()
    node = tool_node(graph)
    assert hasattr(node, "_awrap_tool_call") and node._awrap_tool_call is None
    seen: list[str] = []

    async def awrapper(request: Any, execute: Any) -> Any:
        seen.append(request.tool_call["name"])
        return await execute(request)

    node._awrap_tool_call = awrapper
    asyncio.run(graph.ainvoke(inputs()))
    assert seen == ["lookup", "add"]


def test_contract_toolnode_sync_wrapper_serves_ainvoke() -> None:
    """With only ``_wrap_tool_call`` set, ainvoke runs it (so we patch only the sync route)."""
    graph = scripted_agent()
    node = tool_node(graph)
    seen: list[str] = []

    def wrapper(request: Any, execute: Any) -> Any:
        seen.append(request.tool_call["name"])
        return execute(request)

    node._wrap_tool_call = wrapper
    asyncio.run(graph.ainvoke(inputs()))
    assert seen == ["lookup", "add"]


def test_contract_toolnode_tools_by_name() -> None:
    node = tool_node(scripted_agent())
    tools = node.tools_by_name
    assert isinstance(tools, dict) and set(tools) == {"lookup", "add"}
    assert all(isinstance(t, BaseTool) for t in tools.values())


def test_contract_toolnode_default_error_handling_reraises() -> None:
    """create_agent's ToolNode re-raises non-validation errors: our crash and halt rely on it."""
    graph = scripted_agent()
    node = tool_node(graph)

    def wrapper(request: Any, execute: Any) -> Any:
        raise LookupError("from wrapper")

    node._wrap_tool_call = wrapper
    with pytest.raises(LookupError):
        graph.invoke(inputs())


def test_contract_tool_message_status() -> None:
    assert ToolMessage(content="x", tool_call_id="1").status == "success"
    assert ToolMessage(content="x", tool_call_id="1", status="error").status == "error"


def test_contract_configure_hook_attaches_context_var_handler() -> None:
    from langchain_core.tracers.context import register_configure_hook

    params = inspect.signature(register_configure_hook).parameters
    assert list(params)[:2] == ["context_var", "inheritable"]
    from hbeval_langgraph import capture

    with capture() as handler:
        scripted_agent().invoke(inputs())
    assert any(e.kind == "tool_end" for e in handler.events)


def test_contract_configure_hooks_list_is_a_list_of_tuples() -> None:
    """Tests check registration by reading this private list."""
    from langchain_core.tracers import context as lc_context

    hooks = lc_context._configure_hooks
    assert isinstance(hooks, list)
    assert all(isinstance(h, tuple) and isinstance(h[0], ContextVar) for h in hooks)


def test_contract_callback_signatures() -> None:
    """The keyword names our handler reads from LangChain's callbacks."""

    class Probe(BaseCallbackHandler):
        def __init__(self) -> None:
            self.tool_kwargs: dict[str, Any] = {}
            self.chain_kwargs: list[dict[str, Any]] = []
            self.end_outputs: list[Any] = []

        def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
            self.tool_kwargs = {"serialized": serialized, **kwargs}

        def on_tool_end(self, output: Any, **kwargs: Any) -> None:
            self.end_outputs.append(output)

        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            self.chain_kwargs.append(kwargs)

    probe = Probe()
    scripted_agent().invoke(inputs(), config={"callbacks": [probe]})
    kw = probe.tool_kwargs
    assert kw["serialized"]["name"] == "add" and kw["tool_call_id"] == "call_add_1"
    assert isinstance(kw["inputs"], dict) and "run_id" in kw and "parent_run_id" in kw
    assert all(isinstance(o, ToolMessage) for o in probe.end_outputs)
    nodes = [k for k in probe.chain_kwargs if (k.get("metadata") or {}).get("langgraph_node")]
    assert nodes and all(k["name"] == k["metadata"]["langgraph_node"] for k in nodes)
    assert all(any(t.startswith("graph:step:") for t in k["tags"]) for k in nodes)
    root = [k for k in probe.chain_kwargs if k.get("parent_run_id") is None]
    assert len(root) == 1


def test_contract_get_subgraphs() -> None:
    from langgraph.pregel import Pregel

    assert "recurse" in inspect.signature(Pregel.get_subgraphs).parameters
    graph = scripted_agent()
    assert list(graph.get_subgraphs()) == []


def test_contract_basetool_run_and_arun_signatures() -> None:
    """The BaseTool hook reads ``callbacks`` (4th after the input), ``run_id``, ``tool_call_id``."""
    from hbeval_langgraph._toolhook import _originals, install_tool_hook

    install_tool_hook()
    for name in ("run", "arun"):
        params = list(inspect.signature(_originals[name]).parameters.values())
        assert [p.name for p in params[1:6]] == [
            "tool_input",
            "verbose",
            "start_color",
            "color",
            "callbacks",
        ]
        names = {p.name: p.kind for p in params}
        for kw in ("run_id", "config", "tool_call_id"):
            assert names[kw] is inspect.Parameter.KEYWORD_ONLY


def test_contract_basetool_invoke_and_ainvoke_end_in_run_and_arun() -> None:
    from langchain_core.tools import StructuredTool

    seen: list[str] = []

    class Spy(StructuredTool):
        def run(self, *args: Any, **kwargs: Any) -> Any:
            seen.append("run")
            return super().run(*args, **kwargs)

        async def arun(self, *args: Any, **kwargs: Any) -> Any:
            seen.append("arun")
            return await super().arun(*args, **kwargs)

    def echo(x: str) -> str:
        """Echo."""
        return x

    async def aecho(x: str) -> str:
        """Echo."""
        return x

    # A sync-only tool's ainvoke runs ``run`` in an executor (context copied): hooked too.
    Spy.from_function(echo).invoke({"x": "a"})
    asyncio.run(Spy.from_function(echo).ainvoke({"x": "b"}))
    asyncio.run(Spy.from_function(echo, coroutine=aecho).ainvoke({"x": "c"}))
    assert seen == ["run", "run", "arun"]


def test_contract_basetool_filter_injected_args() -> None:
    """``_filter_injected_args`` drops arguments LangChain injects (not chosen by the model)."""
    from langchain_core.tools import tool

    @tool
    def stamped(x: str, tool_call_id: _Stamp) -> str:
        """Stamp."""
        return x

    assert stamped._filter_injected_args({"x": "a", "tool_call_id": "c1"}) == {"x": "a"}
