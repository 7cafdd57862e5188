"""``hbeval battery spec | build | run``: the battery from the command line.

Conventions (DESIGN.md, "The command
line"): JSON to stdout with ``--json``, progress and logs to stderr; exit 0 once the report is
written whatever it says, 2 for bad usage or input (the message names the flag or field), 130
when interrupted (completed trials are kept; rerun with the printed ``--run-id`` to resume),
1 when the model's rate limit asked for a pause over the cap on one pause (completed trials are
kept; rerun to resume). A run stopped by ``--max-cost`` writes its report (exit 0) and says so
on stderr.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from hbeval_core.vocab import (
    DEFAULT_SCENARIOS,
    DEFAULT_SEED,
    DEFAULT_TRIALS,
    FAULT_FAMILY_TOOL,
)

from ._battery_options import MatrixOption, PerturbOption
from ._battery_proxy import (
    CommandOption,
    FaultFamilyOption,
    ProxyFlags,
    QuestionAsArgOption,
    UpstreamOption,
    ViaProxyOption,
    adapter_for,
    load_command_target,
    proxy_flags,
    proxy_note,
    refuse_model_faults,
)
from ._common import REDACT_HELP, checked_redact, plain_app
from ._waves import ConfidenceOption, UntilDecidedOption, checked_waves

if TYPE_CHECKING:
    from ..scoring import Report

__all__ = ["battery_app"]

battery_app = plain_app("battery", "Build, inspect and run fingerprinted fault batteries.")

_DEFAULT_BATTERY = "hbeval"
_DEFAULT_AGENT = "default"


def _fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _emit_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False))


_FLAGS = {
    "battery": "--battery",
    "fault_types": "--fault-type",
    "domains": "--domain",
    "scenarios": "--scenarios",
    "perturb": "--perturb",
}


def _build_battery(
    battery: str,
    scenarios: int,
    seed: int,
    fault_types: list[str] | None,
    domains: list[str] | None,
    scenarios_given: bool = False,
    family: str = FAULT_FAMILY_TOOL,
    perturb: list[str] | None = None,
) -> Any:
    """Build a battery, turning each bad value into a message naming its flag."""
    from hbeval_core.faults.userbattery import is_battery_file

    from ..runner._resolve import resolve_battery

    if family != FAULT_FAMILY_TOOL:
        from ._battery_proxy import family_battery

        return family_battery(family, battery, seed, fault_types, domains, scenarios_given)
    try:
        # A battery file refuses --scenarios only when it was given, not its default.
        return resolve_battery(
            battery,
            scenarios=None if is_battery_file(battery) and not scenarios_given else scenarios,
            seed=seed,
            fault_types=fault_types,
            domains=domains,
            names=_FLAGS,
            perturb=perturb,
        )
    except ValueError as exc:
        _fail(str(exc))


@battery_app.command("spec")
def spec_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Show both battery specs and their fingerprints (HB-Eval's is ce481b32763df1ca)."""
    from hbeval_core.faults import BATTERY_COMPAT, BATTERY_HBEVAL, Battery

    out: dict[str, Any] = {}
    for kind in (BATTERY_HBEVAL, BATTERY_COMPAT):
        b = Battery.build(kind)
        out[kind] = {
            "fingerprint": b.spec_fingerprint(),
            "build_algorithm": b.build_version,
            "spec": b.spec(),
        }
    out["fingerprints"] = {
        kind: out[kind]["fingerprint"] for kind in (BATTERY_HBEVAL, BATTERY_COMPAT)
    }
    if as_json:
        _emit_json(out)
        return
    typer.echo(f"compat  (HB-Eval reference spec)   {out[BATTERY_COMPAT]['fingerprint']}")
    typer.echo(
        f"hbeval  ({out[BATTERY_HBEVAL]['build_algorithm']}, runtime faults)   "
        f"{out[BATTERY_HBEVAL]['fingerprint']}"
    )
    spec = out[BATTERY_COMPAT]["spec"]
    typer.echo(f"fault types: {', '.join(spec['fault_types'])}")
    typer.echo(f"domains:     {', '.join(spec['domains'])}")
    typer.echo(
        f"scenarios:   {spec['min_scenarios']}..{spec['max_scenarios']}, "
        f"nominal share {spec['none_fraction']}"
    )
    for ft, rt in out[BATTERY_HBEVAL]["spec"]["runtime_faults"].items():
        if rt is None:
            typer.echo(f"  {ft:<19} no runtime faults")
            continue
        items = rt.get("faults") or rt.get("stages") or []
        modes = ", ".join(
            f"{i['mode']}{'@' + str(i['on_calls']) if i.get('on_calls') else ''}" for i in items
        )
        typer.echo(f"  {ft:<19} {rt['kind']}: {modes}")


