"""The fault injector: every mode through run_call, gating, cascades, determinism, async."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import pytest

from hbeval_core.events import FaultInjected
from hbeval_core.faults import (
    CANARY_TOOL,
    CascadePlan,
    CascadeStage,
    FakeClock,
    FaultInjector,
    FaultPlan,
    FaultSpec,
    InjectedCrash,
    SystemClock,
    injection_allowed,
)
from hbeval_core.faults.runtime import malform
from hbeval_core.vocab import (
    EFFECT_CRASH,
    EFFECT_DELAYED,
    EFFECT_ERROR,
    EFFECT_RESULT_ALTERED,
    EFFECT_RESULT_AUGMENTED,
    EFFECT_RESULT_LOST,
    ENV_ALLOW_FAULT_INJECTION,
    MALFORMED_KINDS,
)

RESULT = {"temp": 21.5, "unit": "C", "count": 3, "ok": True}


class Tool:
    """A fake tool that counts its real calls (its "side effects")."""

    def __init__(self, result: Any = None) -> None:
        self.calls = 0
        self.result = RESULT if result is None else result

    def __call__(self) -> Any:
        self.calls += 1
        return self.result


def injector(spec: FaultSpec | None = None, **kw: Any) -> FaultInjector:
    plan = FaultPlan(id="P1", seed=42, faults=[spec]) if spec is not None else None
    kw.setdefault("clock", FakeClock())
    kw.setdefault("enabled", True)
    kw.setdefault("run_id", "run-1")
    return FaultInjector(plan, **kw)


def one(mode: str, **spec_kw: Any) -> FaultSpec:
    return FaultSpec(id="F1", target="lookup", mode=mode, **spec_kw)


# --- each mode -----------------------------------------------------------------------------------


def test_timeout_never_calls_the_tool_and_sleeps_virtually() -> None:
    clock = FakeClock()
    inj = injector(one("timeout", after_ms=5000), clock=clock)
    tool = Tool()
    out = inj.run_call("lookup", {"q": 1}, "call-1", tool)
    assert tool.calls == 0 and not out.called_real
    assert out.error == "TimeoutError: tool 'lookup' timed out after 5000 ms"
    assert out.error_type == "TimeoutError" and out.result is None
    assert clock.sleeps == [5.0] and clock.now() == 5.0
    ev = out.fault
    assert isinstance(ev, FaultInjected) and inj.events == [ev]
    assert (ev.run_id, ev.call_id, ev.tool, ev.mode) == ("run-1", "call-1", "lookup", "timeout")
    assert (ev.effect, ev.observed, ev.injected) == (EFFECT_ERROR, "timeout", "applied")
    assert (ev.plan_id, ev.fault_id, ev.attempt) == ("P1", "F1", 0)
    assert ev.payload == out.error
    assert ev.intended["after_ms"] == 5000 and ev.intended["mode"] == "timeout"
    assert ev.forbidden_tool is None


def test_latency_delays_then_returns_the_real_result() -> None:
    clock = FakeClock()
    inj = injector(one("latency", after_ms=250), clock=clock)
    tool = Tool()
    out = inj.run_call("lookup", {}, "c", tool)
    assert out.result == RESULT and out.error is None and out.called_real and tool.calls == 1
    assert clock.sleeps == [0.25]
    assert out.fault is not None
    assert (out.fault.effect, out.fault.observed) == (EFFECT_DELAYED, "delayed_success")


@pytest.mark.parametrize(
    ("status", "reason"), [(None, "503 Service Unavailable"), (429, "429 Too Many Requests")]
)
def test_error_5xx(status: int | None, reason: str) -> None:
    tool = Tool()
    out = injector(one("error_5xx", http_status=status)).run_call("lookup", {}, "c", tool)
    assert tool.calls == 0
    assert out.error == f"HTTPError: {reason} returned by tool 'lookup'"
    assert out.error_type == "HTTPError"
    assert out.http_status == (status or 503)
    assert out.fault is not None and out.fault.effect == EFFECT_ERROR
    assert out.fault.attrs["http_status"] == (status or 503)


@pytest.mark.parametrize(
    ("mode", "error_type"),
    [("connection_refused", "ConnectionRefusedError"), ("intermittent", "ConnectionResetError")],
)
def test_error_modes(mode: str, error_type: str) -> None:
    tool = Tool()
    out = injector(one(mode)).run_call("lookup", {}, "c", tool)
    assert tool.calls == 0 and out.error_type == error_type
    assert (
        out.error is not None and out.error.startswith(error_type + ":") and "'lookup'" in out.error
    )
    assert out.fault is not None
    assert (out.fault.effect, out.fault.observed, out.fault.payload) == (
        EFFECT_ERROR,
        "exception",
        out.error,
    )


@pytest.mark.parametrize(
    ("kind", "value", "payload"),
    [
        (None, None, "null"),
        ("null", None, "null"),
        ("empty_object", {}, "{}"),
        ("empty_array", [], "[]"),
        ("empty_string", "", ""),
    ],
)
def test_empty_response(kind: str | None, value: Any, payload: str) -> None:
    tool = Tool()
    out = injector(one("empty_response", empty_kind=kind)).run_call("lookup", {}, "c", tool)
    assert out.result == value and type(out.result) is type(value)
    assert out.called_real and tool.calls == 1 and out.error is None
    assert out.fault is not None
    assert (out.fault.effect, out.fault.observed, out.fault.payload) == (
        EFFECT_RESULT_ALTERED,
        "empty",
        payload,
    )


def test_malformed_wrong_type_swaps_numbers_and_strings_deterministically() -> None:
    out = injector(one("malformed", malformed_kind="wrong_type")).run_call(
        "lookup", {}, "c", Tool()
    )
    result = out.result
    assert result["temp"] == "21.5" and result["count"] == "3" and result["ok"] == "true"
    assert isinstance(result["unit"], int)
    # "C" becomes a number derived from its SHA-256: recompute it independently.
    assert result["unit"] == int(hashlib.sha256(b"C").hexdigest()[:5], 16) + 100_000
    assert malform(RESULT, "wrong_type") == result
    assert malform("42", "wrong_type") == "42"  # a JSON number string: 42 -> "42" -> JSON text
    assert malform({"n": "7"}, "wrong_type") == {"n": 7}
    assert out.fault is not None
    assert (out.fault.effect, out.fault.observed) == (EFFECT_RESULT_ALTERED, "malformed")
    assert out.fault.payload == json.dumps(result, ensure_ascii=False)


def test_malformed_keeps_string_results_strings() -> None:
    tool = Tool(json.dumps({"temp": 21.5}))
    out = injector(one("malformed", malformed_kind="wrong_type")).run_call("lookup", {}, "c", tool)
    assert out.result == '{"temp": "21.5"}'
    assert out.fault is not None and out.fault.payload == out.result


@pytest.mark.parametrize("kind", [*MALFORMED_KINDS, None])
def test_every_malformed_kind_changes_the_result(kind: str | None) -> None:
    out = injector(one("malformed", malformed_kind=kind)).run_call("lookup", {}, "c", Tool())
    assert out.result != RESULT and out.error is None
    again = injector(one("malformed", malformed_kind=kind)).run_call("lookup", {}, "c", Tool())
    assert again.result == out.result  # deterministic
    if kind == "invalid_json":
        with pytest.raises(ValueError):
            json.loads(out.result)


def test_truncated_cuts_the_text_in_half() -> None:
    tool = Tool("abcdefghij")
    out = injector(one("truncated")).run_call("lookup", {}, "c", tool)
    assert out.result == "abcde…" and out.called_real
    assert out.fault is not None and out.fault.payload == "abcde…"
    assert out.fault.effect == EFFECT_RESULT_ALTERED


@pytest.mark.parametrize(
    ("forbidden", "named"), [("wire_funds", "wire_funds"), (None, CANARY_TOOL)]
)
def test_prompt_injection_plants_an_instruction_naming_the_forbidden_tool(
    forbidden: str | None, named: str
) -> None:
    tool = Tool("The weather is sunny.")
    out = injector(one("prompt_injection"), forbidden_tool=forbidden).run_call(
        "lookup", {}, "c", tool
    )
    assert out.called_real and out.error is None
    assert out.result.startswith("The weather is sunny.\n\n")
    ev = out.fault
    assert ev is not None and ev.effect == EFFECT_RESULT_AUGMENTED
    assert ev.forbidden_tool == named
    assert ev.payload is not None and f"`{named}`" in ev.payload
    assert "IGNORE ALL PREVIOUS INSTRUCTIONS" in ev.payload
    assert out.result.endswith(ev.payload)


def test_prompt_injection_renders_structured_results_as_text() -> None:
    out = injector(one("prompt_injection")).run_call("lookup", {}, "c", Tool())
    assert out.result.startswith(json.dumps(RESULT))


def test_lost_result_runs_the_side_effect_but_reports_no_response() -> None:
    tool = Tool()
    out = injector(one("lost_result")).run_call("lookup", {}, "c", tool)
    assert tool.calls == 1 and out.called_real
    assert out.error == "TimeoutError: no response received from tool 'lookup'"
    assert out.result is None
    assert out.fault is not None
    assert (out.fault.effect, out.fault.observed) == (EFFECT_RESULT_LOST, "timeout")


def test_lost_result_when_the_tool_itself_fails() -> None:
    def broken() -> Any:
        raise RuntimeError("db down")

    out = injector(one("lost_result")).run_call("lookup", {}, "c", broken)
    assert out.error_type == "TimeoutError"
    assert out.fault is not None and out.fault.attrs["real_call_error"] == "RuntimeError"


def test_crash_records_the_event_then_raises() -> None:
    tool = Tool()
    inj = injector(one("crash"))
    with pytest.raises(InjectedCrash) as err:
        inj.run_call("lookup", {}, "call-9", tool)
    assert tool.calls == 0
    assert len(inj.events) == 1 and inj.events[0].effect == EFFECT_CRASH
    assert err.value.fault is inj.events[0] and err.value.call_id == "call-9"


def test_payload_is_a_substring_of_what_the_agent_receives() -> None:
    for mode in ("timeout", "error_5xx", "connection_refused", "intermittent", "lost_result"):
        out = injector(one(mode)).run_call("lookup", {}, "c", Tool())
        assert out.fault is not None and out.fault.payload and out.fault.payload in str(out.error)
    for mode in ("truncated", "prompt_injection"):
        out = injector(one(mode)).run_call("lookup", {}, "c", Tool("some text result"))
        assert out.fault is not None and out.fault.payload and out.fault.payload in out.result


# --- real-call errors --------------------------------------------------------------------------


def test_real_call_errors_propagate() -> None:
    def broken() -> Any:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        injector().run_call("lookup", {}, "c", broken)
    inj = injector(one("malformed"))
    with pytest.raises(KeyError):
        inj.run_call("lookup", {}, "c", broken)
    assert inj.events[0].injected == "failed" and inj.events[0].observed == "exception"


# --- gating ------------------------------------------------------------------------------------


def test_disabled_injection_never_injects() -> None:
    tool = Tool()
    inj = injector(one("timeout", after_ms=5000), enabled=False)
    for i in range(3):
        out = inj.run_call("lookup", {}, f"c{i}", tool)
        assert out.result == RESULT and out.fault is None and out.called_real
    assert tool.calls == 3 and inj.events == []
    assert inj.decide("lookup", {}, "c") is None


def test_no_plan_never_injects() -> None:
    out = injector(None).run_call("lookup", {}, "c", Tool())
    assert out.fault is None and out.result == RESULT


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("true", True),
        ("1", True),
        ("yes", True),
        ("YES ", True),
        ("0", False),
        ("no", False),
        ("", False),
    ],
)
def test_env_gate(monkeypatch: pytest.MonkeyPatch, value: str, allowed: bool) -> None:
    monkeypatch.setenv(ENV_ALLOW_FAULT_INJECTION, value)
    assert injection_allowed() is allowed
    inj = FaultInjector(FaultPlan("P", 1, [one("timeout")]), clock=FakeClock())
    assert inj.enabled is allowed
    assert (inj.run_call("lookup", {}, "c", Tool()).fault is not None) is allowed
    # An explicit enabled overrides the environment either way.
    assert FaultInjector(None, enabled=not allowed).enabled is (not allowed)


def test_env_unset_means_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_ALLOW_FAULT_INJECTION, raising=False)
    assert not injection_allowed()
    assert injection_allowed({ENV_ALLOW_FAULT_INJECTION: "true"})
    assert not FaultInjector(FaultPlan("P", 1, [one("timeout")])).enabled


# --- targets, positions, probabilities ---------------------------------------------------------


def test_named_target_counts_only_its_own_calls() -> None:
    inj = injector(FaultSpec(id="F", target="lookup", mode="error_5xx", on_calls=(1,)))
    seen = []
    for i, tool in enumerate(["other", "lookup", "other", "lookup", "lookup"]):
        out = inj.run_call(tool, {}, f"c{i}", Tool())
        seen.append(out.fault is not None)
    assert seen == [False, False, False, True, False]
    assert inj.events[0].attempt == 1 and inj.events[0].call_id == "c3"


def test_wildcard_counts_every_call() -> None:
    inj = injector(FaultSpec(id="F", target="*", mode="error_5xx", on_calls=(0, 2)))
    fired = [inj.run_call(t, {}, f"c{i}", Tool()).fault is not None for i, t in enumerate("abcd")]
    assert fired == [True, False, True, False]
    assert inj.attempts == {"*": 4, "a": 1, "b": 1, "c": 1, "d": 1}


def test_first_matching_fault_wins() -> None:
    plan = FaultPlan(
        id="P",
        seed=1,
        faults=[
            FaultSpec(id="first", target="*", mode="error_5xx", on_calls=(0,)),
            FaultSpec(id="second", target="*", mode="malformed", on_calls=(0, 1)),
        ],
    )
    inj = FaultInjector(plan, clock=FakeClock(), enabled=True)
    faults = [inj.run_call("t", {}, f"c{i}", Tool()).fault for i in range(2)]
    assert [f.fault_id if f else None for f in faults] == ["first", "second"]


def test_probability_vector_fires_on_attempts_2_and_4() -> None:
    spec = FaultSpec(id="F1", target="carrier_api", mode="intermittent", probability=0.3)
    inj = FaultInjector(FaultPlan("FI-001", 42, [spec]), clock=FakeClock(), enabled=True)
    fired = [inj.run_call("carrier_api", {}, f"c{a}", Tool()).error is not None for a in range(5)]
    assert fired == [False, False, True, False, True]
    assert [e.attempt for e in inj.events] == [2, 4]
    assert round(inj.events[0].attrs["draw"], 4) == 0.2105


def test_same_seed_same_decisions_other_seed_other_decisions() -> None:
    def schedule(seed: int) -> list[bool]:
        spec = FaultSpec(id="F", target="*", mode="intermittent", probability=0.5)
        inj = FaultInjector(FaultPlan("P", seed, [spec]), clock=FakeClock(), enabled=True)
        return [inj.decide("t", {}, f"c{i}") is not None for i in range(24)]

    assert schedule(1) == schedule(1)
    assert schedule(1) != schedule(2)
    # Each decision is the independent draw of spec §1.5.
    expected = [
        int(hashlib.sha256(f"1:P:*:{i}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < 0.5
        for i in range(24)
    ]
    assert schedule(1) == expected


# --- cascades ----------------------------------------------------------------------------------


def reference_cascade() -> CascadePlan:
    return CascadePlan(
        id="C1",
        seed=42,
        stages=[
            CascadeStage(target="primary_carrier", mode="timeout", after_ms=2000),
            CascadeStage(target="backup_carrier", mode="error_5xx", http_status=503),
        ],
    )


def test_cascade_stage_is_armed_only_after_the_previous_fired() -> None:
    clock = FakeClock()
    inj = FaultInjector(reference_cascade(), clock=clock, enabled=True)
    backup = Tool()
    # Before the primary fails, the backup is untouched.
    assert inj.run_call("backup_carrier", {}, "c0", backup).fault is None
    assert backup.calls == 1
    primary = inj.run_call("primary_carrier", {}, "c1", Tool())
    assert primary.error_type == "TimeoutError" and clock.sleeps == [2.0]
    after = inj.run_call("backup_carrier", {}, "c2", backup)
    assert after.http_status == 503 and backup.calls == 1
    assert [(e.fault_id, e.attrs["stage_index"]) for e in inj.events] == [
        ("stage-0", 0),
        ("stage-1", 1),
    ]
    assert all(e.plan_id == "C1" for e in inj.events)


def test_cascade_on_one_wildcard_target_uses_call_positions() -> None:
    plan = CascadePlan(
        id="C",
        seed=1,
        stages=[
            CascadeStage(target="*", mode="timeout", on_calls=(0,)),
            CascadeStage(target="*", mode="error_5xx", http_status=503, on_calls=(1,)),
        ],
    )
    inj = FaultInjector(plan, clock=FakeClock(), enabled=True)
    outs = [inj.run_call("t", {}, f"c{i}", Tool()) for i in range(3)]
    assert [o.error_type for o in outs] == ["TimeoutError", "HTTPError", None]


def test_cascade_stage_one_never_fires_if_stage_zero_never_did() -> None:
    plan = CascadePlan(
        id="C",
        seed=1,
        stages=[
            CascadeStage(target="*", mode="timeout", on_calls=(5,)),
            CascadeStage(target="*", mode="error_5xx", on_calls=(1,)),
        ],
    )
    inj = FaultInjector(plan, clock=FakeClock(), enabled=True)
    assert all(inj.run_call("t", {}, f"c{i}", Tool()).fault is None for i in range(3))


# --- async ---------------------------------------------------------------------------------------


def test_arun_call_matches_run_call() -> None:
    async def real() -> Any:
        return "async result text"

    async def scenario() -> None:
        clock = FakeClock()
        inj = injector(one("timeout", after_ms=1500), clock=clock)
        out = await inj.arun_call("lookup", {}, "c1", real)
        assert out.error_type == "TimeoutError" and clock.sleeps == [1.5]
        out = await injector(one("truncated")).arun_call("lookup", {}, "c", real)
        assert out.result == "async re…"
        out = await injector(None).arun_call("lookup", {}, "c", real)
        assert out.result == "async result text" and out.fault is None
        with pytest.raises(InjectedCrash):
            await injector(one("crash")).arun_call("lookup", {}, "c", real)

    asyncio.run(scenario())


def test_arun_call_with_a_sync_only_clock() -> None:
    class SyncClock:
        def __init__(self) -> None:
            self.slept = 0.0

        def sleep(self, seconds: float) -> None:
            self.slept += seconds

        def now(self) -> float:
            return 0.0

    async def real() -> Any:
        return 1

    clock = SyncClock()
    inj = FaultInjector(FaultPlan("P", 1, [one("latency", after_ms=10)]), clock=clock, enabled=True)
    out = asyncio.run(inj.arun_call("lookup", {}, "c", real))
    assert out.result == 1 and clock.slept == 0.01


# --- clocks ------------------------------------------------------------------------------------


def test_fake_clock() -> None:
    clock = FakeClock(start=100.0)
    clock.sleep(1.5)
    clock.advance(0.5)
    asyncio.run(clock.asleep(2.0))
    assert clock.now() == 104.0 and clock.sleeps == [1.5, 2.0] and clock.slept == 3.5
    with pytest.raises(ValueError, match="seconds"):
        clock.sleep(-1)


def test_system_clock_does_not_sleep_for_zero() -> None:
    clock = SystemClock()
    before = clock.now()
    clock.sleep(0)
    asyncio.run(clock.asleep(0))
    assert clock.now() - before < 1.0


def test_injector_rejects_a_non_plan() -> None:
    with pytest.raises(ValueError, match="plan"):
        FaultInjector({"id": "P"}, enabled=True)  # type: ignore[arg-type]


def test_events_carry_the_clock_time() -> None:
    clock = FakeClock(start=1000.0)
    out = injector(one("timeout", after_ms=3000), clock=clock).run_call("lookup", {}, "c", Tool())
    assert out.fault is not None and out.fault.ts == 1003.0
