"""Hermes Agent recordings: session logs, trajectories and benchmark samples.

* **Session log** (one JSON object: ``session_id``, ``model``, ``session_start``, ``messages``):
  OpenAI-style messages (``system``, ``user``, ``assistant`` with ``content``, ``reasoning``
  and ``tool_calls`` ``[{id, function: {name, arguments}}]``, ``tool`` with ``tool_call_id``
  and ``content``). One run per user message, as a CLI session holds many prompts; no
  success label (a labels file names runs ``<session_id>/p<n>``).
* **Trajectories** (JSONL, one ``{conversations, timestamp, model, completed}`` per line):
  ShareGPT turns ``from`` system/human/gpt/tool; a ``gpt`` turn holds ``<think>`` reasoning
  and ``<tool_call>{"name", "arguments"}</tool_call>`` blocks, a ``tool`` turn one
  ``<tool_response>{"tool_call_id", "name", "content"}</tool_response>`` per call, in the
  calls' order. One run per line; ``completed`` false (the agent stopped before finishing) is
  a run with status error, not a failed task: trajectories carry no success label.
* **Benchmark samples** (JSONL, one ``{task_name, passed, reward, messages, ...}`` per line):
  one trial per line, its label from ``passed`` (``reward`` 1.0 when ``passed`` is absent).

Hermes tools report failure inside their result (a JSON object with an ``error`` key, or
``"success": false``); no flag marks it, so those tool errors are **inferred**.
"""

from __future__ import annotations

import json
import re
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
    jsonl_lines,
    parse_args,
    text_of,
)
from ._pi import _ts

FORMAT = "hermes"
_THINK = re.compile(r"<think>(.*?)</think>", re.S)
_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
_RESPONSE = re.compile(r"<tool_response>\s*(.*?)\s*</tool_response>", re.S)


def wants(path: Path) -> bool:
    """JSON and JSONL files inside a folder given to ``import``."""
    return path.suffix in (".json", ".jsonl")


def _kind(head: bytes) -> str | None:
    text = head.lstrip()
    # A session log's keys come in this order; its tools list can push "messages" far down.
    if text.startswith(b"{") and b'"session_id"' in text and b'"session_start"' in text:
        return "session"
    try:
        first = json.loads(text.split(b"\n", 1)[0])
    except ValueError:
        return None
    if isinstance(first, Mapping):
        if isinstance(first.get("conversations"), list):
            return "trajectory"
        if "passed" in first and "reward" in first and "task_name" in first:
            return "samples"
    return None


def sniff(head: bytes, path: str) -> bool:
    """A Hermes session log, trajectory line or benchmark sample line."""
    return _kind(head) is not None


def tool_failed(content: str) -> bool:
    """Whether a Hermes tool result says it failed: JSON with ``error`` set or ``success`` false."""
    text = content.strip()
    if not text.startswith("{"):
        return False
    try:
        obj = json.loads(text)
    except ValueError:
        return False
    if not isinstance(obj, Mapping):
        return False
    return bool(obj.get("error")) or obj.get("success") is False


