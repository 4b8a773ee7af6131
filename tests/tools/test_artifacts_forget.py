"""Forgetting a user deletes the artifacts of their tool calls — rows and files — in every
session and agent, on SQLite and PostgreSQL, through the Python API and both HTTP forms; an
id that only looks like theirs, and another user's artifacts in the same session, stay."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine import Engine
from tests import backends

db_url = backends.db_url

PROCESS_TOOL = "kind: test_python\nname: fake_in_process\nfunction: artifact\nisolation: process\n"
SECOND_AGENT = {
    "agents/b/agent.yaml": "tools: [fake_artifact]\n",
    "agents/b/tools/fake_artifact.yaml": "kind: test_python\nname: fake_artifact\n"
    "function: artifact\n",
}


def made(engine: Engine, agent: str, tool: str, session: str, user: str | None) -> Path:
    """Call ``tool`` so that it makes one artifact; the artifact's file."""
    text = {"text": "hello"} if tool == "echo_py" else {"name": f"{tool}.txt", "text": "x"}
    result = engine.agent(agent).call_tool(tool, text, session_id=session, user_id=user)
    assert not result.is_error, result.content
    (shown,) = result.artifacts
    (row,) = [r for r in engine.artifacts(session) if r["id"] == shown["id"]]
    assert row["user_id"] == user
    path = engine.artifact_store.path(engine.artifact_store.find(session, shown["id"]))  # type: ignore[arg-type]
    assert path.is_file()
    return path


def project(**extra: str) -> dict[str, str]:
    files = {"agents/a/tools/fake_in_process.yaml": PROCESS_TOOL, **SECOND_AGENT, **extra}
    agent = "hooks: [guard]\ntools: [echo_py, fake_artifact, fake_in_process]\n"
    return files | {"agents/a/agent.yaml": agent}


def users_artifacts(engine: Engine) -> tuple[list[Path], list[Path]]:
    """u1's artifacts (a script tool's, a process-isolated and a thread tool's, in two
    sessions and two agents) and the ones that must stay: another user's in the same
    session, ids that only look like u1's, one made with no user."""
    theirs = [
        made(engine, "a", "echo_py", "s1", "u1"),
        made(engine, "a", "fake_in_process", "s1", "u1"),
        made(engine, "b", "fake_artifact", "s1", "u1"),
        made(engine, "a", "fake_artifact", "s2", "u1"),
    ]
    kept = [
        made(engine, "a", "fake_artifact", "s1", "u2"),
        made(engine, "a", "fake_artifact", "s1", "u1x"),
        made(engine, "a", "fake_artifact", "s1", "U1"),
        made(engine, "a", "echo_py", "s3", None),
    ]
    return theirs, kept


def test_forgetting_a_user_deletes_the_artifacts_of_their_calls_in_every_session(
    tool_engine: Callable[..., Engine], db_url: str
) -> None:
    engine = tool_engine(project(), db=db_url)
    theirs, kept = users_artifacts(engine)
    assert engine.store.memory_forget("user:u1") == 4  # the artifacts are all u1 left
    assert not any(path.exists() for path in theirs)
    assert not theirs[3].parent.parent.exists()  # s2 held only u1's: its folder went too
    assert all(path.is_file() for path in kept)
    assert sorted(r["user_id"] or "" for r in engine.artifacts("s1")) == ["U1", "u1x", "u2"]
    assert engine.artifacts("s2") == [] and len(engine.artifacts("s3")) == 1
    assert engine.store.memory_forget("user:u1") == 0


def test_forgetting_a_session_in_the_store_deletes_its_artifacts_files_too(
    tool_engine: Callable[..., Engine], db_url: str
) -> None:
    engine = tool_engine(project(), db=db_url)
    theirs, kept = users_artifacts(engine)
    assert engine.store.memory_forget("session:s1") == 6
    assert [p.exists() for p in theirs + kept] == [False] * 3 + [True] + [False] * 3 + [True]
    assert engine.artifacts("s1") == []


@pytest.mark.parametrize("form", ["path", "query"])
def test_delete_over_http_forgets_the_users_artifacts(
    tool_engine: Callable[..., Engine], tmp_path: Path, form: str
) -> None:
    from fastapi.testclient import TestClient

    from engine.http import create_app

    config = {"engine.yaml": "http: {token_env: TEST_ARTIFACTS_ADMIN}\n"}
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TEST_ARTIFACTS_ADMIN", "admin-token")
        engine = tool_engine(project(**config))
        theirs, kept = users_artifacts(engine)
        client = TestClient(create_app(engine))
        auth = {"Authorization": "Bearer admin-token"}
        where: dict[str, Any] = (
            {"url": "/v1/memory/user:u1"}
            if form == "path"
            else {"url": "/v1/memory", "params": {"scope": "user:u1"}}
        )
        gone = client.delete(**where, headers=auth)
        assert gone.status_code == 200 and gone.json() == {"scope": "user:u1", "deleted": 4}
        assert not any(path.exists() for path in theirs)
        assert all(path.is_file() for path in kept)
        again = client.delete(**where, headers=auth)
        assert again.status_code == 404
