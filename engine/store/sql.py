"""The SQL store: SQLAlchemy Core over SQLite (default, WAL) or PostgreSQL (psycopg 3)."""

from __future__ import annotations

import os
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from engine.encoding import escape_text
from engine.errors import StoreError, StoreUnavailableError
from engine.store.approvals import ApprovalTables
from engine.store.artifacts import ArtifactTables
from engine.store.db import to_url
from engine.store.entries import EntryTables
from engine.store.faq import FaqTables
from engine.store.lazy import TURN_LOG_GET, TURN_LOG_PUT, turn_log_row, turn_log_user
from engine.store.lazy import file_identity as _identity
from engine.store.memory import MemoryTables
from engine.store.records import LossSummary, Record, RecordLoss, RecordQuery
from engine.store.schema import (
    SCHEMA_VERSION,
    record_losses_table,
    records_table,
)
from engine.store.state import StateTables

__all__ = ["SCHEMA_VERSION", "SqlStore", "to_url"]


def _width(column: sa.Column[Any]) -> int | None:
    """A string column's length limit (None: unlimited text)."""
    return getattr(column.type, "length", None)


SCOPE_KINDS = ("user", "session", "template", "process")
"""The kinds a scope key starts with (``Scope.key``)."""


def scope_keys(scope: str) -> list[str]:
    """The scope keys a records query for ``scope`` matches, each exactly: a key
    (``user:u1``) itself, a bare id (``u1``) as each kind's key. An id is matched whole and as
    written: no wildcards, no case folding (SQLite's ``LIKE`` folds ASCII case, PostgreSQL's
    does not), and ``u1`` is not the end of another id (``user:bob:u1``)."""
    kind, sep, _ = scope.partition(":")
    if sep and kind in SCOPE_KINDS:
        return [scope]
    return [f"{kind}:{scope}" for kind in SCOPE_KINDS]


