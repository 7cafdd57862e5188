"""The trial's model faults for in-process scripted models (``TrialContext.model_faults``).

A battery scenario that plants model faults on an in-process adapter gives its trial a
``ScriptedModelFaults``. Each scripted model call asks it for its fault
(``hbeval_core.faults.scripted.planted_model_fault``); it decides by the plan, as the proxy does,
and hands back what the proxy would have sent (the same error answers, the same spoiled
arguments), from which the scripted model raises the provider's exception.

Receipts are kept here and written into the trace when the attempt ends (``settle``): each
right after the model call it faulted (the trial's n-th ``model_start``), with
``attrs.delivered_by = "scripted_model"`` and the same ``attrs.followed_by`` as the proxy's
(``hbeval.proxy._openai``): the same conversation asked again is a ``retry`` (with
``honoured_retry_after`` for a 429), the same conversation to another model a ``fallback``, a
changed one ``continued``, no further call ``gave_up``.

A trial in which no scripted model made a call (its agent talks to a real provider client)
cannot receive its model faults here: each planned fault gets a ``skipped`` receipt saying so,
and is not delivered.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from hbeval_core.events import EventBase, FaultInjected, ModelStart
from hbeval_core.faults.model import ModelFaultPlan, ModelFaultSpec, model_effect
from hbeval_core.faults.scripted import PlantedModelFault
from hbeval_core.vocab import EMPTY_COMPLETION, MALFORMED_TOOL_CALL, MODEL_TIMEOUT, RATE_LIMIT

from ..proxy._model_faults import error_answer, spoil_arguments

__all__ = ["NO_SCRIPTED_MODEL", "ScriptedModelFaults"]

RETRY_TOLERANCE: Final = 0.95
"""A retry this share of ``Retry-After`` late or later honours it (as the proxy judges)."""
NO_SCRIPTED_MODEL: Final = (
    "no scripted model was called in this trial: a real provider client receives model "
    "faults through `hbeval proxy openai`"
)


@dataclass
class _Kept:
    receipt: FaultInjected
    spec: ModelFaultSpec
    conversation: str
    model: str
    at: float
    followed: dict[str, Any] | None = None


class ScriptedModelFaults:
    """Decides one trial's model faults for its scripted models, and keeps their receipts."""

    def __init__(self, plan: ModelFaultPlan, *, run_id: str, clock: Any = None) -> None:
        self.plan = plan
        self.run_id = run_id
        self.clock = clock
        self.calls = 0
        self._counts: dict[str, int] = {}
        self._kept: list[_Kept] = []
        self._lock = threading.Lock()

    def _now(self) -> float:
        now = getattr(self.clock, "now", None)
        return float(now()) if now is not None else time.time()

    def plant(self, model: str, conversation: str, *, tool_call: bool) -> PlantedModelFault | None:
        """The fault on this call (None: the call goes on as scripted); its receipt is kept."""
        with self._lock:
            now = self._now()
            self._follow_up(model, conversation, now)
            call = self.calls
            self.calls += 1
            decided = self.plan.decide(model, self._counts)
            if decided is None:
                return None
            spec, attempt = decided
            planted, fields = _planted(spec, call, tool_call)
            receipt = self._receipt(
                spec, ts=now, call_id=f"model#{call}", attempt=attempt, **fields
            )
            self._kept.append(_Kept(receipt, spec, conversation, model, now))
        if spec.mode == MODEL_TIMEOUT and planted is not None:
            wait = int(spec.param("after_ms")) / 1000.0
            sleep = getattr(self.clock, "sleep", None)
            sleep(wait) if sleep is not None else time.sleep(wait)
        return planted

    def _follow_up(self, model: str, conversation: str, now: float) -> None:
        """What followed the last fault, now that the next call shows it."""
        last = self._kept[-1] if self._kept else None
        if last is None or last.followed is not None:
            return
        after = round(max(0.0, now - last.at) * 1000.0, 1)
        if conversation == last.conversation and model == last.model:
            followed: dict[str, Any] = {"action": "retry", "after_ms": after}
            if last.spec.mode == RATE_LIMIT:
                wait = float(last.spec.param("retry_after_ms"))
                followed["retry_after_ms"] = wait
                followed["honoured_retry_after"] = after >= wait * RETRY_TOLERANCE
        elif conversation == last.conversation:
            followed = {"action": "fallback", "model": model, "after_ms": after}
        else:
            followed = {"action": "continued", "after_ms": after}
        last.followed = followed

    def receipts(self) -> list[FaultInjected]:
        """Every receipt so far, with what followed (``gave_up`` when nothing did)."""
        with self._lock:
            return [
                k.receipt.model_copy(
                    update={"attrs": {**k.receipt.attrs, "followed_by": k.followed or _GAVE_UP}}
                )
                for k in self._kept
            ]

    def settle(self, events: Sequence[EventBase]) -> list[EventBase]:
        """``events`` with each receipt after the model call it faulted (module docstring)."""
        out = list(events)
        if self.calls == 0:
            return out + self._unreached(out)
        for receipt in reversed(self.receipts()):
            at = _place(out, receipt)
            near = out[at - 1] if at > 0 else (out[0] if out else None)
            if near is not None:  # the trace's own run id (a framework may use its own)
                receipt = receipt.model_copy(update={"run_id": near.run_id})
            out.insert(at, receipt)
        return out

    def _unreached(self, events: Sequence[EventBase]) -> list[EventBase]:
        run_id = next((e.run_id for e in events), self.run_id)
        return [
            self._receipt(
                spec,
                run_id=run_id,
                ts=self._now(),
                call_id=None,
                injected="skipped",
                observed="not_reached",
                attrs={"family": "model", "received": False, "reason": NO_SCRIPTED_MODEL},
            )
            for spec in self.plan.faults
        ]

    def _receipt(self, spec: ModelFaultSpec, **fields: Any) -> FaultInjected:
        fields.setdefault("run_id", self.run_id)
        fields.update(
            tool=None,
            mode=spec.mode,  # validated by FaultInjected: one of the model fault modes
            effect=model_effect(spec.mode),
            intended=spec.to_dict(),
            plan_id=self.plan.id,
            fault_id=spec.id,
        )
        return FaultInjected(**fields)


