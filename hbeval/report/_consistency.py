"""How the report's consistency block reads: rows of the terminal summary, sentences of the HTML.

The block (``scoring._consistency``) says how alike the repeated trials of each scenario were:
C_out and the flip rate from outcomes, with pass^k beside the flip rate, and C_traj_d and
C_traj_s from the tool names of successful trials. A report without the block shows nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._html_words import _e, _undef_html

if TYPE_CHECKING:
    from rich.table import Table

    from ..scoring import Report
    from ..scoring._consistency import ConsistencyBlock

__all__ = ["add_consistency_rows", "consistency_sentences"]


def _block(report: Report) -> ConsistencyBlock | None:
    return getattr(report, "consistency", None)


def _text(value: float | None, reason: str | None) -> str:
    return f"undefined ({reason or 'not_measured'})" if value is None else f"{value:.3f}"


def _band_words(report: Report) -> tuple[str, str, str] | None:
    """(band, "", why) for a defined CSI: the band, or "withheld" with the figure against it."""
    info = report.csi_info
    if info.value is None:
        return None
    runs = getattr(report, "csi_runs", None)
    withheld = None if runs is None else runs.band_withheld
    if withheld is not None:
        return "withheld", "", f"CSI {info.value:.3f}, but {withheld}"
    block = _block(report)
    beside = (
        ""
        if block is None
        else f"beside C_out {_text(block.c_out, block.undefined.get('c_out'))}, "
        f"flip rate {_text(block.flip_rate, block.undefined.get('flip_rate'))}"
    )
    return str(info.band), "", f"CSI {info.value:.3f} over {info.runs_total} runs; {beside}"


def _recorded_row(table: Table, report: Report) -> None:
    recorded = getattr(report, "recorded_errors", None)
    if recorded is None:
        return
    ci = recorded.interval
    table.add_row(
        "recorded-error recovery",
        _text(recorded.rate, recorded.undefined.get("rate")),
        "" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]",
        f"{recorded.recovered}/{recorded.trials} trials with a recorded tool error passed; "
        "not injected, so no fault floor applies",
    )


def add_consistency_rows(table: Table, report: Report) -> None:
    """The recorded-error recovery row of an import without injected faults, then four rows
    (C_out, flip rate with pass^k, C_traj_d, C_traj_s) when the consistency block is there."""
    _recorded_row(table, report)
    block = _block(report)
    if block is None:
        return
    why = block.undefined
    hat = (
        f"pass^{block.k} {_text(block.pass_hat_k, why.get('pass_hat_k'))}"
        if block.k is not None
        else ""
    )
    table.add_row(
        "C_out (outcomes)",
        _text(block.c_out, why.get("c_out")),
        "",
        f"{block.scenarios_repeated} of {block.scenarios} scenarios repeated",
    )
    table.add_row("flip rate", _text(block.flip_rate, why.get("flip_rate")), "", hat)
    band_row = _band_words(report)
    if band_row is not None:
        table.add_row("CSI band", *band_row)
    table.add_row(
        "C_traj_d (tool mix)",
        _text(block.c_traj_d, why.get("c_traj_d")),
        "",
        f"successful trials of {block.scenarios_traj_d} scenarios",
    )
    table.add_row(
        "C_traj_s (tool order)",
        _text(block.c_traj_s, why.get("c_traj_s")),
        "",
        f"successful trials of {block.scenarios_traj_s} scenarios",
    )


def _html(value: float | None, reason: str | None) -> str:
    return _undef_html(reason, words=False) if value is None else f"{value:.2f}"


def consistency_sentences(report: Report) -> list[str]:
    """The "How sure we are" sentences on recorded errors and repeated trials (HTML, every
    value escaped)."""
    recorded = getattr(report, "recorded_errors", None)
    lead = []
    if recorded is not None and recorded.rate is not None:
        lead.append(
            f"No fault was injected: {_e(recorded.trials)} trials met the recording's own tool "
            f"errors and {_e(recorded.recovered)} of them passed (recorded-error recovery "
            f"{recorded.rate:.2f}); they are not graded as fault handling, and no fault floor "
            "applies."
        )
    block = _block(report)
    if block is None:
        return lead
    why = block.undefined
    flips = block.flip_rate
    if block.c_out is None or flips is None:
        return [
            f"Consistency over repeated trials of a scenario is {_undef_html(why.get('c_out'))}."
        ]
    hat = (
        f" (pass^{_e(block.k)} {_html(block.pass_hat_k, why.get('pass_hat_k'))})"
        if block.k is not None
        else ""
    )
    items = [
        *lead,
        f"Repeated trials: outcome consistency C_out {block.c_out:.2f} over "
        f"{_e(block.scenarios_repeated)} scenarios (1 = every scenario always ends the same "
        f"way); {100 * flips:.0f}% of them flipped between pass and fail{hat}.",
    ]
    info = report.csi_info
    runs = getattr(report, "csi_runs", None)
    if info.value is not None:
        withheld = None if runs is None else runs.band_withheld
        items.append(
            f"Consistency across runs (CSI) {info.value:.2f} over {_e(info.runs_total)} runs: "
            + (
                f"no band given, because {_e(withheld)}."
                if withheld is not None
                else f"{_e(info.band)} beside the C_out and flip rate above."
            )
        )
    traj: list[Any] = [block.c_traj_d, block.c_traj_s]
    if traj[0] is None and traj[1] is None:
        items.append(f"Trajectory consistency is {_undef_html(why.get('c_traj_s'))}.")
    else:
        items.append(
            "Trajectories of successful trials: C_traj_d "
            f"{_html(block.c_traj_d, why.get('c_traj_d'))} (tool mix, "
            f"{_e(block.scenarios_traj_d)} scenarios), C_traj_s "
            f"{_html(block.c_traj_s, why.get('c_traj_s'))} (tool order, "
            f"{_e(block.scenarios_traj_s)} scenarios)."
        )
    return items
