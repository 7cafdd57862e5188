"""Load targets and tasks: ``module:attr`` / ``path.py:attr`` references and YAML or JSON task files.

A task file is a list of tasks, or a mapping with a ``tasks`` list. Each task has the fields of
``Task``: ``id``, ``question``, and optionally ``category``, ``required`` (keywords),
``forbidden_tools``, ``irreversible_tools``, ``expected_calls`` (``[{tool, args}]``), ``verify``
(``"module:callable"`` or ``"path.py:callable"``, resolved beside the file), ``system`` and
``metadata``, ``resume`` (the values a pausing LangGraph graph is resumed with) and
``answer_from`` (the agent whose last message is a team's final answer) and ``tools`` (the
tools the task calls, checked against the battery's fault targets). Every mistake raises ``TaskFileError`` naming the file, the task, the field and
the fix.

A mapping-form task file may also declare what its tasks depend on beyond their text:
``inputs:`` (files, relative to the task file: prompts, configs) and ``env:`` (environment
variable names: a model id, say). The run's manifest digests each file and each variable's
value, so a changed prompt file or model id never reuses a stored run.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from hbeval_core.contract import ExpectedCall, Task

__all__ = [
    "TASK_FIELDS",
    "TargetError",
    "TaskFileError",
    "TaskList",
    "load_module",
    "load_object",
    "load_tasks",
    "loaded_module",
    "split_reference",
    "tasks_from_data",
]

TASK_FIELDS: Final = (
    "id",
    "question",
    "category",
    "required",
    "forbidden_tools",
    "irreversible_tools",
    "expected_calls",
    "verify",
    "system",
    "metadata",
    "resume",
    "answer_from",
    "tools",
)
"""The fields a task in a YAML/JSON file may have."""

_LIST_FIELDS: Final = ("required", "forbidden_tools", "irreversible_tools")


class TargetError(ValueError):
    """A ``module:attr`` or ``path.py:attr`` reference could not be loaded; says what to fix."""


class TaskFileError(ValueError):
    """A task source is wrong. Names the source, the task (id or position), the field and the fix."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        task: str | None = None,
        field: str | None = None,
    ) -> None:
        self.source = source
        self.task = task
        self.field = field
        where = []
        if source:
            where.append(source)
        if task:
            where.append(f"task {task}")
        if field:
            where.append(f"field {field!r}")
        super().__init__((": ".join(where) + ": " if where else "") + message)


def split_reference(ref: str) -> tuple[str, str]:
    """Split ``"module:attr"`` or ``"path/to/file.py:attr"`` into its two parts."""
    if not isinstance(ref, str) or ":" not in ref:
        raise TargetError(
            f"{ref!r} is not a reference; write module:attr (e.g. mypkg.agents:make_agent) "
            "or path.py:attr (e.g. agents/support.py:make_agent)"
        )
    # rpartition: a Windows drive letter ("C:\\x.py:attr") keeps its colon in the path.
    module, _, attr = ref.rpartition(":")
    if not module or not attr:
        raise TargetError(f"{ref!r} needs both parts: module:attr or path.py:attr")
    return module, attr


_FILE_MODULES: dict[Path, ModuleType] = {}


