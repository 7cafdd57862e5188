"""The manifest's package versions and source files are read again whenever they could differ.

``package_versions`` keeps what it read until a folder on ``sys.path`` changes; ``source_digests``
keeps where each module's file resolves to, never its contents. Each test changes what is
installed or the source itself and checks the next reading sees it, against the metadata
written by the test.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hbeval.runner.manifest import package_versions, source_digests


def _install(folder: Path, name: str, version: str) -> None:
    info = folder / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_package_versions_follow_what_is_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = package_versions()
    assert package_versions() == before  # kept: the same reading
    monkeypatch.syspath_prepend(str(tmp_path))  # a folder in front of site-packages
    _install(tmp_path, "crewai", "98.0.1")
    importlib.invalidate_caches()
    assert package_versions()["crewai"] == "98.0.1"
    time.sleep(0.05)  # a later upgrade: past the file system's timestamp tick
    for old in tmp_path.glob("crewai-*.dist-info"):  # an upgrade in place
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    _install(tmp_path, "crewai", "99.2")
    importlib.invalidate_caches()
    assert package_versions()["crewai"] == "99.2"
    assert importlib.metadata.version("crewai") == "99.2"
    monkeypatch.undo()
    importlib.invalidate_caches()
    assert package_versions() == before


def test_source_digests_follow_the_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    source = tmp_path / "agent_under_digest.py"
    source.write_text(textwrap.dedent("def agent(q):\n    return 'a'\n"))
    module = importlib.import_module("agent_under_digest")
    try:
        first = source_digests(module.agent)
        assert list(first) == ["agent_under_digest"]
        assert source_digests(module.agent) == first
        source.write_text(textwrap.dedent("def agent(q):\n    return 'b'\n"))
        second = source_digests(module.agent)
        assert second["agent_under_digest"] != first["agent_under_digest"]
        source.unlink()  # a file gone since is not hashed
        assert source_digests(module.agent) == {}
    finally:
        sys.modules.pop("agent_under_digest", None)
