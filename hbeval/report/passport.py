"""Signed passports (``hbeval-passport/1``): a report's key figures, signed with Ed25519.

A passport says who was measured, what the metrics were (undefined ones with their reasons),
the weakest metric, the evidence, fingerprints and versions, the verdict, the security gate and
the capability score, when it was issued and when it expires. It embeds its signer's public key
(raw 32 bytes, base64) and ``key_id`` (first 16 hex of SHA-256 of that raw key), so anyone can
check its **integrity** from the file alone; pinning a trusted public key (``verify --key``)
adds **authenticity**.

This is hbeval's own documented format. It borrows the HB-Eval Gateway passport's ideas (spec
§5: Ed25519 over canonical JSON minus the signature, weakest metric, no overall grade, 90-day
expiry) but is **not byte-compatible** with the Gateway's signer: our canonical form keeps floats
as Python's ``repr`` (``5.0`` stays ``5.0``; the Gateway writes ``5``), does not escape
non-ASCII, and signs a different document. Canonical form (docs/reports.md has a test vector):
the document without its top-level ``signature`` member, serialised as
``json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)``
and encoded as UTF-8; NaN and infinities are refused.

The file on disk is that document with ``signature`` added, written as
``json.dumps(..., indent=2, sort_keys=True, ensure_ascii=False) + "\\n"``. Verification also
checks that the file's bytes are exactly that layout, so one changed byte anywhere — even
whitespace outside the signed content — fails with a message saying where.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from hbeval_core import __version__
from hbeval_core.fingerprint import fingerprint
from hbeval_core.vocab import LIVE_METRICS, NOT_MEASURED, TI, TI_MAX

from ..scoring import VERDICT_VERSION, decide_verdict
from ..scoring._view import section
from ._passport_keys import (
    DEFAULT_KEY_PATH,
    ENV_PASSPORT_KEY,
    PassportError,
    _b64decode_exact,
    _ed25519,
    generate_private_key,
    load_private_key,
    load_public_key,
    public_key_pem,
    public_key_raw,
    write_private_key,
)
from ._passport_schema import TrustedKey, key_id, passport_content_problems
from .scores import scores_of

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from ..scoring import Report

__all__ = [
    "DEFAULT_DAYS",
    "DEFAULT_KEY_PATH",
    "ENV_PASSPORT_KEY",
    "MAX_DAYS",
    "PASSPORT_FORMAT",
    "SIGNATURE_ALGORITHM",
    "PassportError",
    "VerifyResult",
    "build_passport",
    "canonical_bytes",
    "generate_private_key",
    "key_id",
    "load_private_key",
    "load_public_key",
    "public_key_pem",
    "public_key_raw",
    "render_passport",
    "sign_passport",
    "verify_passport",
    "write_private_key",
]

PASSPORT_FORMAT: Final = "hbeval-passport/1"
SIGNATURE_ALGORITHM: Final = "Ed25519"
DEFAULT_DAYS: Final = 90
MAX_DAYS: Final = 365
CLOCK_SKEW: Final = dt.timedelta(minutes=5)
"""How far in the future ``issued_at`` may lie before verification calls it suspicious."""

STATEMENT: Final = (
    "Self-issued by hbeval from a battery run executed and scored locally (unverified). "
    "Not a certification. Format hbeval-passport/1: hbeval's own format, not byte-compatible "
    "with HB-Eval Gateway passports."
)


# --------------------------------------------------------------------------- canonical form
def _check_finite(value: Any, where: str = "$") -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise PassportError(f"{where} is {value!r}: NaN and infinities cannot be signed")
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise PassportError(f"{where} has a non-string key {k!r}")
            _check_finite(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_finite(v, f"{where}[{i}]")


def canonical_bytes(doc: Mapping[str, Any]) -> bytes:
    """The bytes a passport's signature covers: the document minus ``signature``, canonical JSON.

    Keys sorted at every depth, no whitespace, UTF-8 without escaping non-ASCII, floats as
    Python ``repr``; NaN and infinities raise :class:`PassportError`.
    """
    body = {k: v for k, v in doc.items() if k != "signature"}
    _check_finite(body)
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


def render_passport(doc: Mapping[str, Any]) -> str:
    """The exact text ``passport sign`` writes: indented, keys sorted, UTF-8, one final newline."""
    _check_finite(doc)
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------- building
def _iso(t: dt.datetime) -> str:
    return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_iso(text: Any, what: str) -> dt.datetime:
    if not isinstance(text, str):
        raise PassportError(f"{what} is missing")
    try:
        return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        raise PassportError(f"{what} {text!r} is not YYYY-MM-DDTHH:MM:SSZ") from None


def _weakest(report: Report) -> dict[str, Any]:
    """The defined HB-Eval metric furthest from its maximum (value / max; TI's max is 5)."""
    metrics = section(report, "metrics") or {}
    floors = section(report, "thresholds") or {}
    best: tuple[float, str, float] | None = None
    for name in LIVE_METRICS:
        value = metrics.get(name)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        of_max = float(value) / (TI_MAX if name == TI else 1.0)
        if best is None or of_max < best[0]:
            best = (of_max, name, float(value))
    if best is None:
        return {
            "metric": None,
            "value": None,
            "of_maximum": None,
            "floor": None,
            "undefined": {"metric": NOT_MEASURED},
        }
    return {
        "metric": best[1],
        "value": best[2],
        "of_maximum": best[0],
        "floor": floors.get(best[1]),
        "undefined": {},
    }


def build_passport(
    report: Report,
    *,
    days: int = DEFAULT_DAYS,
    now: dt.datetime | None = None,
    provenance: str | None = None,
) -> dict[str, Any]:
    """An unsigned ``hbeval-passport/1`` document from an ``hbeval-report/1`` dict.

    ``days`` (1–365, default 90) sets ``expires_at``; ``now`` fixes ``issued_at`` (tests).
    ``provenance`` is the store the report was read from or checked against (its binding
    digest equal to the stored report's); None records that provenance was not checked.
    """
    # Long because: most of the ~90 lines are the passport document itself, field by field, in its
    # signed order: kept as one literal so the layout reads as the file does.
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise PassportError(f"--days must be a whole number from 1 to {MAX_DAYS}, got {days!r}")
    if report.format != "hbeval-report/1":
        raise PassportError(
            f"a passport is built from an hbeval-report/1 report, got format {report.format!r}"
        )
    from ..scoring._recheck import describe, report_discrepancies

    found = report_discrepancies(report)
    if found:
        raise PassportError(
            f"the report's figures do not follow from its own trials ({describe(found)}): it was "
            "changed after hbeval built it, and a passport would sign the change; sign the report "
            "as hbeval wrote it (`hbeval passport sign RUN_ID` reads it from the store)"
        )
    issued = (now or dt.datetime.now(dt.timezone.utc)).replace(microsecond=0)
    expires = issued + dt.timedelta(days=days)
    run = section(report, "run") or {}
    rate = section(report, "pass_rate") or {}
    gap = section(report, "reliability_gap") or {}
    evidence = section(report, "evidence") or {}
    versions = dict(section(report, "versions") or {})
    versions["passport"] = PASSPORT_FORMAT
    versions["hbeval"] = __version__
    fps = dict(section(report, "fingerprints") or {})
    issued_at = _iso(issued)
    # The passport states whatever the one verdict is, INSUFFICIENT_DATA included.
    decision = decide_verdict(report)
    scores = scores_of(report)
    doc: dict[str, Any] = {
        "format": PASSPORT_FORMAT,
        "passport_id": fingerprint(
            {"run_id": report.run_id, "measurement": fps.get("measurement"), "at": issued_at}
        ),
        "issued_at": issued_at,
        "expires_at": _iso(expires),
        "validity_days": days,
        "issuer": {"name": "hbeval", "version": __version__, "statement": STATEMENT},
        "agent": {"agent_id": run.get("agent_id")},
        "run": {
            "run_id": report.run_id,
            "battery": run.get("battery"),
            "seed": run.get("seed"),
            "trials": run.get("trials"),
            "trial_count": run.get("trial_count"),
            "scored_trial_count": run.get("scored_trial_count"),
            "methodology": run.get("methodology"),
            "verification": report.verification,
        },
        "verdict": decision.verdict,
        "verdict_reasons": list(decision.reasons),
        "verdict_fix": decision.fix,
        "verdict_rule": VERDICT_VERSION,
        "unmeasured_metrics": list(decision.unmeasured),
        "metrics": {m: (section(report, "metrics") or {}).get(m) for m in LIVE_METRICS},
        "undefined": dict(section(report, "undefined") or {}),
        "defined_counts": dict(section(report, "defined_counts") or {}),
        "thresholds": dict(section(report, "thresholds") or {}),
        "weakest": _weakest(report),
        "pass_rate": {
            "rate": rate.get("rate"),
            "interval": rate.get("interval"),
            "passed": rate.get("passed"),
            "n": rate.get("n"),
            "undefined": dict(rate.get("undefined") or {}),
        },
        "reliability_gap": {
            k: gap.get(k)
            for k in ("c_nom", "r_op", "gap", "interval", "significant", "confidence", "undefined")
        },
        "intervals": _clustered_intervals(report),
        "capability": scores.capability.model_dump(mode="json"),
        "security_gate": scores.security_gate.model_dump(mode="json"),
        "evidence": {
            k: evidence.get(k)
            for k in (
                "level",
                "completeness",
                "completeness_rule",
                "claims_reconciled",
                "claims_unsupported",
                "undefined",
            )
        },
        "fingerprints": fps,
        "manifest_hash": report.manifest_hash,
        "metric_versions": dict(section(report, "metric_versions") or {}),
        "versions": versions,
        "provenance": _provenance(report, provenance),
    }
    _check_finite(doc)
    return doc


def _provenance(report: Report, store: str | None) -> dict[str, Any]:
    from ..scoring._binding import report_digest

    return {
        "checked": store is not None,
        "store": store,
        "report_digest": report_digest(report.to_dict()),
    }


def provenance_note(doc: Mapping[str, Any]) -> str:
    """What a passport says of where its report came from, in words (``passport verify``)."""
    given = doc.get("provenance")
    if not isinstance(given, Mapping):
        return "provenance: not recorded (a passport from before hbeval recorded it)"
    if given.get("checked") is True:
        return f"provenance: the report was checked against the store {given.get('store')}"
    return (
        "provenance: NOT CHECKED: the report was signed from a file without its store "
        "(sign with --db to check it); only its figures were checked against its trials"
    )


def sign_passport(doc: Mapping[str, Any], private_key: Ed25519PrivateKey) -> dict[str, Any]:
    """Sign a passport: add ``signer`` (algorithm, public key, key_id) and ``signature``.

    ``signer`` is inside the signed content; ``signature`` = ``{"value": base64 of the 64-byte
    Ed25519 signature over canonical_bytes, "content_sha256": hex SHA-256 of those bytes}``.
    """
    raw = public_key_raw(private_key)
    body = {k: v for k, v in doc.items() if k != "signature"}
    body["signer"] = {
        "algorithm": SIGNATURE_ALGORITHM,
        "public_key": base64.b64encode(raw).decode("ascii"),
        "key_id": key_id(raw),
    }
    content = canonical_bytes(body)
    signature = private_key.sign(content)
    return {
        **body,
        "signature": {
            "value": base64.b64encode(signature).decode("ascii"),
            "content_sha256": hashlib.sha256(content).hexdigest(),
        },
    }


# --------------------------------------------------------------------------- verifying
@dataclass(frozen=True)
class VerifyResult:
    """What verifying a passport found: ``valid`` only when ``problems`` is empty.

    ``authenticity`` is ``"pinned"`` when a trusted key was given and matched, ``"mismatch"``
    when it did not, and ``"not_checked"`` without one (integrity only).
    """

    valid: bool
    problems: tuple[str, ...]
    key_id: str | None = None
    agent_id: str | None = None
    verdict: str | None = None
    issued_at: str | None = None
    expires_at: str | None = None
    authenticity: str = "not_checked"
    notes: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (``passport verify --json``)."""
        return {
            "valid": self.valid,
            "problems": list(self.problems),
            "key_id": self.key_id,
            "agent_id": self.agent_id,
            "verdict": self.verdict,
            "issued_at": self.issued_at,
            "expires_at": self.expires_at,
            "authenticity": self.authenticity,
            "notes": list(self.notes),
        }


def _first_difference(a: bytes, b: bytes) -> tuple[int, int]:
    """Byte offset and 1-based line of the first difference between two byte strings."""
    n = min(len(a), len(b))
    i = next((j for j in range(n) if a[j] != b[j]), n)
    return i, a.count(b"\n", 0, i) + 1


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _parse_passport(raw: bytes) -> dict[str, Any] | VerifyResult:
    """The passport's JSON object, or the failed result saying why it is not one."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return VerifyResult(
            False,
            (f"not UTF-8 text at byte {exc.start}: the file was damaged or edited after signing",),
        )
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        return VerifyResult(
            False,
            (
                f"duplicate key {exc.args[0]!r}: a passport's JSON objects never repeat a key "
                "(readers would disagree on which value counts)",
            ),
        )
    except ValueError as exc:
        return VerifyResult(
            False,
            (f"not valid JSON ({exc}): the file was damaged or edited after signing",),
        )
    if not isinstance(doc, dict):
        return VerifyResult(False, ("not a passport: the file holds no JSON object",))
    fmt = doc.get("format")
    if fmt != PASSPORT_FORMAT:
        return VerifyResult(False, (f"not an {PASSPORT_FORMAT} document (format {fmt!r})",))
    return doc


