"""Finding 13: secrets never reach the store or a report, and tool results are capped.

On main an API key passed in tool arguments was stored verbatim (21 copies in the store) and
shown in the HTML (17 copies), and a 30 MB tool result was stored whole in every trial.
"""

from __future__ import annotations

import json
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.store import Redactor, storable_events
from hbeval_core.events import ModelStart, ToolEnd, ToolStart

# Built from pieces so the file itself holds no key a scanner would flag.
SECRETS = {
    "openai": "sk-" + "proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "openai_legacy": "sk-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
    "anthropic": "sk-" + "ant-" + "api03-" + "Q" * 30 + "_x-Y",
    "aws": "AKIA" + "IOSFODNN7EXAMPLE",
    "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "github_pat": "github_pat_" + "11ABCDEFG0" + "x" * 40,
    "slack": "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOp",
    "google": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "jwt": "eyJhbGciOiJIUzI1NiJ9"
    + "."
    + "eyJzdWIiOiIxMjM0NTY3ODkwIn0"
    + "."
    + "dozjgNryP4J3jVmNHl0w5N",
    "bearer": "Zm9vYmFyLWJlYXJlci10b2tlbi12YWx1ZS0xMjM0",
    "pem_body": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
    "named_api_key": "plain-looking-value-7",
    "named_password": "hunter2hunter2",
}
PEM = (
    "-----BEGIN " + "PRIVATE KEY-----\n" + SECRETS["pem_body"] + "\nabc\n-----END PRIVATE KEY-----"
)
NEAR_MISSES = {
    "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "fingerprint": "ce481b32763df1ca",
    "order": "ORD-12345",
    "task_name": "task-analysis-for-quarterly-report-2024",
    "prose": "the skeleton key opened the Bearer bond vault",
    "max_tokens": 512,
    "input_tokens": 1234,
}


def _agent_file(tmp_path: Path, result_bytes: int = 0) -> Path:
    path = tmp_path / "leaky_agent.py"
    path.write_text(
        textwrap.dedent(
            f"""
            from hbeval_plain import think, tool
            from hbeval_core.contract import Task

            SECRETS = {SECRETS!r}
            PEM = {PEM!r}
            NEAR = {NEAR_MISSES!r}
            # Random-looking on their own: secret only by where they appear.
            BARE = ("bearer", "pem_body", "named_api_key", "named_password")

            @tool
            def call_api(url, api_key, headers, payload):
                big = "x" * {result_bytes}
                return {{"ok": True, "echo": payload, "near": NEAR, "key": PEM, "big": big}}

            def agent(question):
                think("call it", tool_calls=[("call_api", {{"url": "https://api.example"}})])
                call_api(
                    "https://api.example",
                    api_key=SECRETS["named_api_key"],
                    headers={{"Authorization": "Bearer " + SECRETS["bearer"]}},
                    payload={{
                        "text": " ".join(v for k, v in SECRETS.items() if k not in BARE),
                        "password": SECRETS["named_password"],
                        "customer_ssn": "078-05-1120",
                        "near": NEAR,
                        "max_tokens": NEAR["max_tokens"],
                    }},
                )
                return "answered with " + SECRETS["openai"] + " and " + NEAR["order"]

            tasks = [Task(id="t1", question="call the api", verify=lambda s, t: True)]
            """
        )
    )
    return path


def _battery(tmp_path: Path, *extra: str, result_bytes: int = 0) -> tuple[Path, Path]:
    agent = _agent_file(tmp_path, result_bytes)
    db, out = tmp_path / "hb.db", tmp_path / "report.json"
    args = ["battery", "run", f"{agent}:agent", "--scenarios", "6", "--trials", "1"]
    res = CliRunner().invoke(
        app, [*args, "--db", str(db), "--out", str(out), "--run-id", "r", *extra]
    )
    assert res.exit_code == 0, res.output
    return db, out


def _all_text(db: Path) -> str:
    """Every value in every table of the store, as one text (what an attacker with the file sees)."""
    conn = sqlite3.connect(db)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    parts = []
    for table in tables:
        for row in conn.execute(f"SELECT * FROM {table}"):
            parts.extend(str(v) for v in row)
    conn.close()
    return "\n".join(parts)


@pytest.fixture(scope="module")
def leaky_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp_path = tmp_path_factory.mktemp("secrets")
    db, out = _battery(tmp_path)
    html = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["report", "r", "--db", str(db), "--html", str(html)])
    assert res.exit_code == 0, res.output
    return {"store": _all_text(db), "report": out.read_text(), "html": html.read_text(), "db": db}


@pytest.mark.parametrize("where", ["store", "report", "html"])
@pytest.mark.parametrize("name", sorted(SECRETS))
def test_no_secret_reaches_the_store_or_a_report(
    leaky_run: dict[str, Any], where: str, name: str
) -> None:
    assert SECRETS[name] not in leaky_run[where]


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_stay_intact(leaky_run: dict[str, Any], name: str) -> None:
    value = NEAR_MISSES[name]
    needle = json.dumps(value) if not isinstance(value, str) else value
    assert needle in leaky_run["store"]


