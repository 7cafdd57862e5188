"""Fixtures shared by several test modules."""

from __future__ import annotations

from .postgres_server import postgres_admin_url, postgres_url

__all__ = ["postgres_admin_url", "postgres_url"]
