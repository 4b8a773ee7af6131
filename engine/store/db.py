"""The database connection under the store: SQLite (WAL) or PostgreSQL, errors translated."""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from engine.errors import StoreError
from engine.store.deadline import deadline, is_no_answer
from engine.store.schema import migrate

T = TypeVar("T")

_WRITE = "hookengine_write"
_SCOPE_LOCKS = 7415
"""Advisory lock class for per-scope writers on PostgreSQL (7414 guards migration)."""
CONNECT_TIMEOUT_S = 5.0
"""Default time to get a connection: from the pool, or a new one through the server's start-up."""
STATEMENT_TIMEOUT_S = 5.0
"""Default time a store call's statements may take (on SQLite: the wait for a lock)."""
GRACE_S = 1.0
"""Past the server's own statement timeout, the client drops the connection."""


def one_line(exc: BaseException) -> str:
    """``exc``'s message on one line: its first. SQLAlchemy's later lines are the statement,
    its parameters (a record's or a state value's content, which no error or status may show)
    and a link ("(Background on this error at: https://sqlalche.me/...)")."""
    lines = str(exc).strip().splitlines()
    return " ".join(lines[0].split()) if lines else type(exc).__name__


def _opening(exc: BaseException) -> str:
    """Why a store could not be opened, in one line."""
    if isinstance(exc, ImportError):  # create_engine imports the URL's driver
        return f"its database driver is not installed ({exc})"
    if isinstance(exc, ValueError):
        return f"not a database URL ({one_line(exc)})"
    return one_line(exc)


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


def _sqlite_connect(busy_ms: int, dbapi_conn: Any, _record: Any) -> None:
    # SQLAlchemy emits BEGIN itself (see _sqlite_begin); pysqlite's own would be deferred
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    # NORMAL in WAL mode: a killed process loses nothing committed (only power loss could)
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute(f"PRAGMA busy_timeout={busy_ms}")
    cur.close()