def test_the_trace_says_what_was_redacted(leaky_run: dict[str, Any]) -> None:
    text = leaky_run["store"]
    assert "[REDACTED:openai_key]" in text and "[REDACTED:aws_access_key]" in text
    assert "[REDACTED:private_key]" in text and "[REDACTED:jwt]" in text
    assert '"Authorization":"[REDACTED]"' in text  # the header is kept, its credential is not
    assert "value of a secret-named field redacted" in text
    assert "078-05-1120" in text  # not a known shape, not named: only the user can name it


def test_user_rules_from_the_flag(tmp_path: Path) -> None:
    db, out = _battery(tmp_path, "--redact", r"ORD-\d{5}", "--redact", "name:customer_ssn")
    text = _all_text(db)
    assert "ORD-12345" not in text and "078-05-1120" not in text
    assert "ORD-12345" not in out.read_text()
    assert NEAR_MISSES["uuid"] in text  # the user's regex touches nothing else


def test_a_bad_redact_rule_is_refused_before_anything_runs(tmp_path: Path) -> None:
    agent = _agent_file(tmp_path)
    db = tmp_path / "never.db"
    for rule in ("(unclosed", ".*"):
        res = CliRunner().invoke(
            app, ["battery", "run", f"{agent}:agent", "--db", str(db), "--redact", rule]
        )
        assert res.exit_code == 2 and "--redact" in res.output
    assert not db.exists()


def test_manifest_rules(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"redact": ["name:customer_ssn"], "max_result_bytes": 4096}))
    db, _ = _battery(tmp_path, "--manifest", str(manifest), result_bytes=20_000)
    text = _all_text(db)
    assert "078-05-1120" not in text
    assert '"original_bytes":' in text and '"kept_bytes":4096' in text


def test_tool_results_are_capped_with_their_original_length(tmp_path: Path) -> None:
    db, _ = _battery(tmp_path, result_bytes=1_000_000)
    assert db.stat().st_size < 1_500_000  # 6 trials x 1 MB (twice: result and model input) on main
    text = _all_text(db)
    assert "x" * 70_000 not in text
    ends = [json.loads(line) for line in text.splitlines() if line.startswith('{"kind":"tool_end"')]
    assert ends
    truncated = ends[0]["attrs"]["result_truncated"]
    assert truncated["kept_bytes"] == 65536 and truncated["original_bytes"] > 1_000_000


def test_redactor_unit_cases() -> None:
    r = Redactor()
    for value in SECRETS.values():
        if value.startswith(("plain", "hunter")):
            continue
        text = f"before {value} after"
        if value == SECRETS["bearer"]:
            text = f"Authorization: Bearer {value}"
        if value == SECRETS["pem_body"]:
            text = PEM
        clean, kinds = r.redact_text(text)
        assert value not in clean and kinds, value
    for value in NEAR_MISSES.values():
        text = f"see {value} here"
        assert r.redact_text(text) == (text, [])
    assert r.secret_name("OPENAI_API_KEY") and r.secret_name("X-Api-Key")
    assert r.secret_name("githubToken") and r.secret_name("db_password")
    assert not r.secret_name("max_tokens") and not r.secret_name("input_tokens")
    assert not r.secret_name("token_count") and not r.secret_name("keyboard")


def test_storable_events_redacts_nested_models() -> None:
    start = ToolStart(run_id="r", call_id="c", tool="t", args={"auth": {"token": "abc"}})
    model = ModelStart(
        run_id="r", call_id="m", messages=[{"role": "tool", "content": "y" * 100_000}]
    )
    end = ToolEnd(run_id="r", call_id="c", tool="t", result={"k": SECRETS["github"]})
    (s, m, e), notes = storable_events([start, model, end], redactor=Redactor())
    assert s.args == {"auth": {"token": "[REDACTED]"}}  # type: ignore[attr-defined]
    assert len(m.messages[0].content.encode()) < 66_000  # type: ignore[attr-defined]
    assert e.result == {"k": "[REDACTED:github_token]"}  # type: ignore[attr-defined]
    assert len(notes) == 3


def test_one_pass_literal_search_finds_exactly_what_the_literals_do() -> None:
    """The one-regex search of a shape's literals (``_redact._ONE_PASS``) answers as looking
    for each literal in turn would, on the literals themselves, their near misses, and random
    text built from their letters."""
    import random

    from hbeval.store._redact import _LITERALS, _ONE_PASS

    assert set(_ONE_PASS) == {_LITERALS["github_token"], _LITERALS["aws_access_key"]}
    rng = random.Random(7)
    for literals, pattern in _ONE_PASS.items():
        alphabet = sorted(set("".join(literals)) | set("_ -x"))
        texts = [*literals, *(lit[:-1] for lit in literals), *(lit[1:] for lit in literals)]
        texts += [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(20_000)
        ]
        texts += [f"pre {lit} post" for lit in literals]
        for text in texts:
            assert (pattern.search(text) is not None) is any(lit in text for lit in literals), text
