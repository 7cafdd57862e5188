"""tau2-bench results: one JSON document ``{timestamp, info, tasks, simulations}``.

Each ``simulations[]`` entry is one trial: ``id``, ``task_id``, ``trial`` (may be null),
``termination_reason``, ``reward_info.reward`` and ``messages``. Messages have a ``role``:
``system``; ``user`` and ``assistant`` (``content``, ``tool_calls`` as ``[{id, name,
arguments (an object), requestor}]``, ``usage``); ``tool`` (``id`` = the call's id,
``content``, ``requestor``, ``error`` true when the call failed). A tool call whose
``requestor`` is ``user`` is the simulated user acting on their own device, not the agent:
it is left out and counted as skipped. ``reward`` 1.0 is a pass. A run tau2 ended for an agent
or user error (``termination_reason`` ``agent_error``/``user_error``) has status error.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ._common import (
    ImportedTrial,
    ImportRefused,
    Skipped,
    TraceBuilder,
    finite_reward,
    id_text,
    listed,
    parse_args,
    text_of,
    trial_number,
)
from ._pi import _ts

FORMAT = "tau2"
PASS_REWARD = 1.0
_ERROR_ENDS = {"agent_error", "user_error"}


def wants(path: Path) -> bool:
    """JSON files inside a folder given to ``import``."""
    return path.suffix == ".json"


def sniff(head: bytes, path: str) -> bool:
    """A JSON object holding ``simulations``, or tau2's ``info`` block (it comes first)."""
    text = head.lstrip()
    if not text.startswith(b"{"):
        return False
    if b'"simulations"' in text and (b'"reward_info"' in text or b'"termination_reason"' in text):
        return True
    return b'"agent_info"' in text and b'"user_info"' in text and b'"num_trials"' in text


def _usage(raw: Any) -> tuple[int | None, int | None] | None:
    if not isinstance(raw, Mapping):
        return None
    tin, tout = raw.get("prompt_tokens"), raw.get("completion_tokens")
    return (
        tin if isinstance(tin, int) and tin >= 0 else None,
        tout if isinstance(tout, int) and tout >= 0 else None,
    )


def read(
    path: str,
    data: bytes,
    run_id_of: Callable[[str, int], str],
    skipped: list[Skipped],
) -> list[ImportedTrial]:
    """Trials of one results file; refuses the whole file on the first bad simulation."""
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise ImportRefused(path, f"not valid JSON: {exc}") from None
    if not isinstance(doc, Mapping) or not isinstance(doc.get("simulations"), list):
        raise ImportRefused(
            path, "expected a tau2 results object with a simulations list", field="simulations"
        )
    trials = []
    for i, sim in enumerate(doc["simulations"]):
        where = f"simulations[{i}]"
        if not isinstance(sim, Mapping):
            raise ImportRefused(path, "each simulation must be an object", field=where)
        task_id = sim.get("task_id")
        if not isinstance(task_id, (str, int)) or isinstance(task_id, bool) or task_id == "":
            raise ImportRefused(path, "missing or not a string", field=f"{where}.task_id")
        info = sim.get("reward_info")
        raw_reward = info.get("reward") if isinstance(info, Mapping) else None
        reward = finite_reward(raw_reward)
        if reward is None:
            raise ImportRefused(
                path,
                "missing or not a finite number (the success label comes from it), got "
                f"{raw_reward!r}",
                field=f"{where}.reward_info.reward",
            )
        trial = trial_number(sim.get("trial"), path, f"{where}.trial")
        messages = sim.get("messages")
        if not isinstance(messages, list):
            raise ImportRefused(path, "must be a list of messages", field=f"{where}.messages")
        trials.append(
            _trial(path, where, sim, str(task_id), trial, reward, messages, run_id_of, skipped)
        )
    return trials


def _flat(messages: list[Any], path: str, where: str) -> list[tuple[str, Mapping[str, Any]]]:
    """(field, message) pairs, a ``MultiToolMessage``'s ``tool_messages`` taken one by one."""
    out: list[tuple[str, Mapping[str, Any]]] = []
    for j, msg in enumerate(messages):
        field = f"{where}.messages[{j}]"
        if not isinstance(msg, Mapping):
            raise ImportRefused(path, "each message must be an object", field=field)
        inner = msg.get("tool_messages")
        if msg.get("role") == "tool" and isinstance(inner, list):
            for k, m in enumerate(inner):
                if not isinstance(m, Mapping):
                    raise ImportRefused(
                        path, "must be an object", field=f"{field}.tool_messages[{k}]"
                    )
                out.append((f"{field}.tool_messages[{k}]", m))
        else:
            out.append((field, msg))
    return out


