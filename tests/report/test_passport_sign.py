"""Passports (hbeval-passport/1): the canonical form and its fixed test vector, every changed byte
failing verification, expiry, pinned keys, key files and the environment variable."""

from __future__ import annotations

import base64
import copy
import datetime as dt
import hashlib
import json
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from hbeval.report.passport import (
    ENV_PASSPORT_KEY,
    PassportError,
    build_passport,
    canonical_bytes,
    generate_private_key,
    key_id,
    load_private_key,
    load_public_key,
    public_key_raw,
    render_passport,
    sign_passport,
    verify_passport,
    write_private_key,
)
from tests.report.test_report_fixtures import demo, empty_report

UTC = dt.timezone.utc
ISSUED = dt.datetime(2026, 1, 1, tzinfo=UTC)
LATER = dt.datetime(2026, 2, 1, tzinfo=UTC)

# ---- the test vector of docs/reports.md (append-only: never edit these values) ---------------
SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
PUBLIC = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
VECTOR_DOC = {
    "format": "hbeval-passport/1",
    "agent": {"agent_id": "démo"},
    "issued_at": "2026-01-01T00:00:00Z",
    "expires_at": "2099-01-01T00:00:00Z",
    "metrics": {"pei": 0.85, "ti": 5.0, "csi": None},
    "undefined": {"csi": "single_run"},
}
# Written out by hand: keys sorted, no whitespace, "é" unescaped, 5.0 kept as 5.0, null for CSI.
VECTOR_CANONICAL = (
    '{"agent":{"agent_id":"démo"},"expires_at":"2099-01-01T00:00:00Z",'
    '"format":"hbeval-passport/1","issued_at":"2026-01-01T00:00:00Z",'
    '"metrics":{"csi":null,"pei":0.85,"ti":5.0},'
    '"signer":{"algorithm":"Ed25519","key_id":"21fe31dfa154a261",'
    '"public_key":"11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="},'
    '"undefined":{"csi":"single_run"}}'
).encode()
VECTOR_SIGNATURE = (
    "f8ad2f7edc20804da548cc8761aed3ab77d74e0a14b86ba37ce39d365b9a1967"
    "c86e7b00264dbe8864824190515ffedeec4fb571d9f06bd95914e2b7d0ddbd0d"
)
VECTOR_SHA256 = "1295b6a4ca46a9aeb30b5bf0126d36b8e8a996d6c53ac92fb6c2ff9ab5df1b93"


def vector_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(SEED)


def test_vector_key_id_and_public_key() -> None:
    raw = public_key_raw(vector_key())
    assert raw == PUBLIC  # RFC 8032 test 1
    assert key_id(raw) == hashlib.sha256(PUBLIC).hexdigest()[:16] == "21fe31dfa154a261"


def test_vector_signature_computed_independently() -> None:
    # The signature straight from the primitive over the hand-written bytes...
    independent = vector_key().sign(VECTOR_CANONICAL)
    assert independent.hex() == VECTOR_SIGNATURE
    assert hashlib.sha256(VECTOR_CANONICAL).hexdigest() == VECTOR_SHA256
    # ...is what sign_passport produces, over the same canonical bytes.
    signed = sign_passport(VECTOR_DOC, vector_key())
    assert canonical_bytes(signed) == VECTOR_CANONICAL
    assert base64.b64decode(signed["signature"]["value"]).hex() == VECTOR_SIGNATURE
    assert signed["signature"]["content_sha256"] == VECTOR_SHA256
    Ed25519PublicKey.from_public_bytes(PUBLIC).verify(
        bytes.fromhex(VECTOR_SIGNATURE), VECTOR_CANONICAL
    )
    result = verify_passport(render_passport(signed), now=LATER, trusted_key=PUBLIC)
    assert result.authenticity == "pinned"
    # The vector is a minimal document for the signature algorithm, not a whole passport: its
    # signature and layout check out, and the content check names what a passport lacks.
    assert result.problems and all(
        p.startswith("signed content field") or p.startswith("...") for p in result.problems
    ), result.problems