def _sqlite_begin(conn: sa.Connection) -> None:
    # A writer takes the lock up front: a deferred transaction that reads, then writes, fails
    # at once with "database is locked" when another process writes, instead of waiting.
    write = conn.get_execution_options().get(_WRITE, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


class Database:
    """One database, shared by threads and processes; reads and writes translate errors.

    Every call is bounded: getting a connection takes at most ``connect_timeout_s`` (the wait
    for a pooled one, a pooled one's liveness check, or a new one's start-up), and its
    statements ``statement_timeout_s`` (PostgreSQL: enforced by the server, and by the client
    ``GRACE_S`` later for a server that froze; SQLite: the wait for a lock). Past either, the
    call raises ``StoreError``. After a server did not answer, calls fail at once for
    ``connect_timeout_s``: a frozen server costs one call the wait, not every call.
    """

    def __init__(
        self,
        url_or_path: str,
        *,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        statement_timeout_s: float = STATEMENT_TIMEOUT_S,
    ) -> None:
        self.url = to_url(url_or_path)
        self.is_sqlite = self.url.startswith("sqlite")
        self._one_at_a_time: threading.RLock | None = None
        """An in-memory SQLite database lives in one connection: every thread (the record
        writer's too) shares it, one session at a time."""
        self.connect_timeout_s = connect_timeout_s
        self.statement_timeout_s = statement_timeout_s
        self._closed = threading.Event()
        self._silent_until = 0.0
        """monotonic() until which calls fail at once: the server did not answer."""
        self._joined = threading.local()
        """This thread's connection inside ``one_transaction`` (None outside)."""
        try:
            if self.is_sqlite and sa.make_url(self.url).database in (None, "", ":memory:"):
                self._one_at_a_time = threading.RLock()
            self.engine = sa.create_engine(self.url, **self._engine_options())
            self._listen()
            with self._session() as conn:
                conn.execution_options(**{_WRITE: True})
                with conn.begin():
                    self.migrated_from = self._migrate(conn)
        except (SQLAlchemyError, StoreError, ImportError, ValueError) as exc:
            if hasattr(self, "engine"):
                self.engine.dispose()
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"cannot open store {self.display_url}: {_opening(exc)}") from exc

    @property
    def display_url(self) -> str:
        """The URL without a password."""
        try:
            return sa.make_url(self.url).render_as_string(hide_password=True)
        except (SQLAlchemyError, ValueError):  # a URL SQLAlchemy cannot read (a bad port)
            return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", self.url)

    def _engine_options(self) -> dict[str, Any]:
        if self.is_sqlite:
            sqlite_args = {"check_same_thread": False, "timeout": self.statement_timeout_s}
            if self._one_at_a_time is not None:
                return {"poolclass": sa.pool.StaticPool, "connect_args": sqlite_args}
            return {"connect_args": sqlite_args}
        args: dict[str, Any] = {
            # a dead peer or path (not a frozen server: see engine.store.deadline)
            "keepalives": 1,
            "keepalives_idle": 10,
            "keepalives_interval": 5,
            "keepalives_count": 3,
            "tcp_user_timeout": int(self._statement_budget_s() * 1000),
        }
        options = sa.make_url(self.url).query.get("options", "")
        if isinstance(options, tuple):  # given twice: libpq takes the last
            options = options[-1]
        if "statement_timeout" not in options:  # the URL's own setting wins
            timeout = f"-c statement_timeout={int(self.statement_timeout_s * 1000)}"
            args["options"] = f"{options} {timeout}".strip()
        return {
            "pool_size": 8,
            "max_overflow": 8,
            "pool_pre_ping": True,
            "pool_timeout": self.connect_timeout_s,
            "connect_args": args,
        }

    def _listen(self) -> None:
        if self.is_sqlite:
            busy_ms = int(self.statement_timeout_s * 1000)
            sa.event.listen(self.engine, "connect", partial(_sqlite_connect, busy_ms))
            sa.event.listen(self.engine, "begin", _sqlite_begin)
            return
        from engine.store.deadline import connect

        def do_connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
            return connect(self.connect_timeout_s, cargs, cparams)

        sa.event.listen(self.engine, "do_connect", do_connect)

    def _statement_budget_s(self) -> float:
        return self.statement_timeout_s + (0.0 if self.is_sqlite else GRACE_S)

    @contextlib.contextmanager
    def _session(self) -> Iterator[sa.Connection]:
        """A connection within ``connect_timeout_s``, used and given back (its reset included)
        within the statement budget."""
        with self._one_at_a_time or contextlib.nullcontext():
            with deadline(self.connect_timeout_s):
                conn = self.engine.connect()
            with deadline(self._statement_budget_s()):
                try:
                    yield conn
                finally:
                    conn.close()

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
        self._check_answering("read")
        try:
            with self._session() as conn:
                return fn(conn)
        except SQLAlchemyError as exc:
            raise self._failure("read", exc) from exc

    def _read_sql(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        """The rows of one plain-SQL read (``sql`` in the driver's parameter style).

        SQLite: on a pooled DBAPI connection as it is (autocommit, so the statement reads one
        snapshot by itself), without SQLAlchemy's per-statement work (an execution context,
        events, a BEGIN, a result object), which cost most of a small read. PostgreSQL: as
        ``_read`` does (its deadline needs the bounded connection's session).
        """
        if not self.is_sqlite:
            return self._read(lambda conn: list(conn.exec_driver_sql(sql, params).all()))
        self._check_answering("read")
        try:
            with self._one_at_a_time or contextlib.nullcontext():
                raw = self.engine.raw_connection()
                try:
                    return raw.driver_connection.execute(sql, params).fetchall()  # type: ignore[union-attr]
                finally:
                    raw.close()
        except SQLAlchemyError as exc:
            raise self._failure("read", exc) from exc
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.display_url}: read failed: {exc}") from exc

    @contextlib.contextmanager
    def one_transaction(self) -> Iterator[None]:
        """Every write this thread makes inside goes in one transaction: all are kept, or,
        when one fails or the block raises, none (a script call's state and entries).

        Raises:
            StoreError: the store could not write (nothing was kept).
        """
        if getattr(self._joined, "conn", None) is not None:
            yield  # already inside one
            return
        self._check_answering("write")
        try:
            with self._session() as conn:
                conn.execution_options(**{_WRITE: True})
                with conn.begin():
                    self._joined.conn = conn
                    try:
                        yield
                    finally:
                        self._joined.conn = None
        except SQLAlchemyError as exc:
            raise self._failure("write", exc) from exc

    def _write(self, fn: Callable[[sa.Connection], T]) -> T:
        joined = getattr(self._joined, "conn", None)
        if joined is not None:
            return fn(joined)  # one_transaction commits, or rolls back and raises StoreError
        self._check_answering("write")
        try:
            with self._session() as conn:
                conn.execution_options(**{_WRITE: True})
                with conn.begin():
                    return fn(conn)
        except SQLAlchemyError as exc:
            raise self._failure("write", exc) from exc

    def _check_answering(self, what: str) -> None:
        left = self._silent_until - time.monotonic()
        if left > 0:
            raise StoreError(
                f"store {self.display_url}: {what} failed: the server did not answer a moment "
                f"ago; calls fail at once for {left:.1f} s more"
            )

    def _failure(self, what: str, exc: SQLAlchemyError) -> StoreError:
        if is_no_answer(getattr(exc, "orig", None)):
            self._silent_until = time.monotonic() + self.connect_timeout_s
        return StoreError(f"store {self.display_url}: {what} failed: {one_line(exc)}")

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self.engine.dispose()