def _signature_problems(doc: Mapping[str, Any]) -> tuple[list[str], bytes | None]:
    """What is wrong with the signer and signature blocks, and the embedded public key."""
    problems: list[str] = []
    signer = doc.get("signer")
    signature = doc.get("signature")
    if not isinstance(signer, dict) or not isinstance(signature, dict):
        return ["unsigned: the passport has no signer or signature block"], None
    claimed_id = signer.get("key_id")
    public_raw: bytes | None = None
    if signer.get("algorithm") != SIGNATURE_ALGORITHM:
        problems.append(f"unsupported signature algorithm {signer.get('algorithm')!r}")
    try:
        public_raw = _b64decode_exact(signer.get("public_key"), 32, "signer.public_key")
    except PassportError as exc:
        problems.append(str(exc))
    if public_raw is not None and claimed_id != key_id(public_raw):
        problems.append(
            f"signer.key_id {claimed_id!r} does not match the embedded public key "
            f"(its key_id is {key_id(public_raw)})"
        )
    sig: bytes | None = None
    try:
        sig = _b64decode_exact(signature.get("value"), 64, "signature.value")
    except PassportError as exc:
        problems.append(str(exc))
    extra = sorted(set(signature) - {"value", "content_sha256"})
    if extra:
        problems.append(f"unexpected field(s) in signature: {', '.join(extra)}")
    try:
        content = canonical_bytes(doc)
    except PassportError as exc:
        problems.append(str(exc))
        return problems, public_raw
    digest = hashlib.sha256(content).hexdigest()
    if signature.get("content_sha256") != digest:
        problems.append(
            "content changed after signing: its SHA-256 is "
            f"{digest[:16]}..., the passport recorded "
            f"{str(signature.get('content_sha256'))[:16]}..."
        )
    if public_raw is not None and sig is not None:
        from cryptography.exceptions import InvalidSignature

        try:
            _ed25519().Ed25519PublicKey.from_public_bytes(public_raw).verify(sig, content)
        except InvalidSignature:
            problems.append(
                "signature does not match the content: the passport was changed after "
                "signing (or its signature belongs to another document)"
            )
    return problems, public_raw


