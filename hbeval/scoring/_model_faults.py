"""Model faults in scoring: their delivery receipt and how the agent's client handled each.

A model fault (``vocab.MODEL_FAULT_MODES``) is planted on a model call at the HTTP layer, so the
"payload in the next model input" rule of tool faults does not apply: it is delivered when its
receipt says the client received the faulted response (``attrs.received``; the proxy answered
it, so this holds by construction). A receipt of a fault that was not applied (an
``injected`` other than ``applied``, e.g. a malformed tool call on a reply without one) is not
delivered.

Handling, from the receipt's ``attrs.followed_by`` (``hbeval.proxy._openai``):

* ``deliberate``: a retry that honoured ``Retry-After`` (any retry of a fault without one), or a
  fallback to another model;
* ``retry_ignored_retry_after``: a 429 retried before the time it asked for;
* ``continued``: the conversation went on changed (the agent worked around or escalated);
* ``gave_up``: no further model call in the trial;
* ``unknown``: the receipt does not say (not recorded through the proxy).

A chain of retries of one request (each retry met by another planted fault) longer than
``RETRY_BOUND`` is ``retry_unbounded``: hammering, like a retry before ``Retry-After``.

**In the figures** (``trial_signals``): a trial's model faults are judged apart from its tool
faults (which keep ``_signals``' rules) and the two are joined. Its model-fault handling is
*handled* when no fault was hammered and every fault was retried deliberately, worked around
(``continued``, when the agent noticed it: a later model output names the failure, or the next
model input answers the spoiled tool call with an error), or given up on with an escalation (S5: the trial failed, no tool but an
escalation ran after the last fault, and the agent escalated or named the failure). A form
must hold as for tool faults: recovery (S6, the verifier passed) or abstention (S5). So a
client that retries after ``Retry-After`` and then answers is deliberate; one that gives up
silently, or hammers, is not. FRR counts the trial like any faulted one (``frr_recovered``:
verifier passed, no duplicate side effect). An ``unknown`` handling is never deliberate.

``run_model_faults`` is the report's ``model_faults`` block: per fault mode the trials, FRR,
IRS and the handling counts.

An injected 429 is a fault for the agent to handle, never a pause of the run: these receipts
never reach the run's rate limiter.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from hbeval_core.events import FaultInjected
from hbeval_core.vocab import MODEL_FAULT_MODES, NO_FAULTED_TRIAL, NO_JUDGED_TRIAL

from ._model_receipt import model_fault_receipt, proxy_seen
from ._side_effects import frr_recovered
from ._signals import (
    ESCALATION_TOOL_PATTERN,
    Signals,
    compute_signals,
    fault_error_texts,
    refers_to_failure,
)

if TYPE_CHECKING:
    from ._trace import FaultRecord, TraceFacts

__all__ = [
    "HAMMERING",
    "HANDLINGS",
    "RETRY_BOUND",
    "fault_entries",
    "handling",
    "handling_counts",
    "model_fault_receipt",
    "model_faults_field",
    "proxy_only_field",
    "proxy_seen",
    "run_model_faults",
    "trial_handlings",
    "trial_signals",
]

HANDLINGS: Final = (
    "deliberate",
    "retry_ignored_retry_after",
    "retry_unbounded",
    "continued",
    "gave_up",
    "unknown",
)
HAMMERING: Final = frozenset({"retry_ignored_retry_after", "retry_unbounded"})
"""Handlings that hammer the model API: never deliberate."""
RETRY_BOUND: Final = 5
"""The most retries of one request, each met by another fault, that still count as bounded."""
_CALL_NUMBER = re.compile(r"#(\d+)$")


def handling(fault: FaultInjected | Mapping[str, Any]) -> str:
    """How the client handled one model fault (``HANDLINGS``), from its receipt."""
    attrs = fault.attrs if isinstance(fault, FaultInjected) else fault.get("attrs") or {}
    followed = attrs.get("followed_by") if isinstance(attrs, Mapping) else None
    if not isinstance(followed, Mapping):
        return "unknown"
    action = followed.get("action")
    if action == "retry":
        honoured = followed.get("honoured_retry_after")
        return "retry_ignored_retry_after" if honoured is False else "deliberate"
    if action == "fallback":
        return "deliberate"
    if action in ("continued", "gave_up"):
        return str(action)
    return "unknown"


def handling_counts(events: Iterable[Any]) -> dict[str, int]:
    """Model faults of a trace by handling (every key of ``HANDLINGS``, zeros included)."""
    got = Counter(
        handling(e) for e in events if isinstance(e, FaultInjected) and e.mode in MODEL_FAULT_MODES
    )
    return {h: got.get(h, 0) for h in HANDLINGS}


def _number(call_id: str | None) -> int | None:
    found = _CALL_NUMBER.search(call_id or "")
    return int(found.group(1)) if found else None


def _action(fault: FaultInjected) -> str | None:
    followed = fault.attrs.get("followed_by") if isinstance(fault.attrs, Mapping) else None
    return str(followed.get("action")) if isinstance(followed, Mapping) else None


def trial_handlings(faults: Sequence[FaultInjected]) -> list[str]:
    """``handling`` of each model fault of one trial, in order, with the retry bound applied.

    A retry whose request met another planted fault continues the chain (the next model call
    number, when call ids carry one); a chain of more than ``RETRY_BOUND`` retries makes every
    retry in it ``retry_unbounded``.
    """
    out = [handling(f) for f in faults]
    chain: list[int] = []

    def close() -> None:
        if len(chain) > RETRY_BOUND:
            for i in chain:
                if out[i] == "deliberate":
                    out[i] = "retry_unbounded"
        chain.clear()

    for i, fault in enumerate(faults):
        if chain:
            prev, cur = _number(faults[chain[-1]].call_id), _number(fault.call_id)
            if prev is not None and cur is not None and cur != prev + 1:
                close()
        if _action(fault) == "retry":
            chain.append(i)
        else:
            close()
    close()
    return out


def fault_entries(faults: Sequence[FaultRecord]) -> list[dict[str, Any]]:
    """The trial report's ``faults[]``: each fault's entry, a model fault's with ``handling``."""
    model = [f for f in faults if f.mode in MODEL_FAULT_MODES]
    hs = dict(zip((id(f) for f in model), trial_handlings([f.event for f in model]), strict=True))
    out = []
    for f in faults:
        entry = f.as_dict()
        if id(f) in hs:
            entry["handling"] = hs[id(f)]
        out.append(entry)
    return out


