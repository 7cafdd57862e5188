"""LangGraphAdapter as a battery target, the support-agent example, and import hygiene."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import HumanMessage

from hbeval_core.contract import Task
from hbeval_core.events import FaultInjected, RunStart, ToolStart
from hbeval_core.faults.plans import FaultPlan, FaultSpec
from hbeval_core.faults.runtime import FaultInjector
from hbeval_core.live.derive import derive_steps
from hbeval_langgraph import (
    HBEvalCallbackHandler,
    LangGraphAdapter,
    is_langgraph_target,
    resolve_graph,
    tool_faults,
)
from hbeval_langgraph.examples import FORBIDDEN_TOOL, careful, naive, tasks
from tests.adapters.langgraph.test_langgraph_fixtures import scripted_agent

ROOT = Path(__file__).resolve().parents[3]


def task(task_id: str) -> Task:
    return next(t for t in tasks if t.id == task_id)


def injection_plan() -> FaultPlan:
    spec = FaultSpec(id="inj", target="*", mode="prompt_injection", on_calls=(0,))
    return FaultPlan(id="adv", seed=1, faults=(spec,))


class TestDetection:
    def test_graphs_and_marked_factories_are_langgraph_targets(self) -> None:
        assert is_langgraph_target(scripted_agent())
        assert is_langgraph_target(careful) and is_langgraph_target(naive)
        assert not is_langgraph_target(lambda question: question)
        assert not is_langgraph_target(42)

    def test_registry_picks_the_adapter(self) -> None:
        from hbeval.runner.registry import detect_adapter, get_adapter, resolve_target

        assert detect_adapter(scripted_agent()) == "langgraph"
        assert isinstance(get_adapter("langgraph"), LangGraphAdapter)
        resolved = resolve_target(careful)
        assert (resolved.kind, resolved.adapter_kind) == ("factory", "langgraph")

    def test_resolve_graph(self) -> None:
        graph = scripted_agent()
        assert resolve_graph(graph) is graph
        assert resolve_graph(careful) is not resolve_graph(careful)  # fresh per call
        with pytest.raises(TypeError, match="must return a compiled LangGraph graph"):
            resolve_graph(lambda: 3)


class TestRunTrial:
    def test_question_in_final_state_out(self) -> None:
        result = LangGraphAdapter(strict=True).run_trial(
            careful(), task("order_status"), None, None
        )
        assert result.status == "ok"
        assert result.response_text is not None and "shipped" in result.response_text
        assert task("order_status").verify(result.final_state, result.events)  # type: ignore[misc]
        start = next(e for e in result.events if isinstance(e, RunStart))
        assert (start.task_id, start.framework, start.input) == (
            "order_status",
            "langgraph",
            task("order_status").question,
        )
        assert {e.run_id for e in result.events} == {"order_status"}
        assert result.metadata["usage"]["input_tokens"] > 0

    def test_factory_target(self) -> None:
        result = LangGraphAdapter().run_trial(naive, task("refund_policy"), None, None)
        assert result.status == "ok" and "30 days" in (result.response_text or "")

    def test_broken_factory_is_infra(self) -> None:
        def factory() -> Any:
            raise OSError("no disk")

        result = LangGraphAdapter().run_trial(factory, task("order_status"), None, None)
        assert result.status == "error" and result.infra and result.error_type == "OSError"

    def test_crash_is_cancelled_and_keeps_the_last_state(self) -> None:
        plan = FaultPlan(
            id="c", seed=1, faults=(FaultSpec(id="c", target="*", mode="crash", on_calls=(1,)),)
        )
        adapter = LangGraphAdapter()
        adapter.fault_hook(FaultInjector(plan, enabled=True))
        try:
            result = adapter.run_trial(careful(), task("refund_confirmed"), None, plan)
        finally:
            adapter.fault_hook(None)
        assert result.status == "cancelled" and result.error_type == "InjectedCrash"
        assert result.final_state is not None and len(result.final_state["messages"]) >= 3

    def test_careful_and_naive_differ_under_injection(self) -> None:
        outcomes: dict[str, Any] = {}
        for factory in (careful, naive):
            adapter = LangGraphAdapter()
            adapter.fault_hook(
                FaultInjector(injection_plan(), enabled=True, forbidden_tool=FORBIDDEN_TOOL)
            )
            try:
                outcomes[factory.__name__] = adapter.run_trial(
                    factory(), task("order_status"), None, None
                )
            finally:
                adapter.fault_hook(None)
        ran = {
            name: [e.tool for e in r.events if isinstance(e, ToolStart)]
            for name, r in outcomes.items()
        }
        assert FORBIDDEN_TOOL not in ran["careful"] and FORBIDDEN_TOOL in ran["naive"]
        assert "inject" in (outcomes["careful"].response_text or "")


class TestExampleAgents:
    @pytest.mark.parametrize("task_id", [t.id for t in tasks])
    def test_careful_passes_every_task_nominally(self, task_id: str) -> None:
        graph = careful()
        state = graph.invoke({"messages": [HumanMessage(task(task_id).question)]})
        assert task(task_id).verify(state, [])  # type: ignore[misc]

    def test_naive_refunds_without_asking(self) -> None:
        graph = naive()
        state = graph.invoke({"messages": [HumanMessage(task("refund_request").question)]})
        assert not task("refund_request").verify(state, [])  # type: ignore[misc]
        assert graph.hbeval_world["refunds"]

    def test_explained_calls_separate_the_temperaments(self) -> None:
        ti, explained = {}, {}
        for factory in (careful, naive):
            handler = HBEvalCallbackHandler(strict=True)
            factory().invoke(
                {"messages": [HumanMessage(task("refund_confirmed").question)]},
                config={"callbacks": [handler]},
            )
            ti[factory.__name__] = handler.monitor.metrics["ti"]
            steps = list(derive_steps(handler.events))
            explained[factory.__name__] = [s.explained for s in steps]
        # Both link every call to the reply that issued it; only the careful one says why.
        assert ti == {"careful": 5.0, "naive": 5.0}
        assert explained["careful"] and all(explained["careful"])
        assert explained["naive"] and not any(explained["naive"])

    def test_careful_replans_after_an_error_naive_repeats(self) -> None:
        plan = FaultPlan(
            id="e", seed=1, faults=(FaultSpec(id="e", target="*", mode="error_5xx", on_calls=(0,)),)
        )
        calls = {}
        for factory in (careful, naive):
            graph = factory()
            handler = HBEvalCallbackHandler(strict=True)
            with tool_faults(graph, FaultInjector(plan, enabled=True)):
                graph.invoke(
                    {"messages": [HumanMessage(task("order_status").question)]},
                    config={"callbacks": [handler]},
                )
            calls[factory.__name__] = [e.args for e in handler.events if isinstance(e, ToolStart)]
            assert len([e for e in handler.events if isinstance(e, FaultInjected)]) == 1
        assert calls["careful"][0] != calls["careful"][1]  # a different call: re-planned
        assert calls["naive"][0] == calls["naive"][1]  # the identical call again


def test_small_battery_through_run_battery() -> None:
    run_battery = pytest.importorskip("hbeval.runner.run").run_battery
    from hbeval_core.faults import Battery

    reports = {
        f.__name__: run_battery(
            None, f, tasks, Battery.hbeval(n_scenarios=6, seed=42), trials=1, seed=42
        ).to_dict()
        for f in (careful, naive)
    }
    for report in reports.values():
        assert report["run"]["trial_count"] == 6
        assert report["evidence"]["level"] == "E2"
    careful_m, naive_m = reports["careful"]["metrics"], reports["naive"]["metrics"]
    assert careful_m["ti"] == 5.0 and naive_m["ti"] == 5.0
    careful_t, naive_t = reports["careful"]["traceability"], reports["naive"]["traceability"]
    assert careful_t["explained_share"] == 1.0 and naive_t["explained_share"] == 0.0
    assert careful_t["unlinked"] == naive_t["unlinked"] == 0
    assert careful_m["frr"] > naive_m["frr"]


def run_py(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


def test_importing_the_adapter_loads_no_framework() -> None:
    proc = run_py(
        """
        import sys
        import hbeval_langgraph
        from hbeval_langgraph import SUPPORTED_VERSIONS
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("langgraph", "langchain", "langchain_core"))
        print(loaded)
        hbeval_langgraph.HBEvalCallbackHandler
        print("langchain_core" in sys.modules, "langgraph" in sys.modules)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "True False"]


def test_cli_battery_run_on_the_example(tmp_path: Path) -> None:
    pytest.importorskip("hbeval.cli._battery")
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hbeval.cli",
            "battery",
            "run",
            str(ROOT / "examples" / "langgraph_support_agent.py") + ":careful",
            "--trials",
            "1",
            "--scenarios",
            "6",
            "--db",
            str(tmp_path / "hb.db"),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    import json

    report = json.loads(out.read_text())
    assert report["run"]["trial_count"] == 6
