"""The store suite runs on every backend (see tests/backends.py)."""

from tests.backends import db_url, store

__all__ = ["db_url", "store"]
