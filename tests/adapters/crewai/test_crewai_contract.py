"""Contract tests: one named test per CrewAI internal or behaviour the adapter relies on.

When CrewAI changes one of these, exactly one test here fails and names it, instead of a user's
run going quietly wrong. The list matches "Internals touched" in adapters/crewai/README.md.
"""

from __future__ import annotations

import inspect
from typing import Any

from tests.adapters.crewai.test_crewai_fixtures import ScriptedLLM, ran_tools, scripted_crew

QUESTION = {"question": "Look up order A1, then add 2 and 3."}


def _kickoff_with(hooks: dict[str, Any], *, native: bool = False, crew: Any = None) -> Any:
    from crewai.hooks.dispatch import InterceptionPoint, register_scoped, scoped_hooks

    crew = crew if crew is not None else scripted_crew(native=native)
    with scoped_hooks():
        for point, fn in hooks.items():
            register_scoped(InterceptionPoint[point], fn)
        crew.kickoff(inputs=QUESTION)
    return crew


def test_contract_scoped_hooks_api() -> None:
    import importlib

    dispatch = importlib.import_module("crewai.hooks.dispatch")
    for name in (
        "scoped_hooks",
        "register_scoped",
        "get_scoped_hooks",
        "register",
        "unregister",
        "get_hooks",
    ):
        assert callable(getattr(dispatch, name)), name
    for point in (
        "EXECUTION_START",
        "EXECUTION_END",
        "PRE_STEP",
        "POST_STEP",
        "PRE_MODEL_CALL",
        "PRE_TOOL_CALL",
        "POST_TOOL_CALL",
    ):
        assert point in dispatch.InterceptionPoint.__members__, point
    assert list(inspect.signature(dispatch.scoped_hooks).parameters) == ["hooks"]


def test_contract_scoped_hooks_are_resolved_at_call_time_and_discarded() -> None:
    from crewai.hooks.dispatch import InterceptionPoint, get_scoped_hooks

    seen: list[str] = []
    crew = scripted_crew()
    crew.kickoff(inputs=QUESTION)  # executors exist before the scoped hooks are registered
    _kickoff_with({"PRE_MODEL_CALL": lambda ctx: seen.append("model")}, crew=crew)
    assert seen == ["model"] * 3
    assert get_scoped_hooks(InterceptionPoint.PRE_MODEL_CALL) == []


def test_contract_pre_tool_false_blocks_and_post_tool_str_replaces() -> None:
    for native in (False, True):
        seen: list[Any] = []

        def post(ctx: Any, seen: list[Any] = seen) -> Any:
            seen.append(ctx.tool_result)
            return "REPLACED" if ctx.tool_name == "lookup" else None

        crew = _kickoff_with(
            {
                "PRE_TOOL_CALL": lambda ctx: False if ctx.tool_name == "lookup" else None,
                "POST_TOOL_CALL": post,
            },
            native=native,
        )
        assert ran_tools(crew) == ["add"]
        assert seen[0].startswith("Tool execution blocked by hook.")
        second_input = crew.agents[0].llm.calls[1]
        assert any("REPLACED" in str(m.get("content")) for m in second_input)


def test_contract_tool_context_fields_and_shared_tool_input() -> None:
    for native in (False, True):
        pre: list[Any] = []
        post: list[Any] = []
        _kickoff_with({"PRE_TOOL_CALL": pre.append, "POST_TOOL_CALL": post.append}, native=native)
        for ctx in pre + post:
            for name in (
                "tool_name",
                "tool_input",
                "tool",
                "agent",
                "task",
                "crew",
                "tool_result",
                "raw_tool_result",
            ):
                assert hasattr(ctx, name), name
        # The pre and post contexts of one call share the tool_input dict (how calls are paired).
        assert [id(c.tool_input) for c in pre] == [id(c.tool_input) for c in post]
        assert post[1].raw_tool_result == 5 and post[1].tool_result == "5"


