"""The HTML report in a real browser: headless Chromium renders every chart, draws no undefined
value (each shows its reason as visible text) and leaves a screenshot in ./test-output/.

Skipped, with the reason, when /usr/bin/chromium is absent; CI installs Debian's chromium.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hbeval.report.html import render_html, store_traces
from hbeval.store import open_store
from tests.report.test_report_fixtures import demo

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="headless Chromium is not installed at /usr/bin/chromium "
    "(CI installs it: apt-get install -y chromium)",
)
OUTPUT = Path(os.environ.get("HBEVAL_TEST_OUTPUT", "test-output"))
CHARTS = {"metrics", "fault_types", "gap_by_domain", "severity", "pass_hat_k", "timeline"}

PROBE_JS = """
(() => {
  const shapes = 'rect,circle,polyline,line,path,polygon,ellipse';
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.width, r.height]; };
  const out = {charts: [], undefined: [], bars: [], points: 0};
  for (const svg of document.querySelectorAll('svg.chart')) {
    const [w, h] = box(svg);
    out.charts.push({chart: svg.dataset.chart, w, h, drawn: svg.querySelectorAll(shapes).length});
  }
  for (const el of document.querySelectorAll('[data-undefined="true"]')) {
    const [w, h] = box(el);
    out.undefined.push({
      metric: el.dataset.metric || null, reason: el.dataset.reason || null,
      text: el.textContent, w, h,
      shapes: el.matches(shapes) ? 1 : el.querySelectorAll(shapes).length,
      hidden: getComputedStyle(el).visibility !== 'visible' || getComputedStyle(el).display === 'none',
    });
  }
  for (const row of document.querySelectorAll('svg g.row[data-undefined="false"]')) {
    const bar = row.querySelector('rect.bar');
    const [w, h] = box(bar);
    out.bars.push({metric: row.dataset.metric, group: row.dataset.group || null,
                   value: parseFloat(row.dataset.value), w, h});
  }
  out.points = document.querySelectorAll('svg circle[data-undefined="false"]').length;
  document.getElementById('hbeval-probe').textContent = JSON.stringify(out);
})();
"""
CSP_META = re.compile(r'(<meta http-equiv="Content-Security-Policy" content=")([^"]*)(">)')


def with_script(page: str, script: str) -> str:
    """``page`` with an inline ``script`` before ``</body>``, allowed by its own sha256 added to
    the page's Content-Security-Policy (which otherwise lets no script run); the rest of the
    policy stays in force."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    page, found = CSP_META.subn(
        lambda m: f"{m.group(1)}{m.group(2)}; script-src &#x27;sha256-{digest}&#x27;{m.group(3)}",
        page,
    )
    assert found == 1, "the page has no Content-Security-Policy meta tag"
    return page.replace("</body>", f'<pre id="hbeval-probe"></pre><script>{script}</script></body>')


def chromium(*args: str, user_dir: Path) -> subprocess.CompletedProcess[str]:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={user_dir}",
    ]
    return subprocess.run(
        [str(CHROMIUM), *flags, *args], capture_output=True, text=True, timeout=90
    )


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = demo()
    store = open_store(run.db)
    try:
        page = render_html(run.reports, traces=store_traces(store))
    finally:
        store.close()
    path = tmp_path_factory.mktemp("html") / "hbeval-report.html"
    path.write_text(page, encoding="utf-8")
    return path


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_screenshot_is_kept_in_test_output(page_file: Path, tmp_path: Path) -> None:
    OUTPUT.mkdir(parents=True, exist_ok=True)
    shot = (OUTPUT / "hbeval-report.png").resolve()
    shot.unlink(missing_ok=True)
    proc = chromium(
        f"--screenshot={shot}",
        "--window-size=1100,7000",
        page_file.as_uri(),
        user_dir=tmp_path / "profile",
    )
    assert shot.is_file(), proc.stderr[-2000:]
    data = shot.read_bytes()
    assert png_size(data) == (1100, 7000)
    assert len(data) > 100_000  # a page of charts and text, not a blank canvas


def probe(page_file: Path, tmp_path: Path) -> dict[str, Any]:
    probed = tmp_path / "probed.html"
    probed.write_text(
        with_script(page_file.read_text(encoding="utf-8"), PROBE_JS),
        encoding="utf-8",
    )
    proc = chromium(
        "--dump-dom", "--window-size=1100,900", probed.as_uri(), user_dir=tmp_path / "profile"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = re.search(r'<pre id="hbeval-probe">(.*?)</pre>', proc.stdout, re.S)
    assert found and found.group(1), "the probe script did not run"
    result: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return result


def test_charts_render_and_undefined_is_never_drawn(page_file: Path, tmp_path: Path) -> None:
    result = probe(page_file, tmp_path)

    kinds = {c["chart"] for c in result["charts"]}
    assert kinds == CHARTS
    for chart in result["charts"]:
        assert chart["w"] > 300 and chart["h"] > 30, chart
        assert chart["drawn"] > 0, chart  # every chart draws axes or marks
    assert result["points"] > 20  # timeline and pass^k points were laid out

    undefined = result["undefined"]
    assert undefined
    for el in undefined:
        assert el["shapes"] == 0, el  # no bar, point or line for an undefined value
        assert not el["hidden"] and el["w"] > 0 and el["h"] > 0, el  # the words are visible
        if el["reason"]:
            assert f"undefined ({el['reason']})" in el["text"], el
    csi = [e for e in undefined if e["metric"] == "csi" and e["reason"] == "single_run"]
    assert len(csi) >= 2, "CSI is undefined (single_run) for both agents and must say so"

    bars = result["bars"]
    assert len(bars) >= 2 * 7
    for bar in bars:
        assert bar["h"] > 0, bar
        if bar["value"] > 0:
            assert bar["w"] > 0, bar  # a defined value is drawn
    frr = [b for b in bars if b["metric"] == "frr"]
    careful, naive = frr
    # the naive agent's FRR (0.33) is drawn about a third as long as the careful one's (0.95)
    assert naive["w"] / careful["w"] == pytest.approx(
        demo().naive.metrics.frr / demo().careful.metrics.frr, rel=0.02
    )