def _time_problems(doc: Mapping[str, Any], now: dt.datetime | None) -> list[str]:
    """Expired, issued in the future, or a timestamp that does not parse."""
    problems: list[str] = []
    issued_s, expires_s = doc.get("issued_at"), doc.get("expires_at")
    moment = (now or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc)
    try:
        expires = _parse_iso(expires_s, "expires_at")
        if moment > expires:
            days = (moment - expires).days
            problems.append(f"expired on {expires_s} ({days} day(s) ago)")
    except PassportError as exc:
        problems.append(str(exc))
    try:
        issued = _parse_iso(issued_s, "issued_at")
        if issued - moment > CLOCK_SKEW:
            problems.append(f"issued_at {issued_s} lies in the future")
    except PassportError as exc:
        problems.append(str(exc))
    return problems


def _authenticity(
    public_raw: bytes | None,
    claimed_id: Any,
    trusted_key: bytes | None,
    trusted_keys: Sequence[TrustedKey],
) -> tuple[str, list[str], list[str]]:
    """``(authenticity, problems, notes)``: pinned, mismatch or not_checked, and why."""
    if trusted_key is not None:
        if public_raw is not None and public_raw == trusted_key:
            return "pinned", [], []
        return (
            "mismatch",
            [
                f"signed by key {claimed_id}, not by the trusted key {key_id(trusted_key)}: "
                "authenticity not established"
            ],
            [],
        )
    if trusted_keys:
        match = next((k for k in trusted_keys if k.public_raw == public_raw), None)
        if match is not None:
            return "pinned", [], [f"signer is trusted key {match.key_id} {match.label}".rstrip()]
        return (
            "mismatch",
            [
                f"signed by key {claimed_id}, which is not among the {len(trusted_keys)} trusted "
                "key(s): authenticity not established"
            ],
            [],
        )
    return (
        "not_checked",
        [],
        [
            "integrity checked against the embedded key only: anyone can re-sign a passport "
            "with their own key; pass --key PUBKEY (or a key id from the trusted-keys file) to "
            "check who signed it"
        ],
    )


