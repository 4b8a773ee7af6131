"""A store for one short run: its records go to an SQLite file through the standard library,
and the SQL store (SQLAlchemy, a tenth of a second to import) opens only when asked for more.

``hook_tool`` run once per tool call writes one record and reads nothing: importing
SQLAlchemy and checking the schema would cost it more than the decision. ``open_lazy_store``
takes this path only for an SQLite file that exists at the current schema version; a new,
older or unreadable file, an in-memory database and a URL open the SQL store at once, with
every error it raises today.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from engine.encoding import escape_text
from engine.errors import StoreError, StoreUnavailableError
from engine.store.version import SCHEMA_VERSION

if TYPE_CHECKING:
    from engine.store import Record, Store

WIDTHS = {"id": 40, "time": 40, "agent": 200, "point": 40, "scope_key": 300}
"""The widths of the records table's indexed columns (engine/store/schema.py; a test keeps
them equal): a longer value is cut there, and kept whole in the record's data."""

_INSERT = (
    "INSERT INTO records (id, time, agent, point, scope_key, generation, data, host) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
HOST_WIDTH = 40
"""The width of the records table's ``host`` column."""
TURN_LOG_PUT = (
    "INSERT INTO turn_log (agent, session_id, question, time, user_id) "
    "VALUES ({0}, {0}, {0}, {0}, {0}) "
    "ON CONFLICT (agent, session_id) DO UPDATE "
    "SET question = excluded.question, time = excluded.time, user_id = excluded.user_id"
)
"""Keep the last prompt of an agent's session and the user who sent it (both SQLite and
PostgreSQL; ``{0}``: the driver's parameter mark)."""
TURN_LOG_GET = "SELECT question FROM turn_log WHERE agent = {0} AND session_id = {0}"
TURN_LOG_WIDTHS = (200, 300)
"""The widths of the turn log's ``agent`` and ``session_id`` columns (``user_id``'s is the
session's)."""


def turn_log_row(agent: str, session_id: str, *rest: str) -> tuple[str, ...]:
    """A turn log row (or key) as both stores write it: the keys cut to their columns'
    widths, every text with NULs and lone surrogates escaped (PostgreSQL stores neither)."""
    a, s = TURN_LOG_WIDTHS
    return tuple(escape_text(text) for text in (agent[:a], session_id[:s], *rest))


def turn_log_user(user_id: str | None) -> str | None:
    """A user id as the turn log keeps it (as ``turn_log_row`` keeps a session id)."""
    return None if user_id is None else escape_text(user_id[: TURN_LOG_WIDTHS[1]])


def open_lazy_store(
    url_or_path: str, *, connect_timeout_s: float = 5.0, statement_timeout_s: float = 5.0
) -> Store:
    """A ``LazyStore`` for an SQLite file at the current schema version, else the SQL store
    (``engine.store.open_store``, which creates or migrates it).

    Raises:
        StoreError: as ``open_store``, for the stores it opens.
    """
    from engine.store import open_store

    def full() -> Store:
        return open_store(
            url_or_path,
            connect_timeout_s=connect_timeout_s,
            statement_timeout_s=statement_timeout_s,
        )

    conn = _connect_current(url_or_path, statement_timeout_s) if "://" not in url_or_path else None
    if conn is None:
        return full()
    # the Store methods it does not define itself come from the SQL store (``__getattr__``)
    return cast("Store", LazyStore(Path(url_or_path), conn, full))


def _connect_current(path: str, timeout_s: float) -> sqlite3.Connection | None:
    """A connection to the SQLite file at ``path`` if it is one at SCHEMA_VERSION, else None."""
    if path in ("", ":memory:") or not os.path.isfile(path):
        return None
    try:
        conn = sqlite3.connect(
            f"file:{path}?mode=rw", uri=True, timeout=timeout_s, check_same_thread=False
        )
    except sqlite3.Error:
        return None
    try:
        # the SQL store's connection settings (engine/store/db.py: _sqlite_connect)
        conn.isolation_level = None
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
        row = conn.execute(
            "SELECT value FROM hookengine_meta WHERE key = 'schema_version'"
        ).fetchone()
    except sqlite3.Error:
        row = None
    if row is None or row[0] != str(SCHEMA_VERSION):
        conn.close()
        return None
    return conn


def file_identity(path: Path) -> tuple[int, int] | None:
    """The device and inode of the file at ``path`` (None: there is none)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class LazyStore:
    """Records written with ``sqlite3`` in the SQL store's own rows and SQL; anything else
    (state, queries, the loss ledger, a reopen) goes to the SQL store, opened on first use.
    Thread-safe."""

    def __init__(self, path: Path, conn: sqlite3.Connection, opener: Callable[[], Store]) -> None:
        self.file = path
        self._conn: sqlite3.Connection | None = conn
        self._opener = opener
        self._full: Store | None = None
        self._lock = threading.Lock()
        self._files_forgotten: list[Callable[[list[Any]], None]] = []
        self._opened = file_identity(path)

    is_sqlite = True
    """Always: asked without opening the SQL store (engine/batches.py asks it per batch)."""

    @property
    def url(self) -> str:
        return f"sqlite:///{self.file}"

    def full(self) -> Store:
        """The SQL store on the same file, opened now if it is not yet."""
        with self._lock:
            if self._full is None:
                full = self._opener()
                for remove in self._files_forgotten:
                    full.on_artifacts_forgotten(remove)
                self._full = full
            return self._full

    def on_artifacts_forgotten(self, remove: Callable[[list[Any]], None]) -> None:
        """As ``SqlStore.on_artifacts_forgotten``, without opening the SQL store for it: the
        store opened later gets ``remove`` (only it forgets artifacts)."""
        with self._lock:
            self._files_forgotten.append(remove)
            if self._full is not None:
                self._full.on_artifacts_forgotten(remove)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.full(), name)

    def add_records(self, records: list[Record], *, again: bool = False) -> None:
        """As ``SqlStore.add_records``: one transaction, the same rows.

        Raises:
            StoreUnavailableError: the database cannot write now (locked, disk full).
            StoreError: it refused these rows.
        """
        if not records:
            return
        rows = [
            (
                *(getattr(r, name)[:width] for name, width in WIDTHS.items()),
                r.generation,
                r.model_dump_json(),
                r.host[:HOST_WIDTH],
            )
            for r in records
        ]
        sql = _INSERT + (" ON CONFLICT (id) DO NOTHING" if again else "")
        with self._lock:
            if self._conn is not None:
                self._write(self._conn, sql, rows)
                return
        self.full().add_records(records, again=again)

    def _write(self, conn: sqlite3.Connection, sql: str, rows: list[tuple[Any, ...]]) -> None:
        try:
            conn.execute("BEGIN IMMEDIATE")  # as the SQL store's writers: the lock up front
            try:
                conn.executemany(sql, rows)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except (sqlite3.OperationalError, sqlite3.InterfaceError) as exc:
            raise StoreUnavailableError(f"store {self.url}: write failed: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.url}: write failed: {exc}") from exc

    def turn_log_put(
        self, agent: str, session_id: str, question: str, time: str, *, user_id: str | None = None
    ) -> None:
        """As ``SqlStore.turn_log_put``: the session's last prompt, in one write."""
        row = (*turn_log_row(agent, session_id, question, time), turn_log_user(user_id))
        with self._lock:
            if self._conn is not None:
                self._write(self._conn, TURN_LOG_PUT.format("?"), [row])
                return
        self.full().turn_log_put(agent, session_id, question, time, user_id=user_id)

    def turn_log_get(self, agent: str, session_id: str) -> str | None:
        """As ``SqlStore.turn_log_get``: the session's last prompt (None: none kept)."""
        key = turn_log_row(agent, session_id)
        with self._lock:
            if self._conn is not None:
                try:
                    found = self._conn.execute(TURN_LOG_GET.format("?"), key).fetchone()
                except sqlite3.Error as exc:
                    raise StoreError(f"store {self.url}: read failed: {exc}") from exc
                return None if found is None else str(found[0])
        return self.full().turn_log_get(agent, session_id)

    def file_lost(self) -> str | None:
        """As ``SqlStore.file_lost``: why the file at the path is no longer the one open."""
        with self._lock:
            fast = self._conn is not None
        if not fast:
            return self.full().file_lost()
        now = file_identity(self.file)
        if now == self._opened:
            return None
        how = "deleted" if now is None else "replaced by another file"
        return f"store file {self.file} was {how} while the engine had it open"

    def reopen(self) -> None:
        """Open the file at the path anew, through the SQL store (which creates and migrates
        it); records go there from now on."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        full = self.full()
        if full.file_lost() is not None:
            full.reopen()

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
            full = self._full
        if conn is not None:
            conn.close()
        if full is not None:
            full.close()
