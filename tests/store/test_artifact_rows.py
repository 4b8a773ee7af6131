"""Artifact rows on both backends: kept, listed per session, deleted with the session; a v5
store gains the table on open."""

from __future__ import annotations

import sqlalchemy as sa

from engine.store import open_store
from engine.store.artifacts import ArtifactRow
from engine.store.db import to_url
from engine.store.schema import MIGRATIONS, SCHEMA_VERSION, meta_table


def row(artifact_id: str, session: str, size: int = 3) -> ArtifactRow:
    return ArtifactRow(
        id=artifact_id,
        agent="a",
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