def load_module(name_or_path: str, *, base_dir: Path | None = None) -> ModuleType:
    """Import a module by dotted name or from a ``.py`` file (relative paths from ``base_dir``).

    A file is imported once per process under a stable private name, and its folder is put on
    ``sys.path`` so it can import its siblings, as ``python file.py`` would.
    """
    if name_or_path.endswith(".py") or "/" in name_or_path or "\\" in name_or_path:
        path = Path(name_or_path)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        path = path.resolve()
        if not path.is_file():
            raise TargetError(f"file {name_or_path!r} not found (looked at {path})")
        cached = _FILE_MODULES.get(path)
        if cached is not None:
            return cached
        digest = hashlib.sha256(str(path).encode()).hexdigest()[:8]
        mod_name = f"hbeval_user_{path.stem}_{digest}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise TargetError(f"cannot import {path} as Python")
        module = importlib.util.module_from_spec(spec)
        folder = str(path.parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        sys.modules[mod_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(mod_name, None)
            raise TargetError(f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
        _FILE_MODULES[path] = module
        return module
    try:
        return importlib.import_module(name_or_path)
    except ImportError as exc:
        raise TargetError(
            f"cannot import module {name_or_path!r} ({exc}); check the name, or give a file "
            "path ending in .py"
        ) from exc


def loaded_module(name_or_path: str, *, base_dir: Path | None = None) -> ModuleType | None:
    """The module ``load_module`` would return, when it is already imported (never imports)."""
    if name_or_path.endswith(".py") or "/" in name_or_path or "\\" in name_or_path:
        path = Path(name_or_path)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        return _FILE_MODULES.get(path.resolve())
    return sys.modules.get(name_or_path)


def load_object(ref: str, *, base_dir: Path | None = None) -> Any:
    """The object ``ref`` names: ``module:attr`` or ``path.py:attr`` (``attr`` may be dotted)."""
    module_part, attr = split_reference(ref)
    obj: Any = load_module(module_part, base_dir=base_dir)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TargetError(
                f"{module_part!r} has no attribute {attr!r}; check the name after the colon"
            ) from None
    return obj


# ---------------------------------------------------------------------- tasks
def load_tasks(source: str | Path | Sequence[Task], *, base_dir: Path | None = None) -> list[Task]:
    """Tasks from a YAML/JSON file, a ``module:attr`` / ``path.py:attr`` reference, or a list.

    Raises ``TaskFileError`` naming the source, task and field on any mistake.
    """
    if isinstance(source, Sequence) and not isinstance(source, (str, bytes)):
        checked = _check_task_list(source, "tasks")
        return TaskList(checked, source.declared) if isinstance(source, TaskList) else checked
    text = str(source)
    path = Path(text)
    if not path.is_absolute() and base_dir is not None and not path.exists():
        path = base_dir / path
    if path.suffix.lower() in (".yaml", ".yml", ".json"):
        return _load_task_file(path)
    try:
        obj = load_object(text, base_dir=base_dir)
    except TargetError as exc:
        raise TaskFileError(str(exc), source=text) from None
    if callable(obj) and not isinstance(obj, (list, tuple)):
        raise TaskFileError(
            f"{text!r} is a callable; point at a list of Task (e.g. module:tasks)", source=text
        )
    if not isinstance(obj, (list, tuple)):
        raise TaskFileError(
            f"expected a list of Task, got {type(obj).__name__}; point at a list such as "
            "module:tasks",
            source=text,
        )
    if obj and all(isinstance(item, Mapping) for item in obj):
        # Plain dicts, as in a task file (``verify`` may also be the callable itself).
        return tasks_from_data(list(obj), source=text, base_dir=base_dir)
    return _check_task_list(obj, text)


def _check_task_list(items: Sequence[Any], source: str) -> list[Task]:
    tasks = list(items)
    if not tasks:
        raise TaskFileError("holds no tasks; a battery needs at least one", source=source)
    seen: set[str] = set()
    for i, task in enumerate(tasks):
        if not isinstance(task, Task):
            raise TaskFileError(
                f"item is a {type(task).__name__}, not a Task; build it with "
                "hbeval_core.contract.Task(id=..., question=...)",
                source=source,
                task=f"#{i}",
            )
        if task.id in seen:
            raise TaskFileError(
                "duplicate id; give every task its own id",
                source=source,
                task=repr(task.id),
                field="id",
            )
        seen.add(task.id)
    return tasks


def _load_task_file(path: Path) -> list[Task]:
    source = str(path)
    if path.exists() and not path.is_file():
        raise TaskFileError(
            "not a regular file (a device or a pipe?); give a task file", source=source
        )
    if not path.is_file():
        raise TaskFileError(f"file not found (looked at {path.resolve()})", source=source)
    from .._inputs import TooLarge, read_bounded

    try:
        text = read_bounded(path, "task file").decode("utf-8")
    except TooLarge as exc:
        raise TaskFileError(str(exc), source=source) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"cannot be read: {exc}", source=source) from None
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import yaml  # imported here: only task and manifest files need it

            data = yaml.safe_load(text)
    except Exception as exc:
        raise TaskFileError(f"cannot be parsed: {exc}", source=source) from None
    return tasks_from_data(data, source=source, base_dir=path.parent)


class TaskList(list[Task]):
    """The tasks of a task file, with the ``inputs`` files and ``env`` names it declares.

    The run's manifest digests those files and variables (``runner._provenance``), so a
    changed prompt file or model id never reuses a stored run.
    """

    declared: dict[str, tuple[str, ...]]

    def __init__(self, tasks: Sequence[Task], declared: Mapping[str, tuple[str, ...]]) -> None:
        super().__init__(tasks)
        self.declared = dict(declared)


_FILE_KEYS: Final = ("tasks", "inputs", "env")


def _declared(data: Mapping[str, Any], source: str, base_dir: Path | None) -> dict[str, Any]:
    """A task file's ``inputs:`` (files, relative to it) and ``env:`` (variable names)."""
    out: dict[str, tuple[str, ...]] = {}
    for key, hint in (
        ("inputs", "a list of file paths (relative to the task file) the tasks read"),
        ("env", "a list of environment variable names the agent reads (a model id, say)"),
    ):
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise TaskFileError(f"must be {hint} (got {value!r})", source=source, field=key)
        if key == "inputs":
            folder = base_dir or Path.cwd()
            value = [str((folder / v).resolve()) for v in value]
        out[key] = tuple(value)
    return out


def tasks_from_data(
    data: Any, *, source: str = "tasks", base_dir: Path | None = None
) -> list[Task]:
    """Build tasks from parsed YAML/JSON: a list, or a mapping with a ``tasks`` list (and
    optionally ``inputs`` and ``env``, kept on the returned ``TaskList``)."""
    declared: dict[str, Any] = {}
    if isinstance(data, Mapping):
        extra = sorted(str(k) for k in set(data) - set(_FILE_KEYS))
        if "tasks" not in data or extra:
            raise TaskFileError(
                "a mapping must have the key 'tasks', holding the list of tasks, and may have "
                "'inputs' (files) and 'env' (variable names)"
                + (f" (found {', '.join(map(repr, extra))})" if extra else ""),
                source=source,
            )
        declared = _declared(data, source, base_dir)
        data = data["tasks"]
    if not isinstance(data, list):
        raise TaskFileError(
            f"expected a list of tasks (or tasks: [...]), got {type(data).__name__}", source=source
        )
    tasks = [_task_from(item, i, source, base_dir) for i, item in enumerate(data)]
    return TaskList(_check_task_list(tasks, source), declared)


def _task_from(item: Any, index: int, source: str, base_dir: Path | None) -> Task:
    label = f"#{index}"
    if not isinstance(item, Mapping):
        raise TaskFileError(
            f"each task must be a mapping with at least id and question (got {item!r})",
            source=source,
            task=label,
        )
    raw_id = item.get("id")
    if isinstance(raw_id, str) and raw_id.strip():
        label = f"{raw_id!r} (#{index})"

    def fail(field: str, message: str) -> TaskFileError:
        return TaskFileError(message, source=source, task=label, field=field)

    unknown = sorted(str(k) for k in item if k not in TASK_FIELDS)
    if unknown:
        raise fail(unknown[0], f"unknown field; valid fields: {', '.join(TASK_FIELDS)}")
    if not isinstance(raw_id, str) or not raw_id.strip():
        raise fail("id", f"must be a non-empty string such as refund_order (got {raw_id!r})")
    question = item.get("question")
    if not isinstance(question, str) or not question.strip():
        raise fail("question", f"must be the non-empty text the agent receives (got {question!r})")
    category = item.get("category")
    if category is not None and not isinstance(category, str):
        raise fail("category", f"must be a string or omitted (got {category!r})")
    system = item.get("system", "")
    if not isinstance(system, str):
        raise fail("system", f"must be a string (got {system!r})")
    metadata = item.get("metadata", {})
    if not isinstance(metadata, Mapping):
        raise fail("metadata", f"must be a mapping (got {metadata!r})")
    lists: dict[str, tuple[str, ...]] = {}
    for name in _LIST_FIELDS:
        value = item.get(name, [])
        if value is None:
            value = []
        if isinstance(value, str):
            raise fail(name, f"must be a list, e.g. [{value}] rather than {value!r}")
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise fail(name, f"must be a list of non-empty strings (got {value!r})")
        lists[name] = tuple(value)
    expected = _expected_calls(item.get("expected_calls"), fail)
    resume = item.get("resume", [])
    if resume is None:
        resume = []
    if not isinstance(resume, list):
        raise fail(
            "resume",
            f"must be a list of values, one per interrupt() the graph pauses at, e.g. "
            f"[approve] (got {resume!r})",
        )
    verify = None
    ref = item.get("verify")
    if callable(ref) and not isinstance(ref, str):  # a dict built in Python may hold it
        verify = ref
    elif ref is not None:
        if not isinstance(ref, str):
            raise fail("verify", f"must be a 'module:callable' string (got {ref!r})")
        try:
            verify = load_object(ref, base_dir=base_dir)
        except TargetError as exc:
            raise fail("verify", str(exc)) from None
        if not callable(verify):
            raise fail("verify", f"{ref!r} is not callable; it must be verify(outcome, trace)")
    return Task(
        id=raw_id,
        question=question,
        category=category,
        verify=verify,
        required=lists["required"],
        forbidden_tools=lists["forbidden_tools"],
        irreversible_tools=lists["irreversible_tools"],
        expected_calls=expected,
        system=system,
        metadata=dict(metadata),
        resume=tuple(resume),
        answer_from=_answer_from(item, fail),
        tools=_declared_tools(item, fail),
    )


def _declared_tools(item: Mapping[str, Any], fail: Any) -> tuple[str, ...] | None:
    tools = item.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list) or not all(isinstance(t, str) and t.strip() for t in tools):
        raise fail("tools", f"must be a list of the tool names the task calls (got {tools!r})")
    return tuple(tools)


def _answer_from(item: Mapping[str, Any], fail: Any) -> str | None:
    value = item.get("answer_from")
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise fail("answer_from", f"must be the name of the agent that answers (got {value!r})")
    return value


def _expected_calls(value: Any, fail: Any) -> tuple[ExpectedCall, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise fail("expected_calls", f"must be a list of {{tool, args}} mappings (got {value!r})")
    calls = []
    for j, call in enumerate(value):
        if not isinstance(call, Mapping) or not isinstance(call.get("tool"), str):
            raise fail(
                "expected_calls",
                f"item {j} must be a mapping with a 'tool' name, e.g. "
                f"{{tool: lookup_order, args: {{order_id: A1}}}} (got {call!r})",
            )
        extra = sorted(set(call) - {"tool", "args"})
        if extra:
            raise fail("expected_calls", f"item {j} has unknown key(s) {extra}; use tool and args")
        args = call.get("args")
        if args is not None and not isinstance(args, Mapping):
            raise fail("expected_calls", f"item {j}: 'args' must be a mapping (got {args!r})")
        calls.append(ExpectedCall(tool=call["tool"], args=dict(args) if args is not None else None))
    return tuple(calls)
