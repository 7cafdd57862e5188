"""Rate limits and cost budgets of a battery run, on the real LangGraph stack.

The agent is the packaged careful support graph (``tests.runner.limits_agent``); only its chat
model is scripted, and it answers some trials' first call with a real ``openai.RateLimitError``
(a real ``httpx.Response`` carrying ``Retry-After``). Waits are real and short.
"""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from hbeval.cli._battery import battery_app
from hbeval.runner.manifest import RunManifest
from hbeval.runner.run import run_battery
from hbeval.store import InMemoryStore
from hbeval_core.contract import (
    MAX_PAUSE,
    RateLimiter,
    RateLimitTooLong,
    rate_limit_delay,
)
from hbeval_core.contract._ratelimit import DEFAULT_RETRY_AFTER
from hbeval_core.faults import Battery
from hbeval_core.vocab import MODEL_END, MODEL_START

from . import limits_agent
from .limits_agent import LIMITED, RETRY_AFTER, rate_limit_error, tasks
from .report_compare import without_timings

MODEL = "scripted-careful"
PRICES = {MODEL: {"input_per_1k": 0.002, "output_per_1k": 0.01}}


def run(factory: Any, store: Any = None, *, n: int = 6, trials: int = 2, **kw: Any) -> Any:
    name = factory.__name__
    manifest = kw.pop("manifest", RunManifest(target=f"tests.runner.limits_agent:{name}"))
    return run_battery(
        None,
        factory,
        tasks,
        Battery.hbeval(n_scenarios=n, seed=42),
        trials=trials,
        seed=42,
        store=store if store is not None else InMemoryStore(),
        manifest=manifest,
        **kw,
    ).to_dict()


def comparable(report: Any) -> Any:
    """A report without timings, attempt counts and the rate-limit figures (what a 429 changes),
    nor the manifest hash (the two factories are two targets) and the binding over them."""
    data = without_timings(report)
    data.pop("manifest_hash")
    data.pop("binding", None)
    data.pop("loaded_sources", None)
    data["run"].pop("rate_limit", None)
    for t in data["trials"]:
        t.pop("attempts", None)
    return data


def model_starts(store: Any, run_id: str) -> list[float]:
    """When every model call of every attempt of the run started (its ``model_start`` event)."""
    times = []
    for t in store.list_trials(run_id):
        for a in store.list_attempts(run_id, t.trial_key):
            for e in store.iter_events(run_id, t.trial_key, attempt=a.attempt):
                if e.kind == MODEL_START:
                    times.append(e.ts)
    return times


# ------------------------------------------------------------------------- recognising a 429
def test_rate_limit_delay_reads_what_clients_raise() -> None:
    assert rate_limit_delay(rate_limit_error("7")) == 7.0
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 27.0 <= (rate_limit_delay(rate_limit_error(when)) or 0) <= 30.0
    request = httpx.Request("GET", "https://example.test/v1")
    ms = httpx.Response(429, headers={"retry-after-ms": "250"}, request=request)
    assert rate_limit_delay(ms) == 0.25  # a response itself, in milliseconds
    with pytest.raises(httpx.HTTPStatusError) as raised:
        httpx.Response(429, headers={"Retry-After": "3"}, request=request).raise_for_status()
    assert rate_limit_delay(raised.value) == 3.0  # .response.status_code
    try:  # a framework's wrapper keeping the client's error as its cause
        try:
            raise rate_limit_error("4")
        except Exception as inner:
            raise RuntimeError("the chat model failed") from inner
    except RuntimeError as wrapped:
        assert rate_limit_delay(wrapped) == 4.0
    bare = httpx.Response(429, request=request)
    assert rate_limit_delay(bare) == DEFAULT_RETRY_AFTER
    server = httpx.Response(500, headers={"retry-after": "9"}, request=request)
    assert rate_limit_delay(server) is None
    assert rate_limit_delay(ValueError("no")) is None
    assert rate_limit_delay(None) is None


def test_the_limiter_paces_calls_and_pauses_once_for_overlapping_429s() -> None:
    clock = [100.0]
    limiter = RateLimiter(60, now=lambda: clock[0])  # one call a second
    assert [limiter.reserve() for _ in range(3)] == [0.0, 1.0, 2.0]
    clock[0] = 110.0
    assert limiter.hit(5) == 5.0
    clock[0] = 112.0
    assert limiter.hit(4) == 4.0  # until 116: one second more than the first pause
    assert limiter.pause_left() == 4.0 and limiter.reserve() == 4.0
    assert limiter.stats() == {"rpm": 60.0, "hits": 2, "paused_seconds": 6.0}
    with pytest.raises(RateLimitTooLong, match=rf"cap of {MAX_PAUSE:g} s .*max_pause"):
        limiter.hit(MAX_PAUSE + 1)
    with pytest.raises(ValueError, match="rate_limit"):
        RateLimiter(0)


