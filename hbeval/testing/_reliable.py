"""``assert_reliable``: run a battery on a target, gate the report, fail the test with the reasons."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from hbeval_core.vocab import DEFAULT_SEED, DEFAULT_TRIALS

from ..scoring._view import section

if TYPE_CHECKING:
    from ..report.gate import GateCheck, GateResult
    from ..scoring import Report

__all__ = ["INSUFFICIENT_MODES", "Reliability", "assert_reliable"]

INSUFFICIENT_MODES: Final = ("fail", "skip", "allow")
"""What insufficient data does: fail the test (default), skip it, or let it pass."""

_REPORTS_FOLDER: Final = "reports"


@dataclass(frozen=True)
class Reliability:
    """What ``assert_reliable`` found: the gate's result, the report and where it was written."""

    gate: GateResult
    report: Report = field(repr=False)
    report_path: Path
    reused: bool
    """True when ``reuse`` found a stored run of the same configuration and code."""

    @property
    def verdict(self) -> str:
        """The gate's verdict: ``pass``, ``fail`` or ``insufficient_data``."""
        return self.gate.verdict

    @property
    def run_id(self) -> str | None:
        return self.gate.run_id


def _fail(message: str) -> None:
    import pytest

    pytest.fail(message, pytrace=False)


def _skip(message: str) -> None:
    import pytest

    pytest.skip(message)


def _reuse_default() -> bool:
    from ._gate import reuse_requested

    return reuse_requested()


def _interval_text(report: Report, metric: str) -> str:
    """The rate's 95% interval clustered by scenario, with what it rests on."""
    from ..report.scores import proportion_counts
    from ..scoring._uncertainty import rate_interval

    shown = rate_interval(report, metric)
    if shown is None:
        return "(no interval: a mean over trials, not a proportion)"
    counts = (
        (report.pass_rate.passed, report.pass_rate.n)
        if metric == "pass_rate"
        else proportion_counts(report, metric)
    )
    share = "" if counts is None else f", {counts[0]}/{counts[1]}"
    return (
        f"[{shown.interval[0]:.2f}, {shown.interval[1]:.2f}] (95% clustered by scenario{share}; "
        f"{shown.describe()})"
    )


