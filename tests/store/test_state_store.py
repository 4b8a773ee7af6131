"""Script state in the store: expiry against the event's time, pruning with the records'
retention, and the v3 → v4 migration that added the row times (SQLite and PostgreSQL)."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from engine.store import Record, open_store
from engine.store.db import to_url
from engine.store.schema import MIGRATIONS, SCHEMA_VERSION, meta_table, state_table
from engine.store.sql import SqlStore
from engine.store.state import expiry, utc

T0 = "2026-03-01T12:00:00+00:00"


def at(seconds: int) -> str:
    return f"2026-03-01T12:{seconds // 60:02d}:{seconds % 60:02d}+00:00"


def record(n: int, time: str) -> Record:
    return Record(
        id=f"r{n}",
        time=time,
        agent="a",
        point="after_turn",
        scope={},
        scope_key="user:u",
        event={},
        hooks=[],
        outcome={},
    )


def test_a_key_with_a_ttl_reads_as_absent_from_its_expiry_on(store: SqlStore) -> None:
    store.state_save("h", "user:u", {"w": [1], "k": 2}, ttls={"w": 60}, time=T0)
    assert store.state_load("h", "user:u", now=at(59)) == {"w": [1], "k": 2}
    assert store.state_load("h", "user:u", now=at(60)) == {"k": 2}
    assert store.state_load("h", "user:u", now="2099-01-01T00:00:00Z") == {"k": 2}
    assert store.state_load("h", "user:u") == {"w": [1], "k": 2}  # no time: every row


def test_expiry_compares_instants_not_the_text_of_offsets(store: SqlStore) -> None:
    store.state_save("h", "s", {"w": 1}, ttls={"w": 3600}, time="2026-03-01T14:00:00+02:00")
    assert store.state_load("h", "s", now="2026-03-01T12:59:59Z") == {"w": 1}
    assert store.state_load("h", "s", now="2026-03-01T15:00:00+02:00") == {}
    assert store.state_load("h", "s", now="2026-03-01T13:00:00") == {}  # no offset: UTC


def test_writing_a_key_again_without_a_ttl_keeps_it(store: SqlStore) -> None:
    store.state_save("h", "s", {"w": 1}, ttls={"w": 10}, time=T0)
    store.state_save("h", "s", {"w": 2}, time=at(5))
    assert store.state_load("h", "s", now="2030-01-01T00:00:00Z") == {"w": 2}


def test_pruning_drops_expired_state_and_keeps_the_rest(store: SqlStore) -> None:
    store.state_save("h", "s", {"old": 1, "keep": 2}, ttls={"old": 1}, time="2020-01-01T00:00:00Z")
    store.state_save("h", "s", {"later": 3}, ttls={"later": 60}, time="2099-01-01T00:00:00Z")
    store.add_records([record(1, T0)])
    assert store.prune_records(10) == 0  # the window is not full: only expiry counts
    assert store.state_load("h", "s") == {"keep": 2, "later": 3}


def test_pruning_records_drops_state_not_written_since_the_oldest_record_kept(
    store: SqlStore,
) -> None:
    store.state_save("h", "s", {"stale": 1}, time=at(0))
    store.state_save("h", "s", {"fresh": 2}, time=at(30))
    store.add_records([record(n, at(10 * n)) for n in range(6)])  # times 0, 10, ..., 50
    assert store.prune_records(3) == 3  # kept: 30, 40, 50
    assert store.state_load("h", "s") == {"fresh": 2}


def test_expiry_and_utc_handle_odd_times() -> None:
    assert utc("not a time") is None and utc(None) is None
    assert expiry("not a time", 5) is None
    assert expiry("9999-12-31T23:59:59Z", 315_360_000) is None  # past year 9999: never
    assert expiry(T0, 0.5) == "2026-03-01T12:00:00.500000+00:00"


def make_v3_store(url: str) -> None:
    """A store as schema version 3 left it: script_state without the row times, one row."""
    old = sa.MetaData()
    v3_state = sa.Table(
        "script_state",
        old,
        sa.Column("hook", sa.String(200), primary_key=True),
        sa.Column("scope", sa.String(300), primary_key=True),
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    engine = sa.create_engine(to_url(url))
    try:
        with engine.begin() as conn:
            meta_table.create(conn)
            for version in (1, 2, 3):
                for table in MIGRATIONS[version]:
                    (v3_state if table is state_table else table).create(conn)
            conn.execute(meta_table.insert().values(key="schema_version", value="3"))
            conn.execute(v3_state.insert().values(hook="a:h", scope="user:u", key="n", value="7"))
    finally:
        engine.dispose()


def columns(url: str) -> dict[str, Any]:
    engine = sa.create_engine(to_url(url))
    try:
        with engine.connect() as conn:
            found = {c["name"] for c in sa.inspect(conn).get_columns("script_state")}
            rows = conn.execute(sa.select(state_table.c.key, state_table.c.written_at)).all()
            indexes = {i["name"] for i in sa.inspect(conn).get_indexes("script_state")}
        return {"columns": found, "rows": rows, "indexes": indexes}
    finally:
        engine.dispose()


def test_a_v3_store_is_migrated_to_v4_keeping_its_state(db_url: str) -> None:
    make_v3_store(db_url)
    store = open_store(db_url)
    try:
        assert store.migrated_from == 3 and SCHEMA_VERSION >= 4  # type: ignore[attr-defined]
        assert store.state_load("a:h", "user:u", now=T0) == {"n": 7}
        store.state_save("a:h", "user:u", {"w": 1}, ttls={"w": 60}, time=T0)
        assert store.state_load("a:h", "user:u", now=at(61)) == {"n": 7}
    finally:
        store.close()
    found = columns(db_url)
    assert {"written_at", "expires_at"} <= found["columns"]
    assert {"ix_script_state_written", "ix_script_state_expires"} <= found["indexes"]
    assert all(written is not None for _, written in found["rows"])  # old rows: written now
    reopened = open_store(db_url)
    assert reopened.migrated_from == SCHEMA_VERSION  # type: ignore[attr-defined]
    reopened.close()


def test_a_state_read_the_database_refuses_is_a_store_error(tmp_path: Any) -> None:
    """The plain-SQL read path (SQLite straight on the DBAPI connection) still answers a
    failing read with StoreError, naming the store, never a raw driver exception."""
    import sqlite3

    import pytest

    from engine.errors import StoreError

    path = tmp_path / "store.db"
    store = open_store(str(path))
    store.state_save("h", "user:u", {"k": 1}, time=T0)
    assert store.state_load("h", "user:u", now=at(1)) == {"k": 1}
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE script_state")
    with pytest.raises(StoreError, match=r"store .*store\.db.*read failed: no such table"):
        store.state_load("h", "user:u", now=at(1))
    store.close()


def test_writes_in_one_transaction_are_kept_together_or_not_at_all(store: SqlStore) -> None:
    entry = [{"kind": "k", "data": {"n": 1}}]
    with pytest.raises(RuntimeError), store.one_transaction():
        store.state_save("h", "user:u", {"n": 1}, time=T0)
        store.entries_add("a", "s", entry, user_id="u", turn=None, time=T0)
        raise RuntimeError("the call failed after both writes")
    assert store.state_load("h", "user:u") == {} and store.entries_list("a", "s") == []
    with store.one_transaction():
        store.state_save("h", "user:u", {"n": 2}, time=T0)
        with store.one_transaction():  # joins the one around it
            store.entries_add("a", "s", entry, user_id="u", turn=None, time=T0)
    assert store.state_load("h", "user:u") == {"n": 2}
    assert [e["data"] for e in store.entries_list("a", "s")] == [{"n": 1}]
