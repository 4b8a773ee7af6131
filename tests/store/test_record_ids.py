"""A record is found by its id or the id's first characters, on every backend."""

from __future__ import annotations

from engine.store import Record, RecordQuery, Store
from tests.backends import db_url, store

__all__ = ["db_url", "store"]


def record(record_id: str) -> Record:
    return Record(
        id=record_id,
        time="2026-03-01T12:00:00+00:00",
        agent="a",
        point="tool_call",
        scope={},
        scope_key="",
        event={},
        hooks=[],
        outcome={},
    )


def test_a_record_is_found_by_its_id_or_its_first_characters(store: Store) -> None:
    store.add_records([record("3f2a9c1e" + "0" * 24), record("3f2b0000" + "1" * 24)])
    assert [r.id[:8] for r in store.query_records(RecordQuery(id="3f2a"))] == ["3f2a9c1e"]
    assert len(store.query_records(RecordQuery(id="3f2"))) == 2
    assert [r.id[:8] for r in store.query_records(RecordQuery(id="3f2b" + "0" * 4))] == ["3f2b0000"]


def test_like_wildcards_in_an_id_match_only_themselves(store: Store) -> None:
    store.add_records([record("ab_d0000"), record("abcd0000")])
    assert [r.id for r in store.query_records(RecordQuery(id="ab_"))] == ["ab_d0000"]
    assert store.query_records(RecordQuery(id="%")) == []


def test_an_id_prefix_matches_in_its_own_case_on_every_backend(store: Store) -> None:
    """SQLite's LIKE folds ASCII case and PostgreSQL's does not: an id prefix matches as
    written on both."""
    store.add_records([record("abcd0000"), record("ABCD1111")])
    assert [r.id for r in store.query_records(RecordQuery(id="abc"))] == ["abcd0000"]
    assert [r.id for r in store.query_records(RecordQuery(id="ABC"))] == ["ABCD1111"]
    assert store.query_records(RecordQuery(id="aBc")) == []
