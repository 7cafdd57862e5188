"""Target kinds, the adapter registry, budgets and the run manifest."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from hbeval.runner.manifest import (
    ManifestError,
    ManifestMismatchError,
    RunManifest,
    check_expected_hashes,
    load_manifest,
)
from hbeval.runner.registry import (
    LAZY_ADAPTERS,
    TargetKindError,
    adapter_kinds,
    detect_adapter,
    detect_target_kind,
    register_adapter,
    resolve_target,
)
from hbeval_core.contract import BudgetExceeded, Budgets, TrialContext
from hbeval_plain import PlainAdapter
from hbeval_plain.examples import CarefulAgent, careful


def agent(question: str) -> str:
    return question


def factory() -> Any:
    return agent


def test_detect_target_kind() -> None:
    assert detect_target_kind(factory) == "factory"
    assert detect_target_kind(careful) == "factory"
    assert detect_target_kind(CarefulAgent) == "factory"  # a class with a no-arg constructor
    assert detect_target_kind(agent) == "agent"
    assert detect_target_kind(CarefulAgent()) == "agent"  # an instance is one shared object
    assert detect_target_kind(object()) == "agent"


def test_resolve_target_uses_the_probe_for_the_first_trial() -> None:
    built: list[Any] = []

    def counting() -> Any:
        built.append(object())
        return agent

    resolved = resolve_target(counting)
    assert resolved.kind == "factory" and resolved.isolated and resolved.adapter_kind == "plain"
    resolved.agent()
    assert len(built) == 1  # the agent built for detection served the first trial
    resolved.agent()
    assert len(built) == 2
    shared = resolve_target(agent)
    assert not shared.isolated and shared.agent() is agent


def test_target_kind_override_and_helpful_errors() -> None:
    def optional_arg_agent(question: str = "") -> str:
        return "answer"

    with pytest.raises(TargetKindError, match="--target-kind agent"):
        resolve_target(optional_arg_agent)
    forced = resolve_target(optional_arg_agent, target_kind="agent")
    assert forced.kind == "agent"
    assert resolve_target(agent, target_kind="plain").adapter_kind == "plain"
    with pytest.raises(TargetKindError, match="adapter kind"):
        resolve_target(agent, target_kind="nonsense")


def test_registered_detector_wins_and_lazy_kinds_need_no_import() -> None:
    class Special:
        def __call__(self, question: str) -> str:
            return "special"

    register_adapter("special-test", lambda obj: isinstance(obj, Special), PlainAdapter)
    try:
        assert detect_adapter(Special()) == "special-test"
        assert "special-test" in adapter_kinds()
        assert resolve_target(Special()).adapter_kind == "special-test"
    finally:
        from hbeval.runner import registry

        registry._REGISTRY.pop("special-test", None)

    # A class from a framework's modules is recognised by name, without importing anything.
    Fake = type("CompiledStateGraph", (), {"__module__": "langgraph.graph.state"})
    before = set(sys.modules)
    assert detect_adapter(Fake()) == "langgraph"
    assert "langgraph" not in {m.split(".")[0] for m in set(sys.modules) - before}
    assert set(LAZY_ADAPTERS) == {"langgraph", "crewai", "autogen"}
    with pytest.raises(ValueError):
        register_adapter("factory", bool, PlainAdapter)


def test_budgets_validate_and_stop_at_the_boundary() -> None:
    assert Budgets.from_mapping({"max_tool_calls": 2}).max_tool_calls == 2
    for bad in (
        {"max_tool_calls": 0},
        {"max_turns": 1.5},
        {"colour": 1},
        {"max_wall_seconds": True},
    ):
        with pytest.raises(ValueError):
            Budgets.from_mapping(bad)
    ctx = TrialContext(
        run_id="r", trial_run_id="r/x", trial_key="x", budgets=Budgets(max_tool_calls=2)
    )
    ctx.check_tool_boundary()
    ctx.check_tool_boundary()
    with pytest.raises(BudgetExceeded, match="max_tool_calls"):
        ctx.check_tool_boundary()
    with pytest.raises(BudgetExceeded):  # and at every later boundary
        ctx.check_tool_boundary()
    assert ctx.budget_record()["exceeded"] == "max_tool_calls"
    turns = TrialContext(
        run_id="r", trial_run_id="r/y", trial_key="y", budgets=Budgets(max_turns=1)
    )
    turns.count_turn()
    turns.check_tool_boundary()
    turns.count_turn()
    with pytest.raises(BudgetExceeded, match="max_turns"):
        turns.check_tool_boundary()


def test_manifest_hash_ignores_volatile_fields(tmp_path: Path) -> None:
    m = RunManifest(target="a.py:agent", seed=7, versions={"python": "3.11"})
    same = m.with_updates(
        created_at=123.0,
        run_id="x",
        concurrency=8,
        source="f.yaml",
        expected_hashes={"measurement_fingerprint": "ab"},
    )
    assert m.manifest_hash() == same.manifest_hash()
    assert m.manifest_hash() != m.with_updates(seed=8).manifest_hash()
    assert m.manifest_hash() != m.with_updates(budgets=Budgets(max_turns=3)).manifest_hash()
    path = tmp_path / "m.yaml"
    path.write_text(
        "target: a.py:agent\nseed: 7\nversions: {python: '3.11'}\n"
        "price_table: {gpt-x: {input_per_1k: 0.5, output_per_1k: 1.5}}\n",
        encoding="utf-8",
    )
    loaded = load_manifest(path)
    assert loaded.price_table == {"gpt-x": {"input_per_1k": 0.5, "output_per_1k": 1.5}}
    assert loaded.with_updates(price_table=None).manifest_hash() == m.manifest_hash()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("colour: red\n", "colour"),
        ("trials: three\n", "trials"),
        ("budgets: {max_turns: -1}\n", "budgets"),
        ("expected_hashes: {report: abc}\n", "expected_hashes"),
        ("price_table: {m: {per_token: 1}}\n", "price_table"),
    ],
)
def test_bad_manifest_names_the_field(tmp_path: Path, body: str, field: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(ManifestError, match=field):
        load_manifest(path)


def test_expected_hash_mismatch_is_refused() -> None:
    m = RunManifest(expected_hashes={"battery_fingerprint": "aaaa", "plan_fingerprint": "bbbb"})
    check_expected_hashes(m, {"battery_fingerprint": "aaaa", "plan_fingerprint": "bbbb"})
    with pytest.raises(ManifestMismatchError) as info:
        check_expected_hashes(m, {"battery_fingerprint": "aaaa", "plan_fingerprint": "cccc"})
    assert info.value.mismatches == {"plan_fingerprint": ("bbbb", "cccc")}


def test_an_adapter_may_be_given_by_its_kind_name() -> None:
    by_name = resolve_target(factory, adapter="plain")
    assert isinstance(by_name.adapter, PlainAdapter) and by_name.adapter_kind == "plain"
    with pytest.raises(TargetKindError, match=r"unknown adapter kind 'langchain'; known: .*plain"):
        resolve_target(factory, adapter="langchain")


def test_an_object_that_is_not_an_adapter_is_refused_by_name() -> None:
    class Half:
        name = "half"

        def run_trial(self, *args: Any) -> Any:
            return None

    with pytest.raises(TargetKindError, match="without instrument, uninstrument, fault_hook"):
        resolve_target(factory, adapter=Half())  # type: ignore[arg-type]
    with pytest.raises(TargetKindError, match=r"adapter must be an hbeval adapter.*got a int"):
        resolve_target(factory, adapter=3)  # type: ignore[arg-type]