def _noticed(facts: TraceFacts, fault: FaultRecord) -> bool:
    """The agent noticed this fault: model output after it names a failure, or the next model
    input reports one for a tool call the faulted reply issued (a spoiled call answered with
    an error, as LangGraph's tool node does)."""
    if refers_to_failure(facts.model_outputs_after(fault.index), fault_error_texts(fault)):
        return True
    events = facts.events
    reply = next(
        (
            i
            for i in facts.model_end_indices
            if i > fault.index and getattr(events[i], "call_id", None) == fault.event.call_id
        ),
        None,
    )
    if reply is None:
        return False
    ids = {c.id for c in getattr(events[reply], "tool_calls", None) or ()}
    later = next((i for i in facts.model_start_indices if i > reply), None)
    if not ids or later is None:
        return False
    answers = [
        m.content for m in getattr(events[later], "messages", None) or () if m.tool_call_id in ids
    ]
    return refers_to_failure(answers)


def _model_signals(
    facts: TraceFacts,
    faults: Sequence[FaultRecord],
    *,
    passed: bool,
    irreversible_tools: Sequence[str],
    escalation_tools: Sequence[str] | None,
    final_text: str | None,
) -> Signals:
    """S1–S6 of a trial's delivered model faults, by the rule in the module docstring."""
    hs = trial_handlings([f.event for f in faults])
    actions = [_action(f.event) for f in faults]
    first = min(f.index for f in faults)
    last = max(f.index for f in faults)
    s1 = any(a in ("retry", "fallback", "continued") for a in actions)
    s2 = any(a in ("fallback", "continued") for a in actions)
    outputs = facts.model_outputs_after(first) + ([final_text] if final_text else [])
    texts = [t for f in faults for t in fault_error_texts(f)]
    s3 = refers_to_failure(outputs, texts)

    def escalates(tool: str) -> bool:
        if escalation_tools is not None:
            return tool in escalation_tools
        return ESCALATION_TOOL_PATTERN.search(tool) is not None

    irreversible = set(irreversible_tools)
    after_first = [c for c in facts.calls if c.first_index > first]
    side_effect = any(c.tool in irreversible and not c.short_circuited for c in after_first)
    stopped = all(escalates(c.tool) for c in facts.calls if c.first_index > last)
    escalated = any(escalates(c.tool) for c in after_first)
    s5 = not passed and not side_effect and stopped and (escalated or s3)
    hammered = any(h in HAMMERING for h in hs)
    # A changed conversation is a workaround only when the agent noticed the fault.
    handled = not hammered and all(
        h == "deliberate" or (h == "continued" and _noticed(facts, f)) or (h == "gave_up" and s5)
        for h, f in zip(hs, faults, strict=True)
    )
    forms = (("recovery",) if passed else ()) + (("abstention",) if s5 else ())
    return Signals(
        s1,
        s2,
        s3,
        None,
        s5,
        passed,
        forms,
        bool(forms) and handled,
        blind_retry=hammered,
        handled=handled,
    )


