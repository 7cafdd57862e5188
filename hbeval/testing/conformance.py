"""Checks every hbeval adapter must pass, whatever its framework.

The standard script (each adapter builds it with its own framework and a scripted model):

1. the model explains itself and calls ``lookup(query="order A1")``;
2. it reads the result, explains itself and calls ``add(a=2, b=3)``;
3. it answers ``"done"`` with no tool call.

So a clean run has exactly 3 model calls, 2 tool calls, one run start and one run end, and the
model reads each tool result in its next input (which is what makes fault receipts provable).

A subclass implements the hooks below; every ``test_*`` method then runs against its adapter.
The base class is not named ``Test*`` so pytest collects only the subclasses. A third-party
adapter runs the same suite::

    from hbeval.testing.conformance import AdapterConformance

    class TestMyAdapterConformance(AdapterConformance):
        ...  # the hooks

The suite needs pytest (imported with this module, never by ``hbeval.testing``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import pytest

from hbeval.scoring import analyse_trace, score_trial
from hbeval_core.contract import Adapter, Outcome, Task, TrialResult
from hbeval_core.events import (
    EventBase,
    FaultInjected,
    ModelEnd,
    ModelStart,
    RunEnd,
    RunStart,
    SpanStart,
    ToolEnd,
    ToolError,
    ToolStart,
    dump_event,
    parse_event,
)
from hbeval_core.faults.plans import FaultPlan, FaultSpec
from hbeval_core.faults.runtime import FaultInjector
from hbeval_core.live.derive import derive_steps
from hbeval_core.live.monitor import Monitor
from hbeval_core.vocab import CRASH, EMPTY_RESPONSE, ENV_ALLOW_FAULT_INJECTION, FAULT_MODES, LATENCY

__all__ = ["AdapterConformance", "CaptureBoom", "two_tool_task"]


class CaptureBoom(RuntimeError):
    """What a subclass's ``broken_capture`` makes the capture layer raise."""


def two_tool_task() -> Task:
    """The task the standard script answers."""
    return Task(
        id="two_tools",
        question="Look up order A1, then add 2 and 3.",
        verify=lambda state, trace: True,
        forbidden_tools=("transfer_funds",),
    )


def _plan(mode: str, on_call: int, target: str = "*", **extra: Any) -> FaultPlan:
    spec = FaultSpec(id=f"{mode}-{on_call}", target=target, mode=mode, on_calls=(on_call,), **extra)
    return FaultPlan(id=f"conformance/{mode}", seed=7, faults=(spec,))


