"""The reference panel: agents of known behaviour, and the figures that must tell them apart.

Each member is a help-desk script (``_agents``) whose behaviour under a fault is fixed by
construction; several members share one behaviour and differ only in wording. Run the battery
on all of them (``run_panel``) and the figures show what a battery and judge configuration can
and cannot separate (``separations``): a behavioural figure that moves with wording, or a
wording that buys credit, is a validity failure of the scoring, not of the agent.

The members run as plain-Python agents (the plain adapter's ``scripted`` glue), offline and
deterministic; the stochastic member draws from a seeded generator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import Any, Final

from ..helpdesk import CarefulScript, NaiveScript
from . import _agents

__all__ = [
    "MEMBERS",
    "Member",
    "PanelRow",
    "decided_by",
    "panel_factories",
    "panel_rows",
    "run_panel",
    "separations",
]


@dataclass(frozen=True)
class Member:
    """One panel agent: its script, the behaviour it stands for, and the words it uses."""

    name: str
    script: type[Any]
    behaviour: str
    wording: str
    kwargs: Mapping[str, Any] | None = None


MEMBERS: Final[tuple[Member, ...]] = (
    Member("careful", CarefulScript, "careful", "explains, names each error"),
    Member("naive", NaiveScript, "naive", "silent"),
    Member("blind-retrier", _agents.BlindRetrier, "blind retry", "neutral"),
    Member("blind-retrier-support", _agents.BlindRetrierSupport, "blind retry", "support phrases"),
    Member(
        "blind-retrier-retrying", _agents.BlindRetrierRetrying, "blind retry", "'failed; retrying'"
    ),
    Member("blind-parallel", _agents.BlindParallel, "blind parallel retry", "neutral"),
    Member("careful-parallel", _agents.CarefulParallel, "careful parallel", "names each error"),
    Member("replanner-wrong", _agents.ReplannerWrong, "re-plans, answers wrong", "plain"),
    Member(
        "replanner-wrong-cannot",
        _agents.ReplannerWrongCannot,
        "re-plans, answers wrong",
        "'I cannot confirm'",
    ),
    Member("always-abstainer", _agents.AlwaysAbstainer, "always abstains", "'I cannot'"),
    Member("corruption-echoer", _agents.CorruptionEchoer, "echoes planted values", "neutral"),
    Member(
        "injection-follower",
        _agents.InjectionFollowerApologetic,
        "follows injections",
        "apologises, claims refusal",
    ),
    Member("stochastic", _agents.Stochastic, "careful or naive at random", "mixed"),
)
"""The panel, in table order."""

FIGURES: Final = ("pass", "frr", "irs", "silent_corruption", "explained_share", "verdict")
"""The figures a panel row shows."""


def _plain_glue() -> Any:
    """The plain adapter's demo module (its ``scripted`` glue), found through its entry point."""
    from ...runner.registry import PLAIN, discovered_adapters

    info = discovered_adapters()[PLAIN]
    return import_module(str(info.demo))


def panel_factories(
    members: Sequence[Member] = MEMBERS, *, seed: int = 1
) -> dict[str, Callable[[], Any]]:
    """A fresh-agent factory per member, run as plain agents (each trial gets its own desk)."""
    glue = _plain_glue()
    out: dict[str, Callable[[], Any]] = {}
    for m in members:
        kwargs = dict(m.kwargs or {})
        if m.script is _agents.Stochastic:
            kwargs["draw"] = _agents.stochastic_draws(seed)
        out[m.name] = glue.scripted(m.script, **kwargs)
    return out


@dataclass(frozen=True)
class PanelRow:
    """One member's figures on one run."""

    name: str
    behaviour: str
    wording: str
    passed: int
    trials: int
    frr: float | None
    irs: float | None
    silent_corruption: int
    explained_share: float | None
    verdict: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dict(self.__dict__)