@battery_app.command("build")
def build_command(
    battery: Annotated[
        str, typer.Option("--battery", help="hbeval, compat, or a battery file (.yaml/.json).")
    ] = _DEFAULT_BATTERY,
    scenarios: Annotated[
        int | None, typer.Option("--scenarios", help="Number of scenarios (default 18).")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Shuffle seed.")] = DEFAULT_SEED,
    fault_type: Annotated[
        list[str] | None, typer.Option("--fault-type", help="Narrow to a fault type (repeat).")
    ] = None,
    domain: Annotated[
        list[str] | None, typer.Option("--domain", help="Narrow to a domain (repeat).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
    fault_family: FaultFamilyOption = FAULT_FAMILY_TOOL,
    perturb: PerturbOption = None,
) -> None:
    """Build a battery: {"fingerprint", "scenarios": [{"index","domain","fault_type","is_nominal",...}]}."""
    built = _build_battery(
        battery,
        DEFAULT_SCENARIOS if scenarios is None else scenarios,
        seed,
        fault_type,
        domain,
        scenarios is not None,
        fault_family,
        perturb,
    )
    data = built.to_dict()
    if as_json:
        _emit_json(data)
        return
    typer.echo(
        f"{data['battery']} battery, {data['n_scenarios']} scenarios, seed {data['seed']}: "
        f"fingerprint {data['fingerprint']}, plans {data['plan_fingerprint']}"
    )
    for s in data["scenarios"]:
        runtime = s.get("runtime")
        plan = f"  [{runtime['kind']}]" if runtime else ""
        typer.echo(f"  {s['index']:>2}  {s['domain']:<19} {s['fault_type']}{plan}")


class _Admissions:
    """Counts EDM's admission decisions of a ``--memory`` run, for the closing summary."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def __call__(self, record: Any) -> None:
        self.records.append(dict(record))

    def line(self) -> str:
        """``memory: 4 admitted (elaborate 2, handling 2), 2 quarantined, ...``."""
        routes: dict[str, int] = {}
        counts = {"refused": 0, "quarantined": 0, "not offered": 0, "errors": 0}
        for r in self.records:
            if r.get("error"):
                counts["errors"] += 1
            elif not r.get("offered"):
                counts["not offered"] += 1
            elif r.get("admitted"):
                route = str(r.get("route") or "unknown route")
                routes[route] = routes.get(route, 0) + 1
            elif r.get("quarantined"):
                counts["quarantined"] += 1
            else:
                counts["refused"] += 1
        admitted = sum(routes.values())
        text = f"  memory: {admitted} admitted"
        if routes:
            text += " (" + ", ".join(f"{k} {v}" for k, v in sorted(routes.items())) + ")"
        for name, n in counts.items():
            text += f", {n} {name}"
        return text


def _open_memory(db: str | None, store: Any) -> Any:
    """The EDM in the same SQLite file as the store (``--memory``); exit 2 when it cannot open."""
    import sqlite3

    from ..memory import EDMSchemaError, open_edm

    try:
        return open_edm(db)
    except (EDMSchemaError, OSError, ValueError, sqlite3.Error) as exc:
        store.close()
        _fail(f"--memory: {exc}")


@battery_app.command("run")
def run_command(
    target: Annotated[
        str | None,
        typer.Argument(help="path.py:attr or module:attr (an agent or a factory of agents)."),
    ] = None,
    tasks: Annotated[
        str | None,
        typer.Option(
            "--tasks", help="Task file (YAML/JSON) or module:attr; default: 'tasks' beside TARGET."
        ),
    ] = None,
    battery: Annotated[
        str | None,
        typer.Option(
            "--battery", help="hbeval (default), compat, or a battery file (.yaml/.json)."
        ),
    ] = None,
    scenarios: Annotated[
        int | None, typer.Option("--scenarios", help="Scenarios (default 18).")
    ] = None,
    fault_type: Annotated[
        list[str] | None, typer.Option("--fault-type", help="Narrow to a fault type (repeat).")
    ] = None,
    domain: Annotated[
        list[str] | None, typer.Option("--domain", help="Narrow to a domain (repeat).")
    ] = None,
    trials: Annotated[
        int | None, typer.Option("--trials", help="Trials per scenario (default 3).")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed (default 42).")] = None,
    agent_id: Annotated[
        str | None, typer.Option("--agent-id", help='Agent id (default "default").')
    ] = None,
    run_id: Annotated[
        str | None, typer.Option("--run-id", help="Run id; an existing one is resumed.")
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", help="Parallel trials (factory targets).")
    ] = None,
    executor: Annotated[
        str,
        typer.Option(
            "--executor",
            help="local (this process; --concurrency threads) or ray (each trial a Ray task; "
            "factory targets; pip install 'hbeval[ray]').",
        ),
    ] = "local",
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            help="With --executor ray: 'auto' or host:port of a running cluster (default: start "
            "a local Ray on this machine).",
        ),
    ] = None,
    rate_limit: Annotated[
        float | None,
        typer.Option(
            "--rate-limit",
            help="Model calls per minute for the whole run (all trials and workers together). "
            "HTTP 429s pause the run for their Retry-After with or without it.",
        ),
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option(
            "--max-cost",
            help="USD the run may spend (priced by the manifest's price_table); once spent no "
            "new trial starts and the run can be resumed with a larger budget.",
        ),
    ] = None,
    ray_cpus: Annotated[
        float,
        typer.Option(
            "--ray-cpus-per-trial",
            help="With --executor ray: CPUs each trial reserves (trials wait on models, so a "
            "fraction of one; default 0.25).",
        ),
    ] = 0.25,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            help="Per-trial timeout in seconds (default 300; 0 turns it off). A timed-out "
            "trial is recorded as timeout and the run goes on.",
        ),
    ] = None,
    manifest: Annotated[
        Path | None, typer.Option("--manifest", help="Run manifest (YAML/JSON).")
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option("--judge", help="Independent judge module:callable (methodology C)."),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option("--db", help="Store path or sqlite:///path (default ./.hbeval/hbeval.db)."),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the report JSON here.")] = None,
    target_kind: Annotated[
        str | None,
        typer.Option(
            "--target-kind", help="factory, agent, or an adapter kind (plain, langgraph, ...)."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report JSON to stdout.")
    ] = False,
    redact: Annotated[
        list[str] | None,
        typer.Option(
            "--redact",
            help=REDACT_HELP,
        ),
    ] = None,
    memory: Annotated[
        bool,
        typer.Option(
            "--memory",
            help="Use evaluation-driven memory (EDM) in the --db file: recall this agent's "
            "qualified precedents during trials, admit the run's qualified trials at its end.",
        ),
    ] = False,
    command: CommandOption = None,
    via_proxy: ViaProxyOption = None,
    upstream: UpstreamOption = None,
    question_as_arg: QuestionAsArgOption = False,
    fault_family: FaultFamilyOption = FAULT_FAMILY_TOOL,
    until_decided: UntilDecidedOption = False,
    confidence: ConfidenceOption = 0.95,
    perturb: PerturbOption = None,
    matrix: MatrixOption = False,
) -> None:
    """Run the battery against TARGET and write the report (exit 0 whatever it says)."""
    # Long because: typer reads the options from this signature (about 110 of its lines); the
    # body only gathers them and hands over to ``_plan_run`` and ``_execute``.
    flags = _Flags(
        target=target,
        tasks=tasks,
        battery=battery,
        scenarios=scenarios,
        fault_type=fault_type,
        domain=domain,
        trials=trials,
        seed=seed,
        agent_id=agent_id,
        concurrency=concurrency,
        executor=executor,
        ray_address=ray_address,
        timeout=timeout,
        manifest=manifest,
        judge=judge,
        target_kind=target_kind,
        redact=redact,
        rate_limit=rate_limit,
        max_cost=max_cost,
        via=proxy_flags(command, via_proxy, upstream, question_as_arg, target),
        family=fault_family,
        perturb=perturb,
        matrix=matrix,
    )
    plan = _plan_run(flags, out, db)
    plan = replace(plan, until_decided=checked_waves(until_decided, confidence, executor))
    report, admitted = _execute(plan, flags, db, run_id, ray_cpus, memory)
    _finish_run(report, out, as_json, admitted)
    if as_json:  # the summary says it otherwise (the report's evidence)
        proxy_note(flags.via)


def _execute(
    plan: _Plan, f: _Flags, db: str | None, run_id: str | None, ray_cpus: float, memory: bool
) -> tuple[Report, str | None]:
    """Open the store (and EDM with ``--memory``) and run; returns the report and, with memory,
    the admissions line. Exits 2 naming the flag at fault, 130 when interrupted."""
    from hbeval_core.contract import RateLimitTooLong

    from ..runner.manifest import ManifestMismatchError
    from ..runner.registry import TargetKindError
    from ..runner.run import run_battery
    from ..store import StoreError, open_store
    from ._progress import BatteryProgress

    try:
        store = open_store(db)
    except (StoreError, OSError) as exc:
        _fail(f"--db: {exc}")
    edm: Any = None
    if memory:
        edm = _open_memory(db, store)
    admissions = _Admissions()
    progress = BatteryProgress()
    try:
        report = run_battery(
            adapter_for(plan.target),
            plan.target,
            plan.tasks,
            plan.battery,
            trials=plan.trials,
            seed=plan.seed,
            store=store,
            agent_id=plan.agent_id,
            run_id=run_id,
            concurrency=plan.concurrency,
            timeout=plan.timeout,
            executor=f.executor,
            ray_address=f.ray_address,
            ray_cpus_per_trial=ray_cpus,
            rate_limit=f.rate_limit,
            max_cost=f.max_cost,
            manifest=plan.manifest,
            judge=plan.judge,
            methodology=plan.methodology,
            progress=progress,
            target_kind=plan.target_kind,
            judge_label=plan.judge_label,
            memory=edm,
            on_admission=admissions if edm is not None else None,
            until_decided=plan.until_decided,
        )
    except ManifestMismatchError as exc:
        _fail(f"--manifest: {exc}")
    except TargetKindError as exc:
        _fail(f"--target-kind: {exc}")
    except StoreError as exc:
        _fail(f"--run-id/--db: {exc}")
    except ValueError as exc:
        _fail(str(exc))
    except RateLimitTooLong as exc:
        progress.close()
        again = f" with --run-id {progress.run_id}" if progress.run_id else ""
        _fail(f"{exc} (resume{again})", 1)
    except KeyboardInterrupt:
        progress.close()
        again = f" --run-id {progress.run_id}" if progress.run_id else ""
        typer.echo(
            f"\ninterrupted: completed trials are kept; rerun with{again} to resume", err=True
        )
        raise typer.Exit(130) from None
    finally:
        progress.close()
        store.close()
        if edm is not None:
            edm.close()
    return report, admissions.line() if edm is not None else None


@dataclass(frozen=True)
class _Flags:
    """``battery run``'s flags that a manifest may also give (None: not given)."""

    target: str | None
    tasks: str | None
    battery: str | None
    scenarios: int | None
    fault_type: list[str] | None
    domain: list[str] | None
    trials: int | None
    seed: int | None
    agent_id: str | None
    concurrency: int | None
    executor: str
    ray_address: str | None
    timeout: float | None
    manifest: Path | None
    judge: str | None
    target_kind: str | None
    redact: list[str] | None
    rate_limit: float | None = None
    max_cost: float | None = None
    via: ProxyFlags | None = None
    family: str = FAULT_FAMILY_TOOL
    perturb: list[str] | None = None
    matrix: bool = False


@dataclass(frozen=True)
class _Plan:
    """Everything ``run_battery`` needs, checked before the store is opened."""

    target: Any
    tasks: Any
    battery: Any
    trials: int
    seed: int
    agent_id: str
    concurrency: int
    timeout: float
    manifest: Any
    judge: Any
    judge_label: str | None
    methodology: str
    target_kind: str | None
    until_decided: float | None = None


def _plan_run(f: _Flags, out: Path | None, db: str | None = None) -> _Plan:
    """Read and check every input of a run, flag before manifest before default; a bad value
    exits 2 naming its flag. Checked in the order a person fixes them: output path, manifest,
    target, tasks, battery, numbers, judge, target kind, redaction rules."""
    from hbeval.cli._outpaths import output_problem

    from ..runner.manifest import ManifestError, RunManifest, load_manifest
    from ..runner.run import DEFAULT_TIMEOUT

    if out is not None:  # checked before the first trial, not after the last
        target_file = (f.target or "").partition(":")[0] or None
        reads = [f.tasks, f.battery, f.manifest, target_file]
        problem = output_problem(out, make_parents=True, store=db, inputs=reads)
        if problem is not None:
            _fail(f"--out: {problem}")
    m: RunManifest | None = None
    if f.manifest is not None:
        try:
            m = load_manifest(f.manifest)
        except ManifestError as exc:
            _fail(f"--manifest: {exc}")

    def pick(flag: Any, field: str, default: Any) -> Any:
        if flag is not None:
            return flag
        if m is not None and getattr(m, field) is not None:
            return getattr(m, field)
        return default

    load = _load_target if f.via is None else load_command_target
    target_ref, target_obj, tasks_ref, task_list = load(f, m, pick)
    n = pick(f.scenarios, "n_scenarios", DEFAULT_SCENARIOS)
    s = pick(f.seed, "seed", DEFAULT_SEED)
    k = pick(f.trials, "trials", DEFAULT_TRIALS)
    faults = (
        list(f.fault_type)
        if f.fault_type
        else (list(m.fault_types) if m and m.fault_types else None)
    )
    domains = list(f.domain) if f.domain else (list(m.domains) if m and m.domains else None)
    named = pick(f.battery, "battery", _DEFAULT_BATTERY)
    built = _battery_for(f, named, n, s, faults, domains, task_list)
    if k < 1:
        _fail(f"--trials must be >= 1 (got {k})")
    if f.executor not in ("local", "ray"):
        _fail(f"--executor must be local or ray (got {f.executor!r})")
    if f.ray_address is not None and f.executor != "ray":
        _fail("--ray-address needs --executor ray")
    workers = pick(f.concurrency, "concurrency", 1)
    if workers < 1:
        _fail(f"--concurrency must be >= 1 (got {workers})")
    limit = pick(f.timeout, "timeout", DEFAULT_TIMEOUT)
    if not 0 <= limit < float("inf"):
        _fail(f"--timeout must be seconds >= 0, 0 for no limit (got {limit})")
    judge_ref = pick(f.judge, "judge", None)
    judge_obj = _load_judge(judge_ref)
    kind = _check_kind(pick(f.target_kind, "target_kind", None))
    if m is not None:
        m = m.with_updates(target=target_ref, tasks=tasks_ref)
    else:
        m = RunManifest(target=target_ref, tasks=tasks_ref)
    if f.redact:
        m = m.with_updates(redact=(*m.redact, *checked_redact(f.redact, prefix="error")))
    _check_limits(f, m)
    return _Plan(
        target=target_obj,
        tasks=task_list,
        battery=built,
        trials=k,
        seed=s,
        agent_id=pick(f.agent_id, "agent_id", _DEFAULT_AGENT),
        concurrency=workers,
        timeout=limit,
        manifest=m,
        judge=judge_obj,
        judge_label=judge_ref,
        methodology="C" if judge_obj is not None else pick(None, "methodology", "B"),
        target_kind=kind,
    )


def _battery_for(
    f: _Flags,
    named: str,
    n: int,
    seed: int,
    faults: list[str] | None,
    domains: list[str] | None,
    task_list: Any,
) -> Any:
    """The run's battery: built, model faults refused for a proxy, and with ``--matrix`` every
    scenario pinned to each task."""
    built = _build_battery(
        named, n, seed, faults, domains, f.scenarios is not None, f.family, f.perturb
    )
    refuse_model_faults(built, f.via)
    if not f.matrix:
        return built
    try:
        return built.matrix([str(getattr(t, "id", t)) for t in task_list])
    except (AttributeError, ValueError) as exc:
        text = str(exc)
        _fail(text if text.startswith("--matrix") else f"--matrix: {text}")


def _check_limits(f: _Flags, m: Any) -> None:
    """``--rate-limit`` and ``--max-cost`` (priced by the manifest), before the store opens."""
    from ..runner._budget import CostBudget

    rpm = f.rate_limit
    if rpm is not None and not 0 < rpm < float("inf"):
        _fail(f"--rate-limit must be model calls per minute > 0 (got {rpm})")
    try:
        CostBudget.for_run(f.max_cost, m.to_dict())
    except ValueError as exc:
        _fail(str(exc))


def _load_target(f: _Flags, m: Any, pick: Any) -> tuple[str, Any, str, Any]:
    """TARGET and its tasks: ``(target_ref, target, tasks_ref, tasks)``."""
    from ..runner.loader import TargetError, TaskFileError, load_object, load_tasks, split_reference

    target_ref = pick(f.target, "target", None)
    if target_ref is None:
        _fail("TARGET is missing: give path.py:attr or module:attr (or 'target' in --manifest)")
    try:
        module_part, _ = split_reference(target_ref)
        target_obj = load_object(target_ref)
    except TargetError as exc:
        _fail(f"TARGET: {exc}")
    tasks_ref = pick(f.tasks, "tasks", None) or f"{module_part}:tasks"
    try:
        task_list = load_tasks(tasks_ref)
    except TaskFileError as exc:
        hint = (
            ""
            if f.tasks or (m and m.tasks)
            else " (no --tasks given, so TARGET's module must define 'tasks')"
        )
        _fail(f"--tasks: {exc}{hint}")
    return target_ref, target_obj, tasks_ref, task_list


def _load_judge(judge_ref: str | None) -> Any:
    """The ``--judge`` callable, or None."""
    from ..runner.loader import TargetError, load_object

    if judge_ref is None:
        return None
    try:
        judge_obj = load_object(judge_ref)
    except TargetError as exc:
        _fail(f"--judge: {exc}")
    if not callable(judge_obj):
        _fail(f"--judge: {judge_ref!r} is not callable")
    return judge_obj


def _check_kind(kind: str | None) -> str | None:
    """``--target-kind``, checked before the store is opened, so a typo never creates a database."""
    from ..runner.registry import KIND_AGENT, KIND_FACTORY, adapter_kinds

    if kind is not None and kind not in (KIND_FACTORY, KIND_AGENT, *adapter_kinds()):
        _fail(
            f"--target-kind must be {KIND_FACTORY}, {KIND_AGENT} or an adapter kind "
            f"({', '.join(adapter_kinds())}); got {kind!r}"
        )
    return kind


def _finish_run(report: Report, out: Path | None, as_json: bool, memory_line: str | None) -> None:
    """Warnings, the report file, and the JSON or the summary; ``memory_line`` after a
    ``--memory`` run (on stderr with ``--json``)."""
    from ..runner.run import abandoned_threads
    from ..scoring import delivery_warning

    warning = delivery_warning(report)
    if warning is not None:
        typer.echo(warning, err=True)
    budget = report.run.budget
    if budget is not None and budget.stopped:
        typer.echo(
            f"stopped ({budget.stopped}): spent ${budget.spent:.4f} of "
            f"${budget.max_cost:g}; trials not run are left out of every figure. Rerun with "
            f"a larger --max-cost (and --run-id {report.run_id}) to resume.",
            err=True,
        )
    still = abandoned_threads()
    if still:
        typer.echo(
            f"warning: {len(still)} agent thread(s) cut by --timeout are still running in the "
            "background (abandoned daemon threads; they end with this process)",
            err=True,
        )
    if out is not None:
        try:
            from hbeval.cli._outpaths import write_output

            write_output(
                out,
                json.dumps(report.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n",
            )
        except OSError as exc:
            _fail(
                f"--out: cannot write {out}: {exc.strerror or exc} (the run and its report are "
                f"kept in the store: `hbeval report {report.run_id} --out FILE`)"
            )
    if as_json:
        _emit_json(report.to_dict())
        if memory_line is not None:
            typer.echo(memory_line, err=True)
    else:
        from ._battery_summary import summary

        summary(report, out)
        if memory_line is not None:
            typer.echo(memory_line)
