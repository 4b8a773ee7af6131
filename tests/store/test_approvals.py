"""Approvals in the store, on every backend: kept, found per call and scope, resolved once
(who, when, note), expired, remembered per scope, and forgotten with a scope."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from engine.errors import ApprovalError
from engine.store.approvals import Approval, input_digest

T0, T1, T2 = "2026-01-01T00:00:00+00:00", "2026-01-01T00:01:00+00:00", "2026-01-01T01:00:00+00:00"


def asked(approval_id: str = "a1", **fields: Any) -> Approval:
    values: dict[str, Any] = {
        "id": approval_id,
        "agent": "ag",
        "hook": "ask",
        "scope_key": "session:s1",
        "call_key": "id:c1",
        "tool": "pay",
        "input": {"amount": 5, "to": "bob"},
        "message": "Pay 5?",
        "remember_scope": "session:s1",
        "status": "pending",
        "created_at": "2026-01-01T00:00:00.000000+00:00",
        "expires_at": "2026-01-01T00:10:00.000000+00:00",
    }
    return Approval(**(values | fields))


def test_an_approval_is_found_by_its_call_in_its_scope_only(store: Any) -> None:
    store.approval_add(asked())
    found = store.approval_for_call("ag", "ask", "session:s1", "id:c1")
    assert found == asked()
    assert store.approval_for_call("ag", "ask", "session:s2", "id:c1") is None
    assert [a.id for a in store.approvals_pending("ag", scope_key="session:s1", now=T1)] == ["a1"]
    assert store.approvals_pending("ag", scope_key="session:s1", now=T2) == []


def test_a_resolution_is_kept_once_with_who_when_and_a_note(store: Any) -> None:
    store.approval_add(asked())
    done = store.approval_resolve("a1", approve=True, by="alice", note="ok", now=T1)
    assert (done.status, done.resolved_by, done.note) == ("approved", "alice", "ok")
    assert store.approval_get("a1").resolved_at == "2026-01-01T00:01:00.000000+00:00"
    with pytest.raises(ApprovalError) as caught:
        store.approval_resolve("a1", approve=False, by="bob", note=None, now=T1)
    assert caught.value.cause == "resolved"
    assert store.approval_get("a1").status == "approved"


def test_unknown_and_expired_ids_are_refused(store: Any) -> None:
    with pytest.raises(ApprovalError) as unknown:
        store.approval_resolve("nope", approve=True, by="a", note=None, now=T1)
    assert unknown.value.cause == "unknown"
    store.approval_add(asked())
    with pytest.raises(ApprovalError) as expired:
        store.approval_resolve("a1", approve=True, by="a", note=None, now=T2)
    assert expired.value.cause == "expired"


def test_an_approval_is_remembered_for_its_scope_tool_and_input(store: Any) -> None:
    store.approval_add(asked())
    store.approval_resolve("a1", approve=True, by="alice", note=None, now=T1)
    digest = input_digest({"to": "bob", "amount": 5})  # key order does not matter
    assert store.approval_remembered("ag", "ask", "session:s1", "pay", digest) == "a1"
    assert store.approval_remembered("ag", "ask", "session:s2", "pay", digest) is None
    other = input_digest({"to": "bob", "amount": 6})
    assert store.approval_remembered("ag", "ask", "session:s1", "pay", other) is None


def test_a_closed_approval_leaves_its_call_key_free(store: Any) -> None:
    store.approval_add(asked(call_key="input:pay:" + "f" * 64))
    store.approval_resolve("a1", approve=True, by="alice", note=None, now=T1)
    store.approval_close("a1")
    assert store.approval_for_call("ag", "ask", "session:s1", "input:pay:" + "f" * 64) is None
    assert store.approval_get("a1").status == "approved"


def test_a_decision_without_a_call_id_is_taken_by_one_close_only(store: Any) -> None:
    key = "input:" + "f" * 64
    store.approval_add(asked(call_key=key))
    store.approval_resolve("a1", approve=True, by="alice", note=None, now=T1)
    assert store.approval_close("a1", key) is True
    assert store.approval_close("a1", key) is False  # a racing evaluation: asked anew
    assert store.approval_for_call("ag", "ask", "session:s1", key) is None


def test_a_scopes_approvals_are_forgotten_with_it(store: Any) -> None:
    store.approval_add(asked())
    store.approval_add(asked("a2", scope_key="session:s2", remember_scope="session:s2"))
    store.approval_resolve("a1", approve=True, by="alice", note=None, now=T1)
    assert store.memory_forget("session:s1") == 2  # the approval and what it remembered
    assert store.approval_get("a1") is None and store.approval_get("a2") is not None
    with store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM approvals_remembered")).scalar() == 0


def test_pending_past_its_time_reads_as_expired() -> None:
    approval = asked()
    assert approval.status_at(T1) == "pending" and approval.status_at(T2) == "expired"
    assert asked(status="approved").status_at(T2) == "approved"


def test_forgetting_a_user_deletes_their_approvals_in_any_session(store: Any) -> None:
    store.approval_add(asked("a1", user_id="alex"))
    store.approval_resolve("a1", approve=True, by="op", note=None, now=T1)  # remembered in s1
    store.approval_add(asked("a2", scope_key="session:s2", call_key="id:c2", user_id="bob"))
    store.approval_add(asked("a3", scope_key="session:s3", call_key="id:c3", user_id="Alex"))
    digest = input_digest({"amount": 5, "to": "bob"})
    assert store.approval_remembered("ag", "ask", "session:s1", "pay", digest) == "a1"
    assert store.memory_forget("user:alex") == 2  # the approval, and what it remembered
    assert store.approval_get("a1") is None
    assert store.approval_remembered("ag", "ask", "session:s1", "pay", digest) is None
    assert store.approval_get("a2") is not None and store.approval_get("a3") is not None


def test_a_v11_store_gains_the_approvals_user(db_url: str) -> None:
    from engine.store import open_store
    from engine.store.db import to_url

    first = open_store(db_url)
    first.approval_add(asked("old"))
    first.close()
    engine = sa.create_engine(to_url(db_url))
    try:
        with engine.begin() as conn:  # the table as version 9 made it
            conn.execute(sa.text("DROP INDEX ix_approvals_user"))
            conn.execute(sa.text("ALTER TABLE approvals DROP COLUMN user_id"))
            conn.execute(sa.text("UPDATE hookengine_meta SET value = '11'"))
    finally:
        engine.dispose()
    store = open_store(db_url)
    try:
        assert store.migrated_from == 11  # type: ignore[attr-defined]
        assert store.approval_get("old") == asked("old")  # no user
        store.approval_add(asked("new", call_key="id:c2", user_id="alex"))
        assert store.memory_forget("user:alex") == 1
        assert store.approval_get("old") is not None and store.approval_get("new") is None
    finally:
        store.close()