def _held_here(paths: list[Path]) -> list[Path]:
    """Those of ``paths`` this process has open (Linux ``/proc``; elsewhere none)."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return []
    held: set[tuple[int, int]] = set()
    for fd in fds:
        try:
            st = os.stat(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        held.add((st.st_dev, st.st_ino))
    return [path for path in paths if _identity(path) in held]


class SqlStore(ApprovalTables, EntryTables, FaqTables, MemoryTables, StateTables, ArtifactTables):
    """The engine's store on one database. Thread-safe; several processes may share it."""

    def __init__(self, url_or_path: str, **timeouts: float) -> None:
        super().__init__(url_or_path, **timeouts)
        database = sa.make_url(self.url).database if self.is_sqlite else None
        self.file = Path(database) if database and database != ":memory:" else None
        """The SQLite file (None: PostgreSQL or an in-memory database)."""
        self._opened = _identity(self.file) if self.file else None

    # -- the file under the store ----------------------------------------------------------

    def file_lost(self) -> str | None:
        """Why the SQLite file at the store's path is no longer the one this store has open
        (deleted, or replaced by another file); None while it is, and for PostgreSQL."""
        if self.file is None:
            return None
        now = _identity(self.file)
        if now == self._opened:
            return None
        if now is None:
            return f"store file {self.file} was deleted while the engine had it open"
        return f"store file {self.file} was replaced by another file while the engine had it open"

    def reopen(self) -> None:
        """Drop the connections to the lost file and open (create, migrate) the file at the
        path now.

        Raises:
            StoreError: the new file cannot be created or migrated.
        """
        if self.file is None:
            return
        # SQLite keeps the -wal and -shm of a file unlinked or renamed under it: a new file
        # at the path would read the old file's pages from them. Ours are the ones this
        # process still has open.
        journals = _held_here([Path(f"{self.file}{suffix}") for suffix in ("-wal", "-shm")])
        self.engine.dispose()
        try:
            for journal in journals:
                journal.unlink(missing_ok=True)
            self.file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot reopen store {self.display_url}: {exc}") from exc
        self._write(self._migrate)
        self._opened = _identity(self.file)

    # -- records ---------------------------------------------------------------------------

    def add_records(self, records: list[Record], *, again: bool = False) -> None:
        """Write ``records`` in one transaction; with ``again``, one whose id is stored
        already is skipped (it is the same record: a commit whose answer was lost).

        Raises:
            StoreUnavailableError: the database cannot write now (down, disk full, locked).
            StoreError: it refused these rows.
        """
        if not records:
            return
        t = records_table
        # the indexed columns have widths (PostgreSQL enforces them): a longer value is cut
        # there, and kept whole in the record's data
        names = ("id", "time", "agent", "point", "scope_key")
        widths = [_width(t.c[name]) for name in names]
        host_width = _width(t.c.host)
        rows = [
            (
                *(getattr(r, n)[:w] for n, w in zip(names, widths, strict=True)),
                r.generation,
                r.model_dump_json(),
                r.host[:host_width],
            )
            for r in records
        ]
        # the driver's executemany: records come in batches of hundreds, and the Core insert
        # costs several times more per row than the write itself
        sql = (
            "INSERT INTO records (id, time, agent, point, scope_key, generation, data, host) "
            f"VALUES ({', '.join([self.mark] * 8)})"
        ) + (" ON CONFLICT (id) DO NOTHING" if again else "")
        try:
            self._write(lambda conn: conn.exec_driver_sql(sql, rows))
        except StoreError as exc:
            # the driver's operational errors are the database's state, not the rows'
            if isinstance(exc.__cause__, sa.exc.OperationalError | sa.exc.InterfaceError):
                raise StoreUnavailableError(str(exc)) from exc.__cause__
            raise

    def query_records(self, query: RecordQuery) -> list[Record]:
        t = records_table
        stmt = sa.select(t.c.data)
        if query.id:  # a prefix as written: SQLite's LIKE would fold ASCII case
            stmt = stmt.where(sa.func.substr(t.c.id, 1, len(query.id)) == query.id)
        if query.agent:
            stmt = stmt.where(t.c.agent == query.agent)
        if query.point:
            stmt = stmt.where(t.c.point == query.point)
        if query.scope:
            stmt = stmt.where(t.c.scope_key.in_(scope_keys(query.scope)))
        if query.host:
            stmt = stmt.where(t.c.host == query.host)
        if query.since:
            stmt = stmt.where(t.c.time >= query.since)
        if query.until:
            stmt = stmt.where(t.c.time < query.until)
        stmt = stmt.order_by(t.c.seq.asc() if query.oldest_first else t.c.seq.desc())
        stmt = stmt.limit(query.limit)
        rows = self._read(lambda conn: conn.execute(stmt).all())
        return [Record.model_validate_json(row[0]) for row in rows]

    def prune_records(self, keep: int) -> int:
        """Keep the newest ``keep`` records; in the same transaction, drop script state that
        expired (by the wall clock) or was not written since the oldest record kept."""
        t = records_table

        def prune(conn: sa.Connection) -> int:
            cutoff = conn.execute(
                sa.select(t.c.seq).order_by(t.c.seq.desc()).offset(keep).limit(1)
            ).scalar()
            gone = 0
            if cutoff is not None:
                gone = int(conn.execute(t.delete().where(t.c.seq <= cutoff)).rowcount)
            oldest = conn.execute(sa.select(sa.func.min(t.c.time))).scalar() if gone else None
            self.prune_state(conn, now=datetime.now(UTC).isoformat(), before=oldest)
            return gone

        return int(self._write(prune))

    @property
    def mark(self) -> str:
        """The driver's parameter mark in raw SQL."""
        return "?" if self.engine.dialect.paramstyle == "qmark" else "%s"

    # -- the turn log ----------------------------------------------------------------------

    def memory_forget(self, scope: str) -> int:
        """Delete everything kept about a scope: its memory, the last prompt of a session or
        of a user's sessions, the entries of a session's or a user's conversations, the tool
        artifacts of a session or of a user's calls (their bytes through
        ``on_artifacts_forgotten``), its approvals, every script hook's state kept under it,
        and the FAQ answers kept for that user only; returns how many rows went."""
        # artifacts first: a user's rows from before schema 13 are found through the entries
        # and the turn log of their sessions, which go next
        gone = self.artifacts_forget(scope)
        gone += MemoryTables.memory_forget(self, scope) + self.entries_forget(scope)
        gone += self.state_forget(scope) + self.faq_forget(scope)
        return gone + self._write(lambda conn: self.approvals_forget(conn, scope))

    def turn_log_put(
        self, agent: str, session_id: str, question: str, time: str, *, user_id: str | None = None
    ) -> None:
        """Keep ``question`` as the last prompt of ``agent``'s session, sent by ``user_id``
        (one row per session, overwritten by the next; forgetting the user deletes it).

        Raises:
            StoreError: the database could not write it.
        """
        row = (*turn_log_row(agent, session_id, question, time), turn_log_user(user_id))
        sql = TURN_LOG_PUT.format(self.mark)
        self._write(lambda conn: conn.exec_driver_sql(sql, row))

    def turn_log_get(self, agent: str, session_id: str) -> str | None:
        """The last prompt kept for ``agent``'s session; None if there is none.

        Raises:
            StoreError: the database could not be read.
        """
        sql, key = TURN_LOG_GET.format(self.mark), turn_log_row(agent, session_id)
        row = self._read(lambda conn: conn.exec_driver_sql(sql, key).first())
        return None if row is None else str(row[0])

    def add_record_loss(self, loss: RecordLoss) -> None:
        t = record_losses_table
        row = {
            name: escape_text(value)[: _width(t.c[name])] for name, value in asdict(loss).items()
        }
        self._write(lambda conn: conn.execute(t.insert().values(**row)))

    def record_losses(self) -> LossSummary:
        t = record_losses_table
        counts = sa.select(t.c.cause, sa.func.count().label("n")).group_by(t.c.cause)
        newest = sa.select(t.c.error, t.c.time).order_by(t.c.seq.desc()).limit(1)

        def read(conn: sa.Connection) -> LossSummary:
            dropped = {str(row.cause): int(row.n) for row in conn.execute(counts).all()}
            last = conn.execute(newest).first()
            if last is None:
                return LossSummary(dropped)
            return LossSummary(dropped, str(last.error), str(last.time))

        return self._read(read)
