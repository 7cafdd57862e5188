"""Run ids in events are exactly ``str(UUID)`` of LangChain's run ids, whoever formats them.

The handler formats run ids itself (``_runs.uuid_text``) instead of calling ``UUID.__str__``;
these tests hold it to the standard library's text, on its own and across a whole real run.
"""

from __future__ import annotations

import uuid
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.utils.uuid import uuid7

from hbeval_core.vocab import ATTR_FRAMEWORK_RUN_ID
from hbeval_langgraph import HBEvalCallbackHandler
from hbeval_langgraph._runs import uuid_text
from tests.adapters.langgraph.test_langgraph_fixtures import inputs, scripted_agent


def test_uuid_text_is_the_standard_text_of_every_kind_of_uuid() -> None:
    ids = [UUID(int=0), UUID(int=2**128 - 1), UUID(int=1), UUID(int=2**127)]
    ids += [uuid.uuid4() for _ in range(2000)]
    ids += [uuid.uuid1() for _ in range(200)]
    ids += [uuid7() for _ in range(200)]
    for run_id in ids:
        assert uuid_text(run_id) == str(run_id)


def test_uuid_text_leaves_anything_but_a_plain_uuid_to_str() -> None:
    class Shouting(UUID):
        def __str__(self) -> str:
            return super().__str__().upper()

    odd = Shouting(int=2**100 + 12345)
    assert uuid_text(odd) == str(odd) == str(odd).upper()
    assert uuid_text("run-7") == "run-7"
    assert uuid_text(42) == "42"


class _Ids(BaseCallbackHandler):
    """Every run id LangChain reports, formatted by the standard library."""

    def __init__(self) -> None:
        self.ids: set[str] = set()

    def _note(self, *args: Any, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any) -> None:
        self.ids.add(str(run_id))
        if parent_run_id is not None:
            self.ids.add(str(parent_run_id))

    on_chain_start = on_chat_model_start = on_tool_start = _note


def test_every_run_id_in_a_real_run_is_the_standard_text() -> None:
    graph = scripted_agent()
    ids = _Ids()
    handler = HBEvalCallbackHandler()
    graph.invoke(inputs(), config={"callbacks": [ids, handler]})
    events = handler.events
    named = {e.attrs[ATTR_FRAMEWORK_RUN_ID] for e in events if ATTR_FRAMEWORK_RUN_ID in e.attrs}
    # Model and tool calls, node spans, the graph: every one LangChain started.
    assert len(named) >= 8
    assert named <= ids.ids
    root = next(e for e in events if e.kind == "run_start")
    assert root.run_id in ids.ids
    assert all(e.run_id == root.run_id for e in events)
    parents = {e.parent_id for e in events if e.parent_id is not None}
    assert parents <= ids.ids