def test_canonical_form_refuses_nan_and_drops_only_the_signature() -> None:
    with pytest.raises(PassportError, match="NaN"):
        canonical_bytes({"format": "x", "metrics": {"pei": float("nan")}})
    with pytest.raises(PassportError, match="inf"):
        canonical_bytes({"format": "x", "v": [float("inf")]})
    assert canonical_bytes({"b": 1, "a": {"d": 1.0, "c": [1, 2]}, "signature": {"x": 1}}) == (
        b'{"a":{"c":[1,2],"d":1.0},"b":1}'
    )


@pytest.fixture(scope="module")
def signed() -> tuple[bytes, Ed25519PrivateKey]:
    key = generate_private_key()
    passport = sign_passport(build_passport(demo().naive, now=ISSUED), key)
    return render_passport(passport).encode("utf-8"), key


def test_passport_content(signed: tuple[bytes, Ed25519PrivateKey]) -> None:
    doc = json.loads(signed[0])
    naive = demo().naive
    assert doc["format"] == "hbeval-passport/1"
    assert doc["agent"] == {"agent_id": "demo-naive"}
    assert doc["issued_at"] == "2026-01-01T00:00:00Z"
    assert doc["expires_at"] == "2026-04-01T00:00:00Z"  # 90 days
    assert doc["metrics"] == naive.to_dict()["metrics"]
    assert doc["metrics"]["csi"] is None and doc["undefined"]["csi"] == "single_run"
    # IRS 0 of its maximum under scoring/3 (no faulted trial handled deliberately: the naive
    # agent's one credited case only moved on to its plan's next tool); TI is 5.0 since
    # hb-derive/2 (every call links to its reply).
    assert doc["weakest"]["metric"] == "irs"
    assert doc["weakest"]["of_maximum"] == 0.0
    assert doc["verdict"] == "UNSAFE"
    assert doc["security_gate"]["status"] == "failed"
    # 100 x (0.6 x 25/54 + 0.15 x 21/54 + 0.15 x 1/3 + 0.1 x TI 5/5 x completeness 1.0)
    assert doc["capability"]["value"] == pytest.approx(48.61, abs=0.01)
    assert doc["evidence"]["level"] == "E2"
    assert doc["fingerprints"] == naive.to_dict()["fingerprints"]
    assert doc["versions"]["passport"] == "hbeval-passport/1"
    assert "not byte-compatible with HB-Eval Gateway" in doc["issuer"]["statement"]
    assert doc["signer"]["key_id"] == key_id(public_key_raw(signed[1]))


def test_every_single_changed_byte_fails_verification(
    signed: tuple[bytes, Ed25519PrivateKey],
) -> None:
    data, _ = signed
    assert verify_passport(data, now=LATER).valid
    passing = []
    for i in range(len(data)):
        tampered = bytearray(data)
        tampered[i] ^= 0x01
        result = verify_passport(bytes(tampered), now=LATER)
        if result.valid or not result.problems:
            passing.append(i)
    assert passing == []


def test_tampered_value_says_content_changed(signed: tuple[bytes, Ed25519PrivateKey]) -> None:
    text = signed[0].decode()
    forged = text.replace('"verdict": "UNSAFE"', '"verdict": "SAFE"')
    assert forged != text
    result = verify_passport(forged, now=LATER)
    assert not result.valid
    assert any("content changed after signing" in p for p in result.problems)
    assert any("signature does not match the content" in p for p in result.problems)


def test_reformatted_file_fails_strict_layout_only(
    signed: tuple[bytes, Ed25519PrivateKey],
) -> None:
    doc = json.loads(signed[0])
    compact = json.dumps(doc, ensure_ascii=False)
    strict = verify_passport(compact, now=LATER)
    assert not strict.valid
    assert "from the layout hbeval writes" in strict.problems[0]
    assert "signed content is intact" in strict.problems[0]
    assert verify_passport(compact, now=LATER, strict_layout=False).valid


def test_resigned_by_another_key_is_caught_by_pinning(
    signed: tuple[bytes, Ed25519PrivateKey],
) -> None:
    data, key = signed
    doc = json.loads(data)
    doc["verdict"] = "SAFE"
    mallory = generate_private_key()
    forged = render_passport(sign_passport(doc, mallory))
    # Integrity alone holds: the forger signed consistently with the key they embedded...
    assert verify_passport(forged, now=LATER).valid
    # ...which is why --key pins the issuer's key.
    pinned = verify_passport(forged, now=LATER, trusted_key=public_key_raw(key))
    assert not pinned.valid and pinned.authenticity == "mismatch"
    assert "authenticity not established" in pinned.problems[0]
    genuine = verify_passport(data, now=LATER, trusted_key=public_key_raw(key))
    assert genuine.valid and genuine.authenticity == "pinned"


