"""Findings 2 and 3 of the second adversarial pass: reuse handed back a stale green run.

The manifest hashed source files one import deep, so an agent whose behaviour lives two imports
from the target was reused after it changed; it held task ids only, so new ``required`` keywords
under the same ids were reused too; and a report edited in the store was reused as is. A stored
run is now reused only when every user source file loaded by the run is unchanged, the tasks'
content, declared input files and variables are the same, and the report passes ``hbeval
gate``'s recheck.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from hbeval.runner.run import run_battery
from hbeval.scoring import Report
from hbeval.store import open_store
from hbeval.testing import assert_reliable
from hbeval.testing.pytest_plugin import assert_gate

Failed = pytest.fail.Exception
OPTIONS: dict[str, Any] = {
    "scenarios": 6,
    "trials": 1,
    "reuse": True,
    "skip_security": True,
    "on_insufficient": "allow",
}


def _two_imports_away(tmp_path: Path) -> tuple[str, Path]:
    """A target whose agent is built in a module the target's module does not import itself."""
    tag = uuid.uuid4().hex[:8]
    (tmp_path / f"reuse_deep_{tag}.py").write_text(
        "from hbeval_plain.examples import careful\n\n\ndef agent():\n    return careful()\n",
        encoding="utf-8",
    )
    (tmp_path / f"reuse_mid_{tag}.py").write_text(
        f"import reuse_deep_{tag} as deep\n\n\ndef build():\n    return deep.agent()\n",
        encoding="utf-8",
    )
    target = tmp_path / "agent.py"
    target.write_text(
        f"import reuse_mid_{tag} as mid\nfrom hbeval_plain.examples import tasks\n\n\n"
        "def make():\n    return mid.build()\n",
        encoding="utf-8",
    )
    return f"{target}:make", tmp_path / f"reuse_deep_{tag}.py"


def test_a_change_two_imports_from_the_target_is_never_reused(tmp_path: Path) -> None:
    target, deep = _two_imports_away(tmp_path)
    db = tmp_path / "h.db"
    first = assert_reliable(target, db=db, **OPTIONS)
    again = assert_reliable(target, db=db, **OPTIONS)
    assert not first.reused and again.reused and again.run_id == first.run_id
    recorded = first.report.loaded_sources or {}
    assert any(key.endswith(deep.name) for key in recorded), recorded

    # The agent's behaviour changes where the target's own module never looks.
    deep.write_text(
        "from hbeval_plain.examples import naive\n\n\ndef agent():\n    return naive()\n",
        encoding="utf-8",
    )
    changed = assert_reliable(target, db=db, **OPTIONS)
    assert not changed.reused and changed.run_id != first.run_id


def _plain_run(store: Any, tasks: list[Any], **options: Any) -> Report:
    from hbeval_plain.examples import careful

    return run_battery(
        None, careful, tasks, "hbeval", trials=1, store=store, agent_id="plain-careful",
        reuse=True, **options,
    )  # fmt: skip


def test_new_required_keywords_under_the_same_task_ids_are_not_reused(tmp_path: Path) -> None:
    from hbeval_plain.examples import tasks

    with open_store(str(tmp_path / "h.db")) as store:
        first = _plain_run(store, list(tasks))
        assert _plain_run(store, list(tasks)).run_id == first.run_id
        stricter = [dataclasses.replace(t, required=(*t.required, "sorry")) for t in tasks]
        assert [t.id for t in stricter] == [t.id for t in tasks]
        again = _plain_run(store, stricter)
        assert again.run_id != first.run_id
        assert again.manifest_hash != first.manifest_hash


def _task_file(folder: Path) -> Path:
    from hbeval_plain.examples import tasks

    rows = [{"id": t.id, "question": t.question, "required": list(t.required)} for t in tasks]
    (folder / "prompt.txt").write_text("You are a careful support agent.\n", encoding="utf-8")
    path = folder / "tasks.json"
    path.write_text(
        json.dumps({"tasks": rows, "inputs": ["prompt.txt"], "env": ["HBEVAL_REUSE_MODEL"]}),
        encoding="utf-8",
    )
    return path


