"""What a battery run shows in the terminal: a progress line on stderr and a report summary table.

``ProgressPrinter`` is a ``progress`` callback for ``run_battery`` (it receives
``runner.run.ProgressUpdate``: run_id, done, total, failed, resumed, last) and draws trials done
of total, the estimated time left and the failures so far on stderr — one redrawn line on a
terminal, a line every tenth of the run otherwise. ``summary_table(report)`` is a rich table of
a report's metrics with floors, intervals and scores, where undefined shows as
"undefined (reason)", never 0.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, Final

from hbeval_core.vocab import (
    DELIVERY_UNOBSERVED,
    LIVE_METRICS,
    NO_FAULT_DELIVERED,
    NO_TRIALS,
    NOT_MEASURED,
    PEI,
    TI,
)

from ..scoring import decide_verdict
from ..scoring._recorded_model import fault_floors_not_applicable
from ..scoring._trial_model import ERROR_CHARS
from ..scoring._uncertainty import rate_interval
from ..scoring._view import listed, section
from ._consistency import add_consistency_rows
from ._html_words import PEI_REPLAN_SHORT
from ._model_faults import add_model_faults_row, model_faults_lines
from ._perturbations import perturbation_lines
from ._proxy_evidence import proxy_only_lines, proxy_only_note
from ._side_effects import add_side_effects_row, side_effects_lines
from .scores import (
    EFFICIENCY_FIGURES,
    scores_of,
)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from ..scoring import Report

__all__ = [
    "ProgressPrinter",
    "demo_progress",
    "format_duration",
    "print_summary",
    "summary_table",
    "verdict_lines",
]

_BAR = 24


def format_duration(seconds: float | None) -> str:
    """A short duration for people: ``45s``, ``3m 05s``, ``1h 02m``; ``?`` when unknown."""
    if seconds is None:
        return "?"
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {(s % 3600) // 60:02d}m"


class ProgressPrinter:
    """A ``run_battery(progress=...)`` callback: trials done of total, time left, failures so far.

    Writes to ``stream`` (stderr by default). On a terminal the line is redrawn in place; in a
    log (not a TTY) a line is written at each tenth of the run and at the end. Time left is
    estimated from the trials run so far (resumed ones cost nothing and are left out), and shows
    ``estimating`` until one trial has run.
    """

    def __init__(
        self,
        stream: IO[str] | None = None,
        *,
        label: str | None = None,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.label = label
        isatty = getattr(self.stream, "isatty", None)
        self.tty = tty if tty is not None else bool(isatty and isatty())
        self._clock = clock
        self._start: float | None = None
        self._start_done = 0
        self._last_tenth = -1
        self.run_id: str | None = None
        self.lines: list[str] = []

    def line(self, update: Any) -> str:
        """The progress text for one update (no newline)."""
        now = self._clock()
        if self._start is None:
            self._start, self._start_done = now, int(update.done)
        done, total = int(update.done), max(int(update.total), 0)
        ran = done - self._start_done
        remaining = max(total - done, 0)
        if remaining == 0:
            left = f"took {format_duration(now - self._start)}"
        elif ran <= 0:
            left = "time left: estimating"
        else:
            left = f"~{format_duration((now - self._start) / ran * remaining)} left"
        filled = _BAR * done // total if total else _BAR
        bar = "#" * filled + "." * (_BAR - filled)
        who = f"{self.label}: " if self.label else ""
        resumed = f", {update.resumed} resumed" if update.resumed else ""
        return (
            f"[hbeval] {who}[{bar}] {done}/{total} trials, {left}, "
            f"{update.failed} not passed{resumed}"
        )

    def __call__(self, update: Any) -> None:
        """Receive one ``ProgressUpdate`` and draw it."""
        self.run_id = update.run_id
        text = self.line(update)
        finished = update.done >= update.total
        if self.tty:
            self.stream.write("\r" + text + ("\n" if finished else ""))
            self.stream.flush()
            return
        tenth = (10 * int(update.done)) // max(int(update.total), 1)
        if tenth != self._last_tenth or finished:
            self._last_tenth = tenth
            self.stream.write(text + "\n")
            self.stream.flush()


def demo_progress(
    stream: IO[str] | None = None, *, tty: bool | None = None
) -> Callable[[str, Any], None]:
    """A ``run_demo(progress=...)`` callback: one ProgressPrinter per agent name."""
    printers: dict[str, ProgressPrinter] = {}

    def progress(name: str, update: Any) -> None:
        printer = printers.get(name)
        if printer is None:
            printer = printers[name] = ProgressPrinter(stream, label=name, tty=tty)
        printer(update)

    return progress


# --------------------------------------------------------------------------- summary
def _value(value: Any, reason: str | None, digits: int = 3) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"undefined ({reason or NOT_MEASURED})"
    return f"{value:.{digits}f}"


def _clustering_note(shown: Any) -> str:
    """Effective n, design effect and the independent-trials interval, as a note."""
    independent = _interval(shown.independent)
    return (
        f"effective n {shown.effective_n:.1f} of {shown.n} trials in {shown.clusters} "
        f"scenario(s), design effect {shown.design_effect:.2f}"
        + (f"; as independent trials {independent}" if independent else "")
    )


def _interval(ci: Any) -> str:
    if isinstance(ci, (list, tuple)) and len(ci) == 2:
        return f"[{ci[0]:.3f}, {ci[1]:.3f}]"
    return ""


_MAX_SCENARIO_LINES = 4
"""Unmeasured scenarios listed one per line; more are listed on one line."""


def _delivery_cells(report: Report) -> tuple[str, str, str]:
    fd = section(report, "fault_delivery") or {}
    planned = fd.get("planned")
    value = f"{fd.get('delivered')}/{fd.get('injected')}"
    note = f"{fd.get('faulted_trials')} faulted trials"
    if fault_floors_not_applicable(report):  # an import: nothing was injected
        note = f"{fd.get('faulted_trials')} trials with a recorded error"
    if isinstance(planned, int):
        note = f"{fd.get('planned_delivered')} of {planned} planned delivered, " + note
    missing = fd.get("unmeasured_fault_types") or []
    if missing:
        note += "; not measured: " + ", ".join(str(m) for m in missing)
    return value, "", note


def error_lines(report: Report) -> list[str]:
    """How many trials ended with an error, and the most common errors' first lines, so an agent
    that never ran under hbeval (every trial raising the same error) is seen at once."""
    trials = [t for t in listed(report, "trials") or () if isinstance(t, Mapping)]
    errors = [str(t["error"]) for t in trials if t.get("error")]
    if not errors:
        return []
    firsts = Counter((e.strip().splitlines() or [""])[0][:160] for e in errors)
    lines = [
        f"  {len(errors)} of {len(trials)} trials ended with an error (each is in the report's "
        f"trials, cut at {ERROR_CHARS} characters; the whole text is in the store's attempts):"
    ]
    for text, n in firsts.most_common(3):
        lines.append(f"    {n} x {text}")
    return lines


def warning_lines(report: Report) -> list[str]:
    """The report's warnings (``scoring._warnings``), one ``warning:`` line each."""
    from ..scoring._warnings import report_warnings

    return [f"  warning: {w}" for w in report_warnings(report)]


