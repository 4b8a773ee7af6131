"""Rows of the files tool calls made (the bytes live in data/artifacts/, see engine/tools)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import sqlalchemy as sa

from engine.store.db import Database
from engine.store.schema import artifacts_table


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

    def as_data(self) -> dict[str, Any]:
        return asdict(self)


class ArtifactTables(Database):
    """Artifacts per session: added by tool calls, listed, deleted with the session."""

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