def test_declared_input_files_and_variables_are_part_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hbeval.runner.loader import load_tasks

    path = _task_file(tmp_path)
    monkeypatch.setenv("HBEVAL_REUSE_MODEL", "model-a")
    with open_store(str(tmp_path / "h.db")) as store:
        first = _plain_run(store, load_tasks(path))
        assert _plain_run(store, load_tasks(path)).run_id == first.run_id
        (tmp_path / "prompt.txt").write_text("You are a hasty agent.\n", encoding="utf-8")
        new_prompt = _plain_run(store, load_tasks(path))
        assert new_prompt.run_id != first.run_id
        monkeypatch.setenv("HBEVAL_REUSE_MODEL", "model-b")
        new_model = _plain_run(store, load_tasks(path))
        assert new_model.run_id not in (first.run_id, new_prompt.run_id)
        run = store.get_run(str(new_model.run_id))
    assert run is not None
    declared = run.config["manifest"]["declared"]
    assert list(declared["inputs"]) == ["prompt.txt"] or all(
        k.endswith("prompt.txt") for k in declared["inputs"]
    )
    assert "model-b" not in json.dumps(declared)  # the value is digested, never stored


def test_a_task_file_declaring_inputs_wrongly_names_the_field(tmp_path: Path) -> None:
    from hbeval.runner.loader import TaskFileError, load_tasks

    path = tmp_path / "tasks.json"
    path.write_text(json.dumps({"tasks": [{"id": "a", "question": "q"}], "env": "MODEL"}))
    with pytest.raises(TaskFileError) as caught:
        load_tasks(path)
    assert caught.value.field == "env" and str(path) in str(caught.value)


def _raise_pei_in_store(db: Path, run_id: str) -> None:
    conn = sqlite3.connect(db)
    try:
        (body,) = conn.execute(
            "SELECT body FROM reports WHERE run_id = ? ORDER BY report_id DESC LIMIT 1", (run_id,)
        ).fetchone()
        data = json.loads(body)
        data["metrics"]["pei"] = data["aggregate_metrics"]["pei"] = 0.99
        conn.execute("UPDATE reports SET body = ? WHERE run_id = ?", (json.dumps(data), run_id))
        conn.commit()
    finally:
        conn.close()


def test_a_report_edited_in_the_store_is_not_reused_nor_passed_by_assert_gate(
    tmp_path: Path,
) -> None:
    from hbeval_plain.examples import tasks

    db = tmp_path / "h.db"
    with open_store(str(db)) as store:
        first = _plain_run(store, list(tasks))
    _raise_pei_in_store(db, str(first.run_id))
    with open_store(str(db)) as store:
        edited = store.get_report(str(first.run_id))
        assert edited is not None and edited.metrics.pei == 0.99
        fresh = _plain_run(store, list(tasks))
    assert fresh.run_id != first.run_id
    assert fresh.metrics.pei == first.metrics.pei != 0.99

    with pytest.raises(Failed, match="changed after hbeval built it"):
        assert_gate(edited, skip_security=True)
    with pytest.raises(Failed, match="changed after hbeval built it"):
        assert_gate(edited.to_dict(), skip_security=True)


def test_stale_sources_reads_the_files_as_they_are_now(tmp_path: Path) -> None:
    import hashlib

    from hbeval.runner._provenance import stale_sources

    path = tmp_path / "helper.py"
    path.write_text("X = 1\n", encoding="utf-8")
    digest = hashlib.sha256(b"X = 1\n").hexdigest()[:16]  # written out here, not taken from hbeval
    assert stale_sources({str(path): digest}) is None
    assert stale_sources({}) is None  # everything came from installed distributions
    assert stale_sources(None) is not None  # a report from before the record: never reused
    path.write_text("X = 2\n", encoding="utf-8")
    assert "changed" in str(stale_sources({str(path): digest}))
    path.unlink()
    assert "gone" in str(stale_sources({str(path): digest}))
