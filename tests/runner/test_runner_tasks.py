"""Loading tasks from YAML/JSON files and Python references; bad files name task and field."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from hbeval.runner.loader import TargetError, TaskFileError, load_object, load_tasks
from hbeval_core.contract import ExpectedCall, Task

CHECKS = """
def refund_ok(final_state, trace):
    return "refund" in str(final_state)

NOT_CALLABLE = 3
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_yaml_file_with_verifier_beside_it(tmp_path: Path) -> None:
    _write(tmp_path, "checks.py", CHECKS)
    path = _write(
        tmp_path,
        "tasks.yaml",
        """
        tasks:
          - id: refund
            question: Refund order A1.
            category: support
            required: [refund, A1]
            forbidden_tools: [transfer_funds]
            irreversible_tools: [issue_refund]
            expected_calls:
              - {tool: lookup_order, args: {order_id: A1}}
              - {tool: issue_refund}
            verify: checks.py:refund_ok
          - id: status
            question: Where is A2?
        """,
    )
    tasks = load_tasks(path)
    assert [t.id for t in tasks] == ["refund", "status"]
    refund = tasks[0]
    assert refund.required == ("refund", "A1")
    assert refund.forbidden_tools == ("transfer_funds",)
    assert refund.expected_calls == (
        ExpectedCall("lookup_order", {"order_id": "A1"}),
        ExpectedCall("issue_refund", None),
    )
    assert refund.verify is not None and refund.verify({"x": "refund"}, []) is True
    assert tasks[1].verify is None and tasks[1].expected_calls is None


def test_json_list_file(tmp_path: Path) -> None:
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([{"id": "a", "question": "q?"}]), encoding="utf-8")
    assert load_tasks(str(path)) == [Task(id="a", question="q?")]


@pytest.mark.parametrize(
    ("body", "task", "field", "fix"),
    [
        ("- id: a\n", "'a' (#0)", "question", "non-empty text"),
        (
            "- id: a\n  question: q\n  forbidden_tools: transfer_funds\n",
            "'a' (#0)",
            "forbidden_tools",
            "[transfer_funds]",
        ),
        ("- id: a\n  question: q\n  colour: red\n", "'a' (#0)", "colour", "valid fields"),
        ("- question: q\n", "#0", "id", "non-empty string"),
        (
            "- id: a\n  question: q\n  verify: checks.py:missing\n",
            "'a' (#0)",
            "verify",
            "no attribute",
        ),
        (
            "- id: a\n  question: q\n  verify: checks.py:NOT_CALLABLE\n",
            "'a' (#0)",
            "verify",
            "not callable",
        ),
        (
            "- id: a\n  question: q\n  expected_calls: [{args: {}}]\n",
            "'a' (#0)",
            "expected_calls",
            "'tool'",
        ),
        ("- {id: a, question: q}\n- {id: a, question: r}\n", "'a'", "id", "duplicate"),
    ],
)
def test_bad_task_file_names_task_field_and_fix(
    tmp_path: Path, body: str, task: str, field: str, fix: str
) -> None:
    _write(tmp_path, "checks.py", CHECKS)
    path = _write(tmp_path, "tasks.yaml", body)
    with pytest.raises(TaskFileError) as info:
        load_tasks(path)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.field == field and err.task == task
    message = str(err)
    assert f"task {task}" in message and f"field {field!r}" in message and fix in message
    assert str(path) in message


def test_unparseable_and_missing_files(tmp_path: Path) -> None:
    path = _write(tmp_path, "tasks.yaml", "tasks: [unclosed\n")
    with pytest.raises(TaskFileError, match="cannot be parsed"):
        load_tasks(path)
    with pytest.raises(TaskFileError, match="not found"):
        load_tasks(tmp_path / "nope.yaml")
    with pytest.raises(TaskFileError, match="must have the key 'tasks'"):
        load_tasks(_write(tmp_path, "t2.yaml", "tasks: []\nextra: 1\n"))


def test_python_references(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "agent_mod.py",
        """
        from hbeval_core.contract import Task
        tasks = [Task(id="x", question="q")]
        not_tasks = 3
        mixed = [Task(id="y", question="q"), "oops"]
        def agent(question):
            return question
        """,
    )
    ref = str(tmp_path / "agent_mod.py")
    assert [t.id for t in load_tasks(f"{ref}:tasks")] == ["x"]
    assert load_object(f"{ref}:agent")("hi") == "hi"
    assert load_tasks("hbeval_plain.examples:tasks")[0].id == "refund_damaged"
    with pytest.raises(TaskFileError, match="list of Task"):
        load_tasks(f"{ref}:not_tasks")
    with pytest.raises(TaskFileError, match="#1"):
        load_tasks(f"{ref}:mixed")
    with pytest.raises(TargetError, match="module:attr"):
        load_object("no_colon_here")
    with pytest.raises(TargetError, match="cannot import module"):
        load_object("hbeval_no_such_module:x")


def test_a_module_list_of_dicts_loads_like_a_task_file(tmp_path: Path) -> None:
    (tmp_path / "agent_tasks.py").write_text(
        "def check(outcome, trace):\n"
        "    return '14' in (outcome.final_text or '')\n"
        "tasks = [\n"
        "    {'id': 'x1', 'question': 'How many X-1?', 'verify': check},\n"
        "    {'id': 'x2', 'question': 'Price of X-1?', 'required': ['3.50']},\n"
        "]\n"
        "bad = [{'id': 'x1', 'question': 'q', 'retries': 3}]\n"
        "mixed = [{'id': 'x1', 'question': 'q'}, 3]\n",
        encoding="utf-8",
    )
    first, second = load_tasks(f"{tmp_path / 'agent_tasks.py'}:tasks")
    assert first.id == "x1" and callable(first.verify) and first.verify.__name__ == "check"
    assert second.required == ("3.50",)
    with pytest.raises(TaskFileError, match="retries"):
        load_tasks(f"{tmp_path / 'agent_tasks.py'}:bad")
    with pytest.raises(TaskFileError, match="not a Task"):
        load_tasks(f"{tmp_path / 'agent_tasks.py'}:mixed")
