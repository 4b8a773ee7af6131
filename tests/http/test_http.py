"""The admin HTTP service on a real uvicorn server on loopback: auth (fail closed), the
documented JSON, DELETE forgets, clear 4xx on bad input, and schemathesis finding no 5xx."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from engine.http.server import build_server
from engine.runtime import Engine
from tests.conftest import write

TOKEN = "s3cret-admin-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def load(tmp_path: Path, http: str) -> Engine:
    root = write(
        tmp_path / "config",
        {
            "engine.yaml": f"process: proc\nhttp: {http}\n",
            "agents/a/agent.yaml": "hooks: [mem]\n",
            "agents/a/hooks/mem.yaml": "kind: memory\nname: mem\ndb_path: data/memory.db\n",
        },
    )
    return Engine.load(root, db=str(tmp_path / "data/engine.db"))


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    monkeypatch.setenv("TEST_ADMIN_TOKEN", TOKEN)
    monkeypatch.setenv("TEST_DECIDE_TOKEN", "decide-token")
    eng = load(
        tmp_path,
        "{token_env: TEST_ADMIN_TOKEN, max_body_bytes: 1024,"
        " tokens: [{name: d, env: TEST_DECIDE_TOKEN, scopes: [decide]}]}",
    )
    agent = eng.agent("a")
    agent.after_turn(
        "Меня зовут Алекс, я живу в Берлине",
        "Приятно познакомиться, Алекс!",
        user_id="u1",
        turn_id="t1",
    )
    agent.after_turn("I moved to Munich", "Munich is lovely in the spring!", user_id="u1")
    agent.after_turn("My name is Bob", "Nice to meet you, Bob, welcome!", user_id="u2")
    yield eng
    eng.close()


def run_server(eng: Engine) -> Iterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = build_server(eng, log_level="warning")
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture
def base(engine: Engine) -> Iterator[str]:
    yield from run_server(engine)


@pytest.fixture
def client(base: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base, timeout=10) as c:
        yield c


def test_health_needs_no_token(client: httpx.Client) -> None:
    assert client.get("/v1/health").json() == {"status": "ok", "agents": ["a"]}


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}]
)
def test_admin_calls_without_the_token_are_401(client: httpx.Client, headers) -> None:  # type: ignore[no-untyped-def]
    for method in ("GET", "DELETE"):
        response = client.request(method, "/v1/memory/user:u1", headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["code"] == "unauthorized"
        assert "token" in response.json()["message"]


def test_memory_is_the_documented_json(client: httpx.Client) -> None:
    body = client.get("/v1/memory/user:u1", headers=AUTH).json()
    assert body["scope"] == "user:u1"
    facts = {f["text"]: f for f in body["facts"]}
    assert set(facts) == {
        "Пользователя зовут Алекс",
        "Пользователь живёт в Берлине",
        "The user moved to Munich",
    }
    berlin, munich = facts["Пользователь живёт в Берлине"], facts["The user moved to Munich"]
    assert berlin["retired"] and berlin["superseded_by"] == munich["id"]
    assert munich["supersedes"] == [berlin["id"]] and not munich["stale"]
    assert set(munich) == {
        "id",
        "text",
        "importance",
        "stale",
        "retired",
        "key",
        "superseded_by",
        "supersedes",
        "created_at",
        "updated_at",
        "last_recalled_at",
        "recall_count",
    }
    assert "I moved to Munich" in body["summary"]
    assert body["episodes"][0]["turn_id"] == "t1"
    assert all("Bob" not in f["text"] for f in body["facts"])


def test_delete_forgets_one_scope(client: httpx.Client) -> None:
    gone = client.delete("/v1/memory/user:u1", headers=AUTH)
    assert gone.status_code == 200 and gone.json()["deleted"] > 0
    assert client.get("/v1/memory/user:u1", headers=AUTH).status_code == 404
    assert client.delete("/v1/memory/user:u1", headers=AUTH).status_code == 404
    assert client.get("/v1/memory/user:u2", headers=AUTH).status_code == 200


def test_delete_forgets_a_users_conversation_entries_kept_in_the_engines_store(
    engine: Engine, client: httpx.Client
) -> None:
    agent = engine.agent("a")  # its memory hook keeps its own store; entries are in the engine's
    agent.remember("s1", "mode", "careful", user_id="u1")
    agent.remember("s2", "mode", "terse", user_id="u3")
    assert client.delete("/v1/memory/user:u1", headers=AUTH).status_code == 200
    assert agent.entries("s1") == []
    gone = client.delete("/v1/memory/user:u3", headers=AUTH)  # entries only: still found
    assert gone.status_code == 200 and gone.json()["deleted"] == 1 and agent.entries("s2") == []


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/v1/memory/user:nobody", 404),
        ("/v1/memory/u1", 422),
        ("/v1/memory/planet:mars", 422),
        ("/v1/memory/user:" + "x" * 300, 422),
        ("/v1/memory/user:a%20b", 422),
        ("/v1/memory/", 404),
        ("/v1/nothing", 404),
    ],
)
def test_bad_input_is_a_clear_4xx(client: httpx.Client, path: str, status: int) -> None:
    response = client.get(path, headers=AUTH)
    body = response.json()
    assert response.status_code == status and body["message"]
    assert set(body) == {"code", "message", "errors"}


def test_an_oversized_request_is_413(client: httpx.Client) -> None:
    response = client.request("DELETE", "/v1/memory/user:u1", headers=AUTH, content=b"x" * 5000)
    assert response.status_code == 413 and response.json()["code"] == "body_too_large"
    assert "larger than 1024" in response.json()["message"]
    assert client.get("/v1/memory/user:u1", headers=AUTH).status_code == 200


def test_without_a_configured_token_admin_calls_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOOKENGINE_ADMIN_TOKEN", raising=False)
    eng = load(tmp_path, "{}")
    try:
        for url in run_server(eng):
            with httpx.Client(base_url=url, timeout=10) as c:
                response = c.get("/v1/memory/user:u1", headers={"Authorization": "Bearer x"})
                assert response.status_code == 503
                assert response.json()["code"] == "auth_not_configured"
                assert "no admin token configured" in response.json()["message"]
                assert c.get("/v1/health").status_code == 200
    finally:
        eng.close()


def test_the_openapi_document_is_served(client: httpx.Client) -> None:
    doc = client.get("/openapi.json").json()
    assert {"/v1/health", "/v1/memory/{scope}"} <= set(doc["paths"])
    assert set(doc["paths"]["/v1/memory/{scope}"]) == {"get", "delete"}


def test_schemathesis_finds_no_server_error(base: str) -> None:
    import schemathesis
    from hypothesis import HealthCheck, given, settings

    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    seen: list[int] = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )
        def probe(case) -> None:  # type: ignore[no-untyped-def]
            for headers in (AUTH, {}):
                response = case.call(headers=headers)
                seen.append(response.status_code)
                assert response.status_code < 500, (case.path, response.text)

        probe()
    assert seen and all(code < 500 for code in seen)