def test_contract_hook_exceptions_are_swallowed() -> None:
    def boom(ctx: Any) -> Any:
        raise RuntimeError("a broken hook")

    crew = _kickoff_with({"PRE_TOOL_CALL": boom, "POST_TOOL_CALL": boom})
    assert ran_tools(crew) == ["lookup", "add"]


def test_contract_model_hook_context_messages_are_live_and_reach_the_model() -> None:
    seen: list[Any] = []

    def pre(ctx: Any) -> None:
        seen.append((ctx.iterations, ctx.agent, ctx.task, ctx.executor, ctx.llm))
        if ctx.iterations == 0:
            ctx.messages.insert(1, {"role": "user", "content": "MEMORY-NOTE"})

    for native in (False, True):
        seen.clear()
        crew = _kickoff_with({"PRE_MODEL_CALL": pre}, native=native)
        assert [s[0] for s in seen] == [0, 1, 2]
        assert seen[0][1] is crew.agents[0]
        assert any(m.get("content") == "MEMORY-NOTE" for m in crew.agents[0].llm.calls[0])


def test_contract_step_and_execution_contexts() -> None:
    seen: dict[str, list[Any]] = {"start": [], "end": [], "pre": [], "post": []}
    crew = _kickoff_with(
        {
            "EXECUTION_START": seen["start"].append,
            "EXECUTION_END": seen["end"].append,
            "PRE_STEP": seen["pre"].append,
            "POST_STEP": seen["post"].append,
        }
    )
    assert [c.crew for c in seen["start"]] == [crew]
    assert seen["end"][0].crew is crew and seen["end"][0].status == "completed"
    assert hasattr(seen["end"][0], "error") and seen["end"][0].output is not None
    for ctx in seen["pre"] + seen["post"]:
        assert ctx.kind == "task" and ctx.task is crew.tasks[0] and ctx.agent is crew.agents[0]


def test_contract_execution_end_fires_on_a_failed_kickoff() -> None:
    ends: list[Any] = []

    def fail(ctx: Any) -> None:
        raise KeyboardInterrupt  # not swallowed by hooks: aborts the model call

    crew = scripted_crew()
    try:
        _kickoff_with({"EXECUTION_END": ends.append}, crew=crew)
        ends.clear()
        from crewai.hooks.dispatch import InterceptionPoint, register_scoped, scoped_hooks

        with scoped_hooks():
            register_scoped(InterceptionPoint.EXECUTION_END, ends.append)
            crew.agents[0].llm.script = []  # the model now raises IndexError
            try:
                crew.kickoff(inputs=QUESTION)
            except Exception:
                pass
    finally:
        pass
    assert ends and ends[-1].status == "failed" and ends[-1].error is not None


def test_contract_model_call_errors_leave_kickoff() -> None:
    from hbeval_core.live.monitor import SafeHaltError

    class Raising(ScriptedLLM):
        def call(self, *args: Any, **kwargs: Any) -> Any:
            raise SafeHaltError({"reason": "stop"})

    crew = scripted_crew()
    crew.agents[0].llm = Raising(model="raising")
    try:
        crew.kickoff(inputs=QUESTION)
    except SafeHaltError:
        return
    raise AssertionError("an exception raised by the LLM did not leave kickoff")


def test_contract_hook_aborted_from_pre_model_call_leaves_kickoff() -> None:
    from crewai.hooks import HookAborted

    def deny(ctx: Any) -> None:
        raise HookAborted("stop", source="hbeval")

    try:
        _kickoff_with({"PRE_MODEL_CALL": deny})
    except HookAborted:
        return
    raise AssertionError("HookAborted raised in PRE_MODEL_CALL did not leave kickoff")


def test_contract_base_llm_call_signature() -> None:
    from crewai.llms.base_llm import BaseLLM

    params = list(inspect.signature(BaseLLM.call).parameters)
    assert params == [
        "self",
        "messages",
        "tools",
        "callbacks",
        "available_functions",
        "from_task",
        "from_agent",
        "response_model",
    ]
    assert list(inspect.signature(BaseLLM.acall).parameters) == params


