"""The lazy store of one-shot runs: records through sqlite3 in the SQL store's rows, the SQL
store opened for anything else, and whenever the file is not a current store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine.errors import StoreError, StoreUnavailableError
from engine.store import Record, RecordQuery, open_store
from engine.store.lazy import (
    HOST_WIDTH,
    TURN_LOG_WIDTHS,
    WIDTHS,
    LazyStore,
    open_lazy_store,
)
from engine.store.schema import records_table, turn_log_table
from engine.store.sql import SqlStore
from engine.store.version import SCHEMA_VERSION


def record(n: int, **fields: str) -> Record:
    values = {
        "id": f"r{n}",
        "time": "2026-03-01T12:00:00+00:00",
        "agent": "a",
        "point": "tool_call",
        "scope_key": "user:u",
        **fields,
    }
    return Record(
        scope={"user_id": "u"},
        event={"name": "shell", "input": {"command": "ls"}},
        hooks=[],
        outcome={"blocked": False},
        generation=2,
        **values,
    )


def current_store(path: Path) -> Path:
    open_store(str(path)).close()
    return path


def rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT seq, id, time, agent, point, scope_key, generation, data FROM records"
        ).fetchall()


def test_the_widths_are_the_records_tables() -> None:
    widths = {name: getattr(records_table.c[name].type, "length", None) for name in WIDTHS}
    assert widths == WIDTHS
    assert getattr(records_table.c.host.type, "length", None) == HOST_WIDTH
    keys = (turn_log_table.c.agent, turn_log_table.c.session_id)
    assert tuple(getattr(c.type, "length", None) for c in keys) == TURN_LOG_WIDTHS


def test_a_current_sqlite_file_gets_the_lazy_store(tmp_path: Path) -> None:
    store = open_lazy_store(str(current_store(tmp_path / "s.db")))
    try:
        assert isinstance(store, LazyStore)
    finally:
        store.close()


@pytest.mark.parametrize("name", ["new.db", ":memory:", "old.db", "junk.db"])
def test_anything_but_a_current_file_gets_the_sql_store(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    if name == "old.db":
        current_store(path)
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE hookengine_meta SET value = '3' WHERE key = 'schema_version'")
    if name == "junk.db":
        path.write_bytes(b"not a database")
    target = name if name == ":memory:" else str(path)
    if name == "junk.db":  # the SQL store's own refusal, as without the lazy path
        with pytest.raises(StoreError):
            open_lazy_store(target)
        return
    store = open_lazy_store(target)
    try:
        assert isinstance(store, SqlStore)
        if name != ":memory:":
            with sqlite3.connect(path) as conn:
                version = conn.execute("SELECT value FROM hookengine_meta").fetchone()[0]
            assert version == str(SCHEMA_VERSION)
    finally:
        store.close()


def test_records_are_stored_in_the_rows_the_sql_store_writes(tmp_path: Path) -> None:
    long = {"agent": "x" * 300, "scope_key": "user:" + "y" * 400}
    batch = [record(1), record(2, **long)]
    lazy, full = current_store(tmp_path / "lazy.db"), current_store(tmp_path / "full.db")
    store = open_lazy_store(str(lazy))
    store.add_records(batch)
    store.close()
    sql = open_store(str(full))
    sql.add_records(batch)
    sql.close()
    assert rows(lazy) == rows(full)
    reread = open_store(str(lazy))
    assert reread.query_records(RecordQuery(oldest_first=True)) == batch
    reread.close()


def test_a_record_written_again_is_skipped_and_a_duplicate_is_refused(tmp_path: Path) -> None:
    store = open_lazy_store(str(current_store(tmp_path / "s.db")))
    try:
        store.add_records([record(1)])
        store.add_records([record(1)], again=True)
        with pytest.raises(StoreError) as caught:
            store.add_records([record(1)])
        assert not isinstance(caught.value, StoreUnavailableError)
    finally:
        store.close()
    assert len(rows(tmp_path / "s.db")) == 1


def test_a_locked_file_is_unavailable_not_refused(tmp_path: Path) -> None:
    path = current_store(tmp_path / "s.db")
    store = open_lazy_store(str(path), statement_timeout_s=0.05)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreUnavailableError):
            store.add_records([record(1)])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    store.add_records([record(1)])
    store.close()
    assert len(rows(path)) == 1


def test_anything_else_opens_the_sql_store_on_the_same_file(tmp_path: Path) -> None:
    store = open_lazy_store(str(current_store(tmp_path / "s.db")))
    assert isinstance(store, LazyStore)
    try:
        store.add_records([record(1)])
        store.state_save("h", "user:u", {"k": 1}, time="2026-03-01T12:00:00+00:00")
        assert store.state_load("h", "user:u") == {"k": 1}
        assert [r.id for r in store.query_records(RecordQuery())] == ["r1"]
        assert isinstance(store.full(), SqlStore)
    finally:
        store.close()


def test_a_deleted_file_is_noticed_and_reopened_as_a_new_store(tmp_path: Path) -> None:
    path = current_store(tmp_path / "s.db")
    store = open_lazy_store(str(path))
    try:
        store.add_records([record(1)])
        assert store.file_lost() is None
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        lost = store.file_lost()
        assert lost is not None and "deleted" in lost
        store.reopen()
        assert store.file_lost() is None
        store.add_records([record(2)])
    finally:
        store.close()
    assert [row[1] for row in rows(path)] == ["r2"]
