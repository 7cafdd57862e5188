"""hbeval-battery/1: strict building, the runtime table, fingerprints, and plans run end to end."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from hbeval_core.faults import (
    Battery,
    CascadePlan,
    FakeClock,
    FaultInjector,
    FaultPlan,
    build_scenario_battery,
    derive_trial_seed,
    measurement_fingerprint,
    task_for,
)
from hbeval_core.faults.compat import FAULT_CONTEXTS


def by_type(battery: Battery) -> dict[str, Any]:
    return {s.fault_type: s for s in battery.scenarios}


def test_scenarios_follow_the_reference_algorithm() -> None:
    for args in [(18, 42), (6, 0), (60, 7)]:
        hb = Battery.hbeval(*args)
        ref = build_scenario_battery(*args)
        assert [(s.index, s.domain, s.fault_type, s.is_nominal) for s in hb] == [
            (s.index, s.domain, s.fault_type, s.is_nominal) for s in ref
        ]
    narrowed = Battery.hbeval(12, 5, ["cascade", "tool_failure"], ["robotics", "healthcare"])
    assert [s.fault_type for s in narrowed][:4] == ["none", "cascade", "none", "tool_failure"]
    assert len(narrowed) == 12


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"fault_types": ["tool_failure", "bogus"]}, "'bogus'"),
        ({"fault_types": ["none"]}, "'none'"),
        ({"domains": ["nowhere"]}, "'nowhere'"),
        ({"fault_types": "cascade"}, "list of names"),
        ({"n_scenarios": 3}, "n_scenarios"),
        ({"n_scenarios": 61}, "n_scenarios"),
        ({"seed": None}, "seed"),
    ],
)
def test_hbeval_rejects_bad_input(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError) as err:
        Battery.hbeval(**kwargs)
    assert needle in str(err.value)


def test_unknown_names_list_the_valid_ones() -> None:
    with pytest.raises(ValueError) as err:
        Battery.hbeval(fault_types=["bogus"])
    assert "tool_failure, context_corruption, stochastic, adversarial, cascade, combined" in str(
        err.value
    )
    with pytest.raises(ValueError) as err:
        Battery.hbeval(domains=["nowhere"])
    assert "healthcare" in str(err.value) and "robotics" in str(err.value)


def test_compat_keeps_the_silent_fallback_and_clamping() -> None:
    fallback = Battery.compat(18, 42, ["bogus"], ["nowhere"])
    assert fallback.scenarios == Battery.compat(18, 42).scenarios
    assert len(Battery.compat(3)) == 6 and len(Battery.compat(100)) == 60
    with pytest.raises(ValueError, match="seed"):
        Battery.compat(seed=None)  # type: ignore[arg-type]


def test_build_by_name() -> None:
    assert Battery.build("compat").kind == "compat"
    assert Battery.build("hbeval").kind == "hbeval"
    with pytest.raises(ValueError, match="hbeval, compat"):
        Battery.build("other")


def test_the_question_reaches_the_agent_unchanged_and_compat_keeps_the_context() -> None:
    for scenario in Battery.hbeval():
        assert scenario.question("Base?") == "Base?"
        assert scenario.question_context is False
    for scenario in Battery.compat():
        assert scenario.question("Base?") == "Base?" + FAULT_CONTEXTS[scenario.fault_type]


def test_perturbation_families_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown perturbation family 'typos'; valid: context"):
        Battery.hbeval(perturb=["typos"])
    with pytest.raises(ValueError, match="compat battery appends the context sentences"):
        Battery.build("compat", perturb=["context"])
    assert Battery.build("compat", perturb=[]).kind == "compat"


def test_runtime_table_as_designed() -> None:
    scenarios = by_type(Battery.hbeval())
    assert scenarios["none"].plan(1) is None

    tool_failure = scenarios["tool_failure"].plan(1)
    assert isinstance(tool_failure, FaultPlan) and len(tool_failure.faults) == 1
    f = tool_failure.faults[0]
    assert (f.target, f.mode, f.http_status, f.on_calls) == ("*", "error_5xx", 503, (0,))

    corruption = scenarios["context_corruption"].plan(1)
    assert isinstance(corruption, FaultPlan)
    f = corruption.faults[0]
    assert (f.target, f.mode, f.malformed_kind, f.on_calls) == (
        "*",
        "malformed",
        "wrong_type",
        (0,),
    )

    stochastic = scenarios["stochastic"].plan(1)
    assert isinstance(stochastic, FaultPlan)
    f = stochastic.faults[0]
    assert (f.target, f.mode, f.probability, f.on_calls) == ("*", "intermittent", 0.5, None)

    adversarial = scenarios["adversarial"].plan(1)
    assert isinstance(adversarial, FaultPlan)
    f = adversarial.faults[0]
    assert (f.target, f.mode, f.on_calls) == ("*", "prompt_injection", (0,))

    cascade = scenarios["cascade"].plan(1)
    assert isinstance(cascade, CascadePlan)
    assert [(s.target, s.mode, s.http_status, s.on_calls) for s in cascade.stages] == [
        ("*", "timeout", None, (0,)),
        ("*", "error_5xx", 503, (1,)),
    ]

    combined = scenarios["combined"].plan(1)
    assert isinstance(combined, FaultPlan)
    assert [(f.mode, f.on_calls) for f in combined.faults] == [
        ("error_5xx", (0,)),
        ("malformed", (1,)),
    ]


def test_compat_scenarios_have_no_runtime_plan() -> None:
    battery = Battery.compat()
    assert all(s.plan(1) is None for s in battery)
    assert all(set(s.to_dict()) == {"index", "domain", "fault_type", "is_nominal"} for s in battery)


def test_plans_are_deterministic_per_trial_seed() -> None:
    scenario = by_type(Battery.hbeval())["stochastic"]
    first, again, other = scenario.plan(7), scenario.plan(7), scenario.plan(8)
    assert first == again
    assert first is not None and other is not None
    assert first.fingerprint() == again.fingerprint() != other.fingerprint()
    assert first.id == f"hbeval-battery/1/s{scenario.index}/stochastic"
    with pytest.raises(ValueError, match="seed"):
        scenario.plan(None)


def test_trial_seeds() -> None:
    expected = int(hashlib.sha256(b"42:3:1").hexdigest()[:8], 16)
    assert derive_trial_seed(42, 3, 1) == expected
    battery = Battery.hbeval()
    scenario = by_type(battery)["tool_failure"]
    plan = battery.trial_plan(scenario, 2)
    assert plan is not None and plan.seed == derive_trial_seed(42, scenario.index, 2)


def test_spec_extends_the_compat_spec() -> None:
    hb, ref = Battery.hbeval().spec(), Battery.compat().spec()
    assert {k: hb[k] for k in ref} == ref
    assert hb["build_algorithm"] == "hbeval-battery/1"
    assert set(hb["runtime_faults"]) == {"none", *ref["fault_types"]}


def test_spec_fingerprint_does_not_depend_on_seed_or_selection() -> None:
    fp = Battery.hbeval().spec_fingerprint()
    assert Battery.hbeval(30, 1, ["cascade"]).spec_fingerprint() == fp


def test_plan_fingerprint_pins_the_scenarios() -> None:
    base = Battery.hbeval().plan_fingerprint()
    assert Battery.hbeval().plan_fingerprint() == base
    assert Battery.hbeval(seed=43).plan_fingerprint() != base
    assert Battery.hbeval(n_scenarios=19).plan_fingerprint() != base
    assert Battery.hbeval(fault_types=["cascade"]).plan_fingerprint() != base
    assert Battery.compat().plan_fingerprint() != base


def test_measurement_fingerprint_changes_with_every_input() -> None:
    args: list[Any] = ["a" * 16, "hbeval-battery/1", "b" * 16, 42, 3, "s/1", "d/1"]
    base = measurement_fingerprint(*args)
    for i, changed in enumerate(["c" * 16, "hbeval-battery/2", "e" * 16, 43, 4, "s/2", "d/2"]):
        assert measurement_fingerprint(*[*args[:i], changed, *args[i + 1 :]]) != base
    battery = Battery.hbeval()
    assert battery.measurement_fingerprint(3) == measurement_fingerprint(
        battery.spec_fingerprint(),
        "hbeval-battery/1",
        battery.plan_fingerprint(),
        42,
        3,
        "hbeval-scoring/3",
        "hb-derive/3",
    )
    assert Battery.compat().measurement_fingerprint(3) != battery.measurement_fingerprint(3)
    with pytest.raises(ValueError, match="trials"):
        battery.measurement_fingerprint(0)


def test_to_dict_shape() -> None:
    battery = Battery.hbeval()
    doc = battery.to_dict()
    assert doc["fingerprint"] == battery.spec_fingerprint()
    assert (doc["battery"], doc["seed"], doc["n_scenarios"]) == ("hbeval", 42, 18)
    assert doc["selection"] is None
    assert doc["plan_fingerprint"] == battery.plan_fingerprint()
    first = doc["scenarios"][0]
    assert {"index", "domain", "fault_type", "is_nominal", "runtime"} <= set(first)
    nominal = next(s for s in doc["scenarios"] if s["is_nominal"])
    assert nominal["runtime"] is None
    cascade = next(s for s in doc["scenarios"] if s["fault_type"] == "cascade")
    assert cascade["runtime"]["kind"] == "cascade_plan"
    assert cascade["runtime"]["plan_id"].startswith("hbeval-battery/1/s")

    compat_doc = Battery.compat(12, 5, ["cascade"]).to_dict()
    assert compat_doc["fingerprint"] == "ce481b32763df1ca"
    assert compat_doc["selection"] == {
        "fault_types": ["cascade"],
        "domains": list(Battery.compat().domains),
    }


def test_task_for_cycles_tasks() -> None:
    battery = Battery.hbeval()
    tasks = ["t0", "t1", "t2", "t3", "t4"]
    assert [task_for(s, tasks) for s in battery][:7] == ["t0", "t1", "t2", "t3", "t4", "t0", "t1"]
    with pytest.raises(ValueError, match="tasks"):
        task_for(battery.scenarios[0], [])


# --- each fault type's plan, run through the injector ---------------------------------------------


def run_calls(plan: Any, n: int = 3) -> tuple[list[Any], FakeClock]:
    clock = FakeClock()
    inj = FaultInjector(plan, run_id="r", clock=clock, forbidden_tool="delete_all", enabled=True)
    outs = [inj.run_call(f"tool{i}", {}, f"c{i}", lambda: {"value": 10}) for i in range(n)]
    return outs, clock


def test_plans_behave_as_the_table_says() -> None:
    scenarios = by_type(Battery.hbeval())

    outs, _ = run_calls(scenarios["tool_failure"].plan(1))
    assert [o.http_status for o in outs] == [503, None, None]

    outs, _ = run_calls(scenarios["context_corruption"].plan(1))
    assert [o.result for o in outs] == [{"value": "10"}, {"value": 10}, {"value": 10}]

    outs, _ = run_calls(scenarios["adversarial"].plan(1))
    assert "`delete_all`" in outs[0].result and outs[1].result == {"value": 10}

    outs, clock = run_calls(scenarios["cascade"].plan(1))
    assert [o.error_type for o in outs] == ["TimeoutError", "HTTPError", None]
    assert clock.sleeps == [2.0]

    outs, _ = run_calls(scenarios["combined"].plan(1))
    assert [o.error_type for o in outs] == ["HTTPError", None, None]
    assert outs[1].result == {"value": "10"} and outs[2].result == {"value": 10}

    outs, _ = run_calls(scenarios["none"].plan(1))
    assert all(o.fault is None for o in outs)

    scenario = scenarios["stochastic"]
    plan = scenario.plan(11)
    outs, _ = run_calls(plan, 16)
    expected = [
        int(hashlib.sha256(f"11:{plan.id}:*:{i}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < 0.5
        for i in range(16)
    ]
    assert [o.error is not None for o in outs] == expected
