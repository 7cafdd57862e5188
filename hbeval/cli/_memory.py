"""``hbeval memory``: list, show, delete and explain EDM episodes from the command line.

Also runnable as ``python -m hbeval.cli._memory``. JSON goes to stdout with ``--json``;
messages to stderr. Exit 0 ok, 2 bad input (the message names the field). An absent or empty
store is not an error: ``list`` prints nothing and ``explain`` prints the grounded:false
deferral, both with exit 0. Reading commands never create the database file. EDM itself (and
numpy) loads when a command runs, not for ``--help``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..memory._open import open_memory
from ._common import plain_app

if TYPE_CHECKING:
    from ..memory import EDM

__all__ = ["DEFAULT_AGENT_ID", "main", "memory_app"]

EXIT_OK = 0
EXIT_BAD_INPUT = 2

DEFAULT_AGENT_ID = "default"
"""``hbeval.memory.DEFAULT_AGENT_ID``, spelled here so ``--help`` needs no EDM import."""

"""``--embedder`` values: the offline hashing embedder, or MiniLM (optional extra)."""

memory_app = plain_app(
    "memory", "Evaluation-driven memory: list, show, delete and explain stored episodes."
)

DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Store: a SQLite path, sqlite:///path or postgresql://... (default "
        "./.hbeval/hbeval.db).",
    ),
]
AgentOpt = Annotated[
    str, typer.Option("--agent-id", help="Whose episodes (EDM never mixes agents).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")]
EmbedderOpt = Annotated[
    str,
    typer.Option(
        "--embedder", help="hash (default, offline) or minilm (needs the optional extra)."
    ),
]


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    typer.echo(f"hbeval memory: {message}", err=True)
    return typer.Exit(code)


def _check_agent(agent_id: str) -> str:
    if not agent_id.strip():
        raise _fail("--agent-id must be a non-empty string")
    return agent_id


@contextmanager
def _open(db: str | None, *, write: bool = False, embedder: str = "hash") -> Iterator[EDM]:
    """Open EDM for a command; an absent file is an empty in-memory EDM unless writing."""
    try:
        edm = open_memory(db, write=write, embedder=embedder)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    try:
        yield edm
    finally:
        edm.close()


def _emit_json(payload: Any) -> None:
    typer.echo(json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False))


@memory_app.command("list")
def list_cmd(
    agent_id: AgentOpt = DEFAULT_AGENT_ID,
    db: DbOpt = None,
    as_json: JsonOpt = False,
    all_agents: Annotated[
        bool, typer.Option("--all-agents", help="List every agent's episodes.")
    ] = False,
    quarantined: Annotated[
        bool, typer.Option("--quarantined", help="List unsafe episodes kept apart instead.")
    ] = False,
) -> None:
    """List stored episodes (oldest first) with their route, figures and evidence."""
    from ..memory._episode import EDM_METRICS, metric_label

    agent = None if all_agents else _check_agent(agent_id)
    with _open(db) as edm:
        if quarantined:
            items = edm.quarantined(agent)
            if as_json:
                _emit_json({"agent_id": agent, "quarantined": items, "count": len(items)})
                return
            for item in items:
                typer.echo(
                    f"{item['episode_id']}  agent={item['agent_id']}  "
                    f"reasons: {'; '.join(item['quarantine_reasons'])}"
                )
            typer.echo(f"{len(items)} quarantined episode(s)", err=True)
            return
        episodes = edm.list_episodes(agent)
        if as_json:
            _emit_json(
                {
                    "agent_id": agent,
                    "count": len(episodes),
                    "embedder": edm.embedder.name,
                    "threshold": edm.threshold,
                    "episodes": [ep.as_dict() for ep in episodes],
                }
            )
            return
        for ep in episodes:
            figures = "  ".join(f"{metric_label(m)} {ep.figure(m)}" for m in EDM_METRICS)
            summary = ep.summary if len(ep.summary) <= 60 else ep.summary[:57] + "..."
            typer.echo(
                f"{ep.episode_id}  agent={ep.agent_id}  route={ep.route}  "
                f"evidence={ep.evidence_level}  run={ep.run_id or '-'}  {figures}  {summary}"
            )
        who = "all agents" if agent is None else f"agent {agent!r}"
        typer.echo(f"{len(episodes)} episode(s) for {who}", err=True)


@memory_app.command("show")
def show_cmd(
    episode_id: Annotated[str, typer.Argument(help="Episode id (from `hbeval memory list`).")],
    agent_id: AgentOpt = DEFAULT_AGENT_ID,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show one stored episode in full (exit 2 if this agent has no such episode)."""
    from ..memory import EDM_METRICS

    agent = _check_agent(agent_id)
    with _open(db) as edm:
        ep = edm.get(episode_id, agent)
        if ep is None:
            raise _fail(f"EPISODE_ID: no episode {episode_id!r} stored for agent {agent!r}")
        if as_json:
            _emit_json(ep.as_dict())
            return
        record = ep.as_dict()
        for key in (
            "episode_id",
            "agent_id",
            "route",
            "run_id",
            "trial_key",
            "domain",
            "created_at",
        ):
            typer.echo(f"{key}: {record[key] if record[key] is not None else '-'}")
        for m in EDM_METRICS:
            typer.echo(f"{m}: {ep.figure(m)}")
        typer.echo(f"evidence: {json.dumps(record['evidence'], sort_keys=True)}")
        typer.echo(f"fingerprints: {json.dumps(record['fingerprints'], sort_keys=True)}")
        typer.echo(f"policy: {json.dumps(record['policy'], sort_keys=True)}")
        typer.echo(f"context: {ep.context}")
        typer.echo(f"summary: {ep.summary}")


@memory_app.command("delete")
def delete_cmd(
    episode_id: Annotated[str, typer.Argument(help="Episode id to delete.")],
    agent_id: AgentOpt = DEFAULT_AGENT_ID,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete one stored episode so it is never retrieved again (exit 2 if not found)."""
    agent = _check_agent(agent_id)
    with _open(db) as edm:
        if not edm.delete(episode_id, agent):
            raise _fail(f"EPISODE_ID: no episode {episode_id!r} stored for agent {agent!r}")
    if as_json:
        _emit_json({"deleted": episode_id, "agent_id": agent})
    else:
        typer.echo(f"deleted {episode_id}")


@memory_app.command("explain")
def explain_cmd(
    text: Annotated[str, typer.Argument(help="The task context to explain.")],
    agent_id: AgentOpt = DEFAULT_AGENT_ID,
    db: DbOpt = None,
    as_json: JsonOpt = False,
    embedder: EmbedderOpt = "hash",
) -> None:
    """Cite the closest qualified precedent verbatim, or defer to human review (exit 0)."""
    from ..memory import ContextError

    agent = _check_agent(agent_id)
    with _open(db, embedder=embedder) as edm:
        try:
            answer = edm.explain(text, agent)
        except ContextError as exc:
            raise _fail(f"TEXT: {exc}") from None
        except ImportError as exc:
            raise _fail(f"--embedder: {exc}") from None
    if as_json:
        _emit_json(answer)
    else:
        typer.echo(answer["explanation"])


def main() -> None:
    """Entry point for ``python -m hbeval.cli._memory``."""
    memory_app()


if __name__ == "__main__":
    main()
