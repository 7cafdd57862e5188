"""The run manifest: everything that says what a battery run was, in one hashed document.

A manifest names the target, the battery and its selection, seed, trials, budgets, an optional
price table and the software versions that ran. ``manifest_hash`` fingerprints it without its
volatile fields (creation time, run id, concurrency, the expected hashes themselves), so two
runs of the same configuration on the same software share a hash. Package versions live here and never in
the measurement fingerprint: upgrading pydantic does not change what was measured, but the
manifest still records it.

The hash also covers the code under test: ``sources`` holds a digest of each source file the
target, its factory and its task verifiers come from (and of the local modules those import
directly), and ``environment`` a digest of every installed distribution's name and version. Edit
the agent or upgrade any package and the manifest hash changes, so a stored run is never taken
for a run of the changed agent (``run_battery(reuse=True)``, ``--hbeval-reuse``).

A manifest file (``--manifest FILE``, YAML or JSON) may pin ``expected_hashes``
(``measurement_fingerprint``, ``battery_fingerprint``, ``plan_fingerprint``); a run whose
hashes differ is refused with ``ManifestMismatchError`` before any trial starts.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
import os
import platform
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from hbeval_core.contract import Budgets
from hbeval_core.fingerprint import fingerprint
from hbeval_core.vocab import DEFAULT_SEED

from ..store._redact import DEFAULT_MAX_RESULT_BYTES, parse_redact_rules

__all__ = [
    "EXPECTED_HASH_KEYS",
    "FRAMEWORK_PACKAGES",
    "VOLATILE_FIELDS",
    "ManifestError",
    "ManifestMismatchError",
    "RunManifest",
    "check_expected_hashes",
    "environment_fingerprint",
    "load_manifest",
    "loaded_reference_module",
    "package_versions",
    "source_digests",
]

VOLATILE_FIELDS: Final = ("created_at", "run_id", "expected_hashes", "source", "concurrency")
"""Fields left out of ``manifest_hash``: they differ between runs that measure the same thing.

