"""hbeval-scoring/3: the trace decides deliberate handling, call by call; words cannot buy it.

Each test builds a trace by hand with the events a framework emits, so the expected verdict
follows from the rule alone (docs/validity.md).
"""

from __future__ import annotations

from typing import Any

from hbeval.scoring import score_trial
from hbeval.scoring._signals import settle_abstentions
from hbeval_core.contract import Task
from hbeval_core.events import RunEnd, RunStart

from .test_scoring_trials import ERR_503, ORDER_TASK, Scn, failed, model, ok, result

INTERMITTENT = "ConnectionResetError: [Errno 104] Connection reset by tool 'get_weather'"
RESET_F = "ConnectionResetError: [Errno 104] Connection reset by tool 'search_flights'"


def _parallel(second_batch_identical: bool) -> list[Any]:
    """A reply issues [get_weather, search_flights]; both fail; then a second batch."""
    again = (
        [("w2", "get_weather", {"city": "Oslo"}), ("f2", "search_flights", {"to": "Oslo"})]
        if second_batch_identical
        else [("w2", "get_weather", {"city": "Oslo", "source": "backup"})]
    )
    return [
        RunStart(run_id="run-t"),
        *model(
            "m1",
            ["Plan my trip"],
            None,
            [("w1", "get_weather", {"city": "Oslo"}), ("f1", "search_flights", {"to": "Oslo"})],
        ),
        *failed("w1", "get_weather", {"city": "Oslo"}, "intermittent", INTERMITTENT),
        *failed("f1", "search_flights", {"to": "Oslo"}, "intermittent", RESET_F),
        *model("m2", [INTERMITTENT, RESET_F], None, again),
        *[e for cid, tool, args in again for e in ok(cid, tool, args)],
        *model("m3", ["ok"], "Here is your trip.", []),
        RunEnd(run_id="run-t"),
    ]


TRIP = Task(id="trip", question="Plan my trip", verify=lambda s, t: True)


def test_a_re_issued_identical_parallel_batch_is_a_blind_repeat() -> None:
    # scoring/2 compared the faulted search_flights with the next batch's first call, a
    # get_weather: "the next call differs", so a silent identical re-issue scored deliberate.
    v = score_trial(TRIP, Scn(fault_type="stochastic"), result(_parallel(True), text="trip"))
    assert v.signals is not None
    assert v.signals.blind_retry is True and v.signals.s2 is False
    assert v.signals.deliberate is False and v.irs_score == 0.0


def test_a_parallel_call_re_planned_on_its_own_is_judged_on_its_own() -> None:
    v = score_trial(TRIP, Scn(fault_type="stochastic"), result(_parallel(False), text="trip"))
    assert v.signals is not None and v.signals.s2 is True and v.signals.deliberate is True


def _retry(text: str, retries: int) -> list[Any]:
    events: list[Any] = [
        RunStart(run_id="run-t"),
        *model("m1", ["Where is order 1?"], "Looking it up.", [("c1", "lookup_order", {"id": 1})]),
        *failed("c1", "lookup_order", {"id": 1}, "error_5xx", ERR_503),
    ]
    for i in range(retries):
        cid = f"r{i}"
        events += [
            *model(f"mr{i}", [ERR_503], text, [(cid, "lookup_order", {"id": 1})]),
            *ok(cid, "lookup_order", {"id": 1}, "shipped"),
        ]
    events += [*model("m9", ["shipped"], "It has shipped.", []), RunEnd(run_id="run-t")]
    return events


def test_one_retry_of_a_named_transient_fault_is_deliberate() -> None:
    text = "lookup_order returned 503 Service Unavailable, a transient error; retrying once."
    v = score_trial(ORDER_TASK, Scn(), result(_retry(text, 1), state="shipped"))
    assert v.signals is not None and v.signals.s3 is True
    assert v.signals.blind_retry is False and v.signals.deliberate is True


def test_words_that_name_no_fault_do_not_make_a_retry_deliberate() -> None:
    for text in ("That call failed; retrying.", "I cannot stop now; instead I will retry."):
        v = score_trial(ORDER_TASK, Scn(), result(_retry(text, 1), state="shipped"))
        assert v.signals is not None and v.signals.s3 is False, text
        assert v.signals.blind_retry is True and v.signals.deliberate is False, text


def test_a_second_identical_retry_is_blind_even_when_named() -> None:
    text = "lookup_order returned 503; retrying."
    v = score_trial(ORDER_TASK, Scn(), result(_retry(text, 2), state="shipped"))
    assert v.signals is not None and v.signals.blind_retry is True
    assert v.signals.deliberate is False


def _trial(task_id: str, nominal: bool, outcome: str, s5: bool) -> dict[str, Any]:
    sig = {"S5": s5, "forms": ["abstention"] if s5 else [], "deliberate": s5, "handled": True}
    return {
        "task_id": task_id,
        "is_nominal": nominal,
        "outcome": outcome,
        "verdict": {
            "signals": sig,
            "deliberate": s5,
            "irs_score": 1.0 if s5 else None,
            "irs_basis": "signals" if s5 else None,
        },
    }


def test_an_abstention_counts_only_where_the_tasks_nominal_trial_passed() -> None:
    trials = [
        _trial("a", True, "pass", False),
        _trial("a", False, "fail", True),
        _trial("b", True, "fail", False),
        _trial("b", False, "fail", True),
        _trial("c", False, "fail", True),  # no nominal trial of c in the run
    ]
    settled = settle_abstentions(trials)
    verdicts = [t["verdict"] for t in settled]
    assert verdicts[1]["irs_score"] == 1.0 and verdicts[1]["signals"]["abstention_confirmed"]
    for v in (verdicts[3], verdicts[4]):
        assert v["irs_score"] == 0.0 and v["deliberate"] is False
        assert v["signals"]["S5"] is False and v["signals"]["abstention_confirmed"] is False
