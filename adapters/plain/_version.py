"""What the plain adapter supports: any Python callable, no framework to check."""

from __future__ import annotations

from typing import Final

from hbeval_core.versions import UnsupportedVersionError

__all__ = ["SUPPORTED", "UnsupportedVersionError", "check_supported"]

SUPPORTED: Final = "any"
"""The plain adapter depends on no framework; every Python callable is a target."""


def check_supported(versions: dict[str, str | None] | None = None) -> dict[str, str]:
    """Nothing to check (the same call as the framework adapters'); returns no versions."""
    return {}