Concurrency is among them because it changes how fast a run goes, never what it measures (a
resumed run may use another ``--concurrency``).
"""

EXPECTED_HASH_KEYS: Final = ("measurement_fingerprint", "battery_fingerprint", "plan_fingerprint")
"""Hashes a manifest may pin; a mismatch refuses the run."""

FRAMEWORK_PACKAGES: Final = (
    "pydantic",
    "langgraph",
    "langchain-core",
    "crewai",
    "autogen-agentchat",
    "autogen-core",
)
"""Distributions whose versions the manifest records when installed (never imported)."""


class ManifestError(ValueError):
    """A manifest file or field is wrong; names the field and the fix."""


class ManifestMismatchError(ValueError):
    """A manifest pins a hash the run does not have; the run is refused (CLI exit 2)."""

    def __init__(self, mismatches: Mapping[str, tuple[str, str]]) -> None:
        self.mismatches = dict(mismatches)
        parts = [
            f"{k} is {actual}, manifest expects {want}" for k, (want, actual) in mismatches.items()
        ]
        super().__init__(
            "refusing to run: "
            + "; ".join(parts)
            + ". The battery, seed, trials or scoring differ from what the manifest pinned; "
            "fix the configuration or update expected_hashes on purpose."
        )


def package_versions() -> dict[str, str]:
    """Python, hbeval and the installed framework distributions (read from metadata, not imported).

    Reading a distribution's metadata parses its whole METADATA file (about 2 ms each, more than
    a run of a few hundred small trials spends on anything else of its own), so the versions are
    kept and read again only when a folder on ``sys.path`` changed (installing, upgrading or
    removing a distribution adds or removes its metadata folder there).
    """
    global _VERSIONS
    state = _path_state()
    kept = _VERSIONS
    if kept is None or kept[0] != state:
        from hbeval_core import __version__

        versions = {"python": platform.python_version(), "hbeval": __version__}
        for dist in FRAMEWORK_PACKAGES:
            try:
                versions[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
        kept = _VERSIONS = (state, versions)
    return dict(kept[1])


_VERSIONS: tuple[tuple[tuple[str, int], ...], dict[str, str]] | None = None


def _path_state() -> tuple[tuple[str, int], ...]:
    """Each ``sys.path`` entry with its modification time (-1 when it does not exist)."""
    state = []
    for entry in sys.path:
        try:
            state.append((entry, os.stat(entry or ".").st_mtime_ns))
        except (OSError, ValueError, TypeError):
            state.append((str(entry), -1))
    return tuple(state)


@functools.lru_cache(maxsize=1)
def environment_fingerprint() -> str:
    """Digest of every installed distribution as ``name==version`` (read once per process)."""
    names = sorted(
        {
            f"{(d.metadata['Name'] or '').lower()}=={d.version}"
            for d in importlib.metadata.distributions()
        }
    )
    return fingerprint({"python": platform.python_version(), "distributions": names})


@functools.lru_cache(maxsize=1)
def _installed_roots() -> tuple[str, ...]:
    """Folders of the stdlib and installed packages (their files are not the user's code)."""
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    return tuple(os.path.join(str(Path(r).resolve()), "") for r in roots)


def _local_file(module: ModuleType | None) -> Path | None:
    """The module's source file when it is the user's code (not the stdlib or an installed package)."""
    if module is None:
        return None
    name = getattr(module, "__file__", None)
    if not name or not str(name).endswith(".py"):
        return None
    path = _user_path(str(name))
    return path if path is not None and path.is_file() else None


@functools.lru_cache(maxsize=4096)
def _user_path(name: str) -> Path | None:
    """``name`` resolved, or None under the stdlib or installed packages (kept: each resolve
    is a system call per folder of the path, and a run looks at dozens of modules)."""
    path = Path(name).resolve()
    text = str(path)
    if any(text.startswith(root) for root in _installed_roots()):
        return None
    return path


def _module_of(obj: Any) -> ModuleType | None:
    if isinstance(obj, ModuleType):
        return obj
    module = inspect.getmodule(obj)
    if module is None or module.__name__ == "builtins":
        module = inspect.getmodule(type(obj))
    return module


def _source_key(module: ModuleType, path: Path) -> str:
    name = module.__name__
    if name.startswith("hbeval_user_") or name == "__main__":
        try:
            return path.relative_to(Path.cwd().resolve()).as_posix()
        except ValueError:
            return path.name
    return name


def source_digests(*objects: Any) -> dict[str, str]:
    """``{module or file: sha256[:16]}`` of the user's source files behind ``objects``.

    For each object (an agent, a factory, a verifier, a module) the file of the module that
    defines it, plus the local modules that file's names come from (one level: what it imports
    from the project). Files of the stdlib and installed packages are left out: their versions
    are in ``environment_fingerprint``. Keys are module names (a file loaded by path is keyed by
    its path relative to the working directory), so a checkout in another folder hashes the same.
    """
    found: dict[str, Path] = {}

    def add(module: ModuleType | None) -> bool:
        path = _local_file(module)
        if module is None or path is None:
            return False
        found.setdefault(_source_key(module, path), path)
        return True

    for obj in objects:
        if obj is None:
            continue
        module = _module_of(obj)
        if not add(module) or module is None:
            continue
        for value in list(vars(module).values()):
            if isinstance(value, ModuleType):
                add(value)
                continue
            owner = getattr(value, "__module__", None)
            if isinstance(owner, str) and owner != module.__name__:
                add(sys.modules.get(owner))
    return {
        key: hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        for key, path in sorted(found.items())
    }


def loaded_reference_module(ref: str | None) -> ModuleType | None:
    """The module a ``module:attr`` / ``path.py:attr`` reference names, if already imported."""
    if not ref or ":" not in ref:
        return None
    from .loader import loaded_module

    return loaded_module(ref.rpartition(":")[0])


@dataclass(frozen=True)
class RunManifest:
    """What a battery run is: target, battery, seed, trials, budgets, prices and versions."""

    target: str | None = None
    """The target reference (``path.py:attr`` or ``module:attr``), or its qualified name."""
    target_kind: str | None = None
    """``factory`` or ``agent`` (as decided or forced)."""
    adapter: str | None = None
    model_id: str | None = None
    tasks: str | None = None
    """Where the tasks came from (a file or reference), when known."""
    task_ids: tuple[str, ...] = ()
    battery: str = "hbeval"
    n_scenarios: int = 18
    fault_types: tuple[str, ...] | None = None
    domains: tuple[str, ...] | None = None
    seed: int = DEFAULT_SEED
    trials: int = 3
    agent_id: str = "default"
    methodology: str = "B"
    judge: str | None = None
    concurrency: int = 1
    timeout: float | None = None
    clock: str = "virtual"
    """``virtual`` (time-based faults skip their waits) or ``system`` (they really wait)."""
    budgets: Budgets = field(default_factory=Budgets)
    price_table: dict[str, dict[str, float]] | None = None
    """Per model id: ``{"input_per_1k": usd, "output_per_1k": usd}``."""
    versions: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    """Digest of each source file of the target and its tasks (``source_digests``)."""
    environment: str | None = None
    """Digest of the installed distributions (``environment_fingerprint``)."""
    task_content: str | None = None
    """Fingerprint of every field of every task, verifier source included (``_provenance``)."""
    declared: dict[str, dict[str, str | None]] = field(default_factory=dict)
    """Digests of the files (``inputs``) and environment variables (``env``) a task file declares."""
    battery_fingerprint: str | None = None
    """The battery's spec fingerprint (its scenarios and faults)."""
    expected_hashes: dict[str, str] = field(default_factory=dict)
    redact: tuple[str, ...] = ()
    """Extra redaction rules: regexes, or ``name:FIELD`` for a field whose value is secret."""
    max_result_bytes: int | None = DEFAULT_MAX_RESULT_BYTES
    """Cap on each stored tool result (bytes of JSON text); None stores results whole."""
    run_id: str | None = None
    created_at: float | None = None
    source: str | None = None
    """The manifest file this came from."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (tuples as lists, budgets as a mapping)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Budgets):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, dict):
                value = {k: (dict(v) if isinstance(v, dict) else v) for k, v in value.items()}
            out[f.name] = value
        return out

    def hashable(self) -> dict[str, Any]:
        """The manifest minus ``VOLATILE_FIELDS``: what ``manifest_hash`` covers."""
        data = self.to_dict()
        for name in VOLATILE_FIELDS:
            data.pop(name, None)
        return data

    def manifest_hash(self) -> str:
        """Fingerprint of the manifest without its volatile fields."""
        return fingerprint(self.hashable())

    def with_updates(self, **changes: Any) -> RunManifest:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, source: str | None = None) -> RunManifest:
        """Validate a parsed manifest; unknown or mistyped fields raise ``ManifestError``."""
        # Long because: one check per manifest field, each naming its field in the error; read
        # top to bottom it is the manifest's schema.
        where = f"{source}: " if source else ""
        if not isinstance(data, Mapping):
            raise ManifestError(f"{where}a manifest must be a mapping of fields (got {data!r})")
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise ManifestError(
                f"{where}unknown field {unknown[0]!r}; valid fields: {', '.join(sorted(known))}"
            )
        kwargs: dict[str, Any] = {}

        def need(name: str, ok: bool, hint: str) -> None:
            if not ok:
                raise ManifestError(f"{where}field {name!r} {hint} (got {data[name]!r})")

        for name in (
            "target",
            "target_kind",
            "adapter",
            "model_id",
            "tasks",
            "judge",
            "environment",
        ):
            if data.get(name) is not None:
                need(name, isinstance(data[name], str), "must be a string")
                kwargs[name] = data[name]
        for name in ("battery", "agent_id", "methodology", "clock"):
            if name in data:
                need(name, isinstance(data[name], str) and bool(data[name]), "must be a string")
                kwargs[name] = data[name]
        for name in ("n_scenarios", "seed", "trials", "concurrency"):
            if name in data:
                value = data[name]
                need(
                    name,
                    isinstance(value, int) and not isinstance(value, bool),
                    "must be a whole number",
                )
                kwargs[name] = value
        if data.get("timeout") is not None:
            value = data["timeout"]
            need(
                "timeout",
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and 0 <= value < float("inf"),
                "must be seconds >= 0 (0: no limit)",
            )
            kwargs["timeout"] = float(value)
        if data.get("redact") is not None:
            value = data["redact"]
            need(
                "redact",
                isinstance(value, list) and all(isinstance(v, str) for v in value),
                "must be a list of regexes or name:FIELD entries",
            )
            try:
                parse_redact_rules(value)
            except ValueError as exc:
                raise ManifestError(f"{where}field 'redact': {exc}") from None
            kwargs["redact"] = tuple(value)
        if "max_result_bytes" in data:
            value = data["max_result_bytes"]
            need(
                "max_result_bytes",
                value is None
                or (isinstance(value, int) and not isinstance(value, bool) and value >= 256),
                "must be a whole number of bytes >= 256, or null for no cap",
            )
            kwargs["max_result_bytes"] = value
        for name in ("fault_types", "domains", "task_ids"):
            if data.get(name) is not None:
                value = data[name]
                need(
                    name,
                    isinstance(value, list) and all(isinstance(v, str) for v in value),
                    "must be a list of names",
                )
                kwargs[name] = tuple(value)
        if "budgets" in data:
            try:
                kwargs["budgets"] = Budgets.from_mapping(data["budgets"])
            except ValueError as exc:
                raise ManifestError(f"{where}field 'budgets': {exc}") from None
        if data.get("price_table") is not None:
            kwargs["price_table"] = _price_table(data["price_table"], where)
        for name in ("versions", "sources", "expected_hashes"):
            if data.get(name) is not None:
                value = data[name]
                need(
                    name,
                    isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values()),
                    "must map names to strings",
                )
                kwargs[name] = {str(k): v for k, v in value.items()}
        bad = sorted(set(kwargs.get("expected_hashes", {})) - set(EXPECTED_HASH_KEYS))
        if bad:
            raise ManifestError(
                f"{where}field 'expected_hashes' has unknown key {bad[0]!r}; valid: "
                f"{', '.join(EXPECTED_HASH_KEYS)}"
            )
        if source is not None:
            kwargs["source"] = source
        return cls(**kwargs)


def _price_table(value: Any, where: str) -> dict[str, dict[str, float]]:
    if not isinstance(value, Mapping):
        raise ManifestError(
            f"{where}field 'price_table' must map model ids to "
            "{input_per_1k, output_per_1k} (USD per 1,000 tokens)"
        )
    table: dict[str, dict[str, float]] = {}
    for model, prices in value.items():
        if not isinstance(prices, Mapping) or set(prices) - {"input_per_1k", "output_per_1k"}:
            raise ManifestError(
                f"{where}field 'price_table' entry {model!r} must have input_per_1k and/or "
                f"output_per_1k (got {prices!r})"
            )
        entry: dict[str, float] = {}
        for key, price in prices.items():
            if isinstance(price, bool) or not isinstance(price, (int, float)) or price < 0:
                raise ManifestError(
                    f"{where}field 'price_table' entry {model!r}: {key} must be a number >= 0"
                )
            entry[str(key)] = float(price)
        table[str(model)] = entry
    return table


def load_manifest(path: str | Path) -> RunManifest:
    """Read a manifest from a YAML or JSON file (``ManifestError`` names what is wrong)."""
    p = Path(path)
    if not p.is_file():
        raise ManifestError(f"manifest {str(path)!r} not found (looked at {p.resolve()})")
    try:
        text = p.read_text(encoding="utf-8")
        if p.suffix.lower() == ".json":
            import json

            data = json.loads(text)
        else:
            import yaml  # imported here: only manifest and task files need it

            data = yaml.safe_load(text)
    except Exception as exc:
        raise ManifestError(f"{path}: cannot be parsed: {exc}") from None
    return RunManifest.from_mapping(data or {}, source=str(path))


def check_expected_hashes(manifest: RunManifest | None, actual: Mapping[str, str]) -> None:
    """Raise ``ManifestMismatchError`` when a pinned hash differs from the run's."""
    if manifest is None or not manifest.expected_hashes:
        return
    mismatches = {
        key: (want, str(actual.get(key)))
        for key, want in manifest.expected_hashes.items()
        if actual.get(key) != want
    }
    if mismatches:
        raise ManifestMismatchError(mismatches)
