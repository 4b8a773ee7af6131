"""Schema 5 on every backend: records name their host, and the turn log keeps each session's
last prompt where every engine on the store sees it; a store from before opens and upgrades."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from engine.errors import StoreError
from engine.runtime import Engine
from engine.store import Record, RecordQuery, open_store
from engine.store.db import to_url
from engine.store.lazy import LazyStore, open_lazy_store
from engine.store.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    entries_table,
    meta_table,
    records_table,
)
from tests.backends import db_url, store
from tests.conftest import write

__all__ = ["db_url", "store"]


def record(n: int, *, host: str = "native") -> Record:
    return Record(
        id=f"r{n}",
        time=f"2026-03-01T12:00:0{n}+00:00",
        agent="a",
        point="tool_call",
        scope={"user_id": "u"},
        scope_key="user:u",
        event={"name": "shell"},
        hooks=[],
        outcome={"blocked": False},
        host=host,
    )


def make_v4_store(url: str) -> None:
    """A store as schema version 4 left it: records without their host, one record in it."""
    old = sa.MetaData()
    v4_records = sa.Table(
        "records",
        old,
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(40), nullable=False, unique=True),
        sa.Column("time", sa.String(40), nullable=False, index=True),
        sa.Column("agent", sa.String(200), nullable=False, index=True),
        sa.Column("point", sa.String(40), nullable=False),
        sa.Column("scope_key", sa.String(300), nullable=False, index=True),
        sa.Column("generation", sa.Integer, nullable=False, default=0),
        sa.Column("data", sa.Text, nullable=False),
    )
    engine = sa.create_engine(to_url(url))
    data = record(0).model_dump(mode="json")
    del data["host"]  # an old record's data has no host
    try:
        with engine.begin() as conn:
            meta_table.create(conn)
            for version in range(1, 5):
                for table in MIGRATIONS[version]:
                    (v4_records if table is records_table else table).create(conn)
            conn.execute(meta_table.insert().values(key="schema_version", value="4"))
            conn.execute(
                v4_records.insert().values(
                    id="r0",
                    time=data["time"],
                    agent="a",
                    point="tool_call",
                    scope_key="user:u",
                    generation=0,
                    data=json.dumps(data),
                )
            )
    finally:
        engine.dispose()


def test_a_v4_store_is_upgraded_and_its_records_read_as_native(db_url: str) -> None:
    make_v4_store(db_url)
    store = open_store(db_url)
    try:
        assert store.migrated_from == 4 and SCHEMA_VERSION >= 6  # type: ignore[attr-defined]
        (old,) = store.query_records(RecordQuery())
        assert old.id == "r0" and old.host == "native"
        store.add_records([record(1, host="claude-code"), record(2, host="litellm")])
        assert [r.id for r in store.query_records(RecordQuery(host="claude-code"))] == ["r1"]
        assert [r.id for r in store.query_records(RecordQuery(host="native"))] == ["r0"]
        with store.engine.connect() as conn:  # type: ignore[attr-defined]
            hosts = conn.execute(sa.select(records_table.c.id, records_table.c.host)).all()
        assert sorted(hosts) == [("r0", "native"), ("r1", "claude-code"), ("r2", "litellm")]
        store.turn_log_put("a", "s1", "first question", "t")
        assert store.turn_log_get("a", "s1") == "first question"
    finally:
        store.close()
    reopened = open_store(db_url)
    assert reopened.migrated_from == SCHEMA_VERSION  # type: ignore[attr-defined]
    reopened.close()


AGENT = {
    "agents/a/agent.yaml": "hooks: [guard]\n",
    "agents/a/hooks/guard.yaml": (
        "kind: script_hook\nname: guard\nlanguage: python\nsource: |\n"
        "  def on_before_user_message(event, host):\n"
        "      return {'question': event['question'].upper()}\n"
        "  def on_tool_call(event, host):\n"
        "      n = (host.state.get('n') or 0) + 1\n"
        "      host.state.set('n', n)\n"
        "      return {'notice': str(n)}\n"
    ),
}


@pytest.fixture
def engines(tmp_path: Path, db_url: str) -> Iterator[Callable[[], Engine]]:
    root = write(tmp_path / "config", AGENT)
    opened: list[Engine] = []

    def make() -> Engine:
        opened.append(Engine.load(root, db=db_url))
        return opened[-1]

    yield make
    for engine in opened:
        engine.close()


def test_an_engine_opens_a_store_from_before_and_records_its_host(
    db_url: str, engines: Callable[[], Engine]
) -> None:
    make_v4_store(db_url)
    engine = engines()
    out = engine.agent("a").tool_call("shell", {}, host="codex", user_id="u")
    assert out.notices == ["1"]
    engine.flush()
    assert [(r.id, r.host) for r in engine.records(oldest_first=True)] == [
        ("r0", "native"),
        (out.id, "codex"),
    ]


def test_another_engine_on_the_store_sees_a_sessions_last_prompt(
    engines: Callable[[], Engine],
) -> None:
    first, second = engines().agent("a"), engines().agent("a")
    assert second.last_prompt("s1") is None
    out = first.before_user_message("how do I reset it?", session_id="s1")
    assert out.question == "HOW DO I RESET IT?"  # the hook's rewrite...
    assert second.last_prompt("s1") == "how do I reset it?"  # ...but the user's own words
    asyncio.run(first.abefore_user_message("and then?", session_id="s1"))
    assert second.last_prompt("s1") == "and then?"  # overwritten: one row per session
    first.before_user_message("other", session_id="s2", user_id="u1")
    assert (second.last_prompt("s1"), second.last_prompt("s2")) == ("and then?", "other")
    first.before_user_message("no session")  # nothing to keep it under
    assert second.last_prompt("") is None


def test_the_turn_log_is_per_agent_bounded_and_forgotten_with_the_session(store: object) -> None:
    s = store  # an SqlStore on this backend
    s.turn_log_put("a", "s1", "q1", "t1")  # type: ignore[attr-defined]
    s.turn_log_put("b", "s1", "other agent", "t1")  # type: ignore[attr-defined]
    for n in range(5):
        s.turn_log_put("a", "s1", f"q{n}", f"t{n}")  # type: ignore[attr-defined]
    assert s.turn_log_get("a", "s1") == "q4"  # type: ignore[attr-defined]
    assert s.turn_log_get("b", "s1") == "other agent"  # type: ignore[attr-defined]
    with s.engine.connect() as conn:  # type: ignore[attr-defined]
        assert conn.execute(sa.text("SELECT count(*) FROM turn_log")).scalar() == 2
    s.turn_log_put("a", "s\x00x", "nul \x00 and \ud800", "t")  # type: ignore[attr-defined]
    assert s.turn_log_get("a", "s\x00x") == "nul \\u0000 and \\ud800"  # type: ignore[attr-defined]
    assert s.memory_forget("session:s1") == 2  # type: ignore[attr-defined]
    assert s.turn_log_get("a", "s1") is None  # type: ignore[attr-defined]
    assert s.turn_log_get("a", "s\x00x") is not None  # type: ignore[attr-defined]


def test_the_lazy_store_keeps_the_turn_log_in_the_same_rows(tmp_path: Path) -> None:
    path = str(tmp_path / "store.db")
    open_store(path).close()  # a current store: the lazy path
    lazy = open_lazy_store(path)
    assert isinstance(lazy, LazyStore)
    try:
        lazy.turn_log_put("a", "s1", "via sqlite3", "t")
        assert lazy.turn_log_get("a", "s1") == "via sqlite3"
        assert lazy._full is None  # no SQLAlchemy store was needed
    finally:
        lazy.close()
    full = open_store(path)
    try:
        assert full.turn_log_get("a", "s1") == "via sqlite3"
    finally:
        full.close()


def test_a_store_that_cannot_keep_the_prompt_does_not_fail_the_decision(
    engines: Callable[[], Engine],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = engines()

    def refuse(*args: object, **kwargs: object) -> None:
        raise StoreError("store: write failed: disk full")

    monkeypatch.setattr(engine.store, "turn_log_put", refuse)
    with caplog.at_level(logging.WARNING, logger="engine.runtime"):
        out = engine.agent("a").before_user_message("hi", session_id="s1")
    assert not out.blocked and out.question == "HI"
    assert "last prompt was not kept" in caplog.text and "disk full" in caplog.text


def test_forgetting_a_user_forgets_the_last_prompt_of_their_sessions(
    engines: Callable[[], Engine],
) -> None:
    """A session's last prompt is the user's words: forgetting the user (not only the
    session) deletes it, in every agent's sessions of theirs, and no one else's."""
    engine = engines()
    agent = engine.agent("a")
    agent.before_user_message("my card number is 4111", session_id="s1", user_id="u1")
    asyncio.run(agent.abefore_user_message("and my address?", session_id="s2", user_id="u1"))
    agent.before_user_message("hello", session_id="s3", user_id="u2")
    agent.before_user_message("u1 then u2", session_id="s4", user_id="u1")
    agent.before_user_message("now u2's", session_id="s4", user_id="u2")  # the row is u2's now
    agent.before_user_message("anonymous", session_id="s5")
    agent.before_user_message("a longer id", session_id="s6", user_id="u1x")
    agent.before_user_message("another case", session_id="s7", user_id="U1")
    assert engine.store.memory_forget("user:u1") >= 2
    assert agent.last_prompt("s1") is None and agent.last_prompt("s2") is None
    assert [agent.last_prompt(s) for s in ("s3", "s4", "s5", "s6", "s7")] == [
        "hello",
        "now u2's",
        "anonymous",
        "a longer id",
        "another case",
    ]


def test_forgetting_a_user_forgets_turn_log_rows_of_every_agent(store: object) -> None:
    s = store
    s.turn_log_put("a", "s1", "q", "t", user_id="u/1 x")  # type: ignore[attr-defined]
    s.turn_log_put("b", "s1", "q", "t", user_id="u/1 x")  # type: ignore[attr-defined]
    s.turn_log_put("b", "s2", "q", "t", user_id="u/1")  # type: ignore[attr-defined]
    assert s.memory_forget("user:u/1 x") == 2  # type: ignore[attr-defined]
    assert s.turn_log_get("a", "s1") is None and s.turn_log_get("b", "s1") is None  # type: ignore[attr-defined]
    assert s.turn_log_get("b", "s2") == "q"  # type: ignore[attr-defined]


def make_v9_store(url: str) -> None:
    """A store as schema version 9 left it: a turn log whose rows name no user, and a
    conversation entry of u1's in session s1."""
    old = sa.MetaData()
    v9_turn_log = sa.Table(
        "turn_log",
        old,
        sa.Column("agent", sa.String(200), primary_key=True),
        sa.Column("session_id", sa.String(300), primary_key=True),
        sa.Column("question", sa.Text, nullable=False),
        sa.Column("time", sa.String(40), nullable=False),
    )
    engine = sa.create_engine(to_url(url))
    try:
        with engine.begin() as conn:
            meta_table.create(conn)
            for version in range(1, 10):
                for table in MIGRATIONS[version]:
                    (v9_turn_log if table.name == "turn_log" else table).create(conn)
            conn.execute(meta_table.insert().values(key="schema_version", value="9"))
            for session in ("s1", "s2"):
                conn.execute(
                    v9_turn_log.insert().values(
                        agent="a", session_id=session, question=f"old {session}", time="t"
                    )
                )
            conn.execute(
                entries_table.insert().values(
                    agent="a", session_id="s1", user_id="u1", kind="k", data="1", time="t"
                )
            )
    finally:
        engine.dispose()


def test_a_v9_store_gains_the_turn_logs_user_and_its_old_rows_are_still_forgotten(
    db_url: str,
) -> None:
    make_v9_store(db_url)
    store = open_store(db_url)
    try:
        assert store.migrated_from == 9 and SCHEMA_VERSION >= 10  # type: ignore[attr-defined]
        assert store.turn_log_get("a", "s1") == "old s1"
        store.turn_log_put("a", "s3", "new", "t", user_id="u1")
        assert store.memory_forget("user:u1") == 1 + 1 + 1  # two prompts, one entry
        assert store.turn_log_get("a", "s1") is None and store.turn_log_get("a", "s3") is None
        assert store.turn_log_get("a", "s2") == "old s2"  # nothing ties it to u1
    finally:
        store.close()
    reopened = open_store(db_url)
    assert reopened.migrated_from == SCHEMA_VERSION  # type: ignore[attr-defined]
    reopened.close()
