"""Conversation entries in the SQL store: JSON rows per (agent, session), oldest first."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from engine.store.db import Database
from engine.store.schema import entries_table

MAX_ENTRIES = 256
"""Entries one conversation keeps by default; adding past it drops the oldest."""


class EntryTables(Database):
    """What hooks (``host.entries``) and hosts (``Agent.remember``) keep in a conversation."""

    def entries_add(
        self,
        agent: str,
        session_id: str,
        entries: list[dict[str, Any]],
        *,
        user_id: str | None,
        turn: str | None,
        time: str,
        keep: int = MAX_ENTRIES,
    ) -> None:
        """Append ``{kind, data}`` entries to a conversation in one transaction, stamped with
        ``turn`` and ``time``; then only the newest ``keep`` of the conversation stay."""
        if not entries:
            return
        t = entries_table
        rows = [
            {
                "agent": agent,
                "session_id": session_id,
                "user_id": user_id,
                "kind": e["kind"],
                "data": json.dumps(e["data"], ensure_ascii=False),
                "turn": turn,
                "time": time,
            }
            for e in entries
        ]
        mine = (t.c.agent == agent) & (t.c.session_id == session_id)

        def add(conn: sa.Connection) -> None:
            self.lock_scope(conn, f"entries:{agent}:{session_id}")
            conn.execute(t.insert(), rows)
            cutoff = conn.execute(
                sa.select(t.c.seq).where(mine).order_by(t.c.seq.desc()).offset(keep).limit(1)
            ).scalar()
            if cutoff is not None:
                conn.execute(t.delete().where(mine & (t.c.seq <= cutoff)))

        self._write(add)

    def entries_list(
        self, agent: str, session_id: str, kind: str | None = None, *, last: int | None = None
    ) -> list[dict[str, Any]]:
        """A conversation's entries oldest first (``{kind, data, turn, time}``), of one kind
        if given; the newest ``last`` of them if given."""
        t = entries_table
        stmt = sa.select(t.c.kind, t.c.data, t.c.turn, t.c.time).where(
            t.c.agent == agent, t.c.session_id == session_id
        )
        if kind is not None:
            stmt = stmt.where(t.c.kind == kind)
        stmt = stmt.order_by(t.c.seq.desc())
        if last is not None:
            stmt = stmt.limit(last)
        rows = self._read(lambda conn: conn.execute(stmt).all())
        return [
            {"kind": r.kind, "data": json.loads(r.data), "turn": r.turn, "time": r.time}
            for r in reversed(rows)
        ]

    def entries_forget(self, scope: str) -> int:
        """Delete the entries of ``session:<id>`` or ``user:<id>`` (every agent's); return how
        many went. Other scopes keep no entries."""
        t = entries_table
        kind, _, value = scope.partition(":")
        column = {"session": t.c.session_id, "user": t.c.user_id}.get(kind)
        if column is None or not value:
            return 0
        return int(
            self._write(lambda conn: conn.execute(t.delete().where(column == value)).rowcount)
        )
