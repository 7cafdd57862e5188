"""The LangGraph and LangChain versions this adapter supports, and the check made at instrument time.

The adapter relies on LangChain's callback protocol and configure hooks, on LangGraph's node
tags and on ``BaseTool``'s run methods; the supported ranges are pinned here (the
``[langgraph]`` extra in pyproject.toml says the same) and checked before anything is hooked.
"""

from __future__ import annotations

from typing import Final

from hbeval_core.versions import UnsupportedVersionError, version_in_range
from hbeval_core.versions import installed_versions as _installed_versions

__all__ = [
    "SUPPORTED",
    "SUPPORTED_VERSIONS",
    "UnsupportedVersionError",
    "check_supported",
    "installed_versions",
]

SUPPORTED: Final = ">=1.2,<2"
"""Supported versions of the ``langgraph`` distribution."""

SUPPORTED_VERSIONS: Final = {
    "langgraph": SUPPORTED,
    "langchain": ">=1.5,<2",
    "langchain-core": ">=1.8,<2",
}
"""The range of each distribution this adapter is tested against (mirrors the extra)."""


def installed_versions() -> dict[str, str | None]:
    """The installed version of each checked distribution (None when it is not installed)."""
    return _installed_versions(tuple(SUPPORTED_VERSIONS))


def check_supported(versions: dict[str, str | None] | None = None) -> dict[str, str]:
    """Raise ``UnsupportedVersionError`` unless every distribution is in its supported range.

    Returns the versions found, for manifests. ``versions`` overrides what is installed (tests).
    ``langchain`` itself is optional (graphs built on ``langchain-core`` alone run as well).
    """
    found = installed_versions() if versions is None else versions
    missing = [d for d, v in found.items() if v is None and d != "langchain"]
    if missing:
        raise UnsupportedVersionError(
            f"hbeval_langgraph needs {', '.join(missing)} "
            f"({', '.join(SUPPORTED_VERSIONS[d] for d in missing)}), which is not installed; "
            "install it with: pip install 'hbeval[langgraph]'"
        )
    bad = {
        d: v
        for d, v in found.items()
        if v is not None and not version_in_range(v, SUPPORTED_VERSIONS[d])
    }
    if bad:
        listed = ", ".join(f"{d} {v} (supported {SUPPORTED_VERSIONS[d]})" for d, v in bad.items())
        raise UnsupportedVersionError(
            f"hbeval_langgraph found {listed}. The adapter relies on LangChain's callbacks and "
            "LangGraph's node tags, which may have changed; install a supported version "
            "(pip install 'hbeval[langgraph]'), or pass check_version=False to try anyway at "
            "your own risk."
        )
    return {d: v for d, v in found.items() if v is not None}
