"""Rows of the files tool calls made (the bytes live in data/artifacts/, see engine/tools)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import sqlalchemy as sa

from engine.store.db import Database
from engine.store.lazy import turn_log_user
from engine.store.schema import artifacts_table, entries_table, turn_log_table

FilesForgotten = Callable[[list["ArtifactRow"]], None]
"""Deletes the bytes of artifact rows the store deleted (the engine knows where they are)."""
_CHUNK = 500
"""Artifact ids one DELETE names at most."""


@dataclass(frozen=True)
class ArtifactRow:
    """One artifact as the store keeps it."""

    id: str
    agent: str
    session_id: str
    name: str
    file_name: str
    type: str
    mime: str
    bytes: int
    sha256: str
    tool: str
    call_id: str | None
    description: str
    time: str
    user_id: str | None = None
    """The user whose call made it (None: none was given, or a row from before schema 13);
    forgetting them deletes it."""

    def as_data(self) -> dict[str, Any]:
        return asdict(self)


class ArtifactTables(Database):
    """Artifacts per session: added by tool calls, listed, deleted with the session or with
    the user whose call made them."""

    def __init__(self, url_or_path: str, **timeouts: float) -> None:
        super().__init__(url_or_path, **timeouts)
        self._files_forgotten: list[FilesForgotten] = []
        self._files_lock = threading.Lock()

    def artifact_add(self, row: ArtifactRow) -> None:
        values = row.as_data()
        self._write(lambda conn: conn.execute(artifacts_table.insert().values(**values)))

    def artifacts_of(self, session_id: str) -> list[ArtifactRow]:
        """A session's artifacts, oldest first."""
        t = artifacts_table
        stmt = sa.select(t).where(t.c.session_id == session_id).order_by(t.c.time, t.c.id)
        rows = self._read(lambda conn: conn.execute(stmt).mappings().all())
        return [ArtifactRow(**dict(r)) for r in rows]

    def artifact_forget(self, session_id: str) -> int:
        """Delete a session's artifact rows; how many went."""
        t = artifacts_table
        stmt = t.delete().where(t.c.session_id == session_id)
        return int(self._write(lambda conn: conn.execute(stmt).rowcount))

    def on_artifacts_forgotten(self, remove: FilesForgotten) -> None:
        """Have ``remove`` delete the bytes of the rows ``artifacts_forget`` (and so
        ``memory_forget``) deletes: the store keeps rows only; the engine that opened it
        knows its artifact folder and registers here."""
        with self._files_lock:
            self._files_forgotten.append(remove)

    def artifacts_forget(self, scope: str) -> int:
        """Delete the artifacts ``scope`` owns: a session's (every agent's), or those of a
        user's calls in any session and agent; rows from before schema 13 name no user, and
        go with the user whose conversation entries or last prompt (turn log) name their agent
        and session. Their bytes go through ``on_artifacts_forgotten``, once the rows are
        gone. Returns how many rows went; other scopes own none."""
        t, owned = artifacts_table, _owned(scope)
        if owned is None:
            return 0
        found = sa.select(t).where(owned)

        def forget(conn: sa.Connection) -> list[ArtifactRow]:
            rows = [ArtifactRow(**dict(r)) for r in conn.execute(found).mappings()]
            ids = [r.id for r in rows]  # deleted by id: a row added meanwhile is not forgotten
            for start in range(0, len(ids), _CHUNK):  # without its file being deleted too
                conn.execute(t.delete().where(t.c.id.in_(ids[start : start + _CHUNK])))
            return rows

        gone = self._write(forget)
        if gone:
            with self._files_lock:
                removers = list(self._files_forgotten)
            for remove in removers:
                remove(gone)
        return len(gone)


def _owned(scope: str) -> sa.ColumnElement[bool] | None:
    """The artifact rows ``scope`` owns (None: it owns none)."""
    t, (kind, _, value) = artifacts_table, scope.partition(":")
    if kind == "session" and value:
        return t.c.session_id == value
    if kind != "user" or not value:
        return None
    e, log = entries_table, turn_log_table
    sessions = sa.union(
        sa.select(e.c.agent, e.c.session_id).where(e.c.user_id == value),
        sa.select(log.c.agent, log.c.session_id).where(log.c.user_id == turn_log_user(value)),
    )
    unnamed = t.c.user_id.is_(None) & sa.tuple_(t.c.agent, t.c.session_id).in_(sessions)
    return (t.c.user_id == value) | unnamed
