"""``hbeval init``: a starter task file and verifier module beside an agent file.

The files run as written (``hbeval battery run AGENT.py:ATTR --tasks tasks.yaml``) and say where
to make them the agent's own: the question, what a pass means, which tools must never run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["StarterExistsError", "StarterFiles", "starter_files", "write_starter"]

TASKS_NAME = "tasks.yaml"
VERIFIERS_NAME = "verifiers.py"

_TASKS = """\
# Tasks for {target}. Run the fault battery on them with:
#
#   hbeval battery run {ref} --tasks {tasks_path}
#
# The question reaches the agent as written: the battery's faults happen at its tool calls
# (--perturb context adds the reference's context sentences as a separate family, reported
# apart). Scenario i runs task i mod the number of tasks; --matrix runs every scenario on every
# task. Fields: id, question, and optionally verify (path.py:function, beside this file),
# required (keywords the answer must contain when there is no verifier), forbidden_tools,
# irreversible_tools, expected_calls ([{{tool, args}}]), tools (the tools the task calls: a
# scenario none of its tasks can meet is refused before the run), system, category, metadata,
# answer_from (the agent of a team whose last message is the answer). A verifier is
# verify(outcome, trace) -> bool; see verifiers.py.
tasks:
  - id: answers_the_question
    # Replace with a request your agent handles, in the words of a user.
    question: "What can you tell me? Use your tools to find out before you answer."
    verify: verifiers.py:answered
  - id: uses_its_tools
    question: "Look it up with your tools first, then tell me what you found."
    verify: verifiers.py:answered_after_a_tool_call
    # forbidden_tools: [delete_account]     # tools that must never run in this task
    # irreversible_tools: [issue_refund]    # tools whose effects a failure cannot undo
    # tools: [lookup_order]                 # the tools this task calls
"""

_VERIFIERS = '''\
"""Verifiers for {target}: each decides whether one trial passed.

A verifier is ``verify(outcome, trace) -> bool``. ``outcome`` is the same on every framework:

- ``outcome.final_text``   the agent's final answer ("" when it gave none)
- ``outcome.tool_calls``   the calls the trace recorded: ``.name``, ``.args``, ``.result``,
                           ``.ok`` (returned without error), ``.fault`` (the fault injected)
- ``outcome.messages``     the conversation: ``.role`` (user, assistant, tool, system), ``.content``
- ``outcome.ok``, ``outcome.status``, ``outcome.error``   how the run ended
- ``outcome.state``, ``outcome.raw``   the framework's own final state and result object

``trace`` is the run's list of hb-events. Decide from what the agent did (the tool calls), not
only from what it says it did.
"""

from __future__ import annotations

from typing import Any

from hbeval_core import Outcome


def answered(outcome: Outcome, trace: list[Any]) -> bool:
    """The run ended normally with a non-empty answer. Make it check what a right answer says."""
    return outcome.ok and bool(outcome.final_text.strip())


def answered_after_a_tool_call(outcome: Outcome, trace: list[Any]) -> bool:
    """At least one tool call returned, then the agent answered."""
    returned = [call for call in outcome.tool_calls if call.ok]
    return outcome.ok and bool(returned) and bool(outcome.final_text.strip())
'''


class StarterExistsError(FileExistsError):
    """A starter file already exists and ``force`` was not given; ``path`` names it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(f"{path} already exists; pass --force to overwrite it")


@dataclass(frozen=True)
class StarterFiles:
    """The two files ``init`` writes, and the command that runs the battery on them."""

    agent: Path
    ref: str
    tasks: Path
    verifiers: Path

    @property
    def command(self) -> str:
        return f"hbeval battery run {self.ref} --tasks {self.tasks}"


def starter_files(target: str) -> StarterFiles:
    """Where the starter files for ``target`` (``agent.py`` or ``agent.py:attr``) go."""
    path_part, attr = target, ""
    head, sep, tail = target.rpartition(":")
    if sep and head.endswith(".py"):  # rpartition: a Windows drive letter keeps its colon
        path_part, attr = head, tail
    path = Path(path_part)
    if path.suffix != ".py":
        raise ValueError(f"TARGET {target!r} must be a Python file, e.g. my_agent.py:make_agent")
    if not path.is_file():
        raise FileNotFoundError(f"TARGET {target!r}: no such file (looked at {path.resolve()})")
    return StarterFiles(
        agent=path,
        ref=f"{path_part}:{attr or 'YOUR_AGENT'}",
        tasks=path.parent / TASKS_NAME,
        verifiers=path.parent / VERIFIERS_NAME,
    )


def write_starter(target: str, *, force: bool = False) -> StarterFiles:
    """Write ``tasks.yaml`` and ``verifiers.py`` beside ``target``.

    Nothing is written when either exists and ``force`` is false: ``StarterExistsError`` names
    the first that does.
    """
    from ..store._atomic import write_atomic

    files = starter_files(target)
    for path in (files.tasks, files.verifiers):
        if path.is_symlink():  # dangling or not: never written through, --force or not
            raise ValueError(
                f"{path} is a symlink (to {os.readlink(path)}); nothing was written. Remove it "
                "or run init beside a plain folder"
            )
        if path.is_dir():
            raise ValueError(f"{path} is a directory; nothing was written")
    if not force:
        for path in (files.tasks, files.verifiers):
            if path.exists():
                raise StarterExistsError(path)
    values = {"target": files.agent, "ref": files.ref, "tasks_path": files.tasks}
    write_atomic(files.tasks, _TASKS.format(**values))
    write_atomic(files.verifiers, _VERIFIERS.format(**values))
    return files
