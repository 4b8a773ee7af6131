"""Schema versions: a new store is created at the current version, an older one is migrated
forward with its data kept, a newer one is refused; errors are StoreError."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from engine.errors import StoreError
from engine.store import Episode, Fact, MemoryUpdate, NewFact, open_store
from engine.store.db import to_url
from engine.store.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    episodes_table,
    fact_terms_table,
    facts_table,
    faq_table,
    faq_terms_table,
    meta_table,
    records_table,
)


def version_of(url: str) -> int:
    engine = sa.create_engine(to_url(url))
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.select(meta_table.c.value)).scalar_one())
    finally:
        engine.dispose()


def make_v1_store(url: str) -> None:
    """A store as engine version 1 left it: records and script state, one record in it."""
    engine = sa.create_engine(to_url(url))
    try:
        with engine.begin() as conn:
            meta_table.create(conn)
            for table in MIGRATIONS[1]:
                table.create(conn)
            conn.execute(meta_table.insert().values(key="schema_version", value="1"))
            conn.execute(
                records_table.insert().values(
                    id="r1",
                    time="t",
                    agent="a",
                    point="after_turn",
                    scope_key="user:u1",
                    generation=0,
                    data="{}",
                )
            )
    finally:
        engine.dispose()


def test_a_new_store_is_at_the_current_version(db_url: str) -> None:
    store = open_store(db_url)
    store.close()
    assert version_of(db_url) == SCHEMA_VERSION == 13


def test_an_older_store_is_migrated_forward_keeping_its_data(db_url: str) -> None:
    make_v1_store(db_url)
    store = open_store(db_url)
    try:
        assert store.migrated_from == 1  # type: ignore[attr-defined]
        store.memory_apply(
            "user:u1", MemoryUpdate("t", facts=(NewFact("The user likes tea", frozenset({"tea"})),))
        )
        assert len(store.memory_facts("user:u1")) == 1
        with store.engine.connect() as conn:  # type: ignore[attr-defined]
            assert conn.execute(sa.select(records_table.c.id)).scalars().all() == ["r1"]
    finally:
        store.close()
    assert version_of(db_url) == SCHEMA_VERSION
    reopened = open_store(db_url)
    assert reopened.migrated_from == SCHEMA_VERSION  # type: ignore[attr-defined]
    reopened.close()


def test_a_newer_store_is_refused(db_url: str) -> None:
    open_store(db_url).close()
    engine = sa.create_engine(to_url(db_url))
    with engine.begin() as conn:
        conn.execute(meta_table.update().values(value=str(SCHEMA_VERSION + 1)))
    engine.dispose()
    with pytest.raises(StoreError, match="newer than this engine"):
        open_store(db_url)


def test_an_unreachable_database_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="cannot open store"):
        open_store("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")


def test_a_failed_write_is_a_store_error_with_the_cause_kept(db_url: str) -> None:
    store = open_store(db_url)
    try:
        with pytest.raises(StoreError) as info:
            store._write(lambda conn: conn.execute(sa.text("SELECT * FROM no_such_table")))  # type: ignore[attr-defined]
        assert isinstance(info.value.__cause__, sa.exc.SQLAlchemyError)
    finally:
        store.close()


def make_v2_store(url: str) -> None:
    """A store as engine version 2 left it: a fact with its hand-written term rows, an
    episode and a FAQ pair with theirs."""
    engine = sa.create_engine(to_url(url))
    try:
        with engine.begin() as conn:
            meta_table.create(conn)
            for version in (1, 2):
                for table in MIGRATIONS[version]:
                    table.create(conn)
            conn.execute(meta_table.insert().values(key="schema_version", value="2"))
            conn.execute(
                facts_table.insert().values(
                    id=1,
                    scope="user:u1",
                    text="Пользователь живёт в Берлине",
                    terms="берлин живет город",
                    importance=0.8,
                    stale=False,
                    retired=False,
                    supersedes="[]",
                    created_at="2025-01-01T00:00:00",
                    updated_at="2025-01-01T00:00:00",
                    recall_count=0,
                )
            )
            conn.execute(
                fact_terms_table.insert(),
                [{"fact_id": 1, "term": t, "scope": "user:u1"} for t in ("берлин", "живет")],
            )
            conn.execute(
                episodes_table.insert().values(
                    id=1,
                    scope="user:u1",
                    question="We adopted a dog named Rex",
                    answer="Congratulations on Rex!",
                    time="2025-01-02T00:00:00",
                )
            )
            conn.execute(
                faq_table.insert().values(
                    id=1,
                    namespace="a:faq",
                    question_key="k",
                    question="How long does shipping take?",
                    answer="3 to 5 days",
                    terms="long ship take",
                    scope_key="global",
                    created_at="t",
                    updated_at="t",
                    hits=0,
                )
            )
            conn.execute(
                faq_terms_table.insert(), [{"pair_id": 1, "term": "ship", "namespace": "a:faq"}]
            )
    finally:
        engine.dispose()


def test_a_v2_store_gets_its_memory_and_faq_pairs_into_the_full_text_index(db_url: str) -> None:
    make_v2_store(db_url)
    store = open_store(db_url)
    try:
        assert store.migrated_from == 2  # type: ignore[attr-defined]
        found = store.memory_recall("user:u1", ["город", "dog"], limit=10)
        assert {type(x) for x in found} == {Fact, Episode}
        assert [f.text for f in store.memory_candidates("user:u1", ["берлин"], limit=5)] == [
            "Пользователь живёт в Берлине"
        ]
        assert [p.answer for p in store.faq_candidates("a:faq", ["ship"], limit=5)] == [
            "3 to 5 days"
        ]
        with store.engine.connect() as conn:  # type: ignore[attr-defined]
            left = sa.inspect(conn).get_table_names()
        assert "memory_terms" not in left and "faq_terms" not in left
    finally:
        store.close()
    assert version_of(db_url) == SCHEMA_VERSION


def test_a_v10_store_takes_long_faq_namespaces_and_state_keys(db_url: str) -> None:
    """Before version 11 a FAQ namespace and a script's state key were VARCHAR(200), which
    PostgreSQL enforced: the upgrade widens them in place, keeping their rows."""
    first = open_store(db_url)
    first.faq_put("a:faq", "How long is shipping?", "3 days", terms=["ship"], scope="g", time="t")
    first.close()
    engine = sa.create_engine(to_url(db_url))
    try:
        with engine.begin() as conn:
            if conn.dialect.name == "postgresql":  # the columns as versions 1 and 2 made them
                for table, column in (("faq_pairs", "namespace"), ("script_state", "hook")):
                    conn.execute(
                        sa.text(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE VARCHAR(200)")
                    )
            conn.execute(meta_table.update().values(value="10"))
    finally:
        engine.dispose()
    long_ns, long_hook = "a" * 150 + ":" + "f" * 100 + "@user:" + "u" * 256, "a" * 150 + ":k"
    store = open_store(db_url)
    try:
        assert store.migrated_from == 10  # type: ignore[attr-defined]
        store.faq_put(long_ns, "What is my status?", "bad", terms=["status"], scope="u", time="t")
        store.state_save(long_hook, "user:u", {"n": 1}, time="2026-01-01T00:00:00+00:00")
        assert [p.answer for p in store.faq_candidates(long_ns, ["status"], limit=5)] == ["bad"]
        assert [p.answer for p in store.faq_candidates("a:faq", ["ship"], limit=5)] == ["3 days"]
        assert store.state_load(long_hook, "user:u") == {"n": 1}
    finally:
        store.close()
    assert version_of(db_url) == SCHEMA_VERSION
