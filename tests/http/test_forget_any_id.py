"""Any user id the Python API takes can be read and forgotten over HTTP: the scope as a query
parameter (``/v1/memory?scope=user:<id>``), so an id with ``/``, whitespace, ``%``, ``?``,
``#`` or any other character reaches the store as it was given."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from engine.points import ID_CAP
from engine.runtime import Engine
from tests.http.test_http import AUTH, TOKEN, load, run_server

IDS = [
    "team/alice",
    "alice smith",
    "50% off",
    "why?",
    "#1",
    "a&b=c",
    "tab\there",
    "émile/ü ß",
    "🙂 x",
    "..",
    "x" * ID_CAP,
]


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Engine, str]]:
    monkeypatch.setenv("TEST_ADMIN_TOKEN", TOKEN)
    engine = load(tmp_path, "{token_env: TEST_ADMIN_TOKEN}")
    try:
        for base in run_server(engine):
            yield engine, base
    finally:
        engine.close()


def test_a_user_with_any_id_is_read_and_forgotten_by_query(served: tuple[Engine, str]) -> None:
    engine, base = served
    agent = engine.agent("a")
    for user in IDS:
        agent.after_turn("My name is Bob", "Nice to meet you, Bob, welcome!", user_id=user)
        agent.remember("s-" + user[:20], "mode", "careful", user_id=user)
    agent.after_turn("My name is Carol", "Nice to meet you, Carol, welcome!", user_id="team")
    with httpx.Client(base_url=base, timeout=10) as client:
        for user in IDS:
            scope = {"scope": f"user:{user}"}
            read = client.get("/v1/memory", params=scope, headers=AUTH)
            assert read.status_code == 200, (user, read.text)
            assert read.json()["scope"] == f"user:{user}"
            gone = client.delete("/v1/memory", params=scope, headers=AUTH)
            assert gone.status_code == 200 and gone.json()["deleted"] > 0, (user, gone.text)
            assert client.get("/v1/memory", params=scope, headers=AUTH).status_code == 404
            assert client.delete("/v1/memory", params=scope, headers=AUTH).status_code == 404
            assert agent.entries("s-" + user[:20]) == []
        # "team/alice" went; "team" (a prefix of it) did not
        assert client.get("/v1/memory", params={"scope": "user:team"}, headers=AUTH).is_success
        # the path form still works for the ids it takes
        assert client.delete("/v1/memory/user:team", headers=AUTH).status_code == 200


@pytest.mark.parametrize(
    "scope",
    ["", "team", "user:", "planet:mars", "user:" + "x" * (ID_CAP + 1)],
)
def test_a_malformed_scope_query_is_422(served: tuple[Engine, str], scope: str) -> None:
    _, base = served
    with httpx.Client(base_url=base, timeout=10) as client:
        for method in ("GET", "DELETE"):
            answer = client.request(method, "/v1/memory", params={"scope": scope}, headers=AUTH)
            assert answer.status_code == 422, (scope, answer.text)
            body = answer.json()
            assert body["code"] == "invalid_input" and body["errors"][0]["loc"] == [
                "query",
                "scope",
            ]
        missing = client.delete("/v1/memory", headers=AUTH)
        assert missing.status_code == 422 and missing.json()["errors"][0]["loc"] == [
            "query",
            "scope",
        ]


def test_the_query_form_needs_the_admin_token(served: tuple[Engine, str]) -> None:
    _, base = served
    with httpx.Client(base_url=base, timeout=10) as client:
        for method in ("GET", "DELETE"):
            answer = client.request(method, "/v1/memory", params={"scope": "user:a/b"})
            assert answer.status_code == 401