def test_contract_rate_limit_wrapper_honours_the_wrapped_marker() -> None:
    from hbeval_crewai._llm import RecordingLLM, _forward_call

    # BaseLLM.__init_subclass__ skips methods marked _crewai_rate_limit_wrapped.
    assert RecordingLLM.__dict__["call"] is _forward_call
    assert _forward_call._crewai_rate_limit_wrapped is True  # type: ignore[attr-defined]

    class Plain(ScriptedLLM):
        def call(self, *args: Any, **kwargs: Any) -> Any:
            return "x"

    assert getattr(Plain.__dict__["call"], "_crewai_rate_limit_wrapped", False) is True


def test_contract_call_stop_override_and_stop_sequences() -> None:
    from crewai.llms.base_llm import call_stop_override

    llm = ScriptedLLM(model="m")
    assert llm.stop_sequences == []
    with call_stop_override(llm, ["Observation:"]):
        assert llm.stop_sequences == ["Observation:"]
    assert llm.stop_sequences == []


def test_contract_native_path_is_chosen_by_supports_function_calling() -> None:
    from crewai.utilities.agent_utils import check_native_tool_support

    assert check_native_tool_support(ScriptedLLM(model="m", native=True), [object()]) is True
    assert check_native_tool_support(ScriptedLLM(model="m", native=False), [object()]) is False


def test_contract_agent_llm_is_assignable_and_read_per_task() -> None:
    from hbeval_crewai._llm import RecordingLLM

    crew = scripted_crew()
    crew.kickoff(inputs=QUESTION)
    original = crew.agents[0].llm
    seen: list[Any] = []

    class Recorder:
        def model_start(self, *args: Any) -> Any:
            seen.append(args[0])
            return None

        def model_end(self, *args: Any) -> None: ...

        def model_error(self, *args: Any) -> None: ...

    proxy = RecordingLLM.around(original, Recorder())  # type: ignore[arg-type]
    crew.agents[0].llm = proxy
    assert crew.agents[0].llm is proxy  # no validator replaced it
    crew.kickoff(inputs=QUESTION)
    assert len(seen) == 3
    crew.agents[0].llm = original
    assert crew.agents[0].llm is original


def test_contract_crew_usage_metrics_read_the_agents_llm() -> None:
    crew = scripted_crew()
    crew.kickoff(inputs=QUESTION)
    assert crew.usage_metrics is not None


def test_contract_react_observation_is_appended_to_the_reply_text() -> None:
    from hbeval_crewai._convert import OBSERVATION

    crew = _kickoff_with({})
    second = crew.agents[0].llm.calls[1]
    replies = [m for m in second if m.get("role") == "assistant"]
    first_reply = crew.agents[0].llm.script[0]
    assert replies[0]["content"].startswith(f"Thought: {first_reply[0]}")
    assert OBSERVATION in replies[0]["content"]


def test_contract_crewai_error_texts() -> None:
    from crewai.utilities.i18n import I18N_DEFAULT

    from hbeval_crewai._convert import crewai_error_kind
    from hbeval_crewai._convert import error_markers as _markers

    assert I18N_DEFAULT.errors("tool_usage_exception").startswith(
        "I encountered an error while trying to use the tool."
    )
    assert I18N_DEFAULT.errors("task_repeated_usage").startswith("I tried reusing the same input")
    assert len(_markers()) == 2
    assert crewai_error_kind("Error executing tool: boom") == "error"
    assert crewai_error_kind("Tool execution blocked by hook. Tool: x") == "blocked"
    # The native path's error text, as CrewAI writes it for a raising tool.
    from crewai.agents.agent_executor import AgentExecutor

    source = inspect.getsource(AgentExecutor._execute_single_native_tool_call)
    assert 'f"Error executing tool: {e}"' in source


def test_contract_sanitize_tool_name() -> None:
    from crewai.utilities.string_utils import sanitize_tool_name

    assert sanitize_tool_name("Lookup Order") == "lookup_order"
    assert sanitize_tool_name("add") == "add"


def test_contract_crew_manager_agent_attribute() -> None:
    crew = scripted_crew()
    assert hasattr(crew, "manager_agent") and crew.manager_agent is None
    assert isinstance(crew.agents, list)
