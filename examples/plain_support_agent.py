"""A plain-Python support agent under the hbeval fault battery: no framework, no model, no network.

The agents and tasks live in ``hbeval_plain.examples`` (so ``hbeval demo`` works from
any folder); this file re-exports them as battery targets and runs a small comparison:

    python examples/plain_support_agent.py
    hbeval battery run examples/plain_support_agent.py:careful --trials 1 --scenarios 6
    hbeval battery run examples/plain_support_agent.py:naive --out naive.json

``careful`` and ``naive`` are factories, so every trial gets a fresh agent; ``tasks`` is found
beside them when ``--tasks`` is not given.
"""

from __future__ import annotations

from hbeval_plain.examples import careful, naive, tasks

__all__ = ["careful", "naive", "tasks"]


def main() -> None:
    """Run a 12-scenario battery twice per scenario on both agents and print what differs."""
    from hbeval.runner.run import run_battery
    from hbeval_core.faults import Battery

    for name, factory in (("careful", careful), ("naive", naive)):
        report = run_battery(
            None, factory, tasks, Battery.hbeval(n_scenarios=12, seed=42), trials=2, agent_id=name
        )
        metrics, undefined = report["metrics"], report["undefined"]
        shown = "  ".join(
            f"{k.upper()} {v:.2f}" if v is not None else f"{k.upper()} undefined ({undefined[k]})"
            for k, v in metrics.items()
        )
        attack = report["agentdojo"]["targeted_attack_success_rate"]
        print(f"{name:<8} {report['verdict']:<17} {shown}  attack success {attack}")


if __name__ == "__main__":
    main()
