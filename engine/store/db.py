"""The database connection under the store: SQLite (WAL) or PostgreSQL, errors translated."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from engine.errors import StoreError
from engine.store.schema import migrate

T = TypeVar("T")

_WRITE = "hookengine_write"
_SCOPE_LOCKS = 7415
"""Advisory lock class for per-scope writers on PostgreSQL (7414 guards migration)."""


def to_url(url_or_path: str) -> str:
    """A SQLAlchemy URL for a URL or a plain SQLite file path (its folder is created).

    Raises:
        StoreError: the folder cannot be created (a read-only project folder).
    """
    if "://" in url_or_path:
        if url_or_path.startswith("postgresql://"):
            return "postgresql+psycopg://" + url_or_path.removeprefix("postgresql://")
        if url_or_path.startswith("postgres://"):
            return "postgresql+psycopg://" + url_or_path.removeprefix("postgres://")
        return url_or_path
    path = Path(url_or_path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as exc:  # a read-only project folder, a NUL in db_path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise StoreError(f"cannot create the store's folder {path.parent}: {reason}") from exc
    return f"sqlite:///{path}"


def inserted_key(result: sa.CursorResult[Any]) -> Any:
    """The primary key value of the one row an INSERT added.

    Raises:
        StoreError: the database reported no primary key (the statement was no single insert).
    """
    key = result.inserted_primary_key
    if key is None:
        raise StoreError("the database reported no primary key for an inserted row")
    return key[0]


def _sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
    # SQLAlchemy emits BEGIN itself (see _sqlite_begin); pysqlite's own would be deferred
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    # NORMAL in WAL mode: a killed process loses nothing committed (only power loss could)
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def _sqlite_begin(conn: sa.Connection) -> None:
    # A writer takes the lock up front: a deferred transaction that reads, then writes, fails
    # at once with "database is locked" when another process writes, instead of waiting.
    write = conn.get_execution_options().get(_WRITE, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


class Database:
    """One database, shared by threads and processes; reads and writes translate errors."""

    def __init__(self, url_or_path: str) -> None:
        self.url = to_url(url_or_path)
        self.is_sqlite = self.url.startswith("sqlite")
        self._closed = threading.Event()
        try:
            self.engine = sa.create_engine(self.url, **self._engine_options())
            if self.is_sqlite:
                sa.event.listen(self.engine, "connect", _sqlite_connect)
                sa.event.listen(self.engine, "begin", _sqlite_begin)
            with self.engine.connect() as conn:
                conn.execution_options(**{_WRITE: True})
                with conn.begin():
                    self.migrated_from = self._migrate(conn)
        except (SQLAlchemyError, StoreError) as exc:
            if hasattr(self, "engine"):
                self.engine.dispose()
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"cannot open store {self.display_url}: {exc}") from exc

    @property
    def display_url(self) -> str:
        """The URL without a password."""
        return sa.make_url(self.url).render_as_string(hide_password=True)

    def _engine_options(self) -> dict[str, Any]:
        if self.is_sqlite:
            return {"connect_args": {"check_same_thread": False, "timeout": 30}}
        return {"pool_size": 8, "max_overflow": 8, "pool_pre_ping": True}

    def _migrate(self, conn: sa.Connection) -> int:
        if not self.is_sqlite:
            # one migrator at a time when several processes start together
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(7414)"))
        return migrate(conn, shown=self.display_url)

    def lock_scope(self, conn: sa.Connection, scope: str) -> None:
        """Serialize writers of one scope (SQLite's BEGIN IMMEDIATE already serializes all)."""
        if not self.is_sqlite:
            conn.execute(
                sa.text("SELECT pg_advisory_xact_lock(:cls, hashtext(:scope))"),
                {"cls": _SCOPE_LOCKS, "scope": scope},
            )

    def _read(self, fn: Callable[[sa.Connection], T]) -> T:
        try:
            with self.engine.connect() as conn:
                return fn(conn)
        except SQLAlchemyError as exc:
            raise StoreError(f"store {self.display_url}: read failed: {exc}") from exc

    def _write(self, fn: Callable[[sa.Connection], T]) -> T:
        try:
            with self.engine.connect() as conn:
                conn.execution_options(**{_WRITE: True})
                with conn.begin():
                    return fn(conn)
        except SQLAlchemyError as exc:
            raise StoreError(f"store {self.display_url}: write failed: {exc}") from exc

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self.engine.dispose()
