"""Finding 11 of the adversarial pass: a report's ``trials[].domain`` went raw into an SVG
``<title>`` of the HTML page and its script ran in Chromium; the page had no
Content-Security-Policy.

Here every string of a real report (values, and the keys that are labels: breakdown names,
domains, fault types) and of its stored trace events carries markup that would run if it reached
the page unescaped. The page must show it as text: no tag or attribute from the payload may exist
in the parsed document (checked with Python's HTML parser, and in headless Chromium with the
Content-Security-Policy removed so escaping alone is tested), and the page's own CSP must stop an
inline script or event handler even if one were injected.
"""

from __future__ import annotations

import copy
import html
import json
import re
from collections.abc import Callable, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from hbeval.report.html import render_html, store_traces
from hbeval.scoring import Report
from hbeval.scoring._report_model import validate_report
from hbeval.store import open_store
from hbeval_core.events import parse_event
from tests.report.test_report_chromium import CHROMIUM, chromium, with_script
from tests.report.test_report_fixtures import demo

MARK = "__pwned"
PAYLOAD = (
    f"</title></text></script><script>window.{MARK}=1</script>"
    f'"><img src=x onerror="window.{MARK}=1">'
    f'\'><svg onload="window.{MARK}=1"></svg>'
    f'<a href="javascript:window.{MARK}=1">x</a>'
    f'<iframe srcdoc="<script>parent.{MARK}=1</script>"></iframe>'
)
"""Markup for every context a string can land in: element text, SVG text and ``<title>``,
double- and single-quoted attributes, links."""

LABEL_MAPS = (
    ("breakdowns", "*"),
    ("fault_delivery", "by_fault_type"),
    ("metric_versions",),
    ("evidence", "levels"),
    ("severity", "histogram"),
)
"""Paths of dicts whose keys are labels shown on the page rather than field names."""

CSP_RE = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">')


def _is_label_map(path: tuple[str, ...]) -> bool:
    return any(
        len(path) == len(pattern) and all(p in ("*", q) for p, q in zip(pattern, path, strict=True))
        for pattern in LABEL_MAPS
    )


