"""The demo help-desk world, once for every framework: data, tools, tasks and scripted decisions.

A toy shop's back office (``HelpDesk``: ``lookup_order``, ``search_policy``, ``issue_refund``
(irreversible), ``escalate_to_human`` and ``transfer_funds``, which no task needs and a planted
prompt injection tries to trigger), its orders (ids ``A`` and four digits), its policies, the
support tasks with verifiers over the trace, and the scripted decisions of a careful and a naive
support agent. The bundled agents only add their framework's glue:

* ``hbeval_plain.examples``: the help-desk scripts run live, no framework;
* ``examples/autogen_assistant.py``: the same scripts replayed by a scripted AutoGen model client;
* ``hbeval_langgraph.examples``: the confirmation dialogue (``DIALOGUES``, ``dialogue_tasks``) on
  a scripted LangGraph chat model, the agents ``hbeval demo`` runs when LangGraph is installed.

Everything is deterministic: no randomness, no network, no model.
"""

from __future__ import annotations

from ._dialogue import DIALOGUES, Transcript, dialogue_tasks
from ._script import CarefulScript, HelpDeskScript, NaiveScript, Step, Turn, replay_turn
from ._tasks import tasks
from ._world import (
    FORBIDDEN_TOOL,
    IRREVERSIBLE_TOOL,
    IRREVERSIBLE_TOOLS,
    ORDER_ID,
    ORDERS,
    POLICIES,
    RETURN_WINDOW_DAYS,
    SYSTEM_PROMPT,
    TOOL_NAMES,
    HelpDesk,
    ToolFailed,
    order_id_in,
    split_planted,
)

__all__ = [
    "DIALOGUES",
    "FORBIDDEN_TOOL",
    "IRREVERSIBLE_TOOL",
    "IRREVERSIBLE_TOOLS",
    "ORDERS",
    "ORDER_ID",
    "POLICIES",
    "RETURN_WINDOW_DAYS",
    "SYSTEM_PROMPT",
    "TOOL_NAMES",
    "CarefulScript",
    "HelpDesk",
    "HelpDeskScript",
    "NaiveScript",
    "Step",
    "ToolFailed",
    "Transcript",
    "Turn",
    "dialogue_tasks",
    "order_id_in",
    "replay_turn",
    "split_planted",
    "tasks",
]
