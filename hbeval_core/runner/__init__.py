"""hbeval."""