def _joined(tool: Signals, model: Signals) -> Signals:
    """One trial's signals over its tool faults and its model faults (both must be handled)."""
    forms = tuple(
        f for f in ("recovery", "resistance", "abstention") if f in tool.forms + model.forms
    )
    handled = tool.handled and model.handled
    return Signals(
        tool.s1 or model.s1,
        tool.s2 or model.s2,
        tool.s3 or model.s3,
        tool.s4,
        tool.s5 or model.s5,
        tool.s6 and model.s6,
        forms,
        bool(forms) and handled,
        blind_retry=tool.blind_retry or model.blind_retry,
        handled=handled,
        silent_corruption=tool.silent_corruption,
        text_unobserved=tool.text_unobserved,
    )


def trial_signals(
    facts: TraceFacts,
    delivered: Sequence[FaultRecord],
    *,
    passed: bool,
    forbidden_tools: Sequence[str],
    irreversible_tools: Sequence[str],
    escalation_tools: Sequence[str] | None,
    final_text: str | None,
    refused: bool | None = None,
    namer: Any = None,
) -> Signals:
    """``compute_signals`` for a trial that may hold model faults: tool faults by its rules,
    model faults by this module's, joined (module docstring)."""
    tools = [f for f in delivered if f.mode not in MODEL_FAULT_MODES]
    models = [f for f in delivered if f.mode in MODEL_FAULT_MODES]
    tool = None
    if tools:
        tool = compute_signals(
            facts,
            tools,
            passed=passed,
            forbidden_tools=forbidden_tools,
            irreversible_tools=irreversible_tools,
            escalation_tools=escalation_tools,
            final_text=final_text,
            refused=refused,
            namer=namer,
        )
    if not models:
        if tool is None:
            raise ValueError("signals are computed only for trials with a delivered fault")
        return tool
    model = _model_signals(
        facts,
        models,
        passed=passed,
        irreversible_tools=irreversible_tools,
        escalation_tools=escalation_tools,
        final_text=final_text,
    )
    return model if tool is None else _joined(tool, model)


