"""Live metrics reproduce every vector of spec §2.1 (computed by running the reference SDK)."""

from __future__ import annotations

import threading

import pytest

from hbeval_core import Monitor, SafeHaltError

# The 10-step SDK demo script: action, success, had_fault, recovered, traceable, replanned.
DEMO = [
    ("plan route", True, False, None, True, False),
    ("query carrier", True, False, None, True, False),
    ("check inventory", True, False, None, True, False),
    ("fetch tracking detail", False, True, False, False, False),
    ("retry tracking detail", False, True, False, False, False),
    ("retry tracking detail", False, True, False, False, False),
    ("re-plan approach", True, True, True, True, True),
    ("confirm shipment", True, False, None, True, False),
    ("notify customer", True, False, None, True, False),
    ("close ticket", True, False, None, True, False),
]
# after step: PEI v2, PEI v1, FRR, IRS, TI   (spec §2.1 table)
DEMO_TABLE = [
    (1.0, 1.0, None, None, 5.0),
    (1.0, 1.0, None, None, 5.0),
    (1.0, 1.0, None, None, 5.0),
    (0.75, 1.0, 0.0, 0.0, 3.75),
    (0.8, 1.0, 0.0, 0.0, 3.0),
    (5 / 6, 1.0, 0.0, 0.0, 2.5),
    (1.0, 6 / 7, 0.25, 0.25, 2.86),
    (1.0, 0.875, 0.25, 0.25, 3.12),
    (1.0, 8 / 9, 0.25, 0.25, 3.33),
    (1.0, 0.9, 0.25, 0.25, 3.5),
]


def feed(m: Monitor, step: tuple[str, bool, bool, bool | None, bool, bool]) -> None:
    a, s, f, r, t, rp = step
    m.record_step(
        action=a, success=s, had_fault=f, recovered_intentionally=r, traceable=t, replanned=rp
    )


def test_demo_table_both_pei_columns() -> None:
    v2, v1 = Monitor(), Monitor(pei_version="1.0")
    for step, (pei2, pei1, frr, irs, ti) in zip(DEMO, DEMO_TABLE, strict=True):
        feed(v2, step)
        feed(v1, step)
        got = v2.metrics
        assert got["pei"] == pytest.approx(pei2)
        assert v1.metrics["pei"] == pytest.approx(pei1)
        assert got["frr"] == (None if frr is None else pytest.approx(frr))
        assert got["irs"] == (None if irs is None else pytest.approx(irs))
        assert got["ti"] == ti  # exact: reference rounding, 3.125 -> 3.12
        assert got["csi"] is None
    assert v2.metric_versions["pei"] == "2.0"
    assert v1.metric_versions["pei"] == "1.0"


def test_demo_sixteen_breaches_without_halt() -> None:
    m = Monitor()
    for step in DEMO:
        feed(m, step)
    assert m.breach_count == 16
    assert not m.halted
    # Kept as intervals: FRR and IRS steps 3..9, TI steps 5..6 (0-based).
    spans = {(b.metric, b.first_step, b.last_step) for b in m.breaches}
    assert spans == {("frr", 3, 9), ("irs", 3, 9), ("ti", 5, 6)}
    assert sum(b.steps for b in m.breaches) == 16


def test_demo_halts_at_step_six() -> None:
    m = Monitor(halt_policy={"metric": "frr", "below": 0.5, "for_steps": 3})
    for i, step in enumerate(DEMO):
        feed(m, step)
        if i == 5:
            assert m.halted
            assert m.breach_count == 7
    rec = m.halt_record
    assert rec is not None
    assert rec["step_index"] == 5
    assert rec["reason"] == "FRR stayed below 0.5 for 3 consecutive steps"
    assert rec["trigger_source"] == "policy"
    assert rec["consecutive_steps"] == 3


def run(steps: list[dict[str, object]], **kw: object) -> Monitor:
    m = Monitor(**kw)  # type: ignore[arg-type]
    for s in steps:
        m.record_step(**s)  # type: ignore[arg-type]
    return m


F = {"had_fault": True}


