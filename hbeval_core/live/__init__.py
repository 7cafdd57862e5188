"""Live metrics for Prometheus."""
