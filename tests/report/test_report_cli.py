"""``hbeval report`` (file, FILE#LABEL or run id; --html, --out, --json) and the demo's closing
step ``finish_demo`` (HTML page, signed passport, key under ./.hbeval/)."""

from __future__ import annotations

import datetime as dt
import json
import stat
from pathlib import Path

from hbeval.cli._demo import finish_demo
from hbeval.report.passport import verify_passport
from tests.report.test_report_fixtures import demo, hb, write_json


def test_report_from_a_file_prints_the_summary(tmp_path: Path) -> None:
    path = write_json(tmp_path / "naive.json", demo().naive)
    proc = hb("report", str(path), "--db", str(demo().db))
    assert proc.exit_code == 0, proc.stderr
    assert "verdict UNSAFE" in proc.stdout
    assert "undefined (single_run)" in proc.stdout
    assert proc.stdout.rstrip().endswith("capability 49, security gate not passed")


def test_report_by_run_id_writes_html_with_traces_and_json(tmp_path: Path) -> None:
    run = demo()
    page = tmp_path / "out" / "report.html"
    out = tmp_path / "report.json"
    proc = hb(
        "report",
        str(run.naive.run_id),
        "--db",
        str(run.db),
        "--html",
        str(page),
        "--out",
        str(out),
        "--json",
    )
    assert proc.exit_code == 0, proc.stderr
    assert f"HTML report written to {page}" in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["html"] == str(page)
    view = doc["reports"]["demo-naive"]
    assert view["scores"]["headline"] == "capability 49, security gate not passed"
    assert view["report"]["run_id"] == run.naive.run_id
    assert json.loads(out.read_text())["run_id"] == run.naive.run_id
    html = page.read_text()
    assert 'data-chart="timeline"' in html  # events came from the store
    assert "FORBIDDEN TOOL" in html  # the injected transfer shows in the trace


def test_report_of_a_multi_report_file_shows_them_side_by_side(tmp_path: Path) -> None:
    both = write_json(tmp_path / "hbeval-report.json", demo().reports)
    page = tmp_path / "both.html"
    proc = hb("report", str(both), "--html", str(page), "--db", str(demo().db))
    assert proc.exit_code == 0, proc.stderr
    html = page.read_text()
    assert 'id="side-by-side"' in html
    assert 'data-report="careful"' in html and 'data-report="naive"' in html
    one = hb("report", f"{both}#careful", "--json")
    assert list(json.loads(one.stdout)["reports"]) == ["careful"]


def test_report_bad_input_exits_2_and_creates_no_store(tmp_path: Path) -> None:
    missing_db = tmp_path / "nowhere.db"
    proc = hb("report", "some-run", "--db", str(missing_db))
    assert proc.exit_code == 2
    assert "no store at" in proc.stderr
    assert not missing_db.exists()
    unknown = hb("report", "no-such-run", "--db", str(demo().db))
    assert unknown.exit_code == 2 and "no report for run 'no-such-run'" in unknown.stderr
    assert hb("report", str(tmp_path / "missing.json")).exit_code == 2
    junk = tmp_path / "junk.json"
    junk.write_text('{"hello": 1}')
    bad = hb("report", str(junk))
    assert bad.exit_code == 2 and "neither an hbeval-report/1 report" in bad.stderr
    newer = write_json(
        tmp_path / "newer.json", {**demo().naive.to_dict(), "format": "hbeval-report/9"}
    )
    refused = hb("report", str(newer))
    assert refused.exit_code == 2 and "newer hbeval" in refused.stderr
    both = write_json(tmp_path / "both.json", demo().reports)
    label = hb("report", f"{both}#reckless")
    assert label.exit_code == 2 and "no report labelled 'reckless'" in label.stderr


def test_finish_demo_writes_html_and_a_signed_passport(tmp_path: Path) -> None:
    run = demo()
    key_dir = tmp_path / ".hbeval"
    now = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)
    paths = finish_demo(run.reports, tmp_path, key_dir, db=str(run.db), now=now)
    assert paths["html"] == tmp_path / "hbeval-report.html"
    assert paths["passport"] == tmp_path / "hbeval-passport.json"
    assert paths["key"] == key_dir / "passport-key.pem"
    assert stat.S_IMODE(paths["key"].stat().st_mode) == 0o600
    assert paths["public_key"].read_text().startswith("-----BEGIN PUBLIC KEY-----")
    html = paths["html"].read_text()
    assert 'id="side-by-side"' in html and 'data-chart="timeline"' in html
    passport = json.loads(paths["passport"].read_text())
    assert passport["agent"]["agent_id"] == "demo-careful"  # the first report
    result = verify_passport(paths["passport"].read_bytes(), now=now)
    assert result.valid, result.problems
    # a second demo (issued now) reuses the key
    again = finish_demo(run.reports, tmp_path, key_dir, db=str(run.db))
    second = json.loads(again["passport"].read_text())
    assert second["signer"] == passport["signer"]
    verified = hb("passport", "verify", str(again["passport"]), "--key", str(paths["public_key"]))
    assert verified.exit_code == 0, verified.stderr
    assert "authenticity: pinned to a trusted key" in verified.stdout