def test_blind_retries_then_new_successful_action() -> None:
    call = {"action": "call", "success": False, **F}
    m = run([call, call, call, {"action": "answer", "success": True, **F}])
    assert m.metrics["pei"] == 1.0
    assert m.metrics["frr"] == 0.25
    assert m.metrics["irs"] is None
    assert m.metrics["ti"] == 5.0
    m = run([call, call, call, {"action": "answer", "success": False, **F}])
    assert m.metrics["pei"] == 0.75
    assert m.metrics["frr"] == 0.0


def test_fallback_then_answer() -> None:
    m = run(
        [
            {"action": "call", "success": False, **F},
            {"action": "fallback", "success": True, **F},
            {"action": "answer"},
        ]
    )
    assert m.metrics["pei"] == 1.0
    assert m.metrics["frr"] == 0.5
    assert m.metrics["irs"] is None


def test_nominal_steps() -> None:
    m = run([{"action": "a"}, {"action": "b"}, {"action": "c"}])
    assert m.metrics == {"pei": 1.0, "frr": None, "irs": None, "ti": 5.0, "csi": None}
    assert m.undefined == {
        "frr": "no_fault_observed",
        "irs": "no_fault_observed",
        "csi": "single_run",
    }


def test_declared_replans_on_nominal_steps() -> None:
    m = run(
        [{"action": "a", "replanned": True}, {"action": "b", "replanned": True}, {"action": "c"}]
    )
    assert m.metrics["pei"] == pytest.approx(1 / 3)


def test_one_step_refusal_reference_and_opt_in_fix() -> None:
    step = {"action": "refuse", "success": True, "handled_deliberately": True, **F}
    m = run([step])
    assert (m.metrics["pei"], m.metrics["frr"], m.metrics["irs"]) == (0.0, 1.0, 1.0)
    fixed = run([step], pei_version="2.0+hb.1")
    assert fixed.metrics["pei"] == 1.0
    assert fixed.metric_versions["pei"] == "2.0+hb.1"


def test_irs_is_or_of_the_two_flags() -> None:
    m = run(
        [
            {
                "action": "x",
                "success": False,
                "recovered_intentionally": False,
                "handled_deliberately": True,
                **F,
            }
        ]
    )
    assert (m.metrics["irs"], m.metrics["frr"], m.metrics["pei"]) == (1.0, 0.0, 0.0)


def test_flags_on_nominal_steps_are_ignored() -> None:
    m = run([{"action": "x", "handled_deliberately": True}])
    assert m.metrics["irs"] is None
    assert m.undefined["irs"] == "no_fault_observed"


def test_two_episodes() -> None:
    m = run(
        [
            {"action": "a", "success": False, **F},
            {"action": "b"},
            {"action": "c", "success": False, **F},
            {"action": "d", "success": True, **F},
        ]
    )
    assert m.metrics["pei"] == 0.75
    assert m.metrics["frr"] == pytest.approx(1 / 3)


def test_empty_actions_never_transition() -> None:
    m = run([{"action": "", "success": True, **F}, {"action": "", "success": True, **F}])
    assert m.metrics["pei"] == 0.5


def test_traceability_rounding() -> None:
    m = run([{"traceable": False}, {"traceable": True}, {"traceable": False}])
    assert m.metrics["ti"] == 1.67


def test_no_steps_is_undefined_not_zero() -> None:
    m = Monitor()
    assert m.metrics == {"pei": None, "frr": None, "irs": None, "ti": None, "csi": None}
    assert m.undefined["pei"] == "no_steps"
    assert m.undefined["ti"] == "no_steps"


def test_irs_undefined_reason_when_faults_unjudged() -> None:
    m = run([{"action": "x", "success": False, **F}])
    assert m.metrics["irs"] is None
    assert m.undefined["irs"] == "no_judged_step"


def test_halt_counter_unchanged_on_undefined() -> None:
    # FRR is undefined on nominal steps: the counter neither advances nor resets.
    m = Monitor(halt_policy={"metric": "frr", "below": 0.5, "for_steps": 2})
    m.record_step(action="a", success=False, had_fault=True)  # frr 0 -> count 1
    m.record_step(action="b")  # frr still 0.0 (defined) -> count 2 -> halt
    assert m.halted
    m2 = Monitor(halt_policy={"metric": "irs", "below": 0.5, "for_steps": 2})
    m2.record_step(
        action="a", success=False, had_fault=True, recovered_intentionally=False
    )  # irs 0 -> 1
    m2.record_step(action="b", success=False, had_fault=True)  # irs still 0 (1 judged) -> 2
    assert m2.halted


