"""Adversarial tests: each reproduces a way to break, game or leak hbeval (issue 13's findings)."""
