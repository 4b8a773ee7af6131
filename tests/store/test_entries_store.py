"""Conversation entries in the store, on SQLite and PostgreSQL: appended oldest first per
agent and session, listed by kind and newest ``last``, capped per conversation, deleted with
the session or the user, and present in a store migrated from an older schema."""

from __future__ import annotations

from engine.store import open_store
from tests.store.test_schema import make_v1_store

T = "2026-05-01T10:00:00+00:00"


def test_entries_are_kept_per_agent_and_session_oldest_first(db_url: str) -> None:
    store = open_store(db_url)
    try:
        for i in range(3):
            store.entries_add(
                "a", "s1", [{"kind": "k", "data": {"i": i}}], user_id=None, turn=f"t{i}", time=T
            )
        store.entries_add(
            "a", "s1", [{"kind": "other", "data": "ü"}], user_id=None, turn=None, time=T
        )
        store.entries_add("b", "s1", [{"kind": "k", "data": 9}], user_id=None, turn=None, time=T)
        assert [e["data"] for e in store.entries_list("a", "s1", "k")] == [
            {"i": 0},
            {"i": 1},
            {"i": 2},
        ]
        assert [e["turn"] for e in store.entries_list("a", "s1", "k", last=2)] == ["t1", "t2"]
        assert [e["kind"] for e in store.entries_list("a", "s1")] == ["k", "k", "k", "other"]
        assert store.entries_list("a", "s1", "other")[0]["data"] == "ü"
        assert [e["data"] for e in store.entries_list("b", "s1")] == [9]
    finally:
        store.close()


def test_a_conversation_keeps_its_newest_entries_only(db_url: str) -> None:
    store = open_store(db_url)
    try:
        batch = [{"kind": "k", "data": i} for i in range(10)]
        store.entries_add("a", "s1", batch, user_id=None, turn=None, time=T, keep=4)
        store.entries_add("a", "s2", batch[:2], user_id=None, turn=None, time=T, keep=4)
        assert [e["data"] for e in store.entries_list("a", "s1")] == [6, 7, 8, 9]
        assert len(store.entries_list("a", "s2")) == 2
    finally:
        store.close()


def test_forgetting_a_user_or_a_session_deletes_their_entries_only(db_url: str) -> None:
    store = open_store(db_url)
    try:
        one = [{"kind": "k", "data": 1}]
        store.entries_add("a", "s1", one, user_id="u1", turn=None, time=T)
        store.entries_add("b", "s2", one, user_id="u1", turn=None, time=T)
        store.entries_add("a", "s3", one, user_id="u2", turn=None, time=T)
        store.entries_add("a", "s4", one, user_id=None, turn=None, time=T)
        assert store.memory_forget("user:u1") == 2
        assert store.entries_list("a", "s1") == [] and store.entries_list("b", "s2") == []
        assert store.memory_forget("session:s4") == 1 and store.entries_list("a", "s4") == []
        assert store.entries_forget("template:x") == 0 and store.entries_forget("user:") == 0
        assert len(store.entries_list("a", "s3")) == 1
    finally:
        store.close()


def test_a_store_migrated_from_version_1_keeps_entries(db_url: str) -> None:
    make_v1_store(db_url)
    store = open_store(db_url)
    try:
        store.entries_add("a", "s1", [{"kind": "k", "data": [1]}], user_id=None, turn=None, time=T)
        assert store.entries_list("a", "s1")[0]["data"] == [1]
    finally:
        store.close()
