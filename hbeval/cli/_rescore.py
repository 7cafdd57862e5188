"""``hbeval rescore RUN_ID``: score a stored run again under the current scoring version.

The run's raw events are scored again (``hbeval.runner._rescore``) and the new report is saved
beside the old one, which is never edited. When the measurement fingerprint moved (a run scored
under an older scoring version), the new report is a new measurement, stored as its own run
``RUN_ID-rescored-<fingerprint>``; else it is saved in the same run, and ``hbeval report
RUN_ID`` then shows it. Prints where it went and the figures that moved. Exit 2 when the run or
its report is missing.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ._common import DB_HELP, JSON_HELP, console, emit_json, fail

FIGURES = ("pei", "frr", "irs", "ti")
"""The headline figures the command shows old and new."""


def _figures(report: Any) -> dict[str, Any]:
    metrics = report.metrics.model_dump(mode="json")
    out = {name: metrics.get(name) for name in FIGURES}
    out["pass_rate"] = report.pass_rate.rate
    out["verdict"] = report.verdict
    return out


def rescore_cmd(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="The stored run to score again.")],
    db: Annotated[str | None, typer.Option("--db", help=DB_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Score a stored run again under the current scoring version, as a new report beside the old."""
    from ..runner._rescore import RescoreError, rescore_run
    from ..store import NoStoreError, open_store, resolve_path, store_exists

    if not store_exists(db):
        raise fail(f"no store at {resolve_path(db)}; pass --db with the store the run was saved in")
    try:
        store = open_store(db)
    except NoStoreError as exc:
        raise fail(str(exc)) from None
    try:
        old, new = rescore_run(store, run_id)
    except RescoreError as exc:
        raise fail(str(exc)) from None
    finally:
        store.close()
    before, after = _figures(old), _figures(new)
    moved = {k: {"old": before[k], "new": after[k]} for k in before if before[k] != after[k]}
    old_version = None if old.versions is None else old.versions.scoring
    new_version = None if new.versions is None else new.versions.scoring
    old_fp, new_fp = old.fingerprints.measurement, new.fingerprints.measurement
    target = new.run.run_id
    if as_json:
        emit_json(
            {
                "run_id": target,
                "rescored_from": run_id,
                "scoring": {"old": old_version, "new": new_version},
                "fingerprint": {"old": old_fp, "new": new_fp},
                "moved": moved,
                "report": new.to_dict(),
            }
        )
        return
    out = console()
    where = (
        "the new report is stored beside the old one"
        if target == run_id
        else f"measurement fingerprint {old_fp} -> {new_fp}: the new report is stored as run "
        f"{target}, beside the old run"
    )
    out.print(
        f"run {run_id}: scored again under {new_version} (was {old_version or 'unknown'}); {where}",
        markup=False,
    )
    if not moved:
        out.print("no headline figure moved")
    for name, pair in moved.items():
        out.print(f"  {name}: {pair['old']} -> {pair['new']}")
