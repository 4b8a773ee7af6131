"""Script state in the SQL store: JSON values per (hook, scope, key), with optional expiry."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from engine.store.db import Database
from engine.store.schema import state_table


def utc(time: str | None) -> str | None:
    """``time`` (ISO-8601) as a UTC string that sorts as it compares; None if it is not one.
    A time without an offset is taken as UTC."""
    if not time:
        return None
    try:
        moment = datetime.fromisoformat(time)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def expiry(time: str | None, ttl_s: float) -> str | None:
    """When a key written at ``time`` with a TTL of ``ttl_s`` seconds expires (UTC)."""
    start = utc(time)
    if start is None:
        return None
    try:
        return utc((datetime.fromisoformat(start) + timedelta(seconds=ttl_s)).isoformat())
    except OverflowError:  # past year 9999: it never expires in practice
        return None


STATE_LOAD = 'SELECT "key", value FROM script_state WHERE hook = {0} AND scope = {0}'
STATE_LIVE = " AND (expires_at IS NULL OR expires_at > {0})"


class StateTables(Database):
    """host.state of script hooks: one row per key; an expired row reads as absent."""

    def state_load(self, hook: str, scope: str, *, now: str | None = None) -> dict[str, Any]:
        # Plain SQL, made once per store: a select built per call cost most of the read.
        moment = utc(now)
        params: tuple[str, ...] = (hook, scope) if moment is None else (hook, scope, moment)
        sql = self._state_sql()[0 if moment is None else 1]
        return {str(key): json.loads(str(value)) for key, value in self._read_sql(sql, params)}

    def _state_sql(self) -> tuple[str, str]:
        """``state_load``'s two statements (all rows; rows live at a moment) in the driver's
        parameter style."""
        found: tuple[str, str] | None = self.__dict__.get("_state_statements")
        if found is None:
            mark = "?" if self.engine.dialect.paramstyle == "qmark" else "%s"
            every = STATE_LOAD.format(mark)
            found = self.__dict__["_state_statements"] = (every, every + STATE_LIVE.format(mark))
        return found

    def state_save(
        self,
        hook: str,
        scope: str,
        writes: dict[str, Any],
        *,
        ttls: dict[str, float] | None = None,
        time: str | None = None,
    ) -> None:
        if not writes:
            return
        t, ttls = state_table, ttls or {}
        written = utc(time) or datetime.now(UTC).isoformat(timespec="microseconds")

        def save(conn: sa.Connection) -> None:
            for key, value in writes.items():
                where = (t.c.hook == hook) & (t.c.scope == scope) & (t.c.key == key)
                conn.execute(t.delete().where(where))
                if value is not None:
                    ttl = ttls.get(key)
                    expires = expiry(written, ttl) if ttl is not None else None
                    row: dict[str, str | None] = {"hook": hook, "scope": scope, "key": key}
                    row["value"] = json.dumps(value)
                    row |= {"written_at": written, "expires_at": expires}
                    conn.execute(t.insert().values(row))

        self._write(save)

    def state_forget(self, scope: str) -> int:
        """Delete every script hook's state kept under ``scope`` (every agent's); return how
        many keys went."""
        t = state_table
        return int(
            self._write(lambda conn: conn.execute(t.delete().where(t.c.scope == scope)).rowcount)
        )

    def prune_state(self, conn: sa.Connection, *, now: str, before: str | None = None) -> int:
        """Delete state rows that expired by ``now``, and, given ``before`` (the time of the
        oldest record kept once records were pruned), rows not written since: the records'
        retention window applies to state too. Returns the rows deleted."""
        t = state_table
        gone = sa.and_(t.c.expires_at.is_not(None), t.c.expires_at <= utc(now))
        oldest = utc(before)
        if oldest is not None:
            gone = sa.or_(gone, t.c.written_at < oldest)
        return int(conn.execute(t.delete().where(gone)).rowcount)