def poison(value: Any, path: tuple[str, ...] = (), skip: frozenset[str] = frozenset()) -> Any:
    """``value`` with the payload in front of every string (and every label key)."""
    if isinstance(value, str):
        return PAYLOAD + value
    if isinstance(value, dict):
        relabel = _is_label_map(path)
        return {
            (PAYLOAD + k if relabel else k): (v if k in skip else poison(v, (*path, str(k)), skip))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [poison(v, (*path, "*"), skip) for v in value]
    return value


def _restore(poisoned: Any, original: Any, loc: Sequence[Any]) -> bool:
    """Put the original value back at ``loc`` (a pydantic error location); False if not found."""
    if not loc:
        return False
    head, rest = loc[0], loc[1:]
    if isinstance(poisoned, dict) and head in poisoned and isinstance(original, dict):
        if not rest:
            poisoned[head] = copy.deepcopy(original.get(head))
            return True
        return _restore(poisoned[head], original.get(head), rest)
    if isinstance(poisoned, list) and isinstance(head, int) and head < len(poisoned):
        if not rest:
            poisoned[head] = copy.deepcopy(original[head])
            return True
        return _restore(poisoned[head], original[head], rest)
    return False


def poison_valid(original: dict[str, Any], validate: Callable[[Any], Any]) -> dict[str, Any]:
    """Poisoned like ``poison`` but still accepted by ``validate``: enum/Literal fields the model
    checks keep their original value (only those)."""
    poisoned: dict[str, Any] = poison(copy.deepcopy(original), skip=frozenset({"kind"}))
    for _ in range(500):
        try:
            validate(poisoned)
        except ValidationError as exc:
            # a tagged union puts the tag (the event kind) in front of the field's location
            restored = [
                _restore(poisoned, original, e["loc"]) or _restore(poisoned, original, e["loc"][1:])
                for e in exc.errors()
            ]
            assert any(restored), exc
            continue
        return poisoned
    raise AssertionError("could not make a poisoned copy the model accepts")


def poisoned_reports() -> dict[str, Report]:
    run = demo()
    # render_html takes typed Reports: both are poisoned wherever the model takes a string
    raw = poison_valid(run.careful.to_dict(), Report.model_validate)
    valid = poison_valid(run.naive.to_dict(), Report.model_validate)
    assert raw["run_id"].startswith(PAYLOAD) and valid["run_id"].startswith(PAYLOAD)
    domains = {t["domain"] for t in valid["trials"]}
    assert domains and all(d.startswith(PAYLOAD) for d in domains)  # the field of finding 11
    return {PAYLOAD + "careful": validate_report(raw), PAYLOAD + "naive": validate_report(valid)}


def poisoned_page() -> str:
    store = open_store(demo().db)
    try:
        clean = store_traces(store)
        seen: list[str] = []

        def traces(run_id: str, trial_key: str) -> list[Any] | None:
            events = clean(run_id.removeprefix(PAYLOAD), trial_key.removeprefix(PAYLOAD))
            if not events:
                return None
            seen.append(trial_key)
            return [
                parse_event(poison_valid(ev.model_dump(mode="json"), parse_event)) for ev in events
            ]

        page = render_html(poisoned_reports(), traces=traces, title=PAYLOAD + "title")
    finally:
        store.close()
    assert seen, "no stored trace reached the page: the traces were not exercised"
    return page


@pytest.fixture(scope="module")
def page() -> str:
    text = poisoned_page()
    # the payload did reach the page, as text
    assert html.escape(f"<script>window.{MARK}=1</script>", quote=True) in text
    return text


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


def live_markup(text: str) -> list[str]:
    """Tags and attributes in the parsed page that only a payload could have put there."""
    parser = _Tags()
    parser.feed(text)
    found = []
    for tag, attrs in parser.tags:
        if tag in ("script", "img", "iframe", "object", "embed", "base", "form", "a") and not (
            tag == "a" and all(k != "href" or (v or "").startswith("#") for k, v in attrs)
        ):
            found.append(f"<{tag} {attrs}>")
        for key, value in attrs:
            if key.startswith("on") or (value or "").lstrip().lower().startswith("javascript:"):
                found.append(f"<{tag} {key}={value!r}>")
    return found


def test_no_payload_markup_survives_in_the_html(page: str) -> None:
    assert live_markup(page) == []
    for raw in ("<script", "<img", "<iframe", "<svg onload", 'href="javascript:'):
        assert raw not in page, raw


def test_the_page_carries_a_strict_csp(page: str) -> None:
    found = CSP_RE.findall(page)
    assert len(found) == 1, "exactly one CSP meta tag"
    head = page.split("</head>", 1)[0]
    assert head.index("Content-Security-Policy") < head.index("<title>")  # before any content
    directives = (d.strip() for d in html.unescape(found[0]).split(";"))
    policy = {d.split()[0]: d.split()[1:] for d in directives if d}
    assert policy == {
        "default-src": ["'none'"],
        "style-src": ["'unsafe-inline'"],
        "img-src": ["data:"],
        "base-uri": ["'none'"],
        "form-action": ["'none'"],
    }  # the page has no script of its own, so none may run


PROBE_JS = f"""
window.addEventListener('load', () => {{
  const out = {{pwned: typeof window.{MARK} !== 'undefined', scripts: 0, handlers: [], tags: [],
               links: []}};
  for (const s of document.querySelectorAll('script')) if (!s.textContent.includes('hbeval-probe')) out.scripts++;
  for (const el of document.querySelectorAll('*')) {{
    for (const a of el.attributes) if (a.name.startsWith('on')) out.handlers.push(el.localName + ' ' + a.name);
  }}
  for (const el of document.querySelectorAll('img,iframe,object,embed,base,form,foreignObject'))
    out.tags.push(el.localName);
  for (const el of document.querySelectorAll('a[href]'))
    if (!el.getAttribute('href').startsWith('#')) out.links.push(el.getAttribute('href'));
  document.getElementById('hbeval-probe').textContent = JSON.stringify(out);
}});
"""


def with_probe(text: str, *, csp: str) -> str:
    """The page with the probe script; ``csp``: "strip" removes the page's policy (so escaping
    alone is tested), "allow" keeps it and admits only the probe, by its sha256."""
    if csp == "strip":
        text = CSP_RE.sub("", text)
        return text.replace(
            "</body>", f'<pre id="hbeval-probe"></pre><script>{PROBE_JS}</script></body>'
        )
    return with_script(text, PROBE_JS)


def run_probe(text: str, tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "probed.html"
    path.write_text(text, encoding="utf-8")
    proc = chromium(
        "--dump-dom",
        "--virtual-time-budget=2000",
        "--window-size=1100,900",
        path.as_uri(),
        user_dir=tmp_path / "profile",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = re.search(r'<pre id="hbeval-probe">(.*?)</pre>', proc.stdout, re.S)
    assert found and found.group(1), "the probe script did not run"
    result: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return result


needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="headless Chromium is not installed at /usr/bin/chromium"
)


@needs_chromium
def test_no_live_node_in_chromium_even_without_the_csp(page: str, tmp_path: Path) -> None:
    result = run_probe(with_probe(page, csp="strip"), tmp_path)
    assert result == {"pwned": False, "scripts": 0, "handlers": [], "tags": [], "links": []}


@needs_chromium
def test_the_csp_stops_injected_script_and_handlers(tmp_path: Path) -> None:
    """Defence in depth: were a payload to reach the page as markup, the policy blocks it."""
    clean = render_html({"careful": demo().careful})
    assert CSP_RE.search(clean)
    injected = clean.replace("<main>", "<main>" + PAYLOAD, 1)
    result = run_probe(with_probe(injected, csp="allow"), tmp_path)
    assert result["pwned"] is False
    assert result["scripts"] >= 1 and result["handlers"]  # the markup is there, yet nothing ran