def verdict_lines(report: Report, *, warnings: bool = True) -> list[str]:
    """The report's warnings (unless ``warnings=False``), the verdict's reasons, its fix, and
    every scenario that was not measured, as text lines.

    The verdict is ``scoring.decide_verdict``'s, the one every surface shows.
    """
    decision = decide_verdict(report)
    lines = warning_lines(report) if warnings else []
    lines.extend(f"  - {reason}" for reason in decision.reasons)
    if decision.fix is not None:
        lines.append(f"  fix: {decision.fix}")
    lines.extend(error_lines(report))
    lines.extend(side_effects_lines(report))
    lines.extend(model_faults_lines(report))
    lines.extend(proxy_only_lines(report))
    missing = [
        sc
        for sc in listed(report, "scenarios") or ()
        if isinstance(sc, Mapping) and sc.get("measured") is False
    ]
    if len(missing) > _MAX_SCENARIO_LINES:
        lines.append(
            f"  {len(missing)} scenarios not measured ({_missing_words(missing)}): "
            + ", ".join(f"{sc.get('scenario_index')} {sc.get('fault_type')}" for sc in missing)
        )
        return lines
    for sc in missing:
        d = sc.get("delivery") or {}
        planned = d.get("planned")
        lines.append(
            f"  scenario {sc.get('scenario_index')} ({sc.get('fault_type')}, "
            f"{sc.get('domain')}): not measured — {d.get('delivered', 0)} fault(s) delivered"
            + (f" of {planned} planned" if isinstance(planned, int) else "")
            + f" over {sc.get('scored')} trial(s) ({(sc.get('undefined') or {}).get('frr')})"
        )
    return lines


