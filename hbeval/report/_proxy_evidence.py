"""How the terminal and the HTML say a trace was seen only through a proxy (``proxy_only``)."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..scoring import Report

__all__ = ["proxy_only_html", "proxy_only_lines", "proxy_only_note"]


def proxy_only_note(report: Report) -> str:
    """The summary's evidence row suffix: ``; proxy-only 3/3 trials`` (empty without one)."""
    block = report.evidence.proxy_only
    if block is None:
        return ""
    return f"; {block.level} {block.trials}/{block.scored_trials} trials"


def proxy_only_lines(report: Report) -> list[str]:
    """What the proxy-only traces hold, cannot support, and which figures rest on them."""
    block = report.evidence.proxy_only
    if block is None:
        return []
    lines = [
        f"  evidence: {block.level}, {'; '.join(block.proxies)} ({block.trials} of "
        f"{block.scored_trials} scored trials)",
        f"    it holds: {', '.join(block.seen) or 'nothing recorded'}",
        f"    it cannot support: {', '.join(block.cannot_support) or 'nothing named'}",
    ]
    lines.extend(f"    {name}: {why}" for name, why in block.figures.items())
    return lines


def proxy_only_html(report: Report) -> str:
    """The HTML block (escaped; empty when no trace was seen only through a proxy)."""
    block = report.evidence.proxy_only
    if block is None:
        return ""
    rows = "".join(
        f"<tr><td>{escape(name)}</td><td>{escape(why)}</td></tr>"
        for name, why in block.figures.items()
    )
    return (
        f"<h3>Evidence: {escape(block.level)}</h3><p>{block.trials} of {block.scored_trials} "
        f"scored trials: {escape('; '.join(block.proxies))}. It holds "
        f"{escape(', '.join(block.seen))}; it cannot support "
        f"{escape(', '.join(block.cannot_support))}.</p>"
        "<table><tr><th>figure</th><th>what it rests on</th></tr>" + rows + "</table>"
    )