def test_enforced_halt_raises_at_tool_boundary() -> None:
    m = Monitor(halt_policy={"metric": "frr", "below": 0.5, "for_steps": 1}, enforce=True)
    m.check_tool_boundary("lookup")
    m.record_step(action="x", success=False, had_fault=True)
    with pytest.raises(SafeHaltError) as exc:
        m.check_tool_boundary("lookup")
    assert exc.value.record["metric"] == "frr"
    advisory = Monitor(halt_policy={"metric": "frr", "below": 0.5, "for_steps": 1})
    advisory.record_step(action="x", success=False, had_fault=True)
    assert advisory.halted
    advisory.check_tool_boundary("lookup")  # advisory: never raises


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        ({"metric": "nope", "below": 0.5}, "metric"),
        ({"metric": "frr"}, "below"),
        ({"metric": "frr", "below": "x"}, "below"),
        ({"metric": "frr", "below": 0.5, "for_steps": 0}, "for_steps"),
    ],
)
def test_bad_halt_policy_names_field(policy: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Monitor(halt_policy=policy)


def test_bad_policy_rule_names_field() -> None:
    with pytest.raises(ValueError, match=r"policy\[0\]\['then'\]"):
        Monitor(policy=[{"when": {"metric": "frr", "below": 0.5}, "then": "reboot"}])
    with pytest.raises(ValueError, match="pei_version"):
        Monitor(pei_version="3.0")


def test_policy_engine_precedence_budget_and_retry_escalation() -> None:
    m = Monitor(
        policy=[
            {"when": {"metric": "frr", "below": 0.7, "for_steps": 1}, "then": "retry"},
            {"when": {"metric": "frr", "below": 0.5, "for_steps": 3}, "then": "halt"},
        ]
    )
    m.record_step(action="call", success=False, had_fault=True)
    d = m.directive
    assert d is not None and d["action"] == "retry" and d["target"] == "call"
    assert m.directive is None  # consumed on read
    m.record_step(action="call", success=False, had_fault=True)
    assert m.take_directive().action == "retry"  # type: ignore[union-attr]
    m.record_step(action="call", success=False, had_fault=True)
    # halt outranks the third firing of retry (which would have escalated)
    d3 = m.take_directive()
    assert d3 is not None and d3.action == "halt"
    assert m.halted and m.halt_record["trigger_source"] == "policy_engine"  # type: ignore[index]
    actions = [d.action for d in m.directives]
    assert actions == ["retry", "retry", "halt"]


def test_retry_twice_then_escalate_and_fire_budget() -> None:
    m = Monitor(policy=[{"when": {"metric": "frr", "below": 0.7}, "then": "retry", "max_fires": 5}])
    for _ in range(4):
        m.record_step(action="call", success=False, had_fault=True)
    assert [d.action for d in m.directives] == ["retry", "retry", "escalate", "escalate"]
    budget = Monitor(policy=[{"when": {"metric": "frr", "below": 0.7}, "then": "escalate"}])
    for _ in range(6):
        budget.record_step(action="call", success=False, had_fault=True)
    assert len(budget.directives) == 3  # max_fires defaults to 3


def test_policy_engine_resets_on_undefined() -> None:
    m = Monitor(
        policy=[{"when": {"metric": "irs", "below": 0.5, "for_steps": 2}, "then": "escalate"}]
    )
    m.record_step(action="a", success=False, had_fault=True, recovered_intentionally=False)
    m2 = Monitor(
        policy=[{"when": {"metric": "irs", "below": 0.5, "for_steps": 2}, "then": "escalate"}]
    )
    m2.record_step(action="a")  # irs undefined -> run stays 0
    m2.record_step(
        action="b", success=False, had_fault=True, recovered_intentionally=False
    )  # run 1
    assert m2.directives == []
    m.record_step(action="b", success=False, had_fault=True, recovered_intentionally=False)
    assert [d.action for d in m.directives] == ["escalate"]


def test_circuit_breaker() -> None:
    m = Monitor(tool_policy={"failures_before_open": 3, "probe_after_steps": 2})
    for _ in range(3):
        m.record_step(action="flaky", success=False, had_fault=True)
    assert m.unreliable_tools == ["flaky"]
    m.record_step(action="other")
    m.record_step(action="other")
    assert m.tool_states["flaky"]["state"] == "half_open"
    m.record_step(action="flaky", success=False, had_fault=True)
    assert m.unreliable_tools == ["flaky"]  # a failed probe re-opens
    m.record_step(action="flaky")
    assert m.unreliable_tools == []  # any success closes


def test_adapt_plan_directive_on_crossing() -> None:
    seen: list[str] = []
    m = Monitor(on_directive=lambda d, _m: seen.append(d.action))
    m.record_step(action="a")
    m.record_step(action="b")
    m.record_step(action="c")
    m.record_step(action="x", success=False, had_fault=True)  # PEI 0.75
    m.record_step(action="x", success=False, had_fault=True)  # 0.8
    assert seen == []
    m2 = Monitor()
    # Crossing at step 2 (before step 3) is not signalled.
    m2.record_step(action="x", success=False, had_fault=True)  # PEI 0.0 at step 1, no prev
    assert m2.directives == []
    m3 = Monitor()
    for s in [
        {"action": "a"},
        {"action": "b"},
        {"action": "c"},
        {"action": "x", "replanned": True},
    ]:
        m3.record_step(**s)  # type: ignore[arg-type]
    assert m3.metrics["pei"] == 0.75
    m3.record_step(action="y", replanned=True)  # PEI 0.6: crosses below 0.70 at step 5
    assert [d.action for d in m3.directives] == ["replan"]
    assert m3.directives[0].step_index == 4
    m3.record_step(action="z", replanned=True)  # stays below: no new crossing
    assert len(m3.directives) == 1


def test_adapt_plan_cooldown() -> None:
    # PEI by hand: 1, 1, 1-1/3=0.667 (crossing at step 3: signalled), 1-1/4=0.75,
    # 1-2/5=0.6 (second crossing two steps later: inside the 3-step cooldown, suppressed).
    m = Monitor()
    for i, replanned in enumerate([False, False, True, False, True]):
        m.record_step(action=f"a{i}", replanned=replanned)
    assert m.metrics["pei"] == pytest.approx(0.6)
    assert [d.step_index for d in m.directives] == [2]
    # The same shape with the second crossing three steps later is signalled again.
    m2 = Monitor()
    for i, replanned in enumerate([False, False, True, False, False, True, True]):
        m2.record_step(action=f"a{i}", replanned=replanned)
    # PEI: 1, 1, .667, .75, .8, 1-2/6=.667 (crossing idx 5, 3 after idx 2), 1-3/7=.571
    assert [d.step_index for d in m2.directives] == [2, 5]


def test_callback_errors_are_swallowed_unless_strict() -> None:
    def boom(*_a: object) -> None:
        raise RuntimeError("user callback failed")

    m = Monitor(on_breach=boom)
    m.record_step(action="x", success=False, had_fault=True)
    assert m.breach_count == 2
    strict = Monitor(on_breach=boom, strict=True)
    with pytest.raises(RuntimeError):
        strict.record_step(action="x", success=False, had_fault=True)


def test_thread_safe_parallel_steps() -> None:
    m = Monitor()

    def worker() -> None:
        for i in range(2000):
            m.record_step(action=f"a{i % 7}", success=i % 3 != 0, had_fault=i % 3 == 0)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert m.step_count == 8000
    # 4 x 2000 steps, faulted when i % 3 == 0 (667 per thread), never successful
    assert m.metrics["frr"] == 0.0
    assert m.summary()["step_count"] == 8000


def test_summary_is_json_ready() -> None:
    import json

    m = Monitor(halt_policy={"metric": "frr", "below": 0.5, "for_steps": 3})
    for step in DEMO:
        feed(m, step)
    doc = json.loads(json.dumps(m.summary()))
    assert doc["metrics"]["csi"] is None
    assert doc["undefined"]["csi"] == "single_run"
    assert doc["halted"] is True
    assert doc["breach_count"] == 16