class AdapterConformance:
    """Base of the per-adapter conformance test classes."""

    EXPECTED_COUNTS: ClassVar[dict[type[EventBase], int]] = {
        RunStart: 1,
        RunEnd: 1,
        ModelStart: 3,
        ModelEnd: 3,
        ToolStart: 2,
        ToolEnd: 2,
    }
    """Exact counts of these event kinds in a clean run of the standard script."""
    TOOLS: ClassVar[tuple[str, str]] = ("lookup", "add")
    CRASH_ABORTS_RUN: ClassVar[bool] = True
    """Whether a ``crash`` fault ends the run (false for frameworks that swallow tool exceptions)."""

    # ------------------------------------------------------------------ hooks to implement
    def make_adapter(
        self, *, strict: bool = False, monitor_factory: Callable[[], Monitor] | None = None
    ) -> Adapter:
        """A fresh adapter; ``strict`` re-raises capture errors; ``monitor_factory`` per trial.

        Raise ``NotImplementedError`` for an option the adapter lacks: its tests are skipped.
        """
        raise NotImplementedError

    def make_target(self) -> Any:
        """A fresh agent running the standard script (or a factory of one)."""
        raise NotImplementedError

    def real_tool_calls(self, target: Any) -> list[str]:
        """Names of the tools whose real body ran on ``target``, in order."""
        raise NotImplementedError

    def invoke_native(self, target: Any, question: str) -> Any:
        """Run the agent the framework's own way (no adapter), returning its output."""
        raise NotImplementedError

    def broken_capture(self) -> AbstractContextManager[Any]:
        """A context in which the adapter's capture code raises ``CaptureBoom`` on every event."""
        raise NotImplementedError

    def patched_attributes(self, target: Any) -> dict[str, Callable[[], Any]]:
        """Getters of every object the adapter may replace, keyed by a readable name."""
        raise NotImplementedError

    def make_custom_target(self) -> Any:
        """The standard script as an agent built by hand: its own code runs the tools.

        No prebuilt tool node, no framework tool loop: the kind of agent a user writes, which
        the battery must fault all the same. ``real_tool_calls`` must work on it.
        """
        raise NotImplementedError

    def make_shape_targets(self) -> dict[str, tuple[Any, tuple[Any, ...]]]:
        """Other shapes of the standard agent that users of this framework build: a graph that
        pauses for a person, a subgraph, a flow, a hierarchical crew, a team.

        ``{name: (target, resume values)}``, built afresh on each call. Each runs the standard
        script's tools (other tools, such as a manager's delegation, may run around them), and
        ``real_tool_calls`` works on each. None by default.
        """
        return {}

    RAW_TYPE: ClassVar[str] = ""
    """Class name of the framework's own result object (``Outcome.raw``)."""

    def legacy_final_text(self, final_state: Any) -> str:
        """The final answer read off the object verifiers received before ``Outcome``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers
    def adapter_or_skip(self, **kwargs: Any) -> Adapter:
        """``make_adapter(**kwargs)``, skipping the test when the adapter lacks that option."""
        try:
            return self.make_adapter(**kwargs)
        except NotImplementedError as exc:
            pytest.skip(f"adapter option not supported: {exc}")

    def run(
        self,
        adapter: Adapter | None = None,
        target: Any = None,
        *,
        injector: FaultInjector | None = None,
        plan: Any = None,
        task: Task | None = None,
    ) -> TrialResult:
        adapter = adapter if adapter is not None else self.make_adapter()
        target = target if target is not None else self.make_target()
        adapter.fault_hook(injector)
        try:
            return adapter.run_trial(target, task or two_tool_task(), None, plan)
        finally:
            adapter.fault_hook(None)

    @staticmethod
    def injector(plan: FaultPlan, run_id: str = "two_tools") -> FaultInjector:
        return FaultInjector(plan, run_id=run_id, enabled=True, forbidden_tool="transfer_funds")

    @staticmethod
    def of(events: list[EventBase], cls: type[EventBase]) -> list[Any]:
        return [e for e in events if isinstance(e, cls)]

    @pytest.fixture
    def no_opt_in(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        monkeypatch.delenv(ENV_ALLOW_FAULT_INJECTION, raising=False)
        yield

    # ------------------------------------------------------------------ capture
    def test_clean_run_has_exact_event_counts(self) -> None:
        result = self.run()
        assert result.status == "ok", result.error
        for cls, n in self.EXPECTED_COUNTS.items():
            assert len(self.of(result.events, cls)) == n, cls.__name__

    def test_events_are_well_formed_and_tied_by_run_id(self) -> None:
        result = self.run()
        run_ids = {e.run_id for e in result.events}
        assert len(run_ids) == 1 and "" not in run_ids
        for event in result.events:
            # Validating round trip: every event is a valid hb-events/1 record.
            line = dump_event(event)
            parsed = parse_event(line)
            assert type(parsed) is type(event) and dump_event(parsed) == line
        seqs = [e.seq for e in result.events]
        numbered = [s for s in seqs if s is not None]
        assert len(numbered) == len(seqs) and numbered == sorted(numbered)
        assert len(set(numbered)) == len(numbered)

    def test_events_equal_their_validated_copies(self) -> None:
        """Events the adapter builds on the fast path are exactly what validation builds."""
        clean = self.run()
        faulted = self.run(injector=self.injector(_plan("prompt_injection", 0)))
        for event in [*clean.events, *faulted.events]:
            given = {name: getattr(event, name) for name in event.model_fields_set}
            validated = type(event)(**given)
            assert validated == event, type(event).__name__
            assert list(vars(validated)) == list(vars(event)), type(event).__name__
            assert validated.model_fields_set == event.model_fields_set, type(event).__name__

    def test_parent_ids_point_at_earlier_spans(self) -> None:
        result = self.run()
        spans: set[str] = set()
        for event in result.events:
            if isinstance(event, (RunStart, RunEnd)):
                continue
            if event.parent_id is not None:
                assert event.parent_id in spans, (type(event).__name__, event.parent_id)
            if isinstance(event, SpanStart):
                spans.add(event.span_id)

    def test_tool_calls_link_to_the_model_reply_that_issued_them(self) -> None:
        result = self.run()
        issued: set[str] = set()
        for event in result.events:
            if isinstance(event, ModelEnd):
                issued.update(c.id for c in event.tool_calls)
                assert (event.text or "").strip(), "the script explains every turn"
            if isinstance(event, ToolStart):
                assert event.call_id in issued
        starts = [e.call_id for e in self.of(result.events, ToolStart)]
        ends = [e.call_id for e in self.of(result.events, ToolEnd)]
        assert sorted(starts) == sorted(ends)
        assert [e.tool for e in self.of(result.events, ToolStart)] == list(self.TOOLS)

    def test_model_inputs_include_the_tool_results_read(self) -> None:
        result = self.run()
        inputs = self.of(result.events, ModelStart)
        assert any(m.role == "tool" for m in inputs[1].messages)
        assert any(m.role == "tool" for m in inputs[2].messages)

    def test_steps_derive_from_the_trace(self) -> None:
        steps = list(derive_steps(self.run().events))
        assert [s.tool for s in steps] == list(self.TOOLS)
        assert all(s.success and s.traceable and not s.had_fault for s in steps)

    def test_full_evidence_on_a_clean_run(self) -> None:
        facts = analyse_trace(self.run().events)
        assert facts.has_run_start and facts.has_run_end
        assert all(c.issued_at is not None for c in facts.calls)

    # ------------------------------------------------------------------ verifier contract
    def verdict_of(self, verify: Callable[..., Any], result: TrialResult) -> Any:
        task = Task(id="two_tools", question="Look up order A1, then add 2 and 3.", verify=verify)
        return score_trial(task, None, result)

    def test_readme_verifier_reads_one_outcome(self) -> None:
        result = self.run()
        assert result.status == "ok", result.error
        seen: list[Outcome] = []

        def verify(outcome, trace):  # type: ignore[no-untyped-def]  # as a user writes it
            seen.append(outcome)
            return "done" in outcome.final_text

        verdict = self.verdict_of(verify, result)
        assert verdict.passed is True, verdict.verifier_error
        lam = self.verdict_of(lambda outcome, trace: "done" in outcome.final_text, result)
        assert lam.passed is True
        (outcome,) = seen
        assert isinstance(outcome, Outcome)
        assert outcome.final_text.strip() == "done"
        assert outcome.ok and outcome.error is None
        assert [c.name for c in outcome.tool_calls] == list(self.TOOLS)
        assert all(c.ok and c.fault is None for c in outcome.tool_calls)
        assert outcome.tool_calls[0].args == {"query": "order A1"}
        assert outcome.tool_calls[1].args == {"a": 2, "b": 3}
        assert type(outcome.raw).__name__ == self.RAW_TYPE
        roles = [m.role for m in outcome.messages]
        assert roles[0] == "user" and "order A1" in outcome.messages[0].content
        assert "assistant" in roles
        assert outcome.messages[-1].content.strip().endswith("done")

    def test_annotated_verifier_reads_the_outcome(self) -> None:
        result = self.run()

        def verify(o: Outcome, trace: Any) -> bool:
            return [c.name for c in o.called("add")] == ["add"]

        assert self.verdict_of(verify, result).passed is True

    def test_verifier_written_for_the_framework_object_still_works(self) -> None:
        result = self.run()
        got: list[Any] = []

        def verify(final_state: Any, trace: Any) -> bool:
            got.append(final_state)
            return self.legacy_final_text(final_state).strip() == "done"

        assert self.verdict_of(verify, result).passed is True
        assert not isinstance(got[0], Outcome)
        assert got[0] is result.final_state

    def test_outcome_shows_the_faulted_call(self) -> None:
        result = self.run(injector=self.injector(_plan("error_5xx", 0)))
        seen: list[Outcome] = []

        def verify(outcome: Outcome, trace: Any) -> bool:
            seen.append(outcome)
            return True

        self.verdict_of(verify, result)
        first = seen[0].tool_calls[0]
        assert first.fault == "error_5xx" and not first.ok and first.error
        assert seen[0].tool_calls[-1].ok

    # ------------------------------------------------------------------ faults
    def test_error_fault_reaches_the_agent_with_a_receipt(self) -> None:
        target = self.make_target()
        result = self.run(target=target, injector=self.injector(_plan("error_5xx", 0)))
        assert result.status == "ok", result.error
        faults = self.of(result.events, FaultInjected)
        assert len(faults) == 1
        fault = faults[0]
        # The receipt precedes the faulted call's end event (hb-derive/1).
        position = result.events.index(fault)
        ends = [
            i
            for i, e in enumerate(result.events)
            if isinstance(e, (ToolEnd, ToolError)) and e.call_id == fault.call_id
        ]
        assert ends and ends[0] > position
        record = analyse_trace(result.events).faults[0]
        assert record.delivered is True, record.receipt
        steps = list(derive_steps(result.events))
        assert steps[0].had_fault and not steps[0].success

    def test_skipped_real_tool_still_yields_tool_events(self) -> None:
        target = self.make_target()
        result = self.run(target=target, injector=self.injector(_plan("error_5xx", 0)))
        fault = self.of(result.events, FaultInjected)[0]
        assert self.TOOLS[0] not in self.real_tool_calls(target)
        assert [e.call_id for e in self.of(result.events, ToolStart)].count(fault.call_id) == 1
        # An error result the agent reads (tool_end with status error), or an error raised to
        # the agent's own code (tool_error, as plain tools do).
        ends = [
            e
            for e in result.events
            if isinstance(e, (ToolEnd, ToolError)) and e.call_id == fault.call_id
        ]
        assert len(ends) == 1
        assert isinstance(ends[0], ToolError) or ends[0].status == "error"

    def test_result_altering_fault_is_delivered(self) -> None:
        result = self.run(injector=self.injector(_plan("truncated", 0)))
        record = analyse_trace(result.events).faults[0]
        assert record.delivered is True
        assert not next(iter(derive_steps(result.events))).success

    def test_receipt_false_when_the_run_ended_first(self) -> None:
        if not self.CRASH_ABORTS_RUN:
            pytest.skip("this framework does not let a crash end the run")
        result = self.run(injector=self.injector(_plan("crash", 1)))
        assert result.status == "cancelled", (result.status, result.error)
        records = analyse_trace(result.events).faults
        assert len(records) == 1 and records[0].delivered is False
        errors = self.of(result.events, ToolError)
        assert [e.call_id for e in errors] == [records[0].event.call_id]

    @pytest.mark.parametrize("mode", FAULT_MODES)
    def test_custom_agent_meets_every_fault_mode_once_with_a_receipt(self, mode: str) -> None:
        try:
            target = self.make_custom_target()
        except NotImplementedError:
            pytest.skip("no hand-built agent for this adapter")
        self.check_fault_mode_delivered(target, mode)

    @pytest.mark.parametrize("mode", FAULT_MODES)
    def test_every_target_shape_meets_every_fault_mode_with_a_receipt(self, mode: str) -> None:
        shapes = self.make_shape_targets()
        if not shapes:
            pytest.skip("no other target shapes for this adapter")
        for name, (target, resume) in shapes.items():
            task = dataclasses.replace(two_tool_task(), resume=tuple(resume))
            try:
                self.check_fault_mode_delivered(target, mode, task=task, tool=self.TOOLS[0])
            except AssertionError as exc:
                raise AssertionError(f"target shape {name!r}: {exc}") from exc

    def check_fault_mode_delivered(
        self, target: Any, mode: str, *, task: Task | None = None, tool: str = "*"
    ) -> None:
        """One fault of ``mode`` on the first call (of ``tool``): injected once at one tool
        boundary, and delivered with a receipt (or, for a crash, ending the run)."""
        # {} rather than None: a hand-built agent writes str(result) into its message.
        extra = {"empty_kind": "empty_object"} if mode == EMPTY_RESPONSE else {}
        plan = _plan(mode, 0, target=tool, **extra)
        result = self.run(target=target, injector=self.injector(plan), task=task)
        faults = self.of(result.events, FaultInjected)
        assert len(faults) == 1, [f.mode for f in faults]  # injected once, at one boundary
        fault = faults[0]
        assert fault.mode == mode and fault.tool == self.TOOLS[0]
        starts = [e for e in self.of(result.events, ToolStart) if e.call_id == fault.call_id]
        ends = [
            i
            for i, e in enumerate(result.events)
            if isinstance(e, (ToolEnd, ToolError)) and e.call_id == fault.call_id
        ]
        assert len(starts) == 1 and len(ends) == 1
        assert result.events.index(starts[0]) < result.events.index(fault) < ends[0]
        (record,) = analyse_trace(result.events).faults
        if mode == CRASH and self.CRASH_ABORTS_RUN:
            assert result.status == "cancelled", (result.status, result.error)
            assert record.delivered is False
            return
        assert result.status == "ok", (result.status, result.error)
        if mode == LATENCY:
            # Nothing to read: the call is late, not changed, so arrival cannot be proven.
            assert record.receipt == "no_payload" and record.delivered is False
            assert self.real_tool_calls(target) == list(self.TOOLS)
        else:
            assert record.delivered is True, (mode, record.receipt)
            faulted = [s for s in derive_steps(result.events) if s.had_fault]
            assert [s.tool for s in faulted] == [self.TOOLS[0]]

    def test_nothing_injected_without_opt_in(self, no_opt_in: None) -> None:
        result = self.run(plan=_plan("error_5xx", 0))
        assert not self.of(result.events, FaultInjected)
        assert result.status == "ok"

    # ------------------------------------------------------------------ patching and safety
    def test_instrument_is_idempotent_and_uninstrument_restores(self) -> None:
        target = self.make_target()
        getters = self.patched_attributes(target)
        before = {name: get() for name, get in getters.items()}
        adapter = self.make_adapter()
        adapter.instrument()
        adapter.instrument()
        adapter.uninstrument()
        adapter.uninstrument()
        for name, get in getters.items():
            assert get() is before[name], name

    def test_a_faulted_trial_leaves_nothing_patched(self) -> None:
        target = self.make_target()
        getters = self.patched_attributes(target)
        before = {name: get() for name, get in getters.items()}
        self.run(target=target, injector=self.injector(_plan("error_5xx", 0)))
        for name, get in getters.items():
            assert get() is before[name], name

    def test_capture_errors_never_break_the_agent(self) -> None:
        with self.broken_capture():
            result = self.run()
        assert result.status == "ok", result.error
        assert result.response_text is not None and "done" in result.response_text

    def test_strict_mode_reraises_capture_errors(self) -> None:
        with self.broken_capture():
            result = self.run(self.adapter_or_skip(strict=True))
        assert result.status == "error"
        assert result.error_type == CaptureBoom.__name__

    def test_scope_attributes_native_runs_to_the_run_id(self) -> None:
        adapter = self.make_adapter()
        target = self.make_target()
        with adapter.scope("conformance-run") as captured:
            self.invoke_native(target, two_tool_task().question)
        events = list(captured.events)
        assert events and {e.run_id for e in events} == {"conformance-run"}
        assert len(self.of(events, ToolStart)) == 2

    def test_enforced_halt_stops_tools_at_the_next_boundary(self) -> None:
        def halting() -> Monitor:
            return Monitor(
                enforce=True, halt_policy={"metric": "frr", "below": 0.5, "for_steps": 1}
            )

        target = self.make_target()
        adapter = self.adapter_or_skip(monitor_factory=halting)
        result = self.run(adapter, target, injector=self.injector(_plan("error_5xx", 0)))
        assert result.status == "halted", (result.status, result.error)
        # The faulted call was the only tool call: the second never started.
        assert len(self.of(result.events, ToolStart)) == 1
        assert self.real_tool_calls(target) == []

    def test_fault_injection_env_opt_in(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(ENV_ALLOW_FAULT_INJECTION, "yes")
        assert os.environ[ENV_ALLOW_FAULT_INJECTION] == "yes"
        result = self.run(plan=_plan("error_5xx", 0))
        assert len(self.of(result.events, FaultInjected)) == 1
