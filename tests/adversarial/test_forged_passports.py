"""Finding 12 of the adversarial pass: ``passport verify`` without ``--key`` printed VALID (exit
0) for a passport re-signed with a forger's own key and better metrics; one could not pin by key
id; duplicate JSON keys passed with ``--any-layout``; signed content was not schema-checked."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from hbeval.report.passport import (
    build_passport,
    generate_private_key,
    key_id,
    public_key_raw,
    render_passport,
    sign_passport,
)
from tests.report.test_report_fixtures import demo, hb


@pytest.fixture
def signed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("HBEVAL_TRUSTED_KEYS", str(tmp_path / "no-such-file"))
    owner, forger = generate_private_key(), generate_private_key()
    genuine = sign_passport(build_passport(demo().naive), owner)
    (tmp_path / "genuine.json").write_text(render_passport(genuine), encoding="utf-8")
    # The forger takes the genuine passport, improves it, and signs it with their own key.
    body = {k: v for k, v in genuine.items() if k not in ("signer", "signature")}
    body["metrics"] = {**body["metrics"], "frr": 1.0, "irs": 1.0}
    body["verdict"] = "SAFE"
    (tmp_path / "forged.json").write_text(
        render_passport(sign_passport(body, forger)), encoding="utf-8"
    )
    owner_b64 = base64.b64encode(public_key_raw(owner)).decode()
    return {"dir": tmp_path, "owner_b64": owner_b64, "owner_id": key_id(public_key_raw(owner))}


def test_resigned_passport_is_not_reported_valid_without_a_key(signed: dict[str, Any]) -> None:
    forged = str(signed["dir"] / "forged.json")
    unchecked = hb("passport", "verify", forged)
    assert unchecked.exit_code == 3 and "NOT CHECKED" in unchecked.stdout
    pinned = hb("passport", "verify", forged, "--key", signed["owner_b64"])
    assert pinned.exit_code == 1 and "not by the trusted key" in pinned.stderr


def test_pin_by_key_id_from_a_trusted_keys_file(signed: dict[str, Any]) -> None:
    d: Path = signed["dir"]
    keys = d / "trusted_keys"
    keys.write_text(f"# release signers\n{signed['owner_b64']} release-bot\n", encoding="utf-8")
    by_id = hb(
        "passport", "verify", str(d / "genuine.json"), "--trusted-keys", str(keys),
        "--key", signed["owner_id"],
    )  # fmt: skip
    assert by_id.exit_code == 0, by_id.stderr
    assert "pinned to a trusted key" in by_id.stdout
    # the file alone pins: the genuine passport passes, the forged one is refused
    assert (
        hb("passport", "verify", str(d / "genuine.json"), "--trusted-keys", str(keys)).exit_code
        == 0
    )
    forged = hb("passport", "verify", str(d / "forged.json"), "--trusted-keys", str(keys))
    assert forged.exit_code == 1 and "not among the 1 trusted key(s)" in forged.stderr
    unknown = hb(
        "passport", "verify", str(d / "genuine.json"), "--trusted-keys", str(keys),
        "--key", "0123456789abcdef",
    )  # fmt: skip
    assert unknown.exit_code == 2 and "no key with that id" in unknown.stderr


def test_duplicate_keys_are_refused_even_with_any_layout(signed: dict[str, Any]) -> None:
    d: Path = signed["dir"]
    text = (d / "genuine.json").read_text(encoding="utf-8")
    # A second "verdict" member after the signed one: some readers take the last value.
    doubled = text.replace('"verdict": "UNSAFE",', '"verdict": "UNSAFE",\n  "verdict": "SAFE",', 1)
    assert doubled != text
    (d / "dup.json").write_text(doubled, encoding="utf-8")
    proc = hb("passport", "verify", str(d / "dup.json"), "--any-layout", "--no-key-check")
    assert proc.exit_code == 1 and "duplicate key 'verdict'" in proc.stderr


def test_signed_content_is_checked_against_the_format(signed: dict[str, Any]) -> None:
    d: Path = signed["dir"]
    genuine = json.loads((d / "genuine.json").read_text(encoding="utf-8"))
    body = {k: v for k, v in genuine.items() if k not in ("signer", "signature")}
    for field, value in (("frr", -3), ("pei", "0.9")):
        bad = {**body, "metrics": {**body["metrics"], field: value}}
        (d / "bad.json").write_text(
            render_passport(sign_passport(bad, generate_private_key())), encoding="utf-8"
        )
        proc = hb("passport", "verify", str(d / "bad.json"), "--no-key-check")
        assert proc.exit_code == 1, proc.stdout
        assert f"signed content field 'metrics.{field}'" in proc.stderr
