"""What ``hbeval runs list --json`` and the MCP ``list_runs`` tool print: the store's runs."""

from __future__ import annotations

from typing import Any

__all__ = ["runs_document"]


def runs_document(store: Any, agent_id: str | None = None) -> dict[str, Any]:
    """``hbeval runs list --json``'s document: ``{"runs": [run record, ...]}``, newest first."""
    return {"runs": [_as_plain(r) for r in store.list_runs(agent_id=agent_id)]}


def _as_plain(record: Any) -> dict[str, Any]:
    import dataclasses

    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return dataclasses.asdict(record)
    if isinstance(record, dict):
        return record
    return dict(vars(record))
