"""The SQL store: SQLAlchemy Core over SQLite (default, WAL) or PostgreSQL (psycopg 3)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from engine.errors import StoreError
from engine.store.records import Record, RecordQuery

SCHEMA_VERSION = 1

metadata = sa.MetaData()

meta_table = sa.Table(
    "hookengine_meta", metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

records_table = sa.Table(
    "records", metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("id", sa.String(40), nullable=False, unique=True),
    sa.Column("time", sa.String(40), nullable=False, index=True),
    sa.Column("agent", sa.String(200), nullable=False, index=True),
    sa.Column("point", sa.String(40), nullable=False),
    sa.Column("scope_key", sa.String(300), nullable=False, index=True),
    sa.Column("generation", sa.Integer, nullable=False, default=0),
    sa.Column("data", sa.Text, nullable=False),
)

state_table = sa.Table(
    "script_state", metadata,
    sa.Column("hook", sa.String(200), primary_key=True),
    sa.Column("scope", sa.String(300), primary_key=True),
    sa.Column("key", sa.String(200), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)


def to_url(url_or_path: str) -> str:
    """A SQLAlchemy URL for a URL or a plain SQLite file path (its folder is created)."""
    if "://" in url_or_path:
        if url_or_path.startswith("postgresql://"):
            return "postgresql+psycopg://" + url_or_path.removeprefix("postgresql://")
        return url_or_path
    path = Path(url_or_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.close()


class SqlStore:
    """The engine's store on one database. Thread-safe; several processes may share it."""

    def __init__(self, url_or_path: str) -> None:
        self.url = to_url(url_or_path)
        self.is_sqlite = self.url.startswith("sqlite")
        try:
            self.engine = sa.create_engine(self.url, **self._engine_options())
            if self.is_sqlite:
                sa.event.listen(self.engine, "connect", _sqlite_pragmas)
            self._migrate()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot open store {self.display_url}: {exc}") from exc
        self._closed = threading.Event()

    @property
    def display_url(self) -> str:
        """The URL without a password."""
        return sa.make_url(self.url).render_as_string(hide_password=True)

    def _engine_options(self) -> dict[str, Any]:
        if self.is_sqlite:
            return {"connect_args": {"check_same_thread": False, "timeout": 30}}
        return {"pool_size": 8, "max_overflow": 8, "pool_pre_ping": True}

    def _migrate(self) -> None:
        with self.engine.begin() as conn:
            if self.is_sqlite:
                metadata.create_all(conn)
            else:
                # one migrator at a time when several processes start together
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(7414)"))
                metadata.create_all(conn)
            row = conn.execute(
                sa.select(meta_table.c.value).where(meta_table.c.key == "schema_version")
            ).first()
            if row is None:
                conn.execute(meta_table.insert().values(key="schema_version",
                                                        value=str(SCHEMA_VERSION)))
            elif int(row[0]) > SCHEMA_VERSION:
                raise StoreError(
                    f"store {self.display_url} has schema {row[0]}, newer than this engine's "
                    f"{SCHEMA_VERSION}: upgrade hookengine"
                )

    # -- records ---------------------------------------------------------------------------

    def add_records(self, records: list[Record]) -> None:
        if not records:
            return
        rows = [
            {"id": r.id, "time": r.time, "agent": r.agent, "point": r.point,
             "scope_key": r.scope_key, "generation": r.generation, "data": r.model_dump_json()}
            for r in records
        ]
        self._write(lambda conn: conn.execute(records_table.insert(), rows))

    def query_records(self, query: RecordQuery) -> list[Record]:
        t = records_table
        stmt = sa.select(t.c.data)
        if query.agent:
            stmt = stmt.where(t.c.agent == query.agent)
        if query.point:
            stmt = stmt.where(t.c.point == query.point)
        if query.scope:
            if ":" in query.scope:
                stmt = stmt.where(t.c.scope_key == query.scope)
            else:
                stmt = stmt.where(t.c.scope_key.like(f"%:{query.scope}"))
        if query.since:
            stmt = stmt.where(t.c.time >= query.since)
        if query.until:
            stmt = stmt.where(t.c.time < query.until)
        stmt = stmt.order_by(t.c.seq.asc() if query.oldest_first else t.c.seq.desc())
        stmt = stmt.limit(query.limit)
        rows = self._read(lambda conn: conn.execute(stmt).all())
        return [Record.model_validate_json(row[0]) for row in rows]

    def prune_records(self, keep: int) -> int:
        t = records_table

        def prune(conn: sa.Connection) -> int:
            cutoff = conn.execute(
                sa.select(t.c.seq).order_by(t.c.seq.desc()).offset(keep).limit(1)
            ).scalar()
            if cutoff is None:
                return 0
            return conn.execute(t.delete().where(t.c.seq <= cutoff)).rowcount

        return int(self._write(prune))

    # -- script state ----------------------------------------------------------------------

    def state_load(self, hook: str, scope: str) -> dict[str, Any]:
        t = state_table
        stmt = sa.select(t.c.key, t.c.value).where(t.c.hook == hook, t.c.scope == scope)
        rows = self._read(lambda conn: conn.execute(stmt).all())
        return {key: json.loads(value) for key, value in rows}

    def state_save(self, hook: str, scope: str, writes: dict[str, Any]) -> None:
        if not writes:
            return
        t = state_table

        def save(conn: sa.Connection) -> None:
            for key, value in writes.items():
                where = (t.c.hook == hook) & (t.c.scope == scope) & (t.c.key == key)
                conn.execute(t.delete().where(where))
                if value is not None:
                    conn.execute(t.insert().values(hook=hook, scope=scope, key=key,
                                                   value=json.dumps(value)))

        self._write(save)

    # -- plumbing --------------------------------------------------------------------------

    def _read(self, fn: Any) -> Any:
        try:
            with self.engine.connect() as conn:
                return fn(conn)
        except SQLAlchemyError as exc:
            raise StoreError(f"store {self.display_url}: read failed: {exc}") from exc

    def _write(self, fn: Any) -> Any:
        try:
            with self.engine.begin() as conn:
                return fn(conn)
        except SQLAlchemyError as exc:
            raise StoreError(f"store {self.display_url}: write failed: {exc}") from exc

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self.engine.dispose()