def _point(report: Report, metric: str) -> float | None:
    if metric == "pass_rate":
        rate = section(report, "pass_rate")
        value = rate.get("rate") if isinstance(rate, Mapping) else None
    else:
        metrics = section(report, "metrics")
        value = metrics.get(metric) if isinstance(metrics, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _line(report: Report, check: GateCheck) -> str:
    """One reason: a floor missed with its value and interval, else the gate's own words."""
    if check.kind != "floor" or check.passed is not False:
        return check.message
    label = "pass rate" if check.metric == "pass_rate" else check.metric.upper()
    point = _point(report, check.metric)
    shown = "undefined" if point is None else f"{point:.3f}"
    basis = "" if check.basis == "point" else f" (checked on {check.basis}: {check.value:.3f})"
    return (
        f"{label} {shown} {_interval_text(report, check.metric)} is below its floor "
        f"{check.threshold:g}{basis}"
    )


def _write_report(report: Report, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    name = str(report.run_id or "report").replace("/", "_")
    path = folder / f"{name}.json"
    from ..store._atomic import write_atomic

    write_atomic(
        path, json.dumps(report.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    )
    return path


def _report_folder(report_dir: str | Path | None, store_path: Any) -> Path:
    """Where the report JSON goes: ``report_dir``, else ``reports/`` beside the store."""
    if report_dir is not None:
        return Path(report_dir)
    if store_path == ":memory:":
        return Path.cwd() / ".hbeval" / _REPORTS_FOLDER
    return Path(store_path).parent / _REPORTS_FOLDER


def assert_reliable(
    target: Any,
    *,
    tasks: Any = None,
    floors: Mapping[str, float | None] | None = None,
    trials: int = DEFAULT_TRIALS,
    battery: Any = None,
    scenarios: int | None = None,
    seed: int = DEFAULT_SEED,
    fault_types: Sequence[str] | None = None,
    domains: Sequence[str] | None = None,
    db: str | Path | None = None,
    agent_id: str | None = None,
    target_kind: str | None = None,
    concurrency: int = 1,
    timeout: float | None = None,
    lower_bound: bool = False,
    baseline: Report | str | Path | Mapping[str, Any] | None = None,
    max_drop: float = 0.05,
    skip_security: bool = False,
    on_insufficient: str = "fail",
    reuse: bool | None = None,
    report_dir: str | Path | None = None,
    on_report: Callable[[Path], object] | None = None,
    require_security: bool | None = None,
) -> Reliability:
    """Run the battery on ``target``, gate the report, fail the current test unless it passes.

    ``target`` is an agent, a factory of agents, or a ``path.py:attr`` / ``module:attr``
    reference as on the command line; ``tasks`` is a list of ``Task``, a task file or a
    reference (default: ``tasks`` beside the target). ``battery`` is ``"hbeval"``,
    ``"compat"``, a battery file (``.yaml``, ``.yml``, ``.json``) or a built ``Battery``;
    ``scenarios`` (default 18 for a built-in battery; a battery file names its own),
    ``seed``, ``trials``, ``fault_types``,
    ``domains``, ``db``, ``agent_id`` (default: the target's name), ``target_kind``,
    ``concurrency`` and ``timeout`` are ``hbeval battery run``'s options; ``floors``,
    ``lower_bound``, ``baseline``, ``max_drop`` and ``skip_security`` are ``hbeval gate``'s.

    The report JSON goes to ``report_dir`` (default: ``reports/`` beside the store) and its
    path is in the failure message (``on_report`` is called with it once written). ``reuse`` (default: pytest's ``--hbeval-reuse``) returns a
    stored run of the same agent id, measurement fingerprint and manifest hash instead of
    running again; the hash covers the target's source files, installed package versions, task
    content and a task file's declared inputs, and every user source file the stored run loaded
    must be unchanged (``runner._provenance``). The reused report passes ``hbeval gate``'s recheck.
    Insufficient data fails the test with its reason unless ``on_insufficient`` is ``"skip"``
    or ``"allow"``. Bad arguments raise ``ValueError`` naming the argument.
    """
    # Long because: the signature is ``hbeval battery run``'s options and ``hbeval gate``'s
    # (about 30 lines) and the docstring maps them; the body runs, writes, gates and reports.
    from ..report.gate import GATE_FAIL, GATE_INSUFFICIENT, GateRefused, run_gate
    from ..runner._resolve import resolve_battery, resolve_target
    from ..runner.loader import TaskFileError, load_tasks
    from ..runner.manifest import RunManifest
    from ..runner.run import run_battery
    from ..store import open_store, resolve_path
    from ..store.postgres import is_postgres_url
    from ._gate import load_report_arg, resolve_skip_security

    skip = resolve_skip_security(skip_security, require_security, "assert_reliable")
    if on_insufficient not in INSUFFICIENT_MODES:
        raise ValueError(
            f"on_insufficient must be one of {', '.join(INSUFFICIENT_MODES)} "
            f"(got {on_insufficient!r})"
        )
    resolved = resolve_target(target, tasks)
    obj, target_ref, tasks_ref, default_id = (
        resolved.target,
        resolved.target_ref,
        resolved.tasks_ref,
        resolved.name,
    )
    try:
        task_list = load_tasks(resolved.tasks)
    except TaskFileError as exc:
        raise ValueError(f"tasks: {exc}") from None
    built = resolve_battery(
        battery, scenarios=scenarios, seed=seed, fault_types=fault_types, domains=domains
    )
    base = load_report_arg(baseline, "baseline") if baseline is not None else None
    reuse_run = _reuse_default() if reuse is None else bool(reuse)

    store = open_store(db)
    try:
        started = time.time()
        report = run_battery(
            None,
            obj,
            task_list,
            built,
            trials=trials,
            seed=seed,
            store=store,
            agent_id=agent_id or default_id,
            concurrency=concurrency,
            timeout=timeout,
            manifest=RunManifest(target=target_ref, tasks=tasks_ref),
            target_kind=target_kind,
            reuse=reuse_run,
        )
        store_path = ":memory:" if is_postgres_url(db) else resolve_path(db)
    finally:
        store.close()
    run = section(report, "run")
    reused = isinstance(run, Mapping) and float(run.get("started_at") or started) < started
    path = _write_report(report, _report_folder(report_dir, store_path))
    if on_report is not None:
        on_report(path)

    try:
        gate = run_gate(
            report,
            floors=floors,
            lower_bound=lower_bound,
            baseline=base,
            max_drop=max_drop,
            require_security=not skip,
        )
    except GateRefused as exc:
        raise ValueError(str(exc)) from None
    result = Reliability(gate, report, path, reused)
    who = (run.get("agent_id") if isinstance(run, Mapping) else None) or agent_id or default_id
    where = f"run {gate.run_id}" + (", a stored run reused" if reused else "")
    footer = "".join(f"  warning: {w}\n" for w in gate.warnings) + f"  report: {path}"
    if gate.verdict == GATE_FAIL:
        failed = [c for c in gate.checks if c.passed is False]
        unknown = [c for c in gate.checks if c.passed is None]
        lines = "\n".join(f"  - {_line(report, c)}" for c in (*failed, *unknown))
        _fail(f"hbeval: {who} is not reliable enough ({where}):\n{lines}\n{footer}")
    if gate.verdict == GATE_INSUFFICIENT:
        lines = "\n".join(f"  - {r}" for r in gate.reasons)
        message = (
            f"hbeval: insufficient data for {who} ({where}); unmeasured: "
            f"{', '.join(gate.unmeasured)}\n{lines}\n{footer}"
        )
        if on_insufficient == "fail":
            _fail(message)
        if on_insufficient == "skip":
            _skip(message)
    return result
