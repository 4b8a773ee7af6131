"""Artifact rows on both backends: kept, listed per session, deleted with the session and
with the user whose call made them; a v5 store gains the table on open, a v12 store the rows'
user (its older rows go with the user whose conversation names their session)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from engine.store import open_store
from engine.store.artifacts import ArtifactRow
from engine.store.db import to_url
from engine.store.schema import MIGRATIONS, SCHEMA_VERSION, meta_table


def row(
    artifact_id: str, session: str, size: int = 3, *, user: str | None = None, agent: str = "a"
) -> ArtifactRow:
    return ArtifactRow(
        id=artifact_id,
        agent=agent,
        session_id=session,
        name="n.txt",
        file_name="n.txt",
        type="txt",
        mime="text/plain",
        bytes=size,
        sha256="0" * 64,
        tool="t",
        call_id=None,
        description="",
        time=f"2026-01-01T00:00:0{artifact_id[-1]}+00:00",
        user_id=user,
    )


def test_rows_are_kept_listed_and_forgotten_per_session(store: object) -> None:
    s = store
    s.artifact_add(row("a1", "s"))  # type: ignore[attr-defined]
    s.artifact_add(row("a2", "s", 5))  # type: ignore[attr-defined]
    s.artifact_add(row("a3", "other"))  # type: ignore[attr-defined]
    assert [r.id for r in s.artifacts_of("s")] == ["a1", "a2"]  # type: ignore[attr-defined]
    assert s.artifact_forget("s") == 2  # type: ignore[attr-defined]
    assert s.artifacts_of("s") == []  # type: ignore[attr-defined]
    assert [r.id for r in s.artifacts_of("other")] == ["a3"]  # type: ignore[attr-defined]


def test_a_v5_store_gains_the_artifacts_table(db_url: str) -> None:
    engine = sa.create_engine(to_url(db_url))
    try:
        with engine.begin() as conn:
            meta_table.create(conn)
            for version in range(1, 6):
                for table in MIGRATIONS[version]:
                    table.create(conn)
            conn.execute(meta_table.insert().values(key="schema_version", value="5"))
    finally:
        engine.dispose()
    opened = open_store(db_url)
    try:
        assert opened.migrated_from == 5 and SCHEMA_VERSION >= 9  # type: ignore[attr-defined]
        opened.artifact_add(row("a1", "s"))
        assert [r.id for r in opened.artifacts_of("s")] == ["a1"]
    finally:
        opened.close()


def test_forgetting_a_user_deletes_their_rows_in_every_session_and_agent(store: object) -> None:
    s: Any = store
    gone: list[list[str]] = []
    s.on_artifacts_forgotten(lambda rows: gone.append(sorted(r.id for r in rows)))
    s.artifact_add(row("a1", "s1", user="u/1 x"))
    s.artifact_add(row("a2", "s2", user="u/1 x", agent="b"))
    s.artifact_add(row("a3", "s1", user="u2"))  # another user, the same session
    s.artifact_add(row("a4", "s1", user="u/1 xx"))
    s.artifact_add(row("a5", "s1", user="U/1 X"))
    s.artifact_add(row("a6", "s1"))  # no user, and nothing ties the session to one
    assert s.memory_forget("user:u/1 x") == 2
    assert gone == [["a1", "a2"]]
    assert [r.id for r in s.artifacts_of("s1")] == ["a3", "a4", "a5", "a6"]
    assert s.artifacts_of("s2") == []
    assert s.memory_forget("user:u/1 x") == 0 and gone == [["a1", "a2"]]
    assert s.memory_forget("session:s1") == 4 and gone[-1] == ["a3", "a4", "a5", "a6"]


def test_a_v12_store_gains_the_artifacts_user_and_keeps_its_rows(db_url: str) -> None:
    """Rows from before version 13 name no user: they go with the user whose conversation
    entries or last prompt (turn log) name their agent and session, and no one else's."""
    first: Any = open_store(db_url)
    first.artifact_add(row("a1", "s1"))  # u1's conversation entries name (a, s1)
    first.artifact_add(row("a2", "s3"))  # u1 sent (a, s3)'s last prompt
    first.artifact_add(row("a3", "s1", agent="b"))  # another agent's session s1
    first.artifact_add(row("a4", "s4"))  # u2's session
    first.artifact_add(row("a5", "s5"))  # nobody's
    first.entries_add("a", "s1", [{"kind": "k", "data": 1}], user_id="u1", turn=None, time="t")
    first.entries_add("a", "s4", [{"kind": "k", "data": 1}], user_id="u2", turn=None, time="t")
    first.turn_log_put("a", "s3", "q", "t", user_id="u1")
    first.close()
    engine = sa.create_engine(to_url(db_url))
    try:
        with engine.begin() as conn:  # the table as version 7 made it
            conn.execute(sa.text("DROP INDEX ix_artifacts_user"))
            conn.execute(sa.text("ALTER TABLE artifacts DROP COLUMN user_id"))
            conn.execute(sa.text("UPDATE hookengine_meta SET value = '12'"))
    finally:
        engine.dispose()
    store: Any = open_store(db_url)
    try:
        assert store.migrated_from == 12
        assert [r.id for r in store.artifacts_of("s1")] == ["a1", "a3"]
        assert store.artifacts_of("s1")[0] == row("a1", "s1")  # kept, naming no user
        store.artifact_add(row("a6", "s6", user="u1"))
        gone: list[str] = []
        store.on_artifacts_forgotten(lambda rows: gone.extend(r.id for r in rows))
        assert store.memory_forget("user:u1") == 3 + 1 + 1  # three artifacts, entry, prompt
        assert sorted(gone) == ["a1", "a2", "a6"]
        assert [r.id for r in store.artifacts_of("s1")] == ["a3"]
        assert [r.id for r in store.artifacts_of("s4") + store.artifacts_of("s5")] == ["a4", "a5"]
    finally:
        store.close()
    reopened: Any = open_store(db_url)
    assert reopened.migrated_from == SCHEMA_VERSION
    reopened.close()
