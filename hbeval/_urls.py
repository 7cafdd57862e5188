"""Addresses shown to people: a password in a URL is masked wherever hbeval prints or records one."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MASK", "masked_url"]

MASK: Final = "***"

_USERINFO: Final = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]{0,30}://[^/?#@:\s]*):[^/?#@\s]*@")
"""``scheme://user:password@``: the user and ``@`` are kept, the password replaced."""


def masked_url(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@host`` replaced by ``***``."""
    return _USERINFO.sub(lambda m: f"{m.group('head')}:{MASK}@", str(text))
