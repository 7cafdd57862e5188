"""One canonical form and one fingerprint function for every hbeval fingerprint.

Canonical JSON is Python's ``json.dumps(obj, sort_keys=True, separators=(",", ":"))`` with the
default ``ensure_ascii=True``: keys sorted recursively, no whitespace, non-ASCII escaped as
``\\uXXXX``. This is what the HB-Eval reference hashes; a serialiser that leaves non-ASCII
unescaped gives a different digest (spec §1.4).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

FINGERPRINT_HEX_CHARS = 16


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False).encode
"""What ``json.dumps`` with those options calls, made once (it makes an encoder per call)."""


def canonical_json(obj: Any) -> str:
    """Serialise ``obj`` in the canonical form every fingerprint hashes."""
    return _CANONICAL(obj)


def sha256_hex(text: str) -> str:
    """Full lowercase SHA-256 hex digest of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fingerprint(obj: Any, *, upper: bool = False) -> str:
    """First 16 hex characters of SHA-256 over the canonical JSON of ``obj``.

    ``upper=True`` reproduces the reference's upper-case fault-plan fingerprints.
    """
    digest = sha256_hex(canonical_json(obj))[:FINGERPRINT_HEX_CHARS]
    return digest.upper() if upper else digest
