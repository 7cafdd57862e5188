"""``hbeval init``: a starter tasks.yaml and verifiers.py beside an agent file."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import fail

__all__ = ["init"]


def init(
    target: Annotated[str, typer.Argument(help="Your agent's file: agent.py or agent.py:attr.")],
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite tasks.yaml and verifiers.py if present.")
    ] = False,
) -> None:
    """Write a starter tasks.yaml and verifiers.py beside an agent file."""
    from ..runner.starter import StarterExistsError, write_starter

    try:
        files = write_starter(target, force=force)
    except StarterExistsError as exc:
        raise fail(f"{exc.path} exists; nothing was written (use --force to overwrite)") from None
    except (ValueError, OSError) as exc:
        raise fail(str(exc)) from None
    typer.echo(f"wrote {files.tasks}")
    typer.echo(f"wrote {files.verifiers}")
    typer.echo(f"next: {files.command}")
