"""Tool calls linked to the model output that issued them, while the run is captured.

A framework that does not hand a tool hook the model's tool-call id (CrewAI's hooks) links the
call by the hb-derive/2 rules scoring uses (``hbeval_core.live.derive.CallLinker``): the same tool
with the same arguments, else the only open call of that tool. Each issuer (an agent) has its
own open calls; a new model output of that issuer replaces them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any, NamedTuple

from hbeval_core.live.derive import CallLinker

__all__ = ["CallLinks", "IssuedCall"]


class IssuedCall(NamedTuple):
    """A tool call a model output asked for."""

    id: str
    name: str
    args: Any


class CallLinks:
    """Open tool calls per issuer, claimed by the tool hooks that run them."""

    __slots__ = ("_linkers",)

    def __init__(self) -> None:
        self._linkers: dict[Hashable, CallLinker] = {}

    def issue(self, issuer: Hashable, calls: Iterable[IssuedCall]) -> None:
        """``issuer``'s model output asked for ``calls`` (its earlier open calls are dropped)."""
        linker = CallLinker()
        linker.issue(calls, True)
        self._linkers[issuer] = linker

    def drop(self, issuer: Hashable) -> None:
        """Forget ``issuer``'s open calls (no tool ran them before its next model call)."""
        self._linkers.pop(issuer, None)

    def claim(self, tool: str, args: Any, *issuers: Hashable) -> str | None:
        """The id of the open call this tool call runs, asking each issuer in turn; None if none."""
        for issuer in issuers:
            linker = self._linkers.get(issuer)
            if linker is not None:
                _, issued = linker.link("", tool, args)
                if issued is not None:
                    return issued.call_id
        return None