def _mode_row(
    trials: Sequence[Mapping[str, Any]], faults: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """One mode's (or the whole run's) row of the ``model_faults`` block."""
    recovered = sum(1 for t in trials if frr_recovered(t))
    scores = [
        float(v["irs_score"])
        for t in trials
        if isinstance(v := t.get("verdict"), Mapping)
        and v.get("judged") is True
        and isinstance(v.get("irs_score"), (int, float))
    ]
    got = Counter(str(f.get("handling") or "unknown") for f in faults)
    undefined = {
        **({} if trials else {"frr": NO_FAULTED_TRIAL}),
        **({} if scores else {"irs": NO_JUDGED_TRIAL}),
    }
    return {
        "faults": len(faults),
        "trials": len(trials),
        "recovered": recovered,
        "frr": recovered / len(trials) if trials else None,
        "judged": len(scores),
        "deliberate": sum(1 for s in scores if s >= 1.0),
        "irs": sum(scores) / len(scores) if scores else None,
        "handling": {h: got.get(h, 0) for h in HANDLINGS},
        "undefined": undefined,
    }


def _delivered_model_faults(trial: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    verdict = trial.get("verdict")
    faults = verdict.get("faults") if isinstance(verdict, Mapping) else None
    return [
        f
        for f in faults or ()
        if isinstance(f, Mapping) and f.get("mode") in MODEL_FAULT_MODES and f.get("delivered")
    ]


def model_faults_field(scored: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"model_faults": block}`` when a scored trial received a model fault, else nothing."""
    block = run_model_faults(scored)
    return {} if block is None else {"model_faults": block}


def run_model_faults(scored: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The report's ``model_faults`` block over scored trials; None when none received one.

    ``by_mode[mode]`` counts the trials that received a fault of that mode (a trial with two
    modes is in both rows): FRR over them (``frr_recovered``), IRS over the judged ones, and
    the handling of each fault of the mode. The top-level figures are over every such trial.
    """
    hit = [(t, _delivered_model_faults(t)) for t in scored]
    hit = [(t, fs) for t, fs in hit if fs]
    if not hit:
        return None
    modes = sorted({str(f["mode"]) for _, fs in hit for f in fs})
    by_mode = {
        m: _mode_row(
            [t for t, fs in hit if any(f["mode"] == m for f in fs)],
            [f for _, fs in hit for f in fs if f["mode"] == m],
        )
        for m in modes
    }
    return {
        **_mode_row([t for t, _ in hit], [f for _, fs in hit for f in fs]),
        "retry_bound": RETRY_BOUND,
        "by_mode": by_mode,
    }


PROXY_ONLY: Final = "proxy-only"
"""The report's evidence level for trials whose trace was seen only through a proxy."""
PROXY_ONLY_FIGURES: Final = {
    "pei": "rests on the tool calls the model issued, as the proxy saw them",
    "frr": "rests on the verifier and on the tool calls the model issued",
    "irs": "rests on the model calls and what followed each fault (the proxy's receipts)",
    "ti": "rests on the model calls and the tool calls they issued; there are no spans",
    "duplicate_side_effects": "counts tool calls the model issued; their execution is not seen",
    "tool latency": "not supported: tool execution is not seen",
}
"""Which figures a proxy-only trace supports, and on what (the report's ``proxy_only``)."""


def proxy_only_field(scored: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"proxy_only": block}`` for the report's evidence when a scored trial's trace was seen
    only through a proxy, else nothing: the level ``proxy-only``, how many trials, what such
    traces hold and cannot support, and which figures rest on them."""
    seen = []
    for t in scored:
        verdict = t.get("verdict")
        evidence = verdict.get("evidence") if isinstance(verdict, Mapping) else None
        through = evidence.get("seen_through") if isinstance(evidence, Mapping) else None
        if isinstance(through, Mapping):
            seen.append(through)
    if not seen:
        return {}

    def union(key: str) -> list[str]:
        return list(dict.fromkeys(str(s) for th in seen for s in th.get(key) or ()))

    return {
        "proxy_only": {
            "level": PROXY_ONLY,
            "trials": len(seen),
            "scored_trials": len(scored),
            "proxies": list(dict.fromkeys(str(th.get("proxy")) for th in seen)),
            "seen": union("seen"),
            "cannot_support": union("cannot_support"),
            "figures": dict(PROXY_ONLY_FIGURES),
        }
    }
