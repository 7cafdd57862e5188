"""Runnable example agents that ship inside the package (used by `hbeval demo`)."""
