"""Replay a recorded run's cases against a candidate agent and say, per case, what changed.

For every trial of the recorded run (its final attempt): the candidate gets the recorded input
(the question the agent was given) and, at each tool call, the recorded outcome of that tool
(``_serve``): no real tool runs. Then, per case:

* **tool selection**: the recorded and replayed sequences of tool names, aligned
  (``difflib``); ``diverged`` when they differ, with the first differing position, the calls
  the candidate added (``extra``) or left out (``missing``), and the calls the recording had no
  result for (``unexpected``);
* **arguments**: for calls aligned to the same tool, each argument that was added, removed or
  changed (``field``, ``recorded``, ``replayed``);
* **invariants**: ``metrics.rule_violations`` over the replayed calls (forbidden tools: the
  task's and the invariants file's; required tools; order pairs; a call budget; argument
  schemas, by default inferred from the recording: every argument a tool always had, with the
  JSON types it had). The run fails when the violations exceed the budget (default 0);
* **outcome, cost and latency**: the replayed trial is scored (``scoring.score_trial``) and
  paired with the recorded one: pass rates through ``metrics.paired_comparison``; tokens, tool
  calls, model calls and latency as per-case changes with their mean, an exact sign-flip p and a
  bootstrap interval (the paired compare's own statistics), undefined below the paired
  compare's minimum of shared cases.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ._serve import ReplayInjector, recorded_calls

REPLAY_FORMAT = "hbeval-replay/1"
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (float,),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


class ReplayError(ValueError):
    """The recorded run or the invariants cannot be used; the message names what and why."""


@dataclass
class Invariants:
    """Rules every replayed case must keep (``rule_violations`` rules), and the budget."""

    forbidden: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    order: tuple[tuple[str, str], ...] = ()
    call_budget: int | None = None
    arg_schemas: dict[str, dict[str, tuple[type, ...]]] = field(default_factory=dict)
    infer_schemas: bool = True
    """Add, for tools the file does not cover, the argument schema the recording implies."""
    budget: int = 0

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str = "invariants") -> Invariants:
        """From the invariants file's JSON object; refuses unknown fields and bad values."""
        known = {
            "forbidden_tools",
            "required_tools",
            "order",
            "call_budget",
            "arg_schemas",
            "infer_arg_schemas",
            "violation_budget",
        }
        for key in data:
            if key not in known:
                raise ReplayError(
                    f"{where}: unknown field {key!r} (known: {', '.join(sorted(known))})"
                )

        def names(key: str) -> tuple[str, ...]:
            v = data.get(key, [])
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ReplayError(f"{where}: field {key!r} must be a list of tool names")
            return tuple(v)

        order = data.get("order", [])
        if not isinstance(order, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(t, str) for t in p)
            for p in order
        ):
            raise ReplayError(f"{where}: field 'order' must be a list of [before, after] pairs")
        schemas: dict[str, dict[str, tuple[type, ...]]] = {}
        raw = data.get("arg_schemas", {})
        if not isinstance(raw, Mapping):
            raise ReplayError(f"{where}: field 'arg_schemas' must map tools to {{arg: type}}")
        for tool, spec in raw.items():
            if not isinstance(spec, Mapping):
                raise ReplayError(
                    f"{where}: field 'arg_schemas.{tool}' must map arguments to types"
                )
            schemas[str(tool)] = {}
            for arg, kind in spec.items():
                if kind not in _JSON_TYPES:
                    raise ReplayError(
                        f"{where}: field 'arg_schemas.{tool}.{arg}' must be one of "
                        f"{', '.join(_JSON_TYPES)}; got {kind!r}"
                    )
                schemas[str(tool)][str(arg)] = _JSON_TYPES[kind]
        budget = data.get("violation_budget", 0)
        call_budget = data.get("call_budget")
        for key, value in (("violation_budget", budget), ("call_budget", call_budget)):
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 0
            ):
                raise ReplayError(f"{where}: field {key!r} must be an integer >= 0")
        infer = data.get("infer_arg_schemas", True)
        if not isinstance(infer, bool):
            raise ReplayError(f"{where}: field 'infer_arg_schemas' must be true or false")
        return cls(
            forbidden=names("forbidden_tools"),
            required=names("required_tools"),
            order=tuple((a, b) for a, b in order),
            call_budget=call_budget,
            arg_schemas=schemas,
            infer_schemas=infer,
            budget=int(budget),
        )

    @classmethod
    def from_file(cls, path: str | Path) -> Invariants:
        """Read an invariants file (a JSON object)."""
        from .._inputs import read_bounded

        try:
            data = json.loads(read_bounded(path, "--invariants").decode("utf-8"))
        except (OSError, ValueError) as exc:
            raise ReplayError(f"cannot read invariants {str(path)!r}: {exc}") from None
        if not isinstance(data, Mapping):
            raise ReplayError(f"{path}: an invariants file is a JSON object")
        return cls.from_mapping(data, str(path))


