"""Persisted state behind one small interface: records, script state (FAQ pairs and memory
join them later). SQLite is the embedded default; a ``postgresql://`` URL selects PostgreSQL."""

from __future__ import annotations

from typing import Any, Protocol

from engine.store.records import Record, RecordQuery


class Store(Protocol):
    """The engine's persisted state. Implementations are safe to share between threads."""

    url: str

    def add_records(self, records: list[Record]) -> None:
        """Write records (one transaction)."""
        ...

    def query_records(self, query: RecordQuery) -> list[Record]:
        """Records matching ``query``, newest first."""
        ...

    def prune_records(self, keep: int) -> int:
        """Delete all but the newest ``keep`` records; return how many went."""
        ...

    def state_load(self, hook: str, scope: str) -> dict[str, Any]:
        """The JSON state of one hook in one scope (empty if none)."""
        ...

    def state_save(self, hook: str, scope: str, writes: dict[str, Any]) -> None:
        """Apply writes to one hook's state in one scope (``None`` deletes a key), atomically."""
        ...

    def close(self) -> None: ...


def open_store(url_or_path: str) -> Store:
    """Open (and create or migrate) the store at a SQLAlchemy URL or an SQLite file path."""
    from engine.store.sql import SqlStore

    return SqlStore(url_or_path)


__all__ = ["Record", "RecordQuery", "Store", "open_store"]