# ------------------------------------------------------------------------- a run under 429s
def test_a_429_pauses_the_whole_run_and_the_verdicts_stay() -> None:
    store = InMemoryStore()
    # Trials are cut after 1.5 s of their own time; the pause is 2 s: it must not count.
    limited = run(limits_agent.careful_429, store, concurrency=4, timeout=1.5)
    reference = run(limits_agent.careful, concurrency=4, timeout=1.5)
    assert "rate_limit" not in reference["run"] and "budget" not in reference["run"]
    assert limited["outcomes"]["timeout"] == 0
    assert comparable(limited) == comparable(reference)
    figures = limited["run"]["rate_limit"]
    assert figures["rpm"] is None and figures["hits"] == len(LIMITED)
    assert figures["paused_seconds"] >= RETRY_AFTER
    run_id = limited["run"]["run_id"]
    hits = []
    for key in sorted(LIMITED):
        first, second = store.list_attempts(run_id, key)
        assert first.outcome == "infra_error" and "HTTP 429" in (first.error or "")
        assert second.outcome == "pass"
        hits.append(first.ended_at)
    starts = model_starts(store, run_id)
    for hit in hits:  # while the run is paused no trial starts a model call
        assert not [t for t in starts if hit + 0.1 < t < hit + RETRY_AFTER - 0.1]
    by_key = {t["trial_key"]: t for t in limited["trials"]}
    spanning = [
        t
        for t in store.list_trials(run_id)
        if t.started_at < hits[0] and t.ended_at > hits[0] + RETRY_AFTER
    ]
    assert spanning  # trials that were running when the pause began waited it out...
    for t in spanning:  # ...and the wait is not their latency
        wall_ms = (t.ended_at - t.started_at) * 1000.0
        assert by_key[t.trial_key]["latency_ms"] < wall_ms - 1000.0


def test_a_pause_over_the_cap_stops_the_run_naming_the_cap() -> None:
    store = InMemoryStore()
    with pytest.raises(RateLimitTooLong, match=r"3600 s, over the cap of 120 s"):
        run(limits_agent.careful_429_long, store)
    (stored,) = store.list_runs()
    assert stored.status == "interrupted"


def test_rate_limit_spaces_the_runs_model_calls() -> None:
    store = InMemoryStore()
    report = run(limits_agent.careful, store, trials=1, concurrency=4, rate_limit=600)
    assert report["run"]["rate_limit"] == {"rpm": 600.0, "hits": 0, "paused_seconds": 0.0}
    starts = sorted(model_starts(store, report["run"]["run_id"]))
    assert len(starts) >= 12
    # 600 a minute: one call each 0.1 s across the four trials at a time (unlimited, they
    # would overlap and the whole run would take a fraction of this).
    assert starts[-1] - starts[0] >= 0.1 * (len(starts) - 1) - 0.05


# ------------------------------------------------------------------------- the cost budget
def trial_costs(store: Any, run_id: str) -> dict[str, float]:
    """Each trial's cost from its final attempt's ``model_end`` token counts and ``PRICES``."""
    price = PRICES[MODEL]
    costs = {}
    for t in store.list_trials(run_id):
        tin = tout = 0
        final = store.list_attempts(run_id, t.trial_key)[-1]
        for e in store.iter_events(run_id, t.trial_key, attempt=final.attempt):
            if e.kind == MODEL_END:
                tin += e.usage.input_tokens
                tout += e.usage.output_tokens
        costs[t.trial_key] = (tin * price["input_per_1k"] + tout * price["output_per_1k"]) / 1000
    return costs


def priced() -> RunManifest:
    return RunManifest(
        target="tests.runner.limits_agent:careful", model_id=MODEL, price_table=PRICES
    )


