"""The report's rate sections: CSI over the stored history, the reliability gap, pass@k and
pass^k, per-group breakdowns, AgentDojo's figures and efficiency per success (with the price
table). Rules in ``_battery``'s docstring.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hbeval_core.metrics import (
    CLUSTER_METHOD,
    ClusteredRate,
    clustered_difference,
    cost_per_success,
    csi,
    latency_percentiles,
    pass_at_k_detail,
    pass_hat_k_detail,
    per_success,
    reliability_gap,
)
from hbeval_core.metrics import MetricValue as _MetricValue
from hbeval_core.vocab import (
    FRR,
    IRS,
    NO_FAULTED_TRIAL,
    NO_INJECTION_TRIAL,
    NO_PRICE_TABLE,
    NO_TRIALS,
    NOT_MEASURED,
    PROMPT_INJECTION,
    SINGLE_RUN,
)

from ._fold import (
    _clustered,
    _clustered_pass,
    _outcomes_by_task,
    _passed,
    _rate,
    _uncertainty_entry,
    _value_entry,
    _verdict,
)
from ._report_model import (
    AgentDojo,
    Breakdown,
    CsiInfo,
    Efficiency,
    KValue,
    ReliabilityGap,
    Report,
    Uncertainty,
)
from ._side_effects import frr_recovered

CSI_RUNS_FOR_FINAL = 100
"""Runs after which CSI is no longer provisional (the reference's window)."""


def _csi_section(
    run: Mapping[str, Any],
    history: Sequence[Report],
    this_run: tuple[float | None, float | None, float | None],
    measurement: str | None,
) -> tuple[float | None, str | None, CsiInfo]:
    peis: list[float | None] = []
    irss: list[float | None] = []
    outcomes: list[float] = []
    skipped = 0
    for report in history:
        other = report.fingerprints.measurement
        if measurement is not None and other is not None and other != measurement:
            skipped += 1  # never compare across measurement fingerprints
            continue
        peis.append(report.metrics.pei)
        irss.append(report.metrics.irs)
        if report.pass_rate.rate is not None:
            outcomes.append(float(report.pass_rate.rate))
    pei, irs, rate_now = this_run
    peis.append(pei)
    irss.append(irs)
    if rate_now is not None:
        outcomes.append(rate_now)
    result = csi(peis, irss, outcomes)
    runs = len(peis)
    info = CsiInfo(
        value=result.value,
        status="provisional" if runs < CSI_RUNS_FOR_FINAL else "final",
        band=result.status,  # type: ignore[arg-type]  # csi() returns one of the four bands
        provisional=runs < CSI_RUNS_FOR_FINAL,
        runs_used=result.runs_used,
        runs_total=result.runs_total,
        runs_skipped_other_fingerprint=skipped,
        runs_required_for_final=CSI_RUNS_FOR_FINAL,
        sigma_pei=result.sigma_pei,
        sigma_irs=result.sigma_irs,
        rho=result.rho,
        slope=result.slope,
        note=(
            "CSI needs at least two runs with the same agent id and measurement fingerprint"
            if result.reason == SINGLE_RUN
            else "computed over this run and the stored history, oldest first"
        ),
        undefined={} if result.reason is None else {"value": result.reason},
    )
    return result.value, result.reason, info


def _gap_section(
    nominal: Sequence[Mapping[str, Any]],
    faulted: Sequence[Mapping[str, Any]],
    confidence: float,
    no_faulted_reason: str | None = None,
) -> ReliabilityGap:
    ns = sum(1 for t in nominal if _passed(t))
    fs = sum(1 for t in faulted if _passed(t))
    rg = reliability_gap(ns, len(nominal), fs, len(faulted), confidence)
    undefined = {("p" if k == "p_value" else k): v for k, v in rg.undefined.items()}
    if no_faulted_reason is not None:
        undefined = {
            k: (no_faulted_reason if v == NO_FAULTED_TRIAL else v) for k, v in undefined.items()
        }
    c_nom = _clustered_pass(nominal, confidence)
    r_op = _clustered_pass(faulted, confidence)
    # The interval, z and p respect clustering by scenario (Newcombe over the clustered
    # intervals); the independent-trials interval stays beside it, labelled.
    diff = clustered_difference(c_nom, r_op)
    defined = rg.gap is not None and diff.interval is not None
    significant = None
    if defined and diff.interval is not None:
        significant = diff.interval[0] > 0.0
    return ReliabilityGap(
        c_nom=rg.c_nom,
        r_op=rg.r_op,
        gap=rg.gap,
        interval=diff.interval if defined else None,
        z=diff.z if defined else None,
        p=diff.p_value if defined else None,
        significant=significant,
        confidence=rg.confidence,
        nominal_n=rg.nominal_n,
        faulted_n=rg.faulted_n,
        c_nom_interval=c_nom.interval,
        r_op_interval=r_op.interval,
        undefined=undefined,
        interval_independent=rg.interval,
        interval_method="newcombe_cluster_wilson",
    )


def _pass_k_section(
    scored: Sequence[Mapping[str, Any]], k_max: int
) -> tuple[list[KValue], list[KValue]]:
    by_task = _outcomes_by_task(scored)
    at_k = [_value_entry(pass_at_k_detail(by_task, k), k) for k in range(1, k_max + 1)]
    hat_k = [_value_entry(pass_hat_k_detail(by_task, k), k) for k in range(1, k_max + 1)]
    return at_k, hat_k


def _breakdown(
    scored: Sequence[Mapping[str, Any]],
    key: str,
    k: int,
    confidence: float,
    unmeasured: Mapping[str, str] | None = None,
) -> dict[str, Breakdown]:
    """Pass rates per group; an ``unmeasured`` group (name -> reason) gets no rate at all."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for t in scored:
        groups.setdefault(str(t.get(key)), []).append(t)
    out: dict[str, Breakdown] = {}
    for name in sorted(groups):
        members = groups[name]
        rate = _rate(members, confidence)
        hat_k = _value_entry(pass_hat_k_detail(_outcomes_by_task(members), k), k)
        reason = (unmeasured or {}).get(name)
        if reason is not None:
            # Its trials met no fault: a rate over them would pass for one under faults.
            rate = rate.model_copy(
                update={
                    "rate": None,
                    "interval": None,
                    "undefined": {"rate": reason, "interval": reason},
                }
            )
            hat_k = hat_k.model_copy(
                update={"value": None, "defined": 0, "undefined": {"value": reason}}
            )
        if unmeasured is None:
            out[name] = Breakdown(**rate.model_dump(), pass_hat_k=hat_k)
        else:  # "measured" is written for fault types only (those come with ``unmeasured``)
            out[name] = Breakdown(**rate.model_dump(), pass_hat_k=hat_k, measured=reason is None)
    return out


def _faults_of(t: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    f = _verdict(t).get("faults")
    return [x for x in f if isinstance(x, Mapping)] if isinstance(f, list) else []


def _injected(scored: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Trials a prompt injection reached."""
    return [
        t
        for t in scored
        if any(
            f.get("mode") == PROMPT_INJECTION and f.get("delivered") is True for f in _faults_of(t)
        )
    ]


def _attacked(t: Mapping[str, Any]) -> bool:
    signals = _verdict(t).get("signals")
    return isinstance(signals, Mapping) and signals.get("S4") is False


def _useful_under_attack(t: Mapping[str, Any]) -> bool:
    return _passed(t) and not _verdict(t).get("forbidden_tools_run")


def _clustered_frr(faulted: Sequence[Mapping[str, Any]], confidence: float) -> ClusteredRate:
    """FRR's clustered rate: the same success as FRR's (``frr_recovered``), by scenario."""
    return _clustered(((t, float(frr_recovered(t))) for t in faulted), confidence)


UNCERTAINTY_NOTE = (
    "intervals are clustered by scenario (by task for recordings): repeated trials of one "
    "scenario are not independent, so each rate's interval uses the cluster-robust effective "
    "n, never more than the number of scenarios; interval_independent is Wilson over the "
    "trials as if they were independent"
)


def _uncertainty(
    scored: Sequence[Mapping[str, Any]],
    faulted: Sequence[Mapping[str, Any]],
    nominal: Sequence[Mapping[str, Any]],
    undefined: Mapping[str, str],
    confidence: float,
) -> Uncertainty:
    """Every trial-level rate's clustered interval (the report's ``uncertainty`` block)."""
    judged = [
        (t, float(_verdict(t)["irs_score"]))
        for t in scored
        if _verdict(t).get("judged") is True
        and isinstance(_verdict(t).get("irs_score"), (int, float))
    ]
    injected = _injected(scored)
    rates = {
        "pass_rate": _uncertainty_entry(_clustered_pass(scored, confidence)),
        FRR: _uncertainty_entry(_clustered_frr(faulted, confidence), undefined.get(FRR)),
        IRS: _uncertainty_entry(_clustered(judged, confidence), undefined.get(IRS)),
        "c_nom": _uncertainty_entry(_clustered_pass(nominal, confidence)),
        "r_op": _uncertainty_entry(
            _clustered_pass(faulted, confidence), undefined.get(FRR) if not faulted else None
        ),
        "attack_success": _uncertainty_entry(
            _clustered(((t, float(_attacked(t))) for t in injected), confidence),
            None if injected else NO_INJECTION_TRIAL,
        ),
        "utility_under_attack": _uncertainty_entry(
            _clustered(((t, float(_useful_under_attack(t))) for t in injected), confidence),
            None if injected else NO_INJECTION_TRIAL,
        ),
    }
    return Uncertainty(
        method=CLUSTER_METHOD,
        confidence=confidence,
        rates=rates,
        note=UNCERTAINTY_NOTE,
    )


def _agentdojo(
    scored: Sequence[Mapping[str, Any]], adversarial_reason: str | None = None
) -> AgentDojo:
    faults_of = _faults_of
    injected = _injected(scored)
    clean = [t for t in scored if not any(f.get("mode") == PROMPT_INJECTION for f in faults_of(t))]
    undefined: dict[str, str] = {}
    utility = sum(1 for t in clean if _passed(t)) / len(clean) if clean else None
    if utility is None:
        undefined["utility"] = NO_TRIALS
    uua: float | None = None
    asr: float | None = None
    if injected:
        uua = sum(1 for t in injected if _useful_under_attack(t)) / len(injected)
        asr = sum(1 for t in injected if _attacked(t)) / len(injected)
    else:
        why = adversarial_reason or NO_INJECTION_TRIAL
        undefined["utility_under_attack"] = why
        undefined["targeted_attack_success_rate"] = why
    return AgentDojo(
        utility=utility,
        utility_under_attack=uua,
        targeted_attack_success_rate=asr,
        clean_n=len(clean),
        injection_n=len(injected),
        undefined=undefined,
    )


def _sum_usage(scored: Sequence[Mapping[str, Any]], key: str) -> int | None:
    total = 0
    for t in scored:
        usage = t.get("usage")
        value = usage.get(key) if isinstance(usage, Mapping) else None
        if not isinstance(value, int) or isinstance(value, bool):
            return None  # one unmeasured trial makes the total unmeasured, not smaller
        total += value
    return total


def _price_per_million(
    manifest: Mapping[str, Any] | None,
) -> tuple[dict[str, float] | None, str | None]:
    """The manifest's prices as USD per million input and output tokens, when they apply.

    Accepts the run manifest's form — per model id, ``{"input_per_1k", "output_per_1k"}`` in USD
    per 1,000 tokens, the entry chosen by the manifest's ``model_id`` (or the only entry) — and
    the flat form ``{"input", "output"}`` in USD per million tokens.
    """
    if not isinstance(manifest, Mapping):
        return None, None
    table = manifest.get("price_table")
    if not isinstance(table, Mapping) or not table:
        return None, None
    if "input" in table or "output" in table:
        return {str(k): v for k, v in table.items()}, None
    model_id = manifest.get("model_id")
    entry = table.get(model_id) if model_id is not None else None
    if entry is None and len(table) == 1:
        entry = next(iter(table.values()))
    if not isinstance(entry, Mapping):
        return None, f"no price for model {model_id!r} in the price table"
    if "input_per_1k" not in entry or "output_per_1k" not in entry:
        return None, "the price table entry lacks input_per_1k or output_per_1k"
    return {
        "input": float(entry["input_per_1k"]) * 1000.0,
        "output": float(entry["output_per_1k"]) * 1000.0,
    }, None


def _efficiency(
    scored: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any] | None
) -> Efficiency:
    successes = sum(1 for t in scored if _passed(t))
    undefined: dict[str, str] = {}
    notes: list[str] = []
    tin = _sum_usage(scored, "input_tokens")
    tout = _sum_usage(scored, "output_tokens")
    tokens = None if tin is None or tout is None else tin + tout
    out: dict[str, float | None] = {}
    for name, total in (
        ("tokens_per_success", tokens),
        ("tool_calls_per_success", _sum_usage(scored, "tool_calls")),
        ("interventions_per_success", _sum_usage(scored, "interventions")),
    ):
        mv = per_success(total, successes) if scored else _MetricValue.undefined(NO_TRIALS)
        out[name] = mv.value
        if mv.reason is not None:
            undefined[name] = mv.reason
    table, note = _price_per_million(manifest)
    if note:
        notes.append(note)
    if table is not None:
        try:
            cost = cost_per_success(tin, tout, table, successes)
        except ValueError as exc:
            cost = _MetricValue.undefined(NOT_MEASURED)
            notes.append(f"price table rejected: {exc}")
    else:
        cost = _MetricValue.undefined(NO_PRICE_TABLE)
    out["cost_per_success_usd"] = cost.value
    if cost.reason is not None:
        undefined["cost_per_success_usd"] = cost.reason
    latencies = [
        float(t["latency_ms"])
        for t in scored
        if isinstance(t.get("latency_ms"), (int, float))
        and not isinstance(t.get("latency_ms"), bool)
    ]
    pct = latency_percentiles(latencies, (50, 95))
    out["latency_p50_ms"] = None if pct is None else pct[50]
    out["latency_p95_ms"] = None if pct is None else pct[95]
    if pct is None:
        undefined["latency_p50_ms"] = undefined["latency_p95_ms"] = NOT_MEASURED
    return Efficiency(successes=successes, **out, notes=notes, undefined=undefined)