def _trial(
    path: str,
    where: str,
    sim: Mapping[str, Any],
    task_id: str,
    trial_index: int,
    reward: float,
    messages: list[Any],
    run_id_of: Callable[[str, int], str],
    skipped: list[Skipped],
) -> ImportedTrial:
    # Long because: one pass over the simulation's messages in order, one branch per role,
    # each feeding the one trace builder.
    b = TraceBuilder(run_id_of(task_id, trial_index))
    flat = _flat(messages, path, where)
    first_user = next((text_of(m.get("content")) for _, m in flat if m.get("role") == "user"), None)
    b.run_start(task_id=task_id, trial=trial_index, input=first_user, ts=_ts(sim.get("start_time")))
    last_text: str | None = None
    user_calls = 0
    user_call_ids: set[str] = set()
    unnamed: list[str] = []
    for field, msg in flat:
        role = msg.get("role")
        ts = _ts(msg.get("timestamp"))
        if role == "system":
            b.message("system", text_of(msg.get("content")))
        elif role == "user":
            b.message("user", text_of(msg.get("content")))
            for tc in listed(msg.get("tool_calls"), path, f"{field}.tool_calls", "tool calls"):
                user_calls += 1
                if isinstance(tc, Mapping) and isinstance(tc.get("id"), str) and tc["id"]:
                    user_call_ids.add(tc["id"])
        elif role == "assistant":
            calls = []
            listing = listed(msg.get("tool_calls"), path, f"{field}.tool_calls", "tool calls")
            for k, tc in enumerate(listing):
                if (
                    not isinstance(tc, Mapping)
                    or not isinstance(tc.get("name"), str)
                    or not tc["name"]
                ):
                    raise ImportRefused(path, "missing", field=f"{field}.tool_calls[{k}].name")
                args = parse_args(
                    tc.get("arguments"),
                    path=path,
                    line=None,
                    field=f"{field}.tool_calls[{k}].arguments",
                )
                call_id = id_text(tc.get("id"), path, f"{field}.tool_calls[{k}].id")
                calls.append((call_id or None, tc["name"], args))
            text = text_of(msg.get("content"))
            if text:
                last_text = text
            ids = b.model_call(text=text, tool_calls=calls, usage=_usage(msg.get("usage")), ts=ts)
            # tau2's ToolCall.id defaults to "": such calls are answered in the order issued.
            unnamed.extend(u for (raw, _, _), u in zip(calls, ids, strict=True) if not raw)
        elif role == "tool":
            if msg.get("requestor") == "user" or msg.get("id") in user_call_ids:
                continue
            error = msg.get("error", False)
            if not isinstance(error, bool):
                raise ImportRefused(path, "must be true or false", field=f"{field}.error")
            call_id = msg.get("id")
            if not isinstance(call_id, str):
                raise ImportRefused(path, "missing or not a string", field=f"{field}.id")
            b.tool_result(
                call_id=call_id or (unnamed.pop(0) if unnamed else None),
                by_order=not call_id,
                name=None,
                result=text_of(msg.get("content")),
                is_error=error,
                ts=ts,
            )
        else:
            raise ImportRefused(
                path,
                f"unknown role {role!r} (system, user, assistant or tool)",
                field=f"{field}.role",
            )
    if user_calls:
        skipped.append(
            Skipped(path, "tool calls of the simulated user", "not the agent's calls", user_calls)
        )
    for call_id, tool in b.unanswered_calls():
        skipped.append(
            Skipped(path, f"{where} call {call_id} ({tool})", "no tool message answered it")
        )
    end = str(sim.get("termination_reason") or "")
    status = "error" if end in _ERROR_ENDS else "ok"
    b.run_end(
        status=status,
        output=last_text,
        error=end if status == "error" else None,
        ts=_ts(sim.get("end_time")),
    )
    return ImportedTrial(
        task_id=task_id,
        trial_index=trial_index,
        events=b.events,
        label=reward >= PASS_REWARD,
        source_id=str(sim.get("id") or f"{task_id}/{trial_index}"),
        source_file=path,
        response_text=last_text,
        status=status,
        attrs={"reward": reward, "termination_reason": end or None},
    )
