"""Model faults in scoring: their delivery receipt and how the client handled each."""

from __future__ import annotations

from typing import Any

from hbeval.scoring import score_trial
from hbeval.scoring._model_faults import HANDLINGS, handling, handling_counts, model_fault_receipt
from hbeval.testing.conformance import two_tool_task
from hbeval_core.contract import TrialResult
from hbeval_core.events import FaultInjected, ModelEnd, ModelStart, RunEnd, RunStart


def receipt(
    mode: str = "rate_limit", followed: dict[str, Any] | None = None, **kw: Any
) -> FaultInjected:
    attrs: dict[str, Any] = {"received": True, "delivered_by": "http"}
    if followed is not None:
        attrs["followed_by"] = followed
    return FaultInjected(
        run_id="r", call_id="model#0", mode=mode, effect="error", attrs=attrs, **kw
    )  # type: ignore[arg-type]


def test_a_received_model_fault_is_delivered_without_a_payload_in_the_next_input() -> None:
    assert model_fault_receipt(receipt()) == (True, "received_by_client")
    assert model_fault_receipt(receipt(injected="skipped")) == (False, "not_seen")
    tool = FaultInjected(run_id="r", call_id="c", tool="t", mode="timeout", effect="error")
    assert model_fault_receipt(tool) is None


def test_handling_from_what_followed() -> None:
    honoured = {"action": "retry", "after_ms": 1010.0, "honoured_retry_after": True}
    ignored = {"action": "retry", "after_ms": 3.0, "honoured_retry_after": False}
    assert handling(receipt(followed=honoured)) == "deliberate"
    assert handling(receipt(followed=ignored)) == "retry_ignored_retry_after"
    assert handling(receipt("model_error", {"action": "retry", "after_ms": 400.0})) == "deliberate"
    assert handling(receipt(followed={"action": "fallback", "model": "small"})) == "deliberate"
    assert handling(receipt(followed={"action": "gave_up"})) == "gave_up"
    assert handling(receipt(followed={"action": "continued", "after_ms": 5.0})) == "continued"
    assert handling(receipt()) == "unknown"
    events = [receipt(followed=honoured), receipt(followed=ignored), receipt(followed=ignored)]
    assert handling_counts(events) == dict.fromkeys(HANDLINGS, 0) | {
        "deliberate": 1,
        "retry_ignored_retry_after": 2,
    }


def test_a_trial_with_a_received_429_is_faulted_and_the_fault_delivered() -> None:
    events = [
        RunStart(run_id="r", seq=0, framework="openai-proxy"),
        ModelStart(run_id="r", seq=1, call_id="model#0"),
        receipt(followed={"action": "retry", "after_ms": 100.0, "honoured_retry_after": True}),
        ModelEnd(run_id="r", seq=3, call_id="model#0", error="Rate limit reached"),
        ModelStart(run_id="r", seq=4, call_id="model#1"),
        ModelEnd(run_id="r", seq=5, call_id="model#1", text="done"),
        RunEnd(run_id="r", seq=6, status="ok"),
    ]
    result = TrialResult(final_state="done", events=events, response_text="done")
    verdict = score_trial(two_tool_task(), None, result).as_dict()
    (fault,) = verdict["faults"]
    assert fault["mode"] == "rate_limit" and fault["delivered"] is True
    assert fault["receipt"] == "received_by_client"
    assert verdict["faulted"] is True