def _json_type(value: Any) -> tuple[type, ...]:
    if isinstance(value, bool):
        return (bool,)
    if isinstance(value, (int, float)):
        return (int, float)
    for kinds in _JSON_TYPES.values():
        if isinstance(value, kinds):
            return kinds
    return (object,)


def inferred_schemas(cases: Sequence[Sequence[Any]]) -> dict[str, dict[str, tuple[type, ...]]]:
    """Per tool, the arguments every recorded call of it had, with the JSON types they had."""
    seen: dict[str, list[Mapping[str, Any]]] = {}
    for calls in cases:
        for c in calls:
            seen.setdefault(c.tool, []).append(c.args)
    out: dict[str, dict[str, tuple[type, ...]]] = {}
    for tool, arg_sets in seen.items():
        always = set(arg_sets[0]).intersection(*arg_sets[1:]) if arg_sets else set()
        schema: dict[str, tuple[type, ...]] = {}
        for key in sorted(always):
            kinds: tuple[type, ...] = ()
            for args in arg_sets:
                kinds = tuple(dict.fromkeys((*kinds, *_json_type(args[key]))))
            schema[key] = kinds
        out[tool] = schema
    return out


# --------------------------------------------------------------------------- comparing a case
def _arg_diffs(recorded: Mapping[str, Any], replayed: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key in sorted(set(recorded) | set(replayed)):
        if key not in replayed:
            out.append({"field": key, "change": "removed", "recorded": recorded[key]})
        elif key not in recorded:
            out.append({"field": key, "change": "added", "replayed": replayed[key]})
        elif recorded[key] != replayed[key]:
            out.append(
                {
                    "field": key,
                    "change": "changed",
                    "recorded": recorded[key],
                    "replayed": replayed[key],
                }
            )
    return out


def selection(recorded: Sequence[Any], replayed: Sequence[Any]) -> dict[str, Any]:
    """Tool selection and argument differences between two call lists (``.tool``, ``.args``)."""
    a = [c.tool for c in recorded]
    b = [c.tool for c in replayed]
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    extra: list[dict[str, Any]] = []
    missing: list[dict[str, Any]] = []
    args: list[dict[str, Any]] = []
    first: int | None = None
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                diffs = _arg_diffs(recorded[i].args, replayed[j].args)
                if diffs:
                    args.append(
                        {"tool": a[i], "recorded_index": i, "replayed_index": j, "fields": diffs}
                    )
            continue
        first = min(i1, j1) if first is None else first
        missing.extend({"index": i, "tool": a[i]} for i in range(i1, i2))
        extra.extend({"index": j, "tool": b[j]} for j in range(j1, j2))
    return {
        "diverged": a != b,
        "first_divergence": first,
        "recorded_tools": a,
        "replayed_tools": b,
        "extra": extra,
        "missing": missing,
        "argument_differences": args,
    }


# --------------------------------------------------------------------------- running a case
@dataclass
class _Recorded:
    trial: Any
    events: list[Any]
    calls: list[Any]
    question: str


def _question(events: Sequence[Any]) -> str | None:
    start = next((e for e in events if getattr(e, "kind", None) == "run_start"), None)
    value = getattr(start, "input", None)
    if isinstance(value, str) and value.strip():
        return value
    return None


def _load(store: Any, run_id: str) -> tuple[Any, list[_Recorded]]:
    run = store.get_run(run_id)
    if run is None:
        raise ReplayError(f"no run {run_id!r} in the store")
    from ..store.protocol import final_attempts

    finals = final_attempts(store, run_id)
    cases = []
    for t in store.list_trials(run_id):
        final = finals.get(t.trial_key)
        attempt = final.attempt if final else 0
        events = list(store.iter_events(run_id, t.trial_key, attempt=attempt))
        question = _question(events)
        if question is None:
            raise ReplayError(
                f"run {run_id!r} trial {t.trial_key}: its run_start event records no input, so "
                "there is nothing to give the candidate"
            )
        cases.append(_Recorded(t, events, recorded_calls(events), question))
    if not cases:
        raise ReplayError(f"run {run_id!r} has no recorded trial")
    return run, cases


def _usage(events: Sequence[Any]) -> dict[str, float | None]:
    tokens: float | None = None
    for e in events:
        if getattr(e, "kind", None) == "model_end" and e.usage is not None:
            for n in (e.usage.input_tokens, e.usage.output_tokens):
                if isinstance(n, int):
                    tokens = (tokens or 0) + n
    return {
        "tokens": tokens,
        "tool_calls": float(sum(1 for e in events if getattr(e, "kind", None) == "tool_start")),
        "model_calls": float(sum(1 for e in events if getattr(e, "kind", None) == "model_end")),
    }


def _run_case(
    resolved: Any, rec: _Recorded, task: Any, replay_id: str, agent_id: str
) -> tuple[Any, ReplayInjector, float]:
    from hbeval_core.contract import TrialContext, TrialResult, trial_context

    t = rec.trial
    forbidden = task.forbidden_tools[0] if getattr(task, "forbidden_tools", ()) else None
    injector = ReplayInjector(rec.calls, forbidden_tool=forbidden, run_id=replay_id)
    ctx = TrialContext(
        run_id=replay_id,
        trial_run_id=f"{replay_id}/{t.trial_key}",
        trial_key=t.trial_key,
        agent_id=agent_id,
        task_id=t.task_id,
        scenario_index=t.scenario_index,
        trial_index=t.trial_index,
        injector=injector,
        forbidden_tool=forbidden,
    )
    adapter = resolved.adapter
    t0 = time.perf_counter()
    with trial_context(ctx):
        try:
            agent = resolved.agent(task)
            adapter.fault_hook(injector)
            try:
                result = adapter.run_trial(agent, task, None, None)
            finally:
                adapter.fault_hook(None)
        except Exception as exc:  # the adapter or the factory failed: the case ran nothing
            result = TrialResult(
                final_state=None,
                events=list(ctx.events),
                status="error",
                error=f"{type(exc).__name__}: {exc}",
                error_type=type(exc).__name__,
                infra=True,
            )
    return result, injector, (time.perf_counter() - t0) * 1000.0


def _paired_numbers(pairs: Sequence[tuple[float | None, float | None]]) -> dict[str, Any]:
    from hbeval_core.metrics._compare import MIN_PAIRED_TASKS, bootstrap_interval, sign_flip_p

    diffs = [b - a for a, b in pairs if a is not None and b is not None]
    out: dict[str, Any] = {"n": len(diffs), "mean_change": None, "interval": None, "p": None}
    if not diffs:
        out["undefined"] = {"mean_change": "no_paired_case"}
        return out
    out["mean_change"] = sum(diffs) / len(diffs)
    if len(diffs) < MIN_PAIRED_TASKS:
        out["undefined"] = {"interval": "insufficient_tasks", "p": "insufficient_tasks"}
        return out
    out["interval"] = list(bootstrap_interval(diffs, 0.95))
    out["p"] = sign_flip_p(diffs)
    return out


def _case_report(
    rec: _Recorded,
    task: Any,
    result: Any,
    injector: ReplayInjector,
    latency: float,
    inv: Invariants,
    schemas: Mapping[str, Any],
) -> dict[str, Any]:
    """One case's entry: selection, arguments, violations, outcome, cost and latency."""
    from hbeval_core.metrics import rule_violations
    from hbeval_core.vocab import METHODOLOGY_B, OUTCOME_FAIL, OUTCOME_PASS

    from ..scoring import score_trial

    t = rec.trial
    replayed = [e for e in result.events if getattr(e, "kind", None) == "tool_start"]
    sel = selection(rec.calls, replayed)
    sel["unexpected"] = [
        {"index": s.index, "tool": s.tool, "args": s.args} for s in injector.unexpected
    ]
    sel["diverged"] = bool(sel["diverged"] or sel["unexpected"])
    forbidden = tuple(dict.fromkeys((*getattr(task, "forbidden_tools", ()), *inv.forbidden)))
    rv = rule_violations(
        [(c.tool, dict(c.args or {})) for c in replayed],
        forbidden=forbidden,
        required=inv.required,
        order=inv.order,
        call_budget=inv.call_budget,
        arg_schemas=schemas,
    )
    scenario = SimpleNamespace(
        fault_type=t.fault_type, is_nominal=t.fault_type in (None, "none"), domain=t.domain
    )
    verdict = score_trial(task, scenario, result, methodology=METHODOLOGY_B).as_dict()
    verifiable = getattr(task, "verify", None) is not None or bool(getattr(task, "required", ()))
    before, after = _usage(rec.events), _usage(result.events)
    return {
        "trial_key": t.trial_key,
        "task_id": t.task_id,
        "fault_type": t.fault_type,
        "status": result.status,
        "selection": sel,
        "violations": {
            "total": rv.total,
            "counts": dict(rv.counts),
            "details": [dataclasses.asdict(v) for v in rv.details],
        },
        "outcome": {
            "recorded": {OUTCOME_PASS: True, OUTCOME_FAIL: False}.get(t.outcome),
            "replayed": bool(verdict.get("passed")) if verifiable else None,
        },
        "cost": {
            k: {"recorded": before[k], "replayed": after[k]}
            for k in ("tokens", "tool_calls", "model_calls")
        },
        "latency_ms": {"recorded": t.latency_ms, "replayed": latency},
    }


def _compare(cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Recorded against replayed, paired per case (per task for the pass rate)."""
    from hbeval_core.metrics import paired_comparison

    recorded: dict[str, list[bool]] = {}
    replayed: dict[str, list[bool]] = {}
    for c in cases:
        was, now = c["outcome"]["recorded"], c["outcome"]["replayed"]
        if was is not None and now is not None:
            recorded.setdefault(c["task_id"], []).append(was)
            replayed.setdefault(c["task_id"], []).append(now)
    pc = paired_comparison(recorded, replayed)
    out: dict[str, Any] = {
        "pass": {
            "rate_recorded": pc.rate_a,
            "rate_replayed": pc.rate_b,
            "mean_change": pc.mean_change,
            "interval": list(pc.interval) if pc.interval is not None else None,
            "p_paired": pc.p_paired,
            "tasks": len(pc.tasks),
            "undefined": dict(pc.undefined),
        }
    }
    for k in ("tokens", "tool_calls", "model_calls"):
        out[k] = _paired_numbers(
            [(c["cost"][k]["recorded"], c["cost"][k]["replayed"]) for c in cases]
        )
    out["latency_ms"] = _paired_numbers(
        [(c["latency_ms"]["recorded"], c["latency_ms"]["replayed"]) for c in cases]
    )
    return out


def replay_run(
    store: Any,
    run_id: str,
    target: Any,
    *,
    tasks: Sequence[Any] = (),
    invariants: Invariants | None = None,
    target_kind: str | None = None,
    agent_id: str | None = None,
) -> dict[str, Any]:
    """Replay ``run_id``'s cases on ``target``; returns the ``hbeval-replay/1`` report.

    ``tasks`` gives verifiers, forbidden tools and metadata by task id (a task the recording
    names but ``tasks`` lacks runs with the recorded question only: its pass is unverifiable and
    its forbidden tools are not applied; ``summary.tasks_unmatched`` lists such task ids).
    """
    from hbeval_core.contract import Task

    from ..runner.registry import resolve_target

    inv = invariants or Invariants()
    run, cases = _load(store, run_id)
    by_id = {getattr(t, "id", None): t for t in tasks}
    schemas = dict(inferred_schemas([c.calls for c in cases])) if inv.infer_schemas else {}
    schemas.update(inv.arg_schemas)
    resolved = resolve_target(target, target_kind=target_kind)
    agent = agent_id or f"{run.agent_id}-replay"
    replay_id = f"replay-{run_id}"
    out_cases: list[dict[str, Any]] = []
    resolved.adapter.instrument()
    try:
        for rec in cases:
            base = by_id.get(rec.trial.task_id)
            task = (
                dataclasses.replace(base, question=rec.question)
                if base is not None
                else Task(id=rec.trial.task_id, question=rec.question)
            )
            result, injector, latency = _run_case(resolved, rec, task, replay_id, agent)
            out_cases.append(_case_report(rec, task, result, injector, latency, inv, schemas))
    finally:
        resolved.adapter.uninstrument()
    total = sum(c["violations"]["total"] for c in out_cases)
    diverged = [c["trial_key"] for c in out_cases if c["selection"]["diverged"]]
    # A case whose task id ``tasks`` lacks ran without that task's rules: its forbidden tools
    # and verifier were not applied, which a count of 0 violations must not hide.
    unmatched = sorted({rec.trial.task_id for rec in cases if rec.trial.task_id not in by_id})
    return {
        "format": REPLAY_FORMAT,
        "run_id": run_id,
        "replay_id": replay_id,
        "agent_id": agent,
        "cases": out_cases,
        "summary": {
            "cases": len(out_cases),
            "diverged": len(diverged),
            "diverged_cases": diverged,
            "argument_differences": sum(
                len(c["selection"]["argument_differences"]) for c in out_cases
            ),
            "unexpected_calls": sum(len(c["selection"]["unexpected"]) for c in out_cases),
            "violations": total,
            "tasks_unmatched": unmatched,
            "task_rules_applied": not unmatched,
            "violation_budget": inv.budget,
            "within_budget": total <= inv.budget,
        },
        "compare": _compare(out_cases),
        "invariants": {
            "forbidden": list(inv.forbidden),
            "required": list(inv.required),
            "order": [list(p) for p in inv.order],
            "call_budget": inv.call_budget,
            "arg_schemas": {
                tool: {k: [t.__name__ for t in kinds] for k, kinds in spec.items()}
                for tool, spec in sorted(schemas.items())
            },
        },
    }
