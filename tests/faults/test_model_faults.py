"""The model fault family: its catalogue, battery files, ``--fault-family model``, and that the
default batteries did not change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval_core.faults import Battery, FaultSpec
from hbeval_core.faults.model import (
    MODEL_FAULT_CATALOGUE,
    ModelFaultPlan,
    ModelFaultSpec,
    has_model_faults,
)
from hbeval_core.faults.userbattery import BatteryFileError, model_family_battery, parse_battery
from hbeval_core.fingerprint import fingerprint
from hbeval_core.vocab import FAULT_MODES, MODEL_FAULT_MODES

SEVEN = (
    "rate_limit",
    "model_error",
    "model_timeout",
    "stream_cut",
    "malformed_tool_call",
    "empty_completion",
    "context_overflow",
)


def test_the_family_has_the_seven_modes_apart_from_tool_faults() -> None:
    assert MODEL_FAULT_MODES == SEVEN
    assert set(MODEL_FAULT_CATALOGUE) == set(SEVEN)
    assert not set(SEVEN) & set(FAULT_MODES)
    with pytest.raises(ValueError, match="field 'mode' must be one of"):
        FaultSpec(id="x", target="*", mode="rate_limit")  # never at a tool boundary


def test_the_default_batteries_fingerprint_as_before() -> None:
    # Pinned from the release before the model family existed: adding it changes nothing the
    # default batteries measure.
    hbeval = Battery.hbeval()
    assert hbeval.spec_fingerprint() == "beea5f268182b59d"
    assert hbeval.plan_fingerprint() == "7347836c60b24937"
    assert Battery.compat().spec_fingerprint() == "ce481b32763df1ca"
    assert not has_model_faults(hbeval)
    modes = json.dumps(hbeval.spec()["runtime_faults"])
    assert not any(m in modes for m in SEVEN)


def test_model_fault_spec_checks_its_fields() -> None:
    with pytest.raises(ValueError, match="'http_status' applies only to mode 'model_error'"):
        ModelFaultSpec("f", "rate_limit", params={"http_status": 503})
    with pytest.raises(ValueError, match="'http_status' must be one of 500, 502, 503"):
        ModelFaultSpec("f", "model_error", params={"http_status": 404})
    with pytest.raises(ValueError, match="'retry_after_ms' must be at most 60000"):
        ModelFaultSpec("f", "rate_limit", params={"retry_after_ms": 61_000})
    with pytest.raises(ValueError, match="on_calls"):
        ModelFaultSpec("f", "stream_cut", on_calls=(-1,))
    spec = ModelFaultSpec("f", "rate_limit")
    assert spec.param("retry_after_ms") == 1000


def test_plan_counts_model_calls_per_target() -> None:
    plan = ModelFaultPlan(
        "p",
        7,
        (
            ModelFaultSpec("a", "rate_limit", "gpt-*", (1,)),
            ModelFaultSpec("b", "model_error", "*", (0,)),
        ),
    )
    counts: dict[str, int] = {}
    first = plan.decide("gpt-4o", counts)
    second = plan.decide("gpt-4o", counts)
    third = plan.decide("other", counts)
    assert first is not None and first[0].id == "b" and first[1] == 0
    assert second is not None and second[0].id == "a" and second[1] == 1
    assert third is None
    assert counts == {"gpt-*": 2, "*": 3}


def test_faults_sharing_a_target_count_each_call_once() -> None:
    plan = ModelFaultPlan(
        "p",
        0,
        (
            ModelFaultSpec("a", "rate_limit", "*", (0,)),
            ModelFaultSpec("b", "empty_completion", "*", (2,)),
        ),
    )
    counts: dict[str, int] = {}
    fired = [plan.decide("m", counts) for _ in range(4)]
    assert [(f[0].id, f[1]) if f else None for f in fired] == [("a", 0), None, ("b", 2), None]
    assert counts == {"*": 4}


def test_probability_uses_the_deterministic_draw() -> None:
    import hashlib

    plan = ModelFaultPlan("p", 3, (ModelFaultSpec("a", "model_error", probability=0.5),))
    counts: dict[str, int] = {}
    fired = [plan.decide("m", counts) is not None for _ in range(20)]
    expected = [
        int(hashlib.sha256(f"3:p:*:{i}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < 0.5
        for i in range(20)
    ]
    assert fired == expected and 0 < sum(fired) < 20


def _file(*scenarios: dict[str, object]) -> dict[str, object]:
    return {"format": "hbeval-battery-file/1", "name": "mf", "scenarios": list(scenarios)}


def test_a_battery_file_holds_model_fault_scenarios() -> None:
    battery = parse_battery(
        _file(
            {"name": "base", "mode": "none"},
            {
                "name": "slow-down",
                "mode": "rate_limit",
                "models": ["gpt-*"],
                "when": {"attempts": [0, 2]},
                "params": {"retry_after_ms": 250},
            },
            {"name": "tool", "mode": "timeout", "tools": ["lookup"]},
        ),
        seed=5,
    )
    assert has_model_faults(battery)
    scenario = battery.scenarios[1]
    plan = scenario.plan(99)
    assert isinstance(plan, ModelFaultPlan)
    (spec,) = plan.faults
    assert (spec.mode, spec.target, spec.on_calls, spec.param("retry_after_ms")) == (
        "rate_limit",
        "gpt-*",
        (0, 2),
        250,
    )
    assert scenario.runtime_summary()["kind"] == "model_fault_plan"  # type: ignore[index]
    assert scenario.canonical()["family"] == "model"
    # The tool scenario's canonical form has no family key: tool battery files keep their
    # fingerprints.
    assert "family" not in battery.scenarios[2].canonical()


def test_tool_battery_files_fingerprint_as_before() -> None:
    data = _file({"name": "t", "mode": "timeout", "tools": ["lookup"], "when": {"attempts": [0]}})
    battery = parse_battery(data, seed=1)
    expected = {
        "name": "t",
        "mode": "timeout",
        "tools": ["lookup"],
        "when": {"attempts": [0], "probability": 1.0, "seed": None},
        "params": {},
        "injection": None,
        "context": None,
        "domain": "mf",
    }
    assert battery.scenarios[0].canonical() == expected
    assert fingerprint(battery.scenarios[0].canonical()) == fingerprint(expected)


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ({"name": "x", "mode": "rate_limit", "tools": ["a"]}, "rename tools to models"),
        ({"name": "x", "mode": "timeout", "models": ["a"]}, "rename models to tools"),
        (
            {"name": "x", "mode": "stream_cut", "params": {"cut_after": "two"}},
            r"scenarios\[0\]\.params\.cut_after: must be a whole number",
        ),
        ({"name": "x", "mode": "rate_limited"}, "mode: must be one of .*rate_limit"),
    ],
)
def test_bad_model_scenarios_name_the_field(scenario: dict[str, object], message: str) -> None:
    with pytest.raises(BatteryFileError, match=message):
        parse_battery(_file(scenario), seed=1)


def test_fault_family_model_builds_its_battery() -> None:
    battery = model_family_battery(42)
    assert [s.fault_type for s in battery.scenarios] == ["none", *SEVEN]
    result = CliRunner().invoke(app, ["battery", "build", "--fault-family", "model", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["fingerprint"] == battery.spec_fingerprint()
    assert [s["runtime"]["kind"] for s in data["scenarios"][1:]] == ["model_fault_plan"] * 7


def test_fault_family_model_refuses_shaping_flags() -> None:
    result = CliRunner().invoke(
        app, ["battery", "build", "--fault-family", "model", "--domain", "retail"]
    )
    assert result.exit_code == 2
    assert "--domain: --fault-family model names its own scenarios" in result.output


def test_an_in_process_run_refuses_model_faults(tmp_path: Path) -> None:
    from hbeval import run_battery
    from hbeval_core.contract import Task

    def agent(question: str) -> str:
        return "ok"

    with pytest.raises(ValueError, match="hbeval proxy openai"):
        run_battery(
            agent,
            tasks=[Task(id="t", question="q")],
            battery=model_family_battery(42),
            store=str(tmp_path / "s.db"),
        )
    assert not (tmp_path / "s.db").exists()  # refused before the store was opened
