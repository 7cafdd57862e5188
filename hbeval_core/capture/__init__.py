"""What every adapter's capture shares, written once.

* ``BaseRecorder``: event numbering and order under one lock, the live ``Monitor``, a streaming
  sink, monitor directives and halts drained into events, the budget halt, capture errors kept
  without breaking the agent;
* ``TrialTemplate``: the ``run_trial`` skeleton (run id, question, fault injector, infra errors,
  status by exception class, one metadata key for capture errors) and the fault and memory hooks;
* ``Instrumentor``: idempotent ``instrument()`` / ``uninstrument()`` with the version check;
* ``precedents_text``: memory precedents under one header, the same text on every framework
  (the contract's, re-exported here where adapters build their messages).

An adapter only translates its framework's callbacks into these calls.
"""

from __future__ import annotations

from hbeval_core.contract._memory import PRECEDENTS_HEADER, precedents_text

from ._async import run_to_end
from ._construct import construct
from ._fast import Deferred, DeferredRecorder
from ._instrument import Instrumentor
from ._links import CallLinks, IssuedCall
from ._recorder import (
    HALT_TRIGGERS,
    UNWATCHED,
    BaseRecorder,
    ModelCallRecord,
    SpanRecord,
    ToolCallRecord,
    budget_halt_fields,
    directive_fields,
    halt_fields,
    never_raises,
)
from ._trial import (
    META_CAPTURE_ERRORS,
    Trial,
    TrialTemplate,
    capture_metadata,
    injector_for,
    open_trial,
    result_of,
)
from ._values import jsonable

__all__ = [
    "HALT_TRIGGERS",
    "META_CAPTURE_ERRORS",
    "PRECEDENTS_HEADER",
    "UNWATCHED",
    "BaseRecorder",
    "CallLinks",
    "Deferred",
    "DeferredRecorder",
    "Instrumentor",
    "IssuedCall",
    "ModelCallRecord",
    "SpanRecord",
    "ToolCallRecord",
    "Trial",
    "TrialTemplate",
    "budget_halt_fields",
    "capture_metadata",
    "construct",
    "directive_fields",
    "halt_fields",
    "injector_for",
    "jsonable",
    "never_raises",
    "open_trial",
    "precedents_text",
    "result_of",
    "run_to_end",
]
