"""What a signed ``hbeval-passport/1`` may contain, and the trusted-keys file.

A valid signature only proves that the key's holder signed these bytes; a forger with their own
key can sign anything. So the signed content is also checked against the format: no unknown
fields, metrics as finite numbers in their ranges (never strings), a verdict hbeval can issue.
And a key is trusted only when the verifier says so: ``--key`` (a key file, a base64 key or a key
id from the trusted-keys file) or the trusted-keys file itself.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..scoring._trial_model import Change, TiScale, Unit

__all__ = [
    "TRUSTED_KEYS_ENV",
    "TrustedKey",
    "default_trusted_keys_path",
    "is_key_id",
    "key_id",
    "parse_trusted_keys",
    "passport_content_problems",
]

TRUSTED_KEYS_ENV = "HBEVAL_TRUSTED_KEYS"
"""Environment variable naming the trusted-keys file (else ~/.config/hbeval/trusted_keys)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)


class _Metrics(_Strict):
    pei: Unit | None
    frr: Unit | None
    irs: Unit | None
    ti: TiScale | None
    csi: Unit | None


class _Rate(_Open):
    rate: Unit | None
    passed: int | None = Field(default=None, ge=0)
    n: int | None = Field(default=None, ge=0)


class _Gap(_Open):
    c_nom: Unit | None = None
    r_op: Unit | None = None
    gap: Change | None = None


class _Signer(_Strict):
    algorithm: str
    public_key: str
    key_id: str


class _Signature(_Strict):
    value: str
    content_sha256: str


class _Capability(_Open):
    value: Annotated[float, Field(ge=0.0, le=100.0, strict=True)] | None = None


class _Provenance(_Strict):
    checked: bool
    store: str | None
    report_digest: str = Field(pattern=r"^[0-9a-f]{64}$")


class PassportContent(_Strict):
    """The fields of a signed passport (older passports lack the verdict_fix/rule fields)."""

    format: Literal["hbeval-passport/1"]
    passport_id: str
    issued_at: str
    expires_at: str
    validity_days: int = Field(ge=1, le=365)
    issuer: dict[str, Any]
    agent: dict[str, Any]
    run: dict[str, Any]
    verdict: Literal["SAFE", "UNSAFE", "INSUFFICIENT_DATA"]
    verdict_reasons: list[str]
    verdict_fix: str | None = None
    verdict_rule: str | None = None
    unmeasured_metrics: list[str]
    metrics: _Metrics
    undefined: dict[str, str]
    defined_counts: dict[str, int]
    thresholds: dict[str, float]
    weakest: dict[str, Any]
    pass_rate: _Rate
    reliability_gap: _Gap
    intervals: dict[str, Any] | None = None
    """Each rate's interval clustered by scenario (absent from passports signed before it)."""
    capability: _Capability
    security_gate: dict[str, Any]
    evidence: dict[str, Any]
    fingerprints: dict[str, str | None]
    manifest_hash: str | None
    metric_versions: dict[str, str]
    versions: dict[str, Any]
    provenance: _Provenance | None = None
    signer: _Signer
    signature: _Signature


def passport_content_problems(doc: dict[str, Any]) -> list[str]:
    """Every way the document breaks the passport format, each naming its field."""
    try:
        PassportContent.model_validate(doc)
    except ValidationError as exc:
        out = []
        for err in exc.errors()[:5]:
            where = ".".join(str(p) for p in err.get("loc", ())) or "(passport)"
            out.append(f"signed content field {where!r}: {err.get('msg', 'invalid')}")
        if exc.error_count() > 5:
            out.append(f"... {exc.error_count() - 5} more problem(s) in the signed content")
        return out
    return []


# --------------------------------------------------------------------------- trusted keys
class TrustedKey(BaseModel):
    """One line of the trusted-keys file: a raw Ed25519 public key and its label."""

    model_config = ConfigDict(frozen=True)

    key_id: str
    public_raw: bytes
    label: str
    line: int


_KEY_ID_RE = re.compile(r"^[0-9a-f]{16}$")


def key_id(public_raw: bytes) -> str:
    """First 16 lowercase hex characters of SHA-256 over the raw 32-byte public key."""
    return hashlib.sha256(public_raw).hexdigest()[:16]


def is_key_id(text: str) -> bool:
    """Whether ``text`` has the shape of a key id (16 lowercase hex characters)."""
    return _KEY_ID_RE.match(text) is not None


def default_trusted_keys_path() -> Path:
    """``$HBEVAL_TRUSTED_KEYS``, else ``$XDG_CONFIG_HOME/hbeval/trusted_keys`` (~/.config)."""
    env = os.environ.get(TRUSTED_KEYS_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "hbeval" / "trusted_keys"


def parse_trusted_keys(text: str, where: str) -> list[TrustedKey]:
    """Lines ``<base64 raw Ed25519 public key> [label]``; ``#`` starts a comment.

    A line may start with the key id (16 hex) before the key; it must then match the key.
    Raises ValueError naming the file and line for anything else.
    """
    keys: list[TrustedKey] = []
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        claimed = None
        if is_key_id(parts[0]) and len(parts) > 1:
            claimed, parts = parts[0], parts[1:]
        try:
            public_raw = base64.b64decode(parts[0], validate=True)
        except (binascii.Error, ValueError):
            public_raw = b""
        if len(public_raw) != 32:
            raise ValueError(
                f"{where}:{number}: expected a base64 raw Ed25519 public key (32 bytes), "
                "optionally after its key id and followed by a label"
            )
        kid = key_id(public_raw)
        if claimed is not None and claimed != kid:
            raise ValueError(f"{where}:{number}: key id {claimed} does not match the key ({kid})")
        keys.append(
            TrustedKey(key_id=kid, public_raw=public_raw, label=" ".join(parts[1:]), line=number)
        )
    return keys
