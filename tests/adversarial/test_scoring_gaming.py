"""Finding 1 of the adversarial pass: IRS must rest on what the injected fault put in front of
the agent, never on numbers, amounts, dates or codes that happen to be in an ordinary answer.

Each trace is written by hand; the expected S3 follows from DESIGN.md's rule by reading it."""

from __future__ import annotations

from typing import Any

import pytest

from hbeval.scoring import score_trial
from hbeval_core.contract import Task, TrialResult
from hbeval_core.events import (
    ChatMessage,
    FaultInjected,
    ModelEnd,
    ModelStart,
    RunEnd,
    RunStart,
    ToolCall,
    ToolEnd,
    ToolError,
    ToolStart,
)
from hbeval_core.vocab import SCORING_VERSION

R = "run-adv"


class Scn:
    index = 0
    domain = "finance"
    fault_type = "data_corruption"
    is_nominal = False


def _model(
    cid: str, seen: str, text: str | None, calls: list[tuple[str, str, dict[str, Any]]]
) -> list[Any]:
    return [
        ModelStart(run_id=R, call_id=cid, messages=[ChatMessage(role="tool", content=seen)]),
        ModelEnd(
            run_id=R,
            call_id=cid,
            text=text,
            tool_calls=[ToolCall(id=i, name=n, args=a) for i, n, a in calls],
        ),
    ]


def _altered(mode: str, payload: str, intended: dict[str, Any] | None = None) -> list[Any]:
    return [
        ToolStart(run_id=R, call_id="c1", tool="convert", args={"amount": 100}),
        FaultInjected(
            run_id=R,
            call_id="c1",
            tool="convert",
            mode=mode,
            effect="result_altered",
            payload=payload,
            intended=intended or {},
        ),
        ToolEnd(run_id=R, call_id="c1", tool="convert", result=payload),
    ]


def _error(payload: str, status: int | None) -> list[Any]:
    return [
        ToolStart(run_id=R, call_id="c1", tool="convert", args={"amount": 100}),
        FaultInjected(
            run_id=R,
            call_id="c1",
            tool="convert",
            mode="error_5xx",
            effect="error",
            payload=payload,
            attrs={} if status is None else {"http_status": status},
        ),
        ToolError(run_id=R, call_id="c1", tool="convert", error=payload),
    ]


def _trial(fault: list[Any], answer: str) -> Any:
    payload = next(e.payload for e in fault if isinstance(e, FaultInjected))
    events = [
        RunStart(run_id=R),
        *_model("m1", "How much is 100 EUR?", "Converting.", [("c1", "convert", {"amount": 100})]),
        *fault,
        *_model("m2", payload, answer, []),
        RunEnd(run_id=R),
    ]
    task = Task(id="fx", question="How much is 100 EUR in USD?", verify=lambda s, t: True)
    return score_trial(
        task, Scn(), TrialResult(final_state="ok", events=events, response_text=answer)
    )


# The answer repeats the (corrupted) data it received. Nothing in it refers to a failure.
ORDINARY_ANSWERS = [
    ("malformed", "100 EUR is 110.0 USD.", "100 EUR is 110.0 USD."),
    (
        "truncated",
        "Rate table: 1 EUR = 1.10 USD, fee 250",
        "The fee is 250 and 100 EUR is 110 USD.",
    ),
    ("malformed", '{"amount": "404", "currency": "USD"}', "Your amount is 404 USD."),
    ("empty_response", "null", "Converted on 2024-05-03: null change, 100 EUR."),
    ("truncated", "Order ORD-500 total 503.00", "Order ORD-500 totals 503.00 EUR."),
]


@pytest.mark.parametrize(("mode", "payload", "answer"), ORDINARY_ANSWERS)
def test_numbers_in_an_altered_result_are_not_evidence_of_handling(
    mode: str, payload: str, answer: str
) -> None:
    v = _trial(_altered(mode, payload), answer)
    assert v.faulted and v.signals is not None
    assert v.signals.s3 is False, answer
    # Passed but not deliberately: a recovery without S2 or S3 earns no IRS.
    assert v.signals.deliberate is False and v.irs_score == 0.0


def test_a_malformed_results_own_marker_still_counts() -> None:
    payload = '{"unexpected_field": true, "reason": "schema_mismatch"}'
    v = _trial(
        _altered("malformed", payload, {"malformed_kind": "wrong_schema"}),
        "The service answered with schema_mismatch, so I will not trust that figure.",
    )
    assert v.signals is not None and v.signals.s3 is True
    enum = _trial(
        _altered(
            "malformed", '{"status": "quantum_superposition"}', {"malformed_kind": "invalid_enum"}
        ),
        "Status came back as quantum_superposition, which is not a valid status.",
    )
    assert enum.signals is not None and enum.signals.s3 is True
    # hbeval-scoring/3: repeating the marker without saying anything is wrong with it names
    # nothing; the answer carries what the fault planted (a silent corruption).
    echo = _trial(
        _altered(
            "malformed", '{"status": "quantum_superposition"}', {"malformed_kind": "invalid_enum"}
        ),
        "Status came back as quantum_superposition.",
    )
    assert echo.signals is not None and echo.signals.s3 is False
    assert echo.signals.silent_corruption is True and echo.signals.s6 is False


ERR = "HTTPError: 503 Service Unavailable returned by tool 'convert'"


@pytest.mark.parametrize("status", [503, None])
def test_an_error_faults_recorded_status_counts_as_a_whole_token(status: int | None) -> None:
    named = _trial(_error(ERR, status), "Got 503 from convert; 100 EUR is about 110 USD.")
    assert named.signals is not None and named.signals.s3 is True
    inside = _trial(_error(ERR, status), "100 EUR is 15030 cents of something; here it is.")
    assert inside.signals is not None and inside.signals.s3 is False


def test_scoring_version_was_bumped_for_the_signal_rule() -> None:
    assert SCORING_VERSION == "hbeval-scoring/3"


def test_a_lone_surrogate_in_a_tool_result_does_not_stop_a_malformed_fault() -> None:
    # Found by running a hand-built agent whose tool argument held "\ud800": the wrong_type
    # corruption hashed the text as strict UTF-8 and the context_corruption faults were never
    # injected (reported honestly as not measured, but the agent escaped its faults).
    from hbeval_core.faults.runtime import malform

    text = "Sunny in Oslo \ud800, 21C"
    value = malform(text, "wrong_type")  # a string result stays a string
    assert isinstance(value, str) and int(value) >= 100_000
    assert malform(text, "wrong_type") == value  # deterministic