_GAVE_UP: Final = {"action": "gave_up"}


def _planted(
    spec: ModelFaultSpec, call: int, tool_call: bool
) -> tuple[PlantedModelFault | None, dict[str, Any]]:
    """What the scripted model is to do, and the receipt's fields for it."""
    attrs: dict[str, Any] = {"family": "model", "delivered_by": "scripted_model", "received": True}
    answer = error_answer(spec)
    if answer is not None:
        status, headers, body = answer
        data = json.loads(body)
        attrs["status"] = status
        planted = PlantedModelFault(spec.mode, call, status, headers, data)
        return planted, {
            "payload": str(data["error"]["message"]),
            "observed": f"http_{status}",
            "attrs": attrs,
        }
    if spec.mode == EMPTY_COMPLETION:
        return PlantedModelFault(spec.mode, call), {"observed": "empty", "attrs": attrs}
    if spec.mode == MALFORMED_TOOL_CALL:
        if not tool_call:
            attrs["reason"] = "no_tool_call"
            return None, {"injected": "skipped", "observed": "normal", "attrs": attrs}
        kind = str(spec.param("malformed_kind"))

        def spoil(arguments: str) -> str:
            return spoil_arguments(arguments, kind)

        attrs["kind"] = kind
        return PlantedModelFault(spec.mode, call, spoil=spoil), {
            "observed": "malformed",
            "attrs": attrs,
        }
    return PlantedModelFault(spec.mode, call), {"observed": "stream_cut", "attrs": attrs}


def _place(events: Sequence[EventBase], receipt: FaultInjected) -> int:
    """Where ``receipt`` goes: after the n-th ``model_start`` (n its call's number), else
    before the first event recorded after it."""
    number = int(str(receipt.call_id).rsplit("#", 1)[1])
    seen = -1
    for i, event in enumerate(events):
        if isinstance(event, ModelStart):
            seen += 1
            if seen == number:
                return i + 1
    ts = receipt.ts or 0.0
    return next((i for i, e in enumerate(events) if e.ts is not None and e.ts > ts), len(events))
