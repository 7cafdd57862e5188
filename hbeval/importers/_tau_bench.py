"""tau-bench historical trajectories: a JSON list of ``{task_id, trial, reward, traj, info}``.

``traj`` is the OpenAI-style conversation: system, user (the simulated customer), assistant
(text and ``tool_calls`` with ``function.name`` and ``function.arguments`` as JSON text), and
``tool`` messages (``tool_call_id``, ``name``, ``content``). tau-bench's tools report a failure
by returning text that starts with ``Error: ``; that is a tool error here, marked as
inferred (read from the text; no flag says so). ``reward`` 1.0 is a
pass, anything else a fail. Each record is one trial of task ``task_id``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ._common import (
    INFERRED,
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

FORMAT = "tau-bench"
ERROR_PREFIX = "Error: "
PASS_REWARD = 1.0


def wants(path: Path) -> bool:
    """Whether a file inside a folder given to ``import`` is one to read."""
    return path.suffix == ".json"


def sniff(head: bytes, path: str) -> bool:
    """Whether a file's first bytes look like tau-bench trajectories."""
    text = head.lstrip()
    return text.startswith(b"[") and b'"traj"' in text and b'"task_id"' in text


def read(
    path: str,
    data: bytes,
    run_id_of: Callable[[str, int], str],
    skipped: list[Skipped],
) -> list[ImportedTrial]:
    """Trials of one trajectories file; refuses the whole file on the first bad record."""
    try:
        records = json.loads(data)
    except ValueError as exc:
        raise ImportRefused(path, f"not valid JSON: {exc}") from None
    if not isinstance(records, list):
        raise ImportRefused(path, "expected a JSON list of trajectory records")
    trials = []
    for i, rec in enumerate(records):
        where = f"[{i}]"
        if not isinstance(rec, Mapping):
            raise ImportRefused(path, "each record must be an object", field=where)
        for name in ("task_id", "reward", "traj"):
            if name not in rec:
                raise ImportRefused(path, "missing", field=f"{where}.{name}")
        reward = finite_reward(rec["reward"])
        if reward is None:
            raise ImportRefused(
                path,
                f"reward must be a finite number, got {rec['reward']!r}",
                field=f"{where}.reward",
            )
        trial_index = trial_number(rec.get("trial", 0), path, f"{where}.trial")
        task_id = rec["task_id"]
        if not isinstance(task_id, (str, int)) or isinstance(task_id, bool) or task_id == "":
            raise ImportRefused(
                path, "must be a non-empty string (or a number)", field=f"{where}.task_id"
            )
        task_id = str(task_id)
        traj = rec["traj"]
        if not isinstance(traj, list):
            raise ImportRefused(path, "traj must be a list of messages", field=f"{where}.traj")
        trials.append(_trial(path, where, task_id, trial_index, reward, traj, run_id_of, skipped))
    return trials


def _tool_calls(path: str, field: str, raw: Any) -> list[tuple[str | None, str, Any]]:
    """An assistant message's ``tool_calls`` as (id, tool name, arguments), each checked."""
    calls = []
    for k, tc in enumerate(listed(raw, path, f"{field}.tool_calls", "tool calls")):
        fn = tc.get("function") if isinstance(tc, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise ImportRefused(path, "missing", field=f"{field}.tool_calls[{k}].function.name")
        args = parse_args(
            fn.get("arguments"),
            path=path,
            line=None,
            field=f"{field}.tool_calls[{k}].function.arguments",
        )
        call_id = id_text(tc.get("id"), path, f"{field}.tool_calls[{k}].id")
        calls.append((call_id, fn["name"], args))
    return calls


def _trial(
    path: str,
    where: str,
    task_id: str,
    trial_index: int,
    reward: float,
    traj: list[Any],
    run_id_of: Callable[[str, int], str],
    skipped: list[Skipped],
) -> ImportedTrial:
    b = TraceBuilder(run_id_of(task_id, trial_index))
    first_user = next(
        (
            text_of(m.get("content"))
            for m in traj
            if isinstance(m, Mapping) and m.get("role") == "user"
        ),
        None,
    )
    b.run_start(task_id=task_id, trial=trial_index, input=first_user)
    last_text: str | None = None
    for j, msg in enumerate(traj):
        field = f"{where}.traj[{j}]"
        if not isinstance(msg, Mapping):
            raise ImportRefused(path, "each message must be an object", field=field)
        role = msg.get("role")
        if role in ("system", "user"):
            b.message(str(role), text_of(msg.get("content")))
        elif role == "assistant":
            calls = _tool_calls(path, field, msg.get("tool_calls"))
            text = text_of(msg.get("content"))
            if text:
                last_text = text
            b.model_call(text=text, tool_calls=calls)
        elif role == "tool":
            content = text_of(msg.get("content"))
            b.tool_result(
                call_id=id_text(msg.get("tool_call_id"), path, f"{field}.tool_call_id"),
                name=id_text(msg.get("name"), path, f"{field}.name"),
                result=content,
                is_error=content.startswith(ERROR_PREFIX),
                error_basis=INFERRED,
            )
        else:
            raise ImportRefused(
                path,
                f"unknown role {role!r} (system, user, assistant or tool)",
                field=f"{field}.role",
            )
    for call_id, tool in b.unanswered_calls():
        skipped.append(
            Skipped(path, f"{where} call {call_id} ({tool})", "no tool message answered it")
        )
    b.run_end(status="ok", output=last_text)
    return ImportedTrial(
        task_id=task_id,
        trial_index=trial_index,
        events=b.events,
        label=reward >= PASS_REWARD,
        source_id=f"{task_id}/{trial_index}",
        source_file=path,
        response_text=last_text,
        attrs={"reward": reward},
    )
