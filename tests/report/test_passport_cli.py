"""``hbeval passport keygen|sign|verify``: key files, signing from --key or the environment, and
verification exit codes (0 valid, 1 tampered/expired/other signer, 2 bad input)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tests.report.test_report_fixtures import demo, hb, write_json


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write_json(tmp_path / "hbeval-report.json", demo().reports)
    return tmp_path


def test_keygen_sign_verify_round_trip(project: Path) -> None:
    keygen = hb("passport", "keygen", "--json")
    assert keygen.exit_code == 0, keygen.stderr
    info = json.loads(keygen.stdout)
    key = project / ".hbeval" / "passport-key.pem"
    assert Path(info["private_key"]) == Path(".hbeval/passport-key.pem")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert len(info["key_id"]) == 16

    again = hb("passport", "keygen")
    assert again.exit_code == 2 and "refusing to overwrite" in again.stderr

    signed = hb("passport", "sign", "hbeval-report.json#naive", "--key", str(key), "--days", "30")
    assert signed.exit_code == 0, signed.stderr
    assert "passport for agent demo-naive written to hbeval-passport.json" in signed.stdout
    doc = json.loads((project / "hbeval-passport.json").read_text())
    assert doc["validity_days"] == 30 and doc["signer"]["key_id"] == info["key_id"]

    # Integrity alone is not authenticity: anyone can re-sign with their own key -> exit 3.
    ok = hb("passport", "verify", "hbeval-passport.json")
    assert ok.exit_code == 3, ok.stderr
    assert ok.stdout.startswith("VALID passport for agent demo-naive (verdict UNSAFE)")
    assert "authenticity: NOT CHECKED" in ok.stdout
    assert "pass --key PUBKEY" in ok.stdout
    assert hb("passport", "verify", "hbeval-passport.json", "--no-key-check").exit_code == 0

    pinned = hb("passport", "verify", "hbeval-passport.json", "--key", info["public_key"], "--json")
    assert pinned.exit_code == 0
    assert json.loads(pinned.stdout)["authenticity"] == "pinned"


def test_tampered_passport_fails_with_a_clear_message(project: Path) -> None:
    assert hb("passport", "keygen").exit_code == 0
    key = str(project / ".hbeval" / "passport-key.pem")
    assert hb("passport", "sign", "hbeval-report.json#naive", "--key", key).exit_code == 0
    path = project / "hbeval-passport.json"
    data = bytearray(path.read_bytes())
    at = data.index(b'"UNSAFE"') + 1
    data[at] = ord("X")  # one changed byte: "XNSAFE"
    tampered = project / "tampered.json"
    tampered.write_bytes(bytes(data))
    proc = hb("passport", "verify", str(tampered))
    assert proc.exit_code == 1
    assert "INVALID passport" in proc.stderr
    assert "content changed after signing" in proc.stderr
    as_json = hb("passport", "verify", str(tampered), "--json")
    assert as_json.exit_code == 1 and json.loads(as_json.stdout)["valid"] is False


def test_verify_with_another_trusted_key_fails(project: Path) -> None:
    assert hb("passport", "keygen").exit_code == 0
    assert hb("passport", "keygen", "--out", "other.pem").exit_code == 0
    key = str(project / ".hbeval" / "passport-key.pem")
    assert hb("passport", "sign", "hbeval-report.json#careful", "--key", key).exit_code == 0
    proc = hb("passport", "verify", "hbeval-passport.json", "--key", "other.pem.pub")
    assert proc.exit_code == 1
    assert "authenticity not established" in proc.stderr


def test_sign_from_the_environment_and_bad_input(project: Path) -> None:
    assert hb("passport", "keygen", "--out", "k.pem").exit_code == 0
    pem = (project / "k.pem").read_text()
    by_env = hb(
        "passport", "sign", "hbeval-report.json#careful", "--out", "p.json",
        env={"HBEVAL_PASSPORT_KEY": pem},
    )  # fmt: skip
    assert by_env.exit_code == 0, by_env.stderr
    assert hb("passport", "verify", "p.json", "--no-key-check").exit_code == 0

    no_key = hb("passport", "sign", "hbeval-report.json#careful", env={"HBEVAL_PASSPORT_KEY": ""})
    assert no_key.exit_code == 2 and "no signing key" in no_key.stderr
    ambiguous = hb("passport", "sign", "hbeval-report.json", "--key", "k.pem")
    assert ambiguous.exit_code == 2 and "#LABEL" in ambiguous.stderr
    days = hb("passport", "sign", "hbeval-report.json#naive", "--key", "k.pem", "--days", "400")
    assert days.exit_code == 2 and "1 to 365" in days.stderr
    assert hb("passport", "verify", "missing.json").exit_code == 2
    bad_key = hb("passport", "verify", "p.json", "--key", "not-a-key")
    assert bad_key.exit_code == 2 and "neither a readable key file" in bad_key.stderr