def row_of(member: Member, report: Any) -> PanelRow:
    """A member's row, read from its report."""
    scored = [t for t in report.trials if t.outcome in ("pass", "fail", "timeout")]
    passed = sum(1 for t in scored if t.outcome == "pass")
    trace = report.traceability
    share = getattr(trace, "explained_share", None)
    corrupt = report.silent_corruption.count if hasattr(report, "silent_corruption") else 0
    return PanelRow(
        name=member.name,
        behaviour=member.behaviour,
        wording=member.wording,
        passed=passed,
        trials=len(scored),
        frr=report.metrics.frr,
        irs=report.metrics.irs,
        silent_corruption=corrupt,
        explained_share=share,
        verdict=str(report.verdict),
    )


def run_panel(
    battery: Any = None,
    *,
    members: Sequence[Member] = MEMBERS,
    trials: int = 3,
    seed: int = 1,
    n_scenarios: int = 18,
    judge: Any = None,
    tasks: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """Run ``battery`` (default: the hbeval battery of ``n_scenarios``) on every member.

    Returns ``{name: report}`` in panel order. Nothing is stored beyond an in-memory store.
    A ``judge`` that declares ``text_signals`` answers the text questions under methodology B
    (``decided_by`` names it); any other judge is methodology C's safety judge.
    """
    from hbeval_core.faults import Battery

    from ...runner.run import run_battery
    from ..helpdesk import tasks as helpdesk_tasks

    chosen = battery if battery is not None else Battery.hbeval(n_scenarios=n_scenarios, seed=seed)
    factories = panel_factories(members, seed=seed)
    reports: dict[str, Any] = {}
    for m in members:
        reports[m.name] = run_battery(
            None,
            factories[m.name],
            list(tasks if tasks is not None else helpdesk_tasks),
            chosen,
            trials=trials,
            seed=seed,
            agent_id=f"panel-{m.name}",
            judge=judge,
            methodology=_methodology_for(judge),
        )
    return reports


def _methodology_for(judge: Any) -> str:
    """B, the panel's methodology, unless ``judge`` is only a safety judge (then C, where it
    judges safety). A text-signal judge answers B's text questions and changes nothing else."""
    from ...scoring._text_signals import is_text_signal_judge

    return "C" if judge is not None and not is_text_signal_judge(judge) else "B"


def decided_by(reports: Mapping[str, Any]) -> list[str]:
    """Which text signals decided the panel's text questions (every member's report), sorted."""
    names: set[str] = set()
    for report in reports.values():
        block = getattr(report, "text_signals", None)
        names.update(getattr(block, "decided_by", None) or ())
    return sorted(names)


def panel_rows(reports: Mapping[str, Any], members: Sequence[Member] = MEMBERS) -> list[PanelRow]:
    """The table: one row per member that ran."""
    return [row_of(m, reports[m.name]) for m in members if m.name in reports]


def _close(a: float | None, b: float | None, tol: float) -> bool:
    return a is not None and b is not None and abs(a - b) <= tol


def separations(rows: Sequence[PanelRow], tolerance: float = 0.05) -> list[str]:
    """Which figures separate which behaviours, and which wording moved a behavioural figure.

    For every pair of rows of *different* behaviour, the figures that differ by more than
    ``tolerance``; for every pair of the *same* behaviour, the behavioural figures (pass, FRR,
    IRS, silent corruptions, verdict) that moved with wording alone.
    """
    lines: list[str] = []
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            moved = []
            for fig in ("frr", "irs", "explained_share"):
                va, vb = getattr(a, fig), getattr(b, fig)
                if va is None or vb is None:
                    if (va is None) != (vb is None):
                        moved.append(fig)
                elif not _close(va, vb, tolerance):
                    moved.append(fig)
            if a.passed != b.passed:
                moved.append("pass")
            if a.silent_corruption != b.silent_corruption:
                moved.append("silent_corruption")
            if a.verdict != b.verdict:
                moved.append("verdict")
            if a.behaviour == b.behaviour:
                wrong = [f for f in moved if f != "explained_share"]
                if wrong:
                    lines.append(
                        f"WORDING MOVED {', '.join(wrong)}: {a.name} vs {b.name} "
                        f"(same behaviour: {a.behaviour})"
                    )
            elif moved:
                lines.append(f"{a.name} | {b.name}: {', '.join(moved)}")
            else:
                lines.append(f"NOT SEPARATED: {a.name} vs {b.name}")
    return lines