def test_the_budget_stops_new_trials_and_a_larger_one_resumes_the_run() -> None:
    full_store = InMemoryStore()
    full = run(limits_agent.careful, full_store, manifest=priced())
    costs = trial_costs(full_store, full["run"]["run_id"])
    first, second = costs["s000-t0"], costs["s000-t1"]
    assert first > 0 and second > 0
    store = InMemoryStore()
    budget = first + second / 2  # spent only once the second trial is counted
    stopped = run(limits_agent.careful, store, manifest=priced(), max_cost=budget)
    assert stopped["run"]["budget"] == {
        "max_cost": budget,
        "spent": pytest.approx(first + second),
        "stopped": "budget_exhausted",
    }
    assert [t["trial_key"] for t in stopped["trials"]] == ["s000-t0", "s000-t1"]
    assert stopped["run"]["trial_count"] == 2 and sum(stopped["outcomes"].values()) == 2
    (record,) = store.list_runs()
    assert record.status == "interrupted" and store.get_report(record.run_id) is None
    resumed = run(limits_agent.careful, store, manifest=priced(), max_cost=100.0)
    assert resumed["run"]["run_id"] == record.run_id
    assert resumed["run"]["budget"] == {
        "max_cost": 100.0,
        "spent": pytest.approx(sum(costs.values())),
        "stopped": None,
    }
    resumed["run"].pop("budget")
    assert without_timings(resumed) == without_timings(full)
    assert store.list_runs()[0].status == "completed"


def test_with_concurrency_the_budget_starts_no_trial_after_it_is_spent() -> None:
    store = InMemoryStore()
    report = run(limits_agent.careful, store, manifest=priced(), max_cost=1e-9, concurrency=3)
    # Three trials were started together; once the first was counted none more started.
    assert report["run"]["trial_count"] == 3
    assert report["run"]["budget"]["stopped"] == "budget_exhausted"
    assert len(store.list_trials(report["run"]["run_id"])) == 3


def test_a_budget_needs_a_price_for_the_model() -> None:
    with pytest.raises(ValueError, match=r"max_cost \(--max-cost\) needs the price.*price_table"):
        run(limits_agent.careful, max_cost=1.0)
    other = RunManifest(
        target="tests.runner.limits_agent:careful",
        model_id="another-model",
        price_table={"x": PRICES[MODEL], "y": PRICES[MODEL]},
    )
    with pytest.raises(ValueError, match="no price for model 'another-model'"):
        run(limits_agent.careful, manifest=other, max_cost=1.0)


def test_the_cli_refuses_a_budget_without_prices_and_a_bad_rate(tmp_path: Any) -> None:
    cli = CliRunner()
    base = [
        "run", "tests.runner.limits_agent:careful", "--tasks", "tests.runner.limits_agent:tasks",
        "--scenarios", "6", "--trials", "1", "--db", str(tmp_path / "hb.db"),
    ]  # fmt: skip
    res = cli.invoke(battery_app, [*base, "--max-cost", "1"])
    assert res.exit_code == 2
    assert "--max-cost" in res.output and "price_table" in res.output
    res = cli.invoke(battery_app, [*base, "--rate-limit", "0"])
    assert res.exit_code == 2 and "--rate-limit" in res.output
    assert not (tmp_path / "hb.db").exists()  # refused before the store was opened


def test_the_cli_stops_at_the_budget_and_says_how_to_resume(tmp_path: Any) -> None:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"model_id": MODEL, "price_table": PRICES}))
    out = tmp_path / "r.json"
    args = [
        "run", "tests.runner.limits_agent:careful", "--tasks", "tests.runner.limits_agent:tasks",
        "--scenarios", "6", "--trials", "1", "--db", str(tmp_path / "hb.db"),
        "--manifest", str(manifest), "--out", str(out), "--rate-limit", "6000",
    ]  # fmt: skip
    res = CliRunner().invoke(battery_app, [*args, "--max-cost", "1e-9"])
    assert res.exit_code == 0, res.output
    assert "stopped (budget_exhausted)" in res.output and "--max-cost" in res.output
    report = json.loads(out.read_text())
    assert report["run"]["budget"]["stopped"] == "budget_exhausted"
    assert report["run"]["trial_count"] == 1
    assert report["run"]["rate_limit"] == {"rpm": 6000.0, "hits": 0, "paused_seconds": 0.0}
    res = CliRunner().invoke(battery_app, [*args, "--max-cost", "100"])
    assert res.exit_code == 0, res.output
    resumed = json.loads(out.read_text())
    assert resumed["run"]["run_id"] == report["run"]["run_id"]
    assert resumed["run"]["trial_count"] == 6 and resumed["run"]["budget"]["stopped"] is None
