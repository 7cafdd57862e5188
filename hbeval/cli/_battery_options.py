"""``battery build | run`` options that shape which scenarios run: ``--perturb`` and ``--matrix``."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["MatrixOption", "PerturbOption"]

PerturbOption = Annotated[
    list[str] | None,
    typer.Option(
        "--perturb",
        help="Add a prompt-perturbation family (repeatable; 'context': the reference's context "
        "sentences appended to the question, no fault injected). Reported apart from fault "
        "handling; off by default, so questions reach the agent unchanged.",
    ),
]

MatrixOption = Annotated[
    bool,
    typer.Option(
        "--matrix",
        help="Run every scenario on every task (scenario x task) instead of scenario i on task "
        "i mod len(tasks).",
    ),
]