def read(
    path: str,
    data: bytes,
    run_id_of: Callable[[str, int], str],
    skipped: list[Skipped],
) -> list[ImportedTrial]:
    """Trials of one Hermes file, whichever of the three kinds it is."""
    kind = _kind(data[:65536])
    if kind == "session":
        try:
            doc = json.loads(data)
        except ValueError as exc:
            raise ImportRefused(path, f"not valid JSON: {exc}") from None
        return _session(path, doc, run_id_of, skipped)
    if kind is None:
        raise ImportRefused(
            path,
            "not a Hermes session log (session_id, messages), trajectory line (conversations) "
            "or benchmark sample line (task_name, passed, reward)",
        )
    trials = []
    for n, line in enumerate(jsonl_lines(data.decode("utf-8", errors="replace")), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise ImportRefused(path, f"not valid JSON: {exc}", line=n) from None
        if not isinstance(obj, Mapping):
            raise ImportRefused(path, "each line must be a JSON object", line=n)
        if kind == "trajectory":
            trials.append(_trajectory(path, n, obj, run_id_of, skipped))
        else:
            trials.append(_sample(path, n, obj, run_id_of, skipped))
    return trials


# --------------------------------------------------------------------------- OpenAI messages
def _openai(
    b: TraceBuilder,
    msgs: list[tuple[str, Any]],
    path: str,
    line: int | None,
) -> str | None:
    """Feed OpenAI-style messages (not the first user prompt) to ``b``; the last reply text."""
    last: str | None = None
    for field, msg in msgs:
        if not isinstance(msg, Mapping):
            raise ImportRefused(path, "each message must be an object", line=line, field=field)
        role = msg.get("role")
        if role in ("system", "user"):
            b.message(str(role), text_of(msg.get("content")))
        elif role == "assistant":
            calls = []
            for k, tc in enumerate(msg.get("tool_calls") or ()):
                fn = tc.get("function") if isinstance(tc, Mapping) else None
                if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
                    raise ImportRefused(
                        path, "missing", line=line, field=f"{field}.tool_calls[{k}].function.name"
                    )
                args = parse_args(
                    fn.get("arguments"),
                    path=path,
                    line=line,
                    field=f"{field}.tool_calls[{k}].function.arguments",
                )
                calls.append((tc.get("id") or None, fn["name"], args))
            text = text_of(msg.get("content"))
            reasoning = msg.get("reasoning")
            if text:
                last = text
            b.model_call(
                text=text,
                tool_calls=calls,
                reasoning=reasoning if isinstance(reasoning, str) else None,
                attrs={"finish_reason": msg["finish_reason"]} if msg.get("finish_reason") else None,
            )
        elif role == "tool":
            content = text_of(msg.get("content"))
            b.tool_result(
                call_id=msg.get("tool_call_id") or None,
                name=msg.get("tool_name") or msg.get("name"),
                result=content,
                is_error=tool_failed(content),
                error_basis=INFERRED,
            )
        else:
            raise ImportRefused(
                path,
                f"unknown role {role!r} (system, user, assistant or tool)",
                line=line,
                field=f"{field}.role",
            )
    return last


def _session(
    path: str,
    doc: Any,
    run_id_of: Callable[[str, int], str],
    skipped: list[Skipped],
) -> list[ImportedTrial]:
    if not isinstance(doc, Mapping) or not isinstance(doc.get("messages"), list):
        raise ImportRefused(path, "must be a list of messages", field="messages")
    session_id = str(doc.get("session_id") or Path(path).stem)
    system = doc.get("system_prompt")
    runs: list[list[tuple[str, Any]]] = []
    for j, msg in enumerate(doc["messages"]):
        field = f"messages[{j}]"
        if isinstance(msg, Mapping) and msg.get("role") == "user":
            runs.append([])
        elif not runs:
            if isinstance(msg, Mapping) and msg.get("role") == "system":
                continue  # the system prompt before the first prompt
            runs.append([])
        runs[-1].append((field, msg))
    trials = []
    for n, run in enumerate(runs, start=1):
        source_id = f"{session_id}/p{n}"
        first = run[0][1]
        prompt = text_of(first.get("content")) if isinstance(first, Mapping) else ""
        b = TraceBuilder(run_id_of(source_id, 0))
        b.run_start(task_id=source_id, trial=0, input=prompt, ts=_ts(doc.get("session_start")))
        if isinstance(system, str) and system:
            b.message("system", system)
        last = _openai(b, run, path, None)
        for call_id, tool in b.unanswered_calls():
            skipped.append(Skipped(path, f"{source_id} call {call_id} ({tool})", "no tool result"))
        b.run_end(status="ok", output=last)
        trials.append(
            ImportedTrial(
                task_id=source_id,
                trial_index=0,
                events=b.events,
                label=None,
                source_id=source_id,
                source_file=path,
                response_text=last,
                attrs={"model": doc.get("model"), "shared_session": True},
            )
        )
    return trials


def _sample(
    path: str,
    n: int,
    obj: Mapping[str, Any],
    run_id_of: Callable[[str, int], str],
    skipped: list[Skipped],
) -> ImportedTrial:
    task = obj.get("task_name")
    if not isinstance(task, str) or not task:
        raise ImportRefused(path, "missing or not a string", line=n, field="task_name")
    passed, reward = obj.get("passed"), obj.get("reward")
    if passed is None and isinstance(reward, (int, float)) and not isinstance(reward, bool):
        number = finite_reward(reward)
        if number is None:
            raise ImportRefused(
                path, f"must be a finite number, got {reward!r}", line=n, field="reward"
            )
        passed = number >= 1.0
    if not isinstance(passed, bool):
        raise ImportRefused(path, "must be true or false", line=n, field="passed")
    messages = obj.get("messages") or []
    if not isinstance(messages, list):
        raise ImportRefused(path, "must be a list of messages", line=n, field="messages")
    b = TraceBuilder(run_id_of(task, 0))
    prompt = next(
        (
            text_of(m.get("content"))
            for m in messages
            if isinstance(m, Mapping) and m.get("role") == "user"
        ),
        None,
    )
    b.run_start(task_id=task, trial=0, input=prompt)
    last = _openai(b, [(f"messages[{j}]", m) for j, m in enumerate(messages)], path, n)
    for call_id, tool in b.unanswered_calls():
        skipped.append(Skipped(path, f"line {n} call {call_id} ({tool})", "no tool result"))
    error = obj.get("error")
    status = "error" if error else "ok"
    b.run_end(status=status, output=last, error=str(error) if error else None)
    return ImportedTrial(
        task_id=task,
        trial_index=0,
        events=b.events,
        label=passed,
        source_id=f"{task}/line{n}",
        source_file=path,
        response_text=last,
        status=status,
        attrs={"reward": reward, "category": obj.get("category")},
    )


# --------------------------------------------------------------------------- ShareGPT
def _gpt_turn(value: str, path: str, n: int, field: str) -> tuple[str, str, list[Any]]:
    """A ``gpt`` turn's text, reasoning and tool calls ``(None, name, args)``."""
    reasoning = "\n".join(m.strip() for m in _THINK.findall(value) if m.strip())
    calls = []
    for k, raw in enumerate(_CALL.findall(value)):
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            raise ImportRefused(
                path, f"a <tool_call> is not JSON: {exc}", line=n, field=f"{field}.tool_call[{k}]"
            ) from None
        if not isinstance(obj, Mapping) or not isinstance(obj.get("name"), str):
            raise ImportRefused(path, "missing", line=n, field=f"{field}.tool_call[{k}].name")
        args = parse_args(
            obj.get("arguments"), path=path, line=n, field=f"{field}.tool_call[{k}].arguments"
        )
        calls.append((None, obj["name"], args))
    text = _CALL.sub("", _THINK.sub("", value)).strip()
    return text, reasoning, calls


def _tool_turn(b: TraceBuilder, value: str) -> None:
    """A tool turn: each ``<tool_response>`` in it ends the open call of its tool."""
    for raw in _RESPONSE.findall(value):
        try:
            resp = json.loads(raw)
        except ValueError:
            resp = {"content": raw}
        if not isinstance(resp, Mapping):
            resp = {"content": resp}
        content = resp.get("content")
        result = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        name = resp.get("name")
        b.tool_result(
            call_id=None,
            name=name if isinstance(name, str) else None,
            result=result,
            is_error=tool_failed(result),
            error_basis=INFERRED,
            match_by_name=True,
            attrs={"source_call_id": resp.get("tool_call_id")}
            if resp.get("tool_call_id")
            else None,
        )


def _trajectory(
    path: str,
    n: int,
    obj: Mapping[str, Any],
    run_id_of: Callable[[str, int], str],
    skipped: list[Skipped],
) -> ImportedTrial:
    turns = obj["conversations"]
    source_id = f"{Path(path).stem}/line{n}"
    completed = obj.get("completed", True)
    if not isinstance(completed, bool):
        raise ImportRefused(path, "must be true or false", line=n, field="completed")
    b = TraceBuilder(run_id_of(source_id, 0))
    prompt = next(
        (
            str(t.get("value") or "")
            for t in turns
            if isinstance(t, Mapping) and t.get("from") == "human"
        ),
        None,
    )
    b.run_start(task_id=source_id, trial=0, input=prompt, ts=_ts(obj.get("timestamp")))
    last: str | None = None
    for j, turn in enumerate(turns):
        field = f"conversations[{j}]"
        if not isinstance(turn, Mapping) or not isinstance(turn.get("value"), str):
            raise ImportRefused(path, "needs a string value", line=n, field=f"{field}.value")
        who, value = turn.get("from"), turn["value"]
        if who in ("system", "human"):
            b.message("system" if who == "system" else "user", value)
        elif who == "gpt":
            text, reasoning, calls = _gpt_turn(value, path, n, field)
            if text:
                last = text
            b.model_call(text=text, tool_calls=calls, reasoning=reasoning, model=obj.get("model"))
        elif who == "tool":
            _tool_turn(b, value)
        else:
            raise ImportRefused(
                path,
                f"unknown speaker {who!r} (system, human, gpt or tool)",
                line=n,
                field=f"{field}.from",
            )
    for call_id, tool in b.unanswered_calls():
        skipped.append(Skipped(path, f"line {n} call {call_id} ({tool})", "no tool response"))
    status = "ok" if completed else "error"
    b.run_end(status=status, output=last, error=None if completed else "not completed")
    return ImportedTrial(
        task_id=source_id,
        trial_index=0,
        events=b.events,
        label=None,
        source_id=source_id,
        source_file=path,
        response_text=last,
        status=status,
        attrs={"model": obj.get("model"), "completed": completed},
    )