_MISSING_WORDS: Final[Mapping[str, str]] = {
    NO_FAULT_DELIVERED: "no fault reached the agent",
    DELIVERY_UNOBSERVED: "no model call recorded, so delivery could not be seen",
    NO_TRIALS: "no trial was scored",
}


def _missing_words(missing: Sequence[Mapping[str, Any]]) -> str:
    """Why the listed scenarios were not measured, in words, from their FRR reasons."""
    reasons = sorted({str((sc.get("undefined") or {}).get("frr")) for sc in missing})
    return "; ".join(f"{_MISSING_WORDS.get(r, r)}: {r}" for r in reasons)


def _explained_cells(report: Report, floors: Mapping[str, Any]) -> tuple[str, ...]:
    """The explained-share row beside TI: its value, and in words why TI or it is low."""
    trace = section(report, "traceability")
    if not isinstance(trace, Mapping):
        return ("explained share", "undefined (not_measured)", "", "")
    value = trace.get("explained_share")
    floor = floors.get("explained_share")
    notes = [] if floor is None else [f"≥ {floor:g}"]
    if isinstance(value, (int, float)) and floor is not None and value < floor:
        notes[0] += "  BELOW"
    calls = trace.get("calls")
    if isinstance(calls, int) and calls:
        notes.append(f"{trace.get('explained')}/{calls} calls")
    if trace.get("note"):
        notes.append(str(trace["note"]))
    reason = (trace.get("undefined") or {}).get("explained_share")
    return ("explained share", _value(value, reason), "", "; ".join(notes))


