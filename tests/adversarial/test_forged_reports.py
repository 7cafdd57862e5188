"""Finding 3 of the adversarial pass: out-of-range or mistyped metrics in a report file were
believed. ``frr=1e308`` passed ``gate``; ``frr=-3`` and ``"0.9"`` were signed into passports as
they were; ``compare`` crashed with ``TypeError``. Every metric read from a file is now checked
against its definition (rates and PEI/FRR/IRS in [0, 1], TI in [0, 5], finite numbers, never
strings) and every command refuses with exit 2 naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.report.test_report_fixtures import demo, hb, write_json

FORGERIES = [
    ("metrics", "frr", 1e308),
    ("metrics", "frr", -3),
    ("metrics", "pei", "0.9"),
    ("metrics", "ti", 5.5),
    ("metrics", "irs", True),
    ("pass_rate", "rate", 1.2),
    ("reliability_gap", "gap", -2.0),
]


def _forged(block: str, key: str, value: Any) -> dict[str, Any]:
    report = demo().careful.to_dict()  # a fresh JSON dict: the forgery would not validate
    report[block][key] = value
    return report


@pytest.mark.parametrize(("block", "key", "value"), FORGERIES)
def test_every_command_refuses_a_forged_metric_naming_the_field(
    tmp_path: Path, block: str, key: str, value: Any
) -> None:
    path = write_json(tmp_path / "forged.json", _forged(block, key, value))
    honest = write_json(tmp_path / "honest.json", demo().careful)
    keygen = hb("passport", "keygen", "--out", str(tmp_path / "k.pem"))
    assert keygen.exit_code == 0, keygen.stderr
    runs = {
        "gate": hb("gate", str(path), "--skip-security"),
        "report": hb("report", str(path)),
        "compare": hb("compare", str(honest), str(path)),
        "passport sign": hb(
            "passport",
            "sign",
            str(path),
            "--key",
            str(tmp_path / "k.pem"),
            "--out",
            str(tmp_path / "p.json"),
        ),
    }
    for command, proc in runs.items():
        assert proc.exit_code == 2, (command, proc.stdout, proc.stderr)
        assert f"{block}.{key}" in proc.stderr, (command, proc.stderr)
        assert "Traceback" not in proc.stderr + proc.stdout
    assert not (tmp_path / "p.json").exists()  # nothing was signed
