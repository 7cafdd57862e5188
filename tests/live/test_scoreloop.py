"""The scoring loop (``live._scoreloop``) derives and scores exactly what the model path does.

The model path is ``read_events`` -> ``Monitor.observe`` (pydantic models, ``Deriver.feed``);
the scoring loop reads msgspec structs or pydantic-validated dicts and derives inline. Over
generated traces built to reach every rule (interleaved runs, call ids used again, calls linked
by match, parallel calls, faults of every effect, failed and re-planned calls, explicit steps,
runs that end and start again, lines only the model's lax mode accepts), the malformed-input
corpus of the fast readers, and the traces the importers make of the public corpora
(``../shared/corpora``), both give the same steps (as the monitor's step tuples), the same
summary and the same error. Linking is also checked against ``CallLinker`` driven by hand by
the rules in derive.py's docstring.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from hbeval_core.events import EventFormatError, read_events
from hbeval_core.events._fast import line_blocks, twin_adapter
from hbeval_core.events._structs import struct_chunks, struct_decoder, struct_types
from hbeval_core.live._scoreloop import fold_dicts, fold_structs
from hbeval_core.live._trace import fold_trace
from hbeval_core.live.derive import (
    DERIVE_V1,
    DERIVE_V2,
    DERIVE_VERSION,
    CallLinker,
    Deriver,
    derive_steps,
)
from hbeval_core.live.monitor import Monitor

from ..events.test_fast_reader import corpus

MODES = [False, True] if struct_decoder() is not None else [False]
MODE_IDS = ["dicts", "structs"][: len(MODES)]
CORPORA = Path(__file__).resolve().parents[3] / "shared" / "corpora"

ARGS: list[Any] = [
    {},
    {"order_id": 7},
    {"order_id": 8},
    {"order_id": "7"},
    {"order_id": True},
    {"order_id": 1},
    {"order_id": 1.0},
    {"order_id": 2**70},
    {"q": "café"},
    {"a": 1, "b": [1, 2]},
    {"b": 2, "a": 1},
    {"nested": {"x": None}},
]


def generated(seed: int, n_calls: int = 400) -> list[str]:
    """A trace meant to reach every derivation rule (see the module docstring)."""
    # Long because: one generator of every event shape, each branch a rule to reach.
    rng = random.Random(seed)
    lines: list[dict[str, Any]] = []
    for i in range(n_calls):
        run = f"r{rng.randrange(3)}"
        if rng.random() < 0.85:
            calls = []
            for j in range(rng.choice([1, 1, 1, 2, 3])):
                cid = f"c{rng.randrange(i + 1)}" if rng.random() < 0.1 else f"c{i}.{j}"
                calls.append(
                    {"id": cid, "name": rng.choice(["lookup", "refund"]), "args": rng.choice(ARGS)}
                )
            lines.append({"kind": "model_start", "run_id": run, "call_id": f"m{i}"})
            end: dict[str, Any] = {"kind": "model_end", "run_id": run, "call_id": f"m{i}"}
            end["text"] = rng.choice(["Checking.", "", "  ", None])
            if rng.random() < 0.2:
                end["reasoning"] = rng.choice(["because", " "])
            if rng.random() < 0.9:
                end["tool_calls"] = calls
            lines.append(end)
        else:
            calls = [{"id": f"x{i}", "name": "lookup", "args": rng.choice(ARGS)}]
        starts: list[dict[str, Any]] = []
        rest: list[dict[str, Any]] = []
        for call in calls:
            cid = call["id"]
            if rng.random() < 0.15:
                cid = f"run-{i}-{rng.randrange(9)}"  # not the id the model gave: match or none
            start: dict[str, Any] = {
                "kind": "tool_start",
                "run_id": run,
                "call_id": cid,
                "tool": call["name"],
            }
            if rng.random() < 0.9:
                start["args"] = call["args"] if rng.random() < 0.8 else rng.choice(ARGS)
            if rng.random() < 0.05:
                start["seq"] = "4"  # the model's lax mode takes it; msgspec refuses it
            if rng.random() < 0.95:
                starts.append(start)
                if rng.random() < 0.05:
                    starts.append(start)  # started twice
            if rng.random() < 0.3:
                fault = {
                    "kind": "fault_injected",
                    "run_id": run,
                    "mode": rng.choice(["error_5xx", "empty_response", "lost_result"]),
                    "effect": rng.choice(["error", "result_altered", "result_lost", "delayed"]),
                }
                if rng.random() < 0.9:
                    fault["call_id"] = cid
                rest.append(fault)
            r = rng.random()
            if r < 0.2:
                rest.append(
                    {"kind": "tool_error", "run_id": run, "call_id": cid, "tool": call["name"]}
                    | {"error": "HTTP 503"}
                )
            else:
                end_ev: dict[str, Any] = {
                    "kind": "tool_end",
                    "run_id": run,
                    "call_id": cid,
                    "tool": call["name"],
                    "result": "ok",
                }
                if r < 0.3:
                    end_ev["status"] = "error"
                if r > 0.95:
                    end_ev["latency_ms"] = "2.5"  # lax mode again
                rest.append(end_ev)
            if rng.random() < 0.7:  # one call after the other, else all started, then ended
                lines += starts
                lines += rest
                starts, rest = [], []
        lines += starts
        lines += rng.sample(rest, len(rest))
        if rng.random() < 0.05:
            lines.append({"kind": "replan", "run_id": run})
        if rng.random() < 0.03:
            lines.append(
                {"kind": "step", "run_id": run, "action": "manual", "success": rng.random() < 0.5}
            )
        if rng.random() < 0.02:
            lines.append({"kind": "run_end", "run_id": run})
        if rng.random() < 0.02:
            lines.append({"kind": "run_start", "run_id": run, "agent_id": "a"})
    text = [json.dumps(ev) for ev in lines]
    if seed % 2:
        text.insert(0, '{"format":"hb-events/1"}')
        text.insert(len(text) // 2, "")
    return text


def model_tuples(lines: Iterable[str | bytes], version: str = DERIVE_VERSION) -> list[Any]:
    return [s.as_tuple() for s in derive_steps(read_events(iter(lines)), version=version)]


def loop_tuples(lines: list[str], structs: bool, version: str = DERIVE_VERSION) -> list[Any]:
    """The steps the scoring loop hands the monitor, as it hands them."""
    deriver = Deriver(version)
    deriver._as_tuples = True
    got: list[Any] = []
    raw = iter([line.encode() for line in lines])
    if structs:
        fold_structs(struct_chunks(raw, 0), deriver, struct_types(), got.extend, [], 7)
    else:
        validate = twin_adapter().validator.validate_json
        fold_dicts(line_blocks(raw), 0, deriver, validate, got.extend, [], 7)
    assert deriver.steps_derived == len(got)
    return got


def summary(m: Monitor) -> dict[str, Any]:
    doc = m.summary()
    for d in doc["directives"]:
        d["occurred_at"] = 0  # when it was folded: not a score
    if doc["halt_record"]:
        doc["halt_record"]["occurred_at"] = 0
    return doc


def model_summary(lines: Iterable[str | bytes], **options: Any) -> dict[str, Any]:
    m = Monitor(**options)
    for ev in read_events(iter(lines)):
        m.observe(ev)
    return summary(m)


def same(lines: list[str], structs: bool, **options: Any) -> None:
    want = model_summary(lines, **options)
    got = summary(fold_trace(iter(lines), Monitor(**options), structs=structs))
    assert got == want
    binary = summary(fold_trace([x.encode() for x in lines], Monitor(**options), structs=structs))
    assert binary == want


@pytest.mark.parametrize("structs", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("version", [DERIVE_VERSION, DERIVE_V2, DERIVE_V1])
@pytest.mark.parametrize("seed", range(4))
def test_generated_traces_give_the_same_steps(seed: int, version: str, structs: bool) -> None:
    lines = generated(seed)
    want = model_tuples(lines, version)
    assert len(want) > 300
    assert loop_tuples(lines, structs, version) == want


@pytest.mark.parametrize("structs", MODES, ids=MODE_IDS)
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"pei_version": "1.0"},
        {"pei_version": "2.0+hb.1"},
        {"derive_version": DERIVE_V1},
        {"halt_policy": {"metric": "frr", "below": 0.6, "for_steps": 2}},
        {"thresholds": {"ti": 4.9, "pei": 0.95}},
    ],
    ids=str,
)
@pytest.mark.parametrize("seed", range(3))
def test_generated_traces_give_the_same_summary(
    seed: int, options: dict[str, Any], structs: bool
) -> None:
    same(generated(seed), structs, **options)


def test_the_generated_traces_reach_every_rule() -> None:
    steps = [s for seed in range(4) for s in derive_steps(read_events(iter(generated(seed))))]
    assert {s.link for s in steps} == {"id", "match", "none", None}  # None: explicit steps
    assert any(s.replanned for s in steps)
    assert any(s.had_fault and s.success for s in steps)
    assert any(s.had_fault and not s.success for s in steps)
    assert any(s.explained for s in steps) and any(s.explained is False for s in steps)
    assert any(s.link is None for s in steps)  # explicit steps


@pytest.mark.parametrize("structs", MODES, ids=MODE_IDS)
def test_unobserved_steps_then_a_model_event(structs: bool) -> None:
    lines = [x for x in generated(2) if '"model_' not in x]
    lines += generated(3)
    assert loop_tuples(lines, structs) == model_tuples(lines)
    same(lines, structs)


@pytest.mark.parametrize("structs", MODES, ids=MODE_IDS)
def test_each_malformed_line_fails_or_scores_the_same_way(structs: bool) -> None:
    prefix = generated(0, 5)
    mismatches = []
    for line in corpus():
        text = [*prefix, line.decode("utf-8", "surrogateescape")]
        raw = [x.encode() for x in prefix] + [line]
        want = outcome(lambda raw=raw: model_summary(raw))
        got = outcome(lambda raw=raw: summary(fold_trace(iter(raw), Monitor(), structs=structs)))
        if want != got:
            mismatches.append((text[-1][:200], want, got))
    assert mismatches == []


def outcome(run: Any) -> tuple[str, Any]:
    try:
        return "scored", run()
    except EventFormatError as exc:
        return "error", (str(exc), exc.line, exc.field)
    except RecursionError:
        return "recursion", None


@pytest.mark.parametrize("structs", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("stop_after", [0, 1, 40])
def test_reading_steps_one_by_one_then_in_batches(structs: bool, stop_after: int) -> None:
    lines = generated(1)
    ref = Monitor()
    rows_want = []
    for ev in read_events(iter(lines)):
        step = ref.observe(ev)
        if step is not None and len(rows_want) < stop_after + 1:
            rows_want.append((step, ref.metrics))
    fast = Monitor()
    rows: list[Any] = []

    def on_step(step: Any) -> bool:
        rows.append((step, fast.metrics))
        return len(rows) <= stop_after

    fold_trace(iter(lines), fast, on_step, structs=structs)
    assert rows == rows_want
    assert summary(fast) == summary(ref)


@pytest.mark.parametrize("structs", MODES, ids=MODE_IDS)
def test_a_monitor_fed_on_after_the_loop_scores_as_if_fed_throughout(structs: bool) -> None:
    lines = generated(3)
    half = len(lines) // 2
    m = fold_trace(iter(lines[:half]), Monitor(), structs=structs)
    steps = []
    for ev in read_events(iter(lines[half:])):
        step = m.observe(ev)
        if step is not None:
            steps.append(step)
    ref = Monitor()
    ref_steps = []
    for ev in read_events(iter(lines)):
        step = ref.observe(ev)
        if step is not None:
            ref_steps.append(step)
    assert summary(m) == summary(ref)
    assert steps == ref_steps[len(ref_steps) - len(steps) :]


def reference_links(lines: list[str]) -> list[tuple[str | None, bool | None]]:
    """Each step's (link, explained), by ``CallLinker`` and derive.py's docstring alone."""
    linkers: dict[str, CallLinker] = defaultdict(CallLinker)
    at_start: dict[tuple[str, str], Any] = {}
    args: dict[tuple[str, str], Any] = {}
    out: list[tuple[str | None, bool | None]] = []
    for ev in read_events(iter(lines)):
        run = ev.run_id
        if ev.kind == "model_end" and ev.tool_calls:
            reason = bool((ev.text or "").strip() or (ev.reasoning or "").strip())
            linkers[run].issue(ev.tool_calls, reason)
            for c in ev.tool_calls:
                args.setdefault((run, c.id), c.args)
        elif ev.kind == "tool_start":
            args[(run, ev.call_id)] = ev.args
            if (run, ev.call_id) not in at_start:
                at_start[(run, ev.call_id)] = linkers[run].link(ev.call_id, ev.tool, ev.args)
        elif ev.kind in ("tool_end", "tool_error"):
            kind, issued = at_start.pop((run, ev.call_id), ("none", None))
            call_args = args.pop((run, ev.call_id), None)
            if kind == "none":  # the issuing output may have come since
                kind, issued = linkers[run].link(ev.call_id, ev.tool, call_args)
            out.append((kind, issued is not None and issued.explained))
        elif ev.kind == "step":
            out.append((None, None))
        elif ev.kind == "run_end":
            linkers.pop(run, None)
            at_start = {k: v for k, v in at_start.items() if k[0] != run}
            args = {k: v for k, v in args.items() if k[0] != run}
    return out


@pytest.mark.parametrize("seed", range(4))
def test_links_are_those_of_call_linker(seed: int) -> None:
    lines = generated(seed)
    got = [(s.link, s.explained) for s in derive_steps(read_events(iter(lines)))]
    assert got == reference_links(lines)
    assert {k for k, _ in got} >= {"id", "match", "none"}


def corpus_traces() -> list[tuple[str, list[str]]]:
    from hbeval.importers import read_trials

    sources = [
        ("tau-bench", [CORPORA / "tau-bench" / "gpt-4o-airline.json"]),
        (
            "pi",
            [CORPORA / "pi" / "large-session.jsonl", CORPORA / "pi" / "before-compaction.jsonl"],
        ),
        ("dsh", sorted((CORPORA / "dsh").rglob("session.jsonl"))),
    ]
    out = []
    for fmt, paths in sources:
        lines = []
        for path in paths:
            for trial in read_trials(fmt, [path], run_id=path.stem):
                lines += [ev.model_dump_json(exclude_none=True) for ev in trial.events]
        out.append((fmt, lines))
    return out


@pytest.mark.skipif(not CORPORA.is_dir(), reason=f"the shared corpora ({CORPORA}) are absent")
@pytest.mark.parametrize("structs", MODES, ids=MODE_IDS)
def test_the_public_corpora_score_the_same(structs: bool) -> None:
    for fmt, lines in corpus_traces():
        want = model_tuples(lines)
        assert len(want) > 100, fmt
        assert loop_tuples(lines, structs) == want, fmt
        same(lines, structs)


def reused_id_trace(first_explained: bool, issued_again: bool, gap: int) -> list[str]:
    """Run r: output A issues call "dup" and it runs; ``gap`` calls follow, each issued by an
    output of its own (explained every third) and run; then "dup" runs again, issued again by
    output B (A's opposite) or not issued again. Run s: B's explanation issues "dup" first."""
    lines: list[dict[str, Any]] = []

    def call(run: str, cid: str, explained: bool | None) -> None:
        if explained is not None:
            text = "Looking it up." if explained else ""
            calls = [{"id": cid, "name": "lookup", "args": {"n": 1}}]
            lines.append({"kind": "model_end", "run_id": run, "call_id": "m", "text": text,
                          "tool_calls": calls})  # fmt: skip
        lines.append({"kind": "tool_start", "run_id": run, "call_id": cid, "tool": "lookup",
                      "args": {"n": 1}})  # fmt: skip
        lines.append({"kind": "tool_end", "run_id": run, "call_id": cid, "tool": "lookup"})

    call("r", "dup", first_explained)
    call("s", "dup", not first_explained)
    for i in range(gap):
        call("r", f"c{i}", i % 3 == 0)
    call("r", "dup", (not first_explained) if issued_again else None)
    return [json.dumps(ev) for ev in lines]


@pytest.mark.parametrize("structs", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("first_explained", [True, False])
@pytest.mark.parametrize("issued_again", [True, False])
def test_a_call_id_used_again_late_in_a_long_run_links_to_its_first_output(
    tmp_path: Path, structs: bool, first_explained: bool, issued_again: bool
) -> None:
    # Under hb-derive/1 a step is traceable only when linked by id to an output that stated a
    # reason: so each step's traceable names the output it linked to. Expected by construction:
    # "dup" links to output A both times (the first output to issue an id keeps it, however
    # many calls ended since), run s to its own output.
    gap = 3000  # calls between the two uses of "dup": a file of many blocks
    lines = reused_id_trace(first_explained, issued_again, gap)
    want = [first_explained, not first_explained]
    want += [i % 3 == 0 for i in range(gap)] + [first_explained]
    steps = list(derive_steps(read_events(iter(lines)), version=DERIVE_V1))
    assert [s.traceable for s in steps] == want
    assert steps[-1].link == "id" and steps[-1].explained is first_explained
    assert [t[4] for t in loop_tuples(lines, structs, DERIVE_V1)] == want
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert path.stat().st_size > 8 * (1 << 15)
    deriver = Deriver(DERIVE_V1)
    deriver._as_tuples = True
    got: list[Any] = []
    with path.open("rb") as fh:
        if structs:
            chunks = struct_chunks(iter(fh), 0, fh)
            fold_structs(chunks, deriver, struct_types(), got.extend, [], 7)
        else:
            validate = twin_adapter().validator.validate_json
            fold_dicts(line_blocks(iter(fh), fh), 0, deriver, validate, got.extend, [], 7)
    assert [t[4] for t in got] == want
    same(lines, structs, derive_version=DERIVE_V1)