def verify_passport(
    data: bytes | str,
    *,
    trusted_key: bytes | None = None,
    trusted_keys: Sequence[TrustedKey] = (),
    now: dt.datetime | None = None,
    strict_layout: bool = True,
) -> VerifyResult:
    """Verify a passport file's bytes: integrity, layout, content, expiry and signer.

    Every problem found is listed in words; ``valid`` is True only with none. ``trusted_key``
    (raw 32 bytes) pins who must have signed it; without it, ``trusted_keys`` (the trusted-keys
    file) lists who may have. ``strict_layout=False`` accepts a re-formatted file whose signed
    content is intact. A JSON object with a duplicate key is refused (two readers could see two
    different passports), and the signed content must fit the passport format.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    doc = _parse_passport(raw)
    if isinstance(doc, VerifyResult):
        return doc
    signer, agent = doc.get("signer"), doc.get("agent")
    agent_id = agent.get("agent_id") if isinstance(agent, dict) else None
    claimed_id = signer.get("key_id") if isinstance(signer, dict) else None
    problems, public_raw = _signature_problems(doc)
    if not problems:
        problems.extend(passport_content_problems(doc))
    if strict_layout and not problems:
        expected = render_passport(doc).encode("utf-8")
        if expected != raw:
            at, line = _first_difference(raw, expected)
            problems.append(
                f"the file differs at byte {at} (line {line}) from the layout hbeval writes: "
                "it was edited after signing. Its signed content is intact; pass --any-layout "
                "to accept a re-formatted file"
            )
    problems.extend(_time_problems(doc, now))
    authenticity, trust_problems, notes = _authenticity(
        public_raw, claimed_id, trusted_key, trusted_keys
    )
    problems.extend(trust_problems)
    notes = [*notes, provenance_note(doc)]
    issued_s, expires_s = doc.get("issued_at"), doc.get("expires_at")
    return VerifyResult(
        not problems,
        tuple(problems),
        claimed_id if isinstance(claimed_id, str) else None,
        agent_id if isinstance(agent_id, str) else None,
        doc.get("verdict") if isinstance(doc.get("verdict"), str) else None,
        issued_s if isinstance(issued_s, str) else None,
        expires_s if isinstance(expires_s, str) else None,
        authenticity,
        tuple(notes),
    )


def _clustered_intervals(report: Report) -> dict[str, Any]:
    """Each rate's 95% interval clustered by scenario, with effective n and design effect."""
    from ..scoring._uncertainty import rate_interval

    out: dict[str, Any] = {"method": "cluster_wilson", "cluster_by": "scenario"}
    for name in ("pass_rate", "frr", "irs", "c_nom", "r_op", "attack_success"):
        shown = rate_interval(report, name)
        out[name] = (
            None
            if shown is None
            else {
                "interval": list(shown.interval),
                "interval_independent": None
                if shown.independent is None
                else list(shown.independent),
                "n": shown.n,
                "clusters": shown.clusters,
                "effective_n": shown.effective_n,
                "design_effect": shown.design_effect,
            }
        )
    return out