def summary_table(report: Report) -> Table:
    """A rich table of a report: verdict, metrics against floors, rates with intervals, scores."""
    # Long because: the summary's rows in the order they are read, one figure per row.
    from rich.table import Table

    run = section(report, "run") or {}
    metrics = section(report, "metrics") or {}
    undefined = section(report, "undefined") or {}
    floors = section(report, "thresholds") or {}
    table = Table(
        title=f"{run.get('agent_id')} · run {report.run_id} · verdict "
        f"{decide_verdict(report).verdict}",
        title_justify="left",
    )
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("95% interval (clustered by scenario)", justify="right")
    table.add_column("floor / note")
    waived = fault_floors_not_applicable(report)
    for name in LIVE_METRICS:
        value = metrics.get(name)
        floor = None if name in waived else floors.get(name)
        note = "" if floor is None else f"≥ {floor:g}"
        if name in waived and floors.get(name) is not None:
            note = "no floor: nothing was injected"
        if isinstance(value, (int, float)) and floor is not None and value < floor:
            note += "  BELOW"
        scale = " (0–5)" if name == TI else ""
        shown = rate_interval(report, name) if value is not None else None
        ci = None if shown is None else shown.interval
        if shown is not None:
            note = f"{note}  {_clustering_note(shown)}".strip()
        table.add_row(name.upper() + scale, _value(value, undefined.get(name)), _interval(ci), note)
        if name == PEI:
            table.add_row("", "", "", PEI_REPLAN_SHORT)
        if name == TI:
            table.add_row(*_explained_cells(report, floors))
    rate = section(report, "pass_rate") or {}
    shown_rate = rate_interval(report, "pass_rate")
    table.add_row(
        "pass rate",
        _value(rate.get("rate"), (rate.get("undefined") or {}).get("rate")),
        _interval(None if shown_rate is None else shown_rate.interval),
        f"{rate.get('passed')}/{rate.get('n')} scored trials"
        + ("" if shown_rate is None else f"; {_clustering_note(shown_rate)}")
        if rate.get("rate") is not None
        else f"{rate.get('n')} trials, none with a pass or fail",
    )
    add_consistency_rows(table, report)
    gap = section(report, "reliability_gap") or {}
    gap_undefined = gap.get("undefined") or {}
    for key, label in (("c_nom", "C_nom (no faults)"), ("r_op", "R_op (under faults)")):
        table.add_row(
            label,
            _value(gap.get(key), gap_undefined.get(key)),
            _interval(gap.get(f"{key}_interval")),
            "",
        )
    sig = gap.get("significant")
    table.add_row(
        "reliability gap",
        _value(gap.get("gap"), gap_undefined.get("gap")),
        _interval(gap.get("interval")),
        "" if sig is None else ("significant" if sig else "not significant"),
    )
    scores = scores_of(report)
    cap, sec, eff = scores.capability, scores.security_gate, scores.efficiency
    table.add_row(
        "capability (0–100)",
        _value(cap.value, cap.undefined.get("value"), digits=0),
        "",
        "weights " + ", ".join(f"{k} {v:g}" for k, v in cap.weights.items()),
    )
    table.add_row("security gate", sec.status.replace("_", " "), "", sec.reason)
    table.add_row("faults delivered", *_delivery_cells(report))
    add_side_effects_row(table, report)
    add_model_faults_row(table, report)
    for name in EFFICIENCY_FIGURES:
        table.add_row(
            name.replace("_", " "),
            _value(eff.figures.get(name), eff.undefined.get(name), digits=2),
            "",
            "",
        )
    evidence = section(report, "evidence") or {}
    table.add_row(
        "evidence",
        str(evidence.get("level") or "undefined (no_trials)"),
        "",
        f"completeness {_value(evidence.get('completeness'), (evidence.get('undefined') or {}).get('completeness'), 2)}"
        + proxy_only_note(report),
    )
    return table


def print_summary(report: Report, console: Console | None = None) -> None:
    """Print a report's summary table, then its verdict reasons and fingerprints."""
    if console is None:
        from rich.console import Console

        console = Console()
        if not console.is_terminal:
            console = Console(width=160)
    for line in warning_lines(report):
        console.print(line, style="bold yellow", markup=False)
    console.print(summary_table(report))
    for line in verdict_lines(report, warnings=False):
        console.print(line, markup=False)
    for line in perturbation_lines(report):
        console.print(line, markup=False)
    source = section(report, "source")
    inferred = source.get("inferred_figures") if isinstance(source, Mapping) else None
    if isinstance(inferred, Mapping) and inferred:
        why: dict[str, list[str]] = {}
        for figure, reason in sorted(inferred.items()):
            why.setdefault(str(reason), []).append(str(figure))
        console.print(
            "  rests on inferred fields: "
            + "; ".join(f"{', '.join(f)} ({r})" for r, f in why.items()),
            markup=False,
        )
    fps = section(report, "fingerprints") or {}
    console.print(
        f"  measurement fingerprint {fps.get('measurement')}  manifest {report.manifest_hash}",
        markup=False,
    )
