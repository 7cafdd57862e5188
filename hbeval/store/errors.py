"""Errors a store raises; all are ``ValueError``, so callers treat them as bad input."""

from __future__ import annotations


class StoreError(ValueError):
    """A store refused an operation; the message says what and why. Nothing was written."""


class StoreVersionError(StoreError):
    """The store was written by a newer hbeval (or is not an hbeval store); it was not touched."""


class DuplicateRecordError(StoreError):
    """A record with this key is already stored. The stored one is kept as it was."""


class NoStoreError(StoreError):
    """A read found no store where it looked: no SQLite file, or a database without hbeval's
    tables. Read commands treat both alike (nothing recorded there); nothing was created."""


class StoreDamagedError(StoreError):
    """The store could not be read: a damaged page, a missing table, a record that is not JSON."""


class UnknownRunError(StoreError):
    """The run id was never started in this store."""