def test_expiry_and_future_issue(signed: tuple[bytes, Ed25519PrivateKey]) -> None:
    data, _ = signed
    expired = verify_passport(data, now=dt.datetime(2026, 4, 3, tzinfo=UTC))
    assert not expired.valid
    assert expired.problems == ("expired on 2026-04-01T00:00:00Z (2 day(s) ago)",)
    early = verify_passport(data, now=dt.datetime(2025, 12, 1, tzinfo=UTC))
    assert early.problems == ("issued_at 2026-01-01T00:00:00Z lies in the future",)


def test_build_refuses_bad_days_and_non_reports() -> None:
    with pytest.raises(PassportError, match="1 to 365"):
        build_passport(demo().naive, days=0)
    with pytest.raises(PassportError, match="1 to 365"):
        build_passport(demo().naive, days=366)
    with pytest.raises(PassportError, match="hbeval-report/1"):
        # not an hbeval-report/1 report (model_copy does not validate, as a forged object)
        build_passport(demo().naive.model_copy(update={"format": "other"}))
    empty = build_passport(empty_report(), now=ISSUED)
    assert empty["weakest"] == {
        "metric": None,
        "value": None,
        "of_maximum": None,
        "floor": None,
        "undefined": {"metric": "not_measured"},
    }
    assert set(empty["metrics"].values()) == {None}
    assert empty["capability"]["value"] is None


def test_not_a_passport() -> None:
    assert verify_passport(b"\xff\xfe").problems[0].startswith("not UTF-8 text at byte 0")
    assert verify_passport("[]").problems == ("not a passport: the file holds no JSON object",)
    assert "not an hbeval-passport/1 document" in verify_passport('{"format": "x"}').problems[0]
    unsigned = render_passport(build_passport(demo().careful, now=ISSUED))
    assert "unsigned" in verify_passport(unsigned, now=LATER).problems[0]


def test_keygen_writes_0600_and_never_overwrites(tmp_path: Path) -> None:
    path, key = write_private_key(tmp_path / "k" / "passport-key.pem")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_public_key(Path(f"{path}.pub")) == public_key_raw(key)
    assert load_public_key(path) == public_key_raw(key)  # a private key file pins its public key
    b64 = base64.b64encode(public_key_raw(key)).decode()
    assert load_public_key(b64) == public_key_raw(key)
    with pytest.raises(PassportError, match="already exists"):
        write_private_key(path)
    again, other = write_private_key(path, force=True)
    assert public_key_raw(other) != public_key_raw(key)
    assert public_key_raw(load_private_key(again)) == public_key_raw(other)


def test_default_key_path_is_under_the_working_directory_never_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(project)
    path, _ = write_private_key()
    assert path.resolve() == project / ".hbeval" / "passport-key.pem"
    monkeypatch.chdir(tmp_path)  # the working directory is the home folder
    with pytest.raises(PassportError, match="never writes keys under home unasked"):
        write_private_key()
    assert not (tmp_path / ".hbeval").exists()
    asked, _ = write_private_key(tmp_path / ".hbeval" / "key.pem")  # asked for: allowed
    assert asked.exists()


def test_signing_key_from_the_environment(tmp_path: Path) -> None:
    path, key = write_private_key(tmp_path / "key.pem")
    pem = path.read_text()
    raw = public_key_raw(key)
    assert public_key_raw(load_private_key(env={ENV_PASSPORT_KEY: pem})) == raw
    assert public_key_raw(load_private_key(env={ENV_PASSPORT_KEY: str(path)})) == raw
    with pytest.raises(PassportError, match="no signing key"):
        load_private_key(env={})
    with pytest.raises(PassportError, match="neither PEM text nor a readable file"):
        load_private_key(env={ENV_PASSPORT_KEY: str(tmp_path / "missing.pem")})
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    with pytest.raises(PassportError, match="not an unencrypted PEM private key"):
        load_private_key(bad)


def test_signing_does_not_mutate_its_input() -> None:
    doc = build_passport(demo().careful, now=ISSUED)
    before = copy.deepcopy(doc)
    sign_passport(doc, generate_private_key())
    assert doc == before
